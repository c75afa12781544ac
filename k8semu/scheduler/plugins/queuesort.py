"""PrioritySort: the default QueueSort plugin (upstream ``plugins/queuesort``).

Higher ``spec.priority`` first; equal priorities in the order the pods were
(last) added to the queue.
"""

from __future__ import annotations

from typing import Any, Mapping

__all__ = ["NAME", "PrioritySort"]

NAME = "PrioritySort"


class PrioritySort:
    """``less(a, b)`` on queued pod infos (``.priority``, ``.timestamp`` attributes)."""

    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Any = None) -> None:
        pass

    def less(self, a: Any, b: Any) -> bool:
        """True when ``a`` should be popped before ``b``."""
        return a.priority > b.priority or (a.priority == b.priority and a.timestamp < b.timestamp)
