"""Service account tokens through the HTTP front, as kubectl sees them.

- ``kubectl create token NAME`` posts a TokenRequest to
  ``/api/v1/namespaces/NS/serviceaccounts/NAME/token``; upstream answers 201 with
  ``status.token`` (a JWT) and ``status.expirationTimestamp`` (default 3600 s),
  404 for a missing account, 422 below ten minutes, 400/409 for a bad
  ``boundObjectRef``.
- A bearer token the cluster issued (TokenRequest, legacy token Secret, a pod's
  mounted token) authenticates as ``system:serviceaccount:NS:NAME`` (groups
  ``system:serviceaccounts``, ``system:serviceaccounts:NS``,
  ``system:authenticated``, uid the account's), subject to RBAC; it is a 401
  once expired (on the virtual clock, after go-jose's 60 s leeway), once the
  account or a bound pod is deleted, or when tampered with.
- upstream's token controller fills a ``kubernetes.io/service-account-token``
  Secret (``token``, ``ca.crt``, ``namespace``, the uid annotation), deletes one
  whose account is missing, and deletes an account's token Secrets with it.
- everything is reproducible from the cluster's seed and virtual clock.
"""

from __future__ import annotations

import base64
import json

import orjson
import pytest
from test_server import ADMIN, call, call_json

from k8semu.api import auth, tokens
from k8semu.controllers.serviceaccount import PLACEHOLDER_CA
from k8semu.server.app import APIApp
from k8semu.sim.cluster import Cluster
from k8semu.sim.components import default_factories
from k8semu.sim.runtime import run_cluster

NS = "/api/v1/namespaces/default"
WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
SSR = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
SA_GROUPS = ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"]
VIEW_BINDING = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "viewer-view", "namespace": "default"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
                "subjects": [{"kind": "ServiceAccount", "name": "viewer", "namespace": "default"}]}


def token_request(**spec) -> dict:
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}


def claims_of(token: str) -> tuple[dict, dict]:
    head, body, _ = token.split(".")
    dec = lambda s: json.loads(base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))  # noqa: E731
    return dec(head), dec(body)


@pytest.fixture
def env():
    cluster = Cluster.create()
    return cluster, APIApp(cluster.api, {ADMIN: auth.admin()})


