"""The Python ``kubernetes`` client (pinned in the test extra) against ``k8semu serve``.

One ``k8semu serve`` subprocess per module (``Server`` from test_kubectl_e2e:
free port, ``--speed 20``, its own kubeconfig with the cluster CA and the admin
bearer token). The client is configured from that kubeconfig with
``config.load_kube_config`` into its own ``Configuration`` and then used as an
application would: typed CRUD on the core and apps APIs, the scale subresource,
watches, logs, and a typed list of every resource discovery advertises. The
client's models validate required fields when they are built, so an object
k8semu returns without a required field (or with a wrong type) fails here.

The server runs in real time at 20 virtual seconds per wall second: waits are
polling loops with a wall-clock timeout.

Skipped when ``kubernetes`` is not importable.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any, Callable

import pytest

kubernetes = pytest.importorskip("kubernetes")

from kubernetes import client, config, watch  # noqa: E402
from kubernetes.client.rest import ApiException  # noqa: E402

from test_kubectl_e2e import Server  # noqa: E402

NS = "pyclient"
WAIT = 30.0  # wall seconds any wait may take
NGINX = "nginx:1.30-alpine"


def _until(what: str, probe: Callable[[], Any], timeout: float = WAIT, interval: float = 0.1) -> Any:
    """Poll ``probe`` until it returns something truthy (returned); fail after ``timeout`` wall seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def _status(exc: ApiException) -> dict[str, Any]:
    body = json.loads(exc.body)
    assert body["kind"] == "Status" and body["apiVersion"] == "v1" and body["status"] == "Failure"
    assert body["code"] == exc.status
    return body


def _snake(kind: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", kind).lower()


def _api_class(group_version: str) -> type | None:
    """The client's typed API class for a group/version (``apps/v1`` -> ``AppsV1Api``), if it has one."""
    group, _, version = group_version.rpartition("/")
    prefix = "".join(p.capitalize() for p in group.removesuffix(".k8s.io").split(".")) if group else "Core"
    return getattr(client, f"{prefix}{version.capitalize()}Api", None)


class _Raw:
    """A stand-in HTTP response for :meth:`ApiClient.deserialize` (it reads ``.data``)."""

    def __init__(self, data: Any) -> None:
        self.data = json.dumps(data)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("pyclient"))
    try:
        yield srv
    finally:
        code = srv.stop()
        assert code == 0, srv.proc.stderr.read()[-2000:]


@pytest.fixture(scope="module")
def api(server):
    cfg = client.Configuration()
    config.load_kube_config(config_file=str(server.kubeconfig), client_configuration=cfg)
    assert cfg.host.startswith("https://127.0.0.1:") and cfg.ssl_ca_cert and cfg.verify_ssl
    assert cfg.api_key["authorization"].startswith("Bearer ")
    with client.ApiClient(cfg) as c:
        yield c


@pytest.fixture(scope="module")
def v1(api):
    return client.CoreV1Api(api)


@pytest.fixture(scope="module")
def namespace(v1):
    ns = v1.create_namespace(client.V1Namespace(api_version="v1", kind="Namespace",
                                                metadata=client.V1ObjectMeta(name=NS)))
    assert isinstance(ns, client.V1Namespace) and ns.metadata.name == NS
    _until("the namespace's default ServiceAccount",
           lambda: v1.list_namespaced_service_account(NS, field_selector="metadata.name=default").items)
    return NS


def _deployment(name: str, replicas: int) -> client.V1Deployment:
    labels = {"app": name}
    return client.V1Deployment(
        api_version="apps/v1", kind="Deployment",
        metadata=client.V1ObjectMeta(name=name, labels=labels),
        spec=client.V1DeploymentSpec(
            replicas=replicas,
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(containers=[client.V1Container(
                    name="nginx", image=NGINX, ports=[client.V1ContainerPort(container_port=80)])]))))


@pytest.fixture(scope="module")
def web(api, namespace):
    """Deployment ``web`` (nginx, 2 replicas), available."""
    apps = client.AppsV1Api(api)
    created = apps.create_namespaced_deployment(namespace, _deployment("web", 2))
    assert isinstance(created, client.V1Deployment) and created.metadata.uid
    assert created.spec.strategy.type == "RollingUpdate"  # defaulted by the server
    _until("2 available replicas",
           lambda: apps.read_namespaced_deployment_status("web", namespace).status.available_replicas == 2)
    return created


