"""The PodSecurity admission plugin (Pod Security Standards through namespace labels), as a user of
kube-apiserver 1.33 sees it: the exact 403 of enforce, the ``Warning`` texts of warn, workloads
that are only warned about while their controllers' pods are refused (the ``FailedCreate`` event),
the warnings of a namespace label change about the pods already there (also in a dry run), label
values refused, ephemeral containers checked, and ``k8semu apply`` printing the warning."""

from __future__ import annotations

import json
import re

import pytest

from k8semu.api import errors
from k8semu.api.apiserver import RequestContext
from k8semu.api.podsecurity import (
    Version,
    check_pod,
    forbidden_detail,
    evaluate_pods_in_namespace,
    LevelVersion,
    policy_to_evaluate,
)
from k8semu.sim.cluster import Cluster
from k8semu.sim.components import default_factories
from k8semu.sim.runtime import run_cluster

PSA = "pod-security.kubernetes.io/"
MERGE = "application/merge-patch+json"

NGINX_REASONS = (
    'allowPrivilegeEscalation != false (container "nginx" must set '
    'securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "nginx" must set '
    'securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "nginx" must set '
    'securityContext.runAsNonRoot=true), seccompProfile (pod or container "nginx" must set '
    'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")')
RESTRICTED_NGINX = 'violates PodSecurity "restricted:latest": ' + NGINX_REASONS
WOULD_NGINX = 'would violate PodSecurity "restricted:latest": ' + NGINX_REASONS


def namespace(name, **modes):
    """A Namespace with ``pod-security.kubernetes.io/<mode>`` labels (``enforce_version=…`` for
    ``enforce-version``)."""
    labels = {PSA + k.replace("_", "-"): v for k, v in modes.items()}
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, **({"labels": labels} if labels else {})}}


def pod(name="x", ns="default", containers=None, **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"containers": containers or [{"name": "nginx", "image": "nginx"}], **spec}}


def compliant_pod(name="ok", ns="default"):
    """A pod the restricted level allows: runAsNonRoot and RuntimeDefault seccomp at pod level,
    no privilege escalation, ALL dropped, only NET_BIND_SERVICE added, allowed volume types."""
    return pod(name, ns, containers=[{
        "name": "nginx", "image": "nginx",
        "securityContext": {"allowPrivilegeEscalation": False,
                            "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}},
        "volumeMounts": [{"name": "cache", "mountPath": "/cache"}]}],
        securityContext={"runAsNonRoot": True, "runAsUser": 101, "seccompProfile": {"type": "RuntimeDefault"}},
        volumes=[{"name": "cache", "emptyDir": {}}, {"name": "conf", "configMap": {"name": "c"}}])


def deployment(name="web", ns="default"):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}}


@pytest.fixture
def api():
    return Cluster.create(seed=1).api


# ---- enforce


def test_restricted_refuses_a_plain_pod_with_every_reason_in_upstreams_order(api):
    api.create("namespaces", namespace("r", enforce="restricted"))
    with pytest.raises(errors.Forbidden) as e:
        api.create("pods", pod("x", "r"))
    assert e.value.code == 403 and e.value.reason == "Forbidden"
    assert e.value.message == 'pods "x" is forbidden: ' + RESTRICTED_NGINX
    assert api.list("pods", namespace="r")["items"] == []


def test_baseline_allows_nginx_and_refuses_host_namespaces_privileged_and_host_path(api):
    api.create("namespaces", namespace("b", enforce="baseline", enforce_version="v1.33"))
    api.create("pods", pod("nginx", "b"))  # nothing baseline forbids
    bad = pod("bad", "b", containers=[{"name": "c", "image": "nginx", "securityContext": {"privileged": True},
                                       "ports": [{"containerPort": 80, "hostPort": 8080}]}],
              hostNetwork=True, hostPID=True, volumes=[{"name": "host", "hostPath": {"path": "/etc"}}])
    with pytest.raises(errors.Forbidden) as e:
        api.create("pods", bad)
    assert e.value.message == (
        'pods "bad" is forbidden: violates PodSecurity "baseline:v1.33": host namespaces (hostNetwork=true, '
        'hostPID=true), hostPath volumes (volume "host"), hostPort (container "c" uses hostPort 8080), '
        'privileged (container "c" must not set securityContext.privileged=true)')
    only_host_path = pod("hp", "b", volumes=[{"name": "logs", "hostPath": {"path": "/var/log"}},
                                             {"name": "run", "hostPath": {"path": "/run"}}])
    with pytest.raises(errors.Forbidden) as e:
        api.create("pods", only_host_path)
    assert e.value.message == ('pods "hp" is forbidden: violates PodSecurity "baseline:v1.33": '
                               'hostPath volumes (volumes "logs", "run")')


