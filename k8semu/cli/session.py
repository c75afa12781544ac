"""Opening the cluster file and running its components for one command.

Every ``k8semu`` command is a short session: open the cluster's log (creating
a default cluster first where the command may), start every component in
virtual time (:func:`~k8semu.sim.runtime.run_cluster` with
:func:`~k8semu.sim.components.default_factories`), do the command's work as
the user ``kubernetes-admin``, let the cluster settle (or run for
``--for``), and close the log. Nothing outlives the process but the log.

Settling has a limit, :data:`SETTLE_LIMIT` (10 minutes of virtual time,
usually a second or two of wall time). A cluster that never settles (a
container that logs every few seconds, a probe that keeps flipping, a crash
loop whose back-off stays short) makes a command run that long; it then says
so on stderr, with what is still changing (:func:`still_changing`), e.g.
``Warning: the cluster did not settle within 10m0s of virtual time (…); still
changing: pod/looper (kubelet/node-2)``. Its exit code does not change.
``--for DURATION`` runs exactly DURATION instead.

Each session is bracketed in the log by two ``{"type":"SESSION",…}`` marks
(start: revision, virtual time, command line, how the session ends; end:
revision and virtual time reached), so ``k8semu replay`` can re-execute the
log exactly (``docs/replay.md``).

One writer at a time: a command that writes to the log holds an exclusive
advisory lock (:func:`lock_cluster`: ``fcntl.flock`` on ``cluster.log.lock``
beside the cluster file, which names the holder's pid and command) from
opening the log to closing it, and ``k8semu serve`` holds it for its whole
life. A second writer waits for it, saying once on stderr ``waiting for
k8semu (pid N: apply -f web.yaml) to finish with .k8semu/cluster.log``, and
reads the log only once it holds the lock; when the holder is ``k8semu
serve`` it fails at once instead (:class:`ClusterBusy`: use kubectl). Read-only
opens take no lock: they read the prefix of the file written so far, and a
last line still being written is dropped without a word.

A cluster path that cannot be one is a one-line error naming it as it was given, before
anything is created or locked (:class:`PathError`, :func:`check_cluster_path`):
``--cluster /tmp/x: is a directory, not a cluster log file``, ``--cluster /etc/passwd/x:
/etc/passwd is not a directory``, ``--cluster /x/c.log: permission denied``; any other
OSError reaches the user as ``PATH: reason`` (:func:`os_error_text`, by
:func:`k8semu.cli.main.main`), never as ``[Errno 13] …``.

Ctrl-C (SIGINT) or SIGTERM during a session stops it cleanly
(:class:`SessionInterrupted`): at the end of the virtual instant being run, so
the records written stay and the end mark (``"interrupted": true``, the
virtual time and revision reached) lets ``k8semu replay`` re-run the session
to exactly that point; the command then prints ``k8semu: interrupted at
2h13m5s (revision 4321)`` and exits 130 (143 for SIGTERM). A second signal
ends the process at once, as the signal's default action does.
"""

from __future__ import annotations

import argparse
import fcntl
import math
import os
import signal
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Any, Awaitable, Callable, TypeVar

from ..sim.cluster import DEFAULT_CLUSTER_PATH, Cluster
from ..sim.runtime import Runtime, run_cluster
from ..store.snapshot import snapshot_path

__all__ = ["cluster_path", "cluster_label", "check_cluster_path", "PathError", "cluster_os_error",
           "os_error_text", "os_error_reason", "open_log_file",
           "open_cluster", "open_cluster_at", "run_session", "still_changing",
           "SETTLE_LIMIT", "SETTLE_HORIZON", "WAIT_LIMIT", "lock_cluster", "lock_path", "lock_holder", "ClusterLock",
           "ClusterBusy", "SessionInterrupted"]

T = TypeVar("T")

#: How long (virtual seconds) a command waits for the cluster to settle before reporting.
SETTLE_LIMIT = 600.0
#: Settled = no component has real work due within this many virtual seconds
#: (:meth:`k8semu.sim.runtime.Runtime.settle`'s horizon).
SETTLE_HORIZON = 30.0
#: kubectl's ``--timeout=0`` (delete, drain, rollout status) waits forever; a session stops
#: waiting after this many virtual seconds, saying ``timed out waiting for the condition``.
WAIT_LIMIT = 3600.0
#: At most this many lines of "still changing" in the not-settled warning.
_CHANGING_SHOWN = 8
#: Writes that are a living cluster's pulse, not a change: leases, events, a kubelet's own Node status.
_PULSE_RESOURCES = ("leases.coordination.k8s.io", "events", "events.events.k8s.io")


