"""VolumeBinding (upstream ``plugins/volumebinding`` and its ``SchedulerVolumeBinder``, v1.33).

PreFilter (``GetPodVolumeClaims``): a pod whose PersistentVolumeClaims
(``persistentVolumeClaim`` volumes, and the ``<pod>-<volume>`` claims of
generic ephemeral volumes) do not all exist is ``UnschedulableAndUnresolvable``
``persistentvolumeclaim "x" not found``; a claim being deleted is an error. A
claim is *bound* when it has ``spec.volumeName`` and the PV controller's
``pv.kubernetes.io/bind-completed`` annotation (``isPVCFullyBound``). An
unbound claim whose StorageClass binds ``WaitForFirstConsumer`` and that
names no volume is a *delayed* claim; any other unbound claim (an
``Immediate`` class, no class, a class that does not exist, or a
``spec.volumeName`` the PV controller has not completed yet) makes the pod
``UnschedulableAndUnresolvable`` ``pod has unbound immediate
PersistentVolumeClaims`` until the PV controller binds it (the PVC update
moves the pod back to the active queue). Of the bound claims, PVs whose
required node affinity names nodes by ``kubernetes.io/hostname In``
(``local`` PVs) narrow the nodes to those (``GetEligibleNodes``; no narrowing
when one of the PVs is missing).

Filter (``FindPodVolumes``), per node: every bound claim's PV must exist
(``node(s) unavailable due to one or more pvc(s) bound to non-existent
pv(s)``) and its node affinity fit the node (``node(s) had volume node
affinity conflict``) — ``checkBoundClaims``. Delayed claims
(``unboundClaimsDelayBinding``): one already annotated
``volume.kubernetes.io/selected-node`` for another node fails at once; the
others, smallest request first, each get the smallest ``Available`` PV of
their class that fits the claim and the node (capacity, access modes,
volumeMode, selector, PV node affinity; a PV pre-bound to the claim wins) and
was not chosen for another claim of the pod (``findMatchingVolumes``);
claims left over must be provisioned (``checkVolumeProvisions``): a class
with provisioner ``kubernetes.io/no-provisioner`` (or none), or whose
``allowedTopologies`` do not match the node, fails the node with ``node(s)
didn't find available persistent volumes to bind``. The result (static
bindings, claims to provision) is kept per node.

Reserve / PreBind (``AssumePodVolumes`` / ``BindPodVolumes``): for the chosen
node, each static binding's PV is updated with the claim's ``claimRef`` and
``pv.kubernetes.io/bound-by-controller: "yes"`` (``GetBindVolumeToClaim``),
each claim to provision gets ``volume.kubernetes.io/selected-node``; the PV
controller then completes the binding (or an external provisioner makes a
PV). The binder polls every second (``checkBindings``, first check one second
after the writes) until every claim is fully bound, and only then is the pod
bound to the node; an error (the pod is gone, a PV's ``claimRef`` was reset,
the ``selected-node`` annotation removed or changed) or ``bindTimeoutSeconds``
(600) without success fails the binding cycle with ``running PreBind plugin
"VolumeBinding": binding volumes: …`` and the pod is retried. Upstream runs
the binding cycle in a goroutine; here the scheduler parks the pod (assumed
on the node) and re-runs PreBind at each poll (see
:class:`~k8semu.scheduler.scheduler.Scheduler`). PV/PVC updates made here
are put into the scheduler's cache at once (upstream's assume cache), so the
next scheduling cycle does not pick the same PV.
"""

from __future__ import annotations

from typing import Any, Mapping

from ...api import errors
from ...api.scheduling import node_selector_term_matches
from ..framework import Code, CycleState, PreFilterResult, Status
from ..types import PodInfo

__all__ = ["NAME", "VolumeBinding", "ERR_REASON_UNBOUND_IMMEDIATE", "ERR_REASON_NODE_CONFLICT",
           "ERR_REASON_PV_NOT_EXIST", "ERR_REASON_BIND_CONFLICT", "ANN_SELECTED_NODE"]

