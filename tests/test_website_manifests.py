"""Every example manifest of the Kubernetes documentation, applied through ``k8semu apply``.

The inputs are the 214 files of ``shared/cases/website/`` (kubernetes/website's
``content/en/examples/``, listed in its ``INDEX.tsv``); the test is skipped when
the folder is missing. Each file is applied, through the CLI in-process, to a
fresh byte copy of one prepared default cluster (one control-plane node, three
workers), so files never collide and no cluster is created per file.

Each apply runs the cluster for a fixed ``--for 60s`` of virtual time instead
of settling (up to 600 s). Sixty virtual seconds cover image pulls (1–5 s),
probes, the first crash-loop back-offs (10 s, 20 s, 40 s) and Jobs of a few
short pods, which is everything any of these examples needs to reach the
state a user would see; settling longer changes no verdict here but lets
crash loops and Job back-offs run many more cycles, costing wall time
(the whole file must stay well under ~90 s on 2 cores).

For every file the test asserts:

* no Python exception escapes ``main`` and stderr holds no traceback;
* the log is not corrupted: it reopens, the prepared cluster's bytes are
  still its prefix (append-only) and its revision only grew;
* the outcome a real cluster gives (``EXPECT``): by default every object
  converges — Deployments available, ReplicaSets/StatefulSets/DaemonSets
  ready, Jobs complete, Pods Running and Ready or Succeeded, other kinds
  created — or the file is rejected with kubectl's error, or the objects get
  stuck the way a real cluster leaves them (a PVC with no provisioner, a
  nodeSelector that no node matches, …);
* where k8semu does not yet behave like a real cluster (``GAPS``), the
  outcome k8semu gives today, so that a fix (or a regression) shows up as a
  failure to update the table. Each gap names the real outcome and the cause.

Run with ``-s`` to see the table of results.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import traceback
from pathlib import Path
from typing import Any

import pytest

from k8semu.api import errors
from k8semu.api.manifest import ManifestError, load_manifests, resource_for
from k8semu.cli.main import main
from k8semu.sim.cluster import Cluster

WEBSITE = Path(__file__).resolve().parents[2] / "shared" / "cases" / "website"
RUN_FOR = "60s"

OK_STATES = ("Available", "Ready", "Complete", "Running", "Succeeded", "Created", "Bound")


class Reject:
    """The file is rejected: exit code 1 and each of ``texts`` in stderr (kubectl's message)."""

    def __init__(self, *texts: str) -> None:
        self.texts = texts

    def __repr__(self) -> str:
        return f"rejected: {' … '.join(self.texts)}"


class States:
    """The objects end in these states (display name -> state prefix); unlisted ones converge.

    ``rc`` is the expected exit code (1 when some document of the file is rejected).
    """

    def __init__(self, states: dict[str, str], rc: int = 0, error: str | None = None) -> None:
        self.states = states
        self.rc = rc
        self.error = error

    def __repr__(self) -> str:
        return "; ".join(f"{k} {v}" for k, v in self.states.items())


UNSCHEDULABLE = "Pending: Unschedulable"
GONE = "gone"  # created, then deleted by the cluster itself
NO_PVC_BINDING = "pod has unbound immediate PersistentVolumeClaims"

# What a real cluster (v1.3x, kind-like: no default StorageClass, no extra CRDs, nodes without
# zone/disktype labels) does with files that do not simply converge.
EXPECT: dict[str, Reject | States] = {
    # --- rejected, as kubectl rejects them
    "application/job/job-tmpl.yaml": Reject(
        'Job "process-item-$ITEM" is invalid', 'metadata.name: Invalid value: "process-item-$ITEM"'),
    "application/volume-snaphot.yaml": Reject(
        'no matches for kind "VolumeSnapshot" in version "snapshot.storage.k8s.io/v1"'),
    "deployments/deployment-with-capacity-reservation.yaml": Reject(
        'strict decoding error: unknown field '
        '"spec.template.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].labelSelector"'),
    "pods/inject/envars-file-container.yaml": Reject(
        "envars-file-container.yaml: error converting YAML to JSON: yaml: line 9: found unknown escape character"),
    "pods/inject/pod-multiple-secret-env-variable.yaml": Reject(
        "pod-multiple-secret-env-variable.yaml: error converting YAML to JSON: yaml: line 15: "
        "found character that cannot start any token"),
    "pods/inject/pod-single-secret-env-variable.yaml": Reject(
        "error validating data: apiVersion not set"),
    "pods/security/seccomp/kind.yaml": Reject('no matches for kind "Cluster" in version "kind.x-k8s.io/v1alpha4"'),
    "policy/admission-config-file.yaml": Reject(
        'no matches for kind "AdmissionConfiguration" in version "apiserver.k8s.io/v1alpha1"'),
    "service/networking/dual-stack-ipv6-lb-svc.yaml": Reject('strict decoding error: unknown field "spec.ipFamily"'),
    # an IPv4-only cluster (kubeadm's default) has no IPv6 allocator
    "service/networking/dual-stack-ipfamilies-ipv6.yaml": Reject(
        'The Service "my-service" is invalid: spec.ipFamilies[0]: Invalid value: "IPv6": not configured on this cluster'),
    "service/networking/dual-stack-prefer-ipv6-lb-svc.yaml": Reject(
        'The Service "my-service" is invalid: spec.ipFamilies[0]: Invalid value: "IPv6": not configured on this cluster'),
    # no metadata.name: kubectl refuses it before any request (its GET of the current configuration)
    "controllers/job-success-policy-example.yaml": Reject(
        "error: error when retrieving current configuration of:",
        'Resource: "batch/v1, Resource=jobs", GroupVersionKind: "batch/v1, Kind=Job"',
        "resource name may not be empty"),
    "pods/security/seccomp/fields.yaml": Reject(
        'Pod "pod" is invalid', "spec.ephemeralContainers: Forbidden: cannot be set on create"),
    "service/networking/dual-stack-ipv6-svc.yaml": Reject('strict decoding error: unknown field "spec.ipFamily"'),
    "service/networking/example-ingress.yaml": Reject(
        'no matches for kind "Ingress" in version "networking.k8s.io/v1beta1"'),
    "service/networking/gatewayclass.yaml": Reject(
        'no matches for kind "GatewayClass" in version "gateway.networking.k8s.io/v1"'),
    "service/networking/grpcroute-matching.yaml": Reject(
        'no matches for kind "GRPCRoute" in version "gateway.networking.k8s.io/v1"'),
    "service/networking/httproute.yaml": Reject(
        'no matches for kind "HTTPRoute" in version "gateway.networking.k8s.io/v1"'),
    **{f"policy/{p}-psp.yaml": Reject('no matches for kind "PodSecurityPolicy" in version "policy/v1beta1"')
       for p in ("baseline", "example", "privileged", "restricted")},
    # the tutorials create these namespaces first
    **{f"pods/{f}": Reject(f'Error from server (NotFound): error when creating "{WEBSITE}/pods/{f}": '
                           f'namespaces "{ns}" not found')
       for f, ns in [("qos/qos-pod-3.yaml", "qos-example"), ("qos/qos-pod-4.yaml", "qos-example"),
                     ("qos/qos-pod-5.yaml", "qos-example"), ("resource/cpu-request-limit-2.yaml", "cpu-example"),
                     ("resource/memory-request-limit.yaml", "mem-example"),
                     ("resource/memory-request-limit-2.yaml", "mem-example"),
                     ("resource/memory-request-limit-3.yaml", "mem-example"),
                     ("resource/pod-level-cpu-request-limit.yaml", "pod-resources-example"),
                     ("resource/pod-level-memory-request-limit.yaml", "pod-resources-example"),
                     ("resource/pod-level-pid-limit.yaml", "pod-resources-example")]},
    # --- stuck, as on a real cluster: no provisioner binds the claims
    "admin/resource/pvc-limit-lower.yaml": States({"persistentvolumeclaim/pvc-limit-lower": "Pending"}),
    "admin/resource/quota-objects-pvc-2.yaml": States({"persistentvolumeclaim/pvc-quota-demo-2": "Pending"}),
    "application/restore-pvc.yaml": States({"persistentvolumeclaim/restored-pvc": "Pending"}),
    "pods/storage/expandable-pvc.yaml": States({"persistentvolumeclaim/expandable-pvc": "Pending"}),
    "application/mysql/mysql-statefulset.yaml": States(
        {"statefulset/mysql": f"0/3 ready; pod mysql-0: {UNSCHEDULABLE}: 0/4 nodes are available: {NO_PVC_BINDING}"}),
    "application/web/web.yaml": States(
        {"statefulset/web": f"0/2 ready; pod web-0: {UNSCHEDULABLE}: 0/4 nodes are available: {NO_PVC_BINDING}"}),
    "application/web/web-parallel.yaml": States(
        {"statefulset/web": f"0/2 ready; pod web-0: {UNSCHEDULABLE}: 0/4 nodes are available: {NO_PVC_BINDING}"}),
    "application/zookeeper/zookeeper.yaml": States(
        {"statefulset/zk": f"0/3 ready; pod zk-0: {UNSCHEDULABLE}: 0/4 nodes are available: {NO_PVC_BINDING}"}),
    "application/wordpress/mysql-deployment.yaml": States({
        "persistentvolumeclaim/mysql-pv-claim": "Pending",
        "deployment/wordpress-mysql": "0/1 available; pod wordpress-mysql-"}),
    **{f"pods/storage/{f}": States({f"pod/{pod}": f'{UNSCHEDULABLE}: 0/4 nodes are available: '
                                                  f'persistentvolumeclaim "{claim}" not found'})
       for f, pod, claim in [("expandable-pvc-pod.yaml", "expandable-pvc-pod", "expandable-pvc"),
                             ("pv-duplicate.yaml", "test", "test-nfs-claim"),
                             ("pv-pod-backup.yaml", "pv-pod-backup", "task-pv-claim"),
                             ("pv-pod.yaml", "task-pv-pod", "task-pv-claim")]},
    # --- stuck: no node has the labels / resources asked for
    **{f"pods/{f}": States({f"pod/{pod}": f"{UNSCHEDULABLE}: 0/4 nodes are available: 1 node(s) had untolerated "
                                          f"taint {{node-role.kubernetes.io/control-plane: }}, 3 node(s) {why}"})
       for f, pod, why in [
           ("assigning-pods-to-nodes-affinity.yaml", "with-node-affinity", "didn't match Pod's node affinity/selector"),
           ("pod-nginx.yaml", "nginx", "didn't match Pod's node affinity/selector"),
           ("pod-with-node-affinity-1.yaml", "with-node-affinity-1", "didn't match Pod's node affinity/selector"),
           ("topology-spread-constraints/one-constraint.yaml", "mypod",
            "didn't match pod topology spread constraints (missing required label)"),
           ("topology-spread-constraints/one-constraint-with-nodeaffinity.yaml", "mypod",
            "didn't match pod topology spread constraints (missing required label)"),
           ("topology-spread-constraints/two-constraints.yaml", "mypod",
            "didn't match pod topology spread constraints (missing required label)")]},
    "pods/resource/extended-resource-pod.yaml": States({"pod/extended-resource-demo": f"{UNSCHEDULABLE}: 0/4 nodes "
        "are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
        "3 Insufficient example.com/dongle"}),
    # schedulerName: my-scheduler, which is not running: nobody ever looks at the pod
    "admin/sched/pod3.yaml": States({"pod/annotation-second-scheduler": "Pending: not scheduled"}),
    "pods/pod-with-scheduling-gates.yaml": States(
        {"pod/test-pod": "Pending: SchedulingGated: Scheduling is blocked due to non-empty scheduling gates"}),
    # priorityClassName low-priority does not exist: admission forbids every pod (FailedCreate)
    "deployments/deployment-with-low-priorityclass.yaml": States({"deployment/placeholder-deployment": "0/1 available"}),
    # --- stuck in the container: images and commands that fail on a real cluster too
    "pods/private-reg-pod.yaml": States({"pod/private-reg": "Waiting: InvalidImageName"}),
    "controllers/job-pod-failure-policy-config-issue.yaml": States({
        "job/job-pod-failure-policy-config-issue": "Active; pod job-pod-failure-policy-config-issue-"}),
    # nginx -T prints the configuration and exits 0; restartPolicy Always restarts it forever
    "controllers/replication-nginx-1.16.1.yaml": States({
        "replicationcontroller/my-nginx-v4": "0/5 ready; pod my-nginx-v4-"}),
    "controllers/replication-nginx-1.9.2.yaml": States({
        "replicationcontroller/my-nginx-v4": "0/5 ready; pod my-nginx-v4-"}),
    # the legacy sidecar never exits, so the Job never completes (the point of the example)
    "application/job/job-sidecar-legacy.yaml": States({"job/myjob": "Active; pod myjob-"}),
    # the worker needs the Redis work queue of the tutorial
    "application/job/redis/job.yaml": States({"job/job-wq-2": "Active"}),
    # one container exits (restartPolicy Never), the other keeps running: Running, not Ready
    "pods/two-container-pod.yaml": States({"pod/two-containers": "Running, not Ready"}),
    # nodeName foo-node does not exist: the pod GC deletes the orphaned pod after 40 s
    "pods/pod-nginx-specific-node.yaml": States({"pod/nginx": GONE}),
    # --- Indexed Jobs whose exit code follows JOB_COMPLETION_INDEX (the kubelet resolves its fieldRef)
    # every index runs, the even ones fail twice (backoffLimitPerIndex 1): 5 failed indexes <= maxFailedIndexes
    "controllers/job-backoff-limit-per-index-example.yaml": States(
        {"job/job-backoff-limit-per-index-example": "Failed: FailedIndexes"}),
    # index 0 fails twice, index 1 exits 42 (FailIndex), indexes 2 and 3 complete
    "controllers/job-backoff-limit-per-index-failindex.yaml": States(
        {"job/job-backoff-limit-per-index-failindex": "Failed: FailedIndexes"}),
    # --- stuck, as on a real cluster: the ConfigMap/Secret they use does not exist (the tutorials create it
    # first). A volume of it: ContainerCreating with FailedMount events (MountVolume.SetUp failed for volume
    # "config-volume" : configmap "special-config" not found), retried with back-off; a variable from it:
    # CreateContainerConfigError (configmap "special-config" not found), retried every 10 s.
    **{f: States({name: "Pending: ContainerCreating"}) for f, name in [
        ("pods/config/redis-pod.yaml", "pod/redis"),
        ("pods/inject/secret-pod.yaml", "pod/secret-test-pod"),
        ("pods/storage/projected.yaml", "pod/test-projected-volume"),
        ("pods/storage/projected-secret-downwardapi-configmap.yaml", "pod/volume-test"),
        ("pods/pod-configmap-volume.yaml", "pod/dapi-test-pod"),
        ("pods/pod-configmap-volume-specific-key.yaml", "pod/dapi-test-pod")]},
    **{f"pods/{f}": States({"pod/dapi-test-pod": "Waiting: CreateContainerConfigError"}) for f in [
        "pod-configmap-env-var-valueFrom.yaml", "pod-configmap-envFrom.yaml",
        "pod-multiple-configmap-env-variable.yaml", "pod-single-configmap-env-variable.yaml"]},
    **{f"deployments/{f}.yaml": States({f"deployment/{name}": f"0/3 available; pod {name}-"}) for f, name in [
        ("deployment-with-configmap-and-sidecar-container", "configmap-sidecar-container"),
        ("deployment-with-configmap-as-volume", "configmap-volume"),
        ("deployment-with-configmap-two-containers", "configmap-two-containers"),
        ("deployment-with-immutable-configmap-as-volume", "immutable-configmap-volume")]},
    "service/networking/curlpod.yaml": States({"deployment/curl-deployment": "0/1 available; pod curl-deployment-"}),
    # ValidatingAdmissionPolicy + binding (admissionregistration.k8s.io/v1, served since v1.30): created
    "policy/service-cluster-cidr-address-range.yaml": States({}),
    "service/networking/vap-servicecidr-deny.yaml": States({}),
}

# Where k8semu differs from a real cluster: (what a real cluster does, what k8semu does today).
GAPS: dict[str, tuple[str, Reject | States]] = {
    "pods/probe/exec-liveness.yaml": (
        "Running and Ready at 60 s: a container being killed after failed liveness probes stays Ready "
        "until it stops; the Unhealthy event carries cat's error",
        States({"pod/liveness-exec": "Running, not Ready"})),
}


# ------------------------------------------------------------------------------------- helpers
def _ready(obj: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or [])


def pod_state(pod: dict[str, Any]) -> str:
    """``Running``, ``Running, not Ready``, ``Succeeded``, ``Failed``, ``Waiting: REASON`` or ``Pending: …``."""
    status = pod.get("status") or {}
    phase = status.get("phase", "Pending")
    if phase in ("Succeeded", "Failed"):
        return phase
    for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        reason = ((cs.get("state") or {}).get("waiting") or {}).get("reason")
        if reason not in (None, "ContainerCreating", "PodInitializing"):
            return f"Waiting: {reason}"
    if phase == "Running":
        return "Running" if _ready(pod) else "Running, not Ready"
    for c in status.get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return f"Pending: {c.get('reason')}: {c.get('message', '')}"
    if not (pod.get("spec") or {}).get("nodeName"):
        return "Pending: not scheduled"
    return "Pending: ContainerCreating"


def _owned_pods(api: Any, owner: dict[str, Any]) -> list[dict[str, Any]]:
    ns = owner["metadata"].get("namespace")
    uids = {owner["metadata"]["uid"]}
    for plural in ("replicasets", "jobs"):
        for obj in api.list(plural, namespace=ns)["items"]:
            if any(r.get("uid") in uids for r in obj["metadata"].get("ownerReferences") or []):
                uids.add(obj["metadata"]["uid"])
    pods = [p for p in api.list("pods", namespace=ns)["items"]
            if any(r.get("uid") in uids for r in p["metadata"].get("ownerReferences") or [])]
    return sorted(pods, key=lambda p: p["metadata"]["name"])


def object_state(api: Any, kind: str, obj: dict[str, Any]) -> str:
    """One word (or a short phrase) for where ``obj`` ended, as a user judges it; see ``OK_STATES``."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    text = "Created"
    if kind == "Deployment":
        want, have = spec.get("replicas", 1), status.get("availableReplicas", 0)
        text = "Available" if have >= want else f"{have}/{want} available"
    elif kind in ("ReplicaSet", "ReplicationController", "StatefulSet"):
        want, have = spec.get("replicas", 1), status.get("readyReplicas", 0)
        text = "Ready" if have >= want else f"{have}/{want} ready"
    elif kind == "DaemonSet":
        want, have = status.get("desiredNumberScheduled", 0), status.get("numberReady", 0)
        text = "Ready" if have >= want else f"{have}/{want} ready"
    elif kind == "Job":
        conds = {c["type"]: c for c in status.get("conditions") or [] if c.get("status") == "True"}
        if "Complete" in conds:
            text = "Complete"
        elif "Failed" in conds:
            return f"Failed: {conds['Failed'].get('reason')}"
        else:
            text = "Active"
    elif kind == "Pod":
        return pod_state(obj)
    elif kind == "PersistentVolumeClaim":
        return status.get("phase", "Pending")
    if text in OK_STATES:
        return text
    for pod in _owned_pods(api, obj):
        st = pod_state(pod)
        if st not in OK_STATES:
            return f"{text}; pod {pod['metadata']['name']}: {st}"
    return text


class Result:
    """What applying one file did."""

    def __init__(self, rel: str) -> None:
        self.rel = rel
        self.rc: Any = None
        self.out = ""
        self.err = ""
        self.crash: str | None = None
        self.log_problem: str | None = None
        self.states: dict[str, str] = {}

    def summary(self) -> str:
        if self.crash:
            return "CRASH"
        if self.rc != 0 and not self.states:
            return "rejected: " + " | ".join(line for line in self.err.splitlines()
                                             if line.startswith(("error", "Error")))[:150]
        return ", ".join(f"{k} {v}" for k, v in self.states.items())[:150]


def apply_file(base: Path, base_bytes: bytes, base_revision: int, work: Path, rel: str) -> Result:
    """Apply ``rel`` to a fresh copy of ``base``; record exit code, output, states and log health."""
    res = Result(rel)
    path = work / "cluster.log"
    shutil.copyfile(base, path)
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            res.rc = main(["--cluster", str(path), "apply", "-f", str(WEBSITE / rel), "--for", RUN_FOR, "-q"])
    except SystemExit as e:  # argparse; must not happen
        res.rc = e.code
        res.crash = f"SystemExit({e.code})"
    except BaseException:  # noqa: BLE001 - any escaping exception is the failure we look for
        res.crash = traceback.format_exc()
    res.out, res.err = out.getvalue(), err.getvalue()
    if "Traceback (most recent call last)" in res.err and "File \"<string>\"" not in res.err:
        res.crash = res.err
    data = path.read_bytes()
    if not data.startswith(base_bytes):
        res.log_problem = "the prepared cluster's bytes are no longer a prefix of the log"
    try:
        cluster = Cluster.open(path, read_only=True)
    except Exception as e:  # noqa: BLE001
        res.log_problem = f"the log does not reopen: {e!r}"
        return res
    try:
        if cluster.log.revision < base_revision:
            res.log_problem = f"revision went back: {cluster.log.revision} < {base_revision}"
        try:
            docs = load_manifests(str(WEBSITE / rel))
        except ManifestError:
            docs = []
        for doc in docs:
            try:
                info = resource_for(doc)
            except ManifestError:
                continue
            meta = doc.obj.get("metadata") or {}
            ns = (meta.get("namespace") or "default") if info.namespaced else None
            try:
                obj = cluster.api.get(info, meta.get("name", ""), namespace=ns)
            except errors.StatusError:
                continue
            res.states[f"{info.kind.lower()}/{meta.get('name')}"] = object_state(cluster.api, info.kind, obj)
    finally:
        cluster.close()
    return res


def verdict(res: Result, expect: Reject | States | None) -> str | None:
    """None when ``res`` is what ``expect`` says (None = every object converges); else why not."""
    if isinstance(expect, Reject):
        if res.rc != 1 or not all(text in res.err for text in expect.texts):
            return f"expected rejection with {expect!r}; got rc={res.rc}, stderr={res.err.strip()[:300]!r}"
        return None
    expect = expect or States({})
    if res.rc != expect.rc:
        return f"exit code {res.rc}, expected {expect.rc}; stderr: {res.err.strip()[:300]!r}"
    if not res.states and not (expect.states and set(expect.states.values()) == {GONE}):
        return "nothing was created"
    for name, state in res.states.items():
        want = expect.states.get(name)
        if want is None:
            if state not in OK_STATES:
                return f"{name} did not converge: {state}"
        elif not state.startswith(want):
            return f"{name} is {state!r}, expected {want!r}…"
    missing = {name for name, want in expect.states.items() if want != GONE} - set(res.states)
    if missing:
        return f"no such object(s): {sorted(missing)}"
    return None


# --------------------------------------------------------------------------------------- test
def _files() -> list[str]:
    lines = (WEBSITE / "INDEX.tsv").read_text().splitlines()[1:]
    return sorted(line.split("\t")[0] for line in lines if line.strip())


@pytest.mark.skipif(not (WEBSITE / "INDEX.tsv").exists(), reason=f"{WEBSITE} is missing")
def test_every_website_manifest(tmp_path: Path) -> None:
    base = tmp_path / "base.log"
    assert main(["--cluster", str(base), "cluster", "create", "--bare"]) == 0
    base_bytes = base.read_bytes()
    c = Cluster.open(base, read_only=True)
    base_revision = c.log.revision
    c.close()
    files = _files()
    assert len(files) == 214
    unknown = (set(EXPECT) | set(GAPS)) - set(files)
    assert not unknown, f"expectations for files that are not in INDEX.tsv: {sorted(unknown)}"
    failures, rows = [], []
    counts: dict[str, int] = {}
    for rel in files:
        res = apply_file(base, base_bytes, base_revision, tmp_path, rel)
        if res.crash:
            failures.append(f"{rel}: k8semu crashed:\n{res.crash}")
        if res.log_problem:
            failures.append(f"{rel}: log corrupted: {res.log_problem}")
        if rel in GAPS:
            real, today = GAPS[rel]
            why = verdict(res, today)
            kind = "GAP"
            if why:
                failures.append(f"{rel}: known gap changed (real cluster: {real}): {why}; update GAPS")
        else:
            expect = EXPECT.get(rel)
            why = verdict(res, expect)
            kind = ("rejected" if isinstance(expect, Reject) else "stuck") if expect else "converged"
            if why:
                failures.append(f"{rel}: {why}")
        mark = "FAIL" if why or res.crash or res.log_problem else kind
        counts[mark] = counts.get(mark, 0) + 1
        note = f"  [real cluster: {GAPS[rel][0]}]" if rel in GAPS else ""
        rows.append(f"{mark:<9} {rel:<68} rc={res.rc!s:<2} {res.summary()}{note}")
    print(f"\n{len(files)} manifests from {WEBSITE}, each applied with --for {RUN_FOR}:")
    print("\n".join(rows))
    print("totals: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    assert not failures, "\n".join(failures)
