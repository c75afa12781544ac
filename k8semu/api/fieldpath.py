"""Field paths and field sets, as structured-merge-diff (SMD) models them for server-side apply.

A *path element* is one step into an object, written exactly as the keys of a
``FieldsV1`` document (``metadata.managedFields[].fieldsV1``):

==========================  ==============================================
``f:replicas``              a field of a map / struct
``k:{"name":"nginx"}``      an item of an associative list, by its keys
                            (compact JSON, key names sorted)
``v:"example.com/x"``       an item of a set list (the JSON of the value)
``i:0``                     an item of a list by index (never produced
                            here: atomic lists are owned as a whole)
==========================  ==============================================

A *path* is a tuple of elements and a *field set* is a ``frozenset`` of
paths, so union, difference and intersection are Python's ``|``, ``-`` and
``&``. :func:`to_fieldsv1` / :func:`from_fieldsv1` convert a set to and from
the nested ``FieldsV1`` form, where ``{}`` marks a leaf member and ``"."``
marks a node that is a member and also has members below it.

Which lists are associative (and by which keys), which are sets and which
are atomic comes from the ``+listType`` / ``+listMapKey`` markers of
k8s.io/api (or, without one, a ``patchStrategy=merge`` tag's merge key), as
kube-openapi's schema conversion reads them; here that knowledge is one
small function, :func:`list_type`, matched on the field names leading to the
list. A few structs are atomic (``+structType=atomic``: label selectors and
the ``*KeyRef`` selectors), so they are owned as one leaf.

Two ways of turning objects into sets mirror SMD:

* :func:`fields_of` (``TypedValue.ToFieldSet``): what an *applied
  configuration* sets — every leaf, every associative-list item (the item
  itself is a member, hence ``"."``), empty maps and nulls as leaves.
* :func:`compare` (``TypedValue.Compare``): what an *update* added, modified
  and removed. A map or list item that did not exist before is itself in
  ``added`` (so ``f:labels`` gets a ``"."`` when the labels map is new),
  except the structs Go always allocates (``spec``, ``template``,
  ``strategy``, …) and the lists it holds as ``null`` (``containers``),
  which a zero-valued object already has.
"""

from __future__ import annotations

import itertools
import json
from collections import OrderedDict
from typing import Any, Iterable, NamedTuple

import orjson

from ..store.record import json_bytes

__all__ = [
    "Path",
    "FieldSet",
    "ListType",
    "Comparison",
    "list_type",
    "is_atomic_map",
    "item_element",
    "fields_of",
    "compare",
    "to_fieldsv1",
    "from_fieldsv1",
    "share_managed_fields",
    "path_string",
    "sort_paths",
    "ListKeyError",
]

Path = tuple[str, ...]
FieldSet = frozenset[Path]


class ListType(NamedTuple):
    """How SMD treats one list: ``kind`` is ``atomic``, ``set`` or ``map``.

    For ``map`` lists, ``keys`` are the list-map keys (in declaration order)
    and ``defaults`` the values a missing key field takes (``protocol`` is
    ``TCP``, as the schema's default for keys).
    """

    kind: str
    keys: tuple[str, ...] = ()
    defaults: tuple[tuple[str, Any], ...] = ()


ATOMIC = ListType("atomic")
SET = ListType("set")
_TCP = (("protocol", "TCP"),)
_CONTAINER_LISTS = frozenset({"containers", "initContainers", "ephemeralContainers"})
# PodSpec lists keyed by name (listType=map or patchStrategy=merge,patchMergeKey=name).
_POD_SPEC_BY_NAME = frozenset({"volumes", "imagePullSecrets", "schedulingGates", "resourceClaims"})
# Structs/maps owned as a whole (+structType=atomic / x-kubernetes-map-type: atomic).
_ATOMIC_MAPS = frozenset({
    "selector", "podSelector", "namespaceSelector", "labelSelector",
    "configMapKeyRef", "secretKeyRef", "fieldRef", "resourceFieldRef",
})
# Non-pointer structs: present (as {}) in Go's zero value of their parent.
_ZERO_STRUCTS = frozenset({
    "metadata", "spec", "status", "template", "jobTemplate", "strategy", "updateStrategy",
    "resources", "loadBalancer", "daemonEndpoints", "kubeletEndpoint", "nodeInfo",
    "roleRef", "scaleTargetRef",
})
# Lists without omitempty: Go's zero value of their parent holds them as null.
_ZERO_NULL_LISTS = frozenset({"containers"})