async def make_sa(app, name="viewer") -> dict:
    code, sa = await call_json(app, "POST", f"{NS}/serviceaccounts",
                               {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
    assert code == 201
    return sa


async def create_token(app, name="viewer", **spec) -> str:
    code, tr = await call_json(app, "POST", f"{NS}/serviceaccounts/{name}/token", token_request(**spec))
    assert code == 201, tr
    return tr["status"]["token"]


async def whoami(app, token) -> tuple[int, dict]:
    return await call_json(app, "POST", WHOAMI, SSR, token=token)


# ---------------------------------------------------------------------------- TokenRequest


async def test_create_token_answers_a_token_request_with_a_jwt_valid_an_hour(env):
    """Upstream TokenREST.Create: audiences default to the API server's, expirationSeconds to 3600,
    boundObjectRef stays null; status.expirationTimestamp is now + expirationSeconds; the JWT's
    claims are the account's (sub, kubernetes.io.serviceaccount name/uid, a jti)."""
    cluster, app = env
    sa = await make_sa(app)
    code, tr = await call_json(app, "POST", f"{NS}/serviceaccounts/viewer/token", token_request())
    assert code == 201
    assert tr["kind"] == "TokenRequest" and tr["apiVersion"] == "authentication.k8s.io/v1"
    assert tr["metadata"]["name"] == "viewer" and tr["metadata"]["namespace"] == "default"
    assert tr["spec"] == {"audiences": [tokens.ISSUER], "expirationSeconds": 3600, "boundObjectRef": None}
    assert tr["status"]["expirationTimestamp"] == "2025-01-01T01:00:00Z"  # the cluster's epoch + 1 h
    head, claims = claims_of(tr["status"]["token"])
    assert head["alg"] == "HS256"  # said honestly: HMAC-SHA256, not upstream's RS256
    assert claims["sub"] == "system:serviceaccount:default:viewer" and claims["iss"] == tokens.ISSUER
    assert claims["exp"] - claims["iat"] == 3600 and claims["nbf"] == claims["iat"]
    assert claims["kubernetes.io"] == {"namespace": "default",
                                       "serviceaccount": {"name": "viewer", "uid": sa["metadata"]["uid"]}}
    assert claims["aud"] == [tokens.ISSUER] and len(claims["jti"]) == 36


async def test_create_token_errors_are_upstreams(env):
    """404 for a missing account; 422 below 10 minutes; 400 for a bound object of another kind
    or a pod running as another account; 409 when boundObjectRef.uid is stale."""
    _, app = env
    await make_sa(app)
    code, st = await call_json(app, "POST", f"{NS}/serviceaccounts/nosuch/token", token_request())
    assert (code, st["message"]) == (404, 'serviceaccounts "nosuch" not found')
    code, st = await call_json(app, "POST", f"{NS}/serviceaccounts/viewer/token", token_request(expirationSeconds=10))
    assert code == 422
    assert st["message"] == ('TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: '
                             'Invalid value: 10: may not specify a duration less than 10 minutes')
    code, st = await call_json(app, "POST", f"{NS}/serviceaccounts/viewer/token", token_request(
        boundObjectRef={"kind": "ConfigMap", "apiVersion": "v1", "name": "x"}))
    assert (code, st["message"]) == (400, "cannot bind token to object of type /v1, Kind=ConfigMap")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    code, _ = await call_json(app, "POST", f"{NS}/pods", pod)
    assert code == 201
    code, st = await call_json(app, "POST", f"{NS}/serviceaccounts/viewer/token", token_request(
        boundObjectRef={"kind": "Pod", "apiVersion": "v1", "name": "p"}))
    assert (code, st["message"]) == (400, 'cannot bind token for serviceaccount "viewer" to pod running with '
                                          'serviceaccount "default"')
    await make_sa(app, "default")  # (no controllers run here to make it)
    code, st = await call_json(app, "POST", f"{NS}/serviceaccounts/default/token", token_request(
        boundObjectRef={"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": "stale"}))
    assert code == 409 and "the UID in the bound object reference (stale) does not match" in st["message"]
    code, st = await call_json(app, "POST", f"{NS}/serviceaccounts/viewer/token", token_request(),
                               token="jane-token")
    assert code == 401


async def test_creating_a_token_is_authorized_on_serviceaccounts_token(env):
    """RBAC ``create`` on the ``serviceaccounts/token`` subresource (a service account cannot
    mint tokens for itself unless granted)."""
    _, app = env
    await make_sa(app)
    t = await create_token(app)
    code, st = await call_json(app, "POST", f"{NS}/serviceaccounts/viewer/token", token_request(), token=t)
    assert code == 403
    assert st["message"] == ('serviceaccounts "viewer" is forbidden: User "system:serviceaccount:default:viewer" '
                             'cannot create resource "serviceaccounts/token" in API group "" in the namespace '
                             '"default"')


# ---------------------------------------------------------------------------- authentication


async def test_a_token_authenticates_as_its_service_account_under_rbac(env):
    """``kubectl --token=$T auth whoami``: the account's username, uid and groups; RBAC then
    applies: nothing until bound to ``view``, then get/list but not delete."""
    _, app = env
    sa = await make_sa(app)
    t = await create_token(app)
    code, ssr = await whoami(app, t)
    assert code == 201
    info = ssr["status"]["userInfo"]
    assert {k: v for k, v in info.items() if k != "extra"} == {
        "username": "system:serviceaccount:default:viewer", "uid": sa["metadata"]["uid"], "groups": SA_GROUPS}
    assert list(info["extra"]) == ["authentication.kubernetes.io/credential-id"]  # whoami's "Extra: …" rows
    assert info["extra"]["authentication.kubernetes.io/credential-id"][0].startswith("JTI=")
    code, st = await call_json(app, "GET", f"{NS}/pods", token=t)
    assert code == 403
    code, _ = await call_json(app, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
                              VIEW_BINDING)
    assert code == 201
    code, lst = await call_json(app, "GET", f"{NS}/pods", token=t)
    assert code == 200 and lst["kind"] == "PodList"
    code, st = await call_json(app, "DELETE", f"{NS}/pods/x", token=t)
    assert code == 403
    assert st["message"] == ('pods "x" is forbidden: User "system:serviceaccount:default:viewer" cannot delete '
                             'resource "pods" in API group "" in the namespace "default"')


async def test_an_expired_token_is_401_after_the_leeway_on_the_virtual_clock(env):
    """Upstream validates exp with go-jose's 60 s leeway: a 600 s token still works at 660 s,
    and is ``Unauthorized`` after; time here is the cluster's virtual clock."""
    cluster, app = env
    await make_sa(app)
    t = await create_token(app, expirationSeconds=600)
    cluster.time = cluster.time + 660
    assert (await whoami(app, t))[0] == 201
    cluster.time = cluster.time + 1
    code, st = await whoami(app, t)
    assert code == 401 and st["reason"] == "Unauthorized" and st["message"] == "Unauthorized"


async def test_a_deleted_or_recreated_account_invalidates_its_tokens(env):
    """The validator looks the account up: gone, or back with another uid, means 401."""
    _, app = env
    await make_sa(app)
    t = await create_token(app)
    code, _ = await call_json(app, "DELETE", f"{NS}/serviceaccounts/viewer")
    assert code == 200
    assert (await whoami(app, t))[0] == 401
    await make_sa(app)
    assert (await whoami(app, t))[0] == 401
    assert (await whoami(app, await create_token(app)))[0] == 201


async def test_tampered_foreign_or_other_audience_tokens_are_401(env):
    """A changed payload or signature, a token of another cluster (another seed: another key),
    and a token for another audience do not authenticate to the API server."""
    _, app = env
    await make_sa(app)
    await make_sa(app, "admin-ish")
    t = await create_token(app)
    head, body, sig = t.split(".")
    _, claims = claims_of(t)
    forged = {**claims, "sub": "system:serviceaccount:default:admin-ish"}
    forged_body = base64.urlsafe_b64encode(json.dumps(forged).encode()).rstrip(b"=").decode()
    assert (await whoami(app, f"{head}.{forged_body}.{sig}"))[0] == 401
    assert (await whoami(app, f"{head}.{body}.{sig[:-2]}AA"))[0] == 401
    assert (await whoami(app, f"{head}.{body}"))[0] == 401
    other = Cluster.create(seed=99)
    other_app = APIApp(other.api, {ADMIN: auth.admin()})
    await make_sa(other_app)
    assert (await whoami(app, await create_token(other_app)))[0] == 401
    assert (await whoami(app, await create_token(app, audiences=["vault"])))[0] == 401


async def test_a_pod_bound_token_carries_the_pod_and_dies_with_it(env):
    """boundObjectRef to a Pod: the claims name the pod (and its node), the user's extra has
    credential-id ``JTI=…``, pod-name and pod-uid (upstream ServiceAccountInfo.UserInfo); once
    the pod is gone the token is 401."""
    _, app = env
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"serviceAccountName": "viewer", "containers": [{"name": "c", "image": "busybox"}]}}
    sa = await make_sa(app)
    code, p = await call_json(app, "POST", f"{NS}/pods", pod)
    assert code == 201
    t = await create_token(app, boundObjectRef={"kind": "Pod", "apiVersion": "v1", "name": "p"})
    _, claims = claims_of(t)
    assert claims["kubernetes.io"]["pod"] == {"name": "p", "uid": p["metadata"]["uid"]}
    who = tokens.authenticate(app.api, t)
    assert who.name == "system:serviceaccount:default:viewer" and who.uid == sa["metadata"]["uid"]
    assert dict(who.extra) == {tokens.POD_NAME_KEY: ("p",), tokens.POD_UID_KEY: (p["metadata"]["uid"],),
                               tokens.CREDENTIAL_ID_KEY: (f"JTI={claims['jti']}",)}
    assert (await whoami(app, t))[0] == 201
    code, _ = await call_json(app, "DELETE", f"{NS}/pods/p?gracePeriodSeconds=0")
    assert (await whoami(app, t))[0] == 401


