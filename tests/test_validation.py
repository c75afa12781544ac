"""Validation errors exactly as ``kubectl create`` / ``kubectl apply`` print them."""

from __future__ import annotations

import copy
import pathlib

import pytest
from hypothesis import given, strategies as st
from ruamel.yaml import YAML

from k8semu.api.defaults import apply_defaults, job_prepare_for_create
from k8semu.api.errors import BadRequest, Invalid
from k8semu.api.resources import RESOURCES
from k8semu.api.validation import (
    DNS1123_SUBDOMAIN_MSG, QUANTITY_REGEX_MSG, parse_cron_schedule, validate, validate_or_raise,
)

SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    r"validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS1035 = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


def _prep(obj: dict, ns: str = "default") -> dict:
    out = apply_defaults(obj)
    info = next(r for r in RESOURCES if (r.api_version, r.kind) == (out["apiVersion"], out["kind"]))
    if info.namespaced:
        out["metadata"].setdefault("namespace", ns)
    if out["kind"] == "Job":
        out = job_prepare_for_create(out, "uid-1")
    return out


def _msg(obj: dict, old: dict | None = None) -> str:
    with pytest.raises(Invalid) as exc:
        validate_or_raise(obj, old)
    return exc.value.message


def _ok(obj: dict, old: dict | None = None) -> None:
    assert [e.text() for e in validate(obj, old)] == []