def list_type(kind: str, names: tuple[str, ...]) -> ListType:
    """The SMD list type of the list reached by field ``names`` in an object of ``kind``.

    ``names`` are the field names from the object root, list items skipped
    (``("spec", "template", "spec", "containers", "ports")``). Lists not
    listed here are atomic, as upstream treats lists without markers.
    """
    last = names[-1] if names else ""
    parent = names[-2] if len(names) > 1 else ""
    if parent in _CONTAINER_LISTS:
        return {
            "ports": ListType("map", ("containerPort", "protocol"), _TCP),
            "env": ListType("map", ("name",)),
            "volumeMounts": ListType("map", ("mountPath",)),
            "volumeDevices": ListType("map", ("devicePath",)),
        }.get(last, ATOMIC)
    if parent == "spec" and kind != "Service":
        if last in _CONTAINER_LISTS or last in _POD_SPEC_BY_NAME:
            return ListType("map", ("name",))
        if last == "hostAliases":
            return ListType("map", ("ip",))
        if last == "topologySpreadConstraints":
            return ListType("map", ("topologyKey", "whenUnsatisfiable"))
    if parent == "metadata":
        if last == "finalizers":
            return SET
        if last == "ownerReferences":
            return ListType("map", ("uid",))
    if names == ("spec", "ports") and kind == "Service":
        return ListType("map", ("port", "protocol"), _TCP)
    if names == ("status", "conditions"):
        return ATOMIC if kind == "Job" else ListType("map", ("type",))
    if names in (("status", "podIPs"), ("status", "hostIPs")):
        return ListType("map", ("ip",))
    if kind == "Node":
        if names == ("status", "addresses"):
            return ListType("map", ("type",))
        if names == ("spec", "podCIDRs"):
            return SET
    if kind == "ServiceAccount" and names == ("secrets",):
        return ListType("map", ("name",))
    return ATOMIC


def is_atomic_map(kind: str, names: tuple[str, ...]) -> bool:
    """Whether the map/struct reached by ``names`` is owned as one leaf (``+structType=atomic``)."""
    if not names or names[-1] not in _ATOMIC_MAPS:
        return False
    # a Service's spec.selector is a plain map[string]string
    return not (kind == "Service" and names == ("spec", "selector"))


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, sort_keys=True)  # built once


def _plain(v: Any) -> bool:
    return isinstance(v, str) or (isinstance(v, int) and -(1 << 63) <= v < (1 << 63))


def _json(value: Any) -> str:
    """Compact JSON with sorted keys and raw non-ASCII, as Go's encoder writes path elements.

    Strings and 64-bit integers (every list key in practice) go through orjson, which writes
    them byte for byte as the standard encoder does; anything else (floats, whose spelling
    differs) through the standard encoder.
    """
    if _plain(value) or (isinstance(value, dict) and all(map(_plain, value.values()))):
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    return _ENCODER.encode(value)


class ListKeyError(ValueError):
    """An associative-list item lacks a key field, or two items share one (SMD's typed-conversion errors).

    ``str(err)`` is SMD's text, e.g. ``.spec.template.spec.containers[0]:
    associative list with keys has an element that omits key field "name"
    (and doesn't have default value)`` or ``.spec.template.spec.containers:
    duplicate entries for key [name="nginx"]``.
    """


def item_element(item: Any, lt: ListType, where: Path = (), index: int = 0) -> str:
    """The path element of one list item: ``k:{...}`` for map lists, ``v:…`` for sets.

    Raises:
        ListKeyError: a map-list item is not an object or misses a key field
            that has no default.
    """
    if lt.kind == "set":
        return "v:" + _json(item)
    if len(lt.keys) == 1 and isinstance(item, dict):  # the usual list key: one string (name, type, ip)
        k = lt.keys[0]
        v = item.get(k)
        if isinstance(v, str):
            pe = _SINGLE_KEY.get((k, v))
            if pe is None:
                if len(_SINGLE_KEY) >= _MEMO_SIZE * 4:
                    _SINGLE_KEY.clear()
                pe = _SINGLE_KEY[(k, v)] = "k:" + _json({k: v})
            return pe
    key: dict[str, Any] = {}
    for k in lt.keys:
        if isinstance(item, dict) and item.get(k) is not None:
            key[k] = item[k]
        elif k in (defaults := dict(lt.defaults)):
            key[k] = defaults[k]
        else:
            raise ListKeyError(
                f"{path_string(where)}[{index}]: associative list with keys has an element that "
                f'omits key field "{k}" (and doesn\'t have default value)'
            )
    return "k:" + _json(key)


