"""``k8semu advance DURATION``: let virtual time pass with every component running.

Nothing is asked of the API; the cluster simply lives for DURATION (``90s``,
``5m``, ``1h30m``): heartbeats, leases, probes, controllers' resyncs, node
failures unfolding. Prints ``advanced 5m0s: virtual time is now 12m30s
(revision 1234)``, durations as Go's ``time.Duration`` prints them. A
negative duration (``advance -5s``) is a one-line error, exit code 1:
``error: invalid duration "-5s": must not be negative (virtual time only
moves forward)``; nothing is written.
"""

from __future__ import annotations

import argparse

from ..durations import go_duration, parse_duration
from ..session import open_cluster, run_session


def register(sub: argparse._SubParsersAction) -> None:
    a = sub.add_parser("advance", help="let virtual time pass (e.g. 5m) with the cluster running")
    a.add_argument("duration", metavar="DURATION")
    a.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    seconds = parse_duration(args.duration)
    if seconds < 0:
        raise ValueError(f'invalid duration "{args.duration}": must not be negative '
                         "(virtual time only moves forward)")
    cluster = open_cluster(args)
    try:
        async def body(rt) -> None:
            return None

        run_session(cluster, body, settle=False, run_for=seconds)
        print(f"advanced {go_duration(seconds)}: virtual time is now {go_duration(cluster.time)} "
              f"(revision {cluster.log.revision})")
    finally:
        cluster.close()
    return 0
