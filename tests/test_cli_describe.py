"""``k8semu describe`` on the lab: kubectl's describer layout, line for line."""

from __future__ import annotations

from test_cli_get import k, lab, lab_file, pod_names  # noqa: F401  (fixtures)

from k8semu.cli.describe import describe_probe, event_field_selector
from k8semu.cli.printing import tabwrite


def test_describe_pod_by_label_describes_every_match(capsys, lab):
    names = pod_names(capsys, lab)
    code, out, _ = k(capsys, lab, "describe", "pod", "-l", "app=web")
    assert code == 0
    docs = out.split("\n\n\n")
    assert len(docs) == 2
    lines = docs[0].splitlines()
    assert lines[0] == f"Name:             {names[0]}"
    assert lines[1] == "Namespace:        default"
    assert lines[2] == "Priority:         0"
    assert lines[3] == "Service Account:  default"
    assert lines[4].startswith("Node:             node-") and "/172.18.0." in lines[4]
    assert lines[5] == "Start Time:       Wed, 01 Jan 2025 00:00:00 +0000"
    assert lines[6] == "Labels:           app=web"
    assert lines[7].startswith("                  pod-template-hash=")
    assert lines[8:10] == ["Annotations:      <none>", "Status:           Running"]
    assert lines[11] == "IPs:"
    assert lines[12].startswith("  IP:           10.244.")
    assert lines[13].startswith("Controlled By:  ReplicaSet/web-")
    body = "\n".join(lines)
    for expected in (
        "    Image:          nginx:1.30-alpine",
        "    Port:           80/TCP",
        "    Host Port:      0/TCP",
        "    State:          Running",
        "      Started:      Wed, 01 Jan 2025 00:00:01 +0000",
        "    Ready:          True",
        "    Restart Count:  0",
        "    Limits:\n      memory:  128Mi",
        "    Requests:\n      cpu:        50m\n      memory:     64Mi",
        "    Readiness:    http-get http://:http/ delay=2s timeout=1s period=5s #success=1 #failure=3",
        "    Environment:  <none>",
        "Conditions:\n  Type                        Status\n  PodReadyToStartContainers   True \n"
        "  Initialized                 True \n  Ready                       True \n"
        "  ContainersReady             True \n  PodScheduled                True ",
        "QoS Class:                   Burstable",
        "Node-Selectors:              <none>",
        "Tolerations:                 node.kubernetes.io/not-ready:NoExecute op=Exists for 300s\n"
        "                             node.kubernetes.io/unreachable:NoExecute op=Exists for 300s",
    ):
        assert expected in body
    events = body[body.index("Events:"):].splitlines()
    assert events[1].split() == ["Type", "Reason", "Age", "From", "Message"]
    assert [e.split()[1] for e in events[3:]] == ["Scheduled", "Pulling", "Pulled", "Created", "Started"]
    assert events[3].startswith("  Normal  Scheduled  30s   default-scheduler  Successfully assigned default/")
    assert events[4] == '  Normal  Pulling    30s   kubelet            Pulling image "nginx:1.30-alpine"'


def test_describe_deployment(capsys, lab):
    code, out, _ = k(capsys, lab, "describe", "deployment", "web")
    lines = out.splitlines()
    assert lines[:11] == [
        "Name:                   web",
        "Namespace:              default",
        "CreationTimestamp:      Wed, 01 Jan 2025 00:00:00 +0000",
        "Labels:                 <none>",
        "Annotations:            deployment.kubernetes.io/revision: 1",
        "Selector:               app=web",
        "Replicas:               2 desired | 2 updated | 2 total | 2 available | 0 unavailable",
        "StrategyType:           RollingUpdate",
        "MinReadySeconds:        0",
        "RollingUpdateStrategy:  25% max unavailable, 25% max surge",
        "Pod Template:",
    ]
    assert "  Labels:  app=web" in lines and "   nginx:" in lines
    assert "  Available      True    MinimumReplicasAvailable" in lines
    assert "OldReplicaSets:  <none>" in lines
    assert any(l.startswith("NewReplicaSet:   web-") and l.endswith(" (2/2 replicas created)") for l in lines)
    assert lines[-1].startswith("  Normal  ScalingReplicaSet  30s   deployment-controller  Scaled up replica set web-")


def test_describe_service_endpoints(capsys, lab):
    _, out, _ = k(capsys, lab, "describe", "svc", "web")
    lines = out.splitlines()
    assert "Port:                     http  80/TCP" in lines
    assert "TargetPort:               http/TCP" in lines
    ep = next(l for l in lines if l.startswith("Endpoints:"))
    assert [a.endswith(":80") for a in ep.split()[1].split(",")] == [True, True]
    assert lines[-1] == "Events:                   <none>"