#: ``(key field, value)`` -> the path element of a one-key list item (a cache: the same strings)
_SINGLE_KEY: dict[tuple[str, str], str] = {}


def _kind_of(kind_key: str) -> str:
    return kind_key.rsplit("/", 1)[-1]


# --------------------------------------------------------------------------- object -> set


def fields_of(obj: Any, kind_key: str) -> FieldSet:
    """The field set an applied configuration specifies (SMD ``ToFieldSet``).

    Args:
        obj: a wire-form object (or applied configuration); not mutated.
        kind_key: ``<apiVersion>/<kind>``, e.g. ``apps/v1/Deployment``.
    Returns:
        every leaf path, every associative/set list item path, and empty
        maps, empty lists and nulls as leaves. Ancestors that are plain maps
        or structs are not members themselves.
    Raises:
        ListKeyError: an associative-list item misses a key field, or two
            items share a key.
    """
    out: set[Path] = set()
    _walk_fields(obj, (), (), _kind_of(kind_key), out)
    return frozenset(out)


def _walk_fields(value: Any, path: Path, names: tuple[str, ...], kind: str, out: set[Path]) -> None:
    if isinstance(value, dict):
        if not value or is_atomic_map(kind, names):
            out.add(path)
            return
        for k, v in value.items():
            _walk_fields(v, path + ("f:" + k,), names + (k,), kind, out)
    elif isinstance(value, list):
        lt = list_type(kind, names)
        if lt.kind == "atomic" or not value:
            out.add(path)
            return
        seen: set[str] = set()
        for i, item in enumerate(value):
            pe = item_element(item, lt, path, i)
            if pe in seen:
                raise ListKeyError(f"{path_string(path)}: duplicate entries for key {path_string((pe,))}")
            seen.add(pe)
            out.add(path + (pe,))
            if lt.kind == "map":
                for k, v in item.items():
                    _walk_fields(v, path + (pe, "f:" + k), names + (k,), kind, out)
    else:
        out.add(path)


class Comparison(NamedTuple):
    """What changed between two objects (SMD ``typed.Comparison``), as field sets."""

    added: FieldSet
    modified: FieldSet
    removed: FieldSet


def compare(old: Any, new: Any, kind_key: str) -> Comparison:
    """Compare ``old`` with ``new`` (SMD ``TypedValue.Compare``).

    ``old`` is None for a create: it then stands for Go's zero value of the
    kind, whose non-pointer structs (``spec``, ``spec.template``, …) exist
    empty. A subtree only in ``new`` is added whole, its own path included
    unless it is such a struct; one only in ``old`` is removed whole; leaves
    and atomic values whose values differ are modified.

    Raises:
        ListKeyError: an associative-list item of ``new`` misses a key field.
    """
    added: set[Path] = set()
    modified: set[Path] = set()
    removed: set[Path] = set()
    kind = _kind_of(kind_key)
    _cmp({} if old is None else old, new, (), (), kind, added, modified, removed)
    return Comparison(frozenset(added), frozenset(modified), frozenset(removed))


def _subtree(value: Any, path: Path, names: tuple[str, ...], kind: str, out: set[Path]) -> None:
    """Every path of a subtree that exists on one side only, its own path included."""
    out.add(path)
    if isinstance(value, dict) and not is_atomic_map(kind, names):
        for k, v in value.items():
            _subtree(v, path + ("f:" + k,), names + (k,), kind, out)
    elif isinstance(value, list):
        lt = list_type(kind, names)
        if lt.kind == "atomic":
            return
        for i, item in enumerate(value):
            pe = item_element(item, lt, path, i)
            if lt.kind == "map":
                _subtree(item, path + (pe,), names, kind, out)
            else:
                out.add(path + (pe,))


