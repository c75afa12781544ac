"""PATCH bodies applied exactly as kube-apiserver applies them, plus kubectl's patch builders.

Three patch types exist upstream, one function each:

* :func:`apply_merge_patch` — ``application/merge-patch+json`` (RFC 7386, as
  evanphx/json-patch ``MergePatch`` does it): ``null`` deletes, objects merge,
  everything else (lists included) is replaced.
* :func:`apply_json_patch` — ``application/json-patch+json`` (RFC 6902), run by
  the ``jsonpatch`` library.
* :func:`apply_strategic_merge_patch` — ``application/strategic-merge-patch+json``
  as ``k8s.io/apimachinery/pkg/util/strategicpatch`` does it for built-in types.

and the two diff builders kubectl uses (:func:`create_two_way_merge_patch`,
:func:`create_three_way_merge_patch`, the latter being client-side ``kubectl
apply`` with ``last-applied-configuration`` as *original*).

Design. Strategic merge patch needs per-field metadata that upstream reads from
Go struct tags (``patchStrategy``/``patchMergeKey``). Here that lives in one
table, :data:`PATCH_TYPES`: Go type name -> JSON field -> :class:`FieldMeta`
(strategy, merge key, and the type of the field's value or list element). Only
fields that carry a tag, or lead to one, are listed; anything else is "plain"
(maps merge recursively, lists are replaced) — which is also the fallback for a
kind not in :data:`ROOT_TYPES`. :func:`patch_meta` flattens the table into
``path -> PatchMeta`` per kind, for the OpenAPI generator's
``x-kubernetes-patch-strategy`` / ``x-kubernetes-patch-merge-key``.

The algorithms mirror upstream's step by step (same directive handling, same
element-ordering rules, same error texts) but work on copies: inputs are
never mutated. Where upstream copies raw patch values into the result and
relies on typed decoding to drop leftovers, the server side here removes them
itself: a map still holding ``$patch``, the keys ``$retainKeys``,
``$setElementOrder/…``, ``$deleteFromPrimitiveList/…``, and ``null`` map
values never reach the stored object.

Errors map as kube-apiserver maps them (``staging/.../endpoints/handlers/patch.go``):

* malformed patch documents and bad directive formats -> 400 ``BadRequest``;
* a JSON patch op that cannot apply (failed ``test``, missing path, unknown
  op), lists of lists, retainKeys mismatch -> 422 with reason ``Invalid``,
  message ``the server rejected our request due to an error in our request``
  and empty details (``NewGenericServerResponse``; the underlying text is not
  sent — it is kept on :attr:`PatchRejected.detail` only);
* more than 10000 JSON patch operations -> 413 ``RequestEntityTooLarge``;
* any other strategic-merge failure (missing merge key, unknown ``$patch``
  value, ``$patch: merge``…) -> 500 with an empty reason and the raw Go error
  text, as ``ErrorToAPIStatus`` renders a non-Status error.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jsonpatch
import jsonpointer

from k8semu.api import errors
from k8semu.api.resources import RESOURCES

__all__ = [
    "apply_merge_patch",
    "apply_json_patch",
    "apply_strategic_merge_patch",
    "create_two_way_merge_patch",
    "create_three_way_merge_patch",
    "FieldMeta",
    "PatchMeta",
    "PATCH_TYPES",
    "ROOT_TYPES",
    "patch_meta",
    "root_type",
    "PatchFailed",
    "PatchRejected",
    "RequestEntityTooLarge",
    "MAX_JSON_PATCH_OPERATIONS",
]

# --------------------------------------------------------------------------- errors


class PatchFailed(errors.InternalError):
    """500 with no reason: a strategic-merge error upstream does not translate.

    kube-apiserver returns such errors as ``Status{code: 500, reason: ""}``
    carrying the raw Go message, e.g. ``map: map[image:nginx] does not contain
    declared merge key: name``; kubectl prints ``Error from server: <message>``.
    """

    reason = ""

    def status(self) -> dict[str, Any]:
        out = super().status()
        if not out.get("reason"):
            out.pop("reason", None)
        return out


class PatchRejected(errors.Invalid):
    """422 ``Invalid``: the patch is well-formed but cannot be applied.

    Mirrors ``NewGenericServerResponse(422, …)``: the message is always
    ``the server rejected our request due to an error in our request`` and
    ``details`` is empty (kubectl shows ``The request is invalid: the server
    rejected our request due to an error in our request``). ``detail`` keeps
    the underlying reason (e.g. the failed ``test`` op) for logs and tests.
    """

    MESSAGE = "the server rejected our request due to an error in our request"

    def __init__(self, detail: str) -> None:
        # Invalid.__init__ builds "<Kind> <name> is invalid: …"; this error has no object.
        errors.StatusError.__init__(self, self.MESSAGE)
        self.detail = detail
        self.errors = []

    def status(self) -> dict[str, Any]:
        out = super().status()
        code = out.pop("code")
        out["details"] = {}
        out["code"] = code
        return out


class RequestEntityTooLarge(errors.StatusError):
    """413: a JSON patch with more than :data:`MAX_JSON_PATCH_OPERATIONS` operations."""

    code = 413
    reason = "RequestEntityTooLarge"


MAX_JSON_PATCH_OPERATIONS = 10000

_ERR_BAD_JSON_DOC = "invalid JSON document"
_ERR_NO_LIST_OF_LISTS = "lists of lists are not supported"
_ERR_PRIMITIVE_LIST = "invalid patch format of primitive list"
_ERR_RETAIN_KEYS = "invalid patch format of retainKeys"
_ERR_SET_ORDER = "invalid patch format of setElementOrder list"


def _go(v: Any) -> str:
    """Render a JSON value as Go's ``%v`` does (maps print with sorted keys)."""
    if v is None:
        return "<nil>"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict):
        return "map[" + " ".join(f"{k}:{_go(v[k])}" for k in sorted(v)) + "]"
    if isinstance(v, list):
        return "[" + " ".join(_go(x) for x in v) + "]"
    if isinstance(v, float):
        if v.is_integer() and abs(v) < 1e21:
            return str(int(v))
        return repr(v)
    return str(v)


