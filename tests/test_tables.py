"""Server-side Table printers and kubectl's table rendering.

Expected cells follow upstream's ``pkg/printers/internalversion/printers.go``
(v1.3x). The expected text of the ``test_kubectl_*`` tests is what kubectl v1.32
printed for these very Tables served by a stub apiserver (byte for byte).
"""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from k8semu.api.errors import BadRequest
from k8semu.api.humanize import format_label_selector, human_duration, short_human_duration
from k8semu.api.tables import column_names, pod_status_reason, render_table, table_for

NOW = datetime(2025, 3, 1, 12, 0, 0, tzinfo=timezone.utc)


def ago(seconds: float) -> str:
    """An RFC 3339 timestamp ``seconds`` before NOW."""
    return (NOW - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def meta(name: str, age: float, ns: str | None = "default", **extra) -> dict:
    m = {"name": name, "creationTimestamp": ago(age), "uid": f"uid-{name}", "resourceVersion": "42"}
    if ns:
        m["namespace"] = ns
    m.update(extra)
    return m


def running(name: str = "app", restarts: int = 0, last_finished: float | None = None, ready: bool = True) -> dict:
    cs = {"name": name, "image": "nginx:1.27", "imageID": "", "ready": ready, "started": True,
          "restartCount": restarts, "state": {"running": {"startedAt": ago(30)}}, "lastState": {}}
    if last_finished is not None:
        cs["lastState"] = {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": ago(last_finished)}}
    return cs


def waiting(reason: str, name: str = "app", restarts: int = 0, last_finished: float | None = None) -> dict:
    cs = {"name": name, "image": "busybox", "imageID": "", "ready": False, "started": False,
          "restartCount": restarts, "state": {"waiting": {"reason": reason}}, "lastState": {}}
    if last_finished is not None:
        cs["lastState"] = {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": ago(last_finished)}}
    return cs


def terminated(exit_code: int, reason: str | None = None, name: str = "app", signal: int = 0) -> dict:
    t = {"exitCode": exit_code, "finishedAt": ago(60), "startedAt": ago(70)}
    if reason:
        t["reason"] = reason
    if signal:
        t["signal"] = signal
    return {"name": name, "image": "busybox", "imageID": "", "ready": False, "started": False,
            "restartCount": 0, "state": {"terminated": t}, "lastState": {}}


def pod(name: str, statuses: list, phase: str = "Running", *, age: float = 3600, init: list | None = None,
        init_statuses: list | None = None, conditions: list | None = None, node: str = "node-1",
        ip: str | None = "10.244.1.7", **status_extra) -> dict:
    spec = {"containers": [{"name": s["name"], "image": s["image"]} for s in statuses] or [{"name": "app"}],
            "nodeName": node}
    if init is not None:
        spec["initContainers"] = init
    status = {"phase": phase, "conditions": conditions or [], "containerStatuses": statuses}
    if ip:
        status["podIP"] = ip
        status["podIPs"] = [{"ip": ip}]
    if init_statuses is not None:
        status["initContainerStatuses"] = init_statuses
    status.update(status_extra)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta(name, age, labels={"app": name.split("-")[0]}),
            "spec": spec, "status": status}


READY_TRUE = [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"},
              {"type": "PodScheduled", "status": "True"}]

# --- pods a user meets every day ----------------------------------------------------------------

WEB = pod("web-7c9f8-x2x4k", [running(restarts=2, last_finished=45)], age=3 * 3600 + 12 * 60,
          conditions=READY_TRUE)
CRASH = pod("crash-5d8f-qq9zt", [waiting("CrashLoopBackOff", restarts=5, last_finished=80)], age=600,
            ip="10.244.1.8")
INIT = pod("db-0", [waiting("PodInitializing")], phase="Pending", age=20, ip="10.244.2.3",
           init=[{"name": "migrate", "image": "busybox"}],
           init_statuses=[{"name": "migrate", "image": "busybox", "imageID": "", "ready": False, "restartCount": 0,
                           "state": {"running": {"startedAt": ago(10)}}, "lastState": {}}])
INIT_CRASH = pod("db-1", [waiting("PodInitializing")], phase="Pending", age=300, ip="10.244.2.4",
                 init=[{"name": "migrate", "image": "busybox"}, {"name": "seed", "image": "busybox"}],
                 init_statuses=[waiting("CrashLoopBackOff", name="migrate", restarts=3, last_finished=20),
                                waiting("PodInitializing", name="seed")])
TERMINATING = pod("old-6b7d9-ab12c", [running()], age=86400 * 3 + 3600 * 5, conditions=READY_TRUE)
TERMINATING["metadata"]["deletionTimestamp"] = ago(5)
COMPLETED = pod("pi-x7k2p", [terminated(0, "Completed", name="pi")], phase="Succeeded", age=125, ip=None)
PENDING = pod("new-1", [waiting("ContainerCreating")], phase="Pending", age=4, ip=None)
UNSCHEDULED = pod("big-1", [], phase="Pending", age=90, ip=None, node="",
                  nominatedNodeName="node-2",
                  conditions=[{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}])


def test_running_pod_with_restarts_shows_when_the_last_restart_happened():
    row = table_for([WEB], "pods", NOW)["rows"][0]
    assert row["cells"] == ["web-7c9f8-x2x4k", "1/1", "Running", "2 (45s ago)", "3h12m",
                            "10.244.1.7", "node-1", "<none>", "<none>"]


@pytest.mark.parametrize("obj, ready, status, restarts", [
    (CRASH, "0/1", "CrashLoopBackOff", "5 (80s ago)"),
    (INIT, "0/1", "Init:0/1", "0"),
    (INIT_CRASH, "0/1", "Init:CrashLoopBackOff", "3 (20s ago)"),
    (TERMINATING, "1/1", "Terminating", "0"),
    (COMPLETED, "0/1", "Completed", "0"),
    (PENDING, "0/1", "ContainerCreating", "0"),
    (UNSCHEDULED, "0/1", "Pending", "0"),
])
def test_pod_ready_status_and_restarts_cells(obj, ready, status, restarts):
    cells = table_for([obj], "Pod", NOW)["rows"][0]["cells"]
    assert cells[1:4] == [ready, status, restarts]


@pytest.mark.parametrize("statuses, phase, extra, expected", [
    ([terminated(1, "Error")], "Failed", {}, "Error"),
    ([terminated(137, "OOMKilled")], "Running", {}, "OOMKilled"),
    ([terminated(137, signal=9)], "Failed", {}, "Signal:9"),
    ([terminated(3)], "Failed", {}, "ExitCode:3"),
    ([waiting("ErrImagePull")], "Pending", {}, "ErrImagePull"),
    ([waiting("ImagePullBackOff")], "Pending", {}, "ImagePullBackOff"),
    ([], "Failed", {"reason": "Evicted", "message": "low on memory"}, "Evicted"),
    ([], "Failed", {"reason": "OutOfcpu"}, "OutOfcpu"),
    ([running()], "Running", {}, "Running"),
])
def test_pod_status_reason_from_container_states(statuses, phase, extra, expected):
    assert pod_status_reason(pod("p", statuses, phase, **extra)) == expected


def test_pod_status_init_container_failures_and_sidecars():
    fail = pod("p", [waiting("PodInitializing")], "Pending", init=[{"name": "i", "image": "x"}],
               init_statuses=[terminated(2, name="i")])
    assert pod_status_reason(fail) == "Init:ExitCode:2"
    killed = pod("p", [waiting("PodInitializing")], "Pending", init=[{"name": "i", "image": "x"}],
                 init_statuses=[terminated(1, signal=15, name="i")])
    assert pod_status_reason(killed) == "Init:Signal:15"
    oom = pod("p", [waiting("PodInitializing")], "Pending", init=[{"name": "i", "image": "x"}],
              init_statuses=[terminated(137, "OOMKilled", name="i")])
    assert pod_status_reason(oom) == "Init:OOMKilled"
    # Init done, main container still being created: PodInitializing (the waiting reason).
    done = pod("p", [waiting("PodInitializing")], "Pending", init=[{"name": "i", "image": "x"}],
               init_statuses=[terminated(0, "Completed", name="i")])
    assert pod_status_reason(done) == "PodInitializing"
    # A started, ready sidecar (restartPolicy: Always) counts towards READY and its restarts show.
    sidecar = running("proxy", restarts=1, last_finished=300)
    with_sidecar = pod("p", [running()], "Running", conditions=READY_TRUE,
                       init=[{"name": "proxy", "image": "envoy", "restartPolicy": "Always"}],
                       init_statuses=[sidecar])
    assert table_for([with_sidecar], "pods", NOW)["rows"][0]["cells"][1:4] == ["2/2", "Running", "1 (5m ago)"]


def test_pod_status_special_reasons():
    gated = pod("p", [], "Pending", ip=None, node="",
                conditions=[{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}])
    assert pod_status_reason(gated) == "SchedulingGated"
    lost = pod("p", [running()], "Running", reason="NodeLost")
    lost["metadata"]["deletionTimestamp"] = ago(1)
    assert pod_status_reason(lost) == "Unknown"
    # A terminal pod being deleted keeps its terminal reason.
    done = copy.deepcopy(COMPLETED)
    done["metadata"]["deletionTimestamp"] = ago(1)
    assert pod_status_reason(done) == "Completed"
    # One container completed while another still runs: Running if the pod is Ready, else NotReady.
    mixed = [running("a"), terminated(0, "Completed", name="b")]
    assert pod_status_reason(pod("p", mixed, "Running", conditions=READY_TRUE)) == "Running"
    assert pod_status_reason(pod("p", mixed, "Running", conditions=[{"type": "Ready", "status": "False"}])) \
        == "NotReady"


def test_pod_wide_cells_readiness_gates_and_nominated_node():
    p = pod("p", [running()], "Running", conditions=READY_TRUE + [{"type": "example.com/lb", "status": "False"}])
    p["spec"]["readinessGates"] = [{"conditionType": "example.com/lb"}, {"conditionType": "example.com/x"}]
    assert table_for([p], "pods", NOW)["rows"][0]["cells"][5:] == ["10.244.1.7", "node-1", "<none>", "0/2"]
    assert table_for([UNSCHEDULED], "pods", NOW)["rows"][0]["cells"][5:] == ["<none>", "<none>", "node-2", "<none>"]


def test_terminal_pods_carry_the_completed_row_condition():
    rows = table_for([COMPLETED, WEB], "pods", NOW)["rows"]
    assert rows[0]["conditions"] == [{"type": "Completed", "status": "True", "reason": "Succeeded",
                                      "message": "The pod has completed successfully."}]
    assert "conditions" not in rows[1]


PODS = [WEB, CRASH, INIT, INIT_CRASH, TERMINATING, COMPLETED, PENDING]


def test_kubectl_get_pods_text():
    assert render_table(table_for(PODS, "pods", NOW)).splitlines() == [
        "NAME               READY   STATUS                  RESTARTS      AGE",
        "web-7c9f8-x2x4k    1/1     Running                 2 (45s ago)   3h12m",
        "crash-5d8f-qq9zt   0/1     CrashLoopBackOff        5 (80s ago)   10m",
        "db-0               0/1     Init:0/1                0             20s",
        "db-1               0/1     Init:CrashLoopBackOff   3 (20s ago)   5m",
        "old-6b7d9-ab12c    1/1     Terminating             0             3d5h",
        "pi-x7k2p           0/1     Completed               0             2m5s",
        "new-1              0/1     ContainerCreating       0             4s",
    ]


def test_kubectl_get_pods_wide_all_namespaces_with_labels():
    text = render_table(table_for([WEB, COMPLETED], "pods", NOW), wide=True, with_namespace=True,
                        show_labels=True)
    assert text.splitlines() == [
        "NAMESPACE   NAME              READY   STATUS      RESTARTS      AGE     IP           NODE     "
        "NOMINATED NODE   READINESS GATES   LABELS",
        "default     web-7c9f8-x2x4k   1/1     Running     2 (45s ago)   3h12m   10.244.1.7   node-1   "
        "<none>           <none>            app=web",
        "default     pi-x7k2p          0/1     Completed   0             2m5s    <none>       node-1   "
        "<none>           <none>            app=pi",
    ]


def test_render_no_headers_show_kind_and_label_columns():
    table = table_for([WEB], "pods", NOW)
    assert render_table(table, no_headers=True, show_kind=True, kind="pods") == \
        "pod/web-7c9f8-x2x4k   1/1   Running   2 (45s ago)   3h12m\n"
    assert render_table(table, label_columns=["app", "tier"]).splitlines() == [
        "NAME              READY   STATUS    RESTARTS      AGE     APP   TIER",
        "web-7c9f8-x2x4k   1/1     Running   2 (45s ago)   3h12m   web   ",
    ]
    assert render_table(table_for([], "pods", NOW)) == ""


# --- nodes ----------------------------------------------------------------------------------------

def node(name: str, ready: str | None, *, unschedulable: bool = False, roles: tuple = (), age: float = 86400 * 40,
         external: str | None = None) -> dict:
    labels = {"kubernetes.io/hostname": name, **{f"node-role.kubernetes.io/{r}": "" for r in roles}}
    addresses = [{"type": "InternalIP", "address": "172.18.0." + name[-1]}, {"type": "Hostname", "address": name}]
    if external:
        addresses.append({"type": "ExternalIP", "address": external})
    conditions = [{"type": "MemoryPressure", "status": "False"}]
    if ready is not None:
        conditions.append({"type": "Ready", "status": ready})
    n = {"apiVersion": "v1", "kind": "Node", "metadata": meta(name, age, ns=None, labels=labels),
         "spec": {},
         "status": {"conditions": conditions, "addresses": addresses,
                    "nodeInfo": {"kubeletVersion": "v1.32.4", "osImage": "Debian GNU/Linux 12 (bookworm)",
                                 "kernelVersion": "6.8.0-1021-gcp", "containerRuntimeVersion": "containerd://1.7.24"}}}
    if unschedulable:
        n["spec"]["unschedulable"] = True
    return n


NODES = [node("node-1", "True", unschedulable=True, roles=("control-plane",), external="34.1.2.3"),
         node("node-2", "False", age=7200), node("node-3", "Unknown", roles=("worker", "infra"), age=300),
         node("node-4", None, age=30)]


def test_node_status_and_roles():
    cells = [r["cells"][:5] for r in table_for(NODES, "nodes", NOW)["rows"]]
    assert cells == [
        ["node-1", "Ready,SchedulingDisabled", "control-plane", "40d", "v1.32.4"],
        ["node-2", "NotReady", "<none>", "120m", "v1.32.4"],  # under 3h: minutes
        ["node-3", "NotReady", "infra,worker", "5m", "v1.32.4"],
        ["node-4", "Unknown", "<none>", "30s", "v1.32.4"],
    ]


def test_kubectl_get_nodes_wide_text():
    assert render_table(table_for(NODES[:2], "no", NOW), wide=True).splitlines() == [
        "NAME     STATUS                     ROLES           AGE    VERSION   INTERNAL-IP   EXTERNAL-IP   "
        "OS-IMAGE                         KERNEL-VERSION   CONTAINER-RUNTIME",
        "node-1   Ready,SchedulingDisabled   control-plane   40d    v1.32.4   172.18.0.1    34.1.2.3      "
        "Debian GNU/Linux 12 (bookworm)   6.8.0-1021-gcp   containerd://1.7.24",
        "node-2   NotReady                   <none>          120m   v1.32.4   172.18.0.2    <none>        "
        "Debian GNU/Linux 12 (bookworm)   6.8.0-1021-gcp   containerd://1.7.24",
    ]


# --- services -------------------------------------------------------------------------------------

def service(name: str, type_: str, ports: list, *, cluster_ip: str = "10.96.0.10", selector=None, lb=None,
            **spec_extra) -> dict:
    spec = {"type": type_, "ports": ports, **spec_extra}
    if cluster_ip:
        spec["clusterIP"] = cluster_ip
        spec["clusterIPs"] = [cluster_ip]
    if selector is not None:
        spec["selector"] = selector
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta(name, 86400 * 2),
            "spec": spec, "status": {"loadBalancer": lb or {}}}


SERVICES = [
    service("kubernetes", "ClusterIP", [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}],
            cluster_ip="10.96.0.1"),
    service("web", "NodePort", [{"port": 80, "protocol": "TCP", "nodePort": 30080, "targetPort": 8080}],
            cluster_ip="10.96.45.12", selector={"app": "web", "tier": "front"}),
    service("shop", "LoadBalancer", [{"port": 443, "protocol": "TCP", "nodePort": 31443},
                                     {"port": 53, "protocol": "UDP", "nodePort": 31053}],
            cluster_ip="10.96.7.7", selector={"app": "shop"}),
    service("db", "ClusterIP", [{"port": 5432, "protocol": "TCP"}], cluster_ip="None", selector={"app": "db"}),
    service("ext", "ExternalName", [], cluster_ip="", externalName="db.example.com"),
    service("api", "LoadBalancer", [{"port": 80, "protocol": "TCP", "nodePort": 30001}], cluster_ip="10.96.9.9",
            lb={"ingress": [{"ip": "203.0.113.10"}, {"hostname": "a1b2c3d4e5f6.elb.us-east-1.amazonaws.com"}]}),
]