def cluster_path(args: argparse.Namespace) -> Path:
    """``--cluster``, else ``$K8SEMU_CLUSTER``, else ``./.k8semu/cluster.log``."""
    return Path(getattr(args, "cluster", None) or os.environ.get("K8SEMU_CLUSTER") or DEFAULT_CLUSTER_PATH)


class PathError(ValueError):
    """A file named on the command line that cannot be used, as one line naming it as the user gave
    it (main() prints ``error: …``, exit 1): ``--cluster /tmp/x: is a directory, not a cluster
    log file``, ``--against /tmp/a.log: permission denied``."""


def cluster_label(args: argparse.Namespace, path: Path | None = None) -> str:
    """How an error names the cluster file: ``--cluster PATH``, ``K8SEMU_CLUSTER=PATH`` or ``PATH``
    (the default), after where the path came from (:func:`cluster_path`)."""
    path = cluster_path(args) if path is None else path
    if getattr(args, "cluster", None):
        return f"--cluster {path}"
    if os.environ.get("K8SEMU_CLUSTER"):
        return f"K8SEMU_CLUSTER={path}"
    return str(path)


def os_error_text(e: OSError) -> str:
    """An OSError as one readable line: ``/tmp/x: permission denied`` (its file and its strerror,
    lower-cased), never Python's ``[Errno 13] Permission denied: '/tmp/x'``. An OSError made
    with a message of k8semu's own (no errno) is that message."""
    if e.strerror is None or e.errno is None:
        return str(e)
    why = os_error_reason(e)
    if e.filename is None:
        return why
    name = os.fsdecode(e.filename) if isinstance(e.filename, (str, bytes, os.PathLike)) else str(e.filename)
    if e.filename2 is not None:
        return f"{name} -> {os.fsdecode(e.filename2)}: {why}"
    return f"{name}: {why}"


def os_error_reason(e: OSError) -> str:
    """``permission denied``: an OSError's strerror in a sentence (its message when it has none)."""
    if e.strerror is None or e.errno is None:
        return str(e)
    return e.strerror[:1].lower() + e.strerror[1:]


def check_cluster_path(args: argparse.Namespace, path: Path | None = None) -> None:
    """Refuse a cluster path that cannot be a cluster log file, before anything is created or locked.

    Raises:
        PathError: a directory (``--cluster /tmp/x: is a directory, not a cluster log
            file``), a device or FIFO (``--cluster /dev/null: is a special file, not a cluster
            log file``), a path under a file (``--cluster /etc/passwd/x: /etc/passwd is not a
            directory``), a directory on the way that may not be searched (``--cluster
            /secret/c.log: permission denied``), or another error of ``stat``. A path that does
            not exist (in a directory that does, or will be made) passes.
    """
    path = cluster_path(args) if path is None else path
    label = cluster_label(args, path)
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        _check_ancestors(label, path)
        return
    except OSError as e:
        raise PathError(f"{label}: {os_error_reason(e)}") from None
    if stat.S_ISDIR(st.st_mode):
        raise PathError(f"{label}: is a directory, not a cluster log file")
    if not stat.S_ISREG(st.st_mode):  # a device, a FIFO (reading one could hang), a socket
        raise PathError(f"{label}: is a special file, not a cluster log file")


def _check_ancestors(label: str, path: Path) -> None:
    """The nearest existing ancestor of a missing cluster path must be a directory (see
    :func:`check_cluster_path`)."""
    for parent in Path(os.path.abspath(path)).parents:
        try:
            st = os.stat(parent)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as e:
            raise PathError(f"{label}: {os_error_reason(e)}") from None
        if not stat.S_ISDIR(st.st_mode):
            shown = parent if path.is_absolute() else os.path.relpath(parent)
            raise PathError(f"{label}: {shown} is not a directory")
        return


def cluster_os_error(args: argparse.Namespace, path: Path, e: OSError) -> OSError | PathError:
    """An OSError of opening, locking, creating or deleting the cluster file ``path``, as one line
    naming it (``--cluster /x/c.log: permission denied``; ``--cluster /x/c.log: cannot create its
    lock file /x/c.log.lock: permission denied``; another file on the way, e.g. a directory
    being made, after it); one with a message of k8semu's own (no errno) as it is."""
    if e.strerror is None or e.errno is None:
        return e
    label = cluster_label(args, path)
    why = os_error_reason(e)
    name = os.fsdecode(e.filename) if isinstance(e.filename, (str, bytes, os.PathLike)) else None
    if name is None or os.path.abspath(name) == os.path.abspath(path):
        return PathError(f"{label}: {why}")
    if os.path.realpath(name) == str(lock_path(path)):
        return PathError(f"{label}: cannot create its lock file {name}: {why}")
    return PathError(f"{label}: {name}: {why}")


