"""SchedulingGates: keep pods with ``spec.schedulingGates`` out of the active queue
(upstream ``plugins/schedulinggates``)."""

from __future__ import annotations

from typing import Any, Mapping

from ..framework import Status

__all__ = ["NAME", "SchedulingGates"]

NAME = "SchedulingGates"


class SchedulingGates:
    """PreEnqueue: ``UnschedulableAndUnresolvable`` ``waiting for scheduling gates: [a b]``."""

    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Any = None) -> None:
        pass

    def pre_enqueue(self, pod: Mapping[str, Any]) -> Status | None:
        gates = [g.get("name", "") for g in (pod.get("spec") or {}).get("schedulingGates") or ()]
        if not gates:
            return None
        return Status.unresolvable(f"waiting for scheduling gates: [{' '.join(gates)}]")
