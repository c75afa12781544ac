"""Service account tokens: the TokenRequest API, the token authenticator, and legacy Secret tokens.

What kube-apiserver and kube-controller-manager do with service account tokens
(upstream ``pkg/serviceaccount``, ``pkg/registry/core/serviceaccount/storage/token.go``,
``pkg/controller/serviceaccount/tokens_controller.go``), v1.33:

- **TokenRequest** (``POST /api/v1/namespaces/NS/serviceaccounts/NAME/token``,
  ``kubectl create token NAME``; :func:`create_token`): RBAC ``create`` on
  ``serviceaccounts/token``; the account must exist (404 ``serviceaccounts "x"
  not found``); ``spec.expirationSeconds`` defaults to 3600 and must be at least
  600 (422 ``TokenRequest.authentication.k8s.io "" is invalid:
  spec.expirationSeconds: Invalid value: 10: may not specify a duration less
  than 10 minutes``) and at most 2^32; ``spec.audiences`` defaults to the API
  server's (:data:`ISSUER`); ``spec.boundObjectRef`` may name a Pod (which must
  run as this account; its node is recorded too), a Secret or a Node of the
  namespace, whose ``uid`` must match when given (409). A pod-bound token asked
  for 3607 s (what the kubelet's ``kube-api-access`` volume asks) is valid for a
  year and warns after 3607 s (``--service-account-extend-token-expiration``).
  The answer is the TokenRequest with ``status.token`` (a JWT) and
  ``status.expirationTimestamp``; nothing is stored.
- **Authentication** (:func:`authenticate`): a bearer token that is a JWT this
  cluster signed becomes ``system:serviceaccount:NS:NAME`` in groups
  ``system:serviceaccounts``, ``system:serviceaccounts:NS`` and
  ``system:authenticated``, uid the account's, and for bound tokens the extra
  ``authentication.kubernetes.io/credential-id`` (``JTI=…``), ``pod-name``,
  ``pod-uid``, ``node-name``, ``node-uid``. It is refused (None: a 401) when the
  signature does not verify, it expired (``exp`` plus go-jose's 60 s leeway, on
  the cluster's *virtual* clock), its audiences do not include the API server's,
  the account no longer exists with the same uid, or a bound pod / secret /
  node is gone (or replaced, or deleted more than 60 s ago).
- **Legacy Secret tokens** (:func:`legacy_secret_update`): a Secret of type
  ``kubernetes.io/service-account-token`` annotated
  ``kubernetes.io/service-account.name`` gets ``data.token`` (a never-expiring
  JWT of issuer ``kubernetes/serviceaccount``), ``data.ca.crt``,
  ``data.namespace`` and the ``kubernetes.io/service-account.uid`` annotation;
  such a token authenticates while the Secret holds exactly it and the account
  exists with the same uid.

Signing (an emulator's choice, said honestly in the JWT header): upstream signs
with the RSA key ``sa.key`` (``RS256``); here tokens are ``HS256`` — HMAC-SHA256
keyed with a secret derived from the cluster's seed and epoch (its log header,
:func:`signing_key`), so every token is reproducible from the cluster's seeded
state and virtual clock (no wall clock, no ``os.urandom``), and a legacy Secret's
token in the event log replays byte-identically. Whoever knows the seed can
derive the key: the key protects nothing the cluster file does not already hold.

The kubelet's projected token (:func:`k8semu.node.volumes.service_account_token`)
is signed with the same key (:func:`token_signer`); it names its account without
a uid (the node does not read the account) and must be bound to a pod that
still exists, with the same expiry checks.

Times: ``iat`` / ``nbf`` / ``exp`` are Unix seconds of the virtual clock (the
cluster's epoch plus virtual seconds).
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import itertools
import json
import weakref
from typing import Any, Callable

import orjson

from . import errors
from .auth import UserInfo, service_account
from .meta import format_time, parse_time
from .resources import ResourceInfo, by_resource

__all__ = [
    "ISSUER", "LEGACY_ISSUER", "DEFAULT_EXPIRATION_SECONDS", "MIN_EXPIRATION_SECONDS",
    "WARN_ONLY_BOUND_EXPIRATION_SECONDS", "EXPIRATION_EXTENSION_SECONDS", "LEEWAY",
    "SERVICE_ACCOUNT_TOKEN_TYPE", "SA_NAME_ANNOTATION", "SA_UID_ANNOTATION",
    "CREDENTIAL_ID_KEY", "POD_NAME_KEY", "POD_UID_KEY", "NODE_NAME_KEY", "NODE_UID_KEY",
    "signing_key", "sign", "decode", "create_token", "authenticate", "legacy_token",
    "legacy_secret_update",
]

Obj = dict[str, Any]

#: kubeadm's ``--service-account-issuer`` (also the API server's audience, ``--api-audiences``).
ISSUER = "https://kubernetes.default.svc.cluster.local"
#: the ``iss`` of Secret-based tokens (upstream ``serviceaccount.LegacyIssuer``).
LEGACY_ISSUER = "kubernetes/serviceaccount"
DEFAULT_EXPIRATION_SECONDS = 3600  # authentication/v1 SetDefaults_TokenRequestSpec
MIN_EXPIRATION_SECONDS = 600  # ValidateTokenRequest: 10 minutes
MAX_EXPIRATION_SECONDS = 1 << 32
#: the kubelet's kube-api-access request, extended to a year (token.WarnOnlyBoundTokenExpirationSeconds)
WARN_ONLY_BOUND_EXPIRATION_SECONDS = 60 * 60 + 7
EXPIRATION_EXTENSION_SECONDS = 24 * 365 * 60 * 60
#: go-jose's jwt.DefaultLeeway (expiry, not-before, issued-at, and deletions "before now - leeway")
LEEWAY = 60

SERVICE_ACCOUNT_TOKEN_TYPE = "kubernetes.io/service-account-token"
SA_NAME_ANNOTATION = "kubernetes.io/service-account.name"
SA_UID_ANNOTATION = "kubernetes.io/service-account.uid"

# user.Info extra keys (k8s.io/apiserver/pkg/authentication/{user,serviceaccount})
CREDENTIAL_ID_KEY = "authentication.kubernetes.io/credential-id"
POD_NAME_KEY = "authentication.kubernetes.io/pod-name"
POD_UID_KEY = "authentication.kubernetes.io/pod-uid"
NODE_NAME_KEY = "authentication.kubernetes.io/node-name"
NODE_UID_KEY = "authentication.kubernetes.io/node-uid"

_GROUP, _VERSION, _KIND = "authentication.k8s.io", "v1", "TokenRequest"


def _info(plural: str) -> ResourceInfo:
    info = by_resource("", plural)
    assert info is not None
    return info


# ----------------------------------------------------------------------------- JWT


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _json(obj: Any) -> bytes:
    # go-jose marshals the claims as a map: keys sorted, no spaces
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


_KEYS: "weakref.WeakKeyDictionary[Any, bytes]" = weakref.WeakKeyDictionary()
_HEADERS: dict[bytes, str] = {}  # signing key -> its JWS header, encoded
_JTI_COUNTERS: "weakref.WeakKeyDictionary[Any, itertools.count]" = weakref.WeakKeyDictionary()


def signing_key(api: Any) -> bytes:
    """The cluster's token signing key: HMAC-SHA256 of its seed and epoch (from the log header),
    so the same cluster file always signs alike."""
    key = _KEYS.get(api)
    if key is None:
        header = getattr(api.log, "header", None) or {}
        seed = header.get("seed", 0)
        epoch = (header.get("cluster") or {}).get("epoch") or api.epoch.strftime("%Y-%m-%dT%H:%M:%SZ")
        key = hmac.new(b"k8semu/serviceaccount-signing-key/v1", f"{seed}\x00{epoch}".encode(),
                       hashlib.sha256).digest()
        _KEYS[api] = key
    return key


def _kid(key: bytes) -> str:
    return _b64url(hashlib.sha256(b"kid\x00" + key).digest())


def token_signer(api: Any) -> Callable[[Obj], str] | None:
    """What the kubelet signs its projected tokens' claims with (:func:`sign` with ``api``'s
    key; see :func:`k8semu.node.volumes.service_account_token`); None without an API server."""
    if getattr(api, "log", None) is None:
        return None
    return functools.partial(sign, api)


def sign(api: Any, claims: Obj) -> str:
    """A compact JWS of ``claims``: header ``{"alg":"HS256","kid":…}``, HMAC-SHA256 with
    :func:`signing_key`."""
    key = signing_key(api)
    head = _HEADERS.get(key)
    if head is None:
        head = _HEADERS[key] = _b64url(_json({"alg": "HS256", "kid": _kid(key)}))
    body = f"{head}.{_b64url(_json(claims))}"
    return f"{body}.{_b64url(hmac.new(key, body.encode(), hashlib.sha256).digest())}"


def decode(token: str) -> tuple[Obj, Obj, str, bytes] | None:
    """``(header, claims, signing input, signature)`` of a compact JWS, unverified; None if it
    is not one."""
    parts = token.split(".")
    if len(parts) != 3 or not all(parts[:2]):
        return None
    try:
        header = json.loads(_unb64url(parts[0]))
        claims = json.loads(_unb64url(parts[1]))
        sig = _unb64url(parts[2])
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        return None
    return header, claims, f"{parts[0]}.{parts[1]}", sig


def _verified(api: Any, header: Obj, signing_input: str, sig: bytes) -> bool:
    key = signing_key(api)
    if header.get("alg") != "HS256" or header.get("kid") != _kid(key):
        return False
    return hmac.compare_digest(hmac.new(key, signing_input.encode(), hashlib.sha256).digest(), sig)


# ----------------------------------------------------------------------------- time


def _unix_now(api: Any) -> int:
    """Unix seconds of the virtual clock."""
    return int(api.epoch.timestamp()) + int(api.now)


def _jti(api: Any, key: bytes, seed: str) -> str:
    """A version-4-shaped UUID from the signing key, the request and a per-server counter (no RNG
    draw: a token is not written to the log, so it must leave the cluster's RNG alone)."""
    counter = _JTI_COUNTERS.setdefault(api, itertools.count())
    h = hmac.new(key, f"jti\x00{seed}\x00{next(counter)}".encode(), hashlib.sha256).hexdigest()[:32]
    n = int(h, 16)
    n = (n & ~(0xF000 << 64)) | (0x4000 << 64)
    n = (n & ~(0xC000 << 48)) | (0x8000 << 48)
    h = f"{n:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


# ----------------------------------------------------------------------------- TokenRequest


def _stored(api: Any, plural: str, namespace: str | None, name: str) -> Obj | None:
    rec = api.log.get(_info(plural).key(namespace, name))
    return None if rec is None else rec.object


def _invalid(name: str, *causes: errors.FieldError) -> errors.Invalid:
    return errors.Invalid(_KIND, _GROUP, name, list(causes))


def _int_field(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise errors.BadRequest(f"json: cannot unmarshal {type(value).__name__} into Go struct field "
                                f"TokenRequestSpec.{field} of type int64")
    return value


def create_token(api: Any, ctx: Any, namespace: str, name: str, body: Any) -> Obj:
    """``POST …/serviceaccounts/NAME/token``: the TokenRequest ``body`` answered (see the module
    docstring).

    Raises:
        Forbidden: RBAC ``create`` on ``serviceaccounts/token``.
        BadRequest: a body that is not a TokenRequest, a bound object of another kind, a pod
            running as another account.
        NotFound: the account, or the bound object. Conflict: the bound object's uid.
        Invalid: metadata naming another account, an expiration out of range.
    """
    sa_info = _info("serviceaccounts")
    if not namespace:
        raise errors.NotFound("the server could not find the requested resource")
    api._authz(ctx, "create", sa_info, namespace, name, "token")
    if not isinstance(body, dict) or body.get("kind", _KIND) != _KIND or \
            body.get("apiVersion", f"{_GROUP}/{_VERSION}") != f"{_GROUP}/{_VERSION}":
        raise errors.BadRequest("the body of the request was in an unknown format")
    meta = dict(body.get("metadata") or {})
    spec = dict(body.get("spec") or {})
    if meta.get("name") and meta["name"] != name:
        raise _invalid(name, errors.FieldError.invalid(
            "metadata.name", meta["name"], "must match the service account name if specified"))
    if meta.get("namespace") and meta["namespace"] != namespace:
        raise _invalid(name, errors.FieldError.invalid(
            "metadata.namespace", meta["namespace"], "must match the service account namespace if specified"))
    sa = _stored(api, "serviceaccounts", namespace, name)
    if sa is None:
        raise errors.NotFound.of("serviceaccounts", "", name)
    audiences = [str(a) for a in spec.get("audiences") or []] or [ISSUER]
    exp_s = spec.get("expirationSeconds")
    exp_s = DEFAULT_EXPIRATION_SECONDS if exp_s is None else _int_field(exp_s, "expirationSeconds")
    ref = spec.get("boundObjectRef")
    now = api.now
    meta = {**meta, "name": name, "namespace": namespace, "creationTimestamp": format_time(api.epoch, now)}
    if exp_s < MIN_EXPIRATION_SECONDS:
        raise _invalid("", errors.FieldError.invalid(
            "spec.expirationSeconds", exp_s, "may not specify a duration less than 10 minutes"))
    if exp_s > MAX_EXPIRATION_SECONDS:
        raise _invalid("", errors.FieldError.invalid(
            "spec.expirationSeconds", exp_s, "may not specify a duration larger than 2^32 seconds"))
    pod = secret = node = None
    if ref:
        kind, ref_name = str(ref.get("kind") or ""), str(ref.get("name") or "")
        api_version = str(ref.get("apiVersion") or "")
        group, _, version = api_version.rpartition("/")
        uid = ""
        if group == "" and kind == "Pod":
            pod = _stored(api, "pods", namespace, ref_name)
            if pod is None:
                raise errors.NotFound.of("pods", "", ref_name)
            running_as = (pod.get("spec") or {}).get("serviceAccountName") or ""
            if running_as != name:
                raise errors.BadRequest(f'cannot bind token for serviceaccount "{name}" to pod running with '
                                        f'serviceaccount "{running_as}"')
            uid = pod["metadata"].get("uid", "")
            node_name = (pod.get("spec") or {}).get("nodeName") or ""
            if node_name:
                node = _stored(api, "nodes", None, node_name) or {"metadata": {"name": node_name}}
        elif group == "" and kind == "Node":
            node = _stored(api, "nodes", None, ref_name)
            if node is None:
                raise errors.NotFound.of("nodes", "", ref_name)
            uid = node["metadata"].get("uid", "")
        elif group == "" and kind == "Secret":
            secret = _stored(api, "secrets", namespace, ref_name)
            if secret is None:
                raise errors.NotFound.of("secrets", "", ref_name)
            uid = secret["metadata"].get("uid", "")
        else:
            raise errors.BadRequest(f"cannot bind token to object of type {group}/{version}, Kind={kind}")
        if ref.get("uid") and ref["uid"] != uid:
            raise errors.Conflict(
                f'Operation cannot be fulfilled on {kind} "{ref_name}": the UID in the bound object reference '
                f'({ref["uid"]}) does not match the UID in record. The object might have been deleted and then '
                f'recreated', details={"name": ref_name, "kind": kind})
    exp, warn_after = exp_s, 0
    if pod is not None and exp_s == WARN_ONLY_BOUND_EXPIRATION_SECONDS and ISSUER in audiences:
        exp, warn_after = EXPIRATION_EXTENSION_SECONDS, exp_s
    iat = _unix_now(api)
    key = signing_key(api)
    sa_meta = sa["metadata"]
    k8s: Obj = {"namespace": namespace, "serviceaccount": {"name": name, "uid": sa_meta.get("uid", "")}}
    for field, obj in (("pod", pod), ("secret", secret), ("node", node)):
        if obj is not None:
            m = obj["metadata"]
            k8s[field] = {"name": m["name"], **({"uid": m["uid"]} if m.get("uid") else {})}
    if warn_after:
        k8s["warnafter"] = iat + warn_after
    claims = {"aud": audiences, "exp": iat + exp, "iat": iat, "iss": ISSUER,
              "jti": _jti(api, key, f"{namespace}/{name}/{sa_meta.get('uid', '')}/{iat}"),
              "kubernetes.io": k8s, "nbf": iat, "sub": f"system:serviceaccount:{namespace}:{name}"}
    out_spec = {"audiences": audiences, "expirationSeconds": exp_s, "boundObjectRef": ref or None}
    return {"kind": _KIND, "apiVersion": f"{_GROUP}/{_VERSION}", "metadata": meta, "spec": out_spec,
            "status": {"token": sign(api, claims),
                       "expirationTimestamp": format_time(api.epoch, now + exp_s)}}


# ----------------------------------------------------------------------------- authentication


def _deleted_long_ago(obj: Obj, api: Any) -> bool:
    """``deletionTimestamp`` set more than :data:`LEEWAY` seconds ago (upstream's invalidIfDeletedBefore)."""
    ts = (obj.get("metadata") or {}).get("deletionTimestamp")
    if not ts:
        return False
    return parse_time(api.epoch, ts) < api.now - LEEWAY


def _times_ok(claims: Obj, now: int) -> bool:
    """go-jose's Claims.Validate with the default leeway (exp required for bound tokens)."""
    try:
        exp = claims["exp"]
        nbf, iat = claims.get("nbf"), claims.get("iat")
        if not isinstance(exp, (int, float)) or now - LEEWAY > exp:
            return False
        if isinstance(nbf, (int, float)) and now + LEEWAY < nbf:
            return False
        if isinstance(iat, (int, float)) and now + LEEWAY < iat:
            return False
    except KeyError:
        return False
    return True


def _audience_ok(claims: Obj) -> bool:
    aud = claims.get("aud")
    auds = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
    return ISSUER in auds


def _user(namespace: str, name: str, uid: str, extra: dict[str, tuple[str, ...]]) -> UserInfo:
    return service_account(namespace, name, uid, extra=extra)


def _ref(k8s: Obj, field: str) -> tuple[str, str] | None:
    r = k8s.get(field)
    if not isinstance(r, dict):
        return None
    return str(r.get("name") or ""), str(r.get("uid") or "")


def _bound(api: Any, claims: Obj) -> UserInfo | None:
    """Upstream's claims validator: times, audience, the account, the bound objects. A token
    the kubelet projected into a pod names its account without a uid (the node does not read
    the account): it must be bound to a pod that still exists."""
    if not _times_ok(claims, _unix_now(api)) or not _audience_ok(claims):
        return None
    k8s = claims.get("kubernetes.io")
    if not isinstance(k8s, dict):
        return None
    ns = str(k8s.get("namespace") or "")
    sa_ref = _ref(k8s, "serviceaccount")
    if not ns or sa_ref is None or not sa_ref[0] or claims.get("sub") != f"system:serviceaccount:{ns}:{sa_ref[0]}":
        return None
    sa = _stored(api, "serviceaccounts", ns, sa_ref[0])
    if sa is None or _deleted_long_ago(sa, api):
        return None
    sa_uid = sa["metadata"].get("uid", "")
    kubelet = not sa_ref[1]
    if kubelet:
        sa_ref = (sa_ref[0], sa_uid)
    elif sa_ref[1] != sa_uid:
        return None
    extra: dict[str, tuple[str, ...]] = {}
    secret_ref = _ref(k8s, "secret")
    if secret_ref is not None:
        secret = _stored(api, "secrets", ns, secret_ref[0])
        if secret is None or secret["metadata"].get("uid") != secret_ref[1] or _deleted_long_ago(secret, api):
            return None
    pod_ref, node_ref = _ref(k8s, "pod"), _ref(k8s, "node")
    if pod_ref is not None:
        pod = _stored(api, "pods", ns, pod_ref[0])
        if pod is None or pod["metadata"].get("uid") != pod_ref[1] or _deleted_long_ago(pod, api):
            return None
        extra[POD_NAME_KEY], extra[POD_UID_KEY] = (pod_ref[0],), (pod_ref[1],)
    elif kubelet:
        return None
    if claims.get("jti"):
        extra[CREDENTIAL_ID_KEY] = (f"JTI={claims['jti']}",)
    if node_ref is not None and node_ref[0]:
        if pod_ref is None:  # a node-bound token: the node must still be there
            node = _stored(api, "nodes", None, node_ref[0])
            if node is None or node["metadata"].get("uid") != node_ref[1] or _deleted_long_ago(node, api):
                return None
        extra[NODE_NAME_KEY] = (node_ref[0],)
        if node_ref[1]:
            extra[NODE_UID_KEY] = (node_ref[1],)
    return _user(ns, sa_ref[0], sa_uid, extra)


def _kubelet_claims(claims: Obj) -> Obj:
    """The node's kube-api-access token asks for 3607 s: upstream extends it to a year (see
    :func:`create_token`); the kubelet here never refreshes it, so the extension is applied
    when the token is checked."""
    iat, exp = claims.get("iat"), claims.get("exp")
    account = ((claims.get("kubernetes.io") or {}).get("serviceaccount") or {})
    if isinstance(account, dict) and not account.get("uid") and isinstance(iat, int) and isinstance(exp, int) \
            and exp - iat == WARN_ONLY_BOUND_EXPIRATION_SECONDS and _audience_ok(claims):
        return {**claims, "exp": iat + EXPIRATION_EXTENSION_SECONDS}
    return claims


def _legacy(api: Any, token: str, claims: Obj) -> UserInfo | None:
    """Upstream's legacy validator (with lookup): the Secret still holds this very token, the
    account still exists with the uid the token names."""
    ns = str(claims.get("kubernetes.io/serviceaccount/namespace") or "")
    secret_name = str(claims.get("kubernetes.io/serviceaccount/secret.name") or "")
    sa_name = str(claims.get("kubernetes.io/serviceaccount/service-account.name") or "")
    sa_uid = str(claims.get("kubernetes.io/serviceaccount/service-account.uid") or "")
    if not (ns and secret_name and sa_name and sa_uid) or claims.get("sub") != f"system:serviceaccount:{ns}:{sa_name}":
        return None
    secret = _stored(api, "secrets", ns, secret_name)
    if secret is None or (secret.get("metadata") or {}).get("deletionTimestamp"):
        return None
    try:
        held = base64.b64decode(str((secret.get("data") or {}).get("token") or ""), validate=True)
    except (ValueError, binascii.Error):
        return None
    if not hmac.compare_digest(held, token.encode()):
        return None
    labels = (secret.get("metadata") or {}).get("labels") or {}
    if labels.get("kubernetes.io/legacy-token-invalid-since"):
        return None
    sa = _stored(api, "serviceaccounts", ns, sa_name)
    if sa is None or sa["metadata"].get("deletionTimestamp") or sa["metadata"].get("uid") != sa_uid:
        return None
    return _user(ns, sa_name, sa_uid, {})


def authenticate(api: Any, token: str) -> UserInfo | None:
    """The service account a bearer ``token`` stands for, or None (a 401) — see the module
    docstring. Reads the store directly (no RBAC), at its head, on the virtual clock."""
    parsed = decode(token)
    if parsed is None:
        return None
    header, claims, signing_input, sig = parsed
    iss = claims.get("iss")
    if header.get("alg") == "HS256":
        if not _verified(api, header, signing_input, sig):
            return None
        if iss == LEGACY_ISSUER:
            return _legacy(api, token, claims)
        if iss == ISSUER:
            return _bound(api, _kubelet_claims(claims))
    return None


# ----------------------------------------------------------------------------- legacy Secrets


def legacy_token(api: Any, sa: Obj, secret: Obj) -> str:
    """The token upstream's token controller puts in a ``kubernetes.io/service-account-token``
    Secret (``serviceaccount.LegacyClaims``: no expiry), signed with :func:`signing_key`."""
    sm, cm = sa["metadata"], secret["metadata"]
    ns = sm.get("namespace", "")
    return sign(api, {
        "iss": LEGACY_ISSUER,
        "kubernetes.io/serviceaccount/namespace": ns,
        "kubernetes.io/serviceaccount/secret.name": cm["name"],
        "kubernetes.io/serviceaccount/service-account.name": sm["name"],
        "kubernetes.io/serviceaccount/service-account.uid": sm.get("uid", ""),
        "sub": f"system:serviceaccount:{ns}:{sm['name']}",
    })


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def legacy_secret_update(api: Any, secret: Obj, sa: Obj, ca: str) -> Obj | None:
    """The token Secret as upstream's ``generateTokenIfNeeded`` leaves it (``data.token`` when
    empty, ``data.ca.crt`` when not ``ca``, ``data.namespace``, both account annotations), or
    None when nothing needs writing."""
    meta = secret.get("metadata") or {}
    data = dict(secret.get("data") or {})
    ann = dict(meta.get("annotations") or {})
    ns = meta.get("namespace", "")
    changed = False
    if not data.get("token"):
        data["token"] = _b64(legacy_token(api, sa, secret))
        changed = True
    if ca and data.get("ca.crt") != _b64(ca):
        data["ca.crt"] = _b64(ca)
        changed = True
    if data.get("namespace") != _b64(ns):
        data["namespace"] = _b64(ns)
        changed = True
    sm = sa["metadata"]
    if ann.get(SA_NAME_ANNOTATION) != sm["name"] or ann.get(SA_UID_ANNOTATION) != sm.get("uid", ""):
        ann[SA_NAME_ANNOTATION] = sm["name"]
        ann[SA_UID_ANNOTATION] = sm.get("uid", "")
        changed = True
    if not changed:
        return None
    return {**secret, "metadata": {**meta, "annotations": ann}, "data": data}