def open_log_file(path: str | os.PathLike[str], label: str | None = None) -> Any:
    """A log named on the command line (``diff --against LOG``, ``bisect LOG``), opened read-only
    (:func:`~k8semu.timeline.view.open_log`).

    Raises:
        PathError: a directory (``--against /tmp/x: is a directory, not a cluster log
            file``) or a file that cannot be read (``--against /tmp/x.log: permission denied``,
            ``… no such file or directory``), named as ``label`` (default: the path).
        LogFormatError: as :func:`~k8semu.timeline.view.open_log`.
    """
    from ..timeline.view import open_log

    label = str(path) if label is None else label
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = stat.S_IFREG  # opening it says what is wrong
    if stat.S_ISDIR(mode):
        raise PathError(f"{label}: is a directory, not a cluster log file")
    if not stat.S_ISREG(mode):
        raise PathError(f"{label}: is a special file, not a cluster log file")
    try:
        return open_log(path)
    except OSError as e:
        if e.strerror is None or e.errno is None:
            raise
        raise PathError(f"{label}: {os_error_reason(e)}") from None


def open_cluster(args: argparse.Namespace, *, create: bool = False, read_only: bool = False,
                 serve: dict[str, Any] | None = None, epoch: str | None = None) -> Cluster:
    """Open the cluster file (creating a default cluster when ``create`` and it is missing).

    A writable open first takes the cluster's writer lock (:func:`lock_cluster`;
    waiting for another writer), then reads the log, so it sees every write the
    previous holder made; :meth:`Cluster.close` releases the lock. ``serve``
    (``{"kubeconfig": PATH}``) marks the holder as ``k8semu serve``; ``epoch`` (an
    RFC 3339 time) is where a cluster created here starts its clock. A read-only
    open takes no lock: it reads what has been written so far, dropping a last
    line still being written without a word.

    Raises:
        FileNotFoundError: no cluster there and ``create`` is False.
        LogFormatError: the file is damaged.
        ClusterBusy: the cluster is being served by ``k8semu serve`` (writable opens).
        PathError: a path that cannot be a cluster file (:func:`check_cluster_path`), or
            one that cannot be read, written or created (``--cluster /x/c.log: permission
            denied``); nothing was created or written then.
    """
    path = cluster_path(args)
    check_cluster_path(args, path)
    try:
        return _open_cluster(args, path, create=create, read_only=read_only, serve=serve, epoch=epoch)
    except OSError as e:
        raise cluster_os_error(args, path, e) from None  # "no cluster at …" stays as it is


def _open_cluster(args: argparse.Namespace, path: Path, *, create: bool, read_only: bool,
                  serve: dict[str, Any] | None, epoch: str | None) -> Cluster:
    """:func:`open_cluster` once the path was checked (its OSErrors are raw)."""
    if not path.exists() and (read_only or not create):
        raise FileNotFoundError(
            f'no cluster at "{path}": create one with "k8semu cluster create" or "k8semu apply -f FILE"'
        )
    if read_only:
        return _open_read_only(path)
    lock = lock_cluster(path, serve=serve is not None, kubeconfig=(serve or {}).get("kubeconfig"))
    try:
        if not path.exists():  # looked at again with the lock held: another writer may have created it
            if not create:
                raise FileNotFoundError(f'no cluster at "{path}": create one with "k8semu cluster create" '
                                        f'or "k8semu apply -f FILE"')
            config = None
            if epoch is not None:
                from ..sim.config import ClusterConfig

                config = {**ClusterConfig.default().to_dict(), "epoch": epoch}
            cluster = Cluster.create(path, config=config, kubeadm_addons=True)
            cluster.opened_as = "create"  # the session's RNG continues from the bootstrap (docs/replay.md)
        else:
            cluster = Cluster.open(path)
            if cluster.log.torn_line:
                print(f"warning: {path}:{cluster.log.torn_line}: dropped a torn last line (an interrupted write)",
                      file=sys.stderr)
    except BaseException:
        lock.release()
        raise
    close = cluster.close

    def close_and_unlock() -> None:
        try:
            close()
            if getattr(cluster, "remove_on_close", False):  # made for a dry run: leave nothing behind
                for leftover in (path, snapshot_path(path)):
                    leftover.unlink(missing_ok=True)
        finally:
            lock.release()
            if getattr(cluster, "remove_on_close", False):
                lock_path(path).unlink(missing_ok=True)

    cluster.close = close_and_unlock  # type: ignore[method-assign]  # the lock lives as long as the open log
    if serve is None:  # the commands' own requests: their warnings on stderr, as kubectl prints them
        from .output import ServerWarnings

        cluster.api.default_warnings = ServerWarnings()
    return cluster