# --------------------------------------------------------------------------- reads

def test_lists(v1, namespace):
    names = {n.metadata.name for n in v1.list_namespace().items}
    assert {"default", "kube-system", NS} <= names
    nodes = v1.list_node()
    assert isinstance(nodes, client.V1NodeList) and nodes.metadata.resource_version
    assert {"control-plane", "node-1", "node-2", "node-3"} <= {n.metadata.name for n in nodes.items}
    for n in nodes.items:
        info = n.status.node_info
        assert info.kubelet_version.startswith("v1.") and info.operating_system == "linux"
        # fix: Go always encodes NodeSystemInfo's strings; the client requires kubeProxyVersion
        assert info.kube_proxy_version == ""
        assert any(c.type == "Ready" and c.status == "True" for c in n.status.conditions)
    assert v1.read_node("node-1").status.node_info.kube_proxy_version == ""
    w = watch.Watch()
    for n, ev in enumerate(w.stream(v1.list_node, timeout_seconds=int(WAIT)), 1):
        assert ev["type"] == "ADDED" and ev["object"].status.node_info.kube_proxy_version == ""
        if n == len(nodes.items):
            w.stop()
    pods = v1.list_pod_for_all_namespaces()
    assert any(p.metadata.namespace == "kube-system" for p in pods.items)
    assert all(isinstance(p, client.V1Pod) and p.spec.containers for p in pods.items)
    assert client.VersionApi(v1.api_client).get_code().git_version.startswith("v1.")


# --------------------------------------------------------------------------- CRUD

def test_config_map_crud(v1, namespace):
    cm = client.V1ConfigMap(api_version="v1", kind="ConfigMap",
                            metadata=client.V1ObjectMeta(name="settings", labels={"a": "1"}),
                            data={"color": "blue"})
    made = v1.create_namespaced_config_map(namespace, cm)
    assert made.metadata.uid and made.metadata.resource_version and made.data == {"color": "blue"}
    assert made.metadata.creation_timestamp.tzinfo is not None

    with pytest.raises(ApiException) as dup:
        v1.create_namespaced_config_map(namespace, cm)
    assert dup.value.status == 409
    st = _status(dup.value)
    assert st["reason"] == "AlreadyExists" and st["message"] == 'configmaps "settings" already exists'
    assert st["details"] == {"name": "settings", "kind": "configmaps"}

    got = v1.read_namespaced_config_map("settings", namespace)
    assert got.metadata.resource_version == made.metadata.resource_version and got.data == {"color": "blue"}

    # a dict body goes as a strategic merge patch
    p1 = v1.patch_namespaced_config_map("settings", namespace,
                                        {"metadata": {"labels": {"b": "2"}}, "data": {"size": "L"}})
    assert p1.metadata.labels == {"a": "1", "b": "2"} and p1.data == {"color": "blue", "size": "L"}
    assert int(p1.metadata.resource_version) > int(made.metadata.resource_version)

    # a list body goes as a JSON patch
    p2 = v1.patch_namespaced_config_map("settings", namespace, [
        {"op": "test", "path": "/data/color", "value": "blue"},
        {"op": "replace", "path": "/data/color", "value": "green"},
        {"op": "remove", "path": "/metadata/labels/a"},
    ])
    assert p2.data == {"color": "green", "size": "L"} and p2.metadata.labels == {"b": "2"}
    assert int(p2.metadata.resource_version) > int(p1.metadata.resource_version)
    with pytest.raises(ApiException) as bad:
        v1.patch_namespaced_config_map("settings", namespace, [{"op": "test", "path": "/data/color", "value": "x"}])
    assert bad.value.status == 422
    assert _status(bad.value)["message"] == "the server rejected our request due to an error in our request"

    p2.data = {"only": "this"}
    replaced = v1.replace_namespaced_config_map("settings", namespace, p2)
    assert replaced.data == {"only": "this"}
    assert int(replaced.metadata.resource_version) > int(p2.metadata.resource_version)
    # replacing with a stale resourceVersion conflicts
    with pytest.raises(ApiException) as stale:
        v1.replace_namespaced_config_map("settings", namespace, p2)
    assert stale.value.status == 409 and _status(stale.value)["reason"] == "Conflict"

    gone = v1.delete_namespaced_config_map("settings", namespace)
    assert isinstance(gone, client.V1Status)  # its content: test_delete_answers_a_status
    for call in (lambda: v1.read_namespaced_config_map("settings", namespace),
                 lambda: v1.delete_namespaced_config_map("settings", namespace),
                 lambda: v1.patch_namespaced_config_map("settings", namespace, {"data": {"x": "y"}})):
        with pytest.raises(ApiException) as missing:
            call()
        assert missing.value.status == 404
        st = _status(missing.value)
        assert st["reason"] == "NotFound" and st["message"] == 'configmaps "settings" not found'
        assert st["details"] == {"name": "settings", "kind": "configmaps"}