def test_service_cells():
    rows = [r["cells"] for r in table_for(SERVICES, "services", NOW)["rows"]]
    assert rows == [
        ["kubernetes", "ClusterIP", "10.96.0.1", "<none>", "443/TCP", "2d", "<none>"],
        ["web", "NodePort", "10.96.45.12", "<none>", "80:30080/TCP", "2d", "app=web,tier=front"],
        ["shop", "LoadBalancer", "10.96.7.7", "<pending>", "443:31443/TCP,53:31053/UDP", "2d", "app=shop"],
        ["db", "ClusterIP", "None", "<none>", "5432/TCP", "2d", "app=db"],
        ["ext", "ExternalName", "<none>", "db.example.com", "<none>", "2d", "<none>"],
        # The server renders wide, so load-balancer addresses are never clipped to 16 characters.
        ["api", "LoadBalancer", "10.96.9.9", "203.0.113.10,a1b2c3d4e5f6.elb.us-east-1.amazonaws.com",
         "80:30001/TCP", "2d", "<none>"],
    ]


def test_kubectl_get_services_text():
    assert render_table(table_for(SERVICES[:4], "svc", NOW)).splitlines() == [
        "NAME         TYPE           CLUSTER-IP    EXTERNAL-IP   PORT(S)                      AGE",
        "kubernetes   ClusterIP      10.96.0.1     <none>        443/TCP                      2d",
        "web          NodePort       10.96.45.12   <none>        80:30080/TCP                 2d",
        "shop         LoadBalancer   10.96.7.7     <pending>     443:31443/TCP,53:31053/UDP   2d",
        "db           ClusterIP      None          <none>        5432/TCP                     2d",
    ]


