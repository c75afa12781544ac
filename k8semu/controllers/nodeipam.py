"""The node IPAM controller (kube-controller-manager's ``nodeipam``, range allocator).

With ``--allocate-node-cidrs --cluster-cidr=10.244.0.0/16`` (kind's setup),
every Node without ``spec.podCIDR`` gets the next free ``/24`` of the
cluster CIDR, written as ``spec.podCIDR`` and ``spec.podCIDRs`` with one
patch. The emulator makes the choice deterministic and stable across runs:
a node named in the cluster configuration gets ``10.244.<index>.0/24`` (its
position in the configuration), any other node the lowest ``/24`` no node
holds and no configured node is entitled to. CIDRs of deleted nodes are
free again (upstream's allocator releases them on node deletion).
"""

from __future__ import annotations

import ipaddress
from typing import Any

from ..api import errors
from ..api.apiserver import STRATEGIC_MERGE_PATCH
from ..api.auth import admin
from ..client.component import Component
from ..client.informer import EventHandler

__all__ = ["NodeIPAMController", "CLUSTER_CIDR", "NODE_CIDR_MASK"]

CLUSTER_CIDR = "10.244.0.0/16"
NODE_CIDR_MASK = 24


class NodeIPAMController(Component):
    """Assigns pod CIDRs to Nodes (actor ``node-ipam-controller``).

    Args:
        api: the API server.
        config: the cluster's :class:`~k8semu.sim.config.ClusterConfig` (node order), or None.
        cluster_cidr: the cluster's pod network (default: the configuration's
            ``pod_cidr``, else ``10.244.0.0/16``).

    Identity: upstream runs as the ``node-controller`` service account, bound
    to ``system:controller:node-controller``; that role is not in this
    emulator's bootstrap policy, so the controller writes as the admin.
    """

    name = "node-ipam-controller"

    def __init__(self, api: Any, config: Any = None, cluster_cidr: str | None = None) -> None:
        super().__init__(api, "node-ipam-controller", admin())
        self.config = config
        if cluster_cidr is None:
            cluster_cidr = config.pod_cidr if config is not None else CLUSTER_CIDR
        self.cidr = ipaddress.ip_network(cluster_cidr)
        self.subnets = list(self.cidr.subnets(new_prefix=NODE_CIDR_MASK))
        self.nodes = self.informer("nodes")
        self.q = self.queue()
        self.nodes.add_event_handler(EventHandler(
            on_add=lambda n: self.q.add(n["metadata"]["name"]),
            on_update=lambda _o, n: self.q.add(n["metadata"]["name"]),
        ))

    async def main(self) -> None:
        await self.run_workers(self.q, self.sync)

    def _reserved(self, name: str) -> int | None:
        if self.config is None:
            return None
        try:
            return self.config.index(name)
        except KeyError:
            return None

    def cidr_for(self, name: str) -> str | None:
        """The /24 this node gets (None when the cluster CIDR is exhausted)."""
        idx = self._reserved(name)
        if idx is not None and idx < len(self.subnets):
            return str(self.subnets[idx])
        taken = {(n.get("spec") or {}).get("podCIDR") for n in self.nodes.indexer.list()}
        if self.config is not None:
            taken |= {str(self.subnets[i]) for i in range(min(len(self.config.nodes), len(self.subnets)))}
        for net in self.subnets:
            if str(net) not in taken:
                return str(net)
        return None

    def sync(self, name: str) -> None:
        """Give node ``name`` its podCIDR if it has none."""
        node = self.nodes.indexer.get(name)
        if node is None or (node.get("spec") or {}).get("podCIDR"):
            return
        cidr = self.cidr_for(name)
        if cidr is None:
            from ..client.events import WARNING, EventRecorder

            ref = {"kind": "Node", "metadata": {"name": name, "uid": name}}
            EventRecorder(self.api, self.ctx, "cidrAllocator").event(
                ref, WARNING, "CIDRNotAvailable", f"Node {name} status is now: CIDRNotAvailable")
            return
        try:
            self.api.patch("nodes", name, {"spec": {"podCIDR": cidr, "podCIDRs": [cidr]}},
                           STRATEGIC_MERGE_PATCH, ctx=self.ctx)
        except errors.NotFound:
            return
