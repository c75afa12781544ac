"""The environment and volume contents the kubelet gives containers, as a user sees them.

Containers get upstream's environment (service links, ``HOSTNAME``, ``$(VAR)``
expansion, downward API, ConfigMaps and Secrets), the files of their volumes
(ConfigMap/Secret/downward API/projected keys, an ``emptyDir`` shared with init
containers, the node's files through ``hostPath``), and wait as a real kubelet
makes them wait when a ConfigMap or Secret is missing. Everything is checked
through the CLI (``apply``, ``get``, ``logs``, ``events``) on virtual time.
"""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
from pathlib import Path

import pytest
from conftest import Kubectl

from k8semu.cli.main import main
from k8semu.node import envvars
from k8semu.node.behaviour import Mount, build_program


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    """A fresh default cluster (one control-plane node, three workers), once per module."""
    path = tmp_path_factory.mktemp("env") / "cluster.log"
    with contextlib.redirect_stdout(None):
        assert main(["--cluster", str(path), "cluster", "create", "--bare"]) == 0
    return path


@pytest.fixture
def kc(bare, tmp_path, capsys):
    path = tmp_path / "cluster.log"
    shutil.copy(bare, path)
    return Kubectl(path, capsys)


def apply(kc: Kubectl, tmp_path: Path, *docs: dict, run_for: str = "30s") -> None:
    f = tmp_path / f"m{len(list(tmp_path.glob('m*.json')))}.json"
    f.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(docs)}))
    rc, _, err = kc("apply", "-f", str(f), "--for", run_for, "-q")
    assert rc == 0, err


def pod(name: str, command: list[str], **spec) -> dict:
    container = {"name": "c", "image": "busybox:1.36", "command": command}
    for key in ("env", "envFrom", "volumeMounts", "resources"):
        if key in spec:
            container[key] = spec.pop(key)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "demo"}},
            "spec": {"containers": [container], "restartPolicy": "Never", **spec}}


def config_map(name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def secret(name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


def service(name: str, ports: list[dict]) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"selector": {"app": "nothing"}, "ports": ports}}


def logs(kc: Kubectl, name: str) -> list[str]:
    rc, out, err = kc("logs", name)
    assert rc == 0, err
    return out


def state(kc: Kubectl, name: str) -> dict:
    p = next(p for p in kc.objects("pods") if p["metadata"]["name"] == name)
    return p


def _first(e: dict) -> str:
    """When an Event was first seen, in seconds: ``firstTimestamp``, or the scheduler's (events.k8s.io,
    no firstTimestamp) ``eventTime``."""
    return e.get("firstTimestamp") or e["eventTime"][:19] + "Z"


def events(kc: Kubectl, name: str) -> list[dict]:
    evs = [e for e in kc.objects("events") if e["involvedObject"]["name"] == name]
    return sorted(evs, key=lambda e: (_first(e), e["metadata"]["name"]))


def kubernetes_ip(kc: Kubectl) -> str:
    c = kc.api()
    try:
        return c.api.get("services", "kubernetes", namespace="default")["spec"]["clusterIP"]
    finally:
        c.close()


# --------------------------------------------------------------------------- environment

def test_printenv_sees_hostname_and_the_service_link_variables(kc, tmp_path):
    apply(kc, tmp_path, service("web-front", [{"name": "http", "port": 80, "targetPort": 8080},
                                              {"name": "dns", "port": 53, "protocol": "UDP"}]))
    apply(kc, tmp_path, pod("command-demo", ["printenv", "HOSTNAME", "KUBERNETES_PORT", "KUBERNETES_SERVICE_HOST",
                                             "WEB_FRONT_SERVICE_PORT", "WEB_FRONT_SERVICE_PORT_DNS",
                                             "WEB_FRONT_PORT", "WEB_FRONT_PORT_53_UDP_PROTO",
                                             "WEB_FRONT_PORT_80_TCP_ADDR"]))
    assert state(kc, "command-demo")["status"]["phase"] == "Succeeded"
    svc_ip = next(s for s in kc.objects("services") if s["metadata"]["name"] == "web-front")["spec"]["clusterIP"]
    kip = kubernetes_ip(kc)
    assert logs(kc, "command-demo") == ["command-demo", f"tcp://{kip}:443", kip, "80", "53",
                                        f"tcp://{svc_ip}:80", "udp", svc_ip]


