"""kubectl's ``--validate`` flag, and reading manifests the way it asks.

``apply``, ``create`` and ``replace`` take ``--validate=strict|warn|ignore``
(also ``true`` = strict and ``false`` = ignore, any spelling Go's
``strconv.ParseBool`` reads; a bare ``--validate`` is strict, the default).
As kubectl 1.3x does against a server with server-side field validation:

- **strict** (default): a manifest document that is not an object or lacks
  ``apiVersion``/``kind`` is refused on the client (``error validating "f.yaml":
  error validating data: kind not set; if you choose to ignore these errors,
  turn validation off with --validate=false``, and the rest of that file is
  not read); every request asks ``fieldValidation=Strict``, so an unknown
  field is the server's 400 ``strict decoding error: unknown field "spec.x"``;
- **warn**: the same client-side check; requests ask ``fieldValidation=Warn``:
  each unknown field is a ``Warning: unknown field "spec.x"`` line on stderr
  and the request goes through (:func:`unknown_field_warnings`);
- **ignore** (``false``): no client-side check: such a document is instead
  kubectl's decode error (``unable to decode "f.yaml": Object 'Kind' is
  missing in '{…}'``, or ``json: cannot unmarshal string into Go value of type
  unstructured.detector`` for a document that is not an object) and the
  documents after it are still read (:func:`load`); requests ask
  ``fieldValidation=Ignore`` (unknown fields are not refused).

Commands without the flag (``delete -f``, ``label -f``, …) read manifests as
kubectl's do there, without schema validation: ``"Ignore"`` for :func:`load`.

A limit: after a failing item of a ``kind: List``, the rest of that list is
not read, nor the rest of a JSON stream (``{…}{…}``); later ``---`` documents are.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import attrs

from ..api.manifest import STDIN, ManifestDoc, ManifestError, load_manifests, load_text

__all__ = ["add_validate_flag", "field_validation", "load", "unknown_field_warnings"]

_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")
_NAMED = {"strict": "Strict", "warn": "Warn", "ignore": "Ignore"}


def add_validate_flag(p: argparse.ArgumentParser) -> None:
    """Add kubectl's ``--validate[=strict|warn|ignore|true|false]`` to a command's parser."""
    p.add_argument("--validate", nargs="?", const="strict", default="strict", metavar="strict|warn|ignore",
                   help='strict (or true, the default): refuse a document without apiVersion/kind and unknown '
                        'fields; warn: print a warning for each unknown field and go on; ignore (or false): '
                        'no client-side check, unknown fields are not refused')


def field_validation(value: str | None) -> str:
    """The ``fieldValidation`` a ``--validate`` value asks for: ``Strict``, ``Warn`` or ``Ignore``.

    Raises:
        ValueError: kubectl's ``invalid - validate option "x"; must be one of:
            strict (or true), warn, ignore (or false)``.
    """
    if value is None or value in _TRUE:
        return "Strict"
    if value in _FALSE:
        return "Ignore"
    if value in _NAMED:
        return _NAMED[value]
    raise ValueError(f'invalid - validate option "{value}"; must be one of: strict (or true), warn, ignore (or false)')


def load(filename: str, *, recursive: bool = False, directive: str = "Strict") -> list[ManifestDoc]:
    """The documents of ``-f FILENAME`` (file, directory or ``-``), read as ``directive`` asks.

    ``Strict`` and ``Warn``: :func:`~k8semu.api.manifest.load_manifests` as it
    is. ``Ignore``: a document that failed client-side validation becomes
    kubectl's decode error for it (that document only) and the file's later
    ``---`` documents are read too.

    Raises:
        ManifestError: the path does not exist (nothing is read).
    """
    stdin_text = sys.stdin.read() if filename == "-" and directive == "Ignore" else None
    docs = load_manifests(filename, recursive=recursive, text=stdin_text)
    if directive != "Ignore":
        return docs
    out: list[ManifestDoc] = []
    for doc in docs:
        out.extend(_unvalidated(doc, stdin_text))
    return out


def unknown_field_warnings(obj: dict[str, Any], api: Any = None) -> list[str]:
    """The server's warnings for ``obj``'s unknown fields under ``fieldValidation=Warn``, in document order.

    ``unknown field "spec.foo"`` each (kubectl prints them as ``Warning: …``);
    none for a kind without a schema here. With ``api`` (an APIServer), a custom
    resource's too: the fields its version's structural schema does not declare
    (apiextensions-apiserver's pruning, which under ``Warn`` reports each pruned path;
    none under ``x-kubernetes-preserve-unknown-fields``).
    """
    from ..api.schema import unknown_fields

    try:
        found = unknown_fields(obj, f"{obj['apiVersion']}/{obj['kind']}")
    except (KeyError, TypeError):
        found = []
    if not found and api is not None and isinstance(obj, dict):
        info = api.custom.by_kind(obj.get("apiVersion"), obj.get("kind"))
        if info is not None and isinstance(info.schema, dict):
            from ..api.customresources import apply_schema_defaults, prune

            found = []
            prune(apply_schema_defaults(obj, info.schema), info.schema, unknown=found)
    return [f'unknown field "{path}"' for path in found]


def _unvalidated(doc: ManifestDoc, stdin_text: str | None) -> list[ManifestDoc]:
    """``doc`` as kubectl reads it without validation: itself, or its decode error plus the rest of its file."""
    err = doc.error
    if err is None or err.reason != "validation":
        return [doc]
    text = stdin_text if doc.source == STDIN and stdin_text is not None else _read(doc.source)
    lines = text.split("\n")
    first = doc.line - 1  # 0-based line where the document (or list item) starts
    begin = next((i + 1 for i in range(min(first, len(lines) - 1), -1, -1) if lines[i].startswith("---")), 0)
    end = next((i for i in range(first + 1, len(lines)) if lines[i].startswith("---")), len(lines))
    message = _decode_message(doc, "\n".join(lines[begin:end]))
    out = [attrs.evolve(doc, error=ManifestError(message, source=doc.source, line=doc.line, reason="decode"))]
    if end < len(lines):
        for later in load_text("\n".join(lines[end:]), doc.source):
            if later.error is not None:
                later.error.line += end
            out.extend(_unvalidated(attrs.evolve(later, line=later.line + end, index=later.index + doc.index + 1),
                                    stdin_text))
    return out


def _decode_message(doc: ManifestDoc, chunk: str) -> str:
    """kubectl's ``unable to decode`` message for a document that is not a usable object."""
    source = json.dumps(doc.source, ensure_ascii=False)
    obj = doc.obj
    if not isinstance(obj, dict):
        return (f"unable to decode {source}: json: cannot unmarshal {_json_kind(doc, chunk)} "
                f"into Go value of type unstructured.detector")
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    # an apiVersion that is no group/version leaves the decoder without a kind, as a missing kind does
    if not isinstance(kind, str) or not kind or (isinstance(api_version, str) and api_version.count("/") > 1):
        return f"unable to decode {source}: Object 'Kind' is missing in '{text}'"
    return f"unable to decode {source}: Object 'apiVersion' is missing in '{text}'"


def _json_kind(doc: ManifestDoc, chunk: str) -> str:
    """Go's JSON kind (``array``, ``string``, ``number``, ``bool``) of a document that is not an object."""
    if doc.item is None:
        from ruamel.yaml import YAML

        try:
            value = YAML(typ="safe", pure=True).load(chunk)
        except Exception:  # noqa: BLE001 - it parsed once already; any doubt reads as a string
            value = ""
    else:
        value = ""
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return "string"


def _read(path: str) -> str:
    """A manifest file's text as kubectl reads it (UTF-8, byte-order marks honoured)."""
    data = Path(path).read_bytes()
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    return data.decode("utf-8-sig", "replace")