def _pod(**spec):
    return _prep({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                  "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec}})


def _deploy(labels=None, sel=None, **spec):
    return _prep({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                  "spec": {"selector": {"matchLabels": sel or {"app": "web"}},
                           "template": {"metadata": {"labels": labels or {"app": "web"}},
                                        "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
                           **spec}})


# ------------------------------------------------------------------ metadata


def test_name_rules():
    bad = _pod()
    bad["metadata"]["name"] = "Web_1"
    assert _msg(bad) == f'Pod "Web_1" is invalid: metadata.name: Invalid value: "Web_1": {SUBDOMAIN}'
    assert DNS1123_SUBDOMAIN_MSG == SUBDOMAIN
    ns = _prep({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a.b"}})
    assert _msg(ns) == f'Namespace "a.b" is invalid: metadata.name: Invalid value: "a.b": {LABEL}'
    svc = _prep({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "1svc"},
                 "spec": {"ports": [{"port": 80}]}})
    assert _msg(svc) == f'Service "1svc" is invalid: metadata.name: Invalid value: "1svc": {DNS1035}'
    role = _prep({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                  "metadata": {"name": "system:a/b"}, "rules": []})
    assert _msg(role) == ('ClusterRole.rbac.authorization.k8s.io "system:a/b" is invalid: '
                          "metadata.name: Invalid value: \"system:a/b\": may not contain '/'")
    _ok(_prep({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": "system:Controller"}}))
    long = _pod()
    long["metadata"]["name"] = "a" * 254
    assert "metadata.name: Invalid value: \"" + "a" * 254 + "\": must be no more than 253 characters" \
        in _msg(long)


def test_name_required_unless_generate_name():
    pod = _pod()
    del pod["metadata"]["name"]
    assert _msg(pod) == 'Pod "" is invalid: metadata.name: Required value: name or generateName is required'
    pod["metadata"]["generateName"] = "web-"
    _ok(pod)
    pod["metadata"]["generateName"] = "Web-"
    assert 'metadata.generateName: Invalid value: "Web-": ' + SUBDOMAIN in _msg(pod)


def test_namespace_rules():
    pod = _pod()
    del pod["metadata"]["namespace"]
    assert _msg(pod) == 'Pod "p" is invalid: metadata.namespace: Required value'
    ns = _prep({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a", "namespace": "x"}})
    assert _msg(ns) == 'Namespace "a" is invalid: metadata.namespace: Forbidden: not allowed on this type'
    with pytest.raises(BadRequest) as exc:
        validate_or_raise(_pod(), request_namespace="other")
    assert exc.value.message == ("the namespace of the provided object does not match the namespace "
                                 "sent on the request")


def test_labels_and_annotations():
    pod = _pod()
    pod["metadata"]["labels"] = {"bad key": "v", "ok": "-bad"}
    msg = _msg(pod)
    assert msg.startswith('Pod "p" is invalid: [metadata.labels: Invalid value: "bad key": name part '
                          "must consist of alphanumeric characters, '-', '_' or '.', and must start and "
                          "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
                          "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?"
                          "[A-Za-z0-9]')")
    assert ('metadata.labels: Invalid value: "-bad": a valid label must be an empty string or consist '
            "of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
            "character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
            "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')") in msg
    pod["metadata"]["labels"] = {"Example.com/x": "v"}
    assert "prefix part " + SUBDOMAIN in _msg(pod)
    pod["metadata"]["labels"] = {"a/b/c": "v"}
    assert "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')" in _msg(pod)
    pod["metadata"]["labels"] = {"app": "x" * 64}
    assert "must be no more than 63 characters" in _msg(pod)
    pod["metadata"]["labels"] = {}
    pod["metadata"]["annotations"] = {"a": "b" * (256 * 1024)}
    assert _msg(pod) == 'Pod "p" is invalid: metadata.annotations: Too long: must have at most 262144 bytes'
    pod["metadata"]["annotations"] = {"a": "b" * (256 * 1024 - 2), "UPPER/Case": ""}
    assert "metadata.annotations" in _msg(pod)  # upper-case prefix is lowered before the check
    pod["metadata"]["annotations"] = {"Example.com/Key": "b"}
    _ok(pod)


@given(st.from_regex(r"[a-z0-9]([-a-z0-9]{0,40}[a-z0-9])?", fullmatch=True))
def test_valid_dns_labels_are_accepted_everywhere(name):
    pod = _pod()
    pod["metadata"]["name"] = name
    pod["spec"]["containers"][0]["name"] = name
    assert validate(pod) == []


# ------------------------------------------------------------------ pods


def test_pod_containers_required_and_names():
    assert _msg(_pod(containers=[])) == 'Pod "p" is invalid: spec.containers: Required value'
    pod = _pod(containers=[{"name": "a", "image": "x"}, {"name": "a", "image": "y"},
                           {"name": "B", "image": ""}])
    msg = _msg(pod)
    assert 'spec.containers[1].name: Duplicate value: "a"' in msg
    assert f'spec.containers[2].name: Invalid value: "B": {LABEL}' in msg
    assert "spec.containers[2].image: Required value" in msg


def test_pod_ports():
    pod = _pod()
    pod["spec"]["containers"][0]["ports"] = [
        {"containerPort": 70000}, {"containerPort": 80, "protocol": "HTTP", "name": "web"},
        {"containerPort": 81, "name": "web"}, {"containerPort": 82, "name": "Bad_Name"}]
    msg = _msg(pod)
    assert ("spec.containers[0].ports[0].containerPort: Invalid value: 70000: "
            "must be between 1 and 65535, inclusive") in msg
    assert ('spec.containers[0].ports[1].protocol: Unsupported value: "HTTP": '
            'supported values: "SCTP", "TCP", "UDP"') in msg
    assert 'spec.containers[0].ports[2].name: Duplicate value: "web"' in msg
    assert ('spec.containers[0].ports[3].name: Invalid value: "Bad_Name": must contain only '
            "alpha-numeric characters (a-z, 0-9), and hyphens (-)") in msg


def test_resources_requests_le_limits():
    pod = _pod()
    pod["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1"}, "requests": {"cpu": "2"}}
    assert _msg(pod) == ('Pod "p" is invalid: spec.containers[0].resources.requests: Invalid value: "2": '
                         "must be less than or equal to cpu limit of 1")
    pod["spec"]["containers"][0]["resources"] = {"limits": {"memory": "1Gi"}, "requests": {"memory": "1025Mi"}}
    assert "must be less than or equal to memory limit of 1Gi" in _msg(pod)
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "-1"}}
    assert _msg(pod) == ('Pod "p" is invalid: spec.containers[0].resources.requests[cpu]: '
                         'Invalid value: "-1": must be greater than or equal to 0')
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpus": "1"}}
    assert ('spec.containers[0].resources.requests[cpus]: Invalid value: "cpus": '
            "must be a standard resource for containers") in _msg(pod)
    pod["spec"]["containers"][0]["resources"] = {"limits": {"cpu": 0.5, "memory": 1024}}
    _ok(pod)


def test_bad_quantity_is_a_decode_error():
    pod = _pod()
    pod["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "one"}}
    errs = validate(pod)
    assert [e.text() for e in errs] == [
        f'spec.containers[0].resources.limits[cpu]: Invalid value: "one": {QUANTITY_REGEX_MSG}']
    assert QUANTITY_REGEX_MSG == ("quantities must match the regular expression "
                                  "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    with pytest.raises(BadRequest) as exc:
        validate_or_raise(pod)
    assert exc.value.message == f'Pod in version "v1" cannot be handled as a Pod: {QUANTITY_REGEX_MSG}'
    quota = _prep({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
                   "spec": {"hard": {"pods": "10x"}}})
    assert validate(quota)[0].field == "spec.hard[pods]"


def test_restart_and_dns_policy():
    assert _msg(_pod(restartPolicy="Sometimes")) == (
        'Pod "p" is invalid: spec.restartPolicy: Unsupported value: "Sometimes": '
        'supported values: "Always", "OnFailure", "Never"')
    assert _msg(_pod(dnsPolicy="Cluster")) == (
        'Pod "p" is invalid: spec.dnsPolicy: Unsupported value: "Cluster": '
        'supported values: "ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"')


def test_probes():
    pod = _pod()
    c = pod["spec"]["containers"][0]
    c["livenessProbe"] = {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
                          "periodSeconds": -1, "successThreshold": 2}
    c["readinessProbe"] = {"periodSeconds": 10}
    msg = _msg(pod)
    assert ("spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: "
            "must be greater than or equal to 0") in msg
    assert "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1" in msg
    assert "spec.containers[0].readinessProbe: Required value: must specify a handler type" in msg


def test_volumes_and_mounts():
    pod = _pod(volumes=[{"name": "data", "emptyDir": {}}, {"name": "data", "emptyDir": {}}])
    pod["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "data", "mountPath": "/d"}, {"name": "cache", "mountPath": "/d"}]
    msg = _msg(pod)
    assert 'spec.volumes[1].name: Duplicate value: "data"' in msg
    assert 'spec.containers[0].volumeMounts[1].name: Not found: "cache"' in msg
    assert 'spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/d": must be unique' in msg


def test_tolerations():
    pod = _pod(tolerations=[
        {"operator": "Equal", "value": "x"},
        {"key": "k", "operator": "Exists", "value": "v"},
        {"key": "k", "operator": "Is", "effect": "NoSchedule"},
        {"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5},
        {"key": "k", "operator": "Exists", "effect": "Sometimes"},
    ])
    msg = _msg(pod)
    assert ('spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` '
            'is empty, which means "match all values and all keys"') in msg
    assert ("spec.tolerations[1].operator: Invalid value: core.Toleration{Key:\"k\", Operator:\"Exists\", "
            "Value:\"v\", Effect:\"\", TolerationSeconds:(*int64)(nil)}: value must be empty when "
            "`operator` is 'Exists'") in msg
    assert ('spec.tolerations[2].operator: Unsupported value: "Is": supported values: "Equal", "Exists"'
            in msg)
    assert ("spec.tolerations[3].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when "
            "`tolerationSeconds` is set") in msg
    assert ('spec.tolerations[4].effect: Unsupported value: "Sometimes": supported values: '
            '"NoSchedule", "PreferNoSchedule", "NoExecute"') in msg


def test_pod_update_rules():
    old = _pod(tolerations=[{"key": "a", "operator": "Exists", "effect": "NoExecute",
                             "tolerationSeconds": 60}], activeDeadlineSeconds=100)
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["image"] = "nginx:1.26"
    new["spec"]["activeDeadlineSeconds"] = 50
    new["spec"]["tolerations"][0]["tolerationSeconds"] = 30
    new["spec"]["tolerations"].append({"key": "b", "operator": "Exists"})
    _ok(new, old)
    changed = copy.deepcopy(old)
    changed["spec"]["containers"][0]["ports"] = [{"containerPort": 8080, "protocol": "TCP"}]
    msg = _msg(changed, old)
    assert msg.startswith(
        'Pod "p" is invalid: spec: Forbidden: pod updates may not change fields other than '
        "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
        "`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
        "(allow it to be set to 1 if it was previously negative)\n")
    more = copy.deepcopy(old)
    more["spec"]["activeDeadlineSeconds"] = 200
    assert _msg(more, old) == ('Pod "p" is invalid: spec.activeDeadlineSeconds: Invalid value: 200: '
                               "must be less than or equal to previous value")
    removed = copy.deepcopy(old)
    removed["spec"]["tolerations"] = []
    assert _msg(removed, old) == ('Pod "p" is invalid: spec.tolerations: Forbidden: existing toleration '
                                  "can not be modified except its tolerationSeconds")
    extra = copy.deepcopy(old)
    extra["spec"]["containers"].append({"name": "d", "image": "x"})
    assert "spec.containers: Forbidden: pod updates may not add or remove containers" in _msg(extra, old)
    renamed = copy.deepcopy(old)
    renamed["metadata"]["name"] = "q"
    assert 'metadata.name: Invalid value: "q": field is immutable' in _msg(renamed, old)


# ------------------------------------------------------------------ workloads


def test_deployment_selector_must_match_template():
    assert _msg(_deploy(labels={"app": "x"})) == (
        'Deployment.apps "web" is invalid: spec.template.metadata.labels: Invalid value: '
        'map[string]string{"app":"x"}: `selector` does not match template `labels`')
    d = _deploy()
    del d["spec"]["selector"]
    # a missing selector is LabelSelectorAsSelector's Nothing: the template cannot match it either
    assert _msg(d) == (
        'Deployment.apps "web" is invalid: [spec.selector: Required value, spec.template.metadata.labels: '
        'Invalid value: map[string]string{"app":"web"}: `selector` does not match template `labels`]')
    e = _deploy()
    e["spec"]["selector"] = {}
    assert ('spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), '
            'MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment'
            ) in _msg(e)
    two = _deploy(labels={"app": "web", "tier": "fe"}, sel={"app": "web"})
    _ok(two)


def test_deployment_selector_immutable_and_replicas():
    old = _deploy()
    new = _deploy(labels={"app": "web", "v": "2"}, sel={"app": "web", "v": "2"})
    assert _msg(new, old) == (
        'Deployment.apps "web" is invalid: spec.selector: Invalid value: v1.LabelSelector{'
        'MatchLabels:map[string]string{"app":"web", "v":"2"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable")
    assert _msg(_deploy(replicas=-1)) == (
        'Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1: '
        "must be greater than or equal to 0")


def test_deployment_rolling_update_params():
    d = _deploy(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}})
    assert _msg(d) == (
        'Deployment.apps "web" is invalid: spec.strategy.rollingUpdate.maxUnavailable: Invalid value: '
        'intstr.IntOrString{Type:0, IntVal:0, StrVal:""}: may not be 0 when `maxSurge` is 0')
    d = _deploy(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "abc", "maxUnavailable": "150%"}})
    msg = _msg(d)
    assert ('spec.strategy.rollingUpdate.maxSurge: Invalid value: intstr.IntOrString{Type:1, IntVal:0, '
            "StrVal:\"abc\"}: a valid percent string must be a numeric string followed by an ending '%' "
            "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')") in msg
    assert ('spec.strategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, '
            'IntVal:0, StrVal:"150%"}: must not be greater than 100%') in msg
    _ok(_deploy(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}))


def test_workload_template_restart_policy():
    d = _deploy()
    d["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    assert _msg(d) == ('Deployment.apps "web" is invalid: spec.template.spec.restartPolicy: '
                       'Unsupported value: "OnFailure": supported values: "Always"')


def _ds(**spec):
    return _prep({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
                  "spec": {"selector": {"matchLabels": {"app": "a"}},
                           "template": {"metadata": {"labels": {"app": "a"}},
                                        "spec": {"containers": [{"name": "c", "image": "x:1"}]}},
                           **spec}})


def test_daemonset_and_statefulset():
    ds = _ds(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}})
    assert _msg(ds) == ('DaemonSet.apps "agent" is invalid: spec.updateStrategy.rollingUpdate.maxUnavailable: '
                        "Required value: cannot be 0 when maxSurge is 0")
    _ok(_ds())
    sts = _prep({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
                 "spec": {"serviceName": "web", "selector": {"matchLabels": {"app": "w"}},
                          "template": {"metadata": {"labels": {"app": "w"}},
                                       "spec": {"containers": [{"name": "c", "image": "x:1",
                                                                "volumeMounts": [{"name": "www",
                                                                                  "mountPath": "/w"}]}]}},
                          "volumeClaimTemplates": [{"metadata": {"name": "www"},
                                                    "spec": {"accessModes": ["ReadWriteOnce"],
                                                             "resources": {"requests": {"storage": "1Gi"}}}}]}})
    _ok(sts)
    new = copy.deepcopy(sts)
    new["spec"]["serviceName"] = "other"
    assert _msg(new, sts) == (
        'StatefulSet.apps "web" is invalid: spec: Forbidden: updates to statefulset spec for fields other '
        "than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' "
        "and 'minReadySeconds' are forbidden")
    new = copy.deepcopy(sts)
    new["spec"]["replicas"] = 3
    _ok(new, sts)


def _job(**spec):
    return _prep({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi"},
                  "spec": {"template": {"spec": {"restartPolicy": "Never",
                                                 "containers": [{"name": "pi", "image": "perl"}]}},
                           **spec}})


def test_job_rules():
    _ok(_job())
    bad = _job(parallelism=-1)
    bad["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    msg = _msg(bad)
    assert msg.startswith('Job.batch "pi" is invalid: [')
    assert "spec.parallelism: Invalid value: -1: must be greater than or equal to 0" in msg
    assert ('spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: '
            '"OnFailure", "Never"') in msg
    old = _job()
    new = copy.deepcopy(old)
    new["spec"]["selector"]["matchLabels"]["x"] = "y"
    assert 'spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{' \
           '"batch.kubernetes.io/controller-uid":"uid-1", "x":"y"}' in _msg(new, old)
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "perl:2"
    assert "spec.template: Invalid value: core.PodTemplateSpec{…}: field is immutable" in _msg(new, old)


def _cron(schedule="*/5 * * * *", **spec):
    return _prep({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "hello"},
                  "spec": {"schedule": schedule, "jobTemplate": {"spec": {"template": {"spec": {
                      "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}},
                      **spec}})


@pytest.mark.parametrize("schedule", ["*/5 * * * *", "0 0 1 jan-mar mon-fri", "@hourly", "@every 1h30m",
                                      "0 0 * * ?", "TZ=UTC 0 * * * *", "5,10-20/5 0-23 1-31 1-12 0-6"])
def test_cron_ok(schedule):
    _ok(_cron(schedule))


@pytest.mark.parametrize("schedule,err", [
    ("bad", "expected exactly 5 fields, found 1: [bad]"),
    ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
    ("61 * * * *", "end of range (61) above maximum (59): 61"),
    ("0 0 0 * *", "beginning of range (0) below minimum (1): 0"),
    ("0 0 * * 7", "end of range (7) above maximum (6): 7"),
    ("5-2 * * * *", "beginning of range (5) beyond end of range (2): 5-2"),
    ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
    ("*/0 * * * *", "step of range should be a positive number: */0"),
    ("@weekdays", "unrecognized descriptor: @weekdays"),
    ("@every soon", 'failed to parse duration @every soon: time: invalid duration "soon"'),
])
def test_cron_errors(schedule, err):
    with pytest.raises(ValueError) as exc:
        parse_cron_schedule(schedule)
    assert str(exc.value) == err
    assert _msg(_cron(schedule)) == (
        f'CronJob.batch "hello" is invalid: spec.schedule: Invalid value: "{schedule}": {err}')


def test_cron_misc():
    assert _msg(_cron(timeZone="Mars/Olympus")) == (
        'CronJob.batch "hello" is invalid: spec.timeZone: Invalid value: "Mars/Olympus": '
        "unknown time zone Mars/Olympus")
    _ok(_cron(timeZone="Europe/Berlin"))
    cj = _cron()
    cj["spec"]["schedule"] = ""
    assert _msg(cj) == 'CronJob.batch "hello" is invalid: spec.schedule: Required value'
    cj = _cron(concurrencyPolicy="Sometimes")
    assert ('spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: '
            '"Allow", "Forbid", "Replace"') in _msg(cj)
    cj = _cron()
    cj["metadata"]["name"] = "c" * 53
    assert "must be no more than 52 characters" in _msg(cj)


# ------------------------------------------------------------------ services


def _svc(**spec):
    return _prep({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                  "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}], **spec}})


def test_service_rules():
    _ok(_svc())
    assert _msg(_svc(ports=[])) == 'Service "web" is invalid: spec.ports: Required value'
    _ok(_svc(ports=[], clusterIP="None"))
    two = _svc(ports=[{"port": 80}, {"port": 443, "name": "https"}, {"port": 0, "name": "https",
                                                                       "protocol": "ICMP"}])
    msg = _msg(two)
    assert "spec.ports[0].name: Required value" in msg
    assert 'spec.ports[2].name: Duplicate value: "https"' in msg
    assert "spec.ports[2].port: Invalid value: 0: must be between 1 and 65535, inclusive" in msg
    assert 'spec.ports[2].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"' in msg
    assert _msg(_svc(type="Internal")) == (
        'Service "web" is invalid: spec.type: Unsupported value: "Internal": supported values: '
        '"ClusterIP", "ExternalName", "LoadBalancer", "NodePort"')
    np = _svc(type="NodePort", ports=[{"port": 80, "nodePort": 8080}])
    assert _msg(np) == ('Service "web" is invalid: spec.ports[0].nodePort: Invalid value: 8080: provided '
                        "port is not in the valid range. The range of valid ports is 30000-32767")
    _ok(_svc(type="NodePort", ports=[{"port": 80, "nodePort": 30080}]))
    cip = _svc(ports=[{"port": 80, "nodePort": 30080}])
    assert "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'" in _msg(cip)


def test_service_cluster_ip_is_immutable():
    old = _svc(clusterIP="10.96.0.10", clusterIPs=["10.96.0.10"])
    new = _svc(clusterIP="10.96.0.11", clusterIPs=["10.96.0.11"])
    assert _msg(new, old) == ('Service "web" is invalid: spec.clusterIPs[0]: Invalid value: '
                              '[]string{"10.96.0.11"}: may not change once set')
    _ok(copy.deepcopy(old), old)


# ------------------------------------------------------------------ config, rbac, others


def test_configmap_and_secret_keys_and_immutability():
    cm = _prep({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                "data": {"bad key": "v", "good.key": "v"}})
    assert _msg(cm) == (
        'ConfigMap "c" is invalid: data[bad key]: Invalid value: "bad key": a valid config key must '
        "consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or "
        "'key-name', regex used for validation is '[-._a-zA-Z0-9]+')")
    old = _prep({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                 "data": {"a": "1"}, "immutable": True})
    new = copy.deepcopy(old)
    new["data"]["a"] = "2"
    assert _msg(new, old) == ('ConfigMap "c" is invalid: data: Forbidden: field is immutable when '
                              "`immutable` is set")
    new = copy.deepcopy(old)
    new["immutable"] = False
    assert "immutable: Forbidden: field is immutable when `immutable` is set" in _msg(new, old)
    sec = _prep({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                 "type": "kubernetes.io/tls", "data": {"tls.crt": "eA=="}})
    assert _msg(sec) == 'Secret "s" is invalid: data[tls.key]: Required value'
    old = _prep({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"..a": "eA=="}})
    assert "must not start with '..'" in _msg(old)


def test_rbac_rules_and_bindings():
    role = _prep({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                  "metadata": {"name": "r"}, "rules": [{"apiGroups": [""], "resources": ["pods"]}]})
    assert _msg(role) == ('Role.rbac.authorization.k8s.io "r" is invalid: rules[0].verbs: Required value: '
                          "verbs must contain at least one value")
    crb = _prep({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                 "metadata": {"name": "b"}, "roleRef": {"kind": "Role", "name": "r"},
                 "subjects": [{"kind": "ServiceAccount", "name": "default"}]})
    msg = _msg(crb)
    assert 'roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"' in msg
    assert "subjects[0].namespace: Required value" in msg
    rb = _prep({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "b"}, "roleRef": {"kind": "Role", "name": "r"},
                "subjects": [{"kind": "User", "name": "jane"}]})
    _ok(rb)
    new = copy.deepcopy(rb)
    new["roleRef"]["name"] = "other"
    assert _msg(new, rb) == (
        'RoleBinding.rbac.authorization.k8s.io "b" is invalid: roleRef: Invalid value: rbac.RoleRef{'
        'APIGroup:"rbac.authorization.k8s.io", Kind:"Role", Name:"other"}: cannot change roleRef')


def test_hpa_and_pvc():
    hpa = _prep({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
                 "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"},
                          "minReplicas": 5, "maxReplicas": 2}})
    assert _msg(hpa) == ('HorizontalPodAutoscaler.autoscaling "h" is invalid: spec.maxReplicas: '
                         "Invalid value: 2: must be greater than or equal to `minReplicas`")
    pvc = _prep({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"},
                 "spec": {"resources": {"requests": {"storage": "1Gi"}}}})
    assert _msg(pvc) == ('PersistentVolumeClaim "c" is invalid: spec.accessModes: Required value: '
                         "at least 1 access mode is required")


# ------------------------------------------------------------------ the documentation's manifests

CASES = pathlib.Path("/work/shared/cases")
# Manifests a real cluster rejects as well: a template with an unexpanded "$ITEM" name, a
# snippet without metadata.name whose pod template lacks restartPolicy (defaults to Always), and a
# pod with ephemeral containers (its own comment says they cannot be set on create).
KNOWN_INVALID = {"application/job/job-tmpl.yaml", "controllers/job-success-policy-example.yaml",
                 "pods/security/seccomp/fields.yaml"}


def _case_docs():
    served = {(r.api_version, r.kind) for r in RESOURCES}
    y = YAML(typ="safe")
    for root in (CASES / "website", CASES / "examples"):
        for p in sorted(root.rglob("*.y*ml")):
            try:
                docs = list(y.load_all(p.read_text()))
            except Exception:
                continue
            for d in docs:
                if isinstance(d, dict) and (d.get("apiVersion"), d.get("kind")) in served:
                    yield str(p.relative_to(root)), d


@pytest.mark.skipif(not CASES.exists(), reason="shared cases not present")
def test_documentation_manifests_validate():
    seen, failures = 0, {}
    for rel, doc in _case_docs():
        doc = dict(doc)
        doc["metadata"] = dict(doc.get("metadata") or {})
        errs = validate(_prep(doc))
        seen += 1
        if errs:
            failures[rel] = [e.text()[:120] for e in errs]
    assert seen > 150
    assert set(failures) == KNOWN_INVALID, failures