def test_without_service_links_only_the_kubernetes_service_is_injected(kc, tmp_path):
    apply(kc, tmp_path, service("web", [{"port": 80}]))
    apply(kc, tmp_path, pod("p", ["sh", "-c", 'echo "[$KUBERNETES_SERVICE_PORT] [${WEB_SERVICE_HOST-unset}]"'],
                            enableServiceLinks=False))
    assert logs(kc, "p") == ["[443] [unset]"]


def test_logs_replay_the_environment_the_container_started_with(kc, tmp_path):
    apply(kc, tmp_path, pod("early", ["sh", "-c", "sleep 20; env | grep -c _SERVICE_HOST; "
                                                  "echo ${LATE_SERVICE_HOST-no late service}"]), run_for="10s")
    assert "running" in state(kc, "early")["status"]["containerStatuses"][0]["state"]
    apply(kc, tmp_path, service("late", [{"port": 80}]))  # after the container started: not in its env
    assert state(kc, "early")["status"]["phase"] == "Succeeded"
    assert logs(kc, "early") == ["1", "no late service"]


def test_values_field_refs_and_resource_refs(kc, tmp_path):
    env = [
        {"name": "GREETING", "value": "Warm greetings to"},
        {"name": "HONORIFIC", "value": "The Most Honorable"},
        {"name": "NAME", "value": "Kubernetes"},
        {"name": "MESSAGE", "value": "$(GREETING) $(HONORIFIC) $(NAME) $(UNDEFINED) $$(NAME)"},
        {"name": "MY_POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "MY_POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "MY_APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
        {"name": "MY_NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "MY_POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "MY_HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
        {"name": "MY_SA", "valueFrom": {"fieldRef": {"fieldPath": "spec.serviceAccountName"}}},
        {"name": "MY_CPU_REQUEST", "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu", "divisor": "1m"}}},
        {"name": "MY_CPU_LIMIT", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
        {"name": "MY_MEM_LIMIT", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
    ]
    names = [e["name"] for e in env[3:]]
    resources = {"requests": {"cpu": "125m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}}
    apply(kc, tmp_path, pod("dapi-envars-fieldref", ["printenv", *names], env=env, resources=resources),
          pod("expanded", ["echo", "$(MY_POD_NAME):", "$(MESSAGE)"], env=env, resources=resources))
    p = state(kc, "dapi-envars-fieldref")
    node = next(n for n in kc.objects("nodes", None) if n["metadata"]["name"] == p["spec"]["nodeName"])
    msg = "Warm greetings to The Most Honorable Kubernetes $(UNDEFINED) $(NAME)"
    assert logs(kc, "expanded") == [f"expanded: {msg}"]
    assert logs(kc, "dapi-envars-fieldref") == [
        msg, "dapi-envars-fieldref", "default", "demo", p["spec"]["nodeName"], p["status"]["podIP"],
        p["status"]["hostIP"], "default", "125",
        node["status"]["allocatable"]["cpu"],  # no CPU limit: the node's allocatable
        "64"]


def test_hostname_is_the_runtimes_and_not_expanded_in_the_command(kc, tmp_path):
    apply(kc, tmp_path, pod("host", ["echo", "$(HOSTNAME)", "$(KUBERNETES_SERVICE_PORT)"]),
          pod("named", ["sh", "-c", "echo $HOSTNAME; hostname; cat /etc/hostname"], hostname="web-0"))
    assert logs(kc, "host") == ["$(HOSTNAME) 443"]
    assert logs(kc, "named") == ["web-0", "web-0", "web-0"]


def test_missing_configmap_is_create_container_config_error_until_it_exists(kc, tmp_path):
    env = [{"name": "SPECIAL_LEVEL_KEY", "valueFrom": {"configMapKeyRef": {"name": "special-config",
                                                                           "key": "SPECIAL_LEVEL"}}},
           {"name": "SPECIAL_TYPE_KEY", "valueFrom": {"configMapKeyRef": {"name": "special-config",
                                                                          "key": "SPECIAL_TYPE"}}}]
    apply(kc, tmp_path, pod("dapi-test-pod", ["/bin/echo", "$(SPECIAL_LEVEL_KEY) $(SPECIAL_TYPE_KEY)"], env=env))
    p = state(kc, "dapi-test-pod")
    waiting = p["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting == {"reason": "CreateContainerConfigError", "message": 'configmap "special-config" not found'}
    assert p["status"]["phase"] == "Pending"
    failed = [e for e in events(kc, "dapi-test-pod") if e["reason"] == "Failed"]
    assert [(e["type"], e["message"]) for e in failed] == [("Warning", 'Error: configmap "special-config" not found')]
    assert failed[0]["count"] >= 2  # retried every 10 s
    rc, out, _ = kc("get", "pod", "dapi-test-pod")
    assert out[1].split()[2] == "CreateContainerConfigError"
    rc, _, err = kc("logs", "dapi-test-pod")
    assert err == ['Error from server (BadRequest): container "c" in pod "dapi-test-pod" is waiting to start: '
                   'CreateContainerConfigError']

    apply(kc, tmp_path, config_map("special-config", SPECIAL_TYPE="charm"))
    waiting = state(kc, "dapi-test-pod")["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting["message"] == "couldn't find key SPECIAL_LEVEL in ConfigMap default/special-config"

    apply(kc, tmp_path, config_map("special-config", SPECIAL_LEVEL="very", SPECIAL_TYPE="charm"))
    assert state(kc, "dapi-test-pod")["status"]["phase"] == "Succeeded"
    assert logs(kc, "dapi-test-pod") == ["very charm"]


def test_secrets_env_from_with_prefix_and_optional_references(kc, tmp_path):
    env = [{"name": "SECRET_USERNAME", "valueFrom": {"secretKeyRef": {"name": "backend-user",
                                                                      "key": "backend-username"}}},
           {"name": "MAYBE", "valueFrom": {"configMapKeyRef": {"name": "absent", "key": "k", "optional": True}}},
           {"name": "MAYBE_KEY", "valueFrom": {"secretKeyRef": {"name": "backend-user", "key": "nope",
                                                                "optional": True}}}]
    env_from = [{"configMapRef": {"name": "special-config"}, "prefix": "CFG_"},
                {"secretRef": {"name": "absent-too", "optional": True}}]
    apply(kc, tmp_path, secret("backend-user", **{"backend-username": "backend-admin"}),
          config_map("special-config", SPECIAL_LEVEL="very"),
          pod("env-single-secret", ["sh", "-c", 'echo "$SECRET_USERNAME $CFG_SPECIAL_LEVEL '
                                                '${MAYBE-unset} ${MAYBE_KEY-unset}"'], env=env, envFrom=env_from))
    assert logs(kc, "env-single-secret") == ["backend-admin very unset unset"]


def test_missing_secret_in_env_from(kc, tmp_path):
    apply(kc, tmp_path, pod("p", ["env"], envFrom=[{"secretRef": {"name": "mysecret"}}]))
    waiting = state(kc, "p")["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting == {"reason": "CreateContainerConfigError", "message": 'secret "mysecret" not found'}


def test_a_restarted_kubelet_keeps_the_environment_of_running_containers(kc, tmp_path):
    env = [{"name": "SPECIAL", "valueFrom": {"configMapKeyRef": {"name": "special-config", "key": "level"}}}]
    apply(kc, tmp_path, config_map("special-config", level="very"),
          pod("p", ["sh", "-c", 'sleep 20; echo "$SPECIAL"; test "$SPECIAL" = very'], env=env), run_for="10s")
    assert "running" in state(kc, "p")["status"]["containerStatuses"][0]["state"]
    rc, _, _ = kc("advance", "20s")  # a new session: its kubelet re-attaches the running container
    assert rc == 0
    assert state(kc, "p")["status"]["phase"] == "Succeeded"
    assert logs(kc, "p") == ["very"]


WEBSITE = Path(__file__).resolve().parents[2] / "shared" / "cases" / "website"


@pytest.mark.skipif(not WEBSITE.is_dir(), reason="shared/cases/website not available")
def test_the_docs_indexed_job_exits_by_its_completion_index(kc):
    rc, _, err = kc("apply", "-f", str(WEBSITE / "controllers" / "job-backoff-limit-per-index-failindex.yaml"),
                    "--for", "90s", "-q")
    assert rc == 0, err
    job = next(o for o in kc.objects("jobs") if o["metadata"]["name"] == "job-backoff-limit-per-index-failindex")
    # index 0 exits 1 twice (backoffLimitPerIndex 1), index 1 exits 42 (FailIndex), 2 and 3 exit 0
    assert (job["status"]["completedIndexes"], job["status"]["failedIndexes"]) == ("2,3", "0,1")
    assert next(c for c in job["status"]["conditions"] if c["type"] == "Failed")["reason"] == "FailedIndexes"


# --------------------------------------------------------------------------- volumes

def test_missing_configmap_volume_keeps_the_pod_creating_until_it_exists(kc, tmp_path):
    vols = [{"name": "config-volume", "configMap": {"name": "special-config"}}]
    apply(kc, tmp_path, pod("dapi-test-pod", ["/bin/sh", "-c", "ls /etc/config/; cat /etc/config/SPECIAL_LEVEL"],
                            volumes=vols, volumeMounts=[{"name": "config-volume", "mountPath": "/etc/config"}]),
          run_for="150s")
    p = state(kc, "dapi-test-pod")
    assert p["status"]["phase"] == "Pending" and "podIP" not in p["status"]  # no sandbox before the volumes
    assert p["status"]["containerStatuses"][0]["state"] == {"waiting": {"reason": "ContainerCreating"}}
    mounts = [e for e in events(kc, "dapi-test-pod") if e["reason"] == "FailedMount"]
    assert [e["message"] for e in mounts] == [
        'MountVolume.SetUp failed for volume "config-volume" : configmap "special-config" not found',
        "Unable to attach or mount volumes: unmounted volumes=[config-volume], unattached volumes=[], "
        "failed to process volumes=[]: context deadline exceeded"]
    # retries after 0, 0.5, 1.5, 3.5, 7.5, 15.5, 31.5, 63.5 and 127.5 s (back-off doubling from 0.5 s)
    assert mounts[0]["count"] == 9 and all(e["type"] == "Warning" for e in mounts)
    rc, out, _ = kc("get", "pod", "dapi-test-pod")
    assert out[1].split()[2] == "ContainerCreating"

    apply(kc, tmp_path, config_map("special-config", SPECIAL_LEVEL="very", SPECIAL_TYPE="charm"))
    assert state(kc, "dapi-test-pod")["status"]["phase"] == "Succeeded"
    assert logs(kc, "dapi-test-pod") == ["SPECIAL_LEVEL", "SPECIAL_TYPE", "very"]


def test_configmap_items_secret_volume_and_missing_keys(kc, tmp_path):
    vols = [{"name": "cfg", "configMap": {"name": "special-config", "items": [{"key": "SPECIAL_LEVEL",
                                                                              "path": "keys"}]}},
            {"name": "sec", "secret": {"secretName": "test-secret"}}]
    mounts = [{"name": "cfg", "mountPath": "/etc/config"}, {"name": "sec", "mountPath": "/etc/secret-volume"}]
    apply(kc, tmp_path, config_map("special-config", SPECIAL_TYPE="charm"), secret("test-secret", password="39528$vdg7Jb"),
          pod("p", ["sh", "-c", "cat /etc/config/keys; echo; ls /etc/secret-volume; cat /etc/secret-volume/password"],
              volumes=vols, volumeMounts=mounts), run_for="5s")
    assert [e["message"] for e in events(kc, "p") if e["reason"] == "FailedMount"] == [
        'MountVolume.SetUp failed for volume "cfg" : configmap references non-existent config key: SPECIAL_LEVEL']
    apply(kc, tmp_path, config_map("special-config", SPECIAL_LEVEL="very"))
    assert logs(kc, "p") == ["very", "password", "39528$vdg7Jb"]


def test_projected_volume_joins_its_sources_errors_and_then_holds_them_all(kc, tmp_path):
    vols = [{"name": "all-in-one", "projected": {"sources": [
        {"secret": {"name": "mysecret", "items": [{"key": "username", "path": "my-group/my-username"}]}},
        {"downwardAPI": {"items": [
            {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
            {"path": "cpu_limit", "resourceFieldRef": {"containerName": "c", "resource": "limits.cpu",
                                                       "divisor": "1m"}}]}},
        {"configMap": {"name": "myconfigmap", "items": [{"key": "config", "path": "my-group/my-config"}]}}]}}]
    script = ("cat /projected-volume/labels; echo; cat /projected-volume/cpu_limit; echo; "
              "ls /projected-volume/my-group; cat /projected-volume/my-group/my-username")
    apply(kc, tmp_path, pod("volume-test", ["sh", "-c", script], volumes=vols,
                            volumeMounts=[{"name": "all-in-one", "mountPath": "/projected-volume"}],
                            resources={"limits": {"cpu": "250m"}}), run_for="2s")
    assert {e["message"] for e in events(kc, "volume-test") if e["reason"] == "FailedMount"} == {
        'MountVolume.SetUp failed for volume "all-in-one" : '
        '[secret "mysecret" not found, configmap "myconfigmap" not found]'}
    apply(kc, tmp_path, secret("mysecret", username="admin"), config_map("myconfigmap", config="x=1"))
    assert logs(kc, "volume-test") == ['app="demo"', "250", "my-config", "my-username", "admin"]


def test_service_account_token_volume(kc, tmp_path):
    sa = "/var/run/secrets/kubernetes.io/serviceaccount"
    apply(kc, tmp_path, pod("p", ["sh", "-c", f"ls {sa}; cat {sa}/namespace; echo"]))
    assert logs(kc, "p") == ["ca.crt", "namespace", "token", "default"]


def test_init_container_output_in_a_shared_empty_dir_and_the_completion_index(kc, tmp_path):
    job = {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "indexed-job"},
        "spec": {"completions": 3, "parallelism": 3, "completionMode": "Indexed", "template": {"spec": {
            "restartPolicy": "Never",
            "initContainers": [{"name": "input", "image": "docker.io/library/bash", "command": [
                "bash", "-c", "items=(foo bar baz qux xyz)\necho ${items[$JOB_COMPLETION_INDEX]} > /input/data.txt\n"],
                "volumeMounts": [{"mountPath": "/input", "name": "input"}]}],
            "containers": [{"name": "worker", "image": "docker.io/library/busybox", "command": [
                "rev", "/input/data.txt"], "volumeMounts": [{"mountPath": "/input", "name": "input"}]}],
            "volumes": [{"name": "input", "emptyDir": {}}]}}}}
    apply(kc, tmp_path, job, run_for="60s")
    j = next(o for o in kc.objects("jobs") if o["metadata"]["name"] == "indexed-job")
    assert j["status"]["succeeded"] == 3 and j["status"]["completedIndexes"] == "0-2"
    by_index = {p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]: p["metadata"]["name"]
                for p in kc.objects("pods")}
    assert [logs(kc, by_index[i]) for i in "012"] == [["oof"], ["rab"], ["zab"]]


def test_downward_api_volume_holds_the_completion_index(kc, tmp_path):
    job = {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "indexed-job"},
        "spec": {"completions": 2, "parallelism": 2, "completionMode": "Indexed", "template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "worker", "image": "busybox", "command": [
                "sh", "-c", "cat /input/data.txt; echo \" $JOB_COMPLETION_INDEX\""],
                "volumeMounts": [{"mountPath": "/input", "name": "input"}]}],
            "volumes": [{"name": "input", "downwardAPI": {"items": [{"path": "data.txt", "fieldRef": {
                "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}]}}]}}}}
    apply(kc, tmp_path, job, run_for="60s")
    pods = sorted(kc.objects("pods"), key=lambda p: p["metadata"]["annotations"][
        "batch.kubernetes.io/job-completion-index"])
    assert [logs(kc, p["metadata"]["name"]) for p in pods] == [["0 0"], ["1 1"]]


def test_host_path_sees_the_node_files_and_checks_its_type(kc, tmp_path):
    vols = [{"name": "machine-id", "hostPath": {"path": "/etc/machine-id", "type": "File"}},
            {"name": "log-dir", "hostPath": {"path": "/var/log"}}]
    mounts = [{"name": "machine-id", "mountPath": "/etc/machine-id", "readOnly": True},
              {"name": "log-dir", "mountPath": "/var/log"}]
    apply(kc, tmp_path, pod("writer", ["sh", "-c", "cat /etc/machine-id > /var/log/machine-id.log"],
                            volumes=vols, volumeMounts=mounts, nodeName="node-1"),
          pod("reader", ["sh", "-c", "sleep 5; cat /host-logs/machine-id.log"], nodeName="node-1",
              volumes=[{"name": "logs", "hostPath": {"path": "/var/log", "type": "Directory"}}],
              volumeMounts=[{"name": "logs", "mountPath": "/host-logs"}]),
          pod("bad", ["true"], nodeName="node-1",
              volumes=[{"name": "nope", "hostPath": {"path": "/no/such/dir", "type": "Directory"}}],
              volumeMounts=[{"name": "nope", "mountPath": "/nope"}]))
    node = next(n for n in kc.objects("nodes", None) if n["metadata"]["name"] == "node-1")
    assert state(kc, "writer")["status"]["phase"] == "Succeeded"
    assert state(kc, "reader")["status"]["phase"] == "Succeeded"  # it read what the writer left on the node
    assert logs(kc, "writer") == []
    assert node["status"]["nodeInfo"]["machineID"]
    assert {e["message"] for e in events(kc, "bad") if e["reason"] == "FailedMount"} == {
        'MountVolume.SetUp failed for volume "nope" : hostPath type check failed: /no/such/dir is not a directory'}


# --------------------------------------------------------------------------- units

def test_service_env_names_and_values():
    class Src:
        def service(self, ns, name):
            return {"metadata": {"name": "kubernetes"}, "spec": {"clusterIP": "10.96.0.1",
                                                                 "ports": [{"name": "https", "port": 443}]}}

        def services(self, ns):
            return [{"metadata": {"name": "redis-primary"}, "spec": {"clusterIP": "10.0.0.11", "ports": [
                {"port": 6379}]}},
                {"metadata": {"name": "headless"}, "spec": {"clusterIP": "None", "ports": [{"port": 80}]}}]

    env = envvars.service_env("default", True, Src())
    assert env == {
        "KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443",
        "KUBERNETES_SERVICE_PORT_HTTPS": "443", "KUBERNETES_PORT": "tcp://10.96.0.1:443",
        "KUBERNETES_PORT_443_TCP": "tcp://10.96.0.1:443", "KUBERNETES_PORT_443_TCP_PROTO": "tcp",
        "KUBERNETES_PORT_443_TCP_PORT": "443", "KUBERNETES_PORT_443_TCP_ADDR": "10.96.0.1",
        "REDIS_PRIMARY_SERVICE_HOST": "10.0.0.11", "REDIS_PRIMARY_SERVICE_PORT": "6379",
        "REDIS_PRIMARY_PORT": "tcp://10.0.0.11:6379", "REDIS_PRIMARY_PORT_6379_TCP": "tcp://10.0.0.11:6379",
        "REDIS_PRIMARY_PORT_6379_TCP_PROTO": "tcp", "REDIS_PRIMARY_PORT_6379_TCP_PORT": "6379",
        "REDIS_PRIMARY_PORT_6379_TCP_ADDR": "10.0.0.11"}
    assert list(envvars.service_env("default", False, Src())) == [k for k in env if k.startswith("KUBERNETES_")]


@pytest.mark.parametrize("resource, divisor, limits, want", [
    ("limits.cpu", None, {"cpu": "250m"}, "1"),      # rounded up to whole cores
    ("limits.cpu", "1m", {"cpu": "250m"}, "250"),
    ("limits.memory", None, {"memory": "64Mi"}, str(64 * 2**20)),
    ("limits.memory", "1Mi", {"memory": "100M"}, "96"),  # ceil(100e6 / 2**20)
    ("limits.memory", "1Gi", {}, "8"),              # unset: the node's allocatable (7.5Gi here)
    ("requests.cpu", None, {}, "0"),
])
def test_resource_field_ref_values(resource, divisor, limits, want):
    ref = {"resource": resource, **({"divisor": divisor} if divisor else {})}
    container = {"name": "c", "resources": {"limits": limits}}
    assert envvars.resource_value({"spec": {"containers": [container]}}, container, ref,
                                  {"cpu": "4", "memory": "7864320Ki"}) == want


def test_downward_api_map_format_is_sorted_quoted_lines():
    pod_ = {"metadata": {"labels": {"zone": "us-est-coast", "cluster": "test-cluster1", "rack": 'a"22'}}}
    assert envvars.field_value(pod_, "metadata.labels") == \
        'cluster="test-cluster1"\nrack="a\\"22"\nzone="us-est-coast"'
    assert envvars.field_value(pod_, "metadata.labels['nope']") == ""


def test_mounts_share_writes_between_programs():
    store: dict[str, str] = {}
    writer = build_program({"name": "w", "image": "busybox", "command": ["sh", "-c", "echo hi > /data/x"]},
                           mounts=[Mount("/data", store)]).start(0)
    writer.advance(1)
    assert store == {"/x": "hi\n"}
    reader = build_program({"name": "r", "image": "busybox", "command": ["sh", "-c", "ls /mnt; cat /mnt/x"]},
                           mounts=[Mount("/mnt", store)]).start(1)
    assert [e.text for e in reader.advance(2) if type(e).__name__ == "LogLine"] == ["x", "hi"]
