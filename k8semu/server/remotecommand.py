"""``pods/NAME/exec``: ``kubectl exec`` into emulated containers.

Upstream, kube-apiserver authorizes ``create`` on ``pods/exec``, checks the
pod and the container (``streamLocation``: ``container x is not valid for pod
y``, ``pod y does not have a host assigned``) and then either proxies the
client's SPDY upgrade to the kubelet, or, for a WebSocket offering
``v5.channel.k8s.io`` (kubectl ≥ 1.30), accepts the WebSocket itself and
runs a SPDY exec towards the kubelet on the client's behalf
(``StreamTranslatorHandler``). The kubelet looks for the *running* container
(``container not found ("x")`` otherwise) and containerd starts the process
(runc: ``exec: "foo": executable file not found in $PATH``).

Here the process is the container's behaviour model: the container is
rebuilt as ``pods/log`` and port-forward rebuild it (:func:`container_run`:
its program replayed with the environment and files it started with,
:func:`k8semu.node.inputs.replay_program`, advanced to the server's virtual
now) and the command runs in it (:func:`k8semu.node.behaviour.exec_command`)
in the server's virtual time (``sleep 2`` takes 2 virtual seconds). What
the command writes to files is not kept: every exec starts from the
container's own state — except what ``tar x`` extracts (``kubectl cp`` into
the pod), which later execs and attaches in this process see
(:func:`k8semu.node.runtime.record_files`). :class:`Process` drives it:

* **stdin**: a shell run with stdin and no script (``kubectl exec -i POD --
  sh``) is a session fed line by line (:class:`~k8semu.node.behaviour.ShellSession`):
  each complete command runs as its line arrives, ``exit`` ends it. Any other
  command starts at once; if it reads stdin before the input has ended, it is
  run again from the start once the input ends, with all of it, skipping in
  no time what the first run already did (the model is deterministic, so the
  second run repeats the first up to that point) and what was already sent.
* **terminal** (``-t``): input is echoed and edited as a terminal's line
  discipline does (backspace, ``^C`` interrupts the command with status 130,
  ``^D`` on an empty line ends the input), output newlines become CR LF,
  stderr goes to the terminal, ``TERM=xterm`` is set; the shell prints its
  prompt (:meth:`~k8semu.node.behaviour.ShellSession.prompt`). Window sizes
  are read and ignored.

``pods/NAME/attach`` (``kubectl attach``, ``kubectl run -i``/``-it``) uses the same protocols
and checks (RBAC ``create`` on ``pods/attach``) and reaches the container's own process
(:meth:`Process._attach`): the client sees what the container writes from then on, and its input
goes to the container's stdin (``stdin: true``; :func:`k8semu.node.runtime.container_stdin`),
which the container's main process reads — a shell runs each command as its line arrives, ``exit
3`` ends the container with exit code 3 (the kubelet sees it: ``kubectl run --restart=Never``
then exits 3), and what it prints is in ``kubectl logs``. As upstream with ``stdinOnce: true``
(``kubectl run -i``), the container's stdin closes when the first attached client's input ends
or the client detaches, so a shell reads end-of-file and exits. With a terminal the line
discipline (echo, backspace, ``^D``) is applied before the input reaches the container, whose
shell prints its prompts. The final status is ``Success`` (the kubelet's).

Protocols (channel numbers as in ``k8s.io/apimachinery/pkg/util/remotecommand``):

* **WebSocket** (:func:`serve_websocket`): subprotocol ``v5.channel.k8s.io``
  (kube-apiserver's own, kubectl ≥ 1.30) or ``v4.channel.k8s.io`` (the
  kubelet's, proxied; the Python client); every binary message is a channel
  byte then data: 0 stdin, 1 stdout, 2 stderr, 3 error (the final ``Status``
  JSON), 4 resize; v5 adds 255 CLOSE (``[255, 0]``: stdin ended). The server
  first sends an empty message on the lowest writable channel, and closes
  the WebSocket (1000) after the status. It writes nothing in the first
  ``_KUBELET_CONNECT`` wall seconds after accepting, the time kube-apiserver
  takes to reach the kubelet: client-go reads messages before it has
  registered its streams and drops (``Unknown stream id 1``) any that
  come earlier.
* **SPDY/3.1** (:func:`serve_spdy`, over :mod:`.upgrade` and :mod:`.spdy`;
  kubectl ≤ 1.29, and newer ones when the WebSocket fails): ``101`` with
  ``X-Stream-Protocol-Version: v4.channel.k8s.io``; the client opens one
  stream per channel with header ``streamType`` (``error``, ``stdin``,
  ``stdout``, ``stderr``, ``resize``); the server waits for all it asked for
  (30 s), replies to each, and at the end writes the status on ``error``,
  half-closes its streams and sends GOAWAY.

The final status, and so kubectl's message, depends on who writes it: the
kubelet (SPDY, and WebSocket v4, which kube-apiserver proxies to it) or
kube-apiserver's translator (WebSocket v5), which re-wraps what its own SPDY
client got from the kubelet (:func:`final_status`):

* exit 0: ``Success``;
* exit N: ``Failure``, reason ``NonZeroExitCode``, cause ``ExitCode`` ``N``
  (kubectl prints ``command terminated with exit code N`` and exits N); the
  message is ``command terminated with non-zero exit code: error executing
  command [sh -c exit 3], exit code 3`` from the kubelet, ``… non-zero exit
  code: command terminated with exit code 3`` from the translator;
* no such program: ``Internal error occurred: error executing command in
  container: failed to exec in container: failed to start exec "ID": OCI
  runtime exec failed: exec failed: unable to start container process: exec:
  "foo": executable file not found in $PATH: unknown`` from the kubelet (kubectl
  exits 1), the translator prefixes one more ``Internal error occurred: ``;
* container not running: the kubelet answers the upgrade with 500 ``container
  not found ("c")`` (kubectl: ``unable to upgrade connection: container not
  found ("c")``); the translator has already accepted the WebSocket and writes
  ``Internal error occurred: unable to upgrade connection: container not
  found ("c")``.
"""

