"""kind's storage, opt in: ``k8semu cluster create --storage local-path`` gives the default
StorageClass ``standard`` and rancher's local-path-provisioner (``k8semu.controllers.localpath``),
so a StatefulSet's ``volumeClaimTemplates`` get volumes; without it the cluster stays
kubeadm-like (claims Pending). Virtual time throughout."""

from __future__ import annotations

import os
import re

import pytest

from k8semu.api.admission import DefaultStorageClass, default_admission_chain
from k8semu.cli.main import main
from k8semu.controllers.localpath import (HELPER_POD_SECONDS, PROVISIONER_IMAGE, PROVISIONER_NAME, node_path,
                                          volume_path)
from k8semu.sim.cluster import Cluster
from k8semu.sim.components import default_factories
from k8semu.sim.config import ClusterConfig, ConfigError
from k8semu.sim.runtime import run_cluster

NS = "default"


def web_set(replicas: int = 2, modes=("ReadWriteOnce",)):
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web", "namespace": NS},
            "spec": {"serviceName": "web", "replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                         {"name": "nginx", "image": "nginx:1.27",
                          "volumeMounts": [{"name": "www", "mountPath": "/usr/share/nginx/html"}]}]}},
                     "volumeClaimTemplates": [{"metadata": {"name": "www"}, "spec": {
                         "accessModes": list(modes), "resources": {"requests": {"storage": "1Gi"}}}}]}}


def claim_events(api, name):
    evs = [e for e in api.list("events", namespace=NS)["items"]
           if e["involvedObject"]["kind"] == "PersistentVolumeClaim" and e["involvedObject"]["name"] == name]
    return sorted(evs, key=lambda e: e["metadata"]["name"])


def run_sts(cluster, sts, then=None):
    api = cluster.api

    async def body(rt):
        api.create("statefulsets.apps", sts, namespace=NS)
        assert await rt.settle()
        if then is not None:
            await then(rt)

    run_cluster(cluster, body, default_factories(cluster))