def test_describe_node_tables(capsys, lab):
    _, out, _ = k(capsys, lab, "describe", "node", "node-1")
    assert "Roles:              <none>" in out
    assert "Allocated resources:\n  (Total limits may be over 100 percent, i.e., overcommitted.)\n" in out
    assert "Non-terminated Pods:" in out and "  Namespace" in out


def test_describe_not_found(capsys, lab):
    code, out, err = k(capsys, lab, "describe", "pod", "nope")
    assert code == 1 and err == 'Error from server (NotFound): pods "nope" not found\n'


def test_event_field_selector_as_kubectl_sends_it():
    pod = {"kind": "Pod", "metadata": {"name": "x", "namespace": "ns", "uid": "u1"}}
    assert event_field_selector(pod) == "involvedObject.name=x,involvedObject.namespace=ns,involvedObject.uid=u1"
    dep = {"kind": "Deployment", "metadata": {"name": "web", "namespace": "default", "uid": "u2"}}
    assert event_field_selector(dep).startswith("involvedObject.kind=Deployment,")


def test_probe_lines():
    assert describe_probe({"exec": {"command": ["cat", "/tmp/healthy"]}, "initialDelaySeconds": 5,
                           "timeoutSeconds": 1, "periodSeconds": 5, "successThreshold": 1,
                           "failureThreshold": 3}) == \
        "exec [cat /tmp/healthy] delay=5s timeout=1s period=5s #success=1 #failure=3"
    assert describe_probe({"tcpSocket": {"port": 8080}, "timeoutSeconds": 1, "periodSeconds": 10,
                           "successThreshold": 1, "failureThreshold": 3}).startswith("tcp-socket :8080 delay=0s")


def test_tabwriter_blocks_as_go():
    text = "Name:\tx\nIPs:\n  IP:\t1.2.3.4\nControlled By:\tReplicaSet/x\n"
    assert tabwrite(text) == "Name:  x\nIPs:\n  IP:           1.2.3.4\nControlled By:  ReplicaSet/x\n"


def _apply(capsys, lab, tmp_path, text):
    manifest = tmp_path / "extra.yaml"
    manifest.write_text(text)
    code, _, err = k(capsys, lab, "apply", "-q", "-f", str(manifest), "--for", "1s")
    assert code == 0, err


def test_describe_secret_prints_sizes_never_values(capsys, lab):
    assert k(capsys, lab, "create", "secret", "generic", "db", "--from-literal=password=hunter2",
             "--from-literal=user=admin")[0] == 0
    code, out, err = k(capsys, lab, "describe", "secret", "db")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "Name:         db",
        "Namespace:    default",
        "Labels:       <none>",
        "Annotations:  <none>",
        "",
        "Type:  Opaque",
        "",
        "Data",
        "====",
        "password:  7 bytes",
        "user:      5 bytes",
    ]
    for secret in ("hunter2", "aHVudGVyMg==", "admin", "YWRtaW4=", "Password", "User"):
        assert secret not in out


def test_describe_service_account_token_secret_hides_the_token(capsys, lab, tmp_path):
    # kubectl would print the token in clear; the emulator prints its size like any other key
    _apply(capsys, lab, tmp_path, """apiVersion: v1
kind: Secret
metadata: {name: sa-token, annotations: {kubernetes.io/service-account.name: default}}
type: kubernetes.io/service-account-token
data: {token: c2VjcmV0LXRva2Vu, ca.crt: Q0VSVA==, namespace: ZGVmYXVsdA==}
""")
    code, out, _ = k(capsys, lab, "describe", "secret", "sa-token")
    lines = out.splitlines()
    # the token controller annotated it with the account's uid and put the cluster's CA in
    assert lines[3].startswith("Annotations:  kubernetes.io/service-account.name: default")
    assert lines[4].startswith("              kubernetes.io/service-account.uid: ")
    assert lines[6] == "Type:  kubernetes.io/service-account-token"
    assert lines[8:] == ["Data", "====", "ca.crt:     217 bytes", "namespace:  7 bytes", "token:      12 bytes"]
    assert "secret-token" not in out and "c2VjcmV0LXRva2Vu" not in out


