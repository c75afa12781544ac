"""Small output helpers shared by the commands (errors as kubectl prints them)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..api.errors import StatusError
from ..api.resources import ResourceInfo

__all__ = ["die", "server_error", "display_name", "dry_run_suffix", "add_dry_run_flag", "dry_run_strategy",
           "add_output_flag", "list_error", "ServerWarnings", "print_warning"]


class ServerWarnings(list):
    """The warnings the API server gives the CLI's requests (its ``Warning`` headers), printed on
    stderr as they come, as kubectl's default warning handler prints them: ``Warning: <text>``,
    each text once per command. Install as :attr:`k8semu.api.apiserver.APIServer.default_warnings`."""

    def __init__(self) -> None:
        super().__init__()
        self.shown: set[str] = set()

    def append(self, text: str) -> None:  # type: ignore[override]
        super().append(text)
        if text not in self.shown:
            self.shown.add(text)
            print(f"Warning: {text}", file=sys.stderr)

    def extend(self, texts: Any) -> None:  # type: ignore[override]
        for text in texts:
            self.append(text)


def print_warning(api: Any, text: str) -> None:
    """``Warning: <text>`` on stderr, once per command: through the API server's
    :class:`ServerWarnings` when the CLI installed one (so a warning the client works out itself,
    e.g. ``--validate=warn``'s unknown fields, and the server's same one print once, as kubectl's
    deduplicating handler prints them), else at once."""
    sink = getattr(api, "default_warnings", None)
    if isinstance(sink, ServerWarnings):
        sink.append(text)
    else:
        print(f"Warning: {text}", file=sys.stderr)


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
        # kubectl's statusCausesToAggrError: always "<field>: <message>", so a cause without a
        # field (a ValidatingAdmissionPolicy denial) prints as ": <message>"
        lines = [f'{c.get("field") or ""}: {c.get("message", "")}' for c in causes]
        if len(lines) == 1:
            return head + lines[0]
        return head + "\n" + "\n".join(f"* {line}" for line in lines)
    if not err.reason:  # StatusReasonUnknown
        return f"Error from server: {context}{err.message}"
    return f"Error from server ({err.reason}): {context}{err.message}"


def list_error(err: StatusError, info: ResourceInfo, label_selector: str | None = None,
               field_selector: str | None = None) -> StatusError:
    """A LIST's error as kubectl's builder words it (``EnhanceListError``): a BadRequest or
    NotFound gets ``Unable to find "apps/v1, Resource=deployments" that match label selector
    "x", field selector "": `` (``Unable to list "…": `` without selectors) before the server's
    message; returned (changed in place)."""
    if err.reason in ("BadRequest", "NotFound"):
        subject = f"{info.group}/{info.version}, Resource={info.plural}"
        if not label_selector and not field_selector:
            err.message = f'Unable to list "{subject}": {err.message}'
        else:
            err.message = (f'Unable to find "{subject}" that match label selector "{label_selector or ""}", '
                           f'field selector "{field_selector or ""}": {err.message}')
    return err


def display_name(info: ResourceInfo, name: str) -> str:
    """``deployment.apps/web``, ``service/web`` (kubectl's resource/name form)."""
    kind = info.kind.lower()
    return f"{kind}.{info.group}/{name}" if info.group else f"{kind}/{name}"


def dry_run_suffix(dry_run: str | None) -> str:
    """What kubectl appends to an object's line under ``--dry-run``: ``" (dry run)"`` for
    ``client``, ``" (server dry run)"`` for ``server``, nothing otherwise."""
    return {"client": " (dry run)", "server": " (server dry run)"}.get(dry_run or "", "")


#: pflag's ``NoOptDefVal`` of kubectl's ``--dry-run``: the value of the bare flag.
DRY_RUN_BARE = "unchanged"
#: What Go's ``strconv.ParseBool`` reads as true / false.
_GO_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_GO_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def add_dry_run_flag(p: argparse.ArgumentParser, default: Any = "none") -> None:
    """kubectl's ``--dry-run[=none|server|client]`` (``cmdutil.AddDryRunFlag``), read with
    :func:`dry_run_strategy`; the bare flag stands for :data:`DRY_RUN_BARE`.

    As argparse's optional values go, the bare flag takes the next word when it is not a
    flag (``--dry-run node-1``), where pflag would leave it a positional.
    """
    p.add_argument("--dry-run", nargs="?", const=DRY_RUN_BARE, default=default, metavar="none|server|client",
                   help="client: print what would be sent; server: have the server check it; nothing is kept")


def _deprecation(message: str) -> None:
    """kubectl's deprecation warning of ``--dry-run`` on stderr, as ``Warning: …`` (kubectl's
    klog line also carries the wall-clock time and its pid, which k8semu's output does not)."""
    print(f"Warning: {message}", file=sys.stderr)


def dry_run_strategy(value: str | None) -> str:
    """kubectl's ``GetDryRunStrategy``: ``"none"``, ``"client"`` or ``"server"`` from the flag's value.

    A boolean as Go's ``strconv.ParseBool`` reads one (``true``, ``1``, ``F``, …) is the old
    form: true means client, false none, with klog's warning ``--dry-run=true is deprecated
    (boolean value) and can be replaced with --dry-run=client.``; the bare flag means client,
    warning ``--dry-run is deprecated and can be replaced with --dry-run=client.``.

    Raises:
        ValueError: ``Invalid dry-run value (bogus). Must be "none", "server", or "client".``
    """
    value = "none" if value is None else value
    if value in _GO_TRUE or value in _GO_FALSE:
        mode = "client" if value in _GO_TRUE else "none"
        _deprecation(f"--dry-run={value} is deprecated (boolean value) and can be replaced with --dry-run={mode}.")
        return mode
    if value == DRY_RUN_BARE:
        _deprecation("--dry-run is deprecated and can be replaced with --dry-run=client.")
        return "client"
    if value in ("none", "client", "server"):
        return value
    raise ValueError(f'Invalid dry-run value ({value}). Must be "none", "server", or "client".')


def add_output_flag(p: argparse.ArgumentParser, default: Any = "") -> None:
    """kubectl's print flags of a mutating command (``genericclioptions.PrintFlags``), read by
    :meth:`~k8semu.cli.printing.ObjectPrinter.from_args`: ``-o/--output``, ``--template``,
    ``--allow-missing-template-keys`` and ``--show-managed-fields``."""
    from .parser import GoBool

    p.add_argument("-o", "--output", default=default, metavar="FORMAT",
                   help="json|yaml|name|jsonpath=TEMPLATE|jsonpath-file=FILE|jsonpath-as-json=TEMPLATE|"
                        "go-template=TEMPLATE|go-template-file=FILE: print the object instead of the line")
    p.add_argument("--template", default=argparse.SUPPRESS if default is argparse.SUPPRESS else "",
                   help="the template (or its file) of -o go-template|jsonpath…; alone, a go-template")
    p.add_argument("--allow-missing-template-keys", action=GoBool,
                   default=argparse.SUPPRESS if default is argparse.SUPPRESS else True,
                   help="a template's missing keys print nothing (default true; false: an error)")
    p.add_argument("--show-managed-fields", action=GoBool,
                   default=argparse.SUPPRESS if default is argparse.SUPPRESS else False,
                   help="keep metadata.managedFields in -o json|yaml")