def _open_read_only(path: Path) -> Cluster:
    """The cluster file opened read-only, as written so far (no lock: a writer may be appending).

    A last line being written is a torn line to the reader: dropped silently
    (the writer finishes it). A writer that cuts a crashed process's torn line
    while this reads can make the read see a damaged line: when the file
    changed during a read that failed, it is read again (three tries). Closing
    it writes the log's snapshot when one is due
    (:attr:`~k8semu.store.EventLog.snapshot_on_close`).
    """
    from ..store import LogFormatError

    for attempt in range(3):
        before = _file_state(path)
        try:
            cluster = Cluster.open(path, read_only=True)
            # a long log no writer left a snapshot for (a `serve` compacts its memory, so it
            # cannot) is parsed in full once: the next read starts from the snapshot
            cluster.log.snapshot_on_close = True
            return cluster
        except LogFormatError:
            if attempt == 2 or _file_state(path) == before:
                raise
    raise AssertionError("unreachable")


def _file_state(path: Path) -> tuple[int, int, int] | None:
    """(inode, size, mtime) of ``path``, None if it is gone: whether it changed meanwhile."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def open_cluster_at(args: argparse.Namespace) -> Any:
    """What the read commands' ``--at`` opens: the cluster file read-only, or the cluster as it was then.

    Without ``args.at`` this is :func:`open_cluster` (read-only); with it, a
    :class:`~k8semu.timeline.view.PastCluster` at that revision or virtual time
    (:func:`~k8semu.timeline.view.resolve_point`). A point past the end of the
    log is an error instead of quietly showing the head, as etcd refuses a read
    at a future revision (``mvcc: required revision is a future revision``).

    Raises:
        PointError (a ValueError, printed as one ``error:`` line, exit 1): a
            revision outside the log (``revision 9 is outside the log (1..8)``),
            a time after its last record (``--at 1h: the log ends at revision 8
            (virtual time 4m12s)``), an empty one (``--at is empty: …``), a
            negative time, or text that is neither.
        FileNotFoundError, LogFormatError: as :func:`open_cluster`.
    """
    from ..timeline.view import PastCluster, resolve_point

    cluster = open_cluster(args, read_only=True)
    at = getattr(args, "at", None)
    if at is None:
        return cluster
    try:
        rev, t = resolve_point(cluster.log, at, strict=True, flag="--at")  # the one rule: '' is an error too
        return PastCluster(cluster.log, rev, t)
    except BaseException:
        cluster.close()
        raise


def run_session(
    cluster: Cluster,
    body: Callable[[Runtime], Awaitable[T]],
    *,
    settle: bool = True,
    run_for: float | None = None,
    limit: float = SETTLE_LIMIT,
    discard: bool = False,
    failed: Callable[[], bool] | None = None,
) -> tuple[T, bool]:
    """Run ``body(runtime)`` with every component running, then settle (or run ``run_for`` seconds).

    When settling runs out of ``limit``, a warning on stderr says so and what
    is still changing (:func:`still_changing`); the exit code is the command's.

    A session that changed nothing leaves the file byte for byte as it was
    (:meth:`~k8semu.store.EventLog.rollback`: its marks and whatever the
    components wrote meanwhile are cut off, and the log is closed): one with
    ``discard`` (a dry run); and one whose body failed — raised, or returned
    with ``failed()`` true — at the virtual instant it started, before any
    request of the user's succeeded (``delete pod nope``, ``scale
    deployment/nope``, ``delete -f missing.yaml``), as such a kubectl command
    changes nothing on a real cluster. A body that failed after waiting keeps
    its session: the cluster's time passed.

    Returns:
        ``(body's result, settled)`` — ``settled`` is False when ``limit`` ran
        out first or, with ``run_for``, when the cluster was still changing at
        the end of the run (work due within :data:`SETTLE_HORIZON`).

    SIGINT or SIGTERM during the session stops it at the end of the virtual
    instant being run (see the module docstring): the end mark then says
    ``"interrupted": true`` and the signal, and :class:`SessionInterrupted`
    is raised once the mark is written.

    Raises:
        ValueError: a negative ``run_for`` (before anything is written).
        SessionInterrupted: a signal stopped the session (or arrived while it ran).
    """
    import trio

    from ..sim.components import default_factories
    from .durations import go_duration

    if run_for is not None and run_for < 0:
        raise ValueError(f'invalid duration "{go_duration(run_for)}": must not be negative')
    log = cluster.log
    mode: dict = {"settle": settle, "limit": limit} if run_for is None else {"for": run_for}
    # how the API server's RNG was seeded: "reopen" (from seed and this revision),
    # "create" (the cluster was created by this command) or "continue" (an earlier session)
    rng = "continue" if getattr(cluster, "sessions_run", 0) else getattr(cluster, "opened_as", "reopen")
    cluster.sessions_run = getattr(cluster, "sessions_run", 0) + 1
    changing: list[str] = []
    stopper = _StopOnSignal(cluster.clock)
    savepoint = log.savepoint()
    started_at = cluster.time
    user_writes = _UserWrites(log)
    outcome: dict[str, Any] = {}

    def changed_nothing() -> bool:
        return not user_writes.count and outcome.get("failed_at") == started_at

    async def main(rt: Runtime) -> tuple[T | None, bool, bool]:
        stopper.token = trio.lowlevel.current_trio_token()
        with trio.CancelScope() as scope:
            stopper.scope = scope
            try:
                result = await body(rt)
            except Exception:
                outcome["failed_at"] = rt.now
                raise
            ok = quiet = True
            if failed is not None and failed():
                outcome["failed_at"] = rt.now
            if discard or changed_nothing():
                stopper.scope = None
                return result, False, False
            if run_for is not None:
                await rt.advance(run_for)
                wake = rt.next_wakeup()
                quiet = wake is None or wake > rt.now + SETTLE_HORIZON
            elif settle:
                ok = quiet = await rt.settle(horizon=SETTLE_HORIZON, limit=limit)
                if not ok:
                    changing.extend(still_changing(rt))
            stopper.scope = None
            return result, ok, quiet
        stopper.scope = None
        return None, False, False  # stopped by a signal

    stopper.install()
    try:
        log.mark({"type": "SESSION", "event": "start", "rev": log.revision, "t": cluster.time,
                  "argv": [os.path.basename(sys.argv[0])] + list(sys.argv[1:]), "rng": rng, **mode})
        try:
            result, ok, quiet = run_cluster(cluster, main, default_factories(cluster))
        except BaseException:
            if savepoint is not None and changed_nothing() and stopper.signum is None:
                log.rollback(savepoint)
            raise
        if savepoint is not None and (discard or changed_nothing()) and stopper.signum is None:
            log.rollback(savepoint)
            if discard and getattr(cluster, "opened_as", None) == "create":
                cluster.remove_on_close = True  # a dry run does not leave a cluster it had to create
            return result, quiet  # type: ignore[return-value]
        end: dict[str, Any] = {"type": "SESSION", "event": "end", "rev": log.revision, "t": cluster.time,
                               "settled": ok}
        if stopper.stopped:
            end.update(settled=False, interrupted=True, signal=signal.Signals(stopper.signum).name)
            if stopper.mid_instant:
                end["mid_instant"] = True
        log.mark(end)
    finally:
        stopper.uninstall()
        user_writes.stop()
    if stopper.signum is not None:
        raise SessionInterrupted(stopper.signum, cluster.time, log.revision)
    if not ok:
        _warn_not_settled(limit, changing)
    return result, quiet  # type: ignore[return-value]


class _UserWrites:
    """Counts the records the CLI's requests (a default :class:`RequestContext`: the user
    ``kubernetes-admin``) write while installed."""

    def __init__(self, log: Any) -> None:
        from ..api.apiserver import RequestContext

        self.count = 0
        self._actor = RequestContext().log_actor
        self._log = log
        log.add_listener(self._seen)

    def _seen(self, rec: Any) -> None:
        if rec.actor == self._actor:
            self.count += 1

    def stop(self) -> None:
        self._log.remove_listener(self._seen)


class SessionInterrupted(KeyboardInterrupt):
    """A session stopped by SIGINT or SIGTERM, its end mark written (:func:`run_session`).

    A ``KeyboardInterrupt``, so no ``except Exception`` on the way swallows it;
    :func:`k8semu.cli.main.main` prints :meth:`message` and returns :attr:`exit_code`.

    Attributes:
        signum: the signal (``signal.SIGINT``…).
        time: the virtual time the session reached (seconds).
        revision: the log's revision then.
    """

    def __init__(self, signum: int, time: float, revision: int) -> None:
        super().__init__(signum, time, revision)
        self.signum = int(signum)
        self.time = time
        self.revision = revision

    @property
    def exit_code(self) -> int:
        """128 + the signal's number, as a shell reports a command a signal ended: 130 for SIGINT."""
        return 128 + self.signum

    def message(self) -> str:
        """``k8semu: interrupted at 2h13m5s (revision 4321)``."""
        from .durations import go_duration

        return f"k8semu: interrupted at {go_duration(self.time)} (revision {self.revision})"


