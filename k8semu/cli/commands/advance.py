"""``k8semu advance DURATION``: let virtual time pass with every component running.

Nothing is asked of the API; the cluster simply lives for DURATION (``90s``,
``5m``, ``1h30m``): heartbeats, leases, probes, controllers' resyncs, node
failures unfolding. Prints ``advanced 5m0s: virtual time is now 12m30s
(revision 1234)``, durations as Go's ``time.Duration`` prints them.
"""

from __future__ import annotations

import argparse

from ..durations import parse_duration
from ..session import open_cluster, run_session


def register(sub: argparse._SubParsersAction) -> None:
    a = sub.add_parser("advance", help="let virtual time pass (e.g. 5m) with the cluster running")
    a.add_argument("duration", metavar="DURATION")
    a.set_defaults(func=run)


def go_duration(seconds: float) -> str:
    """``seconds`` as Go's ``time.Duration.String()``: ``5m0s``, ``1h0m0s``, ``1.5s``, ``500ms``, ``0s``."""
    nanos = round(seconds * 1e9)
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if nanos >= size:
                return sign + _trim(nanos / size) + unit
    h, rest = divmod(nanos, 3600 * 10**9)
    m, rest = divmod(rest, 60 * 10**9)
    secs = _trim(rest / 1e9)
    if h:
        return f"{sign}{h}h{m}m{secs}s"
    if m:
        return f"{sign}{m}m{secs}s"
    return f"{sign}{secs}s"


def _trim(x: float) -> str:
    text = f"{x:.9f}".rstrip("0").rstrip(".")
    return text or "0"


def run(args: argparse.Namespace) -> int:
    seconds = parse_duration(args.duration)
    if seconds < 0:
        raise ValueError(f'invalid duration "{args.duration}": must not be negative')
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
