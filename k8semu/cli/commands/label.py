"""``k8semu label TYPE NAME k=v k2-``: kubectl label (and, shared, ``annotate``).

As kubectl: arguments are resources first, then changes (``key=value`` sets,
``key-`` removes; a resource after a change is ``error: all resources must
be specified before label changes: X``). Each object is read, the new map
computed, and a JSON merge patch of the difference sent (field manager
``kubectl-label`` / ``kubectl-annotate``). Changing a key that already has
another value needs ``--overwrite`` (``error: 'app' already has a value
(web), and --overwrite is false``; for annotations ``error: --overwrite is
false but found the following declared annotation(s): 'k' already has a
value (v)``). Prints ``pod/x labeled``, ``pod/x unlabeled`` (the object got shorter, without
``--overwrite``) or ``pod/x not labeled`` when nothing changed (``annotate``
always says ``annotated``); removing a missing label prints ``label "k" not found.``.

``--list`` prints the keys (``k=v``; several objects each under ``Listing
labels for Kind.group/name:``), ``--local`` changes ``-f`` objects without a
cluster, ``-o``/``--template`` print the changed object, ``--field-selector`` and
``--field-manager`` as kubectl's.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ...api import errors
from ...api.apiserver import MERGE_PATCH
from ...api.gofmt import go_json
from ..output import add_dry_run_flag, add_output_flag, die, display_name, dry_run_strategy, dry_run_suffix, server_error
from ..parser import GoBool
from ..printing import ObjectPrinter
from ..targets import LOCAL_SERVER_DRY_RUN, current_object, TargetError, add_run_flags, add_target_flags, run_local_or_write, single_item_implied

CHANGE_CAUSE = "kubernetes.io/change-cause"


def register(sub: argparse._SubParsersAction) -> None:
    _register(sub, "label", "add, change or remove labels (as kubectl label)")


def _register(sub: argparse._SubParsersAction, verb: str, help: str) -> None:
    p = sub.add_parser(verb, help=help)
    add_target_flags(p, all_namespaces=True, field_selector=True)
    p.add_argument("--overwrite", action=GoBool, default=False, help="allow changing existing keys")
    p.add_argument("--resource-version", default="", help="only if the object is still at this resourceVersion")
    p.add_argument("--list", action=GoBool, default=False,
                   help=f"print the {'labels' if verb == 'label' else 'annotations'} (after the changes given, "
                        "which are then not sent)")
    p.add_argument("--local", action=GoBool, default=False,
                   help="change the -f objects locally and print them; nothing is sent")
    p.add_argument("--field-manager", default=f"kubectl-{verb}", help=f"field manager (default kubectl-{verb})")
    add_dry_run_flag(p)
    add_output_flag(p)
    add_run_flags(p)
    p.set_defaults(func=lambda args: run_meta(args, verb))


def split_resources_and_pairs(args: list[str], pair_type: str) -> tuple[list[str], list[str]]:
    """kubectl's ``GetResourcesAndPairs``: resources first, then ``k=v`` / ``k-`` changes.

    Raises:
        TargetError: ``all resources must be specified before label changes: X``.
    """
    resources: list[str] = []
    pairs: list[str] = []
    for a in args:
        is_pair = ("=" in a and not a.startswith("=")) or (a.endswith("-") and a != "-")
        if is_pair:
            pairs.append(a)
        elif pairs:
            raise TargetError(f"all resources must be specified before {pair_type} changes: {a}")
        else:
            resources.append(a)
    return resources, pairs


def parse_changes(pairs: list[str], pair_type: str, *, allow_none: bool = False) -> tuple[dict[str, str], list[str]]:
    """``["a=1", "b-"]`` -> (``{"a": "1"}``, ``["b"]``).

    Raises:
        TargetError: ``at least one label update is required``, ``invalid label spec: X``,
            or ``can not both modify and remove a label in the same command``.
    """
    add: dict[str, str] = {}
    remove: list[str] = []
    for p in pairs:
        if "=" in p:
            k, _, v = p.partition("=")
            if not k or (pair_type == "label" and "=" in v):
                raise TargetError(f"invalid {pair_type} spec: {p}")
            add[k] = v
        else:
            remove.append(p[:-1])
    if not add and not remove and not allow_none:
        raise TargetError(f"at least one {pair_type} update is required")
    both = [k for k in remove if k in add]
    if both:
        raise TargetError(f"can not both modify and remove {'a label' if pair_type == 'label' else 'an annotation'}"
                          " in the same command")
    return add, remove


def _overwrite_error(verb: str, current: dict[str, str], add: dict[str, str]) -> str | None:
    clashes = [(k, current[k]) for k, v in add.items() if k in current and current[k] != v
               and not (verb == "annotate" and k == CHANGE_CAUSE)]
    if not clashes:
        return None
    if verb == "label":
        return "\n".join(f"error: '{k}' already has a value ({v}), and --overwrite is false" for k, v in clashes)
    found = "; ".join(f"'{k}' already has a value ({v})" for k, v in clashes)
    return f"error: --overwrite is false but found the following declared annotation(s): {found}"


def _change_message(verb: str, old: dict[str, Any], new: dict[str, Any], overwrite: bool) -> str:
    """kubectl's word for what ``label`` did, from the object's JSON before and after (its
    ``updateDataChangeMsg``): ``not labeled`` when unchanged, ``unlabeled`` when the JSON got
    shorter without ``--overwrite``, else ``labeled``; ``annotate`` always says ``annotated``."""
    if verb != "label":
        return "annotated"
    before, after = go_json(old), go_json(new)
    if before == after:
        return "not labeled"
    return "unlabeled" if not overwrite and len(after.encode()) < len(before.encode()) else "labeled"


def _changed(obj: dict[str, Any], field: str, add: dict[str, str], remove: list[str],
             resource_version: str) -> dict[str, Any]:
    """``obj`` with the changes made as kubectl makes them locally (``labelFunc``): the map is
    set even when it ends up empty, and ``--resource-version`` written into the object."""
    meta = dict(obj.get("metadata") or {})
    values = {**(meta.get(field) or {}), **add}
    for k in remove:
        values.pop(k, None)
    meta[field] = values
    if resource_version:
        meta["resourceVersion"] = resource_version
    return {**obj, "metadata": meta}


def _merge_patch(old: Any, new: Any) -> Any:
    """The JSON merge patch from ``old`` to ``new`` (``jsonpatch.CreateMergePatch``)."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return new
    out: dict[str, Any] = {}
    for k, v in new.items():
        if k not in old:
            out[k] = v
        elif old[k] != v:
            out[k] = _merge_patch(old[k], v) if isinstance(v, dict) and isinstance(old[k], dict) else v
    for k in old:
        if k not in new:
            out[k] = None
    return out


