"""Updating a PersistentVolumeClaim, as kube-apiserver 1.33 answers it: upstream's
``ValidatePersistentVolumeClaimUpdate`` (the spec is immutable except a bound claim's storage
request; no shrinking to ``status.capacity``; volumeMode; the beta class annotation), then the
``PersistentVolumeClaimResize`` admission plugin (growth needs a class with
``allowVolumeExpansion: true``), then ResourceQuota charging the growth. Also the pod rules
that came with it: Windows hostProcess consistency, ``hostUsers: false`` and ``procMount``."""

from __future__ import annotations

import copy

import pytest

from k8semu.api import errors
from k8semu.sim.cluster import Cluster

NS = "ns"
IMMUTABLE = ("spec: Forbidden: spec is immutable after creation except resources.requests and "
             "volumeAttributesClassName for bound claims\n  core.PersistentVolumeClaimSpec{\n")
RESIZE = ('persistentvolumeclaims "a" is forbidden: only dynamically provisioned pvc can be resized and '
          "the storageclass that provisions the pvc must support resize")


@pytest.fixture
def api():
    api = Cluster.create(seed=5).api
    api.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    return api


def storage_class(api, name, expand=None):
    sc = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
          "provisioner": "example.com/csi"}
    if expand is not None:
        sc["allowVolumeExpansion"] = expand
    api.create("storageclasses.storage.k8s.io", sc)


def claim(api, name="a", size="1Gi", cls="fast", bound=True, capacity=None, **spec):
    body = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}, **spec}}
    if cls is not None:
        body["spec"]["storageClassName"] = cls
    cur = api.create("persistentvolumeclaims", body, namespace=NS)
    if bound:
        # what the PV binder writes: volumeName once, then the Bound status with the capacity
        cur = api.update("persistentvolumeclaims", {**cur, "spec": {**cur["spec"], "volumeName": "pv-" + name}},
                         namespace=NS)
        cur = api.update("persistentvolumeclaims",
                         {**cur, "status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"],
                                            "capacity": {"storage": capacity or size}}},
                         namespace=NS, subresource="status")
    return cur


def resized(cur, size):
    new = copy.deepcopy(cur)
    new["spec"]["resources"]["requests"]["storage"] = size
    return new


def invalid(api, obj, resource="persistentvolumeclaims"):
    with pytest.raises(errors.Invalid) as e:
        api.update(resource, obj, namespace=NS)
    assert e.value.code == 422
    return e.value.message


def forbidden(api, obj):
    with pytest.raises(errors.Forbidden) as e:
        api.update("persistentvolumeclaims", obj, namespace=NS)
    assert e.value.code == 403
    return e.value.message


# ------------------------------------------------------------------ validation


def test_unbound_claim_spec_is_immutable_with_upstreams_message(api):
    """A Pending claim may change nothing in its spec, its request included: ``spec: Forbidden``
    with the ``core.PersistentVolumeClaimSpec`` diff."""
    storage_class(api, "fast", expand=True)
    cur = claim(api, bound=False)
    assert invalid(api, resized(cur, "2Gi")) == (
        'PersistentVolumeClaim "a" is invalid: ' + IMMUTABLE
        + '- \tresources: {"requests": {"storage": "1Gi"}},\n'
        + '+ \tresources: {"requests": {"storage": "2Gi"}},\n  }\n')
    modes = copy.deepcopy(cur)
    modes["spec"]["accessModes"] = ["ReadWriteMany"]
    assert invalid(api, modes).startswith('PersistentVolumeClaim "a" is invalid: ' + IMMUTABLE
                                          + '- \taccessModes: ["ReadWriteOnce"],\n')
    # labels, annotations and the same quantity spelled otherwise are no spec change
    same = resized(cur, "1024Mi")
    same["metadata"]["labels"] = {"tier": "db"}
    assert api.update("persistentvolumeclaims", same, namespace=NS)["metadata"]["labels"] == {"tier": "db"}


def test_bound_claim_may_change_its_request_only(api):
    """Bound: the request may change (growth needs the resize plugin's consent), nothing else
    may; ``volumeName`` was settable once and is now fixed; ``volumeMode`` has its own error
    with upstream's bare path."""
    storage_class(api, "fast", expand=True)
    cur = claim(api)
    cls = copy.deepcopy(cur)
    cls["spec"]["storageClassName"] = "slow"
    assert invalid(api, cls).startswith('PersistentVolumeClaim "a" is invalid: ' + IMMUTABLE
                                        + '- \tstorageClassName: "fast",\n+ \tstorageClassName: "slow",\n')
    vol = copy.deepcopy(cur)
    vol["spec"]["volumeName"] = "other"
    assert invalid(api, vol).startswith('PersistentVolumeClaim "a" is invalid: ' + IMMUTABLE
                                        + '- \tvolumeName: "pv-a",\n+ \tvolumeName: "other",\n')
    mode = copy.deepcopy(cur)
    mode["spec"]["volumeMode"] = "Block"
    assert invalid(api, mode).endswith(
        '  }\n, volumeMode: Invalid value: "Block": field is immutable]')
    grown = api.update("persistentvolumeclaims", resized(cur, "3Gi"), namespace=NS)
    assert grown["spec"]["resources"]["requests"]["storage"] == "3Gi"
    assert grown["status"]["phase"] == "Bound"


