"""Emulated per-pod resource usage, as metrics-server reports it (``metrics.k8s.io/v1beta1``).

There are no processes to measure: a container's usage is what its behaviour
program (:mod:`k8semu.node.behaviour`) says at each virtual instant — the
``UsageChanged`` effects it emits (``cpu 250m`` / ``memory 200Mi`` in a
behaviour script, ``stress --cpu 2``, a server's idle figure…). The program
is rebuilt from the pod's spec and annotations and replayed from the
container's ``state.running.startedAt``, so the figures are a pure function
of the pod object and the time.

metrics-server's view of those figures, which the HPA consumes:

- it scrapes every kubelet every ``--metric-resolution`` (15 s); a scrape at
  virtual time ``s`` happens at every multiple of the resolution, and a
  query at ``t`` sees the last scrape ``s = floor(t / 15) * 15``
  (``timestamp``), with ``window`` 15 s;
- CPU is a rate: the average of the container's CPU use over the window
  ``[s - 15, s]`` (millicores); memory is the working set at ``s`` (bytes);
- a container needs two scrapes, so it has metrics only once it has run for a
  whole window (``startedAt <= s - 15``); a pod is reported only when each of
  its running containers has metrics, and not at all when none runs;
- a node's usage (``NodeMetrics``) is the sum of its pods' at the same scrape
  (there is no system overhead to measure); a node has metrics once it has
  existed for a whole window, and a node whose kubelet cannot be scraped (its
  machine is stopped) has none, nor have its pods — metrics-server keeps only
  the last scrape's data (:func:`scrape`).

:class:`MetricsServer` caches one replay per running container (keyed by pod
UID, container name and start time) and advances it incrementally, so asking
every 15 s for an hour costs what one replay of the hour costs.

Units: virtual seconds, millicores, bytes.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any, Mapping

import attrs

from ..api.meta import DEFAULT_EPOCH, format_time, parse_time
from . import behaviour

__all__ = ["METRIC_RESOLUTION", "ContainerMetrics", "PodMetrics", "NodeMetrics", "MetricsServer", "scrape"]

#: metrics-server's ``--metric-resolution`` (and the reported ``window``), seconds.
METRIC_RESOLUTION = 15.0
#: Usage reported for a container whose program never reports any (millicores, bytes).
BASELINE_USAGE = (1, 4 * 1024 * 1024)
_FORGET_AFTER = 600.0  # a replay not asked about for this long is dropped


@attrs.frozen
class ContainerMetrics:
    """One container's usage: ``cpu_millis`` (average over the window), ``memory_bytes`` (at the scrape)."""

    name: str
    cpu_millis: int
    memory_bytes: int


