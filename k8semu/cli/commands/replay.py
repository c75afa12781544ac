"""``k8semu replay LOG``: re-execute a recorded log and check every output, record by record.

Prints ``identical (N records)``, or the first divergent revision with both
versions and the actor (exit 1; a last ``note:`` line when it lies in a
session killed outright after its command's last recorded request and wait).
A session killed outright (no end mark) is replayed up to its last record. ``--until REVISION|DURATION --out PATH``
stops there and writes the re-executed cluster to PATH (usable with
``--cluster PATH`` by every other command). ``--fork-at REVISION --out
NEW.log [-f MANIFEST]… [--skip REV,…]`` continues from that point with other
manifests applied and/or recorded inputs left out (e.g. a fault), re-issuing
the later recorded inputs; compare with ``k8semu diff``. A manifest document
the forked cluster refuses is reported (one line each, naming its file) and
nothing is written (exit 1); a ``--skip`` value that is not a recorded input
after the fork point is a one-line error, as are a ``--until`` / ``--fork-at`` point
that is empty or after the end of the log (the rule every command's points follow:
:func:`~k8semu.timeline.view.resolve_point`, strictly) and ``--force`` without
``--out``. ``--out`` never overwrites the input
log or a cluster log another k8semu command holds open, nor an existing file
without ``--force`` (:func:`~k8semu.timeline.rerun.check_output`). An imported log
(``k8semu import``) is re-enacted instead, with a report of where k8semu's
components differed from the recorded ones. See ``docs/replay.md``.

Sessions run by ``k8semu serve`` (marked ``"serve": true``) ran in real time,
so they cannot be re-executed identically: a replay (or fork) that would
have to run one is refused with one line naming its revisions, and the
tools that only read the log (history, diff, ``--at``, timeline, bisect)
work on it; ``--until`` a revision before it verifies what came before.
"""

from __future__ import annotations

import argparse
import sys
import time

from ..output import die


def register(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("replay", help="re-execute a log and verify every record (or fork it)")
    r.add_argument("log", metavar="LOG")
    r.add_argument("--until", metavar="REVISION|DURATION", help="stop at this point")
    r.add_argument("--out", metavar="PATH", help="with --until / --fork-at: the cluster file to write")
    r.add_argument("--fork-at", metavar="REVISION|DURATION", help="continue differently from this point")
    r.add_argument("-f", "--filename", action="append", default=[], help="with --fork-at: manifests to apply")
    r.add_argument("--skip", default="", metavar="REV[,REV…]", help="with --fork-at: recorded inputs to leave out")
    r.add_argument("--force", action="store_true", help="with --out: replace an existing file")
    r.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ...api.manifest import ManifestError
    from ...timeline import fork, open_log, replay, resolve_point, sessions_of, write_log
    from ...timeline.importers import reenact
    from ...timeline.rerun import ForkRefused, check_output

    from ...timeline.view import check_point_text

    if args.fork_at is None and (args.filename or args.skip):
        return die(f"{'-f' if args.filename else '--skip'} needs --fork-at")
    if args.out is not None and args.until is None and args.fork_at is None:
        return die("--out needs --until or --fork-at")
    if args.force and args.out is None:
        return die("--force needs --out")
    for flag, text in (("--until", args.until), ("--fork-at", args.fork_at)):
        if text is not None:
            check_point_text(text, flag)  # the one rule for points: '' is an error, not "the whole log"
    skip: set[int] = set()
    for x in (x.strip() for x in args.skip.split(",")):
        if x:
            try:
                skip.add(int(x))
            except ValueError:
                return die(f"--skip {x}: not a revision (an integer)")
    if args.out is not None:
        check_output(args.out, inputs=(args.log,), force=args.force)
    log = open_log(args.log)
    started = time.perf_counter()
    if log.header.get("source"):
        until = resolve_point(log, args.until, strict=True, flag="--until")[1] if args.until is not None else None
        report = reenact(log, until=until)
        print(f"imported from {log.header['source'].get('kind')} ({log.header['source'].get('file')}): "
              f"{log.revision} recorded records")
        for line in report.lines():
            print(line)
        return 0
    sessions = sessions_of(log)
    if not sessions and log.revision:
        return die("the log has no session marks (it was written by a k8semu older than session recording), "
                   "so it cannot be re-executed; history, diff, --at and timeline still work on it")
    if args.fork_at is not None:
        if args.out is None:
            return die("--fork-at needs --out NEW.log")
        at = resolve_point(log, args.fork_at, strict=True, flag="--fork-at")[0]
        served = _served(log, sessions, None)  # the prefix and every later session are run again
        if served:
            return die(_served_message(served, log, fork=True))
        try:
            prefix, n = fork(log, at, args.out, manifests=args.filename, skip=frozenset(skip))
        except ManifestError as e:
            return die(str(e))
        except ForkRefused as e:
            for line in e.lines:
                print(f"error: {line}", file=sys.stderr)
            return die(str(e))
        if not prefix.identical:
            for line in prefix.divergence.lines():  # type: ignore[union-attr]
                print(line)
            return 1
        print(f"identical up to revision {at}; forked into {args.out} ({n} records)")
        return 0
    until = resolve_point(log, args.until, strict=True, flag="--until")[0] if args.until is not None else None
    served = _served(log, sessions, log.revision if until is None else until)
    if served:
        return die(_served_message(served, log))
    result = replay(log, until=until)
    wall = time.perf_counter() - started
    if not result.identical:
        for line in result.divergence.lines():  # type: ignore[union-attr]
            print(line)
        return 1
    print(f"identical ({result.records} records)" + (f" up to revision {until}" if until is not None else "")
          + f" in {wall:.2f}s wall")
    if args.out is not None:
        n = write_log(result.cluster.log, args.out, until=until)
        print(f"wrote {args.out} ({n} records, revision {until})")
    return 0


def _served(log, sessions: list, stop_at: int | None) -> list[tuple[int, int]]:
    """The revision ranges ``(first, last)`` of the sessions ``k8semu serve`` ran that a replay
    up to ``stop_at`` would have to re-execute (None: all of them, as a fork re-runs every session).
    A range is empty (``first > last``) when the server wrote nothing."""
    out = []
    for s in sessions:
        if not s.start.get("serve"):
            continue
        if stop_at is not None and s.start_rev >= stop_at:
            continue  # a replay stops before it starts
        # (killed, the server ran until the next session or the head: its last_rev)
        out.append((s.start_rev + 1, s.last_rev))
    return out


def _served_message(served: list[tuple[int, int]], log, *, fork: bool = False) -> str:
    """One line: which revisions ``k8semu serve`` wrote, why they cannot be re-executed, what works."""
    def span(first: int, last: int) -> str:
        return (f"revisions {first}..{last}" if first < last else f"revision {first}" if first == last
                else f"at revision {last}, no writes")

    one = len(served) == 1
    what = "a session" if one else f"{len(served)} sessions"
    first = served[0][0]
    before = "" if fork or first <= 1 else f"; replay --until {first - 1} verifies what came before"
    return (f"the log holds {what} run by k8semu serve ({'; '.join(span(a, b) for a, b in served)}), which "
            f"ran in real time and cannot be re-executed{before}; history, diff, --at, timeline and bisect "
            f"work on {'it' if one else 'them'}")
