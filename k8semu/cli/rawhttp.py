"""kubectl's ``--raw URI``: one HTTP request to the cluster's API, its body printed as it is.

``k8semu get --raw /api/v1/namespaces/default/pods`` sends the request that
``kubectl get --raw`` sends, in-process, to the same HTTP front ``k8semu serve``
runs (:class:`k8semu.server.app.APIApp`, as the admin user): so the bytes
printed are the ones kubectl prints against ``serve`` — compact JSON, no
newline added, ``Warning:`` headers on stderr, and a failure as the server's
``Status`` (``Error from server (NotFound): services "x" not found``).

The cluster does not run while a command reads it: a streaming request
(``?watch=true``, a followed log) ends at the cluster's now, once the server
has nothing more to send.
"""

from __future__ import annotations

import re
import sys
from typing import Any
from urllib.parse import urlsplit

import orjson

from ..api import errors
from .output import server_error

__all__ = ["RawError", "check_raw_uri", "raw_flag_error", "raw_request", "raw_request_async", "print_raw", "print_raw_async"]

_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})(.{0,2})", re.S)


class RawError(ValueError):
    """A ``--raw`` URI Go's ``url.ParseRequestURI`` refuses (kubectl's message, without ``error: ``)."""


def check_raw_uri(uri: str) -> tuple[str, str]:
    """``(path, query)`` of a ``--raw`` URI: an absolute path (``/api/v1/pods?limit=1``) or an
    absolute URL, whose path and query are used.

    Raises:
        RawError: ``--raw must be a valid URL path: parse "nope": invalid URI for request``,
            ``… invalid URL escape "%zz"``.
    """
    bad = _ESCAPE.search(uri)
    if bad:
        raise RawError(f'--raw must be a valid URL path: parse "{uri}": invalid URL escape "%{bad.group(1)}"')
    parts = urlsplit(uri)
    if not uri.startswith("/") and not (parts.scheme and parts.netloc):
        raise RawError(f'--raw must be a valid URL path: parse "{uri}": invalid URI for request')
    return parts.path or "/", parts.query


def raw_flag_error(args: Any, *, file_required: bool) -> str | None:
    """kubectl's refusal of ``--raw`` beside flags it cannot be combined with (``create``,
    ``replace``: exactly one ``-f``; ``delete``: at most one), or of the URI itself; None when
    the request can be sent."""
    if len(args.filename) > 1 or (file_required and not args.filename):
        return "--raw can only use a single local file or stdin"
    if args.filename and args.filename[0].startswith(("http://", "https://")):
        return "--raw cannot read from a url"
    if args.recursive:
        return "--raw and --recursive are mutually exclusive"
    if file_required and getattr(args, "selector", ""):
        return "--raw and --selector (-l) are mutually exclusive"
    if args.output:
        return "--raw and --output are mutually exclusive"
    try:
        check_raw_uri(args.raw)
    except RawError as e:
        return str(e)
    return None


def raw_request(api: Any, method: str, uri: str, body: bytes = b"",
                content_type: str = "application/json") -> tuple[int, bytes, list[str]]:
    """Send one request to ``api`` through the server's HTTP front, as the admin user (outside
    a session: a read; a write runs :func:`raw_request_async` in its session).

    Returns:
        ``(status code, body, warnings)``; a stream's body is what the server sent before it
        had nothing more to send.
    """
    import trio

    result: list[tuple[int, bytes, list[str]]] = []

    async def main() -> None:
        result.append(await raw_request_async(api, method, uri, body, content_type, cut_streams=True))

    trio.run(main)
    return result[0]


async def raw_request_async(api: Any, method: str, uri: str, body: bytes = b"",
                            content_type: str = "application/json", *,
                            cut_streams: bool = False) -> tuple[int, bytes, list[str]]:
    """:func:`raw_request` inside a running Trio loop (a command's session, where the request
    is answered in full); ``cut_streams``: end a stream once every task waits (the loop runs
    nothing else)."""
    import trio
    import trio.testing

    from ..api.auth import admin
    from ..server.app import APIApp

    path, query = check_raw_uri(uri)
    app = APIApp(api, {}, unauthenticated=admin())
    scope = {"type": "http", "method": method, "path": path, "query_string": query.encode("latin-1"),
             "headers": [(b"content-type", content_type.encode())] if body else []}
    status = [0]
    chunks: list[bytes] = []
    warnings: list[str] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(msg: dict[str, Any]) -> None:
        if msg["type"] == "http.response.start":
            status[0] = msg["status"]
            for name, value in msg.get("headers") or ():
                if name.lower() == b"warning":
                    warnings.append(_warning_text(value.decode("utf-8", "replace")))
        elif msg["type"] == "http.response.body":
            chunks.append(msg.get("body", b""))

    done = trio.Event()

    async def serve() -> None:
        await app(scope, receive, send)
        done.set()

    if not cut_streams:
        await serve()
        return status[0], b"".join(chunks), warnings
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve)
        await trio.testing.wait_all_tasks_blocked()
        if not done.is_set():
            nursery.cancel_scope.cancel()  # a stream waiting for writes that will not come
    return status[0], b"".join(chunks), warnings


def _warning_text(header: str) -> str:
    """The text of a ``Warning: 299 - "text"`` header (RFC 7234), as client-go prints it."""
    m = re.match(r'\d{3} \S+ "((?:[^"\\]|\\.)*)"', header)
    return re.sub(r"\\(.)", r"\1", m.group(1)) if m else header


def print_raw(api: Any, method: str, uri: str, body: bytes = b"",
              content_type: str = "application/json") -> int:
    """kubectl's ``rawhttp``: send the request, copy a 2xx body to stdout as it is (each
    ``Warning`` header as ``Warning: …`` on stderr); a failure is the server's error printed
    as kubectl prints it; returns the exit code."""
    return _print_answer(*raw_request(api, method, uri, body, content_type))


async def print_raw_async(api: Any, method: str, uri: str, body: bytes = b"",
                          content_type: str = "application/json") -> int:
    """:func:`print_raw` inside a running Trio loop (a write command's session)."""
    return _print_answer(*await raw_request_async(api, method, uri, body, content_type))


def _print_answer(code: int, data: bytes, warnings: list[str]) -> int:
    for w in warnings:
        print(f"Warning: {w}", file=sys.stderr)
    if 200 <= code < 300:
        sys.stdout.write(data.decode("utf-8", "replace"))
        sys.stdout.flush()
        return 0
    print(server_error(_status_error(code, data)), file=sys.stderr)
    return 1


def _status_error(code: int, data: bytes) -> errors.StatusError:
    """The error a failed response carries: its ``Status``, else kubectl's generic wording."""
    try:
        status = orjson.loads(data)
    except orjson.JSONDecodeError:
        status = None
    if isinstance(status, dict) and status.get("kind") == "Status":
        err = errors.StatusError(str(status.get("message") or ""), details=status.get("details"))
        err.code, err.reason = int(status.get("code") or code), str(status.get("reason") or "")
        return err
    err = errors.StatusError(f"an error on the server ({data.decode('utf-8', 'replace').strip()!s}) has "
                             "prevented the request from succeeding")
    err.code, err.reason = code, "InternalError"
    return err
