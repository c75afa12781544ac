"""NodePorts: reject nodes where a wanted ``hostPort`` is taken (upstream ``plugins/nodeports``).

Two uses of the same protocol and port conflict when either binds ``0.0.0.0``
(the default ``hostIP``) or both bind the same IP.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..framework import CycleState, PreFilterResult, Status
from ..types import NodeInfo, PodInfo

__all__ = ["NAME", "NodePorts", "ERR_REASON"]

NAME = "NodePorts"
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"


def _conflict(want: tuple[str, str, int], used: Mapping[tuple[str, str, int], int]) -> bool:
    ip, proto, port = want
    for uip, uproto, uport in used:
        if uport == port and uproto == proto and (ip == "0.0.0.0" or uip == "0.0.0.0" or uip == ip):
            return True
    return False


class NodePorts:
    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Any = None) -> None:
        pass

    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.host_ports:
            return None, Status.skip()
        return None, None

    def filter(self, state: Any, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        if not pod.host_ports or not node_info.used_ports:
            return None
        for want in pod.host_ports:
            if _conflict(want, node_info.used_ports):
                return Status.unschedulable(ERR_REASON)
        return None
