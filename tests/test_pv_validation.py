"""PersistentVolume validation, as kube-apiserver 1.33's ``ValidatePersistentVolume`` /
``ValidatePersistentVolumeSpec`` / ``ValidatePersistentVolumeUpdate`` /
``ValidatePersistentVolumeStatusUpdate`` (pkg/apis/core/validation) and the mount-options
check of pkg/volume/validation."""

from __future__ import annotations

import copy

import pytest

from k8semu.api.defaults import apply_defaults
from k8semu.api.errors import BadRequest, Invalid
from k8semu.api.validation import validate, validate_or_raise
from k8semu.sim.cluster import Cluster

SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                 "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                 "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
MODES = '"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"'
HOSTNAME_AFFINITY = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
    {"key": "kubernetes.io/hostname", "operator": "In", "values": ["kind-worker"]}]}]}}


def pv(name="pv1", annotations=None, **spec):
    body = {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}, "hostPath": {"path": "/mnt/data"}}
    body.update(spec)
    for k in [k for k, v in body.items() if v is None]:
        del body[k]
    obj = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": body}
    if annotations:
        obj["metadata"]["annotations"] = annotations
    return apply_defaults(obj)


def errs(obj, old=None):
    return [e.text() for e in validate(obj, old)]


def test_a_plain_host_path_volume_is_valid():
    assert errs(pv()) == []
    assert errs(pv(hostPath=None, nfs={"server": "10.0.0.1", "path": "/exports"}, mountOptions=["hard"])) == []
    assert errs(pv(hostPath=None, local={"path": "/mnt/disks/ssd1"}, nodeAffinity=HOSTNAME_AFFINITY)) == []
    assert errs(pv(hostPath=None, csi={"driver": "hostpath.csi.k8s.io", "volumeHandle": "v-1"},
                   storageClassName="csi-hostpath-sc", volumeMode="Block")) == []


def test_an_empty_spec_names_every_missing_part_in_upstream_order():
    assert errs(pv(accessModes=None, capacity=None, hostPath=None)) == [
        "spec.accessModes: Required value",
        "spec.capacity: Required value",
        'spec.capacity: Unsupported value: core.ResourceList(nil): supported values: "storage"',
        "spec: Required value: must specify a volume type",
    ]


def test_access_modes():
    assert errs(pv(accessModes=["Bogus"])) == [
        f'spec.accessModes: Unsupported value: "Bogus": supported values: {MODES}']
    assert errs(pv(accessModes=["ReadWriteOncePod", "ReadOnlyMany"])) == [
        "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"]
    assert errs(pv(accessModes=["ReadWriteOncePod"])) == []


def test_capacity_has_only_a_positive_storage():
    assert errs(pv(capacity={"storage": "0"})) == ['spec.capacity[storage]: Invalid value: "0": must be greater than zero']
    assert errs(pv(capacity={"storage": "-1Gi"})) == [
        "spec.capacity[storage]: Invalid value: -1073741824: must be a valid resource quantity",
        'spec.capacity[storage]: Invalid value: "-1Gi": must be greater than zero',
    ]
    assert errs(pv(capacity={"cpu": "1"})) == [
        'spec.capacity: Unsupported value: core.ResourceList{"cpu":resource.Quantity{i:resource.int64Amount'
        '{value:1, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:"1", Format:"DecimalSI"}}: '
        'supported values: "storage"']
    with pytest.raises(BadRequest, match="quantities must match"):
        validate_or_raise(pv(capacity={"storage": "lots"}))


def test_reclaim_policy_volume_mode_and_class():
    assert errs(pv(persistentVolumeReclaimPolicy="Keep")) == [
        'spec.persistentVolumeReclaimPolicy: Unsupported value: "Keep": supported values: "Delete", "Recycle", "Retain"']
    assert errs(pv(volumeMode="Raw")) == [
        'spec.volumeMode: Unsupported value: "Raw": supported values: "Block", "Filesystem"']
    assert errs(pv(storageClassName="Fast_SSD")) == [f'spec.storageClassName: Invalid value: "Fast_SSD": {SUBDOMAIN_MSG}']
    assert errs(pv(hostPath={"path": "//"}, persistentVolumeReclaimPolicy="Recycle")) == [
        "spec.persistentVolumeReclaimPolicy: Forbidden: may not be 'recycle' for a hostPath mount of '/'"]