def test_a_compliant_restricted_pod_is_created_without_warnings(api):
    api.create("namespaces", namespace("r", enforce="restricted", warn="restricted", audit="restricted"))
    ctx = RequestContext(warnings=[])
    out = api.create("pods", compliant_pod("ok", "r"), ctx=ctx)
    # the ServiceAccount plugin's projected token volume is an allowed type
    assert any("projected" in v for v in out["spec"]["volumes"])
    assert ctx.warnings == []


def test_unlabelled_namespaces_are_privileged(api):
    """No AdmissionConfiguration: privileged:latest for every mode, kube-system included."""
    for ns in ("default", "kube-system"):
        ctx = RequestContext(warnings=[])
        api.create("pods", pod("priv", ns, hostNetwork=True, containers=[
            {"name": "c", "image": "nginx", "securityContext": {"privileged": True}}]), ctx=ctx)
        assert ctx.warnings == []


# ---- warn


def test_warn_mode_admits_with_a_warning_and_enforce_denial_has_none(api):
    api.create("namespaces", namespace("w", warn="restricted", warn_version="latest"))
    ctx = RequestContext(warnings=[])
    api.create("pods", pod("x", "w"), ctx=ctx)
    assert ctx.warnings == [WOULD_NGINX]
    assert api.get("pods", "x", namespace="w")
    # enforce baseline + warn restricted: a baseline violation is refused, with no warning added
    api.create("namespaces", namespace("bw", enforce="baseline", warn="restricted"))
    ctx = RequestContext(warnings=[])
    with pytest.raises(errors.Forbidden) as e:
        api.create("pods", pod("h", "bw", hostIPC=True), ctx=ctx)
    assert e.value.message.endswith('violates PodSecurity "baseline:latest": host namespaces (hostIPC=true)')
    assert ctx.warnings == []
    # a pod baseline allows gets the restricted warning
    ctx = RequestContext(warnings=[])
    api.create("pods", pod("n", "bw"), ctx=ctx)
    assert ctx.warnings == [WOULD_NGINX]


# ---- workloads: warned about, never enforced; their pods are


def test_deployment_in_an_enforcing_namespace_is_created_and_its_pods_fail():
    cluster = Cluster.create(seed=2)
    api = cluster.api
    api.create("namespaces", namespace("prod", enforce="restricted", warn="restricted"))
    seen = {}

    async def body(rt):
        ctx = RequestContext(warnings=[])
        api.create("deployments.apps", deployment("web", "prod"), ctx=ctx)
        seen["warnings"] = ctx.warnings
        # a status-less update of the Deployment is evaluated again; its scale subresource is not
        ctx = RequestContext(warnings=[])
        api.update_scale("deployments.apps", "web", 1, namespace="prod", ctx=ctx)
        seen["scale"] = ctx.warnings
        await rt.advance(20)

    run_cluster(cluster, body, default_factories(cluster))
    assert seen["warnings"] == [WOULD_NGINX]
    assert seen["scale"] == []
    assert api.get("deployments.apps", "web", namespace="prod")
    assert api.list("pods", namespace="prod")["items"] == []
    events = [e for e in api.list("events", namespace="prod")["items"]
              if e["involvedObject"]["kind"] == "ReplicaSet" and e["reason"] == "FailedCreate"]
    assert events
    message = events[0]["message"]
    pattern = r'Error creating: pods "web-[0-9a-z]+-[0-9a-z]{5}" is forbidden: ' + re.escape(RESTRICTED_NGINX)
    assert re.fullmatch(pattern, message), message
    rs = api.list("replicasets.apps", namespace="prod")["items"][0]
    failure = next(c for c in rs["status"]["conditions"] if c["type"] == "ReplicaFailure")
    assert failure["reason"] == "FailedCreate" and RESTRICTED_NGINX in failure["message"]


