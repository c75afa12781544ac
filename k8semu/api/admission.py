"""Admission control: the plugins kube-apiserver runs after defaulting.

Mutating plugins run first (``admit`` returns a possibly changed object), then
validation, then validating plugins (``validate`` raises). The default chain,
in upstream's order:

- ``NamespaceLifecycle``: no new objects in a missing or terminating
  namespace; ``default``, ``kube-system``, ``kube-public`` and
  ``kube-node-lease`` cannot be deleted.
- ``LimitRanger``: container default requests/limits from LimitRanges (noted
  in the pod's ``kubernetes.io/limit-ranger`` annotation), and their min/max.
- ``ServiceAccount``: ``serviceAccountName: default`` and the projected
  ``kube-api-access-*`` token volume mounted in every container.
- ``Priority``: ``spec.priority`` (and ``preemptionPolicy``) from the pod's
  PriorityClass, the global default, or 0.
- ``DefaultTolerationSeconds``: not-ready / unreachable NoExecute tolerations
  for 300 s unless the pod has its own.
- ``ResourceQuota``: refuses a create (or a PersistentVolumeClaim's expansion)
  that would exceed a quota's ``hard`` limits, with upstream's ``exceeded quota``
  message, and a pod whose containers do not set the cpu/memory a quota limits
  (``failed quota``).

- ``DefaultStorageClass``: a new PersistentVolumeClaim that names no StorageClass at all
  gets the default one's name (the newest class annotated
  ``storageclass.kubernetes.io/is-default-class: "true"``), if the cluster has one.
- ``StorageObjectInUseProtection``: a new PersistentVolumeClaim gets the
  finalizer ``kubernetes.io/pvc-protection``, a new PersistentVolume
  ``kubernetes.io/pv-protection`` (kube-controller-manager's protection
  controllers remove them once nothing uses the object).
- ``PersistentVolumeClaimResize``: growing a claim's storage request needs a Bound claim
  whose StorageClass exists and has ``allowVolumeExpansion: true`` (after
  StorageObjectInUseProtection, before RuntimeClass, as in ``AllOrderedPlugins``).
- ``RuntimeClass``: a new pod naming a ``runtimeClassName`` that does not exist
  is refused; otherwise the class's ``overhead.podFixed`` becomes the pod's
  ``spec.overhead`` and its ``scheduling`` nodeSelector and tolerations are
  merged into the pod's (between StorageObjectInUseProtection and
  ResourceQuota, as in kube-apiserver's ``AllOrderedPlugins``).
- ``PodSecurity``: the Pod Security Standards a namespace's ``pod-security.kubernetes.io/*``
  labels ask for (:mod:`.podsecurity`): enforce refuses a pod, warn adds a warning, a workload's
  pod template is warned about; namespace label values are validated (after ServiceAccount, as
  in upstream's order).
- ``CertificateApproval``, ``CertificateSigning``, ``CertificateSubjectRestriction`` (one
  plugin, :class:`CertificateSigningRequestAdmission`, after RuntimeClass): who may approve
  or sign a CertificateSigningRequest for its signer, no ``system:masters`` client
  certificates, and the requesting user filled into a new request.
- ``ValidatingAdmissionPolicy``: the CEL policies of ``validatingadmissionpolicies`` bound by
  ``validatingadmissionpolicybindings`` (:mod:`.admissionpolicy`), just before ResourceQuota.
"""

from __future__ import annotations

import random

from typing import TYPE_CHECKING, Any, Protocol

from . import errors, strategy
from .meta import random_suffix
from .resources import ResourceInfo

if TYPE_CHECKING:
    from .apiserver import APIServer, RequestContext

__all__ = ["AdmissionPlugin", "AdmissionChain", "default_admission_chain", "SYSTEM_PRIORITY_CLASSES",
           "merge_tolerations"]

#: The annotation LimitRanger writes on a pod it gave default requests/limits.
LIMIT_RANGER_ANNOTATION = "kubernetes.io/limit-ranger"

PROTECTED_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")

#: The built-in PriorityClasses every cluster has.
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}


class AdmissionPlugin(Protocol):
    """One admission plugin. ``op`` is ``create``, ``update`` or ``delete``."""

    name: str

    def admit(self, op: str, info: ResourceInfo, obj: dict, old: dict | None, ctx: "RequestContext") -> dict: ...

    def validate(self, op: str, info: ResourceInfo, obj: dict, old: dict | None, ctx: "RequestContext") -> None: ...


class _Plugin:
    name = ""

    def __init__(self, server: "APIServer") -> None:
        self.server = server

    def admit(self, op, info, obj, old, ctx):
        return obj

    def validate(self, op, info, obj, old, ctx):
        return None