@attrs.frozen
class PodMetrics:
    """A pod's metrics as metrics-server serves them.

    Attributes:
        namespace, name: the pod.
        timestamp: virtual time of the scrape (seconds).
        window: the span the CPU rate was measured over (seconds).
        containers: one :class:`ContainerMetrics` per running container (sidecars first), in spec order.
    """

    namespace: str
    name: str
    timestamp: float
    window: float
    containers: tuple[ContainerMetrics, ...]

    @property
    def cpu_millis(self) -> int:
        """Sum of the containers' CPU (millicores)."""
        return sum(c.cpu_millis for c in self.containers)

    @property
    def memory_bytes(self) -> int:
        """Sum of the containers' memory (bytes)."""
        return sum(c.memory_bytes for c in self.containers)

    def to_object(self, epoch: datetime = DEFAULT_EPOCH, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The ``metrics.k8s.io/v1beta1`` PodMetrics object (CPU in nanocores, memory in Ki)."""
        meta: dict[str, Any] = {"name": self.name, "namespace": self.namespace,
                                "creationTimestamp": format_time(epoch, self.timestamp)}
        if labels:
            meta["labels"] = dict(labels)
        return {
            "kind": "PodMetrics",
            "apiVersion": "metrics.k8s.io/v1beta1",
            "metadata": meta,
            "timestamp": format_time(epoch, self.timestamp),
            "window": f"{int(self.window)}s",
            "containers": [{"name": c.name, "usage": _usage(c.cpu_millis, c.memory_bytes)}
                           for c in self.containers],
        }


def _usage(cpu_millis: int, memory_bytes: int) -> dict[str, str]:
    """metrics-server's ``usage``: CPU in nanocores, memory in Ki."""
    return {"cpu": f"{cpu_millis * 1_000_000}n", "memory": f"{memory_bytes // 1024}Ki"}


@attrs.frozen
class NodeMetrics:
    """A node's metrics as metrics-server serves them.

    Attributes:
        name: the node.
        timestamp: virtual time of the scrape (seconds).
        window: the span the CPU rate was measured over (seconds).
        cpu_millis: CPU in use (millicores): the sum of its pods' at that scrape.
        memory_bytes: working-set memory (bytes): the sum of its pods'.
    """

    name: str
    timestamp: float
    window: float
    cpu_millis: int
    memory_bytes: int

    def to_object(self, epoch: datetime = DEFAULT_EPOCH, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The ``metrics.k8s.io/v1beta1`` NodeMetrics object (CPU in nanocores, memory in Ki)."""
        meta: dict[str, Any] = {"name": self.name, "creationTimestamp": format_time(epoch, self.timestamp)}
        if labels:
            meta["labels"] = dict(labels)
        return {
            "kind": "NodeMetrics",
            "apiVersion": "metrics.k8s.io/v1beta1",
            "metadata": meta,
            "timestamp": format_time(epoch, self.timestamp),
            "window": f"{int(self.window)}s",
            "usage": _usage(self.cpu_millis, self.memory_bytes),
        }


class _Replay:
    """One running container's behaviour program, advanced on demand; keeps the
    usage steps ``(t, cpu, memory)`` it has seen (pruned to what a window needs)."""

    def __init__(self, run: "behaviour.Run | None", started: float) -> None:
        self.run = run
        self.steps: list[tuple[float, int, int]] = [(started, *BASELINE_USAGE)]
        self.reported = False
        self.until = started
        self.last_asked = started

    def advance(self, t: float) -> None:
        if self.run is None or t <= self.until:
            return
        for eff in self.run.advance(t):
            if isinstance(eff, behaviour.UsageChanged):
                if not self.reported:
                    self.steps = [(self.steps[0][0], eff.cpu_millis, eff.memory_bytes)] \
                        if eff.t <= self.steps[0][0] else self.steps + [(eff.t, eff.cpu_millis, eff.memory_bytes)]
                    self.reported = True
                else:
                    self.steps.append((eff.t, eff.cpu_millis, eff.memory_bytes))
        self.until = t

    def usage(self, start: float, end: float) -> tuple[int, int]:
        """Average CPU over ``[start, end]`` (millicores, rounded) and memory at ``end``."""
        total = 0.0
        memory = self.steps[0][2]
        for i, (t, cpu, mem) in enumerate(self.steps):
            nxt = self.steps[i + 1][0] if i + 1 < len(self.steps) else math.inf
            lo, hi = max(t, start), min(nxt, end)
            if hi > lo:
                total += cpu * (hi - lo)
            if t <= end:
                memory = mem
        cpu_avg = int(round(total / (end - start))) if end > start else self.steps[-1][1]
        # forget steps wholly before the next window
        keep = [i for i, (t, _, _) in enumerate(self.steps) if t <= start]
        if keep and keep[-1] > 0:
            self.steps = self.steps[keep[-1]:]
        return cpu_avg, memory


class MetricsServer:
    """Answers ``metrics.k8s.io`` pod queries from the pods' behaviour programs (see module docstring).

    Args:
        epoch: the cluster's epoch (virtual time 0), to read ``startedAt``.
        resolution: the scrape interval and window (seconds).
    """

    def __init__(self, epoch: datetime = DEFAULT_EPOCH, resolution: float = METRIC_RESOLUTION) -> None:
        self.epoch = epoch
        self.resolution = resolution
        self._replays: dict[tuple[str, str, str], _Replay] = {}

    def scrape_time(self, now: float) -> float:
        """The time of the last scrape at or before ``now``."""
        return math.floor(now / self.resolution + 1e-9) * self.resolution

    def pod_metrics(self, pod: Mapping[str, Any], now: float) -> PodMetrics | None:
        """The pod's metrics as seen at ``now``, or None when metrics-server has none for it
        (no running container, or one that has not run for a whole window yet)."""
        meta = pod.get("metadata") or {}
        status = pod.get("status") or {}
        if status.get("phase") != "Running":
            return None
        pod_spec = pod.get("spec") or {}
        specs = {c.get("name"): c for c in (pod_spec.get("initContainers") or []) + (pod_spec.get("containers") or [])}
        annotations = meta.get("annotations") or {}
        s = self.scrape_time(now)
        start = s - self.resolution
        out: list[ContainerMetrics] = []
        for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
            started = ((cs.get("state") or {}).get("running") or {}).get("startedAt")
            spec = specs.get(cs.get("name"))
            if not started or spec is None:
                continue
            t0 = parse_time(self.epoch, started)
            if t0 > start + 1e-9:
                return None  # not two scrapes yet: metrics-server leaves the whole pod out
            key = (str(meta.get("uid") or meta.get("name")), str(cs.get("name")), started)
            replay = self._replays.get(key)
            if replay is None or replay.until > s:
                try:
                    run = behaviour.build_program(spec, annotations).start(
                        t0, wall_clock=lambda t: self.epoch + timedelta(seconds=t))
                except ValueError:
                    run = None
                replay = self._replays[key] = _Replay(run, t0)
            replay.advance(s)
            replay.last_asked = now
            cpu, mem = replay.usage(start, s)
            out.append(ContainerMetrics(str(cs.get("name")), cpu, mem))
        self._forget(now)
        if not out:
            return None
        return PodMetrics(str(meta.get("namespace") or ""), str(meta.get("name")), s, self.resolution, tuple(out))

    def pods_metrics(self, pods: list[Mapping[str, Any]], now: float) -> dict[str, PodMetrics]:
        """:meth:`pod_metrics` for each pod that has metrics, by pod name (as the HPA's metrics client returns them)."""
        out: dict[str, PodMetrics] = {}
        for pod in pods:
            m = self.pod_metrics(pod, now)
            if m is not None:
                out[m.name] = m
        return out

    def node_metrics(self, node: Mapping[str, Any], pods: list[Mapping[str, Any]], now: float) -> NodeMetrics | None:
        """The node's metrics at ``now`` from the metrics of ``pods`` (the pods bound to it), or None
        when it has not existed for a whole window yet (metrics-server needs two scrapes)."""
        meta = node.get("metadata") or {}
        s = self.scrape_time(now)
        created = meta.get("creationTimestamp")
        if created and parse_time(self.epoch, created) > s - self.resolution + 1e-9:
            return None
        cpu = mem = 0
        for pod in pods:
            m = self.pod_metrics(pod, now)
            if m is not None:
                cpu, mem = cpu + m.cpu_millis, mem + m.memory_bytes
        return NodeMetrics(str(meta.get("name")), s, self.resolution, cpu, mem)

    def _forget(self, now: float) -> None:
        stale = [k for k, r in self._replays.items() if now - r.last_asked > _FORGET_AFTER]
        for k in stale:
            del self._replays[k]


def scrape(server: MetricsServer, nodes: list[Mapping[str, Any]], pods: list[Mapping[str, Any]], now: float,
           unreachable: frozenset[str] | set[str] = frozenset()
           ) -> tuple[dict[str, NodeMetrics], dict[tuple[str, str], PodMetrics]]:
    """What metrics-server holds at ``now``: node name -> :class:`NodeMetrics` and
    ``(namespace, name)`` -> :class:`PodMetrics`, both in name order.

    Only the last scrape counts: a node in ``unreachable`` (its kubelet does not
    answer: the machine is stopped) is missing, and so are the pods bound to it;
    pods not bound to a node have no metrics.
    """
    by_node: dict[str, list[Mapping[str, Any]]] = {}
    for pod in pods:
        node_name = (pod.get("spec") or {}).get("nodeName")
        if node_name:
            by_node.setdefault(node_name, []).append(pod)
    node_out: dict[str, NodeMetrics] = {}
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        name = node["metadata"]["name"]
        if name in unreachable:
            continue
        m = server.node_metrics(node, by_node.get(name, []), now)
        if m is not None:
            node_out[name] = m
    pod_out: dict[tuple[str, str], PodMetrics] = {}
    for pod in sorted(pods, key=lambda p: (p["metadata"].get("namespace") or "", p["metadata"]["name"])):
        if (pod.get("spec") or {}).get("nodeName") not in node_out:
            continue
        m = server.pod_metrics(pod, now)
        if m is not None:
            pod_out[(m.namespace, m.name)] = m
    return node_out, pod_out