from __future__ import annotations

import codecs
import hashlib
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs
import orjson
import trio

from ..api import errors
from ..api.apiserver import RequestContext
from . import spdy

__all__ = ["V4", "V5", "WEBSOCKET_PROTOCOLS", "ExecOptions", "KubeletError", "Process", "check_exec",
           "container_run", "exec_id", "final_status", "serve_spdy", "serve_websocket"]

V4 = "v4.channel.k8s.io"
V5 = "v5.channel.k8s.io"
#: WebSocket subprotocols served, in the order the server prefers them.
WEBSOCKET_PROTOCOLS = (V5, V4)
#: Channel numbers (``k8s.io/apimachinery/pkg/util/remotecommand``).
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
_CHUNK = 32 * 1024  # output bytes per WebSocket message (client-go's read buffer)
_ATTACH_POLL = 1.0  # virtual seconds between looks at an attached container's output
_STREAM_CREATION_TIMEOUT = 30.0  # wall seconds (the kubelet's DefaultStreamCreationTimeout)
_CLOSE_WAIT = 10.0  # wall seconds to wait for the client to close after the status
_KUBELET_CONNECT = 0.02  # wall seconds from accepting a WebSocket to its first message
_TRUE = frozenset({"1", "t", "T", "true", "TRUE", "True"})  # Go's strconv.ParseBool

Output = Callable[[int, bytes], Awaitable[None]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]


