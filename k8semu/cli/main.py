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


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="k8semu", description="A Kubernetes cluster emulated in virtual time.")
    p.add_argument("--cluster", help="the cluster's event-log file (default $K8SEMU_CLUSTER or ./.k8semu/cluster.log)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"{__package__}.commands.{name}").register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``k8semu`` console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:
        # the reader went away (`k8semu timeline | head`): stop quietly, as kubectl does
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (FileNotFoundError, FileExistsError, ConfigError, ValueError) as e:
        return die(str(e))
    except LogFormatError as e:
        return die(f"cannot read the cluster log: {e}")
    except StatusError as e:
        print(server_error(e), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
