"""Pod networking on one node: the CNI ``bridge`` plugin with ``host-local`` IPAM.

kind's default CNI (kindnet) hands each pod an address from the node's
``spec.podCIDR`` through the ``host-local`` IPAM plugin. host-local's
allocator, which this module mirrors:

- the usable range is the subnet minus its network address, its broadcast
  address and the gateway (the first host address, ``.1``, which the bridge
  owns); the first pod on ``10.244.1.0/24`` gets ``10.244.1.2``;
- allocation is *round robin*: it continues after the last address it handed
  out (``last_reserved_ip`` on disk), skipping addresses in use, and wraps
  around at the end of the range — so a freed address is not reused at once;
- an address is released when the pod sandbox is torn down.

:class:`HostLocalIPAM` is pure bookkeeping over ``ipaddress``; the kubelet
owns one per node and rebuilds it from its pods' ``status.podIPs`` when it
restarts (the real plugin reads them from ``/var/lib/cni/networks``).
"""

from __future__ import annotations

import ipaddress

__all__ = ["HostLocalIPAM", "RangeFull"]


class RangeFull(Exception):
    """No free address is left in the node's pod CIDR (CNI error ``no IP addresses available in range set``)."""


class HostLocalIPAM:
    """host-local IPAM over one subnet.

    Args:
        cidr: the node's pod CIDR, e.g. ``"10.244.1.0/24"``.

    Attributes:
        gateway: the bridge's address (first host address), never handed out.
    """

    def __init__(self, cidr: str) -> None:
        self.network = ipaddress.ip_network(cidr, strict=False)
        self.gateway = self.network.network_address + 1
        self._first = int(self.network.network_address) + 2
        self._last = int(self.network.broadcast_address) - 1
        self._in_use: dict[str, str] = {}  # ip -> owner (sandbox / pod uid)
        self._last_reserved: int | None = None

    @property
    def allocated(self) -> dict[str, str]:
        """Addresses in use: ip -> owner, in address order."""
        return {ip: self._in_use[ip] for ip in sorted(self._in_use, key=lambda s: int(ipaddress.ip_address(s)))}

    def allocate(self, owner: str) -> str:
        """An address for ``owner`` (the same one again if it already holds one).

        Raises:
            RangeFull: every address of the range is in use.
        """
        for ip, who in self._in_use.items():
            if who == owner:
                return ip
        size = self._last - self._first + 1
        start = self._first if self._last_reserved is None else self._last_reserved + 1
        for k in range(size):
            cand = self._first + (start - self._first + k) % size
            ip = str(ipaddress.ip_address(cand))
            if ip not in self._in_use:
                self._in_use[ip] = owner
                self._last_reserved = cand
                return ip
        raise RangeFull(f"no IP addresses available in range set: {self._first_ip()}-{self._last_ip()}")

    def reserve(self, ip: str, owner: str, *, last: bool = False) -> None:
        """Mark ``ip`` as held by ``owner`` (rebuilding state); ``last`` also makes it the
        last reserved address, so the next allocation continues after it."""
        if ip not in self._in_use and self._contains(ip):
            self._in_use[ip] = owner
        if last and self._contains(ip):
            self._last_reserved = int(ipaddress.ip_address(ip))

    def release(self, owner: str) -> str | None:
        """Free the address ``owner`` holds; returns it (None if it held none)."""
        for ip, who in list(self._in_use.items()):
            if who == owner:
                del self._in_use[ip]
                return ip
        return None

    def _contains(self, ip: str) -> bool:
        try:
            n = int(ipaddress.ip_address(ip))
        except ValueError:
            return False
        return self._first <= n <= self._last

    def _first_ip(self) -> str:
        return str(ipaddress.ip_address(self._first))

    def _last_ip(self) -> str:
        return str(ipaddress.ip_address(self._last))