async def test_tokens_are_reproducible_from_the_seed_and_virtual_clock():
    """Same seed, same requests, same virtual time: the same token, byte for byte."""
    async def one(seed):
        c = Cluster.create(seed=seed)
        a = APIApp(c.api, {ADMIN: auth.admin()})
        await make_sa(a)
        return await create_token(a)

    assert await one(3) == await one(3)
    assert await one(3) != await one(4)


# ---------------------------------------------------------------------------- with the components


def _run(cluster, body):
    return run_cluster(cluster, body, default_factories(cluster))


LEGACY_SECRET = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
                 "metadata": {"name": "viewer-token", "annotations": {"kubernetes.io/service-account.name": "viewer"}}}


def _legacy_scenario(cluster) -> dict:
    app = APIApp(cluster.api, {ADMIN: auth.admin()})
    out = {}

    async def body(rt):
        out["sa"] = await make_sa(app)
        code, _ = await call_json(app, "POST", f"{NS}/secrets", LEGACY_SECRET)
        assert code == 201
        await rt.advance(5)
        out["secret"] = (await call_json(app, "GET", f"{NS}/secrets/viewer-token"))[1]
        t = base64.b64decode(out["secret"]["data"]["token"]).decode()
        out["whoami"] = await whoami(app, t)
        code, _ = await call_json(app, "POST", f"{NS}/secrets", {**LEGACY_SECRET, "metadata": {
            "name": "orphan-token", "annotations": {"kubernetes.io/service-account.name": "nobody"}}})
        assert code == 201
        await call_json(app, "DELETE", f"{NS}/serviceaccounts/viewer")
        await rt.advance(5)
        out["after_delete"] = await whoami(app, t)
        secrets = (await call_json(app, "GET", f"{NS}/secrets"))[1]["items"]
        out["secrets"] = sorted(s["metadata"]["name"] for s in secrets)

    _run(cluster, body)
    return out


