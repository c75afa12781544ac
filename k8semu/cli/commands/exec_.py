"""``k8semu exec``: run a command in a running container, as ``kubectl exec`` does.

The container is the one ``k8semu serve`` execs into (:mod:`k8semu.server.remotecommand`):
its behaviour program replayed from the log with the environment and files
it started with, advanced to the cluster's current virtual time; the command
runs in it (:func:`k8semu.node.behaviour.exec_command`) in virtual time of its
own (``sleep 5`` returns at once; the cluster is only read, not advanced),
and what it writes to files is not kept. Output and exit codes are kubectl
1.33's against a v1.33 cluster (WebSocket): the command's own output and exit
code, ``command terminated with exit code N`` on stderr; ``Defaulted
container "a" out of: a, b``; ``cannot exec into a container in a completed
pod; current phase is Succeeded``; ``error: Internal error occurred: unable
to upgrade connection: container not found ("a")`` for a container that is
not running; ``error: Internal error occurred: Internal error occurred:
error executing command in container: … exec: "foo": executable file not
found in $PATH`` for a program the container does not have.

``-i`` reads stdin to its end first (a terminal: a shell reads and runs one
line at a time, with a prompt, until ``exit`` or end of input). A command
that would wait forever (a server, ``sleep infinity``, ``tail -f``) is
stopped: ``error: the command is still running and would not end (…)``,
exit 1.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from ...api import errors
from ...api.auth import admin
from ...api.apiserver import RequestContext
from ..output import die, server_error
from ..parser import CommandParser, GoDuration
from ..session import open_cluster
from .get import UnknownType
from .logs import pod_for

__all__ = ["register", "run"]

_DEFAULT_CONTAINER = "kubectl.kubernetes.io/default-container"


def _flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", "--namespace", default=argparse.SUPPRESS)
    p.add_argument("-c", "--container", default=argparse.SUPPRESS)
    p.add_argument("-i", "--stdin", action="store_true", default=argparse.SUPPRESS)
    p.add_argument("-t", "--tty", action="store_true", default=argparse.SUPPRESS)
    p.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS)
    p.add_argument("--pod-running-timeout", action=GoDuration, default=argparse.SUPPRESS, metavar="DURATION",
                   help="accepted as kubectl's: the cluster does not run while exec reads it, so nothing waits")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("exec", help="run a command in a container (as kubectl exec)",
                       usage="k8semu exec (POD | TYPE/NAME) [-c CONTAINER] [-i] [-t] -- COMMAND [args...]")
    p.add_argument("target", metavar="POD|TYPE/NAME")
    _flags(p)
    # REMAINDER also takes flags written after the pod; they are parsed again from it (see run)
    p.add_argument("rest", nargs=argparse.REMAINDER, help="-- COMMAND [ARG...]")
    p.set_defaults(func=run)


def _default_container(pod: dict[str, Any], quiet: bool) -> str:
    """kubectl's ``FindOrDefaultContainerByName``: the default-container annotation, else the first
    container, saying so when there was a choice."""
    spec = pod.get("spec") or {}
    containers = [c["name"] for c in spec.get("containers") or []]
    if not containers:
        raise ValueError(f"pod {pod['metadata'].get('namespace', 'default')}/{pod['metadata']['name']} "
                         "does not have any containers")
    wanted = ((pod.get("metadata") or {}).get("annotations") or {}).get(_DEFAULT_CONTAINER)
    if wanted and wanted in [c["name"] for k in ("containers", "initContainers", "ephemeralContainers")
                             for c in spec.get(k) or []]:
        return wanted
    inits = [c["name"] for c in spec.get("initContainers") or []]
    ephemeral = [c["name"] for c in spec.get("ephemeralContainers") or []]
    if not quiet and (len(containers) > 1 or inits or ephemeral):
        names = containers + [f"{n} (ephem)" for n in ephemeral] + [f"{n} (init)" for n in inits]
        print(f'Defaulted container "{containers[0]}" out of: {", ".join(names)}', file=sys.stderr)
    return containers[0]


class _Out:
    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def __call__(self, text: str) -> None:
        self.stream.write(text)


def _finish(gen: Any) -> int | None:
    """Run a behaviour generator to its end in its own virtual time; None if it would wait forever."""
    try:
        while True:
            t = next(gen)
            sys.stdout.flush()
            if t == math.inf:
                gen.close()
                return None
    except StopIteration as stop:
        return int(stop.value or 0)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


def _session(run_state: Any, argv: list[str]) -> int | None:
    """An interactive shell on this terminal: one line at a time, with the shell's prompt."""
    from ...node import behaviour

    session = behaviour.ShellSession(run_state, argv[0], _Out(sys.stdout), _Out(sys.stderr), env={"TERM": "xterm"})
    text, prompt = "", session.prompt()
    while True:
        sys.stdout.write(prompt)
        sys.stdout.flush()
        line = sys.stdin.readline()
        if not line:
            return session.status
        text += line if line.endswith("\n") else line + "\n"
        if session.incomplete(text):
            prompt = session.prompt(continuation=True)
            continue
        if _finish(session.run_text(text)) is None:
            return None
        text, prompt = "", session.prompt()
        if session.exit_code is not None:
            return session.exit_code