def _list_keys(obj: dict[str, Any], field: str, header: str | None) -> None:
    """``--list``: each key as ``k=v`` (in key order: kubectl's is a Go map's, which has none),
    under ``Listing labels for Kind.group/name:`` and indented when several objects are listed."""
    if header is not None:
        print(header)
    for k, v in sorted(((obj.get("metadata") or {}).get(field) or {}).items()):
        print(f"{' ' if header is not None else ''}{k}={v}")


def run_meta(args: argparse.Namespace, verb: str) -> int:
    """``label`` (``verb="label"``) or ``annotate`` (``verb="annotate"``), as kubectl's
    Complete, Validate and Run check and do them.

    ``--list`` prints the keys of each object after the changes given (made locally, not
    sent); ``--local`` changes the ``-f`` objects without a cluster; ``--dry-run=client``
    sends nothing either. ``-o`` prints the object as changed locally (what kubectl holds),
    not the server's answer.
    """
    pair_type = "label" if verb == "label" else "annotation"
    field = "labels" if verb == "label" else "annotations"
    positional, pairs = split_resources_and_pairs(args.resources, pair_type)
    add, remove = parse_changes(pairs, pair_type, allow_none=True)
    if args.list and args.output:
        return die("--list and --output may not be specified together")
    dry = dry_run_strategy(args.dry_run)
    if args.select_all and args.selector:
        return die("cannot set --all and --selector at the same time")
    if args.select_all and args.field_selector:
        return die("cannot set --all and --field-selector at the same time")
    if args.local:
        if dry == "server":
            return die(LOCAL_SERVER_DRY_RUN)
        if positional:
            return die("can only use local files by -f pod.yaml or --filename=pod.json when --local=true is set")
        if not args.filename:
            return die("one or more files must be specified as -f pod.yaml or --filename=pod.json")
    elif not positional and not args.filename:
        return die("one or more resources must be specified as <resource> <name> or <resource>/<name>")
    if not add and not remove and not args.list:
        return die(f"at least one {pair_type} update is required")
    try:
        printer = ObjectPrinter.from_args(args)
    except ValueError as e:
        return die(str(e))
    suffix = dry_run_suffix(dry)
    failures: list[str] = []
    local = dry == "client" or args.local or args.list

    def single(targets: list[Any]) -> bool:
        """kubectl's builder implies a single item: one name, one TYPE/NAME, or one file."""
        if args.filename:
            return single_item_implied(args.filename)
        if positional and "/" in positional[0]:
            return len(positional) == 1
        return len(positional) == 2

    def each(api: Any, targets: list[Any]) -> None:
        one = single(targets)
        if args.resource_version and not one:
            failures.append("error: --resource-version may only be used with a single resource")
            return
        for t in targets:
            obj = current_object(api, t, failures)
            if obj is None:
                continue
            current: dict[str, str] = dict((obj.get("metadata") or {}).get(field) or {})
            if not args.overwrite:
                err = _overwrite_error(verb, current, add)
                if err:
                    failures.append(err)
                    continue
            old = obj
            if args.resource_version:  # kubectl clears it first, so that the patch always carries it
                old = {**obj, "metadata": {k: v for k, v in (obj.get("metadata") or {}).items()
                                           if k != "resourceVersion"}}
            if not local and verb == "label":
                for k in remove:
                    if k not in current:
                        print(f'label "{k}" not found.')
            new = _changed(old, field, add, remove, args.resource_version)
            message = _change_message(verb, old, new, args.overwrite)
            if not local:
                try:
                    api.patch(t.info, t.name, _merge_patch(old, new), MERGE_PATCH, namespace=t.namespace,
                              field_manager=args.field_manager, dry_run=dry == "server")
                except errors.StatusError as e:
                    failures.append(server_error(e))
                    continue
            if args.list:
                kind = f"{t.info.kind}.{t.info.group}"
                noun = "labels" if verb == "label" else "annotations"
                _list_keys(new, field, None if one else f"Listing {noun} for {kind}/{t.name}:")
                continue
            if printer.print(new, f"{display_name(t.info, t.name)} {message}{suffix}"):
                failures.append("")

    error = run_local_or_write(args, positional, each, dry_run=dry != "none" or args.list, failures=failures)
    if error is not None:
        return die(error)
    for line in failures:
        if line:
            print(line, file=sys.stderr)
    return 1 if failures else 0
