"""``k8semu describe``: kubectl describe (read-only; the cluster does not run).

``describe TYPE NAME``, ``describe TYPE/NAME``, ``describe TYPE NAME_PREFIX``
(an exact name first, else every object whose name starts with it, as
kubectl does), ``describe TYPE -l SELECTOR`` and ``describe TYPE`` (all).
Several descriptions are separated by two blank lines, as kubectl's.
The describers are in :mod:`k8semu.cli.describe`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ...api import errors
from ..describe import describe
from ..output import die, server_error
from ..session import open_cluster_at
from ..targets import intermixed
from .get import UnknownType, parse_targets_with_crds, cluster_now, no_resources_message, parse_targets


def register(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser("describe", help="show details of resources (as kubectl describe)")
    intermixed(d)
    d.add_argument("resources", nargs="*", metavar="TYPE[/NAME] [NAME_PREFIX]")
    d.add_argument("-n", "--namespace", default="default")
    d.add_argument("-A", "--all-namespaces", action="store_true")
    d.add_argument("-l", "--selector")
    from ...timeline.view import add_at_argument

    add_at_argument(d)
    d.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not args.resources:  # k8semu has no api-resources command: kubectl's words as they are
        return die('You must specify the type of resource to describe. Use "kubectl api-resources" for a '
                   "complete list of supported resources.")
    try:
        targets = parse_targets(args.resources)
    except UnknownType as e:  # perhaps a custom resource: one of the cluster's CRDs defines it
        try:
            targets = parse_targets_with_crds(args)
        except (UnknownType, ValueError):
            targets = None
        if targets is None:
            return die(str(e))
    cluster = open_cluster_at(args)
    api = cluster.api
    now = cluster_now(cluster)
    failed = False
    objs: list[Any] = []
    for info, names in targets:
        ns = (None if args.all_namespaces else args.namespace) if info.namespaced else None
        if not names:
            objs.extend(api.list(info, namespace=ns, label_selector=args.selector)["items"])
            continue
        for name in names:
            try:
                objs.append(api.get(info, name, namespace=ns))
                continue
            except errors.NotFound as e:
                missing = e
            prefixed = [o for o in api.list(info, namespace=ns, label_selector=args.selector)["items"]
                        if o["metadata"]["name"].startswith(name)]
            if not prefixed:
                print(server_error(missing), file=sys.stderr)
                failed = True
            objs.extend(prefixed)
    if not objs and not failed:
        print(no_resources_message(args.namespace, args.all_namespaces,
                                   any(i.namespaced for i, _ in targets)), file=sys.stderr)
    for i, obj in enumerate(objs):
        if i:
            sys.stdout.write("\n\n")
        info = next(t for t, _ in targets if t.kind == obj.get("kind")) if obj.get("kind") else targets[0][0]
        sys.stdout.write(describe(api, {"apiVersion": info.api_version, "kind": info.kind, **obj}, now))
    cluster.close()
    return 1 if failed else 0