def run(args: argparse.Namespace) -> int:
    from ...node import behaviour
    from ...server import remotecommand

    # argparse drops a "--" that directly follows POD, so `exec POD CMD` (which kubectl refuses)
    # cannot be told from `exec POD -- CMD` and is accepted; flags after POD end at the "--"
    rest = list(args.rest or [])
    flags: list[str] = []
    if rest and rest[0].startswith("-") and rest[0] != "--":
        flags, rest = (rest[:rest.index("--")], rest[rest.index("--"):]) if "--" in rest else (rest, [])
    command = rest[1:] if rest[:1] == ["--"] else rest
    if flags:
        p = CommandParser(prog="k8semu exec", add_help=False)
        _flags(p)
        _, extra = p.parse_known_args(flags, namespace=args)
        if extra:
            return die("exec [POD] [COMMAND] is not supported anymore. Use exec [POD] -- [COMMAND] instead")
    if not command:
        return die("you must specify at least one command for the container")
    ns = getattr(args, "namespace", "default")
    stdin, tty, quiet = (bool(getattr(args, k, False)) for k in ("stdin", "tty", "quiet"))
    if tty and not stdin:
        tty = False
    elif tty and not sys.stdin.isatty():
        tty = False
        if not quiet:
            print("Unable to use a TTY - input is not a terminal or the right kind of file", file=sys.stderr)
    cluster = open_cluster(args, read_only=True)
    try:
        api = cluster.api
        try:
            pod = pod_for(api, args.target, ns)
        except UnknownType as e:
            return die(str(e))
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            return die(f"cannot exec into a container in a completed pod; current phase is {phase}")
        container = getattr(args, "container", None) or _default_container(pod, quiet)
        options = remotecommand.ExecOptions(tuple(command), container, stdin, True, not tty, tty)
        name = pod["metadata"]["name"]
        try:
            remotecommand.check_exec(api, RequestContext(user=admin()), pod["metadata"].get("namespace") or ns,
                                     name, options)
            run_state = remotecommand.container_run(api, pod, container, cluster.time)
        except errors.StatusError as e:
            print(server_error(e), file=sys.stderr)
            return 1
        except remotecommand.KubeletError as e:
            return die(f"Internal error occurred: unable to upgrade connection: {e.message}")
        if stdin and tty and behaviour.ShellSession.wanted(command):
            code = _session(run_state, command)
        else:
            text = sys.stdin.read() if stdin else ""
            try:
                gen = behaviour.exec_command(run_state, command, _Out(sys.stdout), _Out(sys.stderr), text,
                                             env={"TERM": "xterm"} if tty else None)
            except behaviour.ExecNotFound as e:
                exec_id = remotecommand.exec_id(pod, container, cluster.time, command)
                status = remotecommand.final_status(str(e), command, exec_id, translated=True)
                return die(status["message"])
            code = _finish(gen)
        if code is None:
            return die(f"the command is still running and would not end ({' '.join(command)} waits forever "
                       "here: a server, sleep infinity, tail -f, or it reads a terminal)")
        if code:
            print(f"command terminated with exit code {code}", file=sys.stderr)
        return code
    finally:
        cluster.close()