#: wall seconds a signal waits for the virtual instant being run to end (see :class:`_StopOnSignal`)
STOP_GRACE = 3.0


class _StopOnSignal:
    """Stops a session cleanly on SIGINT/SIGTERM, at the end of the virtual instant being run.

    While installed (main thread only), the signals set a flag and nothing
    else: Trio's own wake-up descriptor is switched off for the run, so a
    signal does not wake a Trio task and the instant's work is scheduled
    exactly as without it. The flag is acted on in the cluster clock's hook
    that moves virtual time (``deadline_to_sleep_time``): when every task is
    blocked and the clock is about to jump from ``t`` to the next deadline
    ``t'``, the session's cancel scope gets a deadline ``e`` with
    ``t < e < t'`` (the next whole second, tenth or millisecond after ``t``
    that comes before ``t'``) and the clock jumps there instead. So the run
    ends with every write of instant ``t`` made and none of ``t'``: the state
    a run that ends at virtual time ``e`` — which ``k8semu replay`` does for a
    session with that end mark — reaches too. A second signal ends the process
    at once (the signal's default action).

    An instant can take long (a Deployment of 100,000 replicas creates them all
    at one virtual instant): if it has not ended :data:`STOP_GRACE` wall seconds
    after the signal, the session stops where it is, saying so on stderr (``mid_instant`` in the end mark, the revision it
    reached): every record written stays, and ``k8semu replay`` verifies the
    log up to that session, which it cannot repeat (where the run stopped
    depended on the wall clock).
    """

    def __init__(self, clock: Any) -> None:
        self.clock = clock
        self.signum: int | None = None
        self.scope: Any = None
        self.token: Any = None  # the run's TrioToken (re-enters the run loop from the grace alarm)
        self.stopped = False
        self.mid_instant = False
        self._old: dict[int, Any] = {}

    def install(self) -> None:
        """Take SIGINT and SIGTERM and hook the clock (a no-op outside the main thread)."""
        if threading.current_thread() is not threading.main_thread() or not self.clock.is_virtual:
            return
        for signum in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(signum) is not signal.SIG_IGN:  # e.g. SIGINT of a shell's background job
                self._old[signum] = signal.signal(signum, self._on_signal)
        if not self._old:
            return
        self.clock.deadline_to_sleep_time = self._deadline_to_sleep_time
        self.clock.start_clock = self._start_clock

    def uninstall(self) -> None:
        """Give the signals and the clock back as they were."""
        if not self._old:
            return
        if signal.SIGALRM in self._old:  # the grace alarm was armed
            signal.setitimer(signal.ITIMER_REAL, 0)
        for signum, handler in self._old.items():
            signal.signal(signum, handler)
        self._old = {}
        for hook in ("deadline_to_sleep_time", "start_clock"):
            self.clock.__dict__.pop(hook, None)

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self.signum is not None:  # the second one: end now, as without k8semu's handler
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        self.signum = signum
        self._old[signal.SIGALRM] = signal.signal(signal.SIGALRM, self._on_grace_over)
        signal.setitimer(signal.ITIMER_REAL, STOP_GRACE)

    def _on_grace_over(self, signum: int, frame: Any) -> None:
        if not self.stopped and self.token is not None:
            try:
                self.token.run_sync_soon(self._stop_now)  # signal-safe: runs in the Trio loop
            except RuntimeError:  # the run has ended
                pass

    def _stop_now(self) -> None:
        if not self.stopped and self.scope is not None:
            from .durations import go_duration

            self.stopped = self.mid_instant = True
            self.scope.cancel()
            print(f"k8semu: virtual instant {go_duration(self.clock.now())} still running {STOP_GRACE:g}s after "
                  f"the signal: stopping in the middle of it (replay verifies the log up to this command)",
                  file=sys.stderr)

    def _start_clock(self) -> None:
        # trio.run has just pointed the signal wake-up descriptor at its own socket; a
        # signal would then wake one of its tasks and reorder the instant's work
        signal.set_wakeup_fd(-1)
        type(self.clock).start_clock(self.clock)

    def _deadline_to_sleep_time(self, deadline: float) -> float:
        from ..sim.clock import _virtual_sleep_time

        clock = self.clock
        if self.signum is not None and self.scope is not None and not self.stopped:
            now = clock.now()
            if deadline > now and not math.isinf(deadline) and _virtual_sleep_time(clock, deadline) is None:
                self.stopped = True
                end = _stop_time(now, deadline)
                if end is None:  # no float between two adjacent instants: stop right here
                    self.scope.cancel()
                    return 0.0
                self.scope.deadline = end
                deadline = end
        return type(clock).deadline_to_sleep_time(clock, deadline)