class KubeletError(Exception):
    """The kubelet refused the exec before any upgrade: HTTP ``code`` with the plain-text ``message``
    (``container not found ("x")``, as ``streaming.WriteError`` writes it)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@attrs.frozen
class ExecOptions:
    """``PodExecOptions`` from the query: ``command`` (repeated), ``container``, ``stdin``, ``stdout``,
    ``stderr``, ``tty`` (booleans as Go's ``ParseBool``: ``true``, ``1``, ``True`` …). With a
    terminal there is no stderr (the kubelet drops it)."""

    command: tuple[str, ...] = ()
    container: str = ""
    stdin: bool = False
    stdout: bool = False
    stderr: bool = False
    tty: bool = False
    #: ``pods/NAME/attach`` (``PodAttachOptions``: no ``command``; the container's own process).
    attach: bool = False

    @classmethod
    def from_query(cls, query: Mapping[str, Sequence[str]]) -> ExecOptions:
        def flag(name: str) -> bool:
            return (list(query.get(name) or [""])[0]) in _TRUE

        tty = flag("tty")
        return cls(tuple(query.get("command") or ()), (list(query.get("container") or [""]))[0],
                   flag("stdin"), flag("stdout"), flag("stderr") and not tty, tty)


def check_exec(api: Any, ctx: RequestContext, namespace: str, name: str,
               options: ExecOptions) -> tuple[dict[str, Any], str]:
    """kube-apiserver's checks before it hands an exec on (``ExecLocation``); returns (pod, container).

    RBAC: ``create`` on ``pods/exec`` (for the WebSocket ``GET`` too, as 1.31+). Without
    ``container``, a pod's only container is used.

    Raises:
        Forbidden, NotFound: RBAC denies it; no such pod.
        BadRequest: ``a container name must be specified for pod P, choose one of: [a b]`` (``or one of
            the init containers: [...]``), ``container C is not valid for pod P``, ``pod P does not have
            a host assigned``, ``you must specify at least 1 of stdin, stdout, stderr``.
    """
    info = api.resource("pods")
    api._authz(ctx, "create", info, namespace, name, "attach" if options.attach else "exec")
    pod = api.get(info, name, namespace=namespace)
    spec = pod.get("spec") or {}
    containers = [c["name"] for c in spec.get("containers") or []]
    inits = [c["name"] for c in spec.get("initContainers") or []]
    ephemeral = [c["name"] for c in spec.get("ephemeralContainers") or []]
    cname = options.container
    if not cname:
        if len(containers) == 1:
            cname = containers[0]
        elif not containers:
            raise errors.BadRequest(f"a container name must be specified for pod {name}")
        else:
            msg = f"a container name must be specified for pod {name}, choose one of: [{' '.join(containers)}]"
            if inits:
                msg += f" or one of the init containers: [{' '.join(inits)}]"
            raise errors.BadRequest(msg)
    elif cname not in containers + inits + ephemeral:
        raise errors.BadRequest(f"container {cname} is not valid for pod {name}")
    if not spec.get("nodeName"):
        raise errors.BadRequest(f"pod {name} does not have a host assigned")
    if not (options.stdin or options.stdout or options.stderr):
        raise errors.BadRequest("you must specify at least 1 of stdin, stdout, stderr")
    from ..sim.components import kubelet_unreachable

    if (dial := kubelet_unreachable(api, pod)) is not None:
        raise errors.UnknownError(f"error dialing backend: {dial}")
    return pod, cname


def container_run(api: Any, pod: Mapping[str, Any], container: str, at: float) -> Any:
    """The running container ``container`` of ``pod`` as the runtime has it at virtual time ``at``:
    its behaviour program (:func:`k8semu.node.inputs.replay_program`) started at its recorded
    ``startedAt`` and advanced to ``at`` (a :class:`~k8semu.node.behaviour.Run`).

    Raises:
        KubeletError: 500 ``container not found ("c")`` when it is not running (waiting, exited,
            or its program has ended by ``at``), as the kubelet's ``findContainer``.
    """
    from ..api.humanize import parse_timestamp
    from ..node import inputs

    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    specs = {c["name"]: c for key in ("initContainers", "containers", "ephemeralContainers")
             for c in spec.get(key) or []}
    statuses = [s for key in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses")
                for s in status.get(key) or []]
    st = next((s for s in statuses if s.get("name") == container), None) or {}
    running = (st.get("state") or {}).get("running")
    missing = KubeletError(500, f'container not found ("{container}")')
    if running is None or container not in specs:
        raise missing
    epoch = api.epoch
    t = parse_timestamp(running.get("startedAt"))
    started = 0.0 if t is None else (t - epoch).total_seconds()
    try:
        program = inputs.replay_program(api, pod, specs[container], started)
    except ValueError:  # an invalid behaviour script never runs
        raise missing from None
    from ..node.runtime import container_files, container_stdin

    feed = container_stdin(st.get("containerID")) if specs[container].get("stdin") else None
    run = program.start(started, wall_clock=lambda v: epoch + timedelta(seconds=v), stdin=feed)
    from ..node.podnetwork import PastNetwork

    run.network = PastNetwork(api, dict(pod), run)  # wget, curl, nslookup reach the cluster (as it was)
    run.advance(at)
    if run.exited is not None:
        raise missing
    for path, text in container_files(st.get("containerID")):  # what kubectl cp put there
        if text is None:
            run.dirs.add(path)
        else:
            run.fs[path] = text
    return run


def exec_id(pod: Mapping[str, Any], container: str, at: float, command: Sequence[str]) -> str:
    """containerd's id of an exec (64 hex digits; random upstream, here derived from the container's
    id, the virtual time and the command)."""
    statuses = [s for key in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses")
                for s in (pod.get("status") or {}).get(key) or []]
    cid = next((s.get("containerID") or "" for s in statuses if s.get("name") == container), "")
    return hashlib.sha256(f"exec/{cid}/{at!r}/{list(command)!r}".encode()).hexdigest()


def _go_list(items: Sequence[str]) -> str:
    return "[" + " ".join(items) + "]"


def _internal(message: str) -> dict[str, Any]:
    """``apierrors.NewInternalError(err).Status()`` as the error channel carries it."""
    return {"metadata": {}, "status": "Failure", "message": f"Internal error occurred: {message}",
            "reason": "InternalError", "details": {"causes": [{"message": message}]}, "code": 500}


def final_status(outcome: int | str, command: Sequence[str], exec_id: str, *, translated: bool) -> dict[str, Any]:
    """The ``Status`` for the error channel: ``outcome`` is the exit status, or runc's reason the
    process could not start (:class:`~k8semu.node.behaviour.ExecNotFound`). ``translated``: written
    by kube-apiserver's WebSocket translator (v5) rather than the kubelet (see the module docstring).
    """
    if isinstance(outcome, str):
        # containerd's shim returns runc's error as a ttrpc "unknown": ``…: unknown``
        err = (f'error executing command in container: failed to exec in container: failed to start exec '
               f'"{exec_id}": OCI runtime exec failed: exec failed: unable to start container process: '
               f'{outcome}: unknown')
        st = _internal(err)
        return _internal(st["message"]) if translated else st
    if outcome == 0:
        return {"metadata": {}, "status": "Success"}
    inner = (f"command terminated with exit code {outcome}" if translated
             else f"error executing command {_go_list(command)}, exit code {outcome}")
    return {"metadata": {}, "status": "Failure", "message": f"command terminated with non-zero exit code: {inner}",
            "reason": "NonZeroExitCode", "details": {"causes": [{"reason": "ExitCode", "message": str(outcome)}]}}


class _Stdin:
    """What a (non-session) command reads: the input received so far, but ``None`` (wait) for what
    is not there yet while the input has not ended; ``waited`` records that it had to wait."""

    def __init__(self, process: Process) -> None:
        self._p = process
        self._pos = 0
        self.waited = False

    def read_all(self) -> str | None:
        if not self._p.stdin_ended:
            self.waited = True
            return None
        text = self._p.input[self._pos:]
        self._pos = len(self._p.input)
        return text

    def read_line(self) -> str | None | bool:
        text = self._p.input
        i = text.find("\n", self._pos)
        if i >= 0:
            line, self._pos = text[self._pos:i], i + 1
            return line
        if not self._p.stdin_ended:
            self.waited = True
            return None
        if self._pos >= len(text):
            return False
        line, self._pos = text[self._pos:], len(text)
        return line


_INTERRUPTED = object()


class Process:
    """One exec'd process: ``options.command`` in container ``container`` of ``pod``, run on the
    container as it is now (:func:`container_run`), in the server's virtual time.

    Input arrives through :meth:`feed` and :meth:`close_stdin`; output leaves through
    ``output(fd, data)`` (fd 1 stdout, 2 stderr; with a terminal all of it on 1). :meth:`run`
    returns the exit status. See the module docstring for stdin and terminals.

    Raises:
        KubeletError: the container is not running (from the constructor).
    """

    def __init__(self, api: Any, pod: Mapping[str, Any], container: str, options: ExecOptions,
                 output: Output) -> None:
        self.api = api
        self.pod = pod
        self.container = container
        self.options = options
        self.started = api.now
        self.run_state = container_run(api, pod, container, self.started)
        if options.attach:  # attach: to the container's own process, its command line
            options = self.options = attrs.evolve(options, command=tuple(self.run_state.program.argv))
        self._output = output
        self._env = {"TERM": "xterm"} if options.tty else None
        #: attach: the container's own stdin (:class:`~k8semu.node.behaviour.StdinFeed`), which the
        #: client's input goes to; None when the container has no stdin or no feed is kept for it
        self.stdin_feed = self.run_state.stdin_feed if options.attach else None
        spec = next((c for key in ("containers", "initContainers", "ephemeralContainers")
                     for c in (pod.get("spec") or {}).get(key) or [] if c.get("name") == container), {})
        self._stdin_once = bool(spec.get("stdinOnce"))
        #: The input received so far (with a terminal: the completed lines), decoded.
        self.input = ""
        self.stdin_ended = not options.stdin
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._edit = ""  # a terminal's line being typed
        self._pos = 0  # how far the shell session has read ``input``
        self._changed = trio.Event()
        self._interrupt: trio.CancelScope | None = None
        self._interrupted = False
        self._pending: list[tuple[int, str]] = []
        self._emitted = {STDOUT: 0, STDERR: 0}  # characters written by this run of the command
        self._sent = {STDOUT: 0, STDERR: 0}  # characters sent to the client
        #: containerd's id of this exec (see :func:`exec_id`).
        self.exec_id = exec_id(pod, container, self.started, options.command)

    # ---------------------------------------------------------------- input
    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def feed(self, data: bytes) -> None:
        """Input from the client (ignored without ``options.stdin``)."""
        if not self.options.stdin or self.stdin_ended:
            return
        text = self._decoder.decode(data)
        feed = self.stdin_feed
        if not self.options.tty:
            if feed is not None:
                feed.append(self.api.now, text)
            self.input += text
            self._wake()
            return
        echo = []
        for ch in text:
            if ch in "\r\n":
                echo.append("\r\n")
                if feed is not None:
                    feed.append(self.api.now, self._edit + "\n")
                self.input += self._edit + "\n"
                self._edit = ""
            elif ch in "\x7f\b":
                if self._edit:
                    self._edit = self._edit[:-1]
                    echo.append("\b \b")
            elif ch == "\x03":  # ^C: SIGINT to the foreground command; typed-ahead input is dropped
                echo.append("^C\r\n")
                self._edit = ""
                self._pos = len(self.input)
                if self._interrupt is not None:
                    self._interrupt.cancel()
                else:
                    self._interrupted = True
            elif ch == "\x04":  # ^D: the line so far goes to the reader; on an empty line, end of input
                if not self._edit:
                    self.stdin_ended = True
                    if feed is not None:
                        feed.close(self.api.now)
                elif feed is not None:
                    feed.append(self.api.now, self._edit)
                self.input += self._edit
                self._edit = ""
            elif ch >= " " or ch == "\t":
                self._edit += ch
                echo.append(ch)
        if echo and self.options.stdout:
            await self._output(STDOUT, "".join(echo).encode())
        self._wake()

    def close_stdin(self) -> None:
        """The client's stdin ended (v5 CLOSE, or FIN on the SPDY stdin stream). Attached to a
        container with ``stdinOnce``, the container's stdin closes with it (its shell reads EOF)."""
        if not self.stdin_ended:
            self.input += self._decoder.decode(b"", final=True)
            self.stdin_ended = True
            self._wake()
        self._detach()

    def _detach(self) -> None:
        """The attached client's stdin is gone (ended, or the client left): as the runtime does for
        a container with ``stdinOnce: true``, its stdin closes for good (upstream: "remains open
        and accepts data until the client disconnects, at which time stdin is closed")."""
        if self.stdin_feed is not None and self.options.stdin and self._stdin_once:
            self.stdin_feed.close(self.api.now)
            self._wake()

    # ---------------------------------------------------------------- output
    def _writer(self, fd: int) -> Callable[[str], None]:
        return lambda text: self._pending.append((fd, text))

    async def _flush(self) -> None:
        pending, self._pending = self._pending, []
        out: list[tuple[int, str]] = []
        for fd, text in pending:
            start = self._emitted[fd]
            self._emitted[fd] += len(text)
            skip = self._sent[fd] - start  # a second run repeats what was already sent
            if skip >= len(text):
                continue
            text = text[max(skip, 0):]
            self._sent[fd] = self._emitted[fd]
            if self.options.tty:
                fd, text = STDOUT, text.replace("\n", "\r\n")
            if not (self.options.stdout if fd == STDOUT else self.options.stderr):
                continue
            if out and out[-1][0] == fd:
                out[-1] = (fd, out[-1][1] + text)
            else:
                out.append((fd, text))
        for fd, text in out:
            await self._output(fd, text.encode())

    # ---------------------------------------------------------------- running
    async def run(self) -> int:
        """Run the command to its end; its exit status (130 when a terminal's ^C interrupted it).

        Raises:
            ExecNotFound: (:mod:`k8semu.node.behaviour`) no such program in the container.
        """
        code = await self._run()
        if self.run_state.extracted:  # kubectl cp: the files stay in the container
            from ..node.runtime import record_files

            statuses = [s for key in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses")
                        for s in (self.pod.get("status") or {}).get(key) or []]
            cid = next((s.get("containerID") for s in statuses if s.get("name") == self.container), None)
            record_files(cid, self.run_state.extracted)
        return code

    async def _run(self) -> int:
        from ..node import behaviour

        argv = list(self.options.command)
        if self.options.attach:
            return await self._attach(argv)
        if self.options.stdin and behaviour.ShellSession.wanted(argv):
            return await self._session(argv)
        stdin: Any = _Stdin(self) if self.options.stdin else ""
        gen = behaviour.exec_command(self.run_state, argv, self._writer(STDOUT), self._writer(STDERR), stdin,
                                     env=self._env)
        code = await self._drive(gen, stdin)
        if code is not None:
            return code
        # it read stdin before the input ended: once it has, run it again with all of it
        blocked_at = self.run_state.now
        while not self.stdin_ended:
            if self._interrupted:
                return 130
            await self._changed.wait()
        try:
            self.run_state = container_run(self.api, self.pod, self.container, self.started)
        except KubeletError:  # the container is gone meanwhile, and the process with it
            return 137
        self._emitted = {STDOUT: 0, STDERR: 0}
        stdin = _Stdin(self)
        gen = behaviour.exec_command(self.run_state, argv, self._writer(STDOUT), self._writer(STDERR), stdin,
                                     env=self._env)
        code = await self._drive(gen, stdin, replay_until=blocked_at, shift=self.api.now - blocked_at)
        return 0 if code is None else code

    async def _drive(self, gen: Any, stdin: Any = None, *, replay_until: float = -math.inf,
                     shift: float = 0.0) -> int | None:
        """Run ``gen`` (a behaviour generator) in virtual time: sleep until each time it asks for
        (times up to ``replay_until`` at once, later ones ``shift`` later). None when it waits for
        stdin that has not ended; 130 when interrupted."""
        with trio.CancelScope() as scope:
            self._interrupt = scope
            try:
                while True:
                    try:
                        t = next(gen)
                    except StopIteration as stop:
                        await self._flush()
                        return int(stop.value or 0)
                    await self._flush()
                    if t == math.inf:
                        if isinstance(stdin, _Stdin) and stdin.waited and not self.stdin_ended:
                            return None
                        await trio.sleep_forever()
                    elif t > replay_until:
                        await trio.sleep(max(0.0, t + shift - self.api.now))
            finally:
                self._interrupt = None
                gen.close()
        return 130

    async def _attach(self, argv: list[str]) -> int:
        """``kubectl attach`` (and ``kubectl run -i``): the client sees what the container writes from
        now on and, with ``-i``, its input goes to the container's stdin (:attr:`stdin_feed`), which
        the container's own process reads (a shell runs the commands, ``exit 3`` ends the container
        with 3; ``stdinOnce``: the client's end of input closes it, so the shell exits). Streams until
        the container exits, is replaced or its pod goes, or the client leaves. The kubelet reports
        ``Success`` either way (0 here).

        The output comes from a rebuild of the container (:func:`container_run`) reading the same
        stdin at the same virtual times as the kubelet's, so both see the same commands run and the
        same exit. Without a kept stdin (a container started outside this process) a shell on an open
        stdin takes the client's input as a separate session, and the container goes on running."""
        from ..node import behaviour

        if (self.stdin_feed is None and self.options.stdin and self.run_state.program.stdin
                and behaviour.ShellSession.wanted(argv)):
            await self._session(argv)
            return 0
        meta = self.pod.get("metadata") or {}
        uid = meta.get("uid")

        def container_id(pod: Mapping[str, Any]) -> str | None:
            for key in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"):
                for st in (pod.get("status") or {}).get(key) or []:
                    if st.get("name") == self.container and (st.get("state") or {}).get("running"):
                        return st.get("containerID")
            return None

        def tap(stream: str, text: str) -> None:
            self._pending.append((STDERR if stream == "stderr" else STDOUT, text))

        self.run_state.tap = tap
        cid = container_id(self.pod)
        try:
            while True:
                changed = self._changed
                nxt = self.run_state.next_event_time()
                wait = _ATTACH_POLL if nxt is None else min(_ATTACH_POLL, max(0.0, nxt - self.api.now))
                with trio.move_on_after(wait):
                    await changed.wait()
                self.run_state.advance(self.api.now)
                await self._flush()
                if self.run_state.exited is not None:
                    return 0
                try:
                    cur = self.api.get(self.api.resource("pods"), meta.get("name"), namespace=meta.get("namespace"))
                except errors.NotFound:
                    return 0
                if (cur.get("metadata") or {}).get("uid") != uid or container_id(cur) != cid:
                    return 0
        finally:
            self._detach()

    async def _line(self) -> Any:
        """The next input line; None at the end of the input; ``_INTERRUPTED`` after a ^C."""
        while True:
            if self._interrupted:
                self._interrupted = False
                return _INTERRUPTED
            i = self.input.find("\n", self._pos)
            if i >= 0:
                line, self._pos = self.input[self._pos:i], i + 1
                return line
            if self.stdin_ended:
                if self._pos < len(self.input):
                    line, self._pos = self.input[self._pos:], len(self.input)
                    return line
                return None
            await self._changed.wait()

    async def _session(self, argv: list[str]) -> int:
        from ..node import behaviour

        session = behaviour.ShellSession(self.run_state, argv[0], self._writer(STDOUT), self._writer(STDERR),
                                         env=self._env)
        text = ""
        prompt = session.prompt()
        while True:
            if self.options.tty:
                self._pending.append((STDOUT, prompt))
                await self._flush()
            line = await self._line()
            if line is None:
                return session.status
            if line is _INTERRUPTED:
                text, prompt = "", session.prompt()
                continue
            text += line + "\n"
            if session.incomplete(text):
                prompt = session.prompt(continuation=True)
                continue
            self.run_state.now = max(self.run_state.now, self.api.now)  # time passed while it waited
            await self._drive(session.run_text(text))
            text = ""
            if session.exit_code is not None:
                return session.exit_code
            prompt = session.prompt()


