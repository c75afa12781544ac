"""``k8semu label TYPE NAME k=v k2-``: kubectl label (and, shared, ``annotate``).

As kubectl: arguments are resources first, then changes (``key=value`` sets,
``key-`` removes; a resource after a change is ``error: all resources must
be specified before label changes: X``). Each object is read, the new map
computed, and a JSON merge patch of the difference sent (field manager
``kubectl-label`` / ``kubectl-annotate``). Changing a key that already has
another value needs ``--overwrite`` (``error: 'app' already has a value
(web), and --overwrite is false``; for annotations ``error: --overwrite is
false but found the following declared annotation(s): 'k' already has a
value (v)``). Prints ``pod/x labeled`` or ``pod/x not labeled`` when nothing
changed; removing a missing label prints ``label "k" not found.``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ...api import errors
from ...api.apiserver import MERGE_PATCH
from ..output import add_dry_run_flag, display_name, dry_run_strategy, dry_run_suffix, server_error
from ..targets import TargetError, add_run_flags, add_target_flags, resolve_args, run_write

CHANGE_CAUSE = "kubernetes.io/change-cause"


def register(sub: argparse._SubParsersAction) -> None:
    _register(sub, "label", "add, change or remove labels (as kubectl label)")


def _register(sub: argparse._SubParsersAction, verb: str, help: str) -> None:
    p = sub.add_parser(verb, help=help)
    add_target_flags(p, all_namespaces=True)
    p.add_argument("--overwrite", action="store_true", help="allow changing existing keys")
    p.add_argument("--resource-version", default="", help="only if the object is still at this resourceVersion")
    add_dry_run_flag(p)
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


def parse_changes(pairs: list[str], pair_type: str) -> tuple[dict[str, str], list[str]]:
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
    if not add and not remove:
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


def run_meta(args: argparse.Namespace, verb: str) -> int:
    """``label`` (``verb="label"``) or ``annotate`` (``verb="annotate"``)."""
    pair_type = "label" if verb == "label" else "annotation"
    field = "labels" if verb == "label" else "annotations"
    done = "labeled" if verb == "label" else "annotated"
    positional, pairs = split_resources_and_pairs(args.resources, pair_type)
    add, remove = parse_changes(pairs, pair_type)
    dry = dry_run_strategy(args.dry_run)
    suffix = dry_run_suffix(dry)
    failures: list[str] = []

    async def body(cluster, rt) -> None:
        api = cluster.api
        for t in resolve_args(api, args, positional):
            try:
                obj = api.get(t.info, t.name, namespace=t.namespace)
            except errors.StatusError as e:
                failures.append(server_error(e))
                continue
            current: dict[str, str] = dict((obj.get("metadata") or {}).get(field) or {})
            if not args.overwrite:
                err = _overwrite_error(verb, current, add)
                if err:
                    failures.append(err)
                    continue
            new = {**current, **add}
            for k in remove:
                if k not in new and verb == "label":
                    print(f'label "{k}" not found.')
                new.pop(k, None)
            patch: dict[str, Any] = {"metadata": {field: {k: v for k, v in add.items() if current.get(k) != v}}}
            patch["metadata"][field].update({k: None for k in remove if k in current})
            if args.resource_version:
                patch["metadata"]["resourceVersion"] = args.resource_version
            try:
                if dry != "client":
                    api.patch(t.info, t.name, patch, MERGE_PATCH, namespace=t.namespace,
                              field_manager=f"kubectl-{verb}", dry_run=dry == "server")
            except errors.StatusError as e:
                failures.append(server_error(e))
                continue
            what = done if new != current else f"not {done}"
            print(f"{display_name(t.info, t.name)} {what}{suffix}")

    run_write(args, body, dry_run=dry != "none", failures=failures)
    for line in failures:
        print(line, file=sys.stderr)
    return 1 if failures else 0