def test_workload_kinds_are_warned_about_on_their_pod_template(api):
    api.create("namespaces", namespace("w", warn="baseline"))
    template = {"metadata": {"labels": {"app": "a"}},
                "spec": {"hostNetwork": True, "containers": [{"name": "c", "image": "nginx"}]}}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "w"},
           "spec": {"template": {**template, "spec": {**template["spec"], "restartPolicy": "Never"}}}}
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj", "namespace": "w"},
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": job["spec"]}}}
    tmpl = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t", "namespace": "w"},
            "template": template}
    expected = ['would violate PodSecurity "baseline:latest": host namespaces (hostNetwork=true)']
    for resource, obj in (("jobs.batch", job), ("cronjobs.batch", cron), ("podtemplates", tmpl)):
        ctx = RequestContext(warnings=[])
        api.create(resource, obj, ctx=ctx)
        assert ctx.warnings == expected, resource


# ---- namespaces


def test_invalid_label_values_are_refused(api):
    with pytest.raises(errors.Invalid) as e:
        api.create("namespaces", namespace("bad", enforce="strict"))
    assert e.value.code == 422
    assert e.value.message == ('Namespace "bad" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: '
                               'Invalid value: "strict": must be one of privileged, baseline, restricted')
    api.create("namespaces", namespace("n"))
    with pytest.raises(errors.Invalid) as e:
        api.patch("namespaces", "n", {"metadata": {"labels": {PSA + "warn-version": "1.30",
                                                             PSA + "audit": "Baseline"}}}, MERGE)
    assert e.value.message == (
        'Namespace "n" is invalid: [metadata.labels[pod-security.kubernetes.io/audit]: Invalid value: "Baseline": '
        'must be one of privileged, baseline, restricted, metadata.labels[pod-security.kubernetes.io/warn-version]: '
        'Invalid value: "1.30": must be "latest" or "v1.x"]')
    assert "labels" not in api.get("namespaces", "n")["metadata"] or \
        PSA + "audit" not in api.get("namespaces", "n")["metadata"]["labels"]