def test_describe_service_account(capsys, lab, tmp_path):
    code, out, _ = k(capsys, lab, "describe", "serviceaccount", "default")
    assert code == 0
    assert out.splitlines()[2:] == [
        "Labels:              <none>",
        "Annotations:         <none>",
        "Image pull secrets:  <none>",
        "Mountable secrets:   <none>",
        "Tokens:              <none>",
        "Events:              <none>",
    ]
    _apply(capsys, lab, tmp_path, """apiVersion: v1
kind: ServiceAccount
metadata: {name: builder, labels: {team: ci}}
imagePullSecrets: [{name: regcred}, {name: pull}]
secrets: [{name: pull}]
---
apiVersion: v1
kind: Secret
metadata: {name: pull}
data: {x: eA==}
""")
    uid = k(capsys, lab, "get", "sa", "builder", "-o", "jsonpath={.metadata.uid}")[1]
    _apply(capsys, lab, tmp_path, f"""apiVersion: v1
kind: Secret
metadata:
  name: builder-token
  annotations: {{kubernetes.io/service-account.name: builder, kubernetes.io/service-account.uid: "{uid}"}}
type: kubernetes.io/service-account-token
---
apiVersion: v1
kind: Secret
metadata:
  name: stale-token
  annotations: {{kubernetes.io/service-account.name: builder, kubernetes.io/service-account.uid: other}}
type: kubernetes.io/service-account-token
""")
    code, out, _ = k(capsys, lab, "describe", "sa", "builder")
    assert out.splitlines() == [
        "Name:                builder",
        "Namespace:           default",
        "Labels:              team=ci",
        "Annotations:         <none>",
        "Image pull secrets:  regcred (not found)",
        "                     pull",
        "Mountable secrets:   pull",
        "Tokens:              builder-token",
        "Events:              <none>",
    ]


def test_describe_endpoints(capsys, lab):
    code, out, _ = k(capsys, lab, "describe", "endpoints", "web")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "Name:         web"
    assert lines[1] == "Namespace:    default"
    i = lines.index("Subsets:")
    addresses = lines[i + 1]
    assert addresses.startswith("  Addresses:          10.244.")
    assert [a.startswith("10.244.") for a in addresses.split()[1].split(",")] == [True, True]
    assert lines[i + 2:] == [
        "  NotReadyAddresses:  <none>",
        "  Ports:",
        "    Name  Port  Protocol",
        "    ----  ----  --------",
        "    http  80    TCP",
        "",
        "Events:  <none>",
    ]


def test_describe_endpointslice(capsys, lab, tmp_path):
    code, out, _ = k(capsys, lab, "describe", "endpointslice", "-l", "kubernetes.io/service-name=web")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("Name:         web-")
    i = next(n for n, l in enumerate(lines) if l.startswith("AddressType:"))
    assert lines[i:i + 5] == ["AddressType:  IPv4", "Ports:", "  Name  Port  Protocol", "  ----  ----  --------",
                              "  http  80    TCP"]
    assert lines[i + 5] == "Endpoints:"
    endpoint = lines[i + 6:i + 13]
    assert endpoint[0].startswith("  - Addresses:  10.244.")
    assert endpoint[1:4] == ["    Conditions:", "      Ready:    true", "    Hostname:   <unset>"]
    assert endpoint[4].startswith("    TargetRef:  Pod/web-")
    assert endpoint[5].startswith("    NodeName:   node-")
    assert endpoint[6] == "    Zone:       <unset>"
    assert lines[-1] == "Events:         <none>"
    # no ports, no endpoints: kubectl's placeholders
    _apply(capsys, lab, tmp_path, """apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: empty}
addressType: IPv4
endpoints: []
""")
    code, out, _ = k(capsys, lab, "describe", "endpointslice", "empty")
    assert out.splitlines()[4:] == ["AddressType:  IPv4", "Ports: <unset>", "Endpoints: <none>", "Events:  <none>"]


QUOTAS = """apiVersion: v1
kind: ResourceQuota
metadata: {name: compute}
spec:
  hard: {requests.cpu: "2", requests.memory: 2Gi, limits.memory: 4G, pods: "10", requests.storage: 10Gi,
         persistentvolumeclaims: "5"}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: scoped}
spec:
  hard: {pods: "3"}
  scopes: [NotTerminating, BestEffort]
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: nginx, resources: {requests: {cpu: 250m, memory: 100Mi}, limits: {memory: 200Mi}}}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1500Mi}}}
"""


def test_describe_resourcequota_as_kubectl(capsys, lab, tmp_path):
    """kubectl 1.33's ResourceQuotaDescriber, checked against its output on the same objects: the
    use printed in the hard amount's format (bytes against 4G), scopes with their help. The lab's two
    web pods count too: each requests 50m and 64Mi, limits memory to 128Mi."""
    _apply(capsys, lab, tmp_path, QUOTAS)
    code, out, _ = k(capsys, lab, "describe", "quota")
    assert code == 0
    assert out == """Name:                   compute
Namespace:              default
Resource                Used       Hard
--------                ----       ----
limits.memory           478150656  4G
persistentvolumeclaims  1          5
pods                    3          10
requests.cpu            350m       2
requests.memory         228Mi      2Gi
requests.storage        1500Mi     10Gi


Name:       scoped
Namespace:  default
Scopes:     BestEffort, NotTerminating
 * Matches all pods that do not have resource requirements set. These pods have a best effort quality of service.
 * Matches all pods that do not have an active deadline. These pods usually include long running pods whose \
container command is not expected to terminate.
Resource  Used  Hard
--------  ----  ----
pods      0     3
"""