def test_request_may_not_shrink_to_status_capacity(api):
    """RecoverVolumeExpansionFailure (beta, on in 1.33): a bound claim's request may come back
    down after a failed expansion, but only to above ``status.capacity``."""
    storage_class(api, "fast", expand=True)
    cur = api.update("persistentvolumeclaims", resized(claim(api, capacity="1Gi"), "4Gi"), namespace=NS)
    shrink_msg = ('PersistentVolumeClaim "a" is invalid: spec.resources.requests.storage: Forbidden: '
                  "field can not be less than status.capacity")
    assert invalid(api, resized(cur, "1Gi")) == shrink_msg
    assert invalid(api, resized(cur, "512Mi")) == shrink_msg
    back = api.update("persistentvolumeclaims", resized(cur, "2Gi"), namespace=NS)
    assert back["spec"]["resources"]["requests"]["storage"] == "2Gi"


def test_beta_class_annotation_is_immutable_but_may_move_to_the_spec(api):
    """The beta ``volume.beta.kubernetes.io/storage-class`` annotation may not change; a claim
    that names its class only there may copy it into ``spec.storageClassName`` once."""
    cur = claim(api, cls=None, bound=False, name="b")
    beta = {**cur, "metadata": {**cur["metadata"],
                                "annotations": {"volume.beta.kubernetes.io/storage-class": "gold"}}}
    assert invalid(api, beta) == (
        'PersistentVolumeClaim "b" is invalid: metadata.annotations.volume.beta.kubernetes.io/storage-class: '
        'Invalid value: "gold": field is immutable')
    body = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "c", "annotations": {"volume.beta.kubernetes.io/storage-class": "gold"}},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
    cur = api.create("persistentvolumeclaims", body, namespace=NS)
    moved = api.update("persistentvolumeclaims", {**cur, "spec": {**cur["spec"], "storageClassName": "gold"}},
                       namespace=NS)
    assert moved["spec"]["storageClassName"] == "gold"
    other = copy.deepcopy(moved)
    other["spec"]["storageClassName"] = "silver"
    assert invalid(api, other).startswith('PersistentVolumeClaim "c" is invalid: ' + IMMUTABLE)


def test_volume_attributes_class_is_gated_off(api):
    """VolumeAttributesClass is beta but off by default in 1.33: changing
    ``volumeAttributesClassName`` is forbidden even on a bound claim."""
    storage_class(api, "fast", expand=True)
    cur = claim(api)
    vac = {**cur, "spec": {**cur["spec"], "volumeAttributesClassName": "silver"}}
    assert invalid(api, vac) == (
        'PersistentVolumeClaim "a" is invalid: spec.volumeAttributesClassName: Forbidden: '
        "update is forbidden when the VolumeAttributesClass feature gate is disabled")


# ------------------------------------------------------------------ PersistentVolumeClaimResize


def test_growth_needs_a_class_that_allows_expansion(api):
    """The resize plugin: a bound claim grows only through a class that exists and sets
    ``allowVolumeExpansion: true``; unset, false, missing, or no class at all are refused with
    upstream's 403. Keeping or lowering the request is not its business."""
    storage_class(api, "fixed")
    storage_class(api, "never", expand=False)
    for name, cls in (("a", "fixed"), ("b", "never"), ("c", "gone"), ("d", "")):
        cur = claim(api, name=name, cls=cls)
        assert forbidden(api, resized(cur, "2Gi")) == RESIZE.replace('"a"', f'"{name}"')
        # the same size spelled otherwise is no growth
        assert api.update("persistentvolumeclaims", resized(cur, "1024Mi"), namespace=NS)