def test_one_volume_source_only():
    assert errs(pv(nfs={"server": "nfs", "path": "/x"}, csi={"driver": "d.example.com", "volumeHandle": "h"})) == [
        "spec.nfs: Forbidden: may not specify more than 1 volume type",
        "spec.csi: Forbidden: may not specify more than 1 volume type",
    ]
    assert errs(pv(cephfs={"monitors": ["m"]})) == ["spec.cephFS: Forbidden: may not specify more than 1 volume type"]


def test_host_path_local_nfs_and_csi_sources():
    assert errs(pv(hostPath={"path": ""})) == ["spec.hostPath.path: Required value"]
    assert errs(pv(hostPath={"path": "/mnt/../etc", "type": "Folder"})) == [
        "spec.hostPath.path: Invalid value: \"/mnt/../etc\": must not contain '..'",
        'spec.hostPath.type: Unsupported value: "Folder": supported values: "", "BlockDevice", "CharDevice", '
        '"Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"',
    ]
    assert errs(pv(hostPath=None, local={"path": "/mnt/disks/../x"})) == [
        "spec.local.path: Invalid value: \"/mnt/disks/../x\": must not contain '..'",
        "spec.nodeAffinity: Required value: Local volume requires node affinity",
    ]
    assert errs(pv(hostPath=None, nfs={"path": "exports"})) == [
        "spec.nfs.server: Required value",
        'spec.nfs.path: Invalid value: "exports": must be an absolute path',
    ]
    assert errs(pv(hostPath=None, csi={"driver": "", "nodePublishSecretRef": {"name": "s"}})) == [
        "spec.csi.driver: Required value",
        f'spec.csi.driver: Invalid value: "": {SUBDOMAIN_MSG}',
        "spec.csi.volumeHandle: Required value",
        "spec.csi.nodePublishSecretRef.namespace: Required value",
    ]


def test_node_affinity_terms():
    assert errs(pv(nodeAffinity={})) == [
        "spec.nodeAffinity.required: Required value: must specify required node constraints"]
    assert errs(pv(nodeAffinity={"required": {"nodeSelectorTerms": []}})) == [
        "spec.nodeAffinity.required.nodeSelectorTerms: Required value: must have at least one node selector term"]
    term = {"matchExpressions": [{"key": "zone", "operator": "In"}, {"key": "zone", "operator": "Near"},
                                 {"key": "rack", "operator": "Exists", "values": ["r1"]}],
            "matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["a", "b"]}]}
    path = "spec.nodeAffinity.required.nodeSelectorTerms[0]"
    assert errs(pv(nodeAffinity={"required": {"nodeSelectorTerms": [term]}})) == [
        f"{path}.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
        f'{path}.matchExpressions[1].operator: Invalid value: "Near": not a valid selector operator',
        f"{path}.matchExpressions[2].values: Forbidden: may not be specified when `operator` is 'Exists' or "
        "'DoesNotExist'",
        f"{path}.matchFields[0].values: Required value: must be only one value when `operator` is 'In' or 'NotIn' "
        "for node field selector",
        f'{path}.matchFields[0].key: Invalid value: "metadata.uid": not a valid field selector key',
    ]
    bad_value = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "In", "values": ["a b"]}]}]}
    assert errs(pv(nodeAffinity={"required": bad_value}))[0].startswith(
        f'{path}.matchExpressions[0].values[0]: Invalid value: "a b": a valid label must be')


def test_mount_options_annotation_only_on_sources_that_mount_with_options():
    ann = {"volume.beta.kubernetes.io/mount-options": "ro"}
    assert errs(pv(annotations=ann)) == [
        "metadata.annotations.volume.beta.kubernetes.io/mount-options: Forbidden: "
        "may not specify mount options for this volume type"]
    assert errs(pv(annotations=ann, hostPath=None, nfs={"server": "s", "path": "/x"})) == []


# --------------------------------------------------------------------------- through the API server

@pytest.fixture
def api():
    cluster = Cluster.create(seed=1)
    yield cluster.api