# --- workloads ------------------------------------------------------------------------------------

def template(*containers: tuple[str, str]) -> dict:
    return {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": n, "image": i} for n, i in containers]}}


DEPLOY = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta("web", 86400 * 9 + 3600),
          "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                   "template": template(("nginx", "nginx:1.27"), ("log", "fluent-bit:3.1"))},
          "status": {"replicas": 3, "updatedReplicas": 3, "readyReplicas": 2, "availableReplicas": 2}}


def test_kubectl_get_deployment_text_and_wide():
    table = table_for([DEPLOY], "deployments.apps", NOW)
    assert table["rows"][0]["cells"] == ["web", "2/3", 3, 2, "9d", "nginx,log", "nginx:1.27,fluent-bit:3.1",
                                         "app=web"]
    assert render_table(table).splitlines() == [
        "NAME   READY   UP-TO-DATE   AVAILABLE   AGE",
        "web    2/3     3            2           9d",
    ]
    assert render_table(table, wide=True).splitlines() == [
        "NAME   READY   UP-TO-DATE   AVAILABLE   AGE   CONTAINERS   IMAGES                      SELECTOR",
        "web    2/3     3            2           9d    nginx,log    nginx:1.27,fluent-bit:3.1   app=web",
    ]


def test_replicaset_statefulset_daemonset_cells():
    rs = {"metadata": meta("web-7c9f8", 600), "spec": {"replicas": 3, "selector": {
        "matchLabels": {"app": "web", "pod-template-hash": "7c9f8"}}, "template": template(("nginx", "nginx"))},
        "status": {"replicas": 3, "readyReplicas": 1}}
    assert table_for([rs], "rs", NOW)["rows"][0]["cells"] == [
        "web-7c9f8", 3, 3, 1, "10m", "nginx", "nginx", "app=web,pod-template-hash=7c9f8"]
    sts = {"metadata": meta("db", 600), "spec": {"replicas": 3, "template": template(("pg", "postgres:17"))},
           "status": {"readyReplicas": 2}}
    assert table_for([sts], "StatefulSet", NOW)["rows"][0]["cells"] == ["db", "2/3", "10m", "pg", "postgres:17"]
    ds_template = {"spec": {"containers": [{"name": "a", "image": "a:1"}],
                            "nodeSelector": {"kubernetes.io/os": "linux"}}}
    ds = {"metadata": meta("agent", 600),
          "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": ds_template},
          "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2,
                     "updatedNumberScheduled": 3, "numberAvailable": 2}}
    assert table_for([ds], "ds", NOW)["rows"][0]["cells"] == [
        "agent", 3, 3, 2, 3, 2, "kubernetes.io/os=linux", "10m", "a", "a:1", "app=agent"]
    assert column_names("ds") == ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE",
                                  "NODE SELECTOR", "AGE"]