def test_stricter_enforce_label_warns_about_existing_pods_also_in_a_dry_run(api):
    api.create("namespaces", namespace("apps"))
    priv = [{"name": "c", "image": "nginx", "securityContext": {"privileged": True}}]
    api.create("pods", pod("web-b", "apps", containers=priv, hostNetwork=True))
    api.create("pods", pod("web-a", "apps", containers=priv, hostNetwork=True))
    api.create("pods", pod("web-c", "apps", containers=priv, hostNetwork=True))
    api.create("pods", pod("agent", "apps", containers=[{"name": "c", "image": "nginx",
                                                         "ports": [{"containerPort": 80, "hostPort": 80}]}]))
    api.create("pods", pod("plain", "apps"))
    ctx = RequestContext(warnings=[])
    out = api.patch("namespaces", "apps", {"metadata": {"labels": {PSA + "enforce": "baseline"}}}, MERGE,
                    ctx=ctx, dry_run=True)
    assert out["metadata"]["labels"][PSA + "enforce"] == "baseline"
    assert ctx.warnings == [
        'existing pods in namespace "apps" violate the new PodSecurity enforce level "baseline:latest"',
        "agent: hostPort",
        "web-a (and 2 other pods): host namespaces, privileged",
    ]
    assert PSA + "enforce" not in (api.get("namespaces", "apps")["metadata"].get("labels") or {})
    # for real: the same warnings, and the label is there
    ctx = RequestContext(warnings=[])
    api.patch("namespaces", "apps", {"metadata": {"labels": {PSA + "enforce": "baseline"}}}, MERGE, ctx=ctx)
    assert len(ctx.warnings) == 3
    assert api.get("namespaces", "apps")["metadata"]["labels"][PSA + "enforce"] == "baseline"
    # relaxing, re-labelling the same policy or other labels: no pods checked
    for labels in ({PSA + "enforce": "baseline", "team": "a"}, {PSA + "enforce": "privileged"},
                   {PSA + "warn": "restricted"}):
        ctx = RequestContext(warnings=[])
        api.patch("namespaces", "apps", {"metadata": {"labels": labels}}, MERGE, ctx=ctx)
        assert ctx.warnings == [], labels
    # the pods already there keep running: their status and labels may still change
    p = api.get("pods", "plain", namespace="apps")
    api.patch("pods", "plain", {"metadata": {"labels": {"x": "y"}}}, MERGE, namespace="apps")
    ctx = RequestContext(warnings=[])
    api.patch("namespaces", "apps", {"metadata": {"labels": {PSA + "enforce": "restricted"}}}, MERGE, ctx=ctx)
    assert ctx.warnings[0] == \
        'existing pods in namespace "apps" violate the new PodSecurity enforce level "restricted:latest"'
    assert ctx.warnings[1] == ("agent: hostPort, allowPrivilegeEscalation != false, unrestricted capabilities, "
                               "runAsNonRoot != true, seccompProfile")
    assert p["metadata"]["name"] == "plain"
    api.patch("pods", "plain", {"metadata": {"labels": {"x": "z"}}}, MERGE, namespace="apps")
    # but a new image is a significant update
    with pytest.raises(errors.Forbidden):
        api.patch("pods", "plain", {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}},
                  namespace="apps")


def test_ephemeral_containers_are_checked_through_the_subresource(api):
    api.create("namespaces", namespace("b", enforce="baseline"))
    api.create("pods", pod("p", "b"))

    def add(container):
        cur = api.get("pods", "p", namespace="b")
        cur = json.loads(json.dumps(cur))
        cur["spec"]["ephemeralContainers"] = list(cur["spec"].get("ephemeralContainers") or []) + [container]
        return api.update("pods", cur, namespace="b", subresource="ephemeralcontainers")

    debugger = {"name": "debugger", "image": "busybox", "stdin": True, "tty": True, "targetContainerName": "nginx",
                "terminationMessagePolicy": "File", "imagePullPolicy": "Always"}
    with pytest.raises(errors.Forbidden) as e:
        add({**debugger, "securityContext": {"privileged": True}})
    assert e.value.message == ('pods "p" is forbidden: violates PodSecurity "baseline:latest": privileged '
                               '(container "debugger" must not set securityContext.privileged=true)')
    out = add(debugger)  # baseline allows a plain debugger
    assert [c["name"] for c in out["spec"]["ephemeralContainers"]] == ["debugger"]


# ---- the policy itself


