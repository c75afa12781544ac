"""``k8semu annotate TYPE NAME k=v k2-``: kubectl annotate.

The same flow as :mod:`.label` (read, merge patch of the difference, field
manager ``kubectl-annotate``), printing ``pod/x annotated``; the
``kubernetes.io/change-cause`` annotation may always be overwritten.
"""

from __future__ import annotations

import argparse

from .label import _register


def register(sub: argparse._SubParsersAction) -> None:
    _register(sub, "annotate", "add, change or remove annotations (as kubectl annotate)")