def _go_type(v: Any) -> str:
    """The Go dynamic type a decoded JSON value has (apimachinery's json decodes ints as int64)."""
    if v is None:
        return "<nil>"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, dict):
        return "map[string]interface {}"
    if isinstance(v, list):
        return "[]interface {}"
    if isinstance(v, str):
        return "string"
    if isinstance(v, int):
        return "int64"
    return "float64"


def _bad_arg_type(expected: str, actual: Any) -> PatchFailed:
    return PatchFailed(f"expected a {expected}, but received a {_go_type(actual)}")


def _no_merge_key(m: Any, key: str) -> PatchFailed:
    return PatchFailed(f"map: {_go(m)} does not contain declared merge key: {key}")


# --------------------------------------------------------------------------- metadata


class FieldMeta(NamedTuple):
    """One field of a Go type, as its struct tags describe it.

    Attributes:
        strategy: ``patchStrategy`` tag (``"merge"``, ``"retainKeys"``,
            ``"merge,retainKeys"``, ``"replace"``) or None.
        merge_key: ``patchMergeKey`` tag (None for primitive lists / maps).
        type: name in :data:`PATCH_TYPES` of the field's struct (or list
            element struct), or None when nothing below it carries metadata.
    """

    strategy: str | None = None
    merge_key: str | None = None
    type: str | None = None


class PatchMeta(NamedTuple):
    """What the OpenAPI spec publishes for one field: strategy and merge key."""

    strategy: str
    merge_key: str | None


def _f(strategy: str | None = None, key: str | None = None, type: str | None = None) -> FieldMeta:
    return FieldMeta(strategy, key, type)


_MERGE = "merge"
_CONDITIONS = {"conditions": _f(_MERGE, "type")}

#: Go type name -> JSON field -> FieldMeta, for every ``patchStrategy`` tag on the
#: served kinds (k8s.io/api core/v1, apps/v1, batch/v1, autoscaling/v2, policy/v1,
#: and ObjectMeta from apimachinery). Node ``taints``, PodSpec ``tolerations``,
#: StatefulSet ``volumeClaimTemplates`` and Namespace ``spec.finalizers`` carry
#: no strategy upstream and are replaced whole.
PATCH_TYPES: dict[str, dict[str, FieldMeta]] = {
    "ObjectMeta": {
        "finalizers": _f(_MERGE),
        "ownerReferences": _f(_MERGE, "uid"),
    },
    "Object": {"metadata": _f(type="ObjectMeta")},
    "PodTemplateSpec": {"metadata": _f(type="ObjectMeta"), "spec": _f(type="PodSpec")},
    "PodSpec": {
        "volumes": _f("merge,retainKeys", "name", "Volume"),
        "initContainers": _f(_MERGE, "name", "Container"),
        "containers": _f(_MERGE, "name", "Container"),
        "ephemeralContainers": _f(_MERGE, "name", "Container"),
        "imagePullSecrets": _f(_MERGE, "name"),
        "hostAliases": _f(_MERGE, "ip"),
        "topologySpreadConstraints": _f(_MERGE, "topologyKey"),
        "schedulingGates": _f(_MERGE, "name"),
        "resourceClaims": _f("merge,retainKeys", "name"),
    },
    "Container": {
        "ports": _f(_MERGE, "containerPort"),
        "env": _f(_MERGE, "name"),
        "volumeMounts": _f(_MERGE, "mountPath"),
        "volumeDevices": _f(_MERGE, "devicePath"),
    },
    "Volume": {"ephemeral": _f(type="EphemeralVolumeSource")},
    "EphemeralVolumeSource": {"volumeClaimTemplate": _f(type="Object")},
    "PodStatus": {
        "conditions": _f(_MERGE, "type"),
        "podIPs": _f(_MERGE, "ip"),
        "hostIPs": _f(_MERGE, "ip"),
        "resourceClaimStatuses": _f("merge,retainKeys", "name"),
    },
    "Pod": {
        "metadata": _f(type="ObjectMeta"),
        "spec": _f(type="PodSpec"),
        "status": _f(type="PodStatus"),
    },
    "PodTemplate": {"metadata": _f(type="ObjectMeta"), "template": _f(type="PodTemplateSpec")},
    "NodeSpec": {"podCIDRs": _f(_MERGE)},
    "NodeStatus": {"conditions": _f(_MERGE, "type"), "addresses": _f(_MERGE, "type")},
    "Node": {
        "metadata": _f(type="ObjectMeta"),
        "spec": _f(type="NodeSpec"),
        "status": _f(type="NodeStatus"),
    },
    "Conditions": dict(_CONDITIONS),
    "ServiceSpec": {"ports": _f(_MERGE, "port")},
    "Service": {
        "metadata": _f(type="ObjectMeta"),
        "spec": _f(type="ServiceSpec"),
        "status": _f(type="Conditions"),
    },
    "ServiceAccount": {
        "metadata": _f(type="ObjectMeta"),
        "secrets": _f(_MERGE, "name"),
    },
    "WithConditions": {"metadata": _f(type="ObjectMeta"), "status": _f(type="Conditions")},
    "TemplateSpec": {"template": _f(type="PodTemplateSpec")},
    "WithTemplate": {
        "metadata": _f(type="ObjectMeta"),
        "spec": _f(type="TemplateSpec"),
        "status": _f(type="Conditions"),
    },
    "DeploymentSpec": {
        "strategy": _f("retainKeys"),
        "template": _f(type="PodTemplateSpec"),
    },
    "Deployment": {
        "metadata": _f(type="ObjectMeta"),
        "spec": _f(type="DeploymentSpec"),
        "status": _f(type="Conditions"),
    },
    "JobTemplateSpec": {"metadata": _f(type="ObjectMeta"), "spec": _f(type="TemplateSpec")},
    "CronJobSpec": {"jobTemplate": _f(type="JobTemplateSpec")},
    "CronJob": {"metadata": _f(type="ObjectMeta"), "spec": _f(type="CronJobSpec")},
}

