"""Server-side apply and ``metadata.managedFields``, as kube-apiserver's field manager does them.

Every write records who set which fields (k8s.io/apiserver/pkg/endpoints/
handlers/fieldmanager over sigs.k8s.io/structured-merge-diff). Ownership is
kept per *manager*: one ``managedFields`` entry per (manager name, operation,
apiVersion for ``Update``, subresource), each holding a field set
(:mod:`.fieldpath`) in ``FieldsV1`` form.

* **Apply** (``PATCH`` with ``application/apply-patch+yaml``,
  :func:`server_side_apply`): the applied configuration is merged into the
  live object (maps merge, associative lists merge by key, atomic lists and
  scalars are replaced); the manager then owns exactly the fields its
  configuration names. Fields it owned before and no longer applies are
  removed from the object unless another manager owns them. Changing a field
  another manager owns is a conflict (409) unless ``force`` takes it over;
  applying the value it already has shares ownership.
* **Update** (every other write, :func:`track_update`): the writer takes
  ownership of what it added or changed, taking those fields away from other
  managers; removed fields leave every manager's set.

Details mirrored from upstream:

* ``apiVersion``, ``kind``, ``metadata.name`` / ``namespace`` / ``uid`` /
  ``resourceVersion`` / ``generation`` / ``creationTimestamp`` /
  ``managedFields`` are never owned (stripMeta).
* fields a subresource cannot change are not tracked there (the strategy's
  reset fields): a main-resource write does not own ``status`` of kinds with
  a status subresource, a ``status`` write owns only ``status``, a ``scale``
  write only ``spec.replicas``.
* the first apply to an object without ``managedFields`` gives all of its
  existing fields to an ``Update`` manager named ``before-first-apply``;
  updates to such an object are not tracked (skipNonApplied).
* entries are sorted by operation, time, manager, apiVersion, subresource;
  a manager's ``time`` moves only when its write changed the object.
* an apply that changes neither the object nor any ownership writes nothing.

Left out: conversion across API versions (one served version per kind here),
the 10-entry cap on ``Update`` managers (``ancient-changes``), and the
``kubectl-client-side-apply`` last-applied-configuration upgrade path.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from . import errors, strategy
from .fieldpath import (
    FieldSet,
    ListKeyError,
    ListType,
    Path,
    compare,
    fields_of,
    from_fieldsv1,
    is_atomic_map,
    item_element,
    list_type,
    path_string,
    sort_paths,
    to_fieldsv1,
)

__all__ = [
    "server_side_apply",
    "apply_config",
    "track_update",
    "validate_field_manager",
    "BEFORE_FIRST_APPLY",
]

#: The manager that owns what existed before an object's first apply.
BEFORE_FIRST_APPLY = "before-first-apply"
_MAX_MANAGER_LEN = 128

# stripMeta: paths no manager ever owns.
_STRIP: FieldSet = frozenset(
    [("f:apiVersion",), ("f:kind",), ("f:metadata",)]
    + [("f:metadata", "f:" + n) for n in (
        "name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName",
        "generation", "managedFields", "resourceVersion",
    )]
)


# --------------------------------------------------------------------------- managers


class _Id(NamedTuple):
    """A manager's identity (BuildManagerIdentifier): apiVersion only for Update."""

    manager: str
    operation: str
    api_version: str
    subresource: str


class _Entry(NamedTuple):
    fields: FieldSet
    api_version: str
    time: str | None


_Managers = dict[_Id, _Entry]


def _decode(entries: Any) -> _Managers:
    """``metadata.managedFields`` -> managers; ValueError if malformed."""
    out: _Managers = {}
    for i, e in enumerate(entries or ()):
        if not isinstance(e, dict):
            raise ValueError(f"managed fields entry {i} is not an object")
        op = e.get("operation")
        if op not in ("Apply", "Update"):
            raise ValueError("operation must be `Apply` or `Update`")
        api_version = e.get("apiVersion") or ""
        if not api_version:
            raise ValueError("apiVersion must not be empty")
        if e.get("fieldsType") != "FieldsV1":
            raise ValueError(f"invalid fieldsType in managed fields entry {i}")
        ident = _Id(e.get("manager") or "", op, "" if op == "Apply" else api_version, e.get("subresource") or "")
        out[ident] = _Entry(from_fieldsv1(e.get("fieldsV1") or {}), api_version, e.get("time"))
    return out


