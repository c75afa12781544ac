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
        return self.score_nodes(state, pod, [node_info])[0], None

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> list[int]:
        """:meth:`score` for every node: the pod's image names and each image's spread
        (nodes having it / all nodes) are worked out once per cycle, not once per node;
        nodes without images score 0 (``calculate_priority(0, n)``)."""
        snapshot = state.snapshot
        total_nodes = len(snapshot)
        if not total_nodes or not snapshot.image_num_nodes or not any(map(_IMAGES, nodes)):
            return [0] * len(nodes)
        spec = pod.pod.get("spec") or {}
        containers = list(spec.get("initContainers") or ()) + list(spec.get("containers") or ())
        # one entry per container (a container's image counts once per container, as upstream)
        wanted = [(name, snapshot.image_num_nodes.get(name, 0) / total_nodes)
                  for name in (normalized_image_name(c.get("image") or "") for c in containers)]
        n = len(containers)
        names = [name for name, _ in wanted]
        # nodes whose copies of the wanted images have the same sizes score the same (most
        # nodes of a cluster hold the same images): each distinct combination is scored once
        by_sizes: dict[tuple, int] = {}
        out = []
        for ni in nodes:
            images = ni.images
            if not images:
                out.append(0)
                continue
            sizes = tuple(map(images.get, names))
            score = by_sizes.get(sizes)
            if score is None:
                s = 0
                for size, (_, spread) in zip(sizes, wanted):
                    if size is not None:
                        s += int(size * spread)
                score = by_sizes[sizes] = calculate_priority(s, n)
            out.append(score)
        return out