def job(name: str, conditions: list, *, completions=1, parallelism=1, succeeded=0, start=None, end=None,
        suspend=False) -> dict:
    st = {"succeeded": succeeded, "conditions": conditions}
    if start is not None:
        st["startTime"] = ago(start)
    if end is not None:
        st["completionTime"] = ago(end)
    spec = {"parallelism": parallelism, "suspend": suspend, "template": template(("pi", "perl:5.34")),
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": f"uid-{name}"}}}
    if completions is not None:
        spec["completions"] = completions
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta(name, 3600), "spec": spec, "status": st}


def test_job_status_completions_and_duration():
    jobs = [
        job("pi", [{"type": "Complete", "status": "True"}], succeeded=1, start=300, end=288),
        job("batch", [], completions=5, parallelism=2, succeeded=2, start=150),
        job("queue", [], completions=None, parallelism=3, start=59),
        job("later", [{"type": "Suspended", "status": "True"}], suspend=True),
        job("broken", [{"type": "FailureTarget", "status": "True"}, {"type": "Failed", "status": "True"}],
            start=3600, end=3000),
    ]
    cells = [r["cells"][:5] for r in table_for(jobs, "jobs", NOW)["rows"]]
    assert cells == [
        ["pi", "Complete", "1/1", "12s", "60m"],
        ["batch", "Running", "2/5", "2m30s", "60m"],
        ["queue", "Running", "0/1 of 3", "59s", "60m"],
        ["later", "Suspended", "0/1", "", "60m"],
        ["broken", "Failed", "0/1", "10m", "60m"],
    ]
    # An empty DURATION stays an empty cell (kubectl does not print <none> for it).
    assert render_table(table_for(jobs[3:4], "jobs", NOW)).splitlines() == [
        "NAME    STATUS      COMPLETIONS   DURATION   AGE",
        "later   Suspended   0/1                      60m",
    ]