NAME = "VolumeBinding"
ERR_REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
ERR_REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
_HOSTNAME = "kubernetes.io/hostname"
_STATE_KEY = "PreFilterVolumeBinding"
#: upstream polls the bindings every second (``wait.PollUntilContextTimeout``, not immediately)
POLL_INTERVAL = 1.0


def pod_claim_names(pod: Mapping[str, Any]) -> list[str]:
    """Names of the PVCs a pod uses, in volume order."""
    name = (pod.get("metadata") or {}).get("name", "")
    out = []
    for v in (pod.get("spec") or {}).get("volumes") or ():
        if "persistentVolumeClaim" in v:
            out.append((v["persistentVolumeClaim"] or {}).get("claimName", ""))
        elif "ephemeral" in v:
            out.append(f"{name}-{v.get('name', '')}")
    return out


def _meta(o: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (o or {}).get("metadata") or {}


def _claim_class(pvc: Mapping[str, Any]) -> str:
    ann = _meta(pvc).get("annotations") or {}
    if _BETA_STORAGE_CLASS in ann:
        return ann[_BETA_STORAGE_CLASS] or ""
    return (pvc.get("spec") or {}).get("storageClassName") or ""


def _fully_bound(pvc: Mapping[str, Any]) -> bool:
    """``isPVCFullyBound``: ``spec.volumeName`` and the ``bind-completed`` annotation."""
    return bool((pvc.get("spec") or {}).get("volumeName")) and \
        ANN_BIND_COMPLETED in (_meta(pvc).get("annotations") or {})


def _claim_key(pvc: Mapping[str, Any]) -> str:
    m = _meta(pvc)
    return f"{m.get('namespace')}/{m.get('name')}"


def pv_node_affinity_matches(pv: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """``CheckNodeAffinity``: the PV's required node affinity (terms ORed) holds for a node with
    these labels (as upstream, a node of labels only: ``matchFields`` never match)."""
    required = ((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required")
    if required is None:
        return True
    node = {"metadata": {"labels": dict(labels)}}
    return any(node_selector_term_matches(t, node) for t in required.get("nodeSelectorTerms") or ())


def _topology_matches(terms: Any, labels: Mapping[str, str]) -> bool:
    """``MatchTopologySelectorTerms``: no terms match every node; else any term whose every
    ``matchLabelExpressions`` key has one of its values on the node."""
    if not terms:
        return True
    for term in terms:
        if all(labels.get(e.get("key")) in (e.get("values") or ()) for e in term.get("matchLabelExpressions") or ()):
            return True
    return False


def local_volume_node_names(pv: Mapping[str, Any]) -> set[str]:
    """``GetLocalPersistentVolumeNodeNames``: the union over the PV's required terms of the
    intersection of their ``kubernetes.io/hostname In`` values."""
    required = ((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required")
    out: set[str] = set()
    for term in (required or {}).get("nodeSelectorTerms") or ():
        names: set[str] | None = None
        for expr in term.get("matchExpressions") or ():
            if expr.get("key") == _HOSTNAME and expr.get("operator") == "In":
                values = set(expr.get("values") or ())
                names = values if names is None else names & values
        out |= names or set()
    return out


class _PodVolumes:
    """One node's result of Filter (upstream ``PodVolumes``): PV bindings and claims to provision."""

    __slots__ = ("bindings", "provisions")

    def __init__(self, bindings: list[tuple[Mapping[str, Any], Mapping[str, Any]]],
                 provisions: list[Mapping[str, Any]]) -> None:
        self.bindings = bindings
        self.provisions = provisions


class _State:
    """The cycle's state (upstream ``stateData``)."""

    __slots__ = ("bound", "delayed", "volumes_by_class", "by_node", "all_bound", "written", "deadline")

    def __init__(self, bound: list[Mapping[str, Any]], delayed: list[Mapping[str, Any]],
                 volumes_by_class: dict[str, list[Mapping[str, Any]]]) -> None:
        self.bound = bound
        self.delayed = delayed
        self.volumes_by_class = volumes_by_class
        self.by_node: dict[str, _PodVolumes] = {}
        self.all_bound = False
        self.written: _PodVolumes | None = None  # what PreBind sent to the API server
        self.deadline: float | None = None

    def clone(self) -> "_State":
        c = _State(self.bound, self.delayed, self.volumes_by_class)
        c.by_node = dict(self.by_node)
        c.all_bound, c.written, c.deadline = self.all_bound, self.written, self.deadline
        return c


class VolumeBinding:
    """The plugin (see the module docstring). ``handle`` is the :class:`Framework`; the
    scheduler gives it ``binder_client`` (API writes and the scheduler's cache) for PreBind."""

    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Any = None) -> None:
        self.handle = handle
        self.bind_timeout = float((args or {}).get("bindTimeoutSeconds", 600))

    # ---- PreFilter
    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        claims = pod_claim_names(pod.pod)
        if not claims:
            return None, Status.skip()
        snapshot = state.snapshot
        bound: list[Mapping[str, Any]] = []
        delayed: list[Mapping[str, Any]] = []
        unbound_immediate = False
        for claim in claims:
            pvc = snapshot.get_object("PersistentVolumeClaim", f"{pod.namespace}/{claim}")
            if pvc is None:
                return None, Status.unresolvable(f'persistentvolumeclaim "{claim}" not found')
            if _meta(pvc).get("deletionTimestamp") is not None:
                return None, Status.error(f'persistentvolumeclaim "{claim}" is being deleted')
            if _fully_bound(pvc):
                bound.append(pvc)
                continue
            sc = snapshot.get_object("StorageClass", _claim_class(pvc)) if _claim_class(pvc) else None
            delay = sc is not None and sc.get("volumeBindingMode") == "WaitForFirstConsumer"
            if delay and not (pvc.get("spec") or {}).get("volumeName"):
                delayed.append(pvc)
            else:
                unbound_immediate = True  # pre-bound claims count as immediate, as upstream
        if unbound_immediate:
            return None, Status.unresolvable(ERR_REASON_UNBOUND_IMMEDIATE)
        volumes_by_class: dict[str, list[Mapping[str, Any]]] = {}
        if delayed:
            pvs = snapshot.list_objects("PersistentVolume")  # by name
            for pvc in delayed:
                cls = _claim_class(pvc)
                if cls not in volumes_by_class:
                    volumes_by_class[cls] = [v for v in pvs if _volume_class(v) == cls]
        state.write(_STATE_KEY, _State(bound, delayed, volumes_by_class))
        eligible: set[str] | None = None
        for pvc in bound:
            pv = snapshot.get_object("PersistentVolume", (pvc.get("spec") or {}).get("volumeName"))
            if pv is None:
                eligible = None  # GetEligibleNodes gives up on an error
                break
            names = local_volume_node_names(pv)
            if names:
                eligible = names if eligible is None else eligible & names
        if eligible is not None:
            return PreFilterResult(frozenset(eligible)), None
        return None, None

    # ---- Filter
    def filter(self, state: CycleState, pod: PodInfo, node_info: Any) -> Status | None:
        """``FindPodVolumes`` for one node (see the module docstring)."""
        data: _State | None = state.read(_STATE_KEY)
        if data is None:
            return None
        from ...controllers.persistentvolume import find_matching_volume

        snapshot = state.snapshot
        node = node_info.node or {}
        node_name = _meta(node).get("name")
        labels = _meta(node).get("labels") or {}
        reasons: list[str] = []
        for pvc in data.bound:
            pv = snapshot.get_object("PersistentVolume", (pvc.get("spec") or {}).get("volumeName"))
            if pv is None:
                return Status.unresolvable(ERR_REASON_PV_NOT_EXIST)
            if not pv_node_affinity_matches(pv, labels):
                return Status.unresolvable(ERR_REASON_NODE_CONFLICT)
        bindings: list[tuple[Mapping[str, Any], Mapping[str, Any]]] = []
        provisions: list[Mapping[str, Any]] = []
        if data.delayed:
            to_match = []
            for pvc in data.delayed:
                selected = (_meta(pvc).get("annotations") or {}).get(ANN_SELECTED_NODE)
                if selected is not None:
                    if selected != node_name:
                        return Status.unresolvable(ERR_REASON_BIND_CONFLICT)
                    provisions.append(pvc)
                else:
                    to_match.append(pvc)
            chosen: list[str] = []
            for pvc in sorted(to_match, key=_requested):  # byPVCSize (stable here)
                pv = find_matching_volume(pvc, data.volumes_by_class.get(_claim_class(pvc), []), True,
                                          node_labels=labels, excluded=chosen)
                if pv is None:
                    provisions.append(pvc)
                    continue
                chosen.append(_meta(pv).get("name"))
                bindings.append((pv, pvc))
            for pvc in provisions:
                sc = snapshot.get_object("StorageClass", _claim_class(pvc))
                if sc is None:
                    return Status.error(f'storageclass.storage.k8s.io "{_claim_class(pvc)}" not found')
                provisioner = sc.get("provisioner") or ""
                if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
                    reasons.append(ERR_REASON_BIND_CONFLICT)
                    break
                if not _topology_matches(sc.get("allowedTopologies"), labels):
                    reasons.append(ERR_REASON_BIND_CONFLICT)
                    break
        if reasons:
            return Status.unresolvable(*reasons)
        data.by_node[node_name] = _PodVolumes(bindings, provisions)
        return None

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: Any) -> list[Status | None] | None:
        if state.read(_STATE_KEY) is None:
            return None
        verdicts = [self.filter(state, pod, ni) for ni in nodes]
        return None if all(v is None for v in verdicts) else verdicts

    # ---- Reserve (AssumePodVolumes)
    def reserve(self, state: CycleState, pod: Mapping[str, Any], node_name: str) -> Status | None:
        data: _State | None = state.read(_STATE_KEY)
        if data is None:
            return None
        volumes = data.by_node.get(node_name)
        data.all_bound = volumes is None or (not volumes.bindings and not volumes.provisions)
        return None

    def unreserve(self, state: CycleState, pod: Mapping[str, Any], node_name: str) -> None:
        return None

    # ---- PreBind (BindPodVolumes)
    def pre_bind(self, state: CycleState, pod: Mapping[str, Any], node_name: str) -> Status | None:
        """Send the bindings (once), then ``checkBindings``: None when every claim is fully bound,
        a ``Wait`` status while the PV controller (or a provisioner) has not finished, an error
        otherwise. The scheduler calls it again at each poll (see the module docstring)."""
        data: _State | None = state.read(_STATE_KEY)
        if data is None or data.all_bound:
            return None
        volumes = data.by_node.get(node_name)
        if volumes is None:
            return Status.error(f'no pod volumes for node "{node_name}"')
        client = getattr(self.handle, "binder_client", None)
        if client is None:
            return Status.error("binding volumes: no API client")
        if data.written is None:
            try:
                data.written = self._bind_api_update(client, volumes, node_name)
            except errors.StatusError as e:
                return Status.error(e.message)
            data.deadline = client.now() + self.bind_timeout
            return Status(Code.WAIT, ("waiting for volume binding",))
        try:
            done = self._check_bindings(client, pod, node_name, data.written)
        except _BindError as e:
            return Status.error(f"binding volumes: {e}")
        if done:
            return None
        if data.deadline is not None and client.now() >= data.deadline:
            return Status.error("binding volumes: context deadline exceeded")
        return Status(Code.WAIT, ("waiting for volume binding",))

    def _bind_api_update(self, client: Any, volumes: _PodVolumes, node_name: str) -> _PodVolumes:
        """``bindAPIUpdate``: the PVs' claimRefs, then the claims' ``selected-node``."""
        from ...controllers.persistentvolume import get_bind_volume_to_claim

        bindings = []
        for pv, pvc in volumes.bindings:
            body, dirty = get_bind_volume_to_claim(pv, pvc)
            if dirty:
                body = client.update("persistentvolumes", body)
            bindings.append((body, pvc))
        provisions = []
        for pvc in volumes.provisions:
            ann = dict(_meta(pvc).get("annotations") or {})
            if ann.get(ANN_SELECTED_NODE) != node_name:
                ann[ANN_SELECTED_NODE] = node_name
                body = {**pvc, "metadata": {**_meta(pvc), "annotations": {k: ann[k] for k in sorted(ann)}}}
                pvc = client.update("persistentvolumeclaims", body)
            provisions.append(pvc)
        return _PodVolumes(bindings, provisions)

    def _check_bindings(self, client: Any, pod: Mapping[str, Any], node_name: str, volumes: _PodVolumes) -> bool:
        """``checkBindings``: True once every claim is fully bound; raises on what needs a retry."""
        node = client.get("Node", node_name)
        if node is None:
            raise _BindError(f'failed to get node "{node_name}": node "{node_name}" not found')
        labels = _meta(node).get("labels") or {}
        m = _meta(pod)
        if not client.pod_exists(m.get("namespace"), m.get("name")):
            raise _BindError(f'pod does not exist any more: pod "{m.get("name")}" not found')
        for sent, claim in volumes.bindings:
            name = _meta(sent).get("name")
            pv = client.get("PersistentVolume", name)
            if pv is None:
                raise _BindError(f'failed to check binding: cannot convert object {name}')
            pvc = client.get("PersistentVolumeClaim", _claim_key(claim))
            if pvc is None:
                raise _BindError(f'failed to check binding: cannot convert object {_claim_key(claim)}')
            if _rv(sent) > _rv(pv):
                return False  # our update has not reached the cache yet
            if not pv_node_affinity_matches(pv, labels):
                raise _BindError(f'pv "{name}" node affinity doesn\'t match node "{node_name}": '
                                 "no matching NodeSelectorTerms")
            ref = (pv.get("spec") or {}).get("claimRef")
            if ref is None or not ref.get("uid"):
                raise _BindError(f'ClaimRef got reset for pv "{name}"')
            if not _fully_bound(pvc):
                return False
        for claim in volumes.provisions:
            pvc = client.get("PersistentVolumeClaim", _claim_key(claim))
            if pvc is None:
                raise _BindError(f"failed to check provisioning pvc: {_claim_key(claim)}")
            ann = _meta(pvc).get("annotations") or {}
            if not ann:
                raise _BindError(f'selectedNode annotation reset for PVC "{_meta(pvc).get("name")}"')
            if ann.get(ANN_SELECTED_NODE) != node_name:
                raise _BindError(f'provisioning failed for PVC "{_meta(pvc).get("name")}"')
            volume_name = (pvc.get("spec") or {}).get("volumeName")
            if volume_name:
                pv = client.get("PersistentVolume", volume_name)
                if pv is None:
                    return False
                if not pv_node_affinity_matches(pv, labels):
                    raise _BindError(f'pv "{volume_name}" node affinity doesn\'t match node "{node_name}": '
                                     "no matching NodeSelectorTerms")
            if not _fully_bound(pvc):
                return False
        return True


class _BindError(Exception):
    """``checkBindings`` failed: the binding cycle fails and the pod is retried."""


def _rv(o: Mapping[str, Any]) -> int:
    try:
        return int(_meta(o).get("resourceVersion") or 0)
    except ValueError:
        return 0


def _volume_class(pv: Mapping[str, Any]) -> str:
    ann = _meta(pv).get("annotations") or {}
    if _BETA_STORAGE_CLASS in ann:
        return ann[_BETA_STORAGE_CLASS] or ""
    return (pv.get("spec") or {}).get("storageClassName") or ""


def _requested(pvc: Mapping[str, Any]) -> Any:
    from ...api.quantity import parse_quantity

    value = (((pvc.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage")
    try:
        return parse_quantity(value if value is not None else 0).value
    except (ValueError, TypeError):
        return 0