#: kind key (``apiVersion/Kind``) -> root type in :data:`PATCH_TYPES`. Every
#: served kind has at least ObjectMeta's metadata.
ROOT_TYPES: dict[str, str] = {f"{r.api_version}/{r.kind}": "Object" for r in RESOURCES}
ROOT_TYPES.update({
    "v1/Pod": "Pod",
    "v1/Node": "Node",
    "v1/Service": "Service",
    "v1/ServiceAccount": "ServiceAccount",
    "v1/Namespace": "WithConditions",
    "v1/PersistentVolumeClaim": "WithConditions",
    "v1/ReplicationController": "WithTemplate",
    "apps/v1/Deployment": "Deployment",
    "apps/v1/ReplicaSet": "WithTemplate",
    "apps/v1/StatefulSet": "WithTemplate",
    "apps/v1/DaemonSet": "WithTemplate",
    "batch/v1/Job": "WithTemplate",
    "batch/v1/CronJob": "CronJob",
    "autoscaling/v2/HorizontalPodAutoscaler": "WithConditions",
    "policy/v1/PodDisruptionBudget": "WithConditions",
})


def root_type(kind_key: str) -> str | None:
    """The :data:`PATCH_TYPES` name for ``apps/v1/Deployment`` (``core/v1/X`` = ``v1/X``), or None."""
    if kind_key.startswith("core/"):
        kind_key = kind_key[len("core/"):]
    return ROOT_TYPES.get(kind_key)


def patch_meta(kind_key: str) -> dict[str, PatchMeta]:
    """Every field with a patch strategy in one kind, keyed by dotted path.

    List elements are written ``[]``, e.g. for ``apps/v1/Deployment``::

        "spec.strategy": PatchMeta("retainKeys", None)
        "spec.template.spec.containers": PatchMeta("merge", "name")
        "spec.template.spec.containers[].env": PatchMeta("merge", "name")

    Unknown kinds give ``{}`` (their lists are all replaced).
    """
    out: dict[str, PatchMeta] = {}

    def walk(type_name: str | None, prefix: str) -> None:
        for field, meta in PATCH_TYPES.get(type_name or "", {}).items():
            path = f"{prefix}{field}"
            if meta.strategy:
                out[path] = PatchMeta(meta.strategy, meta.merge_key)
            if meta.type:
                is_list = meta.merge_key is not None or (meta.strategy or "").startswith(_MERGE)
                walk(meta.type, f"{path}[]." if is_list else f"{path}.")

    walk(root_type(kind_key), "")
    return out


def _schema(kind_key: str) -> dict[str, FieldMeta]:
    return PATCH_TYPES.get(root_type(kind_key) or "", {})


def _field(schema: dict[str, FieldMeta], key: str) -> tuple[bool, str, str, dict[str, FieldMeta]]:
    """(retainKeys?, other strategy, merge key, sub-schema) for ``key``."""
    meta = schema.get(key)
    if meta is None:
        return False, "", "", {}
    parts = [p for p in (meta.strategy or "").split(",") if p]
    retain = "retainKeys" in parts
    other = next((p for p in parts if p != "retainKeys"), "")
    return retain, other, meta.merge_key or "", PATCH_TYPES.get(meta.type or "", {})


# --------------------------------------------------------------------------- helpers

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_SET_ORDER = "$setElementOrder"
_DELETE_PRIMITIVE = "$deleteFromPrimitiveList"
_DROP = object()