def test_the_token_controller_fills_a_legacy_token_secret_that_then_authenticates(tmp_path):
    """Upstream's tokens_controller: data token/ca.crt/namespace and the uid annotation; the token
    (issuer ``kubernetes/serviceaccount``) authenticates as the account; a Secret for a missing
    account is deleted, and so are an account's token Secrets when it is deleted (its token then
    401)."""
    out = _legacy_scenario(Cluster.create(tmp_path / "c.log", seed=5))
    sa, secret = out["sa"], out["secret"]
    assert secret["metadata"]["annotations"] == {"kubernetes.io/service-account.name": "viewer",
                                                 "kubernetes.io/service-account.uid": sa["metadata"]["uid"]}
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert set(data) == {"ca.crt", "namespace", "token"}
    assert data["namespace"] == "default" and data["ca.crt"] == PLACEHOLDER_CA
    _, claims = claims_of(data["token"])
    assert claims == {"iss": "kubernetes/serviceaccount", "kubernetes.io/serviceaccount/namespace": "default",
                      "kubernetes.io/serviceaccount/secret.name": "viewer-token",
                      "kubernetes.io/serviceaccount/service-account.name": "viewer",
                      "kubernetes.io/serviceaccount/service-account.uid": sa["metadata"]["uid"],
                      "sub": "system:serviceaccount:default:viewer"}
    code, ssr = out["whoami"]
    assert code == 201 and ssr["status"]["userInfo"] == {
        "username": "system:serviceaccount:default:viewer", "uid": sa["metadata"]["uid"], "groups": SA_GROUPS}
    assert out["after_delete"][0] == 401
    assert "viewer-token" not in out["secrets"] and "orphan-token" not in out["secrets"]