class AdmissionChain:
    """Runs plugins in order: every ``admit``, then (after validation) every ``validate``.

    A plugin may declare ``kinds`` (a frozenset of kind names): it is then called only for
    objects of those kinds (it still checks the group itself). Hooks a plugin leaves as
    :class:`_Plugin`'s no-ops are not called. Both only save calls on every write.
    """

    def __init__(self, plugins: list[AdmissionPlugin]) -> None:
        self.plugins = plugins
        self._by_kind: dict[str, tuple[list, list]] = {}

    def _hooks(self, kind: str) -> tuple[list, list]:
        hooks = self._by_kind.get(kind)
        if hooks is None:
            admitters, validators = [], []
            for p in self.plugins:
                kinds = getattr(p, "kinds", None)
                if kinds is not None and kind not in kinds:
                    continue
                if getattr(type(p), "admit", None) is not _Plugin.admit:
                    admitters.append(p.admit)
                if getattr(type(p), "validate", None) is not _Plugin.validate:
                    validators.append((p.validate, getattr(p, "takes_subresource", False)))
            hooks = self._by_kind[kind] = (admitters, validators)
        return hooks

    def admit(self, op, info, obj, old, ctx) -> dict:
        for admit in self._hooks(info.kind)[0]:
            obj = admit(op, info, obj, old, ctx)
        return obj

    def validate(self, op, info, obj, old, ctx, subresource: str = "") -> None:
        """Every plugin's ``validate``; a plugin with ``takes_subresource`` (the
        ValidatingAdmissionPolicy plugin) is also told the request's subresource."""
        for validate, takes_subresource in self._hooks(info.kind)[1]:
            if takes_subresource:
                validate(op, info, obj, old, ctx, subresource=subresource)
            else:
                validate(op, info, obj, old, ctx)


def _ns_of(obj: dict) -> str | None:
    return (obj.get("metadata") or {}).get("namespace")


class NamespaceLifecycle(_Plugin):
    name = "NamespaceLifecycle"

    def validate(self, op, info, obj, old, ctx):
        if info.kind == "Namespace":
            if op == "delete" and obj["metadata"]["name"] in PROTECTED_NAMESPACES:
                raise errors.Forbidden.for_resource(
                    "namespaces", "", obj["metadata"]["name"], "this namespace may not be deleted"
                )
            return
        if op != "create" or not info.namespaced:
            return
        ns = _ns_of(obj)
        rec = self.server.log.get(f"/registry/namespaces/{ns}")
        if rec is None:
            raise errors.NotFound.of("namespaces", "", ns)
        if (rec.object.get("metadata") or {}).get("deletionTimestamp") and info.kind != "Event":
            name = obj["metadata"].get("name", "")
            raise errors.Forbidden.for_resource(
                info.plural, info.group, name,
                f"unable to create new content in namespace {ns} because it is being terminated",
            )


class ServiceAccountAdmission(_Plugin):
    name = "ServiceAccount"
    kinds = frozenset({"Pod"})

    def admit(self, op, info, obj, old, ctx):
        if op != "create" or info.kind != "Pod":
            return obj
        spec = dict(obj.get("spec") or {})
        sa = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
        spec["serviceAccountName"] = sa
        spec["serviceAccount"] = sa
        automount = spec.get("automountServiceAccountToken", True)
        mount_path = "/var/run/secrets/kubernetes.io/serviceaccount"
        containers = spec.get("containers") or []
        already = any(
            m.get("mountPath") == mount_path
            for c in containers for m in c.get("volumeMounts") or []
        )
        if automount and not already:
            # a random suffix upstream; here drawn from the pod's own uid, not the server's RNG, so
            # re-sending a recorded pod (replay) leaves every later name, uid and tie-break alone
            uid = str((obj.get("metadata") or {}).get("uid") or "")
            vol_name = f"kube-api-access-{random_suffix(random.Random(uid))}"
            spec["volumes"] = list(spec.get("volumes") or []) + [_token_volume(vol_name)]
            mount = {"name": vol_name, "readOnly": True, "mountPath": mount_path}
            for field in ("initContainers", "containers"):
                if spec.get(field):
                    spec[field] = [
                        {**c, "volumeMounts": list(c.get("volumeMounts") or []) + [mount]}
                        for c in spec[field]
                    ]
        return {**obj, "spec": spec}


def _token_volume(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                    "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
            ],
        },
    }


class Priority(_Plugin):
    name = "Priority"
    kinds = frozenset({"Pod"})

    def admit(self, op, info, obj, old, ctx):
        if op != "create" or info.kind != "Pod":
            return obj
        spec = dict(obj.get("spec") or {})
        pc_name = spec.get("priorityClassName")
        if pc_name:
            if pc_name in SYSTEM_PRIORITY_CLASSES:
                value, policy = SYSTEM_PRIORITY_CLASSES[pc_name], "PreemptLowerPriority"
            else:
                rec = self.server.log.get(f"/registry/priorityclasses.scheduling.k8s.io/{pc_name}")
                if rec is None:
                    raise errors.Forbidden.for_resource(
                        "pods", "", obj["metadata"].get("name", ""),
                        f"no PriorityClass with name {pc_name} was found",
                    )
                value = rec.object.get("value", 0)
                policy = rec.object.get("preemptionPolicy", "PreemptLowerPriority")
        else:
            value, policy = 0, "PreemptLowerPriority"
            for rec in self.server.log.range("/registry/priorityclasses.scheduling.k8s.io/"):
                if rec.object.get("globalDefault"):
                    value = rec.object.get("value", 0)
                    policy = rec.object.get("preemptionPolicy", "PreemptLowerPriority")
                    spec["priorityClassName"] = rec.object["metadata"]["name"]
                    break
        if "priority" in spec and spec["priority"] != value:
            raise errors.Forbidden.for_resource(
                "pods", "", obj["metadata"].get("name", ""),
                "the integer value of priority must not be provided in pod spec; priority admission "
                "controller computed " f"{value} from the given PriorityClass name",
            )
        spec["priority"] = value
        spec.setdefault("preemptionPolicy", policy)
        return {**obj, "spec": spec}