def test_delete_answers_a_status(v1, namespace):
    v1.create_namespaced_config_map(namespace, {"apiVersion": "v1", "kind": "ConfigMap",
                                                "metadata": {"name": "short-lived"}})
    made = v1.read_namespaced_config_map("short-lived", namespace)
    gone = v1.delete_namespaced_config_map("short-lived", namespace)
    # kube-apiserver answers an immediate delete with a Success Status (details: name, kind, uid)
    # unless the kind's registry sets ReturnDeletedObject (pods, services, serviceaccounts, …)
    assert gone.kind == "Status" and gone.status == "Success"
    assert (gone.details.name, gone.details.kind, gone.details.uid) == ("short-lived", "configmaps", made.metadata.uid)


def test_service_crud(v1, namespace):
    svc = client.V1Service(
        api_version="v1", kind="Service", metadata=client.V1ObjectMeta(name="web"),
        spec=client.V1ServiceSpec(selector={"app": "web"},
                                  ports=[client.V1ServicePort(port=80, target_port=80)]))
    made = v1.create_namespaced_service(namespace, svc)
    assert made.spec.type == "ClusterIP" and re.fullmatch(r"10\.\d+\.\d+\.\d+", made.spec.cluster_ip)
    assert made.spec.ports[0].protocol == "TCP" and made.spec.ports[0].target_port == 80
    got = v1.read_namespaced_service("web", namespace)
    assert got.spec.cluster_ip == made.spec.cluster_ip and got.spec.cluster_i_ps == [made.spec.cluster_ip]

    patched = v1.patch_namespaced_service("web", namespace, {"metadata": {"annotations": {"team": "a"}}})
    assert patched.metadata.annotations == {"team": "a"}
    assert patched.metadata.resource_version != made.metadata.resource_version

    patched.spec.ports[0].name = "http"
    replaced = v1.replace_namespaced_service("web", namespace, patched)
    assert replaced.spec.ports[0].name == "http" and replaced.spec.cluster_ip == made.spec.cluster_ip
    assert replaced.metadata.resource_version != patched.metadata.resource_version

    v1.delete_namespaced_service("web", namespace)
    with pytest.raises(ApiException) as missing:
        v1.read_namespaced_service("web", namespace)
    assert missing.value.status == 404 and _status(missing.value)["message"] == 'services "web" not found'


# --------------------------------------------------------------------------- apps

def test_deployment_scale_and_status(api, web, namespace):
    apps = client.AppsV1Api(api)
    scale = apps.read_namespaced_deployment_scale("web", namespace)
    assert isinstance(scale, client.V1Scale) and scale.spec.replicas == 2 and scale.status.replicas == 2
    assert scale.status.selector == "app=web"
    scaled = apps.patch_namespaced_deployment_scale("web", namespace, {"spec": {"replicas": 3}})
    assert isinstance(scaled, client.V1Scale) and scaled.spec.replicas == 3
    dep = _until("3 available replicas", lambda: (
        d := apps.read_namespaced_deployment_status("web", namespace)).status.available_replicas == 3 and d)
    assert isinstance(dep, client.V1Deployment)
    assert dep.spec.replicas == 3 and dep.status.ready_replicas == 3 and dep.status.updated_replicas == 3
    assert dep.status.observed_generation == dep.metadata.generation
    assert {c.type: c.status for c in dep.status.conditions} == {"Available": "True", "Progressing": "True"}
    rs = apps.list_namespaced_replica_set(namespace, label_selector="app=web").items
    assert len(rs) == 1 and rs[0].metadata.owner_references[0].name == "web"
    assert rs[0].metadata.owner_references[0].controller is True


