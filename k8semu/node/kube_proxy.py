"""kube-proxy: the per-node Component around the pure forwarding table of :mod:`.proxy`.

One :class:`KubeProxy` runs per node (actor ``kube-proxy/<node>``). Its
:class:`~k8semu.node.proxy.ProxyTable` — what upstream's ``syncProxyRules``
would program from Services, EndpointSlices and node addresses — is built with
:func:`~k8semu.node.proxy.build_rules` when it is used (:attr:`KubeProxy.table`,
:meth:`KubeProxy.route`), since nothing else in the emulator reads iptables.

Where that state comes from depends on faults. A healthy kube-proxy's
informers would hold exactly what the API server holds, so it reads the API
server directly: no per-node watch, so a Service change costs nothing on a
5,000-node cluster until someone routes through a node. Once a watch fault is
put on the component (``delay_watch``, ``drop_watch``, ``freeze``, ``pause``
through the runtime), it starts its own informers on Services, EndpointSlices
and Nodes (listed at that moment) and builds from their caches from then on,
so the fault makes its view late, lossy or stale as it would upstream. It
never writes to the API, so it leaves no trace in the log.

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
from ..client.informer import EventHandler, Informer
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
        # informers on Services, EndpointSlices, Nodes: only once a fault needs a cache of its own
        self.caches: tuple[Informer, Informer, Informer] | None = None
        self._table: ProxyTable | None = None
        self._built_at = -1  # store revision (no caches) the table was built at; -1: rebuild

    def _faulted(self) -> bool:
        f = self.faults
        return bool(f.delay or f.drop is not None or f.frozen or f.paused)

    async def main(self) -> None:
        while not self._faulted():
            await self.faults.wait_changed()
        # from now on this node's view is its own caches, which the fault delays, drops or freezes
        self.caches = (self.informer("services"), self.informer("endpointslices.discovery.k8s.io"),
                       self.informer("nodes"))
        handler = EventHandler(on_add=self._changed, on_update=lambda o, n: self._changed(n),
                               on_delete=self._changed)
        async with trio.open_nursery() as nursery:
            for inf in self.caches:
                inf.add_event_handler(handler)
                await nursery.start(inf.run)
            self._changed()

    def _changed(self, _obj: Any = None) -> None:
        self._built_at = -1

    def sync(self) -> ProxyTable:
        """Rebuild the table now (upstream ``syncProxyRules``'s rules), from the caches or the API."""
        if self.caches is not None:
            services, slices, nodes = (inf.indexer.list() for inf in self.caches)
            built_at = 0
        else:
            api, ctx = self.api, self.ctx
            services = api.list("services", ctx=ctx)["items"]
            slices = api.list("endpointslices.discovery.k8s.io", ctx=ctx)["items"]
            nodes = api.list("nodes", ctx=ctx)["items"]
            built_at = api.log.revision
        node_ips = {n["metadata"]["name"]: ip for n in nodes if (ip := node_internal_ip(n)) is not None}
        self._table = build_rules(self.node_name, services, slices, node_ips, cluster_cidr=self.cluster_cidr)
        self._built_at = built_at
        return self._table

    @property
    def table(self) -> ProxyTable:
        """The node's current forwarding table (rebuilt first if anything changed since)."""
        if self._table is None or self._built_at < 0 or (
                self.caches is None and self._built_at != self.api.log.revision):
            return self.sync()
        return self._table

    def route(self, src_ip: str, dst_ip: str, dst_port: int, protocol: str = "TCP") -> RouteResult:
        """Play one new connection through this node's table (see :func:`~k8semu.node.proxy.route`);
        the time is the cluster's virtual clock."""
        return route_packet(self.table, src_ip, dst_ip, dst_port, protocol, rng=self.rng,
                            now=self.api.now, affinity_state=self.affinity)