class DefaultTolerationSeconds(_Plugin):
    name = "DefaultTolerationSeconds"
    kinds = frozenset({"Pod"})
    TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")

    def admit(self, op, info, obj, old, ctx):
        if op != "create" or info.kind != "Pod":
            return obj
        tols = list((obj.get("spec") or {}).get("tolerations") or [])
        changed = False
        for key in self.TAINTS:
            if any(
                (t.get("key") == key or (not t.get("key") and t.get("operator") == "Exists"))
                and t.get("effect") in (None, "", "NoExecute")
                for t in tols
            ):
                continue
            tols.append({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})
            changed = True
        if not changed:
            return obj
        return {**obj, "spec": {**obj["spec"], "tolerations": tols}}


class DefaultStorageClass(_Plugin):
    """Upstream ``storageclass/setdefault`` (plugin ``DefaultStorageClass``), on create only:
    a PersistentVolumeClaim with no class at all — neither ``spec.storageClassName`` (an
    explicit ``""`` counts as a class: "no class") nor the beta annotation
    ``volume.beta.kubernetes.io/storage-class`` — gets ``spec.storageClassName`` set to the
    default StorageClass (``GetDefaultClass``: of the classes whose
    ``storageclass.kubernetes.io/is-default-class`` or beta annotation is ``"true"``, the newest
    by ``creationTimestamp``, then the first by name). Without a default class the claim is
    left as it is (the PV controller may still assign one later)."""

    name = "DefaultStorageClass"
    kinds = frozenset({"PersistentVolumeClaim"})
    BETA_CLASS = "volume.beta.kubernetes.io/storage-class"
    DEFAULT_ANNOTATIONS = ("storageclass.kubernetes.io/is-default-class",
                           "storageclass.beta.kubernetes.io/is-default-class")

    def admit(self, op, info, obj, old, ctx):
        if op != "create" or info.kind != "PersistentVolumeClaim":
            return obj
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        if self.BETA_CLASS in (meta.get("annotations") or {}) or spec.get("storageClassName") is not None:
            return obj
        name = self.default_class_name()
        if name is None:
            return obj
        return {**obj, "spec": {**spec, "storageClassName": name}}

    def default_class_name(self) -> str | None:
        """``GetDefaultClass``: the default StorageClass's name, or None."""
        from .meta import parse_time

        best: tuple[float, str] | None = None
        for rec in self.server.log.range("/registry/storageclasses.storage.k8s.io/"):
            m = rec.object.get("metadata") or {}
            ann = m.get("annotations") or {}
            if not any(ann.get(a) == "true" for a in self.DEFAULT_ANNOTATIONS):
                continue
            stamp = m.get("creationTimestamp")
            created = parse_time(self.server.epoch, stamp) if stamp else 0.0
            key = (-created, m.get("name") or "")
            if best is None or key < best:
                best = key
        return None if best is None else best[1]


class StorageObjectInUseProtection(_Plugin):
    """Upstream ``storageobjectinuseprotection``: on create only, append the protection finalizer
    to a PVC or PV that does not have it yet."""

    name = "StorageObjectInUseProtection"
    FINALIZERS = {"PersistentVolumeClaim": "kubernetes.io/pvc-protection",
                  "PersistentVolume": "kubernetes.io/pv-protection"}
    kinds = frozenset(FINALIZERS)

    def admit(self, op, info, obj, old, ctx):
        finalizer = self.FINALIZERS.get(info.kind)
        if op != "create" or finalizer is None:
            return obj
        meta = obj.get("metadata") or {}
        finalizers = list(meta.get("finalizers") or [])
        if finalizer in finalizers:
            return obj
        return {**obj, "metadata": {**meta, "finalizers": finalizers + [finalizer]}}


class PersistentVolumeClaimResize(_Plugin):
    """Upstream ``PersistentVolumeClaimResize`` (plugin/pkg/admission/storage/persistentvolume/resize),
    a validating plugin on update only, never on a subresource (a claim's ``status``): an update
    that grows ``spec.resources.requests.storage`` is refused (403) unless the stored claim is
    ``Bound`` (``persistentvolumeclaims "a" is forbidden: Only bound persistent volume claims
    can be expanded``) and the claim names the same non-empty StorageClass before and after
    (``GetPersistentVolumeClaimClass``: the beta annotation, else ``spec.storageClassName``),
    a class that exists and sets ``allowVolumeExpansion: true`` (else ``… is forbidden: only
    dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must
    support resize``). A request that stays or shrinks is not this plugin's business
    (validation decides). It runs after validation, so an unbound claim's growth is already
    refused there (the spec is immutable until bound)."""

    name = "PersistentVolumeClaimResize"
    kinds = frozenset({"PersistentVolumeClaim"})
    takes_subresource = True

    def validate(self, op, info, obj, old, ctx, subresource=""):
        if op != "update" or subresource or (info.kind, info.group) != ("PersistentVolumeClaim", "") or old is None:
            return
        from .quantity import parse_quantity
        from .quota import pvc_storage_class

        def size(claim):
            requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
            return parse_quantity(requests.get("storage") or "0")

        if not size(old) < size(obj):
            return
        name = (obj.get("metadata") or {}).get("name", "")
        if (old.get("status") or {}).get("phase") != "Bound":
            raise errors.Forbidden.for_resource(info.plural, info.group, name,
                                                "Only bound persistent volume claims can be expanded")
        if not self._allow_resize(pvc_storage_class(obj), pvc_storage_class(old)):
            raise errors.Forbidden.for_resource(
                info.plural, info.group, name,
                "only dynamically provisioned pvc can be resized and the storageclass that provisions "
                "the pvc must support resize")

    def _allow_resize(self, cls: str, old_cls: str) -> bool:
        if not cls or not old_cls or cls != old_cls:
            return False
        rec = self.server.log.get(f"/registry/storageclasses.storage.k8s.io/{cls}")
        if rec is None:
            return False
        return rec.object.get("allowVolumeExpansion") is True