def test_cronjob_cells():
    cj = {"metadata": meta("backup", 86400), "spec": {"schedule": "*/5 * * * *", "suspend": False,
          "jobTemplate": {"spec": {"template": template(("b", "backup:1"))}}},
          "status": {"active": [{"name": "backup-1"}], "lastScheduleTime": ago(140)}}
    assert table_for([cj], "cj", NOW)["rows"][0]["cells"] == [
        "backup", "*/5 * * * *", "<none>", "False", 1, "2m20s", "24h", "b", "backup:1", "<none>"]


# --- events ---------------------------------------------------------------------------------------

EVENT = {"apiVersion": "v1", "kind": "Event",
         "metadata": meta("crash-5d8f-qq9zt.181f0c3a9d3c2a1b", 1800),
         "involvedObject": {"kind": "Pod", "namespace": "default", "name": "crash-5d8f-qq9zt",
                            "fieldPath": "spec.containers{app}"},
         "reason": "BackOff", "message": "Back-off restarting failed container app in pod crash-5d8f-qq9zt\n",
         "source": {"component": "kubelet", "host": "node-1"}, "firstTimestamp": ago(1800),
         "lastTimestamp": ago(300), "count": 7, "type": "Warning"}
SCHED = {"apiVersion": "v1", "kind": "Event", "metadata": meta("web.1", 30),
         "involvedObject": {"kind": "Pod", "name": "web-7c9f8-x2x4k", "namespace": "default"},
         "reason": "Scheduled", "message": "Successfully assigned default/web-7c9f8-x2x4k to node-1",
         "source": {}, "reportingComponent": "default-scheduler", "reportingInstance": "",
         "eventTime": (NOW - timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"), "type": "Normal"}


def test_event_cells_and_text():
    rows = [r["cells"] for r in table_for([EVENT, SCHED], "events", NOW)["rows"]]
    assert rows == [
        ["5m", "Warning", "BackOff", "pod/crash-5d8f-qq9zt", "spec.containers{app}", "kubelet, node-1",
         "Back-off restarting failed container app in pod crash-5d8f-qq9zt", "30m", 7,
         "crash-5d8f-qq9zt.181f0c3a9d3c2a1b"],
        ["30s", "Normal", "Scheduled", "pod/web-7c9f8-x2x4k", "", "default-scheduler",
         "Successfully assigned default/web-7c9f8-x2x4k to node-1", "30s", 1, "web.1"],
    ]
    assert render_table(table_for([EVENT, SCHED], "ev", NOW)).splitlines() == [
        "LAST SEEN   TYPE      REASON      OBJECT                 MESSAGE",
        "5m          Warning   BackOff     pod/crash-5d8f-qq9zt   Back-off restarting failed container app in pod "
        "crash-5d8f-qq9zt",
        "30s         Normal    Scheduled   pod/web-7c9f8-x2x4k    Successfully assigned default/web-7c9f8-x2x4k "
        "to node-1",
    ]


def test_events_k8s_io_event_and_unknown_last_seen():
    ev = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": meta("x.1", 600),
          "regarding": {"kind": "Node", "name": "node-1"}, "reason": "NodeNotReady", "note": "Node is not ready",
          "type": "Normal", "reportingController": "node-controller", "reportingInstance": "",
          "series": {"count": 4, "lastObservedTime": (NOW - timedelta(seconds=125)).isoformat()},
          "eventTime": (NOW - timedelta(seconds=600)).isoformat()}
    assert table_for([ev], "events.events.k8s.io", NOW)["rows"][0]["cells"] == [
        "2m5s", "Normal", "NodeNotReady", "node/node-1", "", "node-controller", "Node is not ready", "10m", 4, "x.1"]
    bare = {"metadata": meta("y.1", 60), "involvedObject": {"kind": "Namespace"}, "reason": "R", "message": "m"}
    assert table_for([bare], "events", NOW)["rows"][0]["cells"][:4] == ["<unknown>", "", "R", "namespace"]


# --- everything else ------------------------------------------------------------------------------

def test_config_storage_and_policy_kinds():
    def cells(obj, kind):
        return table_for([obj], kind, NOW)["rows"][0]["cells"]

    assert cells({"metadata": meta("cfg", 60), "data": {"a": "1", "b": "2"}, "binaryData": {"c": ""}},
                 "configmaps") == ["cfg", 3, "60s"]
    assert cells({"metadata": meta("tls", 60), "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}},
                 "secrets") == ["tls", "kubernetes.io/tls", 2, "60s"]
    assert cells({"metadata": meta("default", 60)}, "sa") == ["default", 0, "60s"]
    assert cells({"metadata": meta("default", 60, ns=None), "status": {"phase": "Active"}}, "ns") == \
        ["default", "Active", "60s"]
    pv = {"metadata": meta("pv-1", 60, ns=None), "spec": {
        "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
        "persistentVolumeReclaimPolicy": "Retain", "claimRef": {"namespace": "default", "name": "data"},
        "storageClassName": "standard", "volumeMode": "Filesystem"}, "status": {"phase": "Bound"}}
    assert cells(pv, "pv") == ["pv-1", "10Gi", "RWO,RWX", "Retain", "Bound", "default/data", "standard",
                               "<unset>", "", "60s", "Filesystem"]
    pvc = {"metadata": meta("data", 60), "spec": {"volumeName": "pv-1", "storageClassName": "standard",
                                                  "resources": {"requests": {"storage": "1.5Gi"}}},
           "status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1536Mi"}}}
    assert cells(pvc, "pvc") == ["data", "Bound", "pv-1", "1536Mi", "RWO", "standard", "<unset>", "60s", "<unset>"]
    pending = {"metadata": meta("wait", 60), "spec": {"storageClassName": "standard"}, "status": {"phase": "Pending"}}
    assert cells(pending, "pvc")[:5] == ["wait", "Pending", "", "", ""]
    sc = {"metadata": meta("standard", 60, ns=None, annotations={
        "storageclass.kubernetes.io/is-default-class": "true"}), "provisioner": "rancher.io/local-path",
        "volumeBindingMode": "WaitForFirstConsumer"}
    assert cells(sc, "sc") == ["standard (default)", "rancher.io/local-path", "Delete", "WaitForFirstConsumer",
                               False, "60s"]
    pdb = {"metadata": meta("web", 60), "spec": {"minAvailable": "50%"}, "status": {"disruptionsAllowed": 1}}
    assert cells(pdb, "pdb") == ["web", "50%", "N/A", 1, "60s"]
    pc = {"metadata": meta("high", 60, ns=None), "value": 1000000, "preemptionPolicy": "PreemptLowerPriority"}
    assert cells(pc, "pc") == ["high", 1000000, False, "60s", "PreemptLowerPriority"]
    lease = {"metadata": meta("kube-scheduler", 60, ns="kube-system"), "spec": {"holderIdentity": "cp_1a2b"}}
    assert cells(lease, "leases") == ["kube-scheduler", "cp_1a2b", "60s"]
    quota = {"metadata": meta("q", 60), "status": {
        "hard": {"pods": "10", "requests.cpu": "2", "limits.memory": "4Gi", "limits.cpu": "4"},
        "used": {"pods": "3", "requests.cpu": "500m", "limits.cpu": "1"}}}
    assert cells(quota, "quota") == ["q", "pods: 3/10, requests.cpu: 500m/2", "limits.cpu: 1/4, limits.memory: 0/4Gi",
                                     "60s"]
    cr = {"metadata": meta("web-5f7b", 60, ownerReferences=[
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "u", "controller": True}]),
        "revision": 2}
    assert cells(cr, "controllerrevisions") == ["web-5f7b", "statefulset.apps/web", 2, "60s"]