def test_legacy_token_secrets_replay_byte_identically(tmp_path):
    """The same seed and inputs give a byte-identical event log, the tokens written in it included;
    another seed, another key."""
    logs = []
    for name, seed in (("a", 5), ("b", 5), ("c", 6)):
        c = Cluster.create(tmp_path / f"{name}.log", seed=seed)
        out = _legacy_scenario(c)
        c.close()
        logs.append(((tmp_path / f"{name}.log").read_bytes(), out["secret"]["data"]["token"]))
    assert logs[0] == logs[1]
    assert logs[0][1] != logs[2][1]


def test_a_pods_mounted_token_authenticates_until_the_pod_is_gone():
    """The kubelet's projected token at /var/run/secrets/kubernetes.io/serviceaccount/token is
    accepted as the pod's account (upstream: a pod-bound TokenRequest token, extended to a year),
    with pod-name / pod-uid / node-name extra; after the pod is deleted it is 401."""
    cluster = Cluster.create(seed=2)
    app = APIApp(cluster.api, {ADMIN: auth.admin()})
    out = {}
    path = "/var/run/secrets/kubernetes.io/serviceaccount/token"
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "reader"},
           "spec": {"serviceAccountName": "viewer", "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox", "command": ["sh", "-c", f"cat {path}"]}]}}

    async def body(rt):
        out["sa"] = await make_sa(app)
        code, _ = await call_json(app, "POST", f"{NS}/pods", pod)
        assert code == 201
        await rt.advance(30)
        code, _, data = await call(app, "GET", f"{NS}/pods/reader/log", accept="*/*")
        assert code == 200, data
        t = data.decode().strip()
        out["whoami"] = await whoami(app, t)
        out["user"] = tokens.authenticate(app.api, t)
        out["p"] = (await call_json(app, "GET", f"{NS}/pods/reader"))[1]
        # signed with the cluster's key: the same claims under another account do not pass
        head, claims, sig = t.split(".")
        forged = orjson.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))
        forged["sub"] = "system:serviceaccount:kube-system:default"
        forged["kubernetes.io"]["namespace"] = "kube-system"
        body = base64.urlsafe_b64encode(orjson.dumps(forged)).rstrip(b"=").decode()
        out["forged"] = tokens.authenticate(app.api, f"{head}.{body}.{sig}")
        # nor does a token computed from the pod's spec by someone without the key
        from k8semu.node.volumes import service_account_token

        pod_now = app.api.get("pods", "reader", namespace="default")
        src = {"path": "token", "expirationSeconds": 3607}
        out["computed"] = tokens.authenticate(app.api, service_account_token(pod_now, src, pod_now["spec"]["nodeName"]))
        await rt.advance(7200)  # past the requested 3607 s: upstream extends kube-api-access tokens
        out["later"] = await whoami(app, t)
        await call_json(app, "DELETE", f"{NS}/pods/reader?gracePeriodSeconds=0")
        await rt.advance(5)
        out["gone"] = await whoami(app, t)

    _run(cluster, body)
    code, ssr = out["whoami"]
    info = ssr["status"]["userInfo"]
    assert code == 201 and {k: v for k, v in info.items() if k != "extra"} == {
        "username": "system:serviceaccount:default:viewer", "uid": out["sa"]["metadata"]["uid"], "groups": SA_GROUPS}
    assert info["extra"][tokens.POD_NAME_KEY] == ["reader"]
    extra = dict(out["user"].extra)
    assert extra[tokens.POD_NAME_KEY] == ("reader",) and extra[tokens.POD_UID_KEY] == (out["p"]["metadata"]["uid"],)
    assert extra[tokens.NODE_NAME_KEY] == (out["p"]["spec"]["nodeName"],)
    assert out["forged"] is None and out["computed"] is None
    assert out["later"][0] == 201
    assert out["gone"][0] == 401