def _toleration_is_superset(ss: dict, t: dict) -> bool:
    """Upstream ``isSuperset`` (pkg/util/tolerations): ``ss`` tolerates everything ``t`` does."""
    if ss == t:
        return True
    if t.get("key", "") != ss.get("key", "") and (ss.get("key", "") != "" or ss.get("operator") != "Exists"):
        return False
    if t.get("effect", "") != ss.get("effect", "") and ss.get("effect", "") != "":
        return False
    if ss.get("effect") == "NoExecute" and ss.get("tolerationSeconds") is not None:
        if t.get("tolerationSeconds") is None or t["tolerationSeconds"] > ss["tolerationSeconds"]:
            return False
    op = ss.get("operator") or ""
    if op in ("Equal", ""):
        return t.get("operator") == "Equal" and t.get("value", "") == ss.get("value", "")
    return op == "Exists"


def merge_tolerations(first: list[dict], second: list[dict]) -> list[dict]:
    """Upstream ``MergeTolerations`` (pkg/util/tolerations): ``first`` then ``second``, leaving out
    a toleration another one kept (or a later, different one) already covers; of equal ones the
    first stays."""
    every = list(first) + list(second)
    merged: list[dict] = []
    for i, t in enumerate(every):
        if any(_toleration_is_superset(t2, t) for t2 in merged):
            continue
        if any(t != t2 and _toleration_is_superset(t2, t) for t2 in every[i + 1:]):
            continue
        merged.append(t)
    return merged


def _same_resources(a: dict | None, b: dict | None) -> bool:
    """``apiequality.Semantic.DeepEqual`` of two ResourceLists (quantities compared by value)."""
    from .quantity import parse_quantity

    a, b = a or {}, b or {}
    if set(a) != set(b):
        return False
    return all(parse_quantity(a[k]) == parse_quantity(b[k]) for k in a)