# --------------------------------------------------------------------------- watch

def _pod(name: str) -> client.V1Pod:
    return client.V1Pod(api_version="v1", kind="Pod",
                        metadata=client.V1ObjectMeta(name=name, labels={"watched": name}),
                        spec=client.V1PodSpec(containers=[client.V1Container(name="nginx", image=NGINX)]))


def _watch_pod_life(v1, namespace: str, name: str, *, from_list: bool) -> list[tuple[str, str, int]]:
    """Create pod ``name``, watch it until DELETED (deleting it once Running); the events seen.

    ``from_list``: the watch starts at the resourceVersion of a list taken before the create;
    otherwise it starts without one, after the create (its first event is the synthetic ADDED).
    """
    rv = v1.list_namespaced_pod(namespace).metadata.resource_version if from_list else None
    v1.create_namespaced_pod(namespace, _pod(name))
    kwargs = {"resource_version": rv} if rv else {}
    seen: list[tuple[str, str, int]] = []
    deleting = False
    w = watch.Watch()
    for ev in w.stream(v1.list_namespaced_pod, namespace=namespace, label_selector=f"watched={name}",
                       timeout_seconds=int(WAIT), **kwargs):
        pod = ev["object"]
        assert isinstance(pod, client.V1Pod) and pod.metadata.name == name, ev
        assert ev["raw_object"]["metadata"]["name"] == name
        seen.append((ev["type"], pod.status.phase, int(pod.metadata.resource_version)))
        if not deleting and pod.status.phase == "Running":
            deleting = True
            v1.delete_namespaced_pod(name, namespace)
        if ev["type"] == "DELETED":
            w.stop()
    return seen


@pytest.mark.parametrize("from_list", [False, True], ids=["no-rv", "rv-from-list"])
def test_watch_a_pod_come_and_go(v1, namespace, from_list):
    name = "watched-rv" if from_list else "watched"
    seen = _watch_pod_life(v1, namespace, name, from_list=from_list)
    types = [t for t, _, _ in seen]
    assert types[0] == "ADDED" and types[-1] == "DELETED" and len(types) >= 3, seen
    assert set(types[1:-1]) == {"MODIFIED"}, seen
    if from_list:
        assert seen[0][1] == "Pending"  # the create itself, not a snapshot
    assert "Running" in [phase for _, phase, _ in seen]
    revs = [r for _, _, r in seen]
    assert revs == sorted(revs) and len(set(revs)) == len(revs), seen
    with pytest.raises(ApiException) as gone:
        v1.read_namespaced_pod(name, namespace)
    assert gone.value.status == 404


# --------------------------------------------------------------------------- logs

def test_pod_logs(v1, web, namespace):
    pod = v1.list_namespaced_pod(namespace, label_selector="app=web").items[0]
    # k8semu's nginx program logs nothing (docs/container-behaviour.md), so the text is empty
    assert isinstance(v1.read_namespaced_pod_log(pod.metadata.name, namespace), str)

    talker = client.V1Pod(api_version="v1", kind="Pod", metadata=client.V1ObjectMeta(name="talker"),
                          spec=client.V1PodSpec(containers=[client.V1Container(
                              name="sh", image="busybox:1.36",
                              command=["sh", "-c", "echo hello; echo world; sleep 3600"])]))
    v1.create_namespaced_pod(namespace, talker)
    _until("talker running", lambda: v1.read_namespaced_pod_status("talker", namespace).status.phase == "Running")
    text = _until("talker's log", lambda: v1.read_namespaced_pod_log("talker", namespace))
    assert text == "hello\nworld\n"
    assert v1.read_namespaced_pod_log("talker", namespace, tail_lines=1) == "world\n"
    stamped = v1.read_namespaced_pod_log("talker", namespace, timestamps=True).splitlines()
    assert [line.split(" ", 1)[1] for line in stamped] == ["hello", "world"]
    with pytest.raises(ApiException) as bad:
        v1.read_namespaced_pod_log("talker", namespace, container="nope")
    assert bad.value.status == 400 and _status(bad.value)["message"] == "container nope is not valid for pod talker"
    v1.delete_namespaced_pod("talker", namespace, grace_period_seconds=0)


