"""The default set of components of a cluster: a registry of factories by name.

:func:`default_factories` returns ``{name: zero-argument constructor}`` for
:class:`~k8semu.sim.runtime.Runtime`, control-plane components first, then one
kubelet per configured node in node order (``kubelet/<node>``). Other
components (the scheduler, the controllers, kube-proxies) are added here as
they are written — keep it a flat registry.

TEMPORARY: :class:`MinimalScheduler` stands in for kube-scheduler until the
real one is wired in; it binds each unscheduled pod to the Ready node, among
those whose taints it tolerates and where it fits, with the most free CPU.
"""

from __future__ import annotations

from typing import Any, Callable

from ..api import errors
from ..api.auth import scheduler as scheduler_user
from ..client.component import Component
from ..client.events import NORMAL, EventRecorder
from ..client.informer import EventHandler

__all__ = ["default_factories", "MinimalScheduler"]

Factory = Callable[[], Component]


def default_factories(cluster: Any) -> dict[str, Factory]:
    """Factories for ``cluster``'s components, in start order.

    Returns:
        ``{"node-ipam-controller": …, "default-scheduler": …, "kubelet/<node>": …}``.
    """
    from ..controllers.nodeipam import NodeIPAMController
    from ..node.kubelet import Kubelet

    api = cluster.api
    config = cluster.nodes
    pull_scale = 1.0  # imagePullSeconds is left to the behaviour module's pull durations
    factories: dict[str, Factory] = {
        "node-ipam-controller": lambda: NodeIPAMController(api, config),
        "default-scheduler": lambda: MinimalScheduler(api, config),  # TEMPORARY (see module docstring)
    }
    for node in config.nodes:
        factories[f"kubelet/{node.name}"] = (lambda n=node: Kubelet(api, n, pull_scale=pull_scale))
    return factories


# --------------------------------------------------------------------------- TEMPORARY scheduler

def _tolerates(pod: dict[str, Any], taint: dict[str, Any]) -> bool:
    if taint.get("effect") == "PreferNoSchedule":
        return True
    for t in (pod.get("spec") or {}).get("tolerations") or ():
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        if t.get("operator") == "Exists":
            if not t.get("key") or t["key"] == taint.get("key"):
                return True
        elif t.get("key") == taint.get("key") and (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


class MinimalScheduler(Component):
    """TEMPORARY stand-in for kube-scheduler (actor ``default-scheduler``).

    Binds each pod without ``spec.nodeName`` (``schedulerName`` unset or
    ``default-scheduler``) to the Ready node whose taints it tolerates and where
    its requests fit, with the most free CPU (ties: configuration order), and
    records ``Scheduled`` ``Successfully assigned <ns>/<name> to <node>``.
    Pods that fit nowhere stay Pending and are retried when nodes or pods change.
    """

    name = "default-scheduler"

    def __init__(self, api: Any, config: Any = None) -> None:
        super().__init__(api, "default-scheduler", scheduler_user())
        self.config = config
        self.recorder = EventRecorder(api, self.ctx, "default-scheduler")
        self.pods = self.informer("pods")
        self.nodes = self.informer("nodes")
        self.q = self.queue()
        self._assumed: dict[str, str] = {}  # pod uid -> node
        self.pods.add_event_handler(EventHandler(self._pod, lambda _o, n: self._pod(n), self._gone))
        self.nodes.add_event_handler(EventHandler(lambda _n: self._all(), lambda _o, _n: self._all()))

    def _pod(self, pod: dict[str, Any]) -> None:
        spec = pod.get("spec") or {}
        if not spec.get("nodeName") and spec.get("schedulerName", "default-scheduler") == "default-scheduler":
            m = pod["metadata"]
            self.q.add(f"{m.get('namespace')}/{m['name']}")

    def _gone(self, pod: dict[str, Any]) -> None:
        self._assumed.pop(pod["metadata"].get("uid"), None)
        self._all()

    def _all(self) -> None:
        for p in self.pods.indexer.list():
            self._pod(p)

    async def main(self) -> None:
        await self.run_workers(self.q, self.sync)

    def _node_order(self, nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        def key(n: dict[str, Any]) -> tuple[int, str]:
            name = n["metadata"]["name"]
            try:
                return (self.config.index(name) if self.config is not None else 0, name)
            except KeyError:
                return (1 << 30, name)
        return sorted(nodes, key=key)

    def sync(self, key: str) -> None:
        from ..api.quantity import bytes_value, cpu_millis
        from ..node.status import pod_requests

        pod = self.pods.indexer.get(key)
        if pod is None or (pod.get("spec") or {}).get("nodeName") or pod["metadata"].get("deletionTimestamp"):
            return
        if pod["metadata"].get("uid") in self._assumed:
            return
        want = pod_requests(pod)
        used: dict[str, dict[str, int]] = {}
        for p in self.pods.indexer.list():
            node = (p.get("spec") or {}).get("nodeName") or self._assumed.get(p["metadata"].get("uid"))
            if not node or (p.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            u = used.setdefault(node, {"cpu": 0, "memory": 0, "pods": 0})
            for r, v in pod_requests(p).items():
                u[r] += v
            u["pods"] += 1
        best = None
        for n in self._node_order(self.nodes.indexer.list()):
            st = n.get("status") or {}
            ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in st.get("conditions") or ())
            if not ready or (n.get("spec") or {}).get("unschedulable"):
                continue
            if not all(_tolerates(pod, t) for t in (n.get("spec") or {}).get("taints") or ()
                       if t.get("effect") in ("NoSchedule", "NoExecute")):
                continue
            alloc = st.get("allocatable") or {}
            u = used.get(n["metadata"]["name"], {"cpu": 0, "memory": 0, "pods": 0})
            free_cpu = cpu_millis(alloc.get("cpu", "0")) - u["cpu"]
            free_mem = bytes_value(alloc.get("memory", "0")) - u["memory"]
            if u["pods"] + 1 > int(alloc.get("pods", "110")) or want["cpu"] > free_cpu or want["memory"] > free_mem:
                continue
            if best is None or free_cpu > best[0]:
                best = (free_cpu, n["metadata"]["name"])
        if best is None:
            return
        m = pod["metadata"]
        try:
            self.api.bind(m["name"], {"apiVersion": "v1", "kind": "Binding",
                                      "metadata": {"name": m["name"], "uid": m.get("uid")},
                                      "target": {"apiVersion": "v1", "kind": "Node", "name": best[1]}},
                          namespace=m.get("namespace"), ctx=self.ctx)
        except (errors.Conflict, errors.NotFound):
            return
        self._assumed[m.get("uid")] = best[1]
        self.recorder.event(pod, NORMAL, "Scheduled",
                            f"Successfully assigned {m.get('namespace')}/{m['name']} to {best[1]}")
