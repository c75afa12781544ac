"""``k8semu replay LOG``: re-execute a recorded log and check every output, record by record.

Prints ``identical (N records)``, or the first divergent revision with both
versions and the actor (exit 1). ``--until REVISION|DURATION --out PATH``
stops there and writes the re-executed cluster to PATH (usable with
``--cluster PATH`` by every other command). ``--fork-at REVISION --out
NEW.log [-f MANIFEST]… [--skip REV,…]`` continues from that point with other
manifests applied and/or recorded inputs left out (e.g. a fault), re-issuing
the later recorded inputs; compare with ``k8semu diff``. An imported log
(``k8semu import``) is re-enacted instead, with a report of where k8semu's
components differed from the recorded ones. See ``docs/replay.md``.
"""

from __future__ import annotations

import argparse
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
    r.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ...timeline import fork, open_log, replay, resolve_point, write_log
    from ...timeline.importers import reenact

    log = open_log(args.log)
    started = time.perf_counter()
    if log.header.get("source"):
        until = resolve_point(log, args.until)[1] if args.until else None
        report = reenact(log, until=until)
        print(f"imported from {log.header['source'].get('kind')} ({log.header['source'].get('file')}): "
              f"{log.revision} recorded records")
        for line in report.lines():
            print(line)
        return 0
    if args.fork_at:
        if not args.out:
            return die("--fork-at needs --out NEW.log")
        at = resolve_point(log, args.fork_at)[0]
        skip = frozenset(int(x) for x in args.skip.split(",") if x.strip())
        prefix, n = fork(log, at, args.out, manifests=args.filename, skip=skip)
        if not prefix.identical:
            for line in prefix.divergence.lines():  # type: ignore[union-attr]
                print(line)
            return 1
        print(f"identical up to revision {at}; forked into {args.out} ({n} records)")
        return 0
    until = resolve_point(log, args.until)[0] if args.until else None
    if args.out and until is None:
        return die("--out needs --until or --fork-at")
    result = replay(log, until=until)
    wall = time.perf_counter() - started
    if not result.identical:
        for line in result.divergence.lines():  # type: ignore[union-attr]
            print(line)
        return 1
    print(f"identical ({result.records} records)" + (f" up to revision {until}" if until is not None else "")
          + f" in {wall:.2f}s wall")
    if args.out:
        n = write_log(result.cluster.log, args.out, until=until)
        print(f"wrote {args.out} ({n} records, revision {until})")
    return 0