def _cmp(old: Any, new: Any, path: Path, names: tuple[str, ...], kind: str,
         added: set[Path], modified: set[Path], removed: set[Path]) -> None:
    if isinstance(old, dict) and isinstance(new, dict) and not is_atomic_map(kind, names):
        for k in list(old) + [k for k in new if k not in old]:
            if k in old and k in new:
                o, v = old[k], new[k]
                if o is v or o == v:  # an equal subtree has no change (C-level equality: cheap)
                    continue
                _cmp(o, v, path + ("f:" + k,), names + (k,), kind, added, modified, removed)
                continue
            p, n = path + ("f:" + k,), names + (k,)
            if k in _ZERO_STRUCTS and isinstance(old.get(k, new.get(k)), dict):
                # Go's zero value already holds this struct, empty
                _cmp(old.get(k, {}), new.get(k, {}), p, n, kind, added, modified, removed)
            elif k in _ZERO_NULL_LISTS and isinstance(old.get(k, new.get(k)), list):
                _cmp(old.get(k, []), new.get(k, []), p, n, kind, added, modified, removed)
            elif k in new:
                _subtree(new[k], p, n, kind, added)
            else:
                _subtree(old[k], p, n, kind, removed)
        return
    if isinstance(old, list) and isinstance(new, list):
        lt = list_type(kind, names)
        if lt.kind != "atomic":
            old_items = _index_items(old, lt, path)
            new_items = _index_items(new, lt, path)
            for pe, item in new_items.items():
                if pe not in old_items:
                    _subtree(item, path + (pe,), names, kind, added)
                elif lt.kind == "map":
                    _cmp(old_items[pe], item, path + (pe,), names, kind, added, modified, removed)
            for pe, item in old_items.items():
                if pe not in new_items:
                    _subtree(item, path + (pe,), names, kind, removed)
            return
    if old != new:
        modified.add(path)