def _stop_time(now: float, after: float) -> float | None:
    """A round virtual time strictly between ``now`` and ``after`` (see :class:`_StopOnSignal`), or None."""
    for step, digits in ((1.0, 0), (0.1, 1), (0.001, 3)):
        t = round((math.floor(now / step) + 1) * step, digits)
        if now < t < after:
            return t
    mid = (now + after) / 2
    return mid if now < mid < after else None


def _warn_not_settled(limit: float, changing: list[str]) -> None:
    """The stderr warning of a session whose settling ran out of ``limit``."""
    from .durations import go_duration

    head = (f"Warning: the cluster did not settle within {go_duration(limit)} of virtual time "
            f"(the limit of a command; --for DURATION runs a fixed span instead)")
    if not changing:
        print(head, file=sys.stderr)
    elif len(changing) <= 2:
        print(f"{head}; still changing: {', '.join(changing)}", file=sys.stderr)
    else:
        print(f"{head}; still changing:", file=sys.stderr)
        for line in changing[:_CHANGING_SHOWN]:
            print(f"  {line}", file=sys.stderr)
        if len(changing) > _CHANGING_SHOWN:
            print(f"  … and {len(changing) - _CHANGING_SHOWN} more", file=sys.stderr)


def still_changing(rt: Runtime, horizon: float = SETTLE_HORIZON) -> list[str]:
    """What keeps the cluster from settling, one ``what (who)`` string each, most telling first.

    Two sources, merged per object:

    - components with real work due within ``horizon`` (what
      :meth:`~k8semu.sim.runtime.Runtime.settle` waits for): for a kubelet,
      each pod whose containers, probes or back-offs are due
      (``pod/looper (kubelet/node-2)``); a component with other work due
      (``deployment-controller``: a resync, a retry) is named only when
      nothing else is found;
    - objects written during the last ``horizon`` of virtual time
      (``pod/crasher (kubelet/node-1)``), leaving out a living cluster's pulse:
      Leases, Events, and kubelets' own Node status.

    Objects outside ``default`` carry their namespace (``pod/x -n kube-system``).
    The order is deterministic: components by name, then writes oldest first.
    """
    now = rt.now
    found: dict[str, list[str]] = {}
    busy: list[str] = []

    def note(what: str, who: str) -> None:
        whos = found.setdefault(what, [])
        if who and who not in whos:
            whos.append(who)

    for name in sorted(rt.components):
        comp = rt.components[name]
        wake = comp.next_wakeup()
        if wake is None or wake > now + horizon:
            continue
        pods = []
        for worker in (getattr(comp, "workers", None) or {}).values():
            try:
                due = [t for t, significant in worker.due_times() if significant]
                meta = worker.pod["metadata"]
            except (AttributeError, KeyError, TypeError):
                continue
            if due and min(due) <= now + horizon:
                pods.append(_object_label("pods", meta.get("namespace"), meta.get("name", "")))
        for pod in sorted(pods):
            note(pod, name)
        if not pods:
            busy.append(name)
    log = rt.cluster.log
    recent = []
    rev, floor = log.revision, max(log.compact_revision, 0)
    while rev > floor and len(recent) < 5000:  # newest first, back to the start of the window
        rec = log.record(rev)
        if rec.time < now - horizon:
            break
        recent.append(rec)
        rev -= 1
    for rec in reversed(recent):
        parts = rec.key.split("/")  # "", "registry", resource, [namespace,] name
        if len(parts) < 4 or parts[2] in _PULSE_RESOURCES:
            continue
        resource, ns, name = parts[2], (parts[3] if len(parts) > 4 else None), parts[-1]
        if resource == "nodes" and rec.actor == f"kubelet/{name}":
            continue
        note(_object_label(resource, ns, name), rec.actor)
    if not found:  # a component's own timers (a resync, a retry): named only when nothing else is
        return busy
    return [f"{what} ({', '.join(whos)})" for what, whos in found.items()]