def test_statefulset_claims_get_local_path_volumes_on_their_pods_nodes():
    cluster = Cluster.create(seed=5, storage="local-path")
    api = cluster.api
    run_sts(cluster, web_set())
    pods = {p["metadata"]["name"]: p for p in api.list("pods", namespace=NS)["items"]}
    assert sorted(pods) == ["web-0", "web-1"]
    for name, pod in pods.items():
        assert pod["status"]["phase"] == "Running"
        assert any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"]["conditions"])
        claim = api.get("persistentvolumeclaims", f"www-{name}", namespace=NS)
        uid, node = claim["metadata"]["uid"], pod["spec"]["nodeName"]
        assert claim["status"]["phase"] == "Bound"
        assert claim["spec"]["storageClassName"] == "standard"  # the DefaultStorageClass admission plugin
        assert claim["spec"]["volumeName"] == f"pvc-{uid}"
        assert claim["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == node
        assert claim["metadata"]["annotations"]["volume.kubernetes.io/storage-provisioner"] == PROVISIONER_NAME
        pv = api.get("persistentvolumes", f"pvc-{uid}")
        assert pv["metadata"]["annotations"] == {"local.path.provisioner/selected-node": node,
                                                 "pv.kubernetes.io/provisioned-by": PROVISIONER_NAME}
        spec = pv["spec"]
        assert spec["hostPath"] == {"path": f"/var/local-path-provisioner/pvc-{uid}_default_www-{name}",
                                    "type": "DirectoryOrCreate"}
        assert spec["nodeAffinity"] == {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}
        assert spec["capacity"] == {"storage": "1Gi"}
        assert spec["accessModes"] == ["ReadWriteOnce"]
        assert spec["persistentVolumeReclaimPolicy"] == "Delete"
        assert spec["storageClassName"] == "standard"
        assert spec["volumeMode"] == "Filesystem"
        assert (spec["claimRef"]["name"], spec["claimRef"]["uid"]) == (f"www-{name}", uid)
        assert pv["status"]["phase"] == "Bound"
        # the PV controller's, then the provisioner's events, the volume a helper pod's run later
        evs = claim_events(api, f"www-{name}")
        reasons = [e["reason"] for e in evs]
        assert reasons[-2:] == ["Provisioning", "ProvisioningSucceeded"]
        assert "ExternalProvisioning" in reasons
        prov, done = evs[-2:]
        assert prov["message"] == f'External provisioner is provisioning volume for claim "default/www-{name}"'
        assert done["message"] == f"Successfully provisioned volume pvc-{uid}"
        provisioner_pod = api.list("pods", namespace="local-path-storage")["items"][0]["metadata"]["name"]
        assert re.fullmatch(rf"rancher\.io/local-path_{provisioner_pod}_[0-9a-f-]{{36}}",
                            prov["source"]["component"])
        assert int(done["metadata"]["name"].split(".")[-1], 16) - int(prov["metadata"]["name"].split(".")[-1], 16) \
            >= HELPER_POD_SECONDS * 1e9 - 1e6
    # the PV is written by the provisioner's service account
    writers = {r.actor for r in cluster.log.records(0) if r.key.startswith("/registry/persistentvolumes/")
               and r.type == "ADDED"}
    assert writers == {"system:serviceaccount:local-path-storage:local-path-provisioner-service-account"}


def test_bootstrap_is_kinds_and_the_provisioner_pod_runs_like_any_pod():
    cluster = Cluster.create(seed=2, storage="local-path")
    api = cluster.api
    assert cluster.log.header["cluster"]["storage"] == "local-path"
    sc = api.get("storageclasses.storage.k8s.io", "standard")
    assert sc["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"] == "true"
    assert (sc["provisioner"], sc["reclaimPolicy"], sc["volumeBindingMode"]) == (
        PROVISIONER_NAME, "Delete", "WaitForFirstConsumer")
    cm = api.get("configmaps", "local-path-config", namespace="local-path-storage")
    assert node_path(cm["data"]["config.json"], "node-1") == "/var/local-path-provisioner"
    assert sorted(cm["data"]) == ["config.json", "helperPod.yaml", "setup", "teardown"]
    deploy = api.get("deployments.apps", "local-path-provisioner", namespace="local-path-storage")
    assert deploy["spec"]["template"]["spec"]["containers"][0]["image"] == PROVISIONER_IMAGE
    assert api.get("serviceaccounts", "local-path-provisioner-service-account", namespace="local-path-storage")
    assert api.get("clusterrolebindings.rbac.authorization.k8s.io", "local-path-provisioner-bind")

    async def body(rt):
        assert await rt.settle()

    run_cluster(cluster, body, default_factories(cluster))
    pods = api.list("pods", namespace="local-path-storage")["items"]
    assert len(pods) == 1 and pods[0]["status"]["phase"] == "Running"
    pulled = [e["message"] for e in api.list("events", namespace="local-path-storage")["items"]
              if e["reason"] == "Pulled"]
    assert pulled == [f'Container image "{PROVISIONER_IMAGE}" already present on machine']


def test_deleting_the_claim_deletes_its_volume_after_the_helper_pod():
    cluster = Cluster.create(seed=7, storage="local-path")
    api = cluster.api
    seen = {}

    async def then(rt):
        api.delete("statefulsets.apps", "web", namespace=NS)
        assert await rt.settle()
        claim = api.get("persistentvolumeclaims", "www-web-0", namespace=NS)
        seen["pv"] = claim["spec"]["volumeName"]
        api.delete("persistentvolumeclaims", "www-web-0", namespace=NS)
        assert await rt.settle()

    run_sts(cluster, web_set(replicas=1), then)
    assert api.list("persistentvolumes")["items"] == []
    recs = cluster.log.history(f"/registry/persistentvolumes/{seen['pv']}")
    released = next(r.time for r in recs if (r.object.get("status") or {}).get("phase") == "Released")
    deleted = next(r.time for r in recs if r.type == "DELETED")
    assert deleted - released == pytest.approx(HELPER_POD_SECONDS)


def test_without_the_option_claims_stay_pending_as_on_kubeadm():
    cluster = Cluster.create(seed=5)
    api = cluster.api
    assert "storage" not in cluster.log.header["cluster"]
    run_sts(cluster, web_set(replicas=1))
    assert api.list("storageclasses.storage.k8s.io")["items"] == []
    assert api.list("namespaces")["items"] and not any(
        n["metadata"]["name"] == "local-path-storage" for n in api.list("namespaces")["items"])
    claim = api.get("persistentvolumeclaims", "www-web-0", namespace=NS)
    assert claim["status"]["phase"] == "Pending"
    assert "storageClassName" not in claim["spec"]
    assert api.list("persistentvolumes")["items"] == []
    assert api.get("pods", "web-0", namespace=NS)["status"]["phase"] == "Pending"
    assert "local-path-provisioner" not in default_factories(cluster)


def test_read_write_many_is_refused_as_local_path_does():
    cluster = Cluster.create(seed=4, storage="local-path")
    api = cluster.api
    run_sts(cluster, web_set(replicas=1, modes=("ReadWriteMany",)))
    evs = claim_events(api, "www-web-0")
    failed = [e for e in evs if e["reason"] == "ProvisioningFailed"]
    assert [(e["type"], e["message"], e["count"]) for e in failed] == [
        ("Warning", 'failed to provision volume with StorageClass "standard": NodePath only supports '
                    "ReadWriteOnce and ReadWriteOncePod (1.22+) access modes", 1)]
    assert api.get("persistentvolumeclaims", "www-web-0", namespace=NS)["status"]["phase"] == "Pending"

    async def again(rt):  # the next command's provisioner remembers its failure
        assert await rt.settle()

    run_cluster(cluster, again, default_factories(cluster))
    assert [e["count"] for e in claim_events(api, "www-web-0") if e["reason"] == "ProvisioningFailed"] == [1]


def test_default_storage_class_admission_plugin():
    names = [p.name for p in default_admission_chain(Cluster.create(seed=1).api).plugins]
    assert names[names.index("DefaultStorageClass") - 1:names.index("DefaultStorageClass") + 2] == [
        "DefaultTolerationSeconds", "DefaultStorageClass", "StorageObjectInUseProtection"]
    cluster = Cluster.create(seed=1, storage="local-path")
    api = cluster.api

    def claim(name, **spec):
        return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": NS},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, **spec}}

    assert api.create("persistentvolumeclaims", claim("a"), namespace=NS)["spec"]["storageClassName"] == "standard"
    assert api.create("persistentvolumeclaims", claim("b", storageClassName=""), namespace=NS)["spec"][
        "storageClassName"] == ""
    assert api.create("persistentvolumeclaims", claim("c", storageClassName="fast"), namespace=NS)["spec"][
        "storageClassName"] == "fast"
    assert DefaultStorageClass(api).default_class_name() == "standard"
    assert DefaultStorageClass(Cluster.create(seed=1).api).default_class_name() is None


def test_helpers_and_config_key(tmp_path):
    assert volume_path("/var/x", "pvc-1", "ns", "data") == "/var/x/pvc-1_ns_data"
    cfg = '{"nodePathMap":[{"node":"node-2","paths":["/mnt/a","/mnt/b"]}]}'
    assert node_path(cfg, "node-2") == "/mnt/a"
    with pytest.raises(ValueError, match="config doesn't contain node node-1, and no "
                                         "DEFAULT_PATH_FOR_NON_LISTED_NODES available"):
        node_path(cfg, "node-1")
    assert ClusterConfig.from_dict({"storage": "local-path"}).to_dict()["storage"] == "local-path"
    assert "storage" not in ClusterConfig.from_dict({"storage": "none"}).to_dict()
    assert ClusterConfig.from_header(ClusterConfig.from_dict({"storage": "local-path"}).to_dict()).storage == \
        "local-path"
    with pytest.raises(ConfigError, match='storage: must be "none" or "local-path"'):
        ClusterConfig.from_dict({"storage": "nfs"})


def test_cli_cluster_create_storage_and_get_storageclass(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("K8SEMU_CLUSTER", raising=False)
    assert main(["cluster", "create", "--nodes", "1", "--storage", "local-path"]) == 0
    capsys.readouterr()
    assert main(["get", "storageclass"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert re.split(r"\s{2,}", out[0]) == ["NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE",
                                           "ALLOWVOLUMEEXPANSION", "AGE"]
    assert re.split(r"\s{2,}", out[1]) == ["standard (default)", "rancher.io/local-path", "Delete",
                                           "WaitForFirstConsumer", "false", "0s"]
    # the config file's key, and the flag winning over it
    (tmp_path / "kind.yaml").write_text("storage: local-path\nnodes:\n- {name: control-plane, role: control-plane}\n")
    assert main(["--cluster", "b.log", "cluster", "create", "--config", "kind.yaml"]) == 0
    assert main(["--cluster", "c.log", "cluster", "create", "--config", "kind.yaml", "--storage", "none"]) == 0
    capsys.readouterr()
    assert main(["--cluster", "b.log", "get", "sc", "-o", "name"]) == 0
    assert capsys.readouterr().out == "storageclass.storage.k8s.io/standard\n"
    main(["--cluster", "c.log", "get", "sc"])
    assert "No resources found" in capsys.readouterr().err
    # a default cluster file's header is unchanged: no storage key
    assert main(["--cluster", "d.log", "cluster", "create"]) == 0
    assert '"storage"' not in (tmp_path / "d.log").read_text().splitlines()[0]
    assert os.path.exists(tmp_path / "b.log")


def test_same_seed_same_log():
    def log_of():
        cluster = Cluster.create(seed=9, storage="local-path")
        run_sts(cluster, web_set(replicas=1))
        return [(r.revision, r.key, r.type, r.actor, r.time, repr(r.object)) for r in cluster.log.records(0)]

    assert log_of() == log_of()


def test_a_pods_files_live_in_its_volume_on_the_node_and_outlive_the_pod():
    """The kubelet mounts a claim bound to a local-path PV as that hostPath: what web-0 writes is
    in the node's directory, and the web-0 the StatefulSet makes again (same claim) reads it.
    (The node's files live as long as its kubelet: one command, or a ``serve`` run.)"""
    cluster = Cluster.create(seed=5, storage="local-path")
    api = cluster.api
    sts = web_set(replicas=1)
    sts["spec"]["template"]["spec"]["containers"][0]["command"] = [
        "sh", "-c", "cat /usr/share/nginx/html/count 2>/dev/null || echo none; "
                    "echo $(( $(cat /usr/share/nginx/html/count 2>/dev/null || echo 0) + 1 )) "
                    "> /usr/share/nginx/html/count; sleep 3600"]

    async def then(rt):
        first = api.get("pods", "web-0", namespace=NS)["metadata"]["uid"]
        api.delete("pods", "web-0", namespace=NS)
        assert await rt.until(lambda: (p := next(iter(api.list("pods", namespace=NS, field_selector="metadata.name=web-0")
                                                      ["items"]), None)) is not None
                              and p["metadata"]["uid"] != first and p["status"].get("phase") == "Running", limit=120)
        await rt.settle()
        node = api.get("pods", "web-0", namespace=NS)["spec"]["nodeName"]
        uid = api.get("persistentvolumeclaims", "www-web-0", namespace=NS)["metadata"]["uid"]
        kubelet = rt.components[f"kubelet/{node}"]
        assert kubelet.host_files.files[f"/var/local-path-provisioner/pvc-{uid}_default_www-web-0/count"] == "2\n"

    run_sts(cluster, sts, then)
