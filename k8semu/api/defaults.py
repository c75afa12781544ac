"""Defaulting, as kube-apiserver applies it when it decodes a request body.

Upstream, every served version registers ``SetDefaults_*`` functions
(``pkg/apis/<group>/<version>/defaults.go`` plus the declarative ``+default=``
markers compiled into ``zz_generated.defaults.go``); the decoder runs them on
every object it reads, before admission and validation. A few values that
users see as "defaults" are really set by a registry strategy's
``PrepareForCreate`` (a Namespace's ``kubernetes`` finalizer, a Service's IP
family fields, a Job's generated selector); those are applied here too when
they need nothing but the object, and :func:`job_prepare_for_create` covers
the one that needs the object's uid.

Design: :func:`apply_defaults` deep-copies its input once and then fills
missing fields in place on the copy, dispatching on ``(apiVersion, kind)`` to
one small function per kind. Pod templates wherever they occur (workloads,
CronJob's ``jobTemplate``) go through the same pod-spec helpers, split the way
upstream splits them: some defaults belong to every ``PodSpec``
(``SetDefaults_PodSpec``, container/probe/volume defaults) and some only to a
real Pod (``SetDefaults_Pod``: limits copied to requests, ``enableServiceLinks``,
host-network host ports). Values not listed here (clusterIP / nodePort
allocation, ``serviceAccountName``, ``priority``, ``preemptionPolicy`` of pods)
belong to the registry or to admission plugins, not to defaulting.
"""

from __future__ import annotations

import base64
import copy
import re
from typing import Any

from .meta import copy_object

__all__ = ["apply_defaults", "job_prepare_for_create", "default_pull_policy"]

_RBAC_GROUP = "rbac.authorization.k8s.io"

# Volume sources a v1 ``Volume`` may carry (to tell "no source" from "some source").
_VOLUME_SOURCES = (
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret",
    "nfs", "iscsi", "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder",
    "cephfs", "flocker", "downwardAPI", "fc", "azureFile", "configMap", "vsphereVolume",
    "quobyte", "azureDisk", "photonPersistentDisk", "projected", "portworxVolume", "scaleIO",
    "storageos", "csi", "ephemeral", "image",
)

# Docker reference: an optional ":tag" on the last path component, an optional "@digest".
_TAG_RE = re.compile(r"^[\w][\w.-]{0,127}$")
_REPO_RE = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$")


def default_pull_policy(image: str) -> str:
    """``imagePullPolicy`` a container gets when it sets none (``SetDefaults_Container``).

    ``Always`` when the image's tag is ``latest`` or the image has neither tag
    nor digest (docker's implicit ``latest``); ``IfNotPresent`` otherwise,
    including for digest-pinned images and for references that do not parse.
    """
    tag = _image_tag(image)
    return "Always" if tag == "latest" else "IfNotPresent"


def _image_tag(image: str) -> str | None:
    """The tag ``parsers.ParseImageName`` reports: ``latest`` if none and no digest;
    ``None`` when the reference does not parse (upstream then ignores the error)."""
    if not image:
        return None
    name, _, digest = image.partition("@")
    tag = ""
    last_slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > last_slash:
        name, tag = name[:colon], name[colon + 1:]
        if not _TAG_RE.match(tag):
            return None
    # Strip a registry host (first component with '.' or ':' or 'localhost').
    parts = name.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        parts = parts[1:]
    if not _REPO_RE.match("/".join(parts)):
        return None
    if not tag and not digest:
        return "latest"
    return tag


# --------------------------------------------------------------------------- pod specs


def _default_probe(probe: dict[str, Any]) -> None:
    # SetDefaults_Probe: zero counts as unset.
    for key, value in (("timeoutSeconds", 1), ("periodSeconds", 10),
                       ("successThreshold", 1), ("failureThreshold", 3)):
        if not probe.get(key):
            probe[key] = value
    _default_handler(probe)


def _default_handler(handler: dict[str, Any]) -> None:
    http = handler.get("httpGet")
    if isinstance(http, dict):
        # SetDefaults_HTTPGetAction
        if not http.get("path"):
            http["path"] = "/"
        if not http.get("scheme"):
            http["scheme"] = "HTTP"


def _default_field_ref(holder: dict[str, Any]) -> None:
    ref = holder.get("fieldRef")
    if isinstance(ref, dict) and not ref.get("apiVersion"):
        ref["apiVersion"] = "v1"  # SetDefaults_ObjectFieldSelector


