"""``k8semu set image TYPE/NAME CONTAINER=IMAGE…``: kubectl set image.

Works on the pod template of Deployments, ReplicaSets, StatefulSets,
DaemonSets, ReplicationControllers, Jobs and CronJobs, and on Pods' own
spec. ``*=IMAGE`` sets every container; init containers count too. As
kubectl: the object is read, the images changed, and a strategic merge
patch of the difference sent (field manager ``kubectl-set``); an unchanged
object sends nothing and prints nothing; a container that is not there is
``error: unable to find container named "x"``. Prints
``deployment.apps/web image updated``; then the cluster settles (the
rollout runs) or runs ``--for``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ...api import errors
from ...api.apiserver import STRATEGIC_MERGE_PATCH
from ...api.patch import create_two_way_merge_patch
from ..output import add_dry_run_flag, add_output_flag, die, display_name, dry_run_strategy, dry_run_suffix, server_error
from ..parser import GoBool
from ..printing import ObjectPrinter
from ..targets import LOCAL_SERVER_DRY_RUN, current_object, add_run_flags, add_target_flags, run_local_or_write
from .label import split_resources_and_pairs

FIELD_MANAGER = "kubectl-set"


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("set", help="change a field of objects (as kubectl set)")
    kinds = s.add_subparsers(dest="set_what", required=True, metavar="image")
    i = kinds.add_parser("image", help="update containers' images (as kubectl set image)")
    add_target_flags(i, all_namespaces=True)
    i.add_argument("--local", action=GoBool, default=False,
                   help="change the -f objects locally and print them; nothing is sent")
    i.add_argument("--field-manager", default=FIELD_MANAGER, help=f"field manager (default {FIELD_MANAGER})")
    add_dry_run_flag(i)
    add_output_flag(i)
    add_run_flags(i)
    i.set_defaults(func=run)


def pod_spec_path(kind: str) -> tuple[str, ...] | None:
    """Where the pod spec sits in an object of ``kind`` (None: no pod spec)."""
    if kind == "Pod":
        return ("spec",)
    if kind == "CronJob":
        return ("spec", "jobTemplate", "spec", "template", "spec")
    if kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "ReplicationController", "Job"):
        return ("spec", "template", "spec")
    return None


def _get(obj: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    for k in path:
        obj = obj.get(k) or {}
    return obj


def _set(obj: dict[str, Any], path: tuple[str, ...], value: dict[str, Any]) -> dict[str, Any]:
    if not path:
        return value
    return {**obj, path[0]: _set(obj.get(path[0]) or {}, path[1:], value)}


def with_images(obj: dict[str, Any], images: dict[str, str]) -> tuple[dict[str, Any], list[str]]:
    """``obj`` with its containers' images set; also the names not found.

    Args:
        images: container name (or ``*``) -> image.
    """
    path = pod_spec_path(obj.get("kind", ""))
    spec = dict(_get(obj, path))
    missing = []
    for name, image in images.items():
        found = False
        for field in ("initContainers", "containers"):
            new = []
            for c in spec.get(field) or []:
                if c.get("name") == name or name == "*":
                    found = True
                    c = {**c, "image": image}
                new.append(c)
            if field in spec:
                spec[field] = new
        if not found:
            missing.append(name)
    return _set(obj, path, spec), missing


#: kubectl's ``resource.LocalResourceError``.
LOCAL_RESOURCE_ERROR = ("you must specify resources by --filename when --local is set.\n"
                        "Example resource specifications include:\n   '-f rsrc.yaml'\n   '--filename=rsrc.json'")


def run(args: argparse.Namespace) -> int:
    """kubectl set image: each object read (``--local``: the ``-f`` objects as written), its
    images changed, a strategic merge patch of the difference sent (``--dry-run=client`` and
    ``--local`` send nothing); printed as ``image updated`` or, with ``-o``, the object (the
    server's answer; the local one when nothing is sent)."""
    positional, pairs = split_resources_and_pairs(args.resources, "image")
    if args.local and positional:
        return die(LOCAL_RESOURCE_ERROR)
    if not pairs:
        print("error: at least one image update is required", file=sys.stderr)
        return 1
    images = dict(p.split("=", 1) for p in pairs if "=" in p)
    dry = dry_run_strategy(args.dry_run)
    if args.local and dry == "server":
        return die(LOCAL_SERVER_DRY_RUN)
    try:
        printer = ObjectPrinter.from_args(args)
    except ValueError as e:
        return die(str(e))
    suffix = dry_run_suffix(dry)
    failures: list[str] = []

    def each(api: Any, targets: list[Any]) -> None:
        for t in targets:
            obj = current_object(api, t, failures)
            if obj is None:
                continue
            if pod_spec_path(t.info.kind) is None:
                failures.append(f"error: {t.info.plural}/{t.name} the object is not a pod or does not have a pod template: "
                                f"*v1.{t.info.kind}")
                continue
            new, missing = with_images(obj, images)
            failures.extend(f'error: unable to find container named "{n}"' for n in missing)
            patch = create_two_way_merge_patch(obj, new, f"{obj['apiVersion']}/{obj['kind']}")
            if not patch:
                continue
            shown = new
            if not (args.local or dry == "client"):
                try:
                    shown = api.patch(t.info, t.name, patch, STRATEGIC_MERGE_PATCH, namespace=t.namespace,
                                      field_manager=args.field_manager, dry_run=dry == "server")
                except errors.StatusError as e:
                    failures.append(f"failed to patch image update to pod template: {e.message}")
                    continue
            if printer.print(shown, f"{display_name(t.info, t.name)} image updated{suffix}", go_struct=True):
                failures.append("")

    error = run_local_or_write(args, positional, each, dry_run=dry != "none", failures=failures)
    if error is not None:
        return die(error)
    for line in failures:
        if line:
            print(line, file=sys.stderr)
    return 1 if failures else 0
