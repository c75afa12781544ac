"""ImageLocality (upstream ``plugins/imagelocality``).

Favours nodes that already have the pod's images. Each image present on the
node contributes ``size * (nodes having it / all nodes)`` bytes (so an image
everywhere does not dominate); the sum is clamped to
``[23 MiB, 1000 MiB * number of containers]`` and mapped linearly to 0-100.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Mapping

from ..framework import MAX_NODE_SCORE, CycleState, Status
from ..types import NodeInfo, PodInfo, normalized_image_name

__all__ = ["NAME", "ImageLocality", "MIN_THRESHOLD", "MAX_CONTAINER_THRESHOLD"]

NAME = "ImageLocality"
_MB = 1024 * 1024
MIN_THRESHOLD = 23 * _MB
MAX_CONTAINER_THRESHOLD = 1000 * _MB
_IMAGES = attrgetter("images")


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    """Clamp and scale to 0-100, as upstream ``calculatePriority``."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    sum_scores = min(max(sum_scores, MIN_THRESHOLD), max_threshold)
    return MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


class ImageLocality:
    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Any = None) -> None:
        pass

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status | None]:
        if not node_info.images:
            return 0, None  # calculate_priority(0, n) is 0
        spec = pod.pod.get("spec") or {}
        containers = list(spec.get("initContainers") or ()) + list(spec.get("containers") or ())
        snapshot = state.snapshot
        total_nodes = len(snapshot)
        s = 0
        if node_info.images and total_nodes:
            for c in containers:
                name = normalized_image_name(c.get("image") or "")
                size = node_info.images.get(name)
                if size is not None:
                    spread = snapshot.image_num_nodes.get(name, 0) / total_nodes
                    s += int(size * spread)
        return calculate_priority(s, len(containers)), None

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> list[int]:
        """:meth:`score` for every node (nodes without images score 0 without a lookup)."""
        if not state.snapshot.image_num_nodes or not any(map(_IMAGES, nodes)):
            return [0] * len(nodes)
        return [self.score(state, pod, ni)[0] if ni.images else 0 for ni in nodes]