def test_networking_kinds():
    def cells(obj, kind):
        return table_for([obj], kind, NOW)["rows"][0]["cells"]

    ep = {"metadata": meta("web", 60), "subsets": [
        {"addresses": [{"ip": "10.244.1.7"}, {"ip": "10.244.2.3"}], "ports": [{"port": 8080}, {"port": 9090}]}]}
    assert cells(ep, "ep") == ["web", "10.244.1.7:8080,10.244.2.3:8080,10.244.1.7:9090 + 1 more...", "60s"]
    assert cells({"metadata": meta("none", 60)}, "endpoints") == ["none", "<none>", "60s"]
    eps = {"metadata": meta("web-abc12", 60), "addressType": "IPv4", "ports": [{"name": "http", "port": 8080}],
           "endpoints": [{"addresses": ["10.244.1.7"]}, {"addresses": ["10.244.2.3"]}]}
    assert cells(eps, "endpointslices") == ["web-abc12", "IPv4", "8080", "10.244.1.7,10.244.2.3", "60s"]
    assert cells({"metadata": meta("e", 60), "addressType": "IPv4"}, "endpointslices")[2:4] == ["<unset>", "<unset>"]
    ing = {"metadata": meta("web", 60), "spec": {"ingressClassName": "nginx", "tls": [{"hosts": ["a.example.com"]}],
                                                 "rules": [{"host": "a.example.com"}, {"host": "b.example.com"}]},
           "status": {"loadBalancer": {"ingress": [{"ip": "172.18.0.5"}]}}}
    assert cells(ing, "ing") == ["web", "nginx", "a.example.com,b.example.com", "172.18.0.5", "80, 443", "60s"]
    ic = {"metadata": meta("nginx", 60, ns=None), "spec": {"controller": "k8s.io/ingress-nginx"}}
    assert cells(ic, "ingressclasses") == ["nginx", "k8s.io/ingress-nginx", "<none>", "60s"]
    np = {"metadata": meta("deny", 60), "spec": {"podSelector": {}}}
    assert cells(np, "netpol") == ["deny", "<none>", "60s"]
    np2 = {"metadata": meta("db", 60), "spec": {"podSelector": {"matchLabels": {"app": "db"}, "matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["b", "a"]}]}}}
    assert cells(np2, "netpol")[1] == "app=db,tier in (a,b)"


def test_hpa_targets():
    def hpa(metrics, current):
        return {"metadata": meta("web", 60), "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"},
                                                      "minReplicas": 1, "maxReplicas": 10, "metrics": metrics},
                "status": {"currentReplicas": 2, "currentMetrics": current}}

    cpu = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}
    mem = {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue",
                                                                         "averageValue": "512Mi"}}}
    pods = {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue",
                                                                          "averageValue": "1k"}}}
    assert table_for([hpa([cpu], [])], "hpa", NOW)["rows"][0]["cells"] == [
        "web", "Deployment/web", "cpu: <unknown>/50%", "1", 10, 2, "60s"]
    measured = [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 20,
                                                                            "averageValue": "100m"}}}]
    assert table_for([hpa([cpu], measured)], "hpa", NOW)["rows"][0]["cells"][2] == "cpu: 20%/50%"
    assert table_for([hpa([cpu, mem, pods], [])], "hpa", NOW)["rows"][0]["cells"][2] == \
        "cpu: <unknown>/50%, memory: <unknown>/512Mi + 1 more..."
    assert table_for([hpa([], [])], "hpa", NOW)["rows"][0]["cells"][2] == "<none>"


