"""``k8semu import audit|simkube FILE --out LOG``: recordings from elsewhere as k8semu logs.

``audit``: Kubernetes audit events (``audit.k8s.io/v1``, ``v1beta1``, or no
apiVersion; JSON lines, one JSON object or an EventList; levels Request and
RequestResponse). ``simkube``: SimKube traces, format version 2, JSON or
msgpack. The output works with ``replay`` (a re-enactment with a report of
differences), ``history``, ``diff``, ``timeline`` and ``--at``
(:mod:`k8semu.timeline.importers`). The file is written atomically: on an
error nothing is left at ``--out``. ``--out`` never overwrites the input file
or a cluster log another k8semu command holds open, nor an existing file
without ``--force`` (:func:`~k8semu.timeline.rerun.check_output`). It prints what it wrote and what it left
out, by reason (``wrote a.log: 0 records, 0 inputs; skipped 37: 23 read (get),
14 read (list)``).
"""

from __future__ import annotations

import argparse
from typing import Mapping


def register(sub: argparse._SubParsersAction) -> None:
    i = sub.add_parser("import", help="turn an audit log or a SimKube trace into a k8semu log")
    isub = i.add_subparsers(dest="source", required=True, metavar="SOURCE")
    for name, what in (("audit", "a Kubernetes audit log (JSON lines or JSON)"),
                       ("simkube", "a SimKube trace (version 2, JSON or msgpack)")):
        p = isub.add_parser(name, help=f"import {what}")
        p.add_argument("file", metavar="FILE")
        p.add_argument("--out", required=True, metavar="LOG")
        p.add_argument("--force", action="store_true", help="replace an existing file at --out")
        p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ...timeline.importers import import_audit, import_simkube
    from ...timeline.rerun import check_output

    fn = import_audit if args.source == "audit" else import_simkube
    try:
        check_output(args.out, inputs=(args.file,), force=args.force)
        result = fn(args.file, args.out)
    except OSError as e:
        raise _named(e, args.file, args.out) from None
    print(f"wrote {args.out}: {result.records} records, {result.inputs} inputs{skipped_text(result.skipped)}")
    return 0


def _named(e: OSError, file: str, out: str) -> Exception:
    """An OSError of reading FILE or writing ``--out`` as one line that names which (main()
    prints it): ``--out /ro/x.log: permission denied`` — not the name of the temporary file the
    output is written to first — or ``/x/trace.json: is a directory``."""
    import os

    from ..session import PathError, os_error_reason

    if e.strerror is None or e.errno is None or e.filename is None:
        return e
    name = os.fsdecode(e.filename)
    if os.path.abspath(name) == os.path.abspath(file):
        return e  # main() says "FILE: why"
    return PathError(f"--out {out}: {os_error_reason(e)}")


def skipped_text(skipped: Mapping[str, int]) -> str:
    """``; skipped 37: 23 read (get), 14 read (list)`` (most frequent reason first), or ``""``."""
    if not skipped:
        return ""
    reasons = sorted(skipped.items(), key=lambda kv: (-kv[1], kv[0]))
    return f"; skipped {sum(skipped.values())}: " + ", ".join(f"{n} {why}" for why, n in reasons)
