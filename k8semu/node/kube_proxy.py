"""kube-proxy: the per-node Component around the pure forwarding table of :mod:`.proxy`.

One :class:`KubeProxy` runs per node (actor ``kube-proxy/<node>``). It keeps
informers on Services, EndpointSlices and Nodes (the latter only for NodePort
addresses) and, whenever one of them changes, syncs (at most once per
``--iptables-min-sync-period``, 1 s): the node's
:class:`~k8semu.node.proxy.ProxyTable` — what upstream's ``syncProxyRules``
would program — is rebuilt from the caches with
:func:`~k8semu.node.proxy.build_rules`. Nothing in the emulator reads a node's
rules except :attr:`KubeProxy.table` and :meth:`KubeProxy.route`, so the
rebuild is done when one of them is next used, not at every sync: a
5,000-node cluster does not compute 5,000 tables per Service change that
nobody looks at. It never writes to the API, so it leaves no trace in the log.

Routing (:meth:`KubeProxy.route`) draws from a per-node RNG seeded with
``f"{seed}:{node}"`` (SHA-512 of the string, independent of
``PYTHONHASHSEED``), so the choices one node makes do not depend on how other
components consumed the cluster's RNG. ``sessionAffinity: ClientIP`` state
lives with the component (lost on restart, like the kernel's ``recent`` table
on a reboot).
"""

from __future__ import annotations

import random
from typing import Any

import trio

from ..client.component import Component
from ..client.informer import EventHandler
from .proxy import ProxyTable, RouteResult, build_rules
from .proxy import route as route_packet

__all__ = ["KubeProxy", "node_internal_ip"]


def node_internal_ip(node: dict[str, Any]) -> str | None:
    """The node's ``InternalIP`` from ``status.addresses``, or None."""
    for addr in (node.get("status") or {}).get("addresses") or ():
        if addr.get("type") == "InternalIP" and addr.get("address"):
            return addr["address"]
    return None


class KubeProxy(Component):
    """kube-proxy on one node.

    Args:
        api: the API server.
        node_name: the node this proxy runs on.
        seed: the cluster seed; the routing RNG is ``random.Random(f"{seed}:{node_name}")``.
        cluster_cidr: kube-proxy ``--cluster-cidr`` (pod traffic detection), or None.
    """

    def __init__(self, api: Any, node_name: str, *, seed: int | str = 0,
                 cluster_cidr: str | None = None, **kwargs: Any) -> None:
        super().__init__(api, name=f"kube-proxy/{node_name}", **kwargs)
        self.node_name = node_name
        self.cluster_cidr = cluster_cidr
        self.rng = random.Random(f"{seed}:{node_name}")
        self.affinity: dict = {}
        self.syncs = 0
        self.services = self.informer("services")
        self.slices = self.informer("endpointslices.discovery.k8s.io")
        self.nodes = self.informer("nodes")
        self._table: ProxyTable | None = None
        self._dirty = True
        self._wake = trio.Event()
        handler = EventHandler(on_add=self._changed, on_update=lambda o, n: self._changed(n),
                               on_delete=self._changed)
        for inf in (self.services, self.slices, self.nodes):
            inf.add_event_handler(handler)

    def _changed(self, _obj: Any = None) -> None:
        self._dirty = True
        self._wake.set()

    #: upstream's ``--iptables-min-sync-period``: changes within it share one sync (virtual seconds)
    min_sync_period = 1.0

    async def main(self) -> None:
        last_sync = -self.min_sync_period
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            await self.gate()
            wait = last_sync + self.min_sync_period - self.api.now
            if wait > 0:
                await trio.sleep(wait)
            if self._dirty:
                self.syncs += 1  # the rules are built on next use (see the module docstring)
                last_sync = self.api.now

    def sync(self) -> ProxyTable:
        """Rebuild the table from the caches now (upstream ``syncProxyRules``'s rules)."""
        node_ips = {n["metadata"]["name"]: ip for n in self.nodes.indexer.list()
                    if (ip := node_internal_ip(n)) is not None}
        self._table = build_rules(self.node_name, self.services.indexer.list(), self.slices.indexer.list(),
                                  node_ips, cluster_cidr=self.cluster_cidr)
        self._dirty = False
        return self._table

    @property
    def table(self) -> ProxyTable:
        """The node's current forwarding table (rebuilt first if a change is pending)."""
        if self._table is None or self._dirty:
            return self.sync()
        return self._table

    def route(self, src_ip: str, dst_ip: str, dst_port: int, protocol: str = "TCP") -> RouteResult:
        """Play one new connection through this node's table (see :func:`~k8semu.node.proxy.route`);
        the time is the cluster's virtual clock."""
        return route_packet(self.table, src_ip, dst_ip, dst_port, protocol, rng=self.rng,
                            now=self.api.now, affinity_state=self.affinity)
