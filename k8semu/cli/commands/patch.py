"""``k8semu patch TYPE NAME -p PATCH [--type strategic|merge|json]``: kubectl patch.

The patch (JSON, or YAML as kubectl accepts) is sent as written, with the
content type ``--type`` picks (strategic merge by default), field manager
``kubectl-patch``. As kubectl, each object is read first and compared with
what the PATCH returns: ``deployment.apps/web patched``, or ``… patched (no
change)`` when nothing changed. ``--subresource status|scale`` patches that
subresource. Then the cluster settles (or runs ``--for``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ...api import errors
from ...api.apiserver import JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH
from ..output import die, display_name, dry_run_suffix, server_error
from ..targets import add_run_flags, add_target_flags, resolve_args, run_write

FIELD_MANAGER = "kubectl-patch"
PATCH_TYPES = {"strategic": STRATEGIC_MERGE_PATCH, "merge": MERGE_PATCH, "json": JSON_PATCH}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("patch", help="patch objects (as kubectl patch)")
    add_target_flags(p, selector=False, all_=False)
    p.add_argument("-p", "--patch", help="the patch (JSON or YAML)")
    p.add_argument("--patch-file", help="a file holding the patch")
    p.add_argument("--type", default="strategic", choices=sorted(PATCH_TYPES))
    p.add_argument("--subresource", default="", choices=["", "status", "scale"])
    p.add_argument("--dry-run", choices=["none", "client", "server"], default="none")
    add_run_flags(p)
    p.set_defaults(func=run)


def parse_patch(text: str) -> Any:
    """The patch document: JSON, else YAML (kubectl converts YAML to JSON).

    Raises:
        ValueError: ``unable to parse "TEXT": <parser message>``.
    """
    try:
        return json.loads(text)
    except ValueError:
        pass
    from io import StringIO

    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        return YAML(typ="safe", pure=True).load(StringIO(text))
    except YAMLError as e:
        problem = getattr(e, "problem", None) or str(e)
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise ValueError(f'unable to parse "{text}": yaml: {where}{problem}') from None


def run(args: argparse.Namespace) -> int:
    if args.patch is None and args.patch_file is None:
        return die("must specify --patch or --patch-file containing the contents of the patch")
    text = args.patch
    if args.patch_file:
        with open(args.patch_file, encoding="utf-8") as fh:
            text = fh.read()
    doc = parse_patch(text)
    patch_type = PATCH_TYPES[args.type]
    dry = args.dry_run
    suffix = dry_run_suffix(dry)
    failures: list[str] = []

    async def body(cluster, rt) -> None:
        api = cluster.api
        for t in resolve_args(api, args):
            try:
                before = api.get(t.info, t.name, namespace=t.namespace)
                if dry == "client":
                    after = before
                else:
                    after = api.patch(t.info, t.name, doc, patch_type, namespace=t.namespace,
                                      subresource=args.subresource, field_manager=FIELD_MANAGER,
                                      dry_run=dry == "server")
            except errors.StatusError as e:
                failures.append(server_error(e))
                continue
            change = "" if after != before or dry == "client" else " (no change)"
            print(f"{display_name(t.info, t.name)} patched{change}{suffix}")

    run_write(args, body, dry_run=dry != "none", failures=failures)
    for line in failures:
        print(line, file=sys.stderr)
    return 1 if failures else 0
