"""Kubernetes protobuf request bodies (k8semu.server.protobuf and its hook in the HTTP front).

Bodies are built with a tiny encoder below (proto2 wire format, as gogo-protobuf
writes Kubernetes types: non-pointer fields always present, pointer ones only
when set), decoded, and compared with the JSON form kubectl would have sent.
Two bodies captured from the real kubectl 1.33 (``-v=9``) are decoded too.
"""

from __future__ import annotations

import orjson
import pytest

from k8semu.api import auth
from k8semu.server import protobuf as pb
from k8semu.server.app import APIApp
from k8semu.sim.cluster import Cluster
from test_server import ADMIN
from test_server import call as server_call

ACCEPT = "application/vnd.kubernetes.protobuf,application/json"  # what kubectl's typed clients send


# ---------------------------------------------------------------------------- a test-side encoder

def varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative int32/int64: 10-byte two's complement, no zigzag
    out = bytearray()
    while True:
        low = n & 0x7F
        n >>= 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def f(num: int, value: int | bool | str | bytes | list) -> bytes:
    """One field: ints/bools as varints, str/bytes length-delimited, a list of fields as a message."""
    if isinstance(value, (bool, int)):
        return varint(num << 3) + varint(int(value))
    if isinstance(value, list):
        value = b"".join(value)
    if isinstance(value, str):
        value = value.encode()
    return varint(num << 3 | 2) + varint(len(value)) + value


def entry(num: int, key: str, value: str | bytes | list) -> bytes:
    """One map entry (key 1, value 2)."""
    return f(num, [f(1, key), f(2, value)])


def body(api_version: str, kind: str, *fields: bytes) -> bytes:
    """The k8s magic and the runtime.Unknown envelope around an object's message."""
    return pb.MAGIC + f(1, [f(1, api_version), f(2, kind)]) + f(2, b"".join(fields)) + f(3, "") + f(4, "")


def meta(name: str, *extra: bytes) -> bytes:
    """ObjectMeta as gogo writes it: every non-pointer field present, empty ones included."""
    return f(1, [f(1, name), f(2, ""), f(3, ""), f(4, ""), f(5, ""), f(6, ""), f(7, 0), f(8, b""), *extra])


# ---------------------------------------------------------------------------- decoding

def test_namespace_with_empty_non_pointer_fields_left_out():
    got = pb.decode_body(body("v1", "Namespace", meta("pf", entry(11, "team", "a")), f(2, b""), f(3, [f(1, "")])))
    assert got == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "pf", "labels": {"team": "a"}},
                   "spec": {}, "status": {}}


def test_deployment_pointers_quantities_int_or_string_and_embedded_structs():
    container = [
        f(1, "nginx"), f(2, "nginx:1.27"), f(3, "sh"), f(3, "-c"), f(3, ""), f(4, "x"), f(5, ""),
        f(6, [f(1, ""), f(2, 0), f(3, 80), f(4, "TCP"), f(5, "")]),
        f(7, [f(1, "MODE"), f(2, "prod")]),
        f(7, [f(1, "KEY"), f(2, ""), f(3, [f(3, [f(1, [f(1, "cfg")]), f(2, "k"), f(3, False)])])]),
        f(8, [entry(1, "cpu", [f(1, "500m")]), entry(2, "memory", [f(1, "64Mi")])]),
        f(11, [f(1, [f(2, [f(1, "/healthz"), f(2, [f(1, 1), f(2, 0), f(3, "http")]), f(3, ""), f(4, "HTTP")])]),
               f(2, 0), f(3, 1), f(4, 10), f(5, 1), f(6, 3)]),
        f(16, False), f(17, False), f(18, False),
    ]
    spec = [
        f(1, 0),  # replicas is *int32: a present 0 stays
        f(2, [entry(1, "app", "web")]),
        f(3, [f(1, [f(1, ""), entry(11, "app", "web")]),
              f(2, [f(2, container), f(3, "Always"), f(11, False), f(25, 0)])]),
        f(4, [f(1, "RollingUpdate"), f(2, [f(1, [f(1, 0), f(2, 0), f(3, "")]), f(2, [f(1, 1), f(2, 0), f(3, "25%")])])]),
        f(5, 0), f(6, 10), f(7, False),
    ]
    got = pb.decode_body(body("apps/v1", "Deployment", meta("web", entry(12, "note", "x")), f(2, spec),
                              f(3, [f(1, 0), f(2, 0), f(7, 0)])))
    assert got == {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "annotations": {"note": "x"}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [{
                        "name": "nginx", "image": "nginx:1.27", "command": ["sh", "-c", ""], "args": ["x"],
                        "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        "env": [{"name": "MODE", "value": "prod"},
                                {"name": "KEY", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "k",
                                                                                  "optional": False}}}],
                        "resources": {"limits": {"cpu": "500m"}, "requests": {"memory": "64Mi"}},
                        "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
                                           "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
                                           "failureThreshold": 3},
                    }],
                    "restartPolicy": "Always", "priority": 0,
                },
            },
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "25%"}},
            "revisionHistoryLimit": 10,
        },
        "status": {},
    }