def _copy(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _copy(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_copy(x) for x in v]
    return v


def _kind(v: Any) -> str:
    """Go dynamic type, used where upstream compares ``reflect.TypeOf``."""
    return _go_type(v)


def _equal(a: Any, b: Any) -> bool:
    """``reflect.DeepEqual`` on decoded JSON (``1`` and ``true`` differ, unlike Python ``==``)."""
    if _kind(a) != _kind(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return a == b


def _is_directive_key(k: str) -> bool:
    return k == _RETAIN_KEYS or k.startswith(_SET_ORDER + "/") or k.startswith(_DELETE_PRIMITIVE + "/")


def _clean(v: Any, server: bool) -> Any:
    """Upstream ``removeDirectives`` (+ ``discardNullValuesFromPatch`` on the server).

    A map holding ``$patch`` is dropped (returns ``_DROP``). On the server side
    ``null`` map values and leftover directive keys are dropped too.
    """
    if isinstance(v, dict):
        if _DIRECTIVE in v:
            return _DROP
        out = {}
        for k, x in v.items():
            if server and (x is None or _is_directive_key(k)):
                continue
            cx = _clean(x, server)
            if cx is not _DROP:
                out[k] = cx
        return out
    if isinstance(v, list):
        return [cx for cx in (_clean(x, server) for x in v) if cx is not _DROP]
    return v


def _set_clean(target: dict, key: str, value: Any, server: bool) -> None:
    cv = _clean(value, server)
    if cv is _DROP:
        target.pop(key, None)
    else:
        target[key] = cv


def _element_kind(*lists: list) -> str | None:
    """Upstream ``sliceElementType``: the one element type of all lists."""
    prev = None
    for lst in lists:
        for v in lst:
            cur = _kind(v)
            if prev is None:
                prev = cur
                if cur == "[]interface {}":
                    raise PatchRejected(_ERR_NO_LIST_OF_LISTS)
            elif prev != cur:
                raise PatchFailed(
                    "list element types are not identical: " + _go(list(lists))
                )
    return prev


def _is_map_kind(kind: str | None) -> bool:
    return kind == "map[string]interface {}"


def _key_of(item: Any, merge_key: str, is_map: bool) -> Any:
    if is_map:
        return item.get(merge_key) if isinstance(item, dict) else None
    return item


def _index(order: list, item: Any, merge_key: str, is_map: bool) -> int:
    want = _key_of(item, merge_key, is_map)
    for i, v in enumerate(order):
        if _key_of(v, merge_key, is_map) == want:
            return i
    return -1


def _has_key(item: Any, key: str) -> dict:
    if not isinstance(item, dict):
        raise _bad_arg_type("map[string]interface {}", item)
    if key not in item:
        raise _no_merge_key(item, key)
    return item


def _normalize_slice_order(items: list, order: list, merge_key: str, is_map: bool) -> list:
    """Stable-sort ``items`` by position in ``order``; map items marked ``$patch: delete`` go last."""
    to_delete: list = []
    if is_map:
        for x in items + order:
            _has_key(x, merge_key)
        keep = [x for x in items if x.get(_DIRECTIVE) != "delete"]
        to_delete = [x for x in items if x.get(_DIRECTIVE) == "delete"]
        items = keep
    end = len(order)

    def pos(x: Any) -> int:
        i = _index(order, x, merge_key, is_map)
        return i if i >= 0 else end

    return sorted(items, key=pos) + to_delete


def _merge_sorted(left: list, right: list, server_order: list, merge_key: str, is_map: bool) -> list:
    """Upstream ``mergeSortedSlice``: interleave server-only items (left) into patch items (right)."""
    out, i, j = [], 0, 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            out.append(right[j])
            j += 1
        elif j >= len(right):
            out.append(left[i])
            i += 1
        else:
            li = _index(server_order, left[i], merge_key, is_map)
            ri = _index(server_order, right[j], merge_key, is_map)
            if li >= 0 and ri >= 0 and li < ri:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out


def _normalize_element_order(
    patch_items: list, server_only: list, patch_order: list, server_order: list,
    merge_key: str, is_map: bool,
) -> list:
    patch_items = _normalize_slice_order(patch_items, patch_order, merge_key, is_map)
    server_only = _normalize_slice_order(server_only, server_order, merge_key, is_map)
    return _merge_sorted(server_only, patch_items, server_order, merge_key, is_map)


def _partition(merged: list, by: list, merge_key: str, is_map: bool) -> tuple[list, list]:
    """Split ``merged`` into (items present in ``by``, the rest)."""
    inside, rest = [], []
    if is_map:
        keys = [x.get(merge_key) if isinstance(x, dict) else None for x in by]
        for v in merged:
            _has_key(v, merge_key)
            (inside if v[merge_key] in keys else rest).append(v)
    else:
        for v in merged:
            (inside if v in by else rest).append(v)
    return inside, rest


def _dedupe(items: list) -> list:
    out: list = []
    for x in items:
        if not any(_equal(x, y) for y in out):
            out.append(x)
    return out


def _extract_key(key: str, prefix: str) -> str:
    head, sep, rest = key.partition("/")
    if not sep or head != prefix:
        raise errors.BadRequest(_ERR_PRIMITIVE_LIST if prefix == _DELETE_PRIMITIVE else _ERR_SET_ORDER)
    return rest


# --------------------------------------------------------------------------- merging


class _Opts(NamedTuple):
    merge_parallel_list: bool  # server side: apply $deleteFromPrimitiveList / $setElementOrder
    ignore_unmatched_nulls: bool  # server side: a null for a missing key is dropped

    @property
    def server(self) -> bool:
        return self.ignore_unmatched_nulls


_SERVER = _Opts(True, True)
_CLIENT = _Opts(False, False)


def _merge_map(original: dict | None, patch: dict, schema: dict, opts: _Opts) -> dict:
    """Upstream ``mergeMap``; both arguments are private copies and may be mutated."""
    if _DIRECTIVE in patch:
        directive = patch[_DIRECTIVE]
        if directive == "replace":
            del patch[_DIRECTIVE]
            return _clean(patch, True) if opts.server else patch
        if directive == "delete":
            return {}
        raise PatchFailed(f"unknown patch type: {_go(directive)} in map: {_go(patch)}")
    if original is None:
        original = {}
    _apply_retain_keys(original, patch, opts)
    _merge_set_element_order(original, patch, schema, opts)

    for key, pv in list(patch.items()):
        is_delete_list = False
        if key.startswith(_DELETE_PRIMITIVE):
            if not opts.merge_parallel_list:
                original[key] = pv
                continue
            key = _extract_key(key, _DELETE_PRIMITIVE)
            is_delete_list = True
        if pv is None:
            original.pop(key, None)
            if opts.ignore_unmatched_nulls:
                continue
        if key not in original:
            if not is_delete_list:
                _set_clean(original, key, pv, opts.server)
            continue
        ov = original[key]
        if isinstance(ov, dict) and isinstance(pv, dict):
            _, strategy, _, sub = _field(schema, key)
            if strategy == "replace":
                original[key] = _clean(pv, True) if opts.server else pv
            else:
                original[key] = _merge_map(ov, pv, sub, opts)
        elif isinstance(ov, list) and isinstance(pv, list):
            _, strategy, merge_key, sub = _field(schema, key)
            original[key] = _merge_slice_handler(
                ov, pv, strategy, merge_key, sub, is_delete_list, opts)
        elif not is_delete_list:
            _set_clean(original, key, pv, opts.server)
    return original


def _apply_retain_keys(original: dict, patch: dict, opts: _Opts) -> None:
    if _RETAIN_KEYS not in patch:
        return
    retain = patch.pop(_RETAIN_KEYS)
    if not opts.merge_parallel_list:
        if _RETAIN_KEYS in original:
            if not _equal(original[_RETAIN_KEYS], retain):
                raise PatchFailed(
                    f"{_go(original[_RETAIN_KEYS])} and {_go(retain)} are not deep equal: "
                    "this may happen when calculating the 3-way diff patch")
        else:
            original[_RETAIN_KEYS] = retain
        return
    if not isinstance(retain, list):
        raise errors.BadRequest(_ERR_RETAIN_KEYS)
    for k, v in patch.items():
        if v is None or k.startswith(_DELETE_PRIMITIVE) or k.startswith(_SET_ORDER):
            continue
        if k not in retain:
            raise errors.BadRequest(_ERR_RETAIN_KEYS)
    for k in list(original):
        if k not in retain:
            del original[k]


def _validate_set_order(patch_list: Any, order: Any, merge_key: str) -> None:
    """Upstream ``validatePatchWithSetOrderList``: patch items appear in order, in the list."""
    if not isinstance(order, list) or not isinstance(patch_list, list):
        raise errors.BadRequest(_ERR_SET_ORDER)
    if not order or not patch_list:
        return
    if merge_key:
        non_delete = []
        for v in patch_list:
            if not isinstance(v, dict):
                raise _bad_arg_type("map[string]interface {}", v)
            if v.get(_DIRECTIVE) != "delete":
                non_delete.append(v)
    else:
        non_delete = list(patch_list)
    pi = oi = 0
    while pi < len(non_delete) and oi < len(order):
        item = non_delete[pi]
        if isinstance(item, dict) and _DIRECTIVE in item:
            pi += 1
            continue
        if merge_key:
            same = _has_key(item, merge_key)[merge_key] == _has_key(order[oi], merge_key)[merge_key]
        else:
            same = item == order[oi]
        if same:
            pi += 1
        oi += 1
    if pi < len(non_delete) and oi >= len(order):
        raise PatchFailed(
            f"the order in patch list:\n{_go(patch_list)}\n doesn't match "
            f"{_SET_ORDER} list:\n{_go(order)}")


def _merge_set_element_order(original: dict, patch: dict, schema: dict, opts: _Opts) -> None:
    """Upstream ``mergePatchIntoOriginal``: merge each list named by ``$setElementOrder/<list>`` and order it."""
    for key in [k for k in patch if k.startswith(_SET_ORDER)]:
        order = patch.pop(key)
        if not opts.merge_parallel_list:
            if key in original:
                if not _equal(original[key], order):
                    raise errors.BadRequest(_ERR_SET_ORDER)
            else:
                original[key] = order
        if not isinstance(order, list):
            raise _bad_arg_type("[]interface {}", order)
        name = _extract_key(key, _SET_ORDER)
        found_o, found_p = name in original, name in patch
        ol, pl = original.get(name), patch.get(name)
        if found_o and not isinstance(ol, list):
            raise _bad_arg_type("[]interface {}", ol)
        if found_p and not isinstance(pl, list):
            raise _bad_arg_type("[]interface {}", pl)
        _, strategy, merge_key, sub = _field(schema, name)
        _validate_set_order(pl if found_p else [], order, merge_key)
        if found_o and not found_p:
            merged = ol
        elif found_p and not found_o:
            merged = _clean(pl, opts.server)
        elif found_o and found_p:
            merged = _merge_slice_handler(ol, pl, strategy, merge_key, sub, False, opts)
        else:
            continue
        kind = _element_kind(ol or [], pl or [])
        if kind is not None:
            is_map = bool(merge_key)
            inside, rest = _partition(merged, order, merge_key, is_map)
            merged = _normalize_element_order(inside, rest, order, ol or [], merge_key, is_map)
        original[name] = merged
        patch.pop(name, None)


def _merge_slice_handler(
    original: list, patch: list, strategy: str, merge_key: str, sub: dict,
    is_delete_list: bool, opts: _Opts,
) -> list:
    if strategy == _MERGE or is_delete_list:
        return _merge_slice(original, patch, merge_key, sub, is_delete_list, opts)
    return _clean(patch, True) if opts.server else patch


def _merge_slice(
    original: list, patch: list, merge_key: str, sub: dict, is_delete_list: bool, opts: _Opts,
) -> list:
    """Upstream ``mergeSlice``: merge a ``patchStrategy: merge`` list, then fix the order."""
    if not original and not patch:
        return original
    kind = _element_kind(original, patch)
    is_map = _is_map_kind(kind)
    if not is_map:
        if opts.merge_parallel_list and is_delete_list:
            return [x for x in original if x not in patch]
        merged = _dedupe(original + patch)
    else:
        if not merge_key:
            raise PatchFailed("cannot merge lists without merge key for type map")
        original, patch = _merge_special_elements(original, patch, merge_key)
        merged = list(original)
        for item in patch:
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
            at = next((i for i, o in enumerate(merged)
                       if isinstance(o, dict) and merge_key in o and o[merge_key] == item[merge_key]), -1)
            if at >= 0:
                merged[at] = _merge_map(merged[at], item, sub, opts)
            else:
                cleaned = _clean(item, True) if opts.server else item
                merged.append(cleaned)
    inside, rest = _partition(merged, patch, merge_key if is_map else "", is_map)
    return _normalize_element_order(inside, rest, patch, original, merge_key if is_map else "", is_map)


def _merge_special_elements(original: list, patch: list, merge_key: str) -> tuple[list, list]:
    """Apply ``$patch: delete`` / ``$patch: replace`` list items; return (original, plain patch items)."""
    plain = []
    replace = False
    for item in patch:
        directive = item.get(_DIRECTIVE, _DROP)
        if directive is _DROP:
            plain.append(item)
        elif directive == "delete":
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
            for i, o in enumerate(original):
                if not isinstance(o, dict):
                    raise PatchFailed(f"value for key {i} is not a map")
            original = [o for o in original if not (merge_key in o and o[merge_key] == item[merge_key])]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise PatchFailed("merging lists cannot yet be specified in the patch")
        else:
            raise PatchFailed(f"unknown patch type: {_go(directive)} in map: {_go(item)}")
    if replace:
        return plain, []
    return original, plain


# --------------------------------------------------------------------------- diffing


class _Diff(NamedTuple):
    set_element_order: bool = True
    ignore_changes_and_additions: bool = False
    ignore_deletions: bool = False
    build_retain_keys: bool = False


def _diff_maps(original: dict, modified: dict, schema: dict, opts: _Diff) -> dict:
    """Upstream ``diffMaps``: the patch turning ``original`` into ``modified``."""
    patch: dict[str, Any] = {}
    retain: list[str] = []
    for key, mv in modified.items():
        if opts.build_retain_keys and mv is not None:
            retain.append(key)
        if key not in original:
            if not opts.ignore_changes_and_additions:
                patch[key] = mv
            continue
        ov = original[key]
        if key == _DIRECTIVE:
            if not isinstance(ov, str) or not isinstance(mv, str):
                raise PatchFailed(f"invalid value for special key: {_DIRECTIVE}")
            if ov != mv:
                patch[key] = mv
            continue
        if _kind(ov) != _kind(mv):
            if not opts.ignore_changes_and_additions:
                patch[key] = mv
            continue
        if isinstance(ov, dict):
            retain_keys, strategy, _, sub = _field(schema, key)
            child = opts._replace(build_retain_keys=retain_keys)
            if strategy == "replace":
                if not opts.ignore_changes_and_additions:
                    patch[key] = mv
            else:
                pv = _diff_maps(ov, mv, sub, child)
                if pv:
                    patch[key] = pv
        elif isinstance(ov, list):
            retain_keys, strategy, merge_key, sub = _field(schema, key)
            if strategy == _MERGE:
                child = opts._replace(build_retain_keys=retain_keys)
                add, dele, order = _diff_lists(ov, mv, merge_key, sub, child)
                if add:
                    patch[key] = add
                if dele:
                    patch[f"{_DELETE_PRIMITIVE}/{key}"] = dele
                if order:
                    patch[f"{_SET_ORDER}/{key}"] = order
            elif not opts.ignore_changes_and_additions and not _equal(ov, mv):
                patch[key] = mv
        elif not opts.ignore_changes_and_additions and not _equal(ov, mv):
            patch[key] = mv
    if not opts.ignore_deletions:
        for key in original:
            if key not in modified:
                patch[key] = None
    if retain and (patch or any(v is not None and k not in modified for k, v in original.items())):
        patch[_RETAIN_KEYS] = sorted(retain, key=_go)
    return patch


def _diff_lists(
    original: list, modified: list, merge_key: str, sub: dict, opts: _Diff,
) -> tuple[list, list, list]:
    """Upstream ``diffLists``: (patch list, primitive deletion list, $setElementOrder list)."""
    if not original:
        if not modified or opts.ignore_changes_and_additions:
            return [], [], []
        return list(modified), [], []
    kind = _element_kind(original, modified)
    if _is_map_kind(kind):
        if not merge_key:
            raise PatchFailed("cannot merge lists without merge key for type map")
        patch_list, deletions = _diff_lists_of_maps(original, modified, merge_key, sub, opts)
        patch_list = _normalize_slice_order(patch_list, modified, merge_key, True)
        order_same = len(original) == len(modified) and all(
            _has_key(o, merge_key)[merge_key] == _has_key(m, merge_key)[merge_key]
            for o, m in zip(original, modified))
        patch_list = patch_list + deletions
        order: list = []
        if opts.set_element_order and (
            (not opts.ignore_changes_and_additions and (patch_list or not order_same))
            or (not opts.ignore_deletions and patch_list)
        ):
            order = [{merge_key: m[merge_key]} for m in modified]
        return patch_list, [], order
    adds, deletions = _diff_lists_of_scalars(original, modified, opts)
    adds = _normalize_slice_order(adds, modified, "", False)
    order = []
    if opts.set_element_order and (
        (not opts.ignore_deletions and deletions)
        or (not opts.ignore_changes_and_additions and not _equal(original, modified))
    ):
        order = list(modified)
    return adds, deletions, order


def _diff_lists_of_scalars(original: list, modified: list, opts: _Diff) -> tuple[list, list]:
    """Walk both lists sorted by their ``%v`` text, as upstream does."""
    o = sorted(original, key=_go)
    m = sorted(modified, key=_go)
    adds, deletions = [], []
    i = j = 0
    while i < len(o) or j < len(m):
        os_ = _go(o[i]) if i < len(o) else None
        ms = _go(m[j]) if j < len(m) else None
        if os_ is not None and ms is not None and os_ == ms:
            i += 1
            j += 1
        elif os_ is None or (ms is not None and os_ > ms):
            if not opts.ignore_changes_and_additions:
                adds.append(m[j])
            j += 1
        else:
            if not opts.ignore_deletions:
                deletions.append(o[i])
            i += 1
    return adds, _dedupe(deletions)


def _diff_lists_of_maps(
    original: list, modified: list, merge_key: str, sub: dict, opts: _Diff,
) -> tuple[list, list]:
    def sort_key(x: Any) -> str:
        return _go(_has_key(x, merge_key)[merge_key])

    o = sorted(original, key=sort_key)
    m = sorted(modified, key=sort_key)
    patch, deletions = [], []
    i = j = 0
    while i < len(o) or j < len(m):
        ok = sort_key(o[i]) if i < len(o) else None
        mk = sort_key(m[j]) if j < len(m) else None
        if ok is not None and mk is not None and ok == mk:
            pv = _diff_maps(o[i], m[j], sub, opts)
            if pv:
                pv[merge_key] = m[j][merge_key]
                patch.append(pv)
            i += 1
            j += 1
        elif ok is None or (mk is not None and ok > mk):
            if not opts.ignore_changes_and_additions:
                patch.append(m[j])
            j += 1
        else:
            if not opts.ignore_deletions:
                deletions.append({merge_key: o[i][merge_key], _DIRECTIVE: "delete"})
            i += 1
    return patch, deletions


# --------------------------------------------------------------------------- public API


def apply_merge_patch(obj: dict, patch: dict) -> dict:
    """Apply an RFC 7386 JSON merge patch (``kubectl patch --type=merge``).

    ``null`` deletes a key; objects merge recursively; any other value (lists
    included) replaces the old one. A new value copied in has its nested
    ``null`` members dropped, as evanphx/json-patch ``MergePatch`` does.
    Returns a new dict; ``obj`` and ``patch`` are not modified.

    Raises:
        errors.BadRequest: ``patch`` is not a JSON object (``null`` gives
            ``Invalid JSON Patch``, as upstream's ``ErrBadJSONPatch``).
    """
    if patch is None:
        raise errors.BadRequest("Invalid JSON Patch")
    if not isinstance(patch, dict):
        raise errors.BadRequest(
            "error decoding patch: json: cannot unmarshal "
            f"{_json_kind(patch)} into Go value of type map[string]interface {{}}")
    return _merge_docs(_copy(obj), patch)


def _json_kind(v: Any) -> str:
    if isinstance(v, list):
        return "array"
    if isinstance(v, str):
        return "string"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    return "object"


def _prune_nulls(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _prune_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_prune_nulls(x) for x in v]
    return v


def _merge_docs(doc: dict, patch: dict) -> dict:
    """Merge ``patch`` into ``doc`` (a private copy, mutated and returned)."""
    for k, pv in patch.items():
        if pv is None:
            doc.pop(k, None)
            continue
        cur = doc.get(k)
        if isinstance(cur, dict) and isinstance(pv, dict):
            _merge_docs(cur, pv)
        elif isinstance(cur, dict):
            doc[k] = _copy(pv)
        else:
            doc[k] = _prune_nulls(pv)
    return doc


def apply_json_patch(obj: dict, ops: list) -> dict:
    """Apply an RFC 6902 JSON patch (``kubectl patch --type=json``) with ``jsonpatch``.

    ``ops`` is the decoded patch body: a list of ``{"op", "path", "value"|"from"}``.
    Operations apply in order and atomically. Returns a new dict.

    Raises:
        errors.BadRequest: the body is not a list of objects (upstream's
            ``DecodePatch`` failure, e.g. ``json: cannot unmarshal object into
            Go value of type jsonpatch.Patch``).
        RequestEntityTooLarge: more than 10000 operations (413).
        PatchRejected: an operation cannot apply — failed ``test``, missing
            path, unknown ``op`` — or the result is not an object (422
            ``Invalid``, upstream's fixed message; cause in ``.detail``).
    """
    if ops is None:
        return _copy(obj)
    if not isinstance(ops, list):
        raise errors.BadRequest(
            f"json: cannot unmarshal {_json_kind(ops)} into Go value of type jsonpatch.Patch")
    for op in ops:
        if not isinstance(op, dict):
            raise errors.BadRequest(
                f"json: cannot unmarshal {_json_kind(op)} into Go value of type jsonpatch.Operation")
    if len(ops) > MAX_JSON_PATCH_OPERATIONS:
        raise RequestEntityTooLarge(
            "Request entity too large: The allowed maximum operations in a JSON patch is "
            f"{MAX_JSON_PATCH_OPERATIONS}, got {len(ops)}")
    try:
        result = jsonpatch.JsonPatch(_copy(ops)).apply(_copy(obj), in_place=True)
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException,
            KeyError, IndexError, TypeError, ValueError) as exc:
        raise PatchRejected(str(exc)) from exc
    if not isinstance(result, dict):
        raise PatchRejected("the patched document is not a JSON object")
    return result


def apply_strategic_merge_patch(obj: dict, patch: dict, kind_key: str) -> dict:
    """Apply a strategic merge patch the way kube-apiserver does for built-in kinds.

    ``kind_key`` is ``apiVersion/Kind`` (``apps/v1/Deployment``, ``v1/Pod``);
    per-field behaviour comes from :data:`PATCH_TYPES`:

    * lists tagged ``merge`` merge by their merge key (containers by ``name``,
      ports by ``containerPort`` …); primitive ``merge`` lists (``finalizers``)
      merge as ordered sets; other lists are replaced; maps merge; ``null``
      deletes a field;
    * ``$patch: replace`` / ``$patch: delete`` on a map replace / clear it;
      in a merge list, ``{"name": x, "$patch": "delete"}`` removes item x and
      ``{"$patch": "replace"}`` replaces the list with the other items;
      ``$patch: merge`` is rejected as upstream rejects it;
    * ``$setElementOrder/<list>`` fixes the order of a merged list,
      ``$deleteFromPrimitiveList/<list>`` removes scalars, and ``$retainKeys``
      clears every key of the map not listed (Deployment ``spec.strategy``,
      volumes).

    Without ``$setElementOrder``, items new to a merge list go first, then the
    old ones (upstream's ordering). Unknown kinds merge maps and replace lists.
    ``patch=None`` is a no-op, as upstream. Returns a new dict.

    Raises:
        errors.BadRequest: ``patch`` is not an object, or a directive is malformed
            (``invalid patch format of retainKeys`` …).
        PatchRejected: a list of lists (422).
        PatchFailed: any other strategic-merge error, e.g. ``map: map[image:x]
            does not contain declared merge key: name`` (500, no reason).
    """
    if patch is None:
        return _copy(obj)
    if not isinstance(patch, dict):
        raise errors.BadRequest(
            f"json: cannot unmarshal {_json_kind(patch)} into Go value of type map[string]interface {{}}")
    if not isinstance(obj, dict):
        raise errors.BadRequest(_ERR_BAD_JSON_DOC)
    return _merge_map(_copy(obj), _copy(patch), _schema(kind_key), _SERVER)


def create_two_way_merge_patch(original: dict, modified: dict, kind_key: str) -> dict:
    """The strategic merge patch that turns ``original`` into ``modified`` (``CreateTwoWayMergePatch``).

    Added or changed fields appear with their new value, removed ones as
    ``null``; merge lists list only changed/added items (merge key kept),
    removed items as ``{"<key>": v, "$patch": "delete"}``, plus a
    ``$setElementOrder/<list>`` when contents or order changed; removed
    scalars of a primitive merge list go to ``$deleteFromPrimitiveList/<list>``;
    retainKeys maps get a sorted ``$retainKeys``. Identical inputs give ``{}``.

    Raises:
        PatchFailed: an item of a merge list lacks its merge key, element types differ.
        PatchRejected: a list of lists.
    """
    return _diff_maps(_copy(original or {}), _copy(modified or {}), _schema(kind_key), _Diff())


def create_three_way_merge_patch(
    original: dict | None, modified: dict, current: dict, kind_key: str,
) -> dict:
    """The patch client-side ``kubectl apply`` sends (``CreateThreeWayMergePatch``, overwrite on).

    ``original`` is the last-applied configuration (None/{} when absent),
    ``modified`` the new configuration, ``current`` the live object. The patch
    is every change from ``current`` to ``modified`` (no deletions) plus the
    deletions from ``original`` to ``modified``: a field someone else added to
    the live object (a controller, ``kubectl scale``) survives unless it was
    in last-applied and is gone from the new configuration.

    Raises:
        the same errors as :func:`create_two_way_merge_patch`.
    """
    schema = _schema(kind_key)
    original, modified, current = _copy(original or {}), _copy(modified or {}), _copy(current or {})
    delta = _diff_maps(current, modified, schema, _Diff(ignore_deletions=True))
    # _merge_map mutates both maps, and both share sub-trees with `modified`.
    deletions = _copy(_diff_maps(original, modified, schema, _Diff(ignore_changes_and_additions=True)))
    delta = _copy(delta)
    return _merge_map(deletions, delta, schema, _CLIENT)
