"""The ``k8semu`` command: kubectl's commands on a cluster kept as its event log.

A cluster is one event-log file (``--cluster PATH``, ``$K8SEMU_CLUSTER``, or
``./.k8semu/cluster.log``). Each command opens it, runs the cluster's
components in virtual time while it does its work, lets the cluster settle,
appends, and exits: no daemon. Commands live one module each in
:mod:`k8semu.cli.commands`. Output and exit codes follow kubectl's.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from ..api.errors import StatusError
from ..sim.config import ConfigError
from ..store import LogFormatError
from .commands import COMMANDS
from .output import die, server_error
from .parser import CommandParser


def build_parser() -> argparse.ArgumentParser:
    """The whole command tree: a :class:`~k8semu.cli.parser.CommandParser` per (nested) command.

    Global flags (``--cluster``) are accepted before or after the command,
    ``-n``/``--namespace`` before it as well as after (:mod:`k8semu.cli.parser`);
    usage errors exit 1 as kubectl's do.
    """
    p = CommandParser(prog="k8semu", root=True, description="A Kubernetes cluster emulated in virtual time.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"{__package__}.commands.{name}").register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``k8semu`` console script; returns the exit code.

    Usage errors return 1 (kubectl's code, printed as ``error: …`` + ``See
    'k8semu CMD --help' for usage.``), ``--help`` returns 0: the parser's
    ``SystemExit`` becomes the return value, so in-process callers never see it.

    Ctrl-C returns 130 without a traceback: a session it stopped cleanly
    (:class:`~k8semu.cli.session.SessionInterrupted`; 143 for SIGTERM) prints
    ``k8semu: interrupted at 2h13m5s (revision 4321)``, anything else
    (waiting for the cluster's lock, reading) nothing. A cluster being served
    by ``k8semu serve`` is a one-line error for a writing command, exit 1.
    A file that cannot be used is one line naming it, exit 1, never a traceback: the cluster
    file as the flag gave it (``error: --cluster /tmp/x: is a directory, not a cluster log
    file``, :func:`~k8semu.cli.session.check_cluster_path`), any other file by any other
    ``OSError`` as its name and reason (``error: /tmp/in.json: permission denied``,
    :func:`~k8semu.cli.session.os_error_text`) — never Python's ``[Errno 13] …``.
    Writer locks the command took are released when it returns, however it ends.
    """
    from . import session

    session.command_line = list(sys.argv[1:] if argv is None else argv)
    locks_before = session.held_locks()
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except KeyboardInterrupt as e:
        return _interrupted(e)
    except BaseExceptionGroup as group:  # Trio's wrapping of a Ctrl-C that reached it
        if not _only_interrupts(group):
            raise
        return _interrupted(_first_leaf(group))
    except session.ClusterBusy as e:
        return die(str(e))
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        raise
    except BrokenPipeError:
        # the reader went away (`k8semu timeline | head`): stop quietly, as kubectl does
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (ConfigError, ValueError) as e:
        return die(str(e))
    except OSError as e:  # the one home of a file error's wording: "error: /tmp/x: permission denied"
        return die(session.os_error_text(e))
    except LogFormatError as e:
        return die(f"cannot read the cluster log: {e}")
    except StatusError as e:
        print(server_error(e), file=sys.stderr)
        return 1
    finally:
        session.release_locks(keep=locks_before)  # those of a command that did not close its cluster


def _interrupted(e: BaseException) -> int:
    """The exit of a command that Ctrl-C (or SIGTERM) stopped: 130 (143), one line or none."""
    from .session import SessionInterrupted

    if isinstance(e, SessionInterrupted):
        print(e.message(), file=sys.stderr)
        return e.exit_code
    return 130


def _only_interrupts(group: BaseExceptionGroup) -> bool:
    """True when every exception in ``group`` (nested groups included) is a KeyboardInterrupt."""
    return all(_only_interrupts(e) if isinstance(e, BaseExceptionGroup) else isinstance(e, KeyboardInterrupt)
               for e in group.exceptions)


def _first_leaf(group: BaseExceptionGroup) -> BaseException:
    """The first exception in ``group`` that is not itself a group."""
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first


if __name__ == "__main__":
    sys.exit(main())