def _default_container(c: dict[str, Any]) -> None:
    # SetDefaults_Container
    if not c.get("imagePullPolicy"):
        c["imagePullPolicy"] = default_pull_policy(c.get("image") or "")
    if not c.get("terminationMessagePath"):
        c["terminationMessagePath"] = "/dev/termination-log"
    if not c.get("terminationMessagePolicy"):
        c["terminationMessagePolicy"] = "File"
    for port in c.get("ports") or ():
        if isinstance(port, dict) and not port.get("protocol"):
            port["protocol"] = "TCP"  # ContainerPort.Protocol +default="TCP"
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        if isinstance(c.get(key), dict):
            _default_probe(c[key])
    lifecycle = c.get("lifecycle")
    if isinstance(lifecycle, dict):
        for key in ("postStart", "preStop"):
            if isinstance(lifecycle.get(key), dict):
                _default_handler(lifecycle[key])
    for env in c.get("env") or ():
        if isinstance(env, dict) and isinstance(env.get("valueFrom"), dict):
            _default_field_ref(env["valueFrom"])


def _default_volume(v: dict[str, Any]) -> None:
    # SetDefaults_Volume: no source at all means an emptyDir.
    if not any(k in v for k in _VOLUME_SOURCES):
        v["emptyDir"] = {}
    for key in ("secret", "configMap", "downwardAPI", "projected"):
        src = v.get(key)
        if isinstance(src, dict) and src.get("defaultMode") is None:
            src["defaultMode"] = 420  # 0644
    host_path = v.get("hostPath")
    if isinstance(host_path, dict) and host_path.get("type") is None:
        host_path["type"] = ""  # HostPathUnset
    down = v.get("downwardAPI")
    if isinstance(down, dict):
        for item in down.get("items") or ():
            if isinstance(item, dict):
                _default_field_ref(item)
    projected = v.get("projected")
    if isinstance(projected, dict):
        for source in projected.get("sources") or ():
            if not isinstance(source, dict):
                continue
            token = source.get("serviceAccountToken")
            if isinstance(token, dict) and token.get("expirationSeconds") is None:
                token["expirationSeconds"] = 3600
            down = source.get("downwardAPI")
            if isinstance(down, dict):
                for item in down.get("items") or ():
                    if isinstance(item, dict):
                        _default_field_ref(item)
    ephemeral = v.get("ephemeral")
    if isinstance(ephemeral, dict):
        tmpl = ephemeral.get("volumeClaimTemplate")
        if isinstance(tmpl, dict) and isinstance(tmpl.get("spec"), dict):
            _default_pvc_spec(tmpl["spec"])


def _default_pod_spec(spec: dict[str, Any]) -> None:
    """SetDefaults_PodSpec plus the nested container/volume/probe defaults."""
    if not spec.get("dnsPolicy"):
        spec["dnsPolicy"] = "ClusterFirst"
    if not spec.get("restartPolicy"):
        spec["restartPolicy"] = "Always"
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = 30
    if not spec.get("schedulerName"):
        spec["schedulerName"] = "default-scheduler"
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(key) or ():
            if isinstance(c, dict):
                _default_container(c)
    for v in spec.get("volumes") or ():
        if isinstance(v, dict):
            _default_volume(v)


def _default_template(holder: dict[str, Any]) -> None:
    tmpl = holder.get("template")
    if isinstance(tmpl, dict):
        spec = tmpl.setdefault("spec", {})
        if isinstance(spec, dict):
            _default_pod_spec(spec)


