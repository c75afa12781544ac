"""Defaulting as a user sees it in ``kubectl get -o yaml`` right after ``kubectl create``."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, strategies as st

from k8semu.api.defaults import apply_defaults, default_pull_policy, job_prepare_for_create


def _pod(**spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}], **spec}}


def _deploy(**spec):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
                     **spec}}


def test_input_is_not_mutated():
    obj = _deploy()
    before = copy.deepcopy(obj)
    out = apply_defaults(obj)
    assert obj == before
    assert out is not obj


def test_pod_spec_defaults():
    spec = apply_defaults(_pod())["spec"]
    assert spec["restartPolicy"] == "Always"
    assert spec["dnsPolicy"] == "ClusterFirst"
    assert spec["terminationGracePeriodSeconds"] == 30
    assert spec["schedulerName"] == "default-scheduler"
    assert spec["securityContext"] == {}
    assert spec["enableServiceLinks"] is True
    assert "serviceAccountName" not in spec  # admission's job
    assert "priority" not in spec
    c = spec["containers"][0]
    assert c["imagePullPolicy"] == "IfNotPresent"
    assert c["terminationMessagePath"] == "/dev/termination-log"
    assert c["terminationMessagePolicy"] == "File"


@pytest.mark.parametrize("rp", ["Never", "OnFailure", "Always"])
def test_restart_policy_is_kept(rp):
    assert apply_defaults(_pod(restartPolicy=rp))["spec"]["restartPolicy"] == rp


@pytest.mark.parametrize("image,policy", [
    ("nginx", "Always"),
    ("nginx:latest", "Always"),
    ("nginx:1.25", "IfNotPresent"),
    ("registry.k8s.io/pause:3.9", "IfNotPresent"),
    ("localhost:5000/app", "Always"),
    ("localhost:5000/app:v2", "IfNotPresent"),
    ("nginx@sha256:" + "a" * 64, "IfNotPresent"),
    ("nginx:latest@sha256:" + "a" * 64, "Always"),
    ("", "IfNotPresent"),
])
def test_image_pull_policy(image, policy):
    assert default_pull_policy(image) == policy


def test_explicit_pull_policy_kept():
    pod = _pod()
    pod["spec"]["containers"][0]["imagePullPolicy"] = "Never"
    assert apply_defaults(pod)["spec"]["containers"][0]["imagePullPolicy"] == "Never"


def test_container_ports_probes_env_volumes():
    pod = _pod(volumes=[
        {"name": "cm", "configMap": {"name": "x"}},
        {"name": "s", "secret": {"secretName": "x"}},
        {"name": "e", "emptyDir": {}},
        {"name": "h", "hostPath": {"path": "/data"}},
        {"name": "bare"},
        {"name": "tok", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}},
    ])
    c = pod["spec"]["containers"][0]
    c["ports"] = [{"containerPort": 80}, {"containerPort": 53, "protocol": "UDP"}]
    c["livenessProbe"] = {"httpGet": {"port": 80}}
    c["readinessProbe"] = {"tcpSocket": {"port": 80}, "periodSeconds": 5}
    c["env"] = [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
    spec = apply_defaults(pod)["spec"]
    c = spec["containers"][0]
    assert c["ports"] == [{"containerPort": 80, "protocol": "TCP"},
                          {"containerPort": 53, "protocol": "UDP"}]
    assert c["livenessProbe"] == {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
                                  "timeoutSeconds": 1, "periodSeconds": 10,
                                  "successThreshold": 1, "failureThreshold": 3}
    assert c["readinessProbe"]["periodSeconds"] == 5
    assert c["env"][0]["valueFrom"]["fieldRef"] == {"fieldPath": "spec.nodeName", "apiVersion": "v1"}
    vols = {v["name"]: v for v in spec["volumes"]}
    assert vols["cm"]["configMap"]["defaultMode"] == 420
    assert vols["s"]["secret"]["defaultMode"] == 420
    assert vols["e"] == {"name": "e", "emptyDir": {}}
    assert vols["h"]["hostPath"] == {"path": "/data", "type": ""}
    assert vols["bare"] == {"name": "bare", "emptyDir": {}}
    assert vols["tok"]["projected"] == {
        "sources": [{"serviceAccountToken": {"path": "t", "expirationSeconds": 3600}}],
        "defaultMode": 420}


def test_pod_limits_copied_to_requests_only_for_pods():
    res = {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}
    pod = _pod()
    pod["spec"]["containers"][0]["resources"] = res
    out = apply_defaults(pod)["spec"]["containers"][0]["resources"]
    assert out["requests"] == {"cpu": "500m", "memory": "1Gi"}
    # Upstream does this in SetDefaults_Pod, so a pod template keeps its requests as written.
    d = _deploy()
    d["spec"]["template"]["spec"]["containers"][0]["resources"] = res
    tres = apply_defaults(d)["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert tres["requests"] == {"cpu": "500m"}


def test_host_network_defaults_host_port():
    pod = _pod(hostNetwork=True)
    pod["spec"]["containers"][0]["ports"] = [{"containerPort": 8080}]
    port = apply_defaults(pod)["spec"]["containers"][0]["ports"][0]
    assert port == {"containerPort": 8080, "protocol": "TCP", "hostPort": 8080}


def test_deployment_defaults():
    out = apply_defaults(_deploy())
    spec = out["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "RollingUpdate",
                                "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    assert spec["revisionHistoryLimit"] == 10
    assert spec["progressDeadlineSeconds"] == 600
    assert "minReadySeconds" not in spec
    tspec = spec["template"]["spec"]
    assert tspec["restartPolicy"] == "Always"
    assert tspec["containers"][0]["imagePullPolicy"] == "Always"
    assert "enableServiceLinks" not in tspec


def test_deployment_recreate_gets_no_rolling_update():
    out = apply_defaults(_deploy(strategy={"type": "Recreate"}))
    assert out["spec"]["strategy"] == {"type": "Recreate"}


def test_replicaset_and_rc_defaults():
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "r"},
          "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x:1"}]}}}}
    assert apply_defaults(rs)["spec"]["replicas"] == 1
    rc = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "r"},
          "spec": {"template": {"metadata": {"labels": {"app": "nginx"}},
                                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    out = apply_defaults(rc)
    assert out["spec"]["replicas"] == 1
    assert out["spec"]["selector"] == {"app": "nginx"}
    assert out["metadata"]["labels"] == {"app": "nginx"}


def test_statefulset_defaults():
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
           "spec": {"serviceName": "nginx", "selector": {"matchLabels": {"app": "nginx"}},
                    "template": {"metadata": {"labels": {"app": "nginx"}},
                                 "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
                    "volumeClaimTemplates": [{"metadata": {"name": "www"},
                                              "spec": {"accessModes": ["ReadWriteOnce"]}}]}}
    spec = apply_defaults(sts)["spec"]
    assert spec["replicas"] == 1
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["revisionHistoryLimit"] == 10
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    assert spec["volumeClaimTemplates"][0]["spec"]["volumeMode"] == "Filesystem"
    assert spec["volumeClaimTemplates"][0]["status"] == {"phase": "Pending"}


def test_statefulset_on_delete_gets_no_rolling_update():
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "w"},
           "spec": {"updateStrategy": {"type": "OnDelete"}}}
    assert apply_defaults(sts)["spec"]["updateStrategy"] == {"type": "OnDelete"}


def test_daemonset_defaults():
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d"}, "spec": {}}
    spec = apply_defaults(ds)["spec"]
    assert spec["updateStrategy"] == {"type": "RollingUpdate",
                                      "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    assert spec["revisionHistoryLimit"] == 10


def _job(**spec):
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "pi", "image": "perl:5.34"}]}},
                     **spec}}


def test_job_defaults():
    spec = apply_defaults(_job())["spec"]
    assert spec["completions"] == 1
    assert spec["parallelism"] == 1
    assert spec["backoffLimit"] == 6
    assert spec["completionMode"] == "NonIndexed"
    assert spec["suspend"] is False
    assert spec["podReplacementPolicy"] == "TerminatingOrFailed"
    assert "manualSelector" not in spec
    assert spec["template"]["spec"]["restartPolicy"] == "Never"


def test_job_parallel_defaults():
    # Only parallelism given: completions stays unset (work-queue job).
    spec = apply_defaults(_job(parallelism=3))["spec"]
    assert spec["parallelism"] == 3 and "completions" not in spec
    # Only completions given: parallelism defaults to 1.
    spec = apply_defaults(_job(completions=5))["spec"]
    assert spec["parallelism"] == 1 and spec["completions"] == 5
    spec = apply_defaults(_job(backoffLimitPerIndex=1, completionMode="Indexed", completions=3))["spec"]
    assert spec["backoffLimit"] == 2147483647
    spec = apply_defaults(_job(podFailurePolicy={"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}))["spec"]
    assert spec["podReplacementPolicy"] == "Failed"
    assert spec["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"] == "True"


def test_job_prepare_for_create():
    job = apply_defaults(_job())
    out = job_prepare_for_create(job, "1234-uid")
    assert out["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": "1234-uid"}}
    assert out["spec"]["template"]["metadata"]["labels"] == {
        "batch.kubernetes.io/controller-uid": "1234-uid",
        "batch.kubernetes.io/job-name": "pi",
        "controller-uid": "1234-uid",
        "job-name": "pi",
    }
    assert out["metadata"]["labels"] == out["spec"]["template"]["metadata"]["labels"]
    assert "selector" not in job["spec"]  # input untouched
    manual = job_prepare_for_create(apply_defaults(_job(manualSelector=True)), "u")
    assert "selector" not in manual["spec"]


def test_cronjob_defaults():
    cj = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "hello"},
          "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
              "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox:1.28"}]}}}}}}
    spec = apply_defaults(cj)["spec"]
    assert spec["concurrencyPolicy"] == "Allow"
    assert spec["suspend"] is False
    assert spec["successfulJobsHistoryLimit"] == 3
    assert spec["failedJobsHistoryLimit"] == 1
    jspec = spec["jobTemplate"]["spec"]
    assert "backoffLimit" not in jspec and "completions" not in jspec
    tspec = jspec["template"]["spec"]
    assert tspec["dnsPolicy"] == "ClusterFirst"
    assert tspec["containers"][0]["imagePullPolicy"] == "IfNotPresent"


def _svc(**spec):
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"selector": {"app": "x"}, "ports": [{"port": 80}], **spec}}


def test_service_defaults():
    spec = apply_defaults(_svc())["spec"]
    assert spec["type"] == "ClusterIP"
    assert spec["sessionAffinity"] == "None"
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert spec["ipFamilyPolicy"] == "SingleStack"
    assert spec["ipFamilies"] == ["IPv4"]
    assert spec["internalTrafficPolicy"] == "Cluster"
    assert "externalTrafficPolicy" not in spec
    assert "clusterIP" not in spec and "nodePort" not in spec["ports"][0]


def test_service_named_target_port_kept_and_nodeport_policies():
    spec = apply_defaults(_svc(type="NodePort", ports=[{"port": 80, "targetPort": "http"}]))["spec"]
    assert spec["ports"][0]["targetPort"] == "http"
    assert spec["externalTrafficPolicy"] == "Cluster"
    lb = apply_defaults(_svc(type="LoadBalancer"))["spec"]
    assert lb["externalTrafficPolicy"] == "Cluster"
    assert lb["allocateLoadBalancerNodePorts"] is True
    ext = apply_defaults({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "e"},
                          "spec": {"type": "ExternalName", "externalName": "example.com"}})["spec"]
    assert "ipFamilyPolicy" not in ext and "internalTrafficPolicy" not in ext
    affinity = apply_defaults(_svc(sessionAffinity="ClientIP"))["spec"]
    assert affinity["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}


def test_namespace_defaults():
    out = apply_defaults({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "dev"}})
    assert out["status"] == {"phase": "Active"}
    assert "finalizers" not in out.get("spec", {})  # added on create by the strategy, not by defaulting
    assert out["metadata"]["labels"] == {"kubernetes.io/metadata.name": "dev"}


def test_secret_pvc_pv_defaults():
    sec = apply_defaults({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                          "stringData": {"user": "admin"}})
    assert sec["type"] == "Opaque"
    assert sec["data"] == {"user": "YWRtaW4="} and "stringData" not in sec
    pvc = apply_defaults({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"},
                          "spec": {"accessModes": ["ReadWriteOnce"]}})
    assert pvc["spec"]["volumeMode"] == "Filesystem"
    assert pvc["status"] == {"phase": "Pending"}
    pv = apply_defaults({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "v"},
                         "spec": {}})
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert pv["spec"]["volumeMode"] == "Filesystem"
    assert pv["status"] == {"phase": "Pending"}


def test_hpa_defaults():
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "maxReplicas": 5}}
    spec = apply_defaults(hpa)["spec"]
    assert spec["minReplicas"] == 1
    assert spec["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
    assert "behavior" not in spec
    hpa["spec"]["behavior"] = {"scaleDown": {"stabilizationWindowSeconds": 60}}
    behavior = apply_defaults(hpa)["spec"]["behavior"]
    assert behavior["scaleUp"] == {
        "stabilizationWindowSeconds": 0, "selectPolicy": "Max",
        "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                     {"type": "Percent", "value": 100, "periodSeconds": 15}]}
    assert behavior["scaleDown"] == {
        "stabilizationWindowSeconds": 60, "selectPolicy": "Max",
        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


def test_small_kinds():
    pc = apply_defaults({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                         "metadata": {"name": "high"}, "value": 1000})
    assert pc["preemptionPolicy"] == "PreemptLowerPriority"
    es = apply_defaults({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                         "metadata": {"name": "e"}, "addressType": "IPv4", "ports": [{"port": 80}]})
    assert es["ports"] == [{"port": 80, "name": "", "protocol": "TCP"}]
    sc = apply_defaults({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                         "metadata": {"name": "s"}, "provisioner": "x"})
    assert sc["reclaimPolicy"] == "Delete" and sc["volumeBindingMode"] == "Immediate"
    rb = apply_defaults({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                         "metadata": {"name": "b"}, "roleRef": {"kind": "Role", "name": "r"},
                         "subjects": [{"kind": "User", "name": "jane"},
                                      {"kind": "ServiceAccount", "name": "default", "namespace": "x"}]})
    assert rb["roleRef"]["apiGroup"] == "rbac.authorization.k8s.io"
    assert rb["subjects"][0]["apiGroup"] == "rbac.authorization.k8s.io"
    assert rb["subjects"][1]["apiGroup"] == ""
    np = apply_defaults({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                         "metadata": {"name": "n"},
                         "spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53}]}]}})
    assert np["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert np["spec"]["egress"][0]["ports"][0]["protocol"] == "TCP"
    for obj in ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}},
                {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}}):
        assert apply_defaults(obj) == obj


@given(st.dictionaries(st.sampled_from(["replicas", "revisionHistoryLimit", "progressDeadlineSeconds"]),
                       st.integers(0, 1000)))
def test_defaulting_is_idempotent_and_keeps_explicit_values(explicit):
    once = apply_defaults(_deploy(**explicit))
    assert apply_defaults(once) == once
    for key, value in explicit.items():
        assert once["spec"][key] == value