def _index_items(items: list, lt: ListType, path: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, item in enumerate(items):
        out.setdefault(item_element(item, lt, path, i), item)
    return out


# --------------------------------------------------------------------------- FieldsV1


# Every write re-encodes each manager's field set and the next write decodes it again; most
# managers' sets do not change between writes, so both directions are remembered. The documents
# are shared: the pods of one ReplicaSet carry equal managedFields, which were half of a live
# pod's memory (17 KB of 36 KB) while every pod had its own copy. Like every object the store
# holds, a document from here must not be changed in place.
_MEMO_SIZE = 4096
_TO_V1: OrderedDict[FieldSet, dict[str, Any]] = OrderedDict()
_FROM_V1: OrderedDict[bytes, FieldSet] = OrderedDict()
_SHARED_V1: OrderedDict[bytes, dict[str, Any]] = OrderedDict()  # JSON -> the shared document


def _remember(memo: OrderedDict, key: Any, value: Any) -> None:
    memo[key] = value
    if len(memo) > _MEMO_SIZE:
        memo.popitem(last=False)


def to_fieldsv1(paths: Iterable[Path]) -> dict[str, Any]:
    """The ``FieldsV1`` document of a field set (shared by equal sets: do not change it).

    Keys are sorted as ``kubectl get -o json`` prints them (``"."`` first);
    a member with nothing below it is ``{}``, a member with children gets
    ``".": {}`` beside them.
    """
    if isinstance(paths, frozenset):
        doc = _TO_V1.get(paths)
        if doc is None:
            doc = _to_fieldsv1(paths)
            raw = json_bytes(doc)
            shared = _SHARED_V1.get(raw)
            if shared is None:
                _remember(_SHARED_V1, raw, doc)
            else:
                doc = shared
            _remember(_TO_V1, paths, doc)
            _remember(_FROM_V1, raw, paths)
        return doc
    return _to_fieldsv1(paths)


def share_managed_fields(obj: dict[str, Any]) -> None:
    """Replace each ``metadata.managedFields[].fieldsV1`` of ``obj`` (just decoded, not yet
    seen by anyone) with an equal shared document, as the write path makes them."""
    for e in (obj.get("metadata") or {}).get("managedFields") or ():
        doc = e.get("fieldsV1") if isinstance(e, dict) else None
        if isinstance(doc, dict) and doc:
            raw = orjson.dumps(doc)
            shared = _SHARED_V1.get(raw)
            if shared is None:
                _remember(_SHARED_V1, json_bytes(doc), doc)
            else:
                e["fieldsV1"] = shared


def _to_fieldsv1(paths: Iterable[Path]) -> dict[str, Any]:
    # the tree of path elements; a member's node holds "." (which sorts before every "f:", "k:"…)
    root: dict[str, Any] = {}
    for p in paths:
        if not p:
            continue
        node = root
        for pe in p:
            child = node.get(pe)
            if child is None:
                child = node[pe] = {}
            node = child
        node["."] = _LEAF
    return _emit(root)[0]


_LEAF: dict[str, Any] = {}
# Equal subtrees of the documents _emit builds are one object: two pods' kubelet-owned status
# sets differ only below f:podIPs / f:hostIPs, so a pod's own document is a handful of dicts
# around subtrees (conditions, containerStatuses) that every such pod shares. A subtree is
# named by a number that stands for its content: (path element, child's number, ...) -> number.
_SUBTREES: OrderedDict[tuple[Any, ...], tuple[dict[str, Any], int]] = OrderedDict()
_SUBTREE_NUMBERS = itertools.count(1)
_EMPTY: tuple[dict[str, Any], int] = ({}, 0)  # the leaf "{}", one shared object


def _emit(node: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """A tree node as FieldsV1 and the number of its content: a member with nothing below
    it is ``{}``, one with children keeps ``".": {}`` first."""
    out: dict[str, Any] = {}
    shape: list[Any] = []
    for pe in sorted(node):
        sub = node[pe]
        doc, number = _emit(sub) if len(sub) > 1 or (sub and "." not in sub) else _EMPTY
        out[pe] = doc
        shape.append(pe)
        shape.append(number)
    key = tuple(shape)
    hit = _SUBTREES.get(key)
    if hit is None:
        hit = (out, next(_SUBTREE_NUMBERS))
        _SUBTREES[key] = hit
        if len(_SUBTREES) > _MEMO_SIZE * 4:
            _SUBTREES.popitem(last=False)
    return hit


def from_fieldsv1(doc: dict[str, Any]) -> FieldSet:
    """Parse a ``FieldsV1`` document into a field set.

    Raises:
        ValueError: the document is not a JSON object of objects, or a key
            is not a known path element.
    """
    try:
        raw = json_bytes(doc)
    except TypeError:
        raw = None
    if raw is not None:
        fields = _FROM_V1.get(raw)
        if fields is None:
            fields = _from_fieldsv1(doc)
            _remember(_FROM_V1, raw, fields)
        return fields
    return _from_fieldsv1(doc)


def _from_fieldsv1(doc: Any) -> FieldSet:
    out: set[Path] = set()

    def walk(node: Any, path: Path) -> None:
        if not isinstance(node, dict):
            raise ValueError(f"expected an object at {path_string(path) or '.'}")
        if not node or "." in node:
            if path:
                out.add(path)
        for key, sub in node.items():
            if key == ".":
                continue
            if key[:2] not in ("f:", "k:", "v:", "i:"):
                raise ValueError(f"unknown path element type: {key!r}")
            walk(sub, path + (key,))

    walk(doc, ())
    return frozenset(out)


# --------------------------------------------------------------------------- display


def _element_string(pe: str) -> str:
    tag, body = pe[:2], pe[2:]
    if tag == "f:":
        return "." + body
    if tag == "k:":
        key = json.loads(body)
        return "[" + ",".join(f"{k}={_json(key[k])}" for k in sorted(key)) + "]"
    if tag == "v:":
        return f"[={body}]"
    return f"[{body}]"


def path_string(path: Path) -> str:
    """SMD's human form of a path: ``.spec.template.spec.containers[name="nginx"].image``."""
    return "".join(_element_string(pe) for pe in path)


_RANK = {"f:": 0, "k:": 1, "v:": 2, "i:": 3}


def _element_order(pe: str) -> tuple[int, Any]:
    if pe[:2] == "i:":
        return (3, int(pe[2:]))
    return (_RANK.get(pe[:2], 4), pe[2:])


def sort_paths(paths: Iterable[Path]) -> list[Path]:
    """``paths`` in SMD's set order: field names before keys, values and indexes."""
    return sorted(paths, key=lambda p: tuple(_element_order(pe) for pe in p))
