"""Leader election on a coordination.k8s.io Lease, as client-go's ``leaderelection``.

kube-controller-manager and kube-scheduler each hold a Lease in
``kube-system`` (named after themselves) with ``holderIdentity``
``<host>_<uuid>``, ``leaseDurationSeconds`` 15, renewed every
``retry_period`` (2 s). A candidate acquires the Lease when it is free or its
holder's ``renewTime`` is older than the lease duration (``leaseTransitions``
+1). Only the holder runs its controllers; a second instance (an HA control
plane) waits, and takes over when the leader stops renewing.
"""

from __future__ import annotations

import trio

from ..api import errors
from ..api.apiserver import APIServer, RequestContext
from ..api.meta import format_micro_time, parse_time

__all__ = ["LeaderElector"]


class LeaderElector:
    """Acquires and renews one Lease.

    Args:
        api: the API server.
        ctx: who writes the Lease (the component's context).
        name: the Lease's name (``kube-controller-manager``).
        identity: ``holderIdentity`` (``control-plane_<uuid>``).
        lease_duration / renew_deadline / retry_period: client-go's knobs, virtual seconds.
    """

    def __init__(self, api: APIServer, ctx: RequestContext, name: str, identity: str, *,
                 namespace: str = "kube-system", lease_duration: float = 15.0,
                 renew_deadline: float = 10.0, retry_period: float = 2.0) -> None:
        self.api = api
        self.ctx = ctx
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.leading = trio.Event()
        self._last_renew = None

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True when this candidate holds the Lease afterwards."""
        now = self.api.now
        stamp = format_micro_time(self.api.epoch, now)
        try:
            lease = self.api.get("leases", self.name, namespace=self.namespace, ctx=self.ctx)
        except errors.NotFound:
            body = {
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": {"holderIdentity": self.identity, "leaseDurationSeconds": int(self.lease_duration),
                         "acquireTime": stamp, "renewTime": stamp, "leaseTransitions": 0},
            }
            try:
                self.api.create("leases", body, namespace=self.namespace, ctx=self.ctx, field_validation="Ignore")
                return True
            except errors.StatusError:
                return False
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity")
        if holder and holder != self.identity:
            renewed = parse_time(self.api.epoch, spec["renewTime"]) if spec.get("renewTime") else -1e18
            if now - renewed < spec.get("leaseDurationSeconds", self.lease_duration):
                return False
            spec = {**spec, "holderIdentity": self.identity, "acquireTime": stamp,
                    "leaseTransitions": spec.get("leaseTransitions", 0) + 1}
        spec = {**spec, "renewTime": stamp, "leaseDurationSeconds": int(self.lease_duration)}
        try:
            self.api.update("leases", {**lease, "spec": spec}, namespace=self.namespace, ctx=self.ctx,
                            field_validation="Ignore")
            return True
        except errors.StatusError:
            return False

    async def run(self) -> None:
        """Acquire (retrying every ``retry_period``), then renew forever; sets :attr:`leading`."""
        while True:
            ok = self.try_acquire_or_renew()
            if ok and not self.leading.is_set():
                self.leading.set()
            await trio.sleep(self.retry_period)