def _default_pod(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    _default_pod_spec(spec)
    # SetDefaults_Pod: only real Pods, never pod templates.
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or ():
            if not isinstance(c, dict):
                continue
            res = c.get("resources")
            if isinstance(res, dict) and res.get("limits"):
                requests = dict(res.get("requests") or {})
                for name, value in res["limits"].items():
                    requests.setdefault(name, value)
                res["requests"] = requests
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    if spec.get("hostNetwork"):
        for key in ("containers", "initContainers"):
            for c in spec.get(key) or ():
                for port in (c.get("ports") or ()) if isinstance(c, dict) else ():
                    if isinstance(port, dict) and not port.get("hostPort"):
                        port["hostPort"] = port.get("containerPort")


# --------------------------------------------------------------------------- workloads


def _default_deployment(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    strategy = spec.setdefault("strategy", {})
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
    if strategy["type"] == "RollingUpdate":
        ru = strategy.get("rollingUpdate")
        if not isinstance(ru, dict):
            ru = strategy["rollingUpdate"] = {}
        if ru.get("maxUnavailable") is None:
            ru["maxUnavailable"] = "25%"
        if ru.get("maxSurge") is None:
            ru["maxSurge"] = "25%"
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    if spec.get("progressDeadlineSeconds") is None:
        spec["progressDeadlineSeconds"] = 600
    _default_template(spec)


def _default_replica_set(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    _default_template(spec)


def _default_replication_controller(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    tmpl = spec.get("template")
    labels = ((tmpl or {}).get("metadata") or {}).get("labels") if isinstance(tmpl, dict) else None
    if labels is not None:
        # SetDefaults_ReplicationController: selector and labels come from the template.
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        meta = obj.setdefault("metadata", {})
        if not meta.get("labels"):
            meta["labels"] = dict(labels)
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    _default_template(spec)


def _default_stateful_set(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    if not spec.get("podManagementPolicy"):
        spec["podManagementPolicy"] = "OrderedReady"
    strategy = spec.setdefault("updateStrategy", {})
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
        if strategy.get("rollingUpdate") is None:
            strategy["rollingUpdate"] = {}
    ru = strategy.get("rollingUpdate")
    if strategy["type"] == "RollingUpdate" and isinstance(ru, dict) and ru.get("partition") is None:
        ru["partition"] = 0
    policy = spec.get("persistentVolumeClaimRetentionPolicy")
    if not isinstance(policy, dict):
        policy = spec["persistentVolumeClaimRetentionPolicy"] = {}
    policy.setdefault("whenDeleted", "Retain")
    policy.setdefault("whenScaled", "Retain")
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    for pvc in spec.get("volumeClaimTemplates") or ():
        if isinstance(pvc, dict):
            _default_pvc(pvc)
    _default_template(spec)


def _default_daemon_set(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    strategy = spec.setdefault("updateStrategy", {})
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
    if strategy["type"] == "RollingUpdate":
        ru = strategy.get("rollingUpdate")
        if not isinstance(ru, dict):
            ru = strategy["rollingUpdate"] = {}
        if ru.get("maxUnavailable") is None:
            ru["maxUnavailable"] = 1
        if ru.get("maxSurge") is None:
            ru["maxSurge"] = 0
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    _default_template(spec)


def _default_pod_failure_policy(spec: dict[str, Any]) -> None:
    policy = spec.get("podFailurePolicy")
    if isinstance(policy, dict):
        for rule in policy.get("rules") or ():
            for pattern in (rule.get("onPodConditions") or ()) if isinstance(rule, dict) else ():
                if isinstance(pattern, dict) and not pattern.get("status"):
                    pattern["status"] = "True"


def _default_job(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    # SetDefaults_Job: a non-parallel job leaves both unset and gets 1/1.
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = 2147483647 if spec.get("backoffLimitPerIndex") is not None else 6
    tmpl_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
    meta = obj.setdefault("metadata", {})
    if tmpl_labels is not None and not meta.get("labels"):
        meta["labels"] = dict(tmpl_labels)
    if spec.get("completionMode") is None:
        spec["completionMode"] = "NonIndexed"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    _default_pod_failure_policy(spec)
    if spec.get("podReplacementPolicy") is None:
        spec["podReplacementPolicy"] = (
            "Failed" if spec.get("podFailurePolicy") is not None else "TerminatingOrFailed"
        )
    _default_template(spec)


def _default_cron_job(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    if not spec.get("concurrencyPolicy"):
        spec["concurrencyPolicy"] = "Allow"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    if spec.get("successfulJobsHistoryLimit") is None:
        spec["successfulJobsHistoryLimit"] = 3
    if spec.get("failedJobsHistoryLimit") is None:
        spec["failedJobsHistoryLimit"] = 1
    # Only the pod template inside jobTemplate is defaulted (SetDefaults_Job is per Job object).
    job_spec = (spec.get("jobTemplate") or {}).get("spec")
    if isinstance(job_spec, dict):
        _default_pod_failure_policy(job_spec)
        _default_template(job_spec)


def job_prepare_for_create(job: dict[str, Any], uid: str) -> dict[str, Any]:
    """The Job registry strategy's selector generation, for a Job about to be stored.

    Mirrors ``generateSelector`` in pkg/registry/batch/job/strategy.go: unless
    ``spec.manualSelector`` is true, the pod template gets the labels
    ``batch.kubernetes.io/controller-uid`` and ``controller-uid`` (= ``uid``),
    ``batch.kubernetes.io/job-name`` and ``job-name`` (= ``metadata.name``), each
    only if the user did not set it, and ``spec.selector.matchLabels`` gets
    ``batch.kubernetes.io/controller-uid: <uid>``. The Job's own
    ``metadata.labels``, when empty, become the template labels (what
    ``SetDefaults_Job`` yields when the stored object is read back).
    ``status`` is cleared. Returns a new dict; ``job`` is not modified.
    Call it after :func:`apply_defaults` and before validation.
    """
    out = copy.deepcopy(job)
    meta = out.setdefault("metadata", {})
    spec = out.setdefault("spec", {})
    if not spec.get("manualSelector"):
        tmpl = spec.setdefault("template", {})
        tmeta = tmpl.setdefault("metadata", {})
        labels = tmeta.get("labels")
        labels = dict(labels) if isinstance(labels, dict) else {}
        name = meta.get("name", "")
        for key, value in (
            ("batch.kubernetes.io/controller-uid", uid),
            ("batch.kubernetes.io/job-name", name),
            ("controller-uid", uid),
            ("job-name", name),
        ):
            labels.setdefault(key, value)
        tmeta["labels"] = labels
        selector = spec.get("selector")
        selector = dict(selector) if isinstance(selector, dict) else {}
        match = dict(selector.get("matchLabels") or {})
        match.setdefault("batch.kubernetes.io/controller-uid", uid)
        selector["matchLabels"] = match
        spec["selector"] = selector
        if not meta.get("labels"):
            meta["labels"] = dict(labels)
    out["status"] = {}
    return out


# --------------------------------------------------------------------------- core kinds


def _default_service(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    if not spec.get("sessionAffinity"):
        spec["sessionAffinity"] = "None"
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        cfg = spec.get("sessionAffinityConfig") or {}
        if ((cfg.get("clientIP") or {}).get("timeoutSeconds")) is None:
            spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": 10800}}
    if not spec.get("type"):
        spec["type"] = "ClusterIP"
    stype = spec["type"]
    for port in spec.get("ports") or ():
        if not isinstance(port, dict):
            continue
        if not port.get("protocol"):
            port["protocol"] = "TCP"
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")
    if stype in ("NodePort", "LoadBalancer") and not spec.get("externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if spec.get("internalTrafficPolicy") is None and stype in ("ClusterIP", "NodePort", "LoadBalancer"):
        spec["internalTrafficPolicy"] = "Cluster"
    if stype == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True
    # The service REST storage initialises the IP family fields (single-stack IPv4
    # cluster); a headless service without selector asks for RequireDualStack.
    if stype != "ExternalName":
        if spec.get("ipFamilyPolicy") is None:
            headless = spec.get("clusterIP") == "None"
            spec["ipFamilyPolicy"] = (
                "RequireDualStack" if headless and not spec.get("selector") else "SingleStack"
            )
        if not spec.get("ipFamilies"):
            spec["ipFamilies"] = ["IPv4"]


def _default_namespace(obj: dict[str, Any]) -> None:
    meta = obj.setdefault("metadata", {})
    if meta.get("name"):
        labels = dict(meta.get("labels") or {})
        labels["kubernetes.io/metadata.name"] = meta["name"]
        meta["labels"] = labels
    # spec.finalizers ["kubernetes"] is the namespace strategy's PrepareForCreate (k8semu.api.strategy)
    status = obj.setdefault("status", {})
    if not status.get("phase"):
        status["phase"] = "Active"


def _default_secret(obj: dict[str, Any]) -> None:
    if not obj.get("type"):
        obj["type"] = "Opaque"
    # v1 -> internal conversion merges stringData into data (base64 on the wire).
    string_data = obj.pop("stringData", None)
    if string_data:
        data = dict(obj.get("data") or {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        obj["data"] = data


def _default_pvc_spec(spec: dict[str, Any]) -> None:
    if spec.get("volumeMode") is None:
        spec["volumeMode"] = "Filesystem"


def _default_pvc(obj: dict[str, Any]) -> None:
    _default_pvc_spec(obj.setdefault("spec", {}))
    status = obj.setdefault("status", {})
    if not status.get("phase"):
        status["phase"] = "Pending"


def _default_pv(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    if not spec.get("persistentVolumeReclaimPolicy"):
        spec["persistentVolumeReclaimPolicy"] = "Retain"
    if spec.get("volumeMode") is None:
        spec["volumeMode"] = "Filesystem"
    host_path = spec.get("hostPath")
    if isinstance(host_path, dict) and host_path.get("type") is None:
        host_path["type"] = ""  # SetDefaults_HostPathVolumeSource: HostPathUnset, as in pod volumes
    status = obj.setdefault("status", {})
    if not status.get("phase"):
        status["phase"] = "Pending"


def _default_endpoints(obj: dict[str, Any]) -> None:
    for subset in obj.get("subsets") or ():
        for port in (subset.get("ports") or ()) if isinstance(subset, dict) else ():
            if isinstance(port, dict) and not port.get("protocol"):
                port["protocol"] = "TCP"


def _default_endpoint_slice(obj: dict[str, Any]) -> None:
    for port in obj.get("ports") or ():
        if isinstance(port, dict):
            if port.get("name") is None:
                port["name"] = ""
            if port.get("protocol") is None:
                port["protocol"] = "TCP"


def _default_limit_range(obj: dict[str, Any]) -> None:
    for item in (obj.get("spec") or {}).get("limits") or ():
        if not isinstance(item, dict) or item.get("type") != "Container":
            continue
        default = dict(item.get("default") or {})
        for key, value in (item.get("max") or {}).items():
            default.setdefault(key, value)
        request = dict(item.get("defaultRequest") or {})
        for key, value in default.items():
            request.setdefault(key, value)
        for key, value in (item.get("min") or {}).items():
            request.setdefault(key, value)
        if default:
            item["default"] = default
        if request:
            item["defaultRequest"] = request


def _default_node(obj: dict[str, Any]) -> None:
    status = obj.get("status")
    if isinstance(status, dict) and status.get("allocatable") is None and status.get("capacity") is not None:
        status["allocatable"] = dict(status["capacity"])


_HPA_SCALE_UP = {
    "stabilizationWindowSeconds": 0,
    "selectPolicy": "Max",
    "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15},
        {"type": "Percent", "value": 100, "periodSeconds": 15},
    ],
}
_HPA_SCALE_DOWN = {
    "selectPolicy": "Max",
    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
}


def _hpa_rules(given: Any, default: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(default)
    if isinstance(given, dict):
        for key in ("selectPolicy", "stabilizationWindowSeconds", "policies", "tolerance"):
            if given.get(key) is not None:
                out[key] = given[key]
    return out


def _default_hpa(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    if not spec.get("metrics"):
        spec["metrics"] = [{
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
        }]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        behavior["scaleUp"] = _hpa_rules(behavior.get("scaleUp"), _HPA_SCALE_UP)
        behavior["scaleDown"] = _hpa_rules(behavior.get("scaleDown"), _HPA_SCALE_DOWN)


def _default_priority_class(obj: dict[str, Any]) -> None:
    if not obj.get("preemptionPolicy"):
        obj["preemptionPolicy"] = "PreemptLowerPriority"


def _default_storage_class(obj: dict[str, Any]) -> None:
    if not obj.get("reclaimPolicy"):
        obj["reclaimPolicy"] = "Delete"
    if not obj.get("volumeBindingMode"):
        obj["volumeBindingMode"] = "Immediate"


def _default_network_policy(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    for direction in ("ingress", "egress"):
        for rule in spec.get(direction) or ():
            for port in (rule.get("ports") or ()) if isinstance(rule, dict) else ():
                if isinstance(port, dict) and not port.get("protocol"):
                    port["protocol"] = "TCP"
    if not spec.get("policyTypes"):
        types = ["Ingress"]
        if spec.get("egress"):
            types.append("Egress")
        spec["policyTypes"] = types


def _default_role_ref_and_subjects(obj: dict[str, Any]) -> None:
    ref = obj.get("roleRef")
    if isinstance(ref, dict) and not ref.get("apiGroup"):
        ref["apiGroup"] = _RBAC_GROUP
    for subject in obj.get("subjects") or ():
        if isinstance(subject, dict) and not subject.get("apiGroup"):
            kind = subject.get("kind")
            if kind == "ServiceAccount":
                subject["apiGroup"] = ""
            elif kind in ("User", "Group"):
                subject["apiGroup"] = _RBAC_GROUP


_BY_KIND = {
    ("v1", "Pod"): _default_pod,
    ("v1", "ReplicationController"): _default_replication_controller,
    ("v1", "PodTemplate"): _default_template,  # SetDefaults_PodSpec & co. on its template
    ("v1", "Service"): _default_service,
    ("v1", "Namespace"): _default_namespace,
    ("v1", "Secret"): _default_secret,
    ("v1", "PersistentVolumeClaim"): _default_pvc,
    ("v1", "PersistentVolume"): _default_pv,
    ("v1", "Endpoints"): _default_endpoints,
    ("v1", "LimitRange"): _default_limit_range,
    ("v1", "Node"): _default_node,
    ("apps/v1", "Deployment"): _default_deployment,
    ("apps/v1", "ReplicaSet"): _default_replica_set,
    ("apps/v1", "StatefulSet"): _default_stateful_set,
    ("apps/v1", "DaemonSet"): _default_daemon_set,
    ("batch/v1", "Job"): _default_job,
    ("batch/v1", "CronJob"): _default_cron_job,
    ("autoscaling/v2", "HorizontalPodAutoscaler"): _default_hpa,
    ("scheduling.k8s.io/v1", "PriorityClass"): _default_priority_class,
    ("storage.k8s.io/v1", "StorageClass"): _default_storage_class,
    ("discovery.k8s.io/v1", "EndpointSlice"): _default_endpoint_slice,
    ("networking.k8s.io/v1", "NetworkPolicy"): _default_network_policy,
    (f"{_RBAC_GROUP}/v1", "RoleBinding"): _default_role_ref_and_subjects,
    (f"{_RBAC_GROUP}/v1", "ClusterRoleBinding"): _default_role_ref_and_subjects,
}


def _default_crd(obj: dict[str, Any]) -> None:
    from .customresources import default_crd

    default_crd(obj)


_BY_KIND[("apiextensions.k8s.io/v1", "CustomResourceDefinition")] = _default_crd


def _default_vap(obj: dict[str, Any]) -> None:
    from .admissionpolicy import default_policy

    default_policy(obj)


def _default_vap_binding(obj: dict[str, Any]) -> None:
    from .admissionpolicy import default_binding

    default_binding(obj)


_BY_KIND[("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy")] = _default_vap
_BY_KIND[("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding")] = _default_vap_binding


def _default_csr(obj: dict[str, Any]) -> None:
    """certificates/v1 ``SetDefaults_CertificateSigningRequestCondition``: a condition without a
    ``status`` gets ``True``. Nothing else is defaulted in v1 (v1beta1's default ``usages`` and
    ``signerName`` are gone: both are required); ``spec.username``/``uid``/``groups``/``extra``
    are the registry's, filled from the requesting user on create (:mod:`.strategy`)."""
    status = obj.get("status")
    if not isinstance(status, dict) or not isinstance(status.get("conditions"), list):
        return
    for c in status["conditions"]:
        if isinstance(c, dict) and not c.get("status"):
            c["status"] = "True"


_BY_KIND[("certificates.k8s.io/v1", "CertificateSigningRequest")] = _default_csr


def apply_defaults(obj: dict[str, Any]) -> dict[str, Any]:
    """Return a defaulted deep copy of ``obj`` (a wire-form object dict; its
    ``metadata.managedFields`` list is shared, not copied: no defaulting touches it).

    Dispatches on ``apiVersion`` + ``kind``; kinds without upstream defaults
    (ConfigMap, ServiceAccount, Event, ResourceQuota, Lease, IngressClass, …)
    come back as an unchanged copy. Never raises on malformed input: fields of
    an unexpected type are left alone for validation to report. Mirrors the
    ``SetDefaults_*`` functions of pkg/apis/*/v1 (and autoscaling/v2), plus
    the registry-strategy fills documented in the module docstring.
    """
    meta = obj.get("metadata")
    managed = meta.get("managedFields") if type(meta) is dict else None
    if managed:  # no defaulting touches them: not copied (a pod's are ~half its JSON)
        out = copy_object({**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}})
        copied = out["metadata"]
        out["metadata"] = {k: managed if k == "managedFields" else copied[k] for k in meta}
    else:
        out = copy_object(obj)
    fn = _BY_KIND.get((out.get("apiVersion"), out.get("kind")))
    if fn is not None:
        fn(out)
    return out