# ---------------------------------------------------------------------------- WebSocket

async def _reject_text(scope: dict[str, Any], send: Send, code: int, text: str) -> None:
    if "websocket.http.response" in (scope.get("extensions") or {}):
        body = text.encode()
        await send({"type": "websocket.http.response.start", "status": code,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "websocket.http.response.body", "body": body, "more_body": False})
    else:
        await send({"type": "websocket.close", "code": 1011})


class _Gone(Exception):
    """The WebSocket client went away."""


async def serve_websocket(api: Any, ctx: RequestContext, namespace: str, name: str, scope: dict[str, Any],
                          receive: Receive, send: Send, *, shutting_down: trio.Event | None = None,
                          attach: bool = False, speed: float = 1.0) -> None:
    """Serve one ASGI ``websocket`` connection for ``pods/NAME/exec`` (see the module docstring).

    Refusals before accepting are HTTP responses (the ``websocket.http.response`` extension): the
    ``Status`` of :func:`check_exec`, 400 when no served subprotocol is offered (kubectl then falls
    back to SPDY), and for v4 the kubelet's plain-text 500 ``container not found ("c")``. With v5
    that last one is accepted and answered on the error channel, as kube-apiserver's translator does.
    ``speed`` converts wall seconds to virtual ones.
    """
    from . import portforward

    first = await receive()
    if first.get("type") != "websocket.connect":
        return
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    offered = list(scope.get("subprotocols") or [])
    try:
        options = attrs.evolve(ExecOptions.from_query(query), attach=attach)
        pod, cname = check_exec(api, ctx, namespace, name, options)
        protocol = next((p for p in WEBSOCKET_PROTOCOLS if p in offered), None)
        if protocol is None:
            raise errors.BadRequest(f"unable to upgrade: no supported WebSocket subprotocol (this server "
                                    f"speaks {', '.join(WEBSOCKET_PROTOCOLS)})")
    except errors.StatusError as e:
        return await portforward._reject(scope, send, e)
    options = attrs.evolve(options, container=cname)
    translated = protocol == V5
    gone = False

    async def output(fd: int, data: bytes) -> None:
        nonlocal gone
        for i in range(0, max(len(data), 1), _CHUNK):
            if gone:
                raise _Gone()
            try:
                await send({"type": "websocket.send", "bytes": bytes([fd]) + data[i:i + _CHUNK]})
            except Exception:  # noqa: BLE001 - the server refuses sends once the client has gone
                gone = True
                raise _Gone() from None

    try:
        process = Process(api, pod, cname, options, output)
    except KubeletError as e:
        if not translated:
            return await _reject_text(scope, send, e.code, e.message)
        process = None
        failure: dict[str, Any] | None = _internal(f"unable to upgrade connection: {e.message}")
    else:
        failure = None
    await send({"type": "websocket.accept", "subprotocol": protocol})
    await trio.sleep(_KUBELET_CONNECT * speed)
    status: dict[str, Any] | None = failure
    try:
        await output(STDOUT if options.stdout else STDERR if options.stderr else ERROR, b"")
        if process is not None:
            status = await _serve_process(process, receive, translated, shutting_down)
    except _Gone:
        return
    if status is None:  # the client went, or the server stops
        return
    try:
        await send({"type": "websocket.send", "bytes": bytes([ERROR]) + orjson.dumps(status)})
        await send({"type": "websocket.close", "code": 1000})
    except Exception:  # noqa: BLE001 - the client went meanwhile
        pass