def test_times_fields_v1_bytes_and_negative_numbers():
    m = meta("s", f(9, [f(1, 1735689600), f(2, 0)]), f(10, 30), f(14, "a/b"),
                f(17, [f(1, "kubectl"), f(2, "Update"), f(3, "v1"), f(4, [f(1, 1735689601)]), f(6, "FieldsV1"),
                       f(7, [f(1, b'{"f:data":{}}')]), f(8, "")]),
                f(13, [f(1, "Deployment"), f(3, "web"), f(4, "u1"), f(5, "apps/v1"), f(6, True)]))
    got = pb.decode_body(body("v1", "Secret", m, entry(2, "bin", b"\xff\x00"), f(3, "Opaque"), entry(4, "s", "t")))
    assert got["metadata"] == {
        "name": "s", "deletionTimestamp": "2025-01-01T00:00:00Z", "deletionGracePeriodSeconds": 30,
        "finalizers": ["a/b"],
        "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                           "time": "2025-01-01T00:00:01Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}],
        "ownerReferences": [{"kind": "Deployment", "name": "web", "uid": "u1", "apiVersion": "apps/v1",
                             "controller": True}],
    }
    assert got["data"] == {"bin": "/wA="} and got["type"] == "Opaque" and got["stringData"] == {"s": "t"}
    pc = pb.decode_body(body("scheduling.k8s.io/v1", "PriorityClass", meta("low"), f(2, -5), f(3, False)))
    assert pc["value"] == -5 and "globalDefault" not in pc
    assert len(varint(-5)) == 10


def test_packed_and_unpacked_repeated_ints():
    packed = b"".join(varint(n) for n in (1000, 2000))
    for groups in ([f(4, 1000), f(4, 2000)], [f(4, packed)]):
        ctx = f(14, [f(2, 1000), *groups])
        got = pb.decode_body(body("v1", "Pod", meta("p"), f(2, [f(2, [f(1, "c"), f(2, "busybox")]), ctx])))
        assert got["spec"]["securityContext"] == {"runAsUser": 1000, "supplementalGroups": [1000, 2000]}


def test_kubectl_133_create_deployment_body():
    # kubectl create deployment web3 --image=nginx:1.27 --replicas=0 --port=80 -- sh -c "echo hi"
    data = bytes.fromhex(
        "6b3873000a150a07617070732f7631120a4465706c6f796d656e7412d3010a210a047765623312001a0022002a00320038"
        "0042005a0b0a03617070120477656233129f010800120d0a0b0a036170701204776562331a83010a1d0a0012001a002200"
        "2a003200380042005a0b0a03617070120477656233126212440a056e67696e78120a6e67696e783a312e32371a02736"
        "81a022d631a076563686f2068692a00320a0a001000185022002a0042006a007200800100880100900100a201001a0032"
        "0042004a0052005800600068008201008a01009a0100c2010022020a00280038001a0c08001000180020002800380"
        "01a002200")
    assert pb.decode_body(data) == {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web3", "labels": {"app": "web3"}},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web3"}},
                 "template": {"metadata": {"labels": {"app": "web3"}},
                              "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27",
                                                       "command": ["sh", "-c", "echo hi"],
                                                       "ports": [{"containerPort": 80}], "resources": {}}]}},
                 "strategy": {}},
        "status": {},
    }


def test_kubectl_133_create_namespace_body():
    data = bytes.fromhex("6b3873000a0f0a02763112094e616d657370616365121b0a130a0370663212001a0022002a003200380042"
                         "0012001a020a001a002200")
    assert pb.decode_body(data) == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "pf2"},
                                    "spec": {}, "status": {}}


def test_ingress_rbac_pdb_and_eviction():
    backend = [f(4, [f(1, "svc1"), f(2, [f(1, ""), f(2, 80)])])]
    rule = [f(1, "foo.com"), f(2, [f(1, [f(1, [f(1, "/bar"), f(2, backend), f(3, "Prefix")])])])]
    ing = pb.decode_body(body("networking.k8s.io/v1", "Ingress", meta("i"), f(2, [f(3, rule), f(4, "nginx")]),
                              f(3, [f(1, b"")])))
    assert ing["spec"] == {"rules": [{"host": "foo.com", "http": {"paths": [
        {"path": "/bar", "backend": {"service": {"name": "svc1", "port": {"number": 80}}}, "pathType": "Prefix"}]}}],
        "ingressClassName": "nginx"}
    assert ing["status"] == {"loadBalancer": {}}
    rb = pb.decode_body(body("rbac.authorization.k8s.io/v1", "RoleBinding", meta("rb"),
                             f(2, [f(1, "ServiceAccount"), f(2, ""), f(3, "sa"), f(4, "default")]),
                             f(3, [f(1, "rbac.authorization.k8s.io"), f(2, "Role"), f(3, "r")])))
    assert rb["subjects"] == [{"kind": "ServiceAccount", "name": "sa", "namespace": "default"}]
    assert rb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}
    pdb = pb.decode_body(body("policy/v1", "PodDisruptionBudget", meta("p"),
                              f(2, [f(1, [f(1, 1), f(2, 0), f(3, "50%")]), f(2, [entry(1, "app", "x")])])))
    assert pdb["spec"] == {"minAvailable": "50%", "selector": {"matchLabels": {"app": "x"}}}
    ev = pb.decode_body(body("policy/v1", "Eviction", meta("web-1", f(3, "default")),
                             f(2, [f(1, 0), f(5, "All")])))
    assert ev == {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "web-1", "namespace": "default"},
                  "deleteOptions": {"gracePeriodSeconds": 0, "dryRun": ["All"]}}