def _encode(managers: _Managers) -> list[dict[str, Any]]:
    """Managers -> ``metadata.managedFields`` entries in upstream's order."""
    entries = []
    for ident, entry in managers.items():
        e: dict[str, Any] = {"manager": ident.manager, "operation": ident.operation,
                             "apiVersion": entry.api_version}
        if entry.time:
            e["time"] = entry.time
        e["fieldsType"] = "FieldsV1"
        e["fieldsV1"] = to_fieldsv1(entry.fields)
        if ident.subresource:
            e["subresource"] = ident.subresource
        entries.append(e)
    entries.sort(key=lambda e: (e["operation"], e.get("time") or "", e["manager"], e["apiVersion"],
                                e.get("subresource", "")))
    return entries


def _identifier(ident: _Id) -> str:
    """The JSON identifier upstream keys (and sorts) managers by."""
    d = {"manager": ident.manager, "operation": ident.operation, "apiVersion": ident.api_version,
         "subresource": ident.subresource}
    return json.dumps({k: v for k, v in d.items() if v}, separators=(",", ":"))


def _print_manager(ident: _Id, api_version: str) -> str:
    text = json.dumps(ident.manager, ensure_ascii=False)
    if ident.subresource:
        text += f" with subresource {json.dumps(ident.subresource, ensure_ascii=False)}"
    if ident.operation == "Update":
        text += f" using {api_version}"
    return text


def _conflict_error(conflicts: dict[_Id, FieldSet], managers: _Managers) -> errors.Conflict:
    """409 with upstream's ``Apply failed with N conflict(s): …`` text and causes."""
    pairs = []
    for ident in sorted(conflicts, key=_identifier):
        who = _print_manager(ident, managers[ident].api_version)
        pairs.extend((who, path_string(p)) for p in sort_paths(conflicts[ident]))
    if len(pairs) == 1:
        message = f"Apply failed with 1 conflict: conflict with {pairs[0][0]}: {pairs[0][1]}"
    else:
        lines: list[str] = []
        for who in dict.fromkeys(w for w, _ in pairs):
            lines.append(f"conflicts with {who}:")
            lines.extend(f"- {p}" for w, p in pairs if w == who)
        message = f"Apply failed with {len(pairs)} conflicts: " + "\n".join(lines)
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {who}", "field": p}
              for who, p in pairs]
    return errors.Conflict(message, details={"causes": causes})


# --------------------------------------------------------------------------- object helpers


def _meta(obj: dict[str, Any] | None) -> dict[str, Any]:
    return (obj or {}).get("metadata") or {}


def _without_managed(obj: dict[str, Any]) -> dict[str, Any]:
    meta = _meta(obj)
    if "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}


def _with_managed(obj: dict[str, Any], entries: list[dict[str, Any]]) -> dict[str, Any]:
    meta = dict(_meta(obj))
    if entries:
        meta["managedFields"] = entries
    else:
        meta.pop("managedFields", None)
    return {**obj, "metadata": meta}


def _scope(obj: dict[str, Any] | None, kind: str, subresource: str) -> dict[str, Any] | None:
    """The part of ``obj`` a write through ``subresource`` may own (reset fields removed)."""
    if obj is None:
        return None
    if subresource in ("status", "approval"):  # a CSR's /approval owns its status.conditions
        return {"status": obj["status"]} if "status" in obj else {}
    if subresource == "scale":
        spec = obj.get("spec") or {}
        return {"spec": {"replicas": spec["replicas"]}} if "replicas" in spec else {}
    if strategy.has_status(kind) and "status" in obj:
        return {k: v for k, v in obj.items() if k != "status"}
    return obj


def _kind_key(obj: dict[str, Any]) -> str:
    return f"{obj.get('apiVersion')}/{obj.get('kind')}"