def _update(api, name, change, subresource=""):
    obj = copy.deepcopy(api.get("persistentvolumes", name))
    change(obj)
    return api.update("persistentvolumes", obj, subresource=subresource)


def test_create_refuses_an_invalid_volume_with_kubectls_message(api):
    body = pv("bad1", accessModes=None)
    with pytest.raises(Invalid) as e:
        api.create("persistentvolumes", body)
    assert e.value.message == 'PersistentVolume "bad1" is invalid: spec.accessModes: Required value'


def test_the_volume_source_is_immutable(api):
    api.create("persistentvolumes", pv())
    with pytest.raises(Invalid) as e:
        _update(api, "pv1", lambda o: o["spec"]["hostPath"].update(path="/mnt/other"))
    assert e.value.message.startswith(
        'PersistentVolume "pv1" is invalid: spec.persistentvolumesource: Forbidden: '
        "spec.persistentvolumesource is immutable after creation\n")
    with pytest.raises(Invalid, match='volumeMode: Invalid value: "Block": field is immutable'):
        _update(api, "pv1", lambda o: o["spec"].update(volumeMode="Block"))
    # what may change: capacity, access modes, class, reclaim policy, claimRef
    _update(api, "pv1", lambda o: o["spec"].update(capacity={"storage": "2Gi"}, storageClassName="manual",
                                                    persistentVolumeReclaimPolicy="Delete"))


def test_csi_may_gain_a_controller_expand_secret(api):
    api.create("persistentvolumes", pv(hostPath=None, csi={"driver": "d.example.com", "volumeHandle": "h"}))
    _update(api, "pv1", lambda o: o["spec"]["csi"].update(
        controllerExpandSecretRef={"name": "s", "namespace": "default"}))
    with pytest.raises(Invalid, match="spec.persistentvolumesource is immutable"):
        _update(api, "pv1", lambda o: o["spec"]["csi"].update(
            controllerExpandSecretRef={"name": "t", "namespace": "default"}))


def test_node_affinity_may_be_set_once_then_only_move_to_ga_labels(api):
    api.create("persistentvolumes", pv())
    beta = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "failure-domain.beta.kubernetes.io/zone", "operator": "In", "values": ["z1"]}]}]}}
    _update(api, "pv1", lambda o: o["spec"].update(nodeAffinity=copy.deepcopy(beta)))

    def to(key, value):
        return lambda o: o["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0].update(
            key=key, values=[value])

    with pytest.raises(Invalid) as e:
        _update(api, "pv1", to("failure-domain.beta.kubernetes.io/zone", "z2"))
    assert e.value.message == (
        'PersistentVolume "pv1" is invalid: nodeAffinity: Invalid value: core.VolumeNodeAffinity{Required:'
        '(*core.NodeSelector)(0xc000a1b2c0)}: field is immutable, except for updating from beta label to GA')
    _update(api, "pv1", to("topology.kubernetes.io/zone", "z1"))
    with pytest.raises(Invalid, match="nodeAffinity: Invalid value: null: field is immutable"):
        _update(api, "pv1", lambda o: o["spec"].pop("nodeAffinity"))


def test_a_status_update_checks_metadata_only(api):
    api.create("persistentvolumes", pv())
    out = _update(api, "pv1", lambda o: o.update(status={"phase": "Available"}), subresource="status")
    assert out["status"]["phase"] == "Available"


def test_kubectl_create_prints_the_causes(k, tmp_path):
    doc = tmp_path / "pv.yaml"
    doc.write_text("apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: bad2}\n"
                   "spec:\n  capacity: {storage: 1Gi}\n  accessModes: [Bogus]\n"
                   "  persistentVolumeReclaimPolicy: Keep\n  hostPath: {path: /mnt/x}\n")
    rc, out, err = k("create", "-f", str(doc))
    assert rc == 1 and out == []
    assert err == [
        'The PersistentVolume "bad2" is invalid: ',
        f'* spec.accessModes: Unsupported value: "Bogus": supported values: {MODES}',
        '* spec.persistentVolumeReclaimPolicy: Unsupported value: "Keep": supported values: "Delete", "Recycle", '
        '"Retain"',
    ]
