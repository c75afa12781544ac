"""The ``k8semu`` command.

A cluster is one event-log file (``--cluster PATH``, ``$K8SEMU_CLUSTER``, or
``./.k8semu/cluster.log``). Each command opens it, does its work through the
emulated kube-apiserver, appends, and exits: no daemon.

Commands so far: ``cluster create|info|delete`` and ``apply -f`` (kubectl's
client-side apply: the ``kubectl.kubernetes.io/last-applied-configuration``
annotation and a three-way strategic merge patch). Output and exit codes
follow kubectl's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from ..api import errors
from ..api.manifest import ManifestError, load_manifests, resource_for
from ..sim.cluster import DEFAULT_CLUSTER_PATH, Cluster
from ..store import LogFormatError

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _cluster_path(args: argparse.Namespace) -> Path:
    return Path(args.cluster or os.environ.get("K8SEMU_CLUSTER") or DEFAULT_CLUSTER_PATH)


def _die(msg: str, code: int = 1) -> int:
    print(f"error: {msg}", file=sys.stderr)
    return code


def _open(args: argparse.Namespace, create: bool = False) -> Cluster:
    path = _cluster_path(args)
    if not path.exists():
        if not create:
            raise FileNotFoundError(
                f'no cluster at "{path}": create one with "k8semu cluster create" or "k8semu apply -f FILE"'
            )
        return Cluster.create(path)
    cluster = Cluster.open(path)
    if cluster.log.torn_line:
        print(f"warning: {path}:{cluster.log.torn_line}: dropped a torn last line (an interrupted write)",
              file=sys.stderr)
    return cluster


def _display_name(info, name: str) -> str:
    kind = info.kind.lower()
    return f"{kind}.{info.group}/{name}" if info.group else f"{kind}/{name}"


def cmd_cluster(args: argparse.Namespace) -> int:
    path = _cluster_path(args)
    if args.action == "create":
        if path.exists():
            return _die(f'a cluster already exists at "{path}"')
        Cluster.create(path, seed=args.seed).close()
        print(f'cluster created at "{path}" (seed {args.seed})')
        return 0
    if args.action == "delete":
        if not path.exists():
            return _die(f'no cluster at "{path}"')
        path.unlink()
        print(f'cluster at "{path}" deleted')
        return 0
    cluster = _open(args)
    log = cluster.log
    print(f"cluster:   {path}")
    print(f"seed:      {cluster.seed}")
    print(f"revision:  {log.revision}")
    print(f"time:      {cluster.time:g}s")
    print(f"objects:   {len(log)}")
    cluster.close()
    return 0


def _with_last_applied(obj: dict[str, Any]) -> dict[str, Any]:
    meta = dict(obj.get("metadata") or {})
    ann = {k: v for k, v in (meta.get("annotations") or {}).items() if k != LAST_APPLIED}
    clean = {**obj, "metadata": {**meta, **({"annotations": ann} if ann else {})}}
    if not ann:
        clean["metadata"].pop("annotations", None)
    text = json.dumps(clean, separators=(",", ":"), sort_keys=True) + "\n"
    return {**obj, "metadata": {**meta, "annotations": {**ann, LAST_APPLIED: text}}}


def cmd_apply(args: argparse.Namespace) -> int:
    from ..api.apiserver import STRATEGIC_MERGE_PATCH
    from ..api.patch import create_three_way_merge_patch

    started = time.perf_counter()
    docs = []
    try:
        for f in args.filename:
            docs.extend(load_manifests(f, recursive=args.recursive))
    except ManifestError as e:
        return _die(str(e))
    cluster = _open(args, create=True)
    api = cluster.api
    dry = args.dry_run in ("server", "client")
    suffix = f" ({args.dry_run} dry run)" if dry else ""
    failed = 0
    for doc in docs:
        try:
            info = resource_for(doc)
        except ManifestError as e:
            print(f"error: {e}", file=sys.stderr)
            if e.hint:
                print(e.hint, file=sys.stderr)
            failed += 1
            continue
        obj = doc.obj
        meta = obj.get("metadata") or {}
        name = meta.get("name", "")
        ns = (meta.get("namespace") or args.namespace or "default") if info.namespaced else None
        desired = _with_last_applied(obj)
        try:
            try:
                current = api.get(info, name, namespace=ns)
            except errors.NotFound:
                if not name:
                    raise
                api.create(info, desired, namespace=ns, dry_run=dry)
                print(f"{_display_name(info, name)} created{suffix}")
                continue
            original_text = ((current.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
            original = json.loads(original_text) if original_text else None
            kind_key = f"{info.api_version}/{info.kind}"
            patch = create_three_way_merge_patch(original, desired, current, kind_key)
            if not patch:
                print(f"{_display_name(info, name)} unchanged{suffix}")
                continue
            api.patch(info, name, patch, STRATEGIC_MERGE_PATCH, namespace=ns, dry_run=dry)
            print(f"{_display_name(info, name)} configured{suffix}")
        except errors.StatusError as e:
            verb = "creating" if "current" not in locals() else "patching"
            print(f'Error from server ({e.reason}): error when {verb} "{doc.source}": {e.message}',
                  file=sys.stderr)
            failed += 1
        finally:
            locals().pop("current", None)
    wall = time.perf_counter() - started
    print(f"# revision {cluster.log.revision}, virtual time {cluster.time:g}s, wall {wall:.2f}s",
          file=sys.stderr)
    cluster.close()
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="k8semu", description="A Kubernetes cluster emulated in virtual time.")
    p.add_argument("--cluster", help="the cluster's event-log file (default $K8SEMU_CLUSTER or ./.k8semu/cluster.log)")
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("cluster", help="create, inspect or delete the cluster file")
    c.add_argument("action", choices=["create", "info", "delete"])
    c.add_argument("--seed", type=int, default=0, help="seed of the cluster's randomness (default 0)")
    c.set_defaults(func=cmd_cluster)

    a = sub.add_parser("apply", help="apply manifests, as kubectl apply -f")
    a.add_argument("-f", "--filename", action="append", required=True, help="file, directory or - for stdin")
    a.add_argument("-R", "--recursive", action="store_true")
    a.add_argument("-n", "--namespace")
    a.add_argument("--dry-run", choices=["none", "client", "server"], default="none")
    a.set_defaults(func=cmd_apply)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``k8semu`` console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (FileNotFoundError, FileExistsError) as e:
        return _die(str(e))
    except LogFormatError as e:
        return _die(f"cannot read the cluster log: {e}")


if __name__ == "__main__":
    sys.exit(main())
