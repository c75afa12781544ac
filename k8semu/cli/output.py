"""Small output helpers shared by the commands (errors as kubectl prints them)."""

from __future__ import annotations

import sys

from ..api.errors import StatusError
from ..api.resources import ResourceInfo

__all__ = ["die", "server_error", "display_name", "dry_run_suffix"]


def die(msg: str, code: int = 1) -> int:
    """Print ``error: msg`` to stderr, as kubectl does; returns ``code`` (1)."""
    print(f"error: {msg}", file=sys.stderr)
    return code


def server_error(err: StatusError, context: str = "") -> str:
    """kubectl's rendering of a server error.

    A 422 with causes prints as kubectl's ``The Deployment "web" is invalid:
    <field>: <message>`` (several causes as ``* `` lines); anything else as
    ``Error from server (Reason): [context]message``.
    """
    details = err.details or {}
    causes = details.get("causes") or []
    if err.reason == "Invalid" and details.get("kind") and causes:
        head = f'The {details["kind"]} "{details.get("name", "")}" is invalid: '
        lines = [f'{c.get("field")}: {c.get("message")}' if c.get("field") else c.get("message", "")
                 for c in causes]
        if len(lines) == 1:
            return head + lines[0]
        return head + "\n" + "\n".join(f"* {line}" for line in lines)
    if not err.reason:  # StatusReasonUnknown
        return f"Error from server: {context}{err.message}"
    return f"Error from server ({err.reason}): {context}{err.message}"


def display_name(info: ResourceInfo, name: str) -> str:
    """``deployment.apps/web``, ``service/web`` (kubectl's resource/name form)."""
    kind = info.kind.lower()
    return f"{kind}.{info.group}/{name}" if info.group else f"{kind}/{name}"


def dry_run_suffix(dry_run: str | None) -> str:
    """What kubectl appends to an object's line under ``--dry-run``: ``" (dry run)"`` for
    ``client``, ``" (server dry run)"`` for ``server``, nothing otherwise."""
    return {"client": " (dry run)", "server": " (server dry run)"}.get(dry_run or "", "")