def test_quota_charges_an_allowed_growth(api):
    """Validation, then the resize plugin, then ResourceQuota: the growth is charged as the
    difference and refused over the quota with upstream's message."""
    storage_class(api, "fast", expand=True)
    api.create("resourcequotas", {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "storage"},
                                  "spec": {"hard": {"requests.storage": "3Gi"}}}, namespace=NS)
    cur = claim(api)
    assert forbidden(api, resized(cur, "5Gi")) == (
        'persistentvolumeclaims "a" is forbidden: exceeded quota: storage, requested: requests.storage=4Gi, '
        "used: requests.storage=1Gi, limited: requests.storage=3Gi")
    grown = api.update("persistentvolumeclaims", resized(cur, "3Gi"), namespace=NS)
    assert grown["spec"]["resources"]["requests"]["storage"] == "3Gi"
    # an unbound claim's growth stops at validation, before the plugin and the quota
    q = api.get("resourcequotas", "storage", namespace=NS)
    api.update("resourcequotas", {**q, "spec": {"hard": {"requests.storage": "4Gi"}}}, namespace=NS)
    pending = claim(api, name="p", size="1Mi", bound=False)
    assert invalid(api, resized(pending, "10Gi")).startswith('PersistentVolumeClaim "p" is invalid: ' + IMMUTABLE)


def test_resize_plugin_sits_before_runtime_class(api):
    names = [p.name for p in api.admission.plugins]
    i = names.index("PersistentVolumeClaimResize")
    assert names[i - 1:i + 2] == ["StorageObjectInUseProtection", "PersistentVolumeClaimResize", "RuntimeClass"]


# ------------------------------------------------------------------ pods


def pod(name="p", containers=None, **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": containers or [{"name": "c", "image": "nginx"}], **spec}}


def refused_pod(api, obj):
    with pytest.raises(errors.Invalid) as e:
        api.create("pods", obj, namespace=NS)
    return e.value.message


def host_process(value=True):
    return {"windowsOptions": {"hostProcess": value}}


def test_host_process_pod_needs_host_network_and_all_host_process_containers(api):
    assert refused_pod(api, pod(securityContext=host_process())) == (
        'Pod "p" is invalid: spec.hostNetwork: Invalid value: false: '
        "hostNetwork must be true if pod contains any hostProcess containers")
    mixed = pod(hostNetwork=True, containers=[
        {"name": "a", "image": "nginx", "securityContext": host_process()},
        {"name": "b", "image": "nginx"}])
    assert refused_pod(api, mixed) == (
        'Pod "p" is invalid: spec: Invalid value: "": If pod contains any hostProcess containers then '
        "all containers must be HostProcess containers")
    disagree = pod(hostNetwork=True, securityContext=host_process(True), containers=[
        {"name": "a", "image": "nginx", "securityContext": host_process(False)}])
    assert refused_pod(api, disagree) == (
        'Pod "p" is invalid: spec.containers[0].securityContext.windowsOptions.hostProcess: Invalid value: false: '
        "pod hostProcess value must be identical if both are specified, was true")
    assert api.create("pods", pod(name="ok", hostNetwork=True, securityContext=host_process()), namespace=NS)
    assert api.create("pods", pod(name="plain", securityContext=host_process(False)), namespace=NS)


def test_user_namespace_rules(api):
    """UserNamespacesSupport and ProcMountType are on by default in 1.33."""
    unmasked = [{"name": "c", "image": "nginx", "securityContext": {"procMount": "Unmasked"}}]
    assert refused_pod(api, pod(containers=unmasked)) == (
        'Pod "p" is invalid: spec.containers[0].securityContext.procMount: Invalid value: "Unmasked": '
        "`hostUsers` must be false to use `Unmasked`")
    assert api.create("pods", pod(name="userns", containers=unmasked, hostUsers=False),
                      namespace=NS)
    assert refused_pod(api, pod(hostNetwork=True, hostPID=True, hostUsers=False)) == (
        'Pod "p" is invalid: [spec.hostNetwork: Forbidden: when `pod.Spec.HostUsers` is false, '
        "spec.HostPID: Forbidden: when `pod.Spec.HostUsers` is false]")
    bad = [{"name": "c", "image": "nginx", "securityContext": {"procMount": "Masked"}}]
    assert refused_pod(api, pod(containers=bad)) == (
        'Pod "p" is invalid: spec.containers[0].securityContext.procMount: Unsupported value: "Masked": '
        'supported values: "Default", "Unmasked"')


def test_limit_range_bounds_a_claims_storage_request(api):
    """LimitRanger's ``PersistentVolumeClaim`` items (the docs' storagelimits.yaml: 1Gi–2Gi)."""
    api.create("limitranges", {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "storagelimits"},
                               "spec": {"limits": [{"type": "PersistentVolumeClaim", "max": {"storage": "2Gi"},
                                                    "min": {"storage": "1Gi"}}]}}, namespace=NS)
    for size, message in (("500Mi", "minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi"),
                          ("5Gi", "maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 5Gi")):
        with pytest.raises(errors.Forbidden) as e:
            claim(api, name="x", size=size, cls=None, bound=False)
        assert str(e.value) == f'persistentvolumeclaims "x" is forbidden: {message}'
    assert claim(api, name="ok", size="1536Mi", cls=None, bound=False)["metadata"]["name"] == "ok"