# --------------------------------------------------------------------------- every kind

def _csr_request() -> str:
    """A PKCS#10 request for CN=jane, O=dev (a fixed EC key), PEM, base64 as ``spec.request`` takes it."""
    import base64

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.derive_private_key(4242, ec.SECP256R1())
    req = x509.CertificateSigningRequestBuilder().subject_name(x509.Name([
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "dev"), x509.NameAttribute(NameOID.COMMON_NAME, "jane")]))
    return base64.b64encode(req.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)).decode()


_EXTRA = [  # one object of each kind nothing in the cluster makes on its own (group/version, namespaced, body)
    ("v1", {"kind": "Secret", "metadata": {"name": "s"}, "stringData": {"k": "v"}}),
    ("v1", {"kind": "PodTemplate", "metadata": {"name": "pt"}, "template": {
        "metadata": {"labels": {"app": "pt"}}, "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}}),
    ("node.k8s.io/v1", {"kind": "RuntimeClass", "metadata": {"name": "gvisor"}, "handler": "runsc"}),
    ("admissionregistration.k8s.io/v1", {"kind": "ValidatingAdmissionPolicy", "metadata": {"name": "cm-audit"},
                                          "spec": {"matchConstraints": {"resourceRules": [{
                                              "apiGroups": [""], "apiVersions": ["v1"], "operations": ["DELETE"],
                                              "resources": ["configmaps"]}]},
                                              "validations": [{"expression": "true"}]}}),
    ("admissionregistration.k8s.io/v1", {"kind": "ValidatingAdmissionPolicyBinding",
                                          "metadata": {"name": "cm-audit"},
                                          "spec": {"policyName": "cm-audit", "validationActions": ["Audit"]}}),
    ("apiextensions.k8s.io/v1", {"kind": "CustomResourceDefinition", "metadata": {"name": "crontabs.stable.example.com"},
                                 "spec": {"group": "stable.example.com", "scope": "Namespaced",
                                          "names": {"plural": "crontabs", "kind": "CronTab", "shortNames": ["ct"]},
                                          "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                                              "openAPIV3Schema": {"type": "object",
                                                                  "x-kubernetes-preserve-unknown-fields": True}}}]}}),
    ("v1", {"kind": "ResourceQuota", "metadata": {"name": "q"}, "spec": {"hard": {"pods": "50"}}}),
    ("v1", {"kind": "LimitRange", "metadata": {"name": "lr"},
            "spec": {"limits": [{"type": "Container", "max": {"memory": "1Gi"}}]}}),
    ("v1", {"kind": "PersistentVolume", "metadata": {"name": "pv"},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "hostPath": {"path": "/data"}}}),
    ("v1", {"kind": "PersistentVolumeClaim", "metadata": {"name": "pvc"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                     "storageClassName": ""}}),
    ("v1", {"kind": "ReplicationController", "metadata": {"name": "rc"},
            "spec": {"replicas": 1, "selector": {"rc": "rc"}, "template": {
                "metadata": {"labels": {"rc": "rc"}},
                "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}}}}),
    ("events.k8s.io/v1", {"kind": "Event", "metadata": {"name": "ev"}, "eventTime": "2025-01-01T00:00:00.000000Z",
                          "reportingController": "example.com/test", "reportingInstance": "test-1",
                          "action": "Testing", "reason": "Tested", "type": "Normal", "note": "hello",
                          "regarding": {"kind": "Namespace", "name": NS, "apiVersion": "v1"}}),
    ("storage.k8s.io/v1", {"kind": "StorageClass", "metadata": {"name": "slow"},
                           "provisioner": "example.com/none"}),
    ("apps/v1", {"kind": "StatefulSet", "metadata": {"name": "db"}, "spec": {
        "replicas": 1, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
        "template": {"metadata": {"labels": {"app": "db"}},
                     "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}}}}),
    ("batch/v1", {"kind": "Job", "metadata": {"name": "once"}, "spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36", "command": ["true"]}]}}}}),
    ("batch/v1", {"kind": "CronJob", "metadata": {"name": "cron"}, "spec": {
        "schedule": "0 0 1 1 *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36"}]}}}}}}),
    ("autoscaling/v2", {"kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"}, "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 3, "maxReplicas": 4}}),
    ("policy/v1", {"kind": "PodDisruptionBudget", "metadata": {"name": "web"},
                   "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}),
    ("networking.k8s.io/v1", {"kind": "NetworkPolicy", "metadata": {"name": "np"},
                              "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}),
    ("networking.k8s.io/v1", {"kind": "IngressClass", "metadata": {"name": "nginx"},
                              "spec": {"controller": "k8s.io/ingress-nginx"}}),
    ("networking.k8s.io/v1", {"kind": "Ingress", "metadata": {"name": "web"}, "spec": {
        "ingressClassName": "nginx", "rules": [{"host": "web.example", "http": {"paths": [{
            "path": "/", "pathType": "Prefix",
            "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}}),
    ("certificates.k8s.io/v1", {"kind": "CertificateSigningRequest", "metadata": {"name": "jane"},
                                "spec": {"request": _csr_request(), "signerName": "kubernetes.io/kube-apiserver-client",
                                         "usages": ["client auth"]}}),
    ("rbac.authorization.k8s.io/v1", {"kind": "Role", "metadata": {"name": "reader"}, "rules": [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]}),
    ("rbac.authorization.k8s.io/v1", {"kind": "RoleBinding", "metadata": {"name": "reader"},
                                      "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                                  "name": "reader"},
                                      "subjects": [{"kind": "User", "name": "jane"}]}),
]


def _discovered(api) -> list[tuple[str, client.V1APIResource]]:
    """Every (groupVersion, resource) the server's legacy discovery lists, subresources left out."""
    gvs = [f"{v}" for v in client.CoreApi(api).get_api_versions().versions]
    gvs += [v.group_version for g in client.ApisApi(api).get_api_versions().groups for v in g.versions]
    out = []
    for gv in gvs:
        path = f"/api/{gv}" if "/" not in gv else f"/apis/{gv}"
        lst = api.call_api(path, "GET", response_type="V1APIResourceList", auth_settings=["BearerToken"],
                           _return_http_data_only=True)
        assert lst.group_version == gv
        out += [(gv, r) for r in lst.resources if "/" not in r.name]
    return out


def test_access_reviews_through_the_typed_client(api):
    """The client's typed review models read what the server answers (create-only, never stored)."""
    authz = client.AuthorizationV1Api(api)
    review = authz.create_self_subject_access_review(client.V1SelfSubjectAccessReview(
        spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=client.V1ResourceAttributes(
            namespace="default", verb="create", resource="pods"))))
    assert review.status.allowed is True
    sar = authz.create_subject_access_review(client.V1SubjectAccessReview(spec=client.V1SubjectAccessReviewSpec(
        user="nobody", resource_attributes=client.V1ResourceAttributes(verb="list", resource="secrets"))))
    assert sar.status.allowed is False
    me = client.AuthenticationV1Api(api).create_self_subject_review(client.V1SelfSubjectReview())
    assert me.status.user_info.username == "kubernetes-admin" and "system:masters" in me.status.user_info.groups


def test_every_served_kind_deserializes(api, web, namespace):
    made = {}
    for gv, body in _EXTRA:
        cls = _api_class(gv)(api)
        kind = body["kind"]
        namespaced = kind not in ("PersistentVolume", "StorageClass", "IngressClass", "CustomResourceDefinition",
                                  "RuntimeClass", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
                                  "CertificateSigningRequest")
        body = {"apiVersion": gv, **body}
        if namespaced:
            made[kind] = getattr(cls, f"create_namespaced_{_snake(kind)}")(namespace, body)
        else:
            made[kind] = getattr(cls, f"create_{_snake(kind)}")(body)
    # fix: a new object's status carries Go's always-encoded zeros (the models require them)
    assert made["ReplicationController"].status.replicas == 0
    assert made["StatefulSet"].status.replicas == 0 and made["StatefulSet"].status.available_replicas == 0
    assert made["HorizontalPodAutoscaler"].status.desired_replicas == 0
    pdb = made["PodDisruptionBudget"].status
    assert (pdb.disruptions_allowed, pdb.current_healthy, pdb.desired_healthy, pdb.expected_pods) == (0, 0, 0, 0)
    # let the controllers act on them (statuses, the Job's pod, ControllerRevisions …)
    batch = client.BatchV1Api(api)
    _until("Job once to complete", lambda: batch.read_namespaced_job_status("once", namespace).status.succeeded)
    apps = client.AppsV1Api(api)
    _until("StatefulSet db ready", lambda: apps.read_namespaced_stateful_set_status("db", namespace)
           .status.ready_replicas == 1)

    resources = _discovered(api)
    assert len(resources) >= 35
    checked = []
    for gv, r in resources:
        cls = _api_class(gv)
        method = f"list_{_snake(r.kind)}" + ("_for_all_namespaces" if r.namespaced else "")
        if cls is None or not hasattr(cls, method):
            continue  # the client has no typed API for it
        if r.name in ("componentstatuses", "apiservices"):
            continue  # computed on each request, never stored: no uid / resourceVersion to check
        typed = getattr(cls(api), method)()
        raw = json.loads(getattr(cls(api), method)(_preload_content=False).data)
        assert type(typed).__name__.endswith(f"{r.kind}List"), (gv, r.name, type(typed))
        assert raw["kind"] == f"{r.kind}List" and raw["apiVersion"] == (gv if "/" in gv else "v1")
        assert typed.items, f"no {gv} {r.name} to deserialize"
        for item in typed.items:
            assert item.metadata.name and item.metadata.uid and item.metadata.resource_version
            assert (item.metadata.namespace is not None) == r.namespaced
        # round trip: serialized again, the typed list reads back equal
        plain = api.sanitize_for_serialization(typed)
        assert plain["kind"] == raw["kind"] and len(plain["items"]) == len(typed.items)
        assert api.deserialize(_Raw(plain), type(typed).__name__) == typed
        json.dumps(plain)
        checked.append(f"{gv}/{r.name}")
    expected = {"v1/pods", "v1/nodes", "v1/events", "events.k8s.io/v1/events", "coordination.k8s.io/v1/leases",
                "apps/v1/replicasets", "apps/v1/controllerrevisions", "discovery.k8s.io/v1/endpointslices",
                "batch/v1/jobs", "autoscaling/v2/horizontalpodautoscalers", "policy/v1/poddisruptionbudgets"}
    assert expected <= set(checked)
    # metrics-server's aggregated group has no typed API in the client (CustomObjectsApi reads it);
    # the access reviews are create-only (test_access_reviews_through_the_typed_client)
    # nor have the custom resources of a CRD; the computed kinds are skipped above
    typed_resources = [(gv, r) for gv, r in resources if not gv.startswith(("metrics.k8s.io/", "stable.example.com/"))
                       and "list" in r.verbs and r.name not in ("componentstatuses", "apiservices")]
    assert len(checked) == len(typed_resources), sorted({f"{gv}/{r.name}" for gv, r in typed_resources} - set(checked))
    custom = client.CustomObjectsApi(api)
    custom.create_namespaced_custom_object("stable.example.com", "v1", namespace, "crontabs", {
        "apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "nightly"},
        "spec": {"cronSpec": "0 3 * * *"}})
    tabs = custom.list_namespaced_custom_object("stable.example.com", "v1", namespace, "crontabs")
    assert tabs["kind"] == "CronTabList" and [t["metadata"]["name"] for t in tabs["items"]] == ["nightly"]
    nodes = client.CustomObjectsApi(api).list_cluster_custom_object("metrics.k8s.io", "v1beta1", "nodes")
    assert nodes["kind"] == "NodeMetricsList" and all(n["window"] == "15s" for n in nodes["items"])