async def _serve_process(process: Process, receive: Receive, translated: bool,
                         shutting_down: trio.Event | None) -> dict[str, Any] | None:
    """Run ``process`` while reading the client's messages; its final status, or None when the
    client disconnected (or the server stopped) first."""
    from ..node import behaviour

    result: dict[str, Any] | None = None
    async with trio.open_nursery() as nursery:
        async def read() -> None:
            while True:
                msg = await receive()
                if msg["type"] == "websocket.disconnect":
                    nursery.cancel_scope.cancel()
                    return
                data = msg.get("bytes") or b""
                if not data:
                    continue
                if data[0] == STDIN:
                    await process.feed(data[1:])
                elif data[0] == CLOSE and translated and data[1:2] == bytes([STDIN]):
                    process.close_stdin()
                # RESIZE: window sizes are not modelled

        async def stop() -> None:
            if shutting_down is not None:
                await shutting_down.wait()
                nursery.cancel_scope.cancel()

        nursery.start_soon(read)
        nursery.start_soon(stop)
        try:
            outcome: int | str = await process.run()
        except behaviour.ExecNotFound as e:
            outcome = str(e)
        except _Gone:
            nursery.cancel_scope.cancel()
            return None
        result = final_status(outcome, process.options.command, process.exec_id, translated=translated)
        nursery.cancel_scope.cancel()
    return result


