"""``k8semu patch TYPE NAME -p PATCH [--type strategic|merge|json]``: kubectl patch.

The patch (JSON, or YAML as kubectl accepts) is sent as written, with the
content type ``--type`` picks (strategic merge by default), field manager
``kubectl-patch``. As kubectl's (apimachinery's ``yaml.ToJSON``), a patch that
starts with ``{`` is taken for JSON and not checked on the client: when it is
not valid JSON, each object's PATCH fails with the API server's words —
``Error from server (BadRequest): invalid character 'b' looking for beginning
of object key string`` (strategic merge), ``… (BadRequest): error decoding
patch: invalid character …`` (merge and JSON patches); other text is read as
YAML (``error: unable to parse "…": yaml: …`` when it is not). As kubectl, each object is read first and compared with
what the PATCH returns: ``deployment.apps/web patched``, or ``… patched (no
change)`` when nothing changed. ``--subresource NAME`` patches that subresource
(``status``, ``scale``, ``resize`` — a pod's container resources in place,
:mod:`k8semu.api.podresize` — ``ephemeralcontainers``…; as kubectl 1.33, any name is sent and
one the kind lacks is the server's ``NotFound``). Then the cluster settles (or runs ``--for``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ...api import errors
from ...api.apiserver import JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH
from ..output import add_dry_run_flag, add_output_flag, die, display_name, dry_run_strategy, server_error
from ..parser import GoBool
from ..printing import ObjectPrinter
from ..targets import (LOCAL_SERVER_DRY_RUN, TargetError, add_run_flags, add_target_flags, local_targets, resolve_args,
                       run_write)

FIELD_MANAGER = "kubectl-patch"
PATCH_TYPES = {"strategic": STRATEGIC_MERGE_PATCH, "merge": MERGE_PATCH, "json": JSON_PATCH}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("patch", help="patch objects (as kubectl patch)")
    add_target_flags(p, selector=False, all_=False)
    p.add_argument("-p", "--patch", help="the patch (JSON or YAML)")
    p.add_argument("--patch-file", help="a file holding the patch")
    p.add_argument("--type", default="strategic", choices=sorted(PATCH_TYPES))
    p.add_argument("--subresource", default="", metavar="SUBRESOURCE",
                   help="patch this subresource (status, scale, resize, ephemeralcontainers, …); kubectl "
                        "sends any name, and the server answers one the kind lacks with NotFound")
    p.add_argument("--local", action=GoBool, default=False,
                   help="patch the -f objects locally and print them; nothing is sent")
    p.add_argument("--field-manager", default=FIELD_MANAGER, help=f"field manager (default {FIELD_MANAGER})")
    add_dry_run_flag(p)
    add_output_flag(p)
    add_run_flags(p)
    p.set_defaults(func=run)


class InvalidJSONPatch(ValueError):
    """A patch that looks like JSON but is not: the API server's decoding error (Go's words)."""


def _quote_char(c: str) -> str:
    """Go's ``encoding/json`` ``quoteChar``: ``'b'``, ``'\\''``, ``'"'``, ``'\\n'``."""
    if c == "'":
        return "'\\''"
    if c == '"':
        return "'\"'"
    from ...api.gofmt import go_quote

    return "'" + go_quote(c)[1:-1] + "'"


def go_json_syntax_error(text: str) -> str | None:
    """The message Go's ``encoding/json`` gives for ``text`` that is not valid JSON (``invalid
    character 'b' looking for beginning of object key string``, ``unexpected end of JSON input``),
    or None when it is valid."""
    s, n = text, len(text)
    pos = 0

    class _Bad(Exception):
        pass

    def bad(c: str, where: str) -> _Bad:
        return _Bad(f"invalid character {_quote_char(c)} {where}")

    def skip() -> None:
        nonlocal pos
        while pos < n and s[pos] in " \t\r\n":
            pos += 1

    def need() -> str:
        if pos >= n:
            raise _Bad("unexpected end of JSON input")
        return s[pos]

    def value(where: str = "looking for beginning of value") -> None:
        nonlocal pos
        skip()
        c = need()
        if c == "{":
            pos += 1
            skip()
            if need() == "}":
                pos += 1
                return
            while True:
                if need() != '"':
                    raise bad(s[pos], "looking for beginning of object key string")
                string()
                skip()
                if need() != ":":
                    raise bad(s[pos], "after object key")
                pos += 1
                value()
                skip()
                c = need()
                pos += 1
                if c == "}":
                    return
                if c != ",":
                    raise bad(c, "after object key:value pair")
                skip()
        elif c == "[":
            pos += 1
            skip()
            if need() == "]":
                pos += 1
                return
            while True:
                value()
                skip()
                c = need()
                pos += 1
                if c == "]":
                    return
                if c != ",":
                    raise bad(c, "after array element")
        elif c == '"':
            string()
        elif c == "-" or c.isdigit():
            number()
        elif c in "tfn":
            word = {"t": "true", "f": "false", "n": "null"}[c]
            for expected in word:
                got = need()
                if got != expected:
                    raise bad(got, f"in literal {word} (expecting {_quote_char(expected)})")
                pos += 1
        else:
            raise bad(c, where)

    def string() -> None:
        nonlocal pos
        pos += 1
        while True:
            c = need()
            pos += 1
            if c == '"':
                return
            if c == "\\":
                e = need()
                pos += 1
                if e == "u":
                    for _ in range(4):
                        h = need()
                        if h not in "0123456789abcdefABCDEF":
                            raise bad(h, "in \\u hexadecimal character escape")
                        pos += 1
                elif e not in 'bfnrt\\/"':
                    raise bad(e, "in string escape code")
            elif ord(c) < 0x20:
                raise bad(c, "in string literal")

    def digits() -> None:
        nonlocal pos
        while pos < n and s[pos].isdigit():
            pos += 1

    def number() -> None:
        nonlocal pos
        if s[pos] == "-":
            pos += 1
            if not need().isdigit():
                raise bad(s[pos], "in numeric literal")
        if s[pos] == "0":
            pos += 1
        else:
            digits()
        if pos < n and s[pos] == ".":
            pos += 1
            if not need().isdigit():
                raise bad(s[pos], "after decimal point in numeric literal")
            digits()
        if pos < n and s[pos] in "eE":
            pos += 1
            if need() in "+-":
                pos += 1
            if not need().isdigit():
                raise bad(s[pos], "in exponent of numeric literal")
            digits()

    try:
        value()
        skip()
        if pos < n:
            raise bad(s[pos], "after top-level value")
    except _Bad as e:
        return str(e)
    return None


def parse_patch(text: str) -> Any:
    """The patch document: JSON, else YAML (kubectl converts YAML to JSON).

    Raises:
        InvalidJSONPatch: text that starts with ``{`` (kubectl sends it as it is) but is not
            valid JSON; the message is Go's JSON decoder's.
        ValueError: ``unable to parse "TEXT": <parser message>``.
    """
    if text.lstrip(" \t\r\n").startswith("{"):
        problem = go_json_syntax_error(text)
        if problem is not None:
            raise InvalidJSONPatch(problem)
        return json.loads(text)
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


def patched_locally(obj: dict[str, Any], doc: Any, patch_type: str) -> dict[str, Any]:
    """``obj`` with the patch applied on the client, as ``patch --local`` and ``--dry-run=client``
    do (kubectl's ``getPatchedJSON``).

    Raises:
        ValueError: the patch cannot be applied (Go's words: ``json: cannot unmarshal object into
            Go value of type jsonpatch.Patch`` for a JSON patch that is not a list).
    """
    from ...api.patch import apply_json_patch, apply_merge_patch, apply_strategic_merge_patch

    if patch_type == JSON_PATCH:
        if not isinstance(doc, list):
            kind = "object" if isinstance(doc, dict) else "string"
            raise ValueError(f"json: cannot unmarshal {kind} into Go value of type jsonpatch.Patch")
        return apply_json_patch(obj, doc)
    if not isinstance(doc, dict):
        raise ValueError("json: cannot unmarshal into Go value of type map[string]interface {}")
    if patch_type == MERGE_PATCH:
        return apply_merge_patch(obj, doc)
    return apply_strategic_merge_patch(obj, doc, f"{obj.get('apiVersion')}/{obj.get('kind')}")


def run(args: argparse.Namespace) -> int:
    """kubectl patch: each object's PATCH (or, with ``--local`` / ``--dry-run=client``, the patch
    applied here) printed as ``patched`` or ``patched (no change)`` — kubectl adds no dry-run
    mark to this line — or, with ``-o``, the patched object."""
    if args.patch is None and args.patch_file is None:
        return die("must specify --patch or --patch-file containing the contents of the patch")
    text = args.patch
    if args.patch_file:
        with open(args.patch_file, encoding="utf-8") as fh:
            text = fh.read()
    try:
        doc = parse_patch(text)
        bad_json = None
    except InvalidJSONPatch as e:
        # the API server's answer to each PATCH (kube-apiserver's patch handler decodes it)
        doc, bad_json = None, str(e) if args.type == "strategic" else f"error decoding patch: {e}"
    patch_type = PATCH_TYPES[args.type]
    dry = dry_run_strategy(args.dry_run)
    if args.local and args.resources:
        return die("cannot specify --local and server resources")
    if args.local and dry == "server":
        return die(LOCAL_SERVER_DRY_RUN)
    try:
        printer = ObjectPrinter.from_args(args)
    except ValueError as e:
        return die(str(e))
    failures: list[str] = []

    def show(t: Any, before: dict[str, Any], after: dict[str, Any]) -> None:
        change = "" if after != before else " (no change)"
        if printer.print(after, f"{display_name(t.info, t.name)} patched{change}"):
            failures.append("")

    def local(targets: list[Any], api: Any = None) -> None:
        for t in targets:
            before = dict(t.obj or {}) if args.local else None
            try:
                if before is None:
                    before = api.get(t.info, t.name, namespace=t.namespace)
                if bad_json is not None:
                    raise ValueError(bad_json)
                after = patched_locally(before, doc, patch_type)
            except errors.StatusError as e:
                failures.append(server_error(e))
                continue
            except Exception as e:  # noqa: BLE001 - the patch does not apply: kubectl's error
                failures.append(f"error: {getattr(e, 'message', None) or e}")
                continue
            show(t, before, after)

    if args.local:  # no cluster: the files' objects, patched here
        try:
            local(local_targets(args))
        except TargetError as e:
            return die(str(e))
    else:
        async def body(cluster, rt) -> None:
            api = cluster.api
            targets = resolve_args(api, args)
            if dry == "client":
                local(targets, api)
                return
            for t in targets:
                try:
                    before = api.get(t.info, t.name, namespace=t.namespace)
                    if bad_json is not None:
                        raise errors.BadRequest(bad_json)
                    after = api.patch(t.info, t.name, doc, patch_type, namespace=t.namespace,
                                      subresource=args.subresource, field_manager=args.field_manager,
                                      dry_run=dry == "server")
                except errors.StatusError as e:
                    failures.append(server_error(e))
                    continue
                show(t, before, after)

        run_write(args, body, dry_run=dry != "none", failures=failures)
    for line in failures:
        if line:
            print(line, file=sys.stderr)
    return 1 if failures else 0