def test_unknown_fields_zero_ones_are_skipped_others_named():
    # field 99 of Namespace, empty: what a newer kubectl's always-marshalled new field looks like
    assert pb.decode_body(body("v1", "Namespace", meta("a"), f(99, ""), f(98, 0)))["metadata"] == {"name": "a"}
    with pytest.raises(pb.ProtobufError, match="field 99 of Namespace is not supported"):
        pb.decode_body(body("v1", "Namespace", meta("a"), f(99, "x")))
    with pytest.raises(pb.ProtobufError, match="field 3 of VolumeSource"):  # gcePersistentDisk
        pb.decode_body(body("v1", "Pod", meta("p"), f(2, [f(1, [f(1, "v"), f(2, [f(3, [f(1, "pd")])])])])))


def test_bad_bodies():
    with pytest.raises(pb.UnsupportedProtobufType, match=r"StatefulSet \(apps/v1\)"):
        pb.decode_body(body("apps/v1", "StatefulSet", meta("s")))
    with pytest.raises(pb.UnsupportedProtobufType):
        pb.decode_body(body("v1", "Deployment", meta("s")))  # right kind, wrong version
    with pytest.raises(pb.ProtobufError, match="magic"):
        pb.decode_body(b'{"kind": "Namespace"}')
    with pytest.raises(pb.ProtobufError, match="truncated"):
        pb.decode_body(body("v1", "Namespace", meta("a"))[:-9])
    with pytest.raises(pb.ProtobufError, match="wire type"):
        pb.decode_body(body("v1", "Namespace", f(1, 7)))
    with pytest.raises(pb.ProtobufError, match="content encoding"):
        pb.decode_body(pb.MAGIC + f(1, [f(1, "v1"), f(2, "Namespace")]) + f(2, b"") + f(3, "gzip"))


# ---------------------------------------------------------------------------- through the HTTP front

@pytest.fixture
def app():
    return APIApp(Cluster.create().api, {ADMIN: auth.admin()})


async def call(app, method, path, data: bytes, ctype=pb.MEDIA_TYPE):
    """One request with a protobuf body (tests/test_server.py's helper); the reply decoded as JSON."""
    code, headers, out = await server_call(app, method, path, data, accept=ACCEPT, ctype=ctype)
    return code, headers, orjson.loads(out)


async def test_protobuf_create_answers_json(app):
    code, headers, ns = await call(app, "POST", "/api/v1/namespaces", body("v1", "Namespace", meta("pf")))
    assert code == 201 and headers[b"content-type"] == b"application/json"
    assert ns["kind"] == "Namespace" and ns["metadata"]["name"] == "pf" and ns["status"] == {"phase": "Active"}
    dep = body("apps/v1", "Deployment", meta("web"), f(2, [
        f(1, 0), f(2, [entry(1, "app", "web")]),
        f(3, [f(1, [entry(11, "app", "web")]), f(2, [f(2, [f(1, "nginx"), f(2, "nginx:1.27")])])])]))
    code, _, out = await call(app, "POST", "/apis/apps/v1/namespaces/pf/deployments", dep)
    assert code == 201 and out["spec"]["replicas"] == 0 and out["metadata"]["namespace"] == "pf"


async def test_protobuf_errors_are_status_objects(app):
    code, _, st = await call(app, "POST", "/api/v1/namespaces", body("v1", "Namespace", meta("a"), f(99, "x")))
    assert code == 400 and st["kind"] == "Status" and st["reason"] == "BadRequest"
    assert st["message"] == "protobuf: field 99 of Namespace is not supported by k8semu"
    code, _, st = await call(app, "POST", "/apis/apps/v1/namespaces/default/statefulsets",
                             body("apps/v1", "StatefulSet", meta("s")))
    assert code == 415 and st["reason"] == "UnsupportedMediaType" and "StatefulSet (apps/v1)" in st["message"]
    code, _, st = await call(app, "PATCH", "/api/v1/namespaces/default", body("v1", "Namespace", meta("default")))
    assert code == 415
    code, _, st = await call(app, "POST", "/api/v1/namespaces", b"\xd9\xd9\xf7", ctype="application/cbor")
    assert code == 415 and pb.MEDIA_TYPE in st["message"]