def _object_label(resource: str, namespace: str | None, name: str) -> str:
    """``pod/web-1``, ``deployment.apps/web -n team``: kubectl's TYPE/NAME (+ ``-n NS`` outside default)."""
    from ..api.resources import by_resource
    from .output import display_name

    plural, _, group = resource.partition(".")
    info = by_resource(group, plural)
    label = display_name(info, name) if info is not None else f"{resource}/{name}"
    return label if not namespace or namespace == "default" else f"{label} -n {namespace}"


# ---------------------------------------------------------------------- one writer at a time
#: The command line this process runs (without the program name), as :func:`k8semu.cli.main.main`
#: got it; the lock file names it to a waiting writer. None: ``sys.argv[1:]``.
command_line: list[str] | None = None
#: Seconds between two tries of a waiting writer (the wait is wall time: another process works).
LOCK_POLL = 0.05
#: Polls without a readable holder after which a waiting writer says it waits anyway.
_ANNOUNCE_AFTER = 10


class ClusterBusy(Exception):
    """The cluster is being served by ``k8semu serve``: a writing command fails at once (exit 1)."""


class _Held:
    """This process's hold of one lock file: its descriptor and how many opens share it."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.count = 1


#: lock file (real path) -> this process's hold of it; a process takes a lock once and shares it
#: among its own opens (flock would otherwise make a second open in one process wait for itself)
_HELD: dict[str, _Held] = {}


class ClusterLock:
    """One acquisition of a cluster file's writer lock (:func:`lock_cluster`).

    :meth:`release` is idempotent; the lock is given up when the last
    acquisition in this process is released (the lock file is emptied first,
    so it never names a process that no longer holds it), or when the process
    ends, however it ends (the kernel drops a ``flock`` with its descriptor).
    """

    def __init__(self, key: str) -> None:
        self.key = key
        self.released = False

    def release(self) -> None:
        """Give this acquisition back."""
        if self.released:
            return
        self.released = True
        held = _HELD.get(self.key)
        if held is None:
            return
        held.count -= 1
        if held.count:
            return
        del _HELD[self.key]
        try:
            os.ftruncate(held.fd, 0)
        except OSError:
            pass
        os.close(held.fd)  # drops the flock


def held_locks() -> set[str]:
    """The lock files (real paths) this process holds."""
    return set(_HELD)


def release_locks(keep: set[str] = frozenset()) -> None:  # type: ignore[assignment]
    """Give up every lock this process holds but those in ``keep``, whatever their count."""
    for key in set(_HELD) - set(keep):
        _HELD[key].count = 1
        ClusterLock(key).release()


def lock_path(path: str | os.PathLike[str]) -> Path:
    """The lock file of a cluster file: ``cluster.log.lock`` beside it (beside its target, for a symlink)."""
    real = Path(os.path.realpath(path))
    return real.with_name(real.name + ".lock")


def lock_holder(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """Who the lock file of cluster file ``path`` says holds it: ``{"pid", "command", "serve"[,
    "kubeconfig"]}``, or None (free, being taken, or naming a process that is gone).

    What the file says is meaningful only while its lock is held; a reader that
    finds the lock taken reads it to say whom it waits for.
    """
    import orjson

    try:
        info = orjson.loads(lock_path(path).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(info, dict) or not isinstance(info.get("pid"), int):
        return None
    try:
        os.kill(info["pid"], 0)
    except ProcessLookupError:
        return None  # left by a process killed outright; the lock is someone else's now
    except PermissionError:
        pass
    return info


def lock_cluster(path: str | os.PathLike[str], *, serve: bool = False, kubeconfig: str | None = None) -> ClusterLock:
    """Take the writer lock of cluster file ``path`` (see the module docstring), waiting for it.

    While another process holds it, this polls every :data:`LOCK_POLL` seconds
    and says once on stderr ``waiting for k8semu (pid N: COMMAND) to finish
    with PATH``. Once held, the lock file records this process (pid, command,
    ``serve`` and, for ``k8semu serve``, its ``kubeconfig``).

    Raises:
        ClusterBusy: the holder is (or becomes, while this waits) ``k8semu serve``.
    """
    lp = lock_path(path)
    key = str(lp)
    held = _HELD.get(key)
    if held is not None:
        held.count += 1
        return ClusterLock(key)
    lp.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lp, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        _wait_for_lock(fd, path)
        info: dict[str, Any] = {"pid": os.getpid(), "command": _command_text(), "serve": serve}
        if kubeconfig:
            info["kubeconfig"] = str(kubeconfig)
        import orjson

        os.ftruncate(fd, 0)
        os.pwrite(fd, orjson.dumps(info) + b"\n", 0)
    except BaseException:
        os.close(fd)
        raise
    _HELD[key] = _Held(fd)
    return ClusterLock(key)


def _wait_for_lock(fd: int, path: str | os.PathLike[str]) -> None:
    """Take the flock on ``fd``, polling while another process holds it (see :func:`lock_cluster`)."""
    announced = False
    polls = 0
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        holder = lock_holder(path)
        if holder is not None and holder.get("serve"):
            kubeconfig = holder.get("kubeconfig")
            how = f"export KUBECONFIG={kubeconfig}" if kubeconfig else "the kubeconfig it wrote"
            raise ClusterBusy(f"{path} is being served by k8semu serve (pid {holder['pid']}): use kubectl "
                              f"with its kubeconfig ({how}), or stop the server first")
        polls += 1
        if not announced and (holder is not None or polls >= _ANNOUNCE_AFTER):
            command = str(holder.get("command", "")) if holder else ""
            if len(command) > 60:
                command = command[:59] + "…"
            who = f"k8semu (pid {holder['pid']}: {command})" if holder else "another k8semu"
            print(f"waiting for {who} to finish with {path}", file=sys.stderr, flush=True)
            announced = True
        time.sleep(LOCK_POLL)


def _command_text() -> str:
    """The running command for the lock file: ``apply -f web.yaml`` (without ``--cluster PATH``)."""
    argv = list(command_line if command_line is not None else sys.argv[1:])
    words: list[str] = []
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word == "--cluster":
            skip = True
        elif not word.startswith("--cluster="):
            words.append(word)
    return " ".join(words)