# --------------------------------------------------------------------------- merge / prune


def _clean(value: Any) -> Any:
    """An applied value as stored: ``null`` map values dropped."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _merge(live: Any, config: Any, path: Path, names: tuple[str, ...], kind: str) -> Any:
    """Merge an applied value into a live one (SMD ``TypedValue.Merge``)."""
    if isinstance(live, dict) and isinstance(config, dict) and not is_atomic_map(kind, names):
        out = dict(live)
        for k, v in config.items():
            if v is None:
                out.pop(k, None)
            elif k in live:
                out[k] = _merge(live[k], v, path + ("f:" + k,), names + (k,), kind)
            else:
                out[k] = _clean(v)
        return out
    if isinstance(live, list) and isinstance(config, list):
        lt = list_type(kind, names)
        if lt.kind != "atomic":
            return _merge_list(live, config, lt, path, names, kind)
    return _clean(config)


def _merge_list(live: list, config: list, lt: ListType, path: Path, names: tuple[str, ...], kind: str) -> list:
    """Associative/set list merge: items matched by key; config order wins, live-only items stay put."""
    cfg: dict[str, Any] = {}
    for i, item in enumerate(config):
        cfg[item_element(item, lt, path, i)] = item
    order = list(cfg)
    out: list[Any] = []
    done: set[str] = set()
    ri = 0

    def emit(pe: str, live_item: Any) -> None:
        done.add(pe)
        item = cfg[pe]
        if lt.kind == "map" and live_item is not None:
            out.append(_merge(live_item, item, path + (pe,), names, kind))
        else:
            out.append(_clean(item))

    live_by_pe: dict[str, Any] = {}
    keyed_live = []
    for i, item in enumerate(live):
        try:
            pe = item_element(item, lt, path, i)
        except ListKeyError:
            pe = None
        keyed_live.append((pe, item))
        if pe is not None:
            live_by_pe.setdefault(pe, item)
    for pe, item in keyed_live:
        if pe is None or pe not in cfg:
            out.append(item)
            continue
        if pe in done:
            continue
        while ri < len(order):
            want = order[ri]
            ri += 1
            if want not in done:
                emit(want, live_by_pe.get(want))
            if want == pe:
                break
    for want in order[ri:]:
        if want not in done:
            emit(want, live_by_pe.get(want))
    return out


_GONE = object()  # what _remove returns for a value that is removed entirely


def _remove(obj: Any, path: Path, names: tuple[str, ...], kind: str) -> Any:
    """``obj`` without the value at ``path``; maps/lists emptied by the removal go too."""
    if not path:
        return _GONE
    pe, rest = path[0], path[1:]
    if isinstance(obj, dict) and pe.startswith("f:"):
        k = pe[2:]
        if k not in obj:
            return obj
        sub = _remove(obj[k], rest, names + (k,), kind)
        out = {x: (sub if x == k else y) for x, y in obj.items() if x != k or sub is not _GONE}
        return out if out else _GONE
    if isinstance(obj, list) and pe[:2] in ("k:", "v:"):
        lt = list_type(kind, names)
        out_list = []
        for i, item in enumerate(obj):
            try:
                match = item_element(item, lt, (), i) == pe
            except ListKeyError:
                match = False
            if match:
                item = _remove(item, rest, names, kind)
                if item is _GONE:
                    continue
            out_list.append(item)
        return out_list if out_list else _GONE
    return obj


def _prune(obj: dict[str, Any], remove: FieldSet, keep: FieldSet, kind: str) -> dict[str, Any]:
    """Remove ``remove`` paths from ``obj``, sparing any with an owned path below them."""
    for path in sort_paths(remove):
        n = len(path)
        if any(len(k) > n and k[:n] == path for k in keep):
            continue
        out = _remove(obj, path, (), kind)
        obj = out if out is not _GONE else {}
    return obj


# --------------------------------------------------------------------------- apply


def apply_config(
    live: dict[str, Any] | None,
    config: dict[str, Any],
    manager: str,
    *,
    force: bool = False,
    time: str,
    subresource: str = "",
) -> dict[str, Any]:
    """Apply ``config`` for ``manager`` to ``live`` (None: the object does not exist yet).

    Mirrors structured-merge-diff's ``Updater.Apply`` behind kube-apiserver's
    field-manager chain (stripMeta, reset fields, before-first-apply).

    Args:
        live: the stored object (with its ``managedFields``) or None.
        config: the applied configuration (``apiVersion``/``kind`` checked by the caller).
        manager: the field manager (``kubectl`` for ``kubectl apply --server-side``).
        force: take fields over from other managers instead of failing.
        time: RFC 3339 time recorded on the manager's entry when the object changes.
        subresource: ``""`` or ``"status"``.
    Returns:
        the new object carrying ``metadata.managedFields`` (not yet defaulted,
        validated or stored), or ``live`` itself when the apply changes
        nothing at all.
    Raises:
        Conflict: fields owned by other managers would change (and not ``force``).
        InternalError: the configuration has an associative-list item without
            its key, or two items with the same key (SMD's typed-conversion errors).
    """
    kind_key = _kind_key(config)
    kind = str(config.get("kind"))
    api_version = str(config.get("apiVersion"))
    try:
        managers = _decode(_meta(live).get("managedFields"))
    except ValueError as e:
        raise errors.InternalError(f"failed to decode managed fields: {e}") from None
    original = dict(managers)
    live_clean = _without_managed(live) if live is not None else {}
    cfg = _scope(config, kind, subresource) or {}
    try:
        applied = fields_of(cfg, kind_key) - _STRIP
        merged = _merge(live_clean, cfg, (), (), kind)
        if live is not None and not managers:
            before = compare(None, _scope(live_clean, kind, subresource), kind_key)
            owned = (before.added | before.modified) - _STRIP
            if owned:
                managers[_Id(BEFORE_FIRST_APPLY, "Update", api_version, "")] = _Entry(owned, api_version, time)
                original = dict(managers)
    except ListKeyError as e:
        meta = _meta(config)
        where = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        group, _, version = api_version.rpartition("/")
        raise errors.InternalError(
            f"failed to create typed patch object ({where}; {group}/{version}, Kind={kind}): {e}"
        ) from None

    me = _Id(manager, "Apply", "", subresource)
    last = managers.get(me)
    managers[me] = _Entry(applied, api_version, last.time if last else None)
    if last is not None:
        owned_now = frozenset().union(*(e.fields for e in managers.values()))
        merged = _prune(merged, last.fields - owned_now, owned_now, kind)

    diff = compare(_scope(live_clean, kind, subresource), _scope(merged, kind, subresource), kind_key)
    changed = diff.added | diff.modified
    conflicts = {i: e.fields & changed for i, e in managers.items() if i != me and e.fields & changed}
    if conflicts and not force:
        raise _conflict_error(conflicts, managers)
    for ident, entry in list(managers.items()):
        fields = entry.fields - conflicts.get(ident, frozenset())
        if ident != me:
            fields -= diff.removed
        if fields:
            managers[ident] = entry._replace(fields=fields)
        else:
            del managers[ident]

    object_changed = merged != live_clean
    if me in managers and object_changed:
        managers[me] = managers[me]._replace(time=time)
    if live is not None and not object_changed and managers == original:
        return live
    return _with_managed(merged, _encode(managers))


# --------------------------------------------------------------------------- update


#: Passed as ``field_manager`` to the API server's writes when the object's
#: ``managedFields`` were already computed by :func:`server_side_apply`.
APPLIED = "\x00applied"


def track_update(
    old: dict[str, Any] | None,
    new: dict[str, Any],
    manager: str,
    kind_key: str | None = None,
    time: str | None = None,
    *,
    subresource: str = "",
) -> dict[str, Any]:
    """Record a non-apply write (create, update, patch) in ``new``'s ``managedFields``.

    Mirrors the field manager's ``Update`` path: ``manager`` (operation
    ``Update``, ``new``'s apiVersion, ``subresource``) gains every field the
    write added or changed, other managers lose those, and removed fields
    leave every manager.

    Call it on the final object (after defaulting and the strategy) just
    before storing it, for every write except server-side apply (whose
    objects already carry their entries). The base entries are ``new``'s own
    ``managedFields`` when the client sent valid ones on the main resource
    (as ``kubectl edit``/``replace`` echo them back), ``[]`` resetting them,
    otherwise ``old``'s.

    Args:
        old: the stored object, or None for a create.
        new: the object about to be stored (not mutated).
        manager: the field manager (``kubectl-edit``, ``kube-controller-manager``…).
        kind_key: ``<apiVersion>/<kind>``; defaults to ``new``'s.
        time: RFC 3339 time for the manager's entry when the write changed something.
        subresource: ``""``, ``"status"`` or ``"scale"``.
    Returns:
        ``new`` with ``metadata.managedFields`` set (or without it when there
        is nothing to track: an existing object that has no entries is not
        tracked, as upstream's skipNonApplied).
    """
    kind_key = kind_key or _kind_key(new)
    kind = kind_key.rsplit("/", 1)[-1]
    api_version = str(new.get("apiVersion"))
    old_entries = _meta(old).get("managedFields") or []
    source = old_entries
    provided = _meta(new).get("managedFields")
    if not subresource and provided is not None:
        source = [] if provided in ([], [{}]) else provided
    try:
        managers = _decode(source)
    except ValueError:
        source = old_entries
        managers = _decode(old_entries)
    if not managers and old is not None:
        return _with_managed(new, [])
    original = dict(managers)
    old_scoped = _scope(_without_managed(old), kind, subresource) if old is not None else None
    new_scoped = _scope(_without_managed(new), kind, subresource)
    try:
        diff = compare(old_scoped, new_scoped, kind_key)
    except ListKeyError:
        return _with_managed(new, source)
    changed = (diff.added | diff.modified) - _STRIP
    me = _Id(manager, "Update", api_version, subresource)
    for ident, entry in list(managers.items()):
        fields = entry.fields  # kept as the same object when untouched: its FieldsV1 is remembered
        if diff.removed and not fields.isdisjoint(diff.removed):
            fields = fields - diff.removed
        if ident != me and changed and not fields.isdisjoint(changed):
            fields = fields - changed
        if not fields:
            del managers[ident]
        elif fields is not entry.fields:
            managers[ident] = entry._replace(fields=fields)
    if changed:
        prev = managers.get(me)
        if prev is not None and changed <= prev.fields:
            fields = prev.fields  # the same object: its FieldsV1 is found by identity
        else:
            fields = changed | (prev.fields if prev else frozenset())
        managers[me] = _Entry(fields, api_version, time)
    if managers == original:
        return _with_managed(new, source)
    return _with_managed(new, _encode(managers))


# --------------------------------------------------------------------------- request


def validate_field_manager(field_manager: str | None, *, apply: bool) -> None:
    """Check ``?fieldManager=`` as ``ValidatePatchOptions`` / ``ValidateFieldManager``.

    Raises:
        Invalid: ``PatchOptions.meta.k8s.io "" is invalid: fieldManager:
            Required value: is required for apply patch`` (apply without one),
            longer than 128 bytes, or a non-printable character.
    """
    errs: list[errors.FieldError] = []
    if apply and not field_manager:
        errs.append(errors.FieldError.required("fieldManager", "is required for apply patch"))
    if field_manager:
        if len(field_manager.encode()) > _MAX_MANAGER_LEN:
            errs.append(errors.FieldError("FieldValueTooLong", "fieldManager",
                                          f"may not be more than {_MAX_MANAGER_LEN} bytes"))
        for ch in field_manager:
            if not ch.isprintable():
                errs.append(errors.FieldError.invalid("fieldManager", field_manager,
                                                      f"invalid character U+{ord(ch):04X}"))
    if errs:
        raise errors.Invalid("PatchOptions", "meta.k8s.io", "", errs)


def server_side_apply(
    server: Any,
    info: Any,
    ns: str | None,
    name: str,
    patch: Any,
    *,
    ctx: Any,
    field_manager: str | None,
    force: bool,
    dry_run: bool,
    subresource: str,
) -> dict[str, Any]:
    """PATCH with ``application/apply-patch+yaml``: create or update ``name`` from an applied config.

    Args:
        server: the :class:`~k8semu.api.apiserver.APIServer`.
        info: the target resource (:class:`~k8semu.api.resources.ResourceInfo`).
        ns: namespace (None for cluster-scoped kinds).
        name: the object name from the URL.
        patch: the applied configuration, already decoded to a dict.
        ctx: the request context; field_manager / force / dry_run: the PATCH options.
        subresource: ``""`` or ``"status"``.
    Returns:
        the stored (or, with ``dry_run``, would-be) object, with ``managedFields``;
        the live object unchanged when the apply changes nothing.
    Raises:
        Invalid (422): no ``fieldManager``.
        BadRequest (400): not an object, wrong ``apiVersion``/``kind`` (``invalid
            object type: apps/v1, Kind=Deployment``), ``metadata.managedFields``
            set, or a name/namespace that differs from the URL.
        Conflict (409): conflicts with other managers (see :func:`apply_config`),
            or a stale ``metadata.resourceVersion`` / ``uid`` in the config.
        NotFound: a subresource apply to a missing object, or an unsupported subresource.
        plus whatever defaulting, admission and validation raise.
    """
    validate_field_manager(field_manager, apply=True)
    if not isinstance(patch, dict):
        raise errors.BadRequest("error decoding YAML: the applied configuration must be an object")
    if (patch.get("apiVersion"), patch.get("kind")) != (info.api_version, info.kind):
        av = str(patch.get("apiVersion") or "")
        group, _, version = av.rpartition("/")
        raise errors.BadRequest(f"invalid object type: {group}/{version}, Kind={patch.get('kind') or ''}")
    meta = _meta(patch)
    if meta.get("managedFields") is not None:
        raise errors.BadRequest("metadata.managedFields must be nil")
    if subresource not in ("", "status") or (subresource and subresource not in info.subresources):
        raise errors.NotFound("the server could not find the requested resource")
    cfg_name = meta.get("name") or ""
    if cfg_name != name:
        raise errors.BadRequest(f"the name of the object ({cfg_name}) does not match the name on the URL ({name})")
    if ns and meta.get("namespace") and meta["namespace"] != ns:
        raise errors.BadRequest(
            f"the namespace of the object ({meta['namespace']}) does not match the namespace on the URL ({ns})"
        )
    rec = server.log.get(info.key(ns, name))
    if rec is None:
        if subresource:
            raise errors.NotFound.of(info.plural, info.group, name)
        if meta.get("uid"):
            raise errors.Conflict.of(
                info.plural, info.group, name,
                f"uid mismatch: the provided object specified uid {meta['uid']}, and no existing object was found",
            )
        obj = apply_config(None, patch, field_manager, force=force, time=server.timestamp())
        return server.create(info, obj, namespace=ns, ctx=ctx, dry_run=dry_run, field_validation="Strict",
                             field_manager=APPLIED)
    live = rec.object
    live_meta = _meta(live)
    if meta.get("uid") and meta["uid"] != live_meta.get("uid"):
        raise errors.Conflict.of(
            info.plural, info.group, name,
            f"Precondition failed: UID in precondition: {meta['uid']}, UID in object meta: {live_meta.get('uid')}",
        )
    if meta.get("resourceVersion") and meta["resourceVersion"] != str(rec.revision):
        raise errors.Conflict.of(info.plural, info.group, name)
    config = patch
    if "resourceVersion" in meta or "uid" in meta:
        config = {**patch, "metadata": {k: v for k, v in meta.items() if k not in ("resourceVersion", "uid")}}
    new = apply_config(live, config, field_manager, force=force, time=server.timestamp(),
                       subresource=subresource)
    if new is live:
        return live
    if not info.namespaced:
        new = {**new, "metadata": {k: v for k, v in _meta(new).items() if k != "namespace"}}
    server._decode(info, new, "Strict", ctx)
    return server._write_update(info, ns, name, new, rec, subresource, ctx, dry_run, field_manager=APPLIED)