class RuntimeClassAdmission(_Plugin):
    """Upstream ``runtimeclass`` admission (plugin/pkg/admission/runtimeclass), on pod create only.

    ``admit``: a pod whose ``runtimeClassName`` names no RuntimeClass is refused (``pods "p" is
    forbidden: pod rejected: RuntimeClass "x" not found``). With a class that has
    ``overhead.podFixed``, that becomes ``spec.overhead`` (a pod that already sets a different
    overhead: ``pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead``).
    With ``scheduling``: its ``nodeSelector`` is merged into the pod's (a key the pod sets to
    another value: ``conflict: runtimeClass.scheduling.nodeSelector[k] = v;
    pod.spec.nodeSelector[k] = w``) and its tolerations merged with ``MergeTolerations``.
    ``validate``: the overhead must equal the class's, and a pod without a class overhead must
    not set one (``pod rejected: Pod Overhead set without corresponding RuntimeClass defined
    Overhead``).
    """

    name = "RuntimeClass"
    kinds = frozenset({"Pod"})

    def _prepare(self, obj):
        rc_name = (obj.get("spec") or {}).get("runtimeClassName")
        if rc_name is None:
            return None
        rec = self.server.log.get(f"/registry/runtimeclasses.node.k8s.io/{rc_name}")
        if rec is None:
            raise errors.Forbidden.for_resource(
                "pods", "", obj["metadata"].get("name", ""), f'pod rejected: RuntimeClass "{rc_name}" not found')
        return rec.object

    @staticmethod
    def _forbidden(obj, text):
        return errors.Forbidden.for_resource("pods", "", obj["metadata"].get("name", ""), text)

    def admit(self, op, info, obj, old, ctx):
        if op != "create" or info.kind != "Pod":
            return obj
        rc = self._prepare(obj)
        if rc is None:
            return obj
        spec = dict(obj.get("spec") or {})
        overhead = rc.get("overhead")
        if overhead is not None:
            pod_fixed = overhead.get("podFixed")
            if spec.get("overhead") is not None and not _same_resources(pod_fixed, spec["overhead"]):
                raise self._forbidden(obj, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
            if pod_fixed is None:
                spec.pop("overhead", None)
            else:
                spec["overhead"] = dict(pod_fixed)
        scheduling = rc.get("scheduling")
        if scheduling is not None:
            rc_selector = scheduling.get("nodeSelector")
            selector = spec.get("nodeSelector")
            if selector is None:
                selector = dict(rc_selector) if rc_selector is not None else None
            else:
                selector = dict(selector)
                for key, value in (rc_selector or {}).items():
                    if key in selector and selector[key] != value:
                        raise self._forbidden(
                            obj, f"conflict: runtimeClass.scheduling.nodeSelector[{key}] = {value}; "
                                 f"pod.spec.nodeSelector[{key}] = {selector[key]}")
                    selector[key] = value
            tolerations = merge_tolerations(spec.get("tolerations") or [], scheduling.get("tolerations") or [])
            for field, value in (("nodeSelector", selector), ("tolerations", tolerations or None)):
                if value is None:
                    spec.pop(field, None)
                else:
                    spec[field] = value
        return {**obj, "spec": spec}

    def validate(self, op, info, obj, old, ctx):
        if op != "create" or info.kind != "Pod":
            return
        rc = self._prepare(obj)
        pod_overhead = (obj.get("spec") or {}).get("overhead")
        if rc is not None and rc.get("overhead") is not None:
            if not _same_resources(rc["overhead"].get("podFixed"), pod_overhead):
                raise self._forbidden(obj, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
        elif pod_overhead is not None:
            raise self._forbidden(
                obj, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")


class LimitRanger(_Plugin):
    name = "LimitRanger"
    kinds = frozenset({"Pod", "PersistentVolumeClaim"})

    def _ranges(self, ns: str) -> list[dict]:
        return [r.object for r in self.server.log.range(f"/registry/limitranges/{ns}/")]

    def admit(self, op, info, obj, old, ctx):
        """Upstream's ``PodMutateLimitFunc`` for each LimitRange in turn (name order): the
        ``Container`` items' ``default`` (limits) and ``defaultRequest`` (requests) fill in
        what each container and init container leaves unset, and the pod is annotated
        ``kubernetes.io/limit-ranger: LimitRanger plugin set: cpu, memory request for
        container nginx; cpu, memory limit for container nginx`` (a later LimitRange that
        sets something replaces the note)."""
        if op != "create" or info.kind != "Pod":
            return obj
        ranges = self._ranges(_ns_of(obj))
        if not ranges:
            return obj
        spec = dict(obj.get("spec") or {})
        for field in ("initContainers", "containers"):
            if spec.get(field):
                spec[field] = [dict(c) for c in spec[field]]
        annotation = None
        for lr in ranges:
            def_req: dict[str, Any] = {}
            def_lim: dict[str, Any] = {}
            for item in (lr.get("spec") or {}).get("limits") or []:
                if item.get("type") == "Container":
                    def_req.update(item.get("defaultRequest") or {})
                    def_lim.update(item.get("default") or {})
            notes: list[str] = []
            for field, prefix in (("containers", "container"), ("initContainers", "init container")):
                for c in spec.get(field) or ():
                    res = dict(c.get("resources") or {})
                    req = dict(res.get("requests") or {})
                    lim = dict(res.get("limits") or {})
                    set_lim = [r for r in def_lim if r not in lim]
                    set_req = [r for r in def_req if r not in req]
                    for r in set_lim:
                        lim[r] = def_lim[r]
                    for r in set_req:
                        req[r] = def_req[r]
                    if set_req:
                        notes.append(f"{', '.join(sorted(set_req))} request for {prefix} {c.get('name', '')}")
                    if set_lim:
                        notes.append(f"{', '.join(sorted(set_lim))} limit for {prefix} {c.get('name', '')}")
                    if set_req or set_lim:
                        if req:
                            res["requests"] = req
                        if lim:
                            res["limits"] = lim
                        c["resources"] = res
            if notes:
                annotation = "LimitRanger plugin set: " + "; ".join(notes)
        if annotation is None:
            return obj
        meta = dict(obj.get("metadata") or {})
        meta["annotations"] = {**(meta.get("annotations") or {}), LIMIT_RANGER_ANNOTATION: annotation}
        return {**obj, "metadata": meta, "spec": spec}

    def validate(self, op, info, obj, old, ctx):
        """The ``Container`` items' min/max for a new pod; the ``PersistentVolumeClaim`` items'
        for a claim created or updated (``PersistentVolumeClaimValidateLimitFunc``)."""
        if (info.kind, info.group) == ("PersistentVolumeClaim", "") and op in ("create", "update"):
            return self._validate_claim(obj)
        if op != "create" or info.kind != "Pod":
            return
        from .quantity import parse_quantity

        ranges = self._ranges(_ns_of(obj))
        name = obj["metadata"].get("name", "")
        for lr in ranges:
            for item in (lr.get("spec") or {}).get("limits") or []:
                if item.get("type") != "Container":
                    continue
                for c in obj["spec"].get("containers") or []:
                    res = c.get("resources") or {}
                    for r, q in (item.get("max") or {}).items():
                        lim = (res.get("limits") or {}).get(r)
                        if lim is not None and parse_quantity(lim) > parse_quantity(q):
                            raise errors.Forbidden.for_resource(
                                "pods", "", name,
                                f"maximum {r} usage per Container is {q}, but limit is {lim}",
                            )
                    for r, q in (item.get("min") or {}).items():
                        rq = (res.get("requests") or {}).get(r)
                        if rq is not None and parse_quantity(rq) < parse_quantity(q):
                            raise errors.Forbidden.for_resource(
                                "pods", "", name,
                                f"minimum {r} usage per Container is {q}, but request is {rq}",
                            )


    def _validate_claim(self, obj: dict) -> None:
        """Each ``PersistentVolumeClaim`` item's ``min`` and ``max`` against the claim's
        ``spec.resources.requests`` (``minimum storage usage per PersistentVolumeClaim is 1Gi,
        but request is 500Mi``; ``… No request is specified`` without one); several at once are
        listed as upstream's aggregate error ``[a, b]``."""
        from .quantity import parse_quantity

        requests = ((obj.get("spec") or {}).get("resources") or {}).get("requests") or {}
        kind = "PersistentVolumeClaim"
        errs: list[str] = []
        for lr in self._ranges(_ns_of(obj)):
            for item in (lr.get("spec") or {}).get("limits") or []:
                if item.get("type") != kind:
                    continue
                for bound, word, too_far in (("min", "minimum", lambda rq, q: rq < q),
                                             ("max", "maximum", lambda rq, q: rq > q)):
                    for r, q in sorted((item.get(bound) or {}).items()):
                        enforced = parse_quantity(q)
                        rq = requests.get(r)
                        if rq is None:
                            errs.append(f"{word} {r} usage per {kind} is {enforced}.  No request is specified")
                        elif too_far(parse_quantity(rq), enforced):
                            errs.append(f"{word} {r} usage per {kind} is {enforced}, but request is "
                                        f"{parse_quantity(rq)}")
        if errs:
            message = errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"
            raise errors.Forbidden.for_resource("persistentvolumeclaims", "", obj["metadata"].get("name", ""), message)


class ResourceQuotaAdmission(_Plugin):
    """Upstream's ``CheckRequest``, over the namespace's quotas in name order.

    Handled, as upstream's evaluators ``Handles``: every create of a namespaced object, and
    the update of a PersistentVolumeClaim (its volume expansion); never a subresource
    (a claim's ``status``, a pod's ``binding``), which upstream's plugin ignores.

    First, for every quota that matches the object (its ``hard`` names a resource the
    object's evaluator tracks, and its scopes match), the evaluator's constraints: a pod
    under a quota of ``requests.cpu``, ``limits.memory``… must set them in every
    container, else ``failed quota: <quota>: must specify limits.memory for: p1;
    requests.cpu for: p1`` (claims have none). Then each matching quota is charged what
    the request adds (:func:`.quota.admission_delta`: a claim's growth, on update):
    ``exceeded quota: <quota>, requested: requests.storage=5Gi, used: requests.storage=0,
    limited: requests.storage=1Gi`` when it would go over, each part naming the exceeded
    resources in sorted order, joined by ``,``, quantities in canonical form. An update that
    does not grow a claim charges nothing and is never refused, even over a quota lowered
    below what the namespace already uses.
    """

    name = "ResourceQuota"
    takes_subresource = True

    def validate(self, op, info, obj, old, ctx, subresource=""):
        if subresource or op not in ("create", "update") or not info.namespaced:
            return
        if op == "update" and (info.kind, info.group) != ("PersistentVolumeClaim", ""):
            return
        ns = _ns_of(obj)
        quotas = [r.object for r in self.server.log.range(f"/registry/resourcequotas/{ns}/")]
        if not quotas:
            return
        from .quantity import parse_quantity
        from .quota import admission_delta, namespace_usage, pod_constraints, quota_usage, scopes_match

        name = obj["metadata"].get("name", "")
        matching = [q for q in quotas if scopes_match(q, info, obj)]
        if info.kind == "Pod":
            for q in matching:
                hard = (q.get("spec") or {}).get("hard") or {}
                err = pod_constraints(hard, obj)
                if err:
                    raise errors.Forbidden.for_resource(
                        info.plural, info.group, name, f"failed quota: {q['metadata']['name']}: {err}")
        delta = admission_delta(op, info, obj, old)
        if not delta:
            return
        zero = parse_quantity(0)
        unscoped = None
        for q in matching:
            hard = (q.get("spec") or {}).get("hard") or {}
            if not any(r in delta for r in hard):
                continue
            if unscoped is None:
                unscoped = namespace_usage(self.server.log, ns)
            # live usage: for an update it already holds the old object, so ``used + delta``
            # is the new total, as upstream's ``status.used + delta``
            used = quota_usage(self.server.log, ns, q, unscoped)
            bad = []
            for r in sorted(hard):
                if r not in delta:
                    continue
                total = used.get(r, zero) + delta[r]
                if total > parse_quantity(hard[r]):
                    bad.append(r)
            if bad:
                req = ",".join(f"{r}={delta[r]}" for r in bad)
                usd = ",".join(f"{r}={used.get(r, zero)}" for r in bad)
                lim = ",".join(f"{r}={parse_quantity(hard[r])}" for r in bad)
                raise errors.Forbidden.for_resource(
                    info.plural, info.group, name,
                    f"exceeded quota: {q['metadata']['name']}, requested: {req}, used: {usd}, limited: {lim}",
                )


class PodSecurity(_Plugin):
    """Upstream's ``PodSecurity`` plugin (plugin/pkg/admission/security/podsecurity over
    k8s.io/pod-security-admission), with the default configuration: ``privileged:latest`` for
    every mode unless the namespace's ``pod-security.kubernetes.io/*`` labels say otherwise, no
    exemptions. The policy itself is :mod:`.podsecurity`. On create and update only:

    - **Namespaces** (not their subresources): a bad label value is refused on create, and on
      an update that changes it (``Namespace "x" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]:
      Invalid value: "foo": must be one of privileged, baseline, restricted``, 422). An update
      that makes the enforce policy stricter checks the namespace's pods and adds warnings
      (``existing pods in namespace "x" violate the new PodSecurity enforce level "baseline:latest"``,
      ``web-abc (and 1 other pod): host namespaces, privileged``), a dry run too.
    - **Pods** (create; an update only when upstream's ``isSignificantPodUpdate`` says so, e.g.
      the ``ephemeralcontainers`` subresource adding one; never ``status``, ``binding``,
      ``eviction``…): enforce refuses, 403 ``pods "x" is forbidden: violates PodSecurity
      "restricted:latest": <reason> (<detail>), …``; otherwise warn adds the warning ``would
      violate PodSecurity "restricted:latest": …``.
    - **Workloads** (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs,
      ReplicationControllers, PodTemplates; not their subresources): the pod template gets warn
      (and audit) only, never enforce — the controller's pods are what enforce refuses.

    Audit mode has nothing to write to (k8semu keeps no audit log): it is not evaluated.
    """

    name = "PodSecurity"
    takes_subresource = True

    def _namespace_labels(self, ns: str | None) -> dict:
        rec = self.server.log.get(f"/registry/namespaces/{ns}") if ns else None
        return ((rec.object.get("metadata") or {}).get("labels") or {}) if rec is not None else {}

    def validate(self, op, info, obj, old, ctx, subresource=""):
        if op not in ("create", "update") or info.group not in ("", "apps", "batch"):
            return
        from . import podsecurity as psa

        if (info.group, info.plural) == ("", "namespaces"):
            if not subresource:
                self._validate_namespace(psa, op, obj, old, ctx)
            return
        if (info.group, info.plural) == ("", "pods"):
            if subresource in psa.IGNORED_POD_SUBRESOURCES:
                return
            policy, _ = psa.policy_to_evaluate(self._namespace_labels(_ns_of(obj)))
            if policy.fully_privileged():
                return
            if op == "update" and old is not None and not psa.is_significant_pod_update(obj, old):
                return
            self._evaluate(psa, policy, info, obj, obj.get("metadata"), obj.get("spec"), ctx, enforce=True)
            return
        if (info.group, info.plural) not in psa.POD_CONTROLLER_RESOURCES or subresource:
            return
        policy, _ = psa.policy_to_evaluate(self._namespace_labels(_ns_of(obj)))
        if policy.warn.level == psa.PRIVILEGED:  # (and audit, which is not evaluated here)
            return
        template = psa.pod_template_of(info.plural, obj)
        if template is None:
            return
        self._evaluate(psa, policy, info, obj, template.get("metadata"), template.get("spec"), ctx, enforce=False)

    def _evaluate(self, psa, policy, info, obj, pod_meta, pod_spec, ctx, *, enforce: bool) -> None:
        cached: dict = {}
        if enforce:
            results = cached[policy.enforce] = psa.check_pod(policy.enforce, pod_spec, pod_meta)
            if results:
                raise errors.Forbidden.for_resource(
                    info.plural, info.group, (obj.get("metadata") or {}).get("name", ""),
                    f"violates PodSecurity {_go_quoted(str(policy.enforce))}: {psa.forbidden_detail(results)}")
        if ctx is None or ctx.warnings is None:
            return
        results = cached.get(policy.warn)
        if results is None:
            results = psa.check_pod(policy.warn, pod_spec, pod_meta)
        if results:
            ctx.warnings.append(
                f"would violate PodSecurity {_go_quoted(str(policy.warn))}: {psa.forbidden_detail(results)}")

    def _validate_namespace(self, psa, op, obj, old, ctx) -> None:
        name = (obj.get("metadata") or {}).get("name", "")
        new_policy, new_errs = psa.policy_to_evaluate((obj.get("metadata") or {}).get("labels"))
        if op == "create":
            if new_errs:
                raise errors.Invalid("Namespace", "", name, new_errs)
            return
        old_policy, old_errs = psa.policy_to_evaluate(((old or {}).get("metadata") or {}).get("labels"))
        if new_errs and (not old_errs or [e.text() for e in new_errs] != [e.text() for e in old_errs]):
            raise errors.Invalid("Namespace", "", name, new_errs)
        if not psa.namespace_update_needs_pod_check(new_policy, old_policy):
            return
        if ctx is None or ctx.warnings is None:
            return
        pods = [r.object for r in self.server.log.range(f"/registry/pods/{name}/")]
        ctx.warnings.extend(psa.evaluate_pods_in_namespace(name, pods, new_policy.enforce))


def _go_quoted(s: str) -> str:
    from .gofmt import go_quote

    return go_quote(s)


class CertificateSigningRequestAdmission:
    """What kube-apiserver does to CertificateSigningRequests with the request's user, its clock
    and its authorizer — upstream ``csrStrategy.PrepareForCreate`` / ``populateConditionTimestamps``
    and three admission plugins — as one admission plugin of the server's chain
    (:func:`default_admission_chain`):

    * ``admit`` on create: ``spec.username``, ``uid``, ``groups`` and ``extra`` are the requesting
      user's (whatever the client sent is dropped), ``status`` is emptied; on update: condition
      timestamps are filled from the virtual clock;
    * ``validate`` on update: the subresource's own validation (:func:`~k8semu.api.strategy.csr_subresource_errors`,
      a 422), then ``CertificateApproval`` (an ``/approval`` update needs verb ``approve`` on
      ``certificates.k8s.io`` ``signers`` named the signer, or ``<domain>/*``: else 403
      ``user not permitted to approve requests with signerName "…"``) and
      ``CertificateSigning`` (a ``/status`` update that changes the certificate needs
      ``sign`` likewise);
    * ``validate`` on create: ``CertificateSubjectRestriction`` (a
      ``kubernetes.io/kube-apiserver-client`` request for group ``system:masters`` is refused).
    """

    name = "CertificateSigningRequest"
    takes_subresource = True

    def __init__(self, server: Any) -> None:
        self.server = server

    @staticmethod
    def _is_csr(info: Any) -> bool:
        return getattr(info, "group", None) == strategy.CSR_GROUP and getattr(info, "plural", None) == strategy.CSR_PLURAL

    def admit(self, op: str, info: Any, obj: dict, old: dict | None, ctx: Any) -> dict:
        if not self._is_csr(info):
            return obj
        if op == "create":
            user = ctx.user
            spec = {k: v for k, v in (obj.get("spec") or {}).items()
                    if k not in ("username", "uid", "groups", "extra")}
            if user.name:
                spec["username"] = user.name
            if user.uid:
                spec["uid"] = user.uid
            if user.groups:
                spec["groups"] = list(user.groups)
            if user.extra:
                spec["extra"] = {k: list(user.extra[k]) for k in sorted(user.extra)}
            return {**obj, "spec": spec, "status": {}}
        if op == "update" and old is not None:
            return strategy.populate_csr_condition_timestamps(obj, old, self.server.timestamp())
        return obj

    def validate(self, op: str, info: Any, obj: dict, old: dict | None, ctx: Any, subresource: str = "") -> None:
        from . import errors

        if not self._is_csr(info):
            return
        name = (obj.get("metadata") or {}).get("name") or ""
        if op == "create":
            self._subject_restriction(obj, name)
            return
        if op != "update" or old is None:
            return
        errs = strategy.csr_subresource_errors(obj, old, subresource)
        if errs:
            raise errors.Invalid("CertificateSigningRequest", strategy.CSR_GROUP, name, errs)
        if subresource == "approval":
            signer = (obj.get("spec") or {}).get("signerName") or ""
            if not self.authorized_for_signer(ctx.user, "approve", signer):
                raise errors.Forbidden.for_resource(
                    strategy.CSR_PLURAL, strategy.CSR_GROUP, name, f'user not permitted to approve requests with signerName "{signer}"')
        elif subresource == "status":
            from .validation import wire_bytes

            if wire_bytes((obj.get("status") or {}).get("certificate")) != wire_bytes(
                    (old.get("status") or {}).get("certificate")):
                signer = (old.get("spec") or {}).get("signerName") or ""
                if not self.authorized_for_signer(ctx.user, "sign", signer):
                    raise errors.Forbidden.for_resource(
                        strategy.CSR_PLURAL, strategy.CSR_GROUP, name, f'user not permitted to sign requests with signerName "{signer}"')

    def authorized_for_signer(self, user: Any, verb: str, signer: str) -> bool:
        """``IsAuthorizedForSignerName``: ``verb`` on ``certificates.k8s.io`` ``signers`` named
        ``signer``, or else named ``<domain>/*``. Always True without RBAC (``authorize=False``)."""
        from .auth import Attributes

        authorizer = getattr(self.server, "_authorizer", None)
        if authorizer is None:
            return True
        for name in (signer, signer.split("/", 1)[0] + "/*"):
            if authorizer.authorize(Attributes(user=user, verb=verb, api_group=strategy.CSR_GROUP,
                                               resource="signers", name=name))[0]:
                return True
        return False

    @staticmethod
    def _subject_restriction(obj: dict, name: str) -> None:
        from . import errors
        from .validation import parse_csr_pem, wire_bytes

        if (obj.get("spec") or {}).get("signerName") != strategy.KUBE_APISERVER_CLIENT_SIGNER:
            return
        try:
            csr = parse_csr_pem(wire_bytes((obj.get("spec") or {}).get("request")))
        except ValueError as e:  # validation has refused it already; as upstream, say so again
            raise errors.Forbidden.for_resource(strategy.CSR_PLURAL, strategy.CSR_GROUP, name, f"failed to parse CSR: {e}") from None
        from cryptography.x509.oid import NameOID

        if any(a.value == "system:masters" for a in csr.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)):
            raise errors.Forbidden.for_resource(
                strategy.CSR_PLURAL, strategy.CSR_GROUP, name,
                f"use of {strategy.KUBE_APISERVER_CLIENT_SIGNER} signer with system:masters group is not allowed")


def default_admission_chain(server: "APIServer") -> AdmissionChain:
    """The plugins enabled by default, in kube-apiserver's order."""
    from .admissionpolicy import ValidatingAdmissionPolicyAdmission

    return AdmissionChain([
        NamespaceLifecycle(server),
        LimitRanger(server),
        ServiceAccountAdmission(server),
        PodSecurity(server),
        Priority(server),
        DefaultTolerationSeconds(server),
        DefaultStorageClass(server),
        StorageObjectInUseProtection(server),
        PersistentVolumeClaimResize(server),
        RuntimeClassAdmission(server),
        CertificateSigningRequestAdmission(server),
        ValidatingAdmissionPolicyAdmission(server),
        ResourceQuotaAdmission(server),
    ])