# ---------------------------------------------------------------------------- SPDY

class _SpdyStreams:
    """The kubelet's side of stream creation: one stream per ``streamType`` asked for, each replied
    to at once; ``ready`` once all have come. Others (unknown or repeated types) are reset."""

    def __init__(self, wanted: set[str]) -> None:
        self.wanted = wanted
        self.streams: dict[str, spdy.Stream] = {}
        self.ready = trio.Event()

    async def on_stream(self, stream: spdy.Stream) -> None:
        kind = stream.header("streamtype") or ""
        if kind not in self.wanted or kind in self.streams:
            await stream.reset(spdy.PROTOCOL_ERROR)
            return
        await stream.reply()
        self.streams[kind] = stream
        if set(self.streams) == self.wanted:
            self.ready.set()


async def serve_spdy(api: Any, ctx: RequestContext, namespace: str, name: str, request: Any, *,
                     speed: float = 1.0, shutting_down: trio.Event | None = None, attach: bool = False) -> None:
    """Serve ``pods/NAME/exec`` on a connection asking for ``Upgrade: SPDY/3.1`` (an
    :class:`~k8semu.server.upgrade.UpgradeRequest`), as kube-apiserver and the kubelet do.

    Refusals are ordinary responses: the ``Status`` of :func:`check_exec`; the kubelet's plain
    text (500 ``container not found ("c")``; 400 without ``X-Stream-Protocol-Version``; 403
    ``unable to upgrade: unable to negotiate protocol: client supports [...], server accepts
    [v4.channel.k8s.io]``). ``speed`` converts the wall-clock timeouts to virtual seconds.
    """
    from ..node import behaviour

    query = parse_qs(urlsplit(request.target).query, keep_blank_values=True)
    try:
        options = attrs.evolve(ExecOptions.from_query(query), attach=attach)
        pod, cname = check_exec(api, ctx, namespace, name, options)
    except errors.StatusError as e:
        return await request.respond(e.code, orjson.dumps(e.status()), "application/json")
    options = attrs.evolve(options, container=cname)
    offered = request.values("x-stream-protocol-version")
    streams = _SpdyStreams({"error"} | {k for k, on in (("stdin", options.stdin), ("stdout", options.stdout),
                                                        ("stderr", options.stderr), ("resize", options.tty)) if on})

    async def output(fd: int, data: bytes) -> None:
        await streams.streams["stdout" if fd == STDOUT else "stderr"].send_all(data)

    try:
        process = Process(api, pod, cname, options, output)
        if not offered:
            raise KubeletError(400, "unable to upgrade: X-Stream-Protocol-Version is required")
        if V4 not in offered:
            raise KubeletError(403, f"unable to upgrade: unable to negotiate protocol: client supports "
                                    f"{_go_list(offered)}, server accepts {_go_list([V4])}")
    except KubeletError as e:
        extra = [("X-Accepted-Stream-Protocol-Versions", V4)] if e.code == 403 else []
        return await request.respond(e.code, e.message.encode(), "text/plain; charset=utf-8", extra)
    transport = await request.switch([("Connection", "Upgrade"), ("Upgrade", "SPDY/3.1"),
                                      ("X-Stream-Protocol-Version", V4)])

    async def send(data: bytes) -> None:
        try:
            await transport.send(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise spdy.StreamReset(spdy.CANCEL) from None

    session = spdy.Session(send, streams.on_stream)
    try:
        async with trio.open_nursery() as nursery:
            async def run_session() -> None:
                await session.run(transport.receive)
                nursery.cancel_scope.cancel()  # the client closed the connection

            async def stop() -> None:
                if shutting_down is not None:
                    await shutting_down.wait()
                    nursery.cancel_scope.cancel()

            nursery.start_soon(run_session)
            nursery.start_soon(stop)
            with trio.move_on_after(_STREAM_CREATION_TIMEOUT * speed):
                await streams.ready.wait()
            if not streams.ready.is_set():  # the kubelet: "timed out waiting for client to create streams"
                nursery.cancel_scope.cancel()
                return
            if "stdin" in streams.streams:
                nursery.start_soon(_pump_stdin, streams.streams["stdin"], process)
            if "resize" in streams.streams:
                nursery.start_soon(_drain, streams.streams["resize"])
            try:
                try:
                    outcome: int | str = await process.run()
                except behaviour.ExecNotFound as e:
                    outcome = str(e)
                error = streams.streams["error"]
                await error.send_all(orjson.dumps(final_status(outcome, options.command, process.exec_id,
                                                               translated=False)))
                for kind in ("error", "stdout", "stderr"):
                    if kind in streams.streams:
                        await streams.streams[kind].close()
                await session.goaway()
            except spdy.StreamReset:  # the client reset a stream or went away
                nursery.cancel_scope.cancel()
                return
            # client-go closes the connection once it has read everything (run_session then ends this)
            await trio.sleep(_CLOSE_WAIT * speed)
            nursery.cancel_scope.cancel()
    finally:
        await transport.aclose()


async def _pump_stdin(stream: spdy.Stream, process: Process) -> None:
    try:
        while data := await stream.receive_some():
            await process.feed(data)
    except spdy.StreamReset:
        pass
    process.close_stdin()


async def _drain(stream: spdy.Stream) -> None:
    try:
        while await stream.receive_some():
            pass
    except spdy.StreamReset:
        pass