def test_check_order_overrides_and_versions():
    spec = {"containers": [{"name": "c", "image": "i", "securityContext": {
        "runAsUser": 0, "capabilities": {"add": ["SYS_ADMIN"]}}}],
        "initContainers": [{"name": "init", "image": "i"}],
        "volumes": [{"name": "h", "hostPath": {"path": "/"}}, {"name": "n", "nfs": {"server": "s", "path": "/"}}]}
    # baseline: the baseline checks by ID
    assert check_pod("baseline", spec, {}) == [
        ("non-default capabilities", 'container "c" must not include "SYS_ADMIN" in securityContext.capabilities.add'),
        ("hostPath volumes", 'volume "h"')]
    # restricted: capabilities and hostPath volumes replaced by their restricted checks
    results = check_pod("restricted", spec, {})
    assert [r for r, _ in results] == ["allowPrivilegeEscalation != false", "unrestricted capabilities",
                                       "restricted volume types", "runAsNonRoot != true", "runAsUser=0",
                                       "seccompProfile"]
    assert dict(results)["unrestricted capabilities"] == (
        'containers "init", "c" must set securityContext.capabilities.drop=["ALL"]; '
        'container "c" must not include "SYS_ADMIN" in securityContext.capabilities.add')
    assert dict(results)["restricted volume types"] == 'volumes "h", "n" use restricted volume types "hostPath", "nfs"'
    # v1.21: no capabilities_restricted yet (the baseline one stays), no runAsUser (v1.23)
    assert [r for r, _ in check_pod("restricted", spec, {}, "v1.21")] == [
        "non-default capabilities", "allowPrivilegeEscalation != false", "restricted volume types",
        "runAsNonRoot != true", "seccompProfile"]
    # seccomp: annotations before v1.19, fields from then on
    meta = {"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}}
    assert check_pod("baseline", {"containers": [{"name": "c"}]}, meta, "v1.18") == [
        ("seccompProfile", 'forbidden annotation seccomp.security.alpha.kubernetes.io/pod="unconfined"')]
    assert check_pod("baseline", {"containers": [{"name": "c"}]}, meta, "v1.19") == []
    # sysctls: the safe set grew at v1.32
    sysctls = {"containers": [{"name": "c"}], "securityContext": {"sysctls": [
        {"name": "net.ipv4.tcp_rmem", "value": "4096 87380 16777216"}, {"name": "kernel.msgmax", "value": "1"}]}}
    assert check_pod("baseline", sysctls, {}, "v1.31") == [("forbidden sysctls", "net.ipv4.tcp_rmem, kernel.msgmax")]
    assert check_pod("baseline", sysctls, {}) == check_pod("baseline", sysctls, {}, Version(1, 40)) == [
        ("forbidden sysctls", "kernel.msgmax")]
    # a Windows pod passes the Linux-only restricted checks from v1.25
    win = {"os": {"name": "windows"}, "securityContext": {"runAsNonRoot": True},
           "containers": [{"name": "c", "securityContext": {"windowsOptions": {"hostProcess": True}}}]}
    assert check_pod("restricted", win, {}) == [
        ("hostProcess", 'container "c" must not set securityContext.windowsOptions.hostProcess=true')]
    assert len(check_pod("restricted", win, {}, "v1.24")) == 4


def test_apparmor_selinux_procmount_and_seccomp_texts():
    spec = {"securityContext": {"appArmorProfile": {"type": "Unconfined"},
                                "seLinuxOptions": {"type": "spc_t", "user": "u"},
                                "seccompProfile": {"type": "Unconfined"}},
            "containers": [{"name": "a", "securityContext": {"procMount": "Unmasked",
                                                             "seccompProfile": {"type": "Unconfined"}}},
                           {"name": "b"}]}
    meta = {"annotations": {"container.apparmor.security.beta.kubernetes.io/b": "unconfined"}}
    results = check_pod(LevelVersion("baseline"), spec, meta)
    assert forbidden_detail(results) == (
        'forbidden AppArmor profiles (pod and annotation must not set AppArmor profile type to "Unconfined", '
        '"container.apparmor.security.beta.kubernetes.io/b="unconfined""), '  # quoted, not escaped
        'procMount (container "a" must not set securityContext.procMount to "Unmasked"), '
        'seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: type "spc_t"; user may not be set), '
        'seccompProfile (pod and container "a" must not set securityContext.seccompProfile.type to "Unconfined")')


def test_policy_labels_resolution():
    policy, errs = policy_to_evaluate({PSA + "enforce": "bogus", PSA + "warn": "bogus", PSA + "audit-version": "v1.2"})
    assert (str(policy.enforce), str(policy.audit), str(policy.warn)) == (
        "restricted:latest", "privileged:v1.2", "privileged:latest")
    assert [e.text() for e in errs] == [
        'metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "bogus": must be one of privileged, '
        'baseline, restricted',
        'metadata.labels[pod-security.kubernetes.io/warn]: Invalid value: "bogus": must be one of privileged, '
        'baseline, restricted']


def test_namespace_pod_check_limits():
    pods = [{"metadata": {"name": f"p{i}", "ownerReferences": [{"uid": f"rs{i % 2}", "controller": True}]},
             "spec": {"hostPID": True, "containers": [{"name": "c"}]}} for i in range(5)]
    assert evaluate_pods_in_namespace("n", pods, LevelVersion("baseline"), max_pods=3) == [
        "new PodSecurity enforce level only checked against the first 3 of 5 existing pods",
        'existing pods in namespace "n" violate the new PodSecurity enforce level "baseline:latest"',
        "p0 (and 2 other pods): host namespaces"]


# ---- the CLI


def test_cli_apply_prints_the_warning(k, tmp_path):
    f = tmp_path / "ns.yaml"
    f.write_text(json.dumps(namespace("dev", warn="restricted")))
    rc, out, err = k("apply", "-f", str(f), "-q")
    assert (rc, err) == (0, [])
    f = tmp_path / "pod.yaml"
    f.write_text(json.dumps(pod("x", "dev")))
    rc, out, err = k("apply", "-f", str(f), "-q")
    assert (rc, out) == (0, ["pod/x created"])
    assert err == ["Warning: " + WOULD_NGINX]


def test_cli_label_and_create_print_the_servers_warnings(k, tmp_path):
    """Every command prints the server's warnings as kubectl does, not only apply: the
    documented ``label --dry-run=server`` check of a namespace's pods, a create's warning."""
    f = tmp_path / "pod.yaml"
    f.write_text(json.dumps({**pod("hostnet", "default"), "spec": {
        "hostNetwork": True, "containers": [{"name": "nginx", "image": "nginx"}]}}))
    assert k("create", "-f", str(f))[0] == 0
    rc, out, err = k("label", "--dry-run=server", "--overwrite", "ns", "default", PSA + "enforce=baseline")
    assert (rc, out) == (0, ["namespace/default labeled (server dry run)"])
    assert err == ['Warning: existing pods in namespace "default" violate the new PodSecurity enforce level '
                   '"baseline:latest"', "Warning: hostnet: host namespaces"]
    assert k("label", "ns", "dev2", PSA + "warn=restricted")[0] == 1  # no such namespace
    assert k("create", "namespace", "dev2")[0] == 0
    assert k("label", "ns", "dev2", PSA + "warn=restricted")[0] == 0
    f.write_text(json.dumps(pod("x", "dev2")))
    rc, out, err = k("create", "-f", str(f))
    assert (rc, out, err) == (0, ["pod/x created"], ["Warning: " + WOULD_NGINX])


def test_real_kubectl_prints_the_warnings_and_the_refusal(tmp_path):
    """Through ``k8semu serve``: kubectl prints each ``Warning`` header, the 403 as ``Error from
    server (Forbidden)``, and the documented ``kubectl label --dry-run=server`` check."""
    from test_kubectl_e2e import KUBECTL, Server

    if KUBECTL is None:
        pytest.skip("kubectl is not on the PATH")
    srv = Server(tmp_path)
    try:
        k = srv.kubectl
        k("create", "namespace", "team")
        k("label", "namespace", "team", PSA + "enforce=baseline", PSA + "warn=restricted")
        out = k("run", "web", "-n", "team", "--image=nginx")
        assert out.stdout == "pod/web created\n"
        assert out.stderr == "Warning: " + WOULD_NGINX.replace('"nginx"', '"web"') + "\n"
        out = k("run", "h", "-n", "team", "--image=nginx", "--overrides", '{"spec":{"hostNetwork":true}}', ok=False)
        assert out.returncode == 1
        assert out.stderr == ('Error from server (Forbidden): pods "h" is forbidden: violates PodSecurity '
                              '"baseline:latest": host namespaces (hostNetwork=true)\n')
        out = k("label", "--dry-run=server", "--overwrite", "ns", "team", PSA + "enforce=restricted")
        assert out.stdout == "namespace/team labeled (server dry run)\n"
        assert out.stderr.splitlines() == [
            'Warning: existing pods in namespace "team" violate the new PodSecurity enforce level '
            '"restricted:latest"',
            "Warning: web: allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, "
            "seccompProfile"]
        labels = json.loads(k("get", "ns", "team", "-o", "json").stdout)["metadata"]["labels"]
        assert labels[PSA + "enforce"] == "baseline"
    finally:
        srv.stop()
