"""``k8semu describe``: kubectl describe (read-only; the cluster does not run).

``describe TYPE NAME``, ``describe TYPE/NAME``, ``describe TYPE NAME_PREFIX``
(an exact name first, else every object whose name starts with it, as
kubectl does), ``describe TYPE -l SELECTOR``, ``describe TYPE`` (all) and
``describe -f FILE|DIR|- [-R]`` (the objects the manifests name, ``-l``
matching the manifests' own labels, as kubectl's builder reads them; errors are
collected and printed after the descriptions, each text once).
Several descriptions are separated by two blank lines, as kubectl's.
``--show-events=false`` leaves out the ``Events:`` sections; ``--chunk-size``
is accepted (the output does not depend on it).
The describers are in :mod:`k8semu.cli.describe`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ...api import errors
from ..describe import describe
from ..output import die, server_error
from ..parser import GoBool
from ..session import open_cluster_at
from ..targets import TargetError, add_filename_flags, file_targets, intermixed
from .get import (UnknownType, parse_targets_with_crds, cluster_now, no_resources_message, parse_targets,
                  print_errors)


def register(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser("describe", help="show details of resources (as kubectl describe)")
    intermixed(d)
    d.add_argument("resources", nargs="*", metavar="TYPE[/NAME] [NAME_PREFIX]")
    d.add_argument("-n", "--namespace", help="namespace (default: default)")
    d.add_argument("-A", "--all-namespaces", action="store_true")
    add_filename_flags(d, "the resources to describe")
    d.add_argument("-l", "--selector")
    d.add_argument("--show-events", action=GoBool, default=True,
                   help="with the objects' events (default true)")
    d.add_argument("--chunk-size", type=int, default=500,
                   help="accepted as kubectl's (list in chunks of this size); the output is the same")
    from ...timeline.view import add_at_argument

    add_at_argument(d)
    d.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    explicit_ns = args.namespace is not None and not args.all_namespaces
    args.namespace = args.namespace or "default"
    if args.filename:
        if args.resources:
            return die("when paths, URLs, or stdin is provided as input, you may not specify resource "
                       "arguments as well")
        return _run_files(args, explicit_ns)
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
        sys.stdout.write(describe(api, {"apiVersion": info.api_version, "kind": info.kind, **obj}, now,
                                  show_events=args.show_events))
    cluster.close()
    return 1 if failed else 0


def _run_files(args: argparse.Namespace, explicit_ns: bool) -> int:
    """``describe -f``: each document's object described (the describer reads it from the
    server), as kubectl's builder lists them: errors of the manifests first, then each
    describer error once, after the descriptions."""
    from ...api import selectors

    cluster = open_cluster_at(args)
    try:
        api = cluster.api
        now = cluster_now(cluster)
        problems: list[tuple[int, str]] = []
        try:
            targets = file_targets(args.filename, recursive=args.recursive, validation="Ignore", api=api,
                                   namespace=args.namespace if explicit_ns else None, errors=problems,
                                   default_namespace="" if args.all_namespaces else args.namespace)
        except TargetError as e:
            return die(str(e))
        label = selectors.parse_label_selector(args.selector) if args.selector else None
        errs: list[Any] = [text for _, text in problems]
        infos = []
        for t in targets:  # kubectl's builder: the manifests' own labels, then the namespace check
            if label is not None and not label.matches(((t.obj or {}).get("metadata") or {}).get("labels") or {}):
                continue
            if t.problem:
                errs.append(t.problem)
                continue
            infos.append(t)
        seen = {str(e) for e in errs}
        first = True
        for t in infos:
            try:
                obj = api.get(t.info, t.name, namespace=t.namespace or None)
            except errors.StatusError as e:
                if server_error(e) not in seen:
                    seen.add(server_error(e))
                    errs.append(e)
                continue
            if not first:
                sys.stdout.write("\n\n")
            first = False
            sys.stdout.write(describe(api, {"apiVersion": t.info.api_version, "kind": t.info.kind, **obj}, now,
                                      show_events=args.show_events))
        if not infos and not errs:
            print(no_resources_message(args.namespace, args.all_namespaces), file=sys.stderr)
        print_errors(errs)
        return 1 if errs else 0
    finally:
        cluster.close()