def test_rbac_and_default_convertor_kinds():
    rb = {"metadata": meta("read", 60), "roleRef": {"kind": "ClusterRole", "name": "view"},
          "subjects": [{"kind": "User", "name": "jane"}, {"kind": "Group", "name": "devs"},
                       {"kind": "ServiceAccount", "name": "ci", "namespace": "build"},
                       {"kind": "User", "name": "bob"}]}
    assert table_for([rb], "rolebindings", NOW)["rows"][0]["cells"] == [
        "read", "ClusterRole/view", "60s", "jane, bob", "devs", "build/ci"]
    # Role, ClusterRole and LimitRange have no printer upstream: NAME and CREATED AT.
    role = {"metadata": meta("pod-reader", 60), "rules": []}
    table = table_for([role], "roles", NOW)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Created At"]
    assert table["columnDefinitions"][1]["type"] == "date"
    assert render_table(table).splitlines() == ["NAME         CREATED AT", "pod-reader   2025-03-01T11:59:00Z"]
    assert column_names("LimitRange") == ["NAME", "CREATED AT"]
    # A kind the server does not know (a custom resource) gets NAME and AGE.
    assert render_table(table_for([{"metadata": meta("w", 9 * 3600)}], "widgets.example.com", NOW)).splitlines() == [
        "NAME   AGE", "w      9h"]


# --- the Table envelope ---------------------------------------------------------------------------

def test_table_envelope_row_objects_and_list_metadata():
    original = copy.deepcopy(WEB)
    table = table_for([WEB], "pods", NOW.timestamp(),
                      list_meta={"resourceVersion": "812", "continue": "abc", "remainingItemCount": 3})
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    assert table["metadata"] == {"resourceVersion": "812", "continue": "abc", "remainingItemCount": 3}
    assert table["columnDefinitions"][4] == {
        "name": "Age", "type": "string", "format": "", "priority": 0,
        "description": table["columnDefinitions"][4]["description"]}
    assert [c["priority"] for c in table["columnDefinitions"]] == [0, 0, 0, 0, 0, 1, 1, 1, 1]
    assert table["columnDefinitions"][0]["format"] == "name"
    assert table["rows"][0]["object"] == {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                          "metadata": WEB["metadata"]}
    assert table_for([WEB], "pods", NOW, include_object="Object")["rows"][0]["object"] == WEB
    assert table_for([WEB], "pods", NOW, include_object="None")["rows"][0]["object"] is None
    assert table_for([], "pods", NOW)["metadata"] == {}
    assert WEB == original
    with pytest.raises(BadRequest, match="must be 'Metadata', 'Object', 'None', or empty"):
        table_for([WEB], "pods", NOW, include_object="All")


def test_column_names_for_the_cli():
    assert column_names("pods") == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert column_names("Pod", wide=True)[5:] == ["IP", "NODE", "NOMINATED NODE", "READINESS GATES"]
    assert column_names("events") == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert column_names("events", wide=True) == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE",
                                                 "MESSAGE", "FIRST SEEN", "COUNT", "NAME"]
    assert column_names("svc", wide=True) == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE",
                                              "SELECTOR"]
    assert column_names("jobs") == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert column_names("cronjobs") == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"]
    assert column_names("pdb") == ["NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"]
    assert column_names("hpa") == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert column_names("pvc") == ["NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS",
                                   "VOLUMEATTRIBUTESCLASS", "AGE"]
    assert column_names("rolebindings", wide=True) == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]


# --- durations ------------------------------------------------------------------------------------

@pytest.mark.parametrize("seconds, human, short", [
    (-5, "<invalid>", "<invalid>"), (-1.5, "0s", "0s"), (0, "0s", "0s"), (59, "59s", "59s"),
    (119, "119s", "1m"), (120, "2m", "2m"), (123, "2m3s", "2m"), (599, "9m59s", "9m"), (600, "10m", "10m"),
    (3 * 3600 - 1, "179m", "2h"), (3 * 3600, "3h", "3h"), (3 * 3600 + 300, "3h5m", "3h"),
    (8 * 3600, "8h", "8h"), (47 * 3600, "47h", "1d"), (48 * 3600, "2d", "2d"), (77 * 3600, "3d5h", "3d"),
    (8 * 86400, "8d", "8d"), (729 * 86400, "729d", "1y"), (730 * 86400, "2y", "2y"),
    (760 * 86400, "2y30d", "2y"), (8 * 365 * 86400 + 5 * 86400, "8y", "8y"),
])
def test_human_durations(seconds, human, short):
    assert human_duration(seconds) == human
    assert short_human_duration(seconds) == short


_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "y": 365 * 86400}


def _parse_duration(text: str) -> tuple[int, int]:
    """``3d5h`` -> (seconds it names, seconds of its smallest unit)."""
    total, num, unit = 0, "", 1
    for ch in text:
        if ch.isdigit():
            num += ch
        else:
            unit = _UNIT[ch]
            total, num = total + int(num) * unit, ""
    return total, unit


@given(st.integers(min_value=0, max_value=20 * 365 * 86400))
def test_ages_round_down_to_their_smallest_unit(seconds):
    # An age never overstates how old an object is, and is off by less than its last unit.
    for fmt in (human_duration, short_human_duration):
        shown, unit = _parse_duration(fmt(seconds))
        assert shown <= seconds < shown + unit


def test_format_label_selector():
    assert format_label_selector(None) == "<none>"
    assert format_label_selector({}) == "<none>"
    assert format_label_selector({"matchLabels": {"b": "2", "a": "1"}}) == "a=1,b=2"
    assert format_label_selector({"matchExpressions": [{"key": "x", "operator": "Exists"},
                                                       {"key": "y", "operator": "Bogus"}]}) == "<error>"
