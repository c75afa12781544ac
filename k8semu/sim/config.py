"""Cluster configuration: which nodes exist, their sizes, labels and taints.

A configuration file is YAML (read with ruamel.yaml)::

    kind: ClusterConfig          # optional
    nodes:
      - name: control-plane
        role: control-plane      # tainted node-role.kubernetes.io/control-plane:NoSchedule
      - name: node-1
        cpu: "8"                 # Kubernetes quantities
        memory: 16Gi
        pods: 110
        zone: zone-a             # topology.kubernetes.io/zone
        labels: {disktype: ssd}
        taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
      - count: 3                 # node-2 … node-4 with the defaults
    imagePullSeconds: 2          # optional: scales every image's virtual pull time
    podSubnet: 10.244.0.0/16     # optional: the cluster CIDR nodes' /24 podCIDRs come from
    storage: local-path          # optional: kind's default StorageClass and its provisioner
                                 # (none, the default: no StorageClass, as kubeadm leaves it)

Defaults (``ClusterConfig.default()``): one ``control-plane`` node (tainted
``node-role.kubernetes.io/control-plane:NoSchedule``) and three workers
``node-1`` … ``node-3``, each with 4 CPU, 8 Gi memory and 110 pods, labelled
``kubernetes.io/hostname``, ``kubernetes.io/os=linux``, ``kubernetes.io/arch=amd64``.
Node *i* (0 = the first node) gets the InternalIP ``172.18.0.<i+2>`` (as kind's
Docker network) and, through the node IPAM controller, the *i*-th ``/24`` of the
pod subnet as its podCIDR: ``10.244.<i>.0/24`` with the default ``10.244.0.0/16``
(kind's and flannel's), which has room for 256 nodes. A larger cluster without
``podSubnet`` gets the smallest ``10.128.0.0/N`` with a ``/24`` for every node
(``10.128.0.0/14`` for 1,000 nodes, ``/11`` for 5,000), clear of the Service
range ``10.96.0.0/12``.

``storage`` (``none`` or ``local-path``; ``k8semu cluster create --storage``, which wins
over the file) is recorded in the log header only when it is ``local-path``: the cluster then
starts with kind's default StorageClass ``standard`` and the local-path-provisioner
(:func:`k8semu.sim.kubeadm.bootstrap_local_path`,
:class:`k8semu.controllers.localpath.LocalPathProvisioner`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ipaddress
import math

import attrs

__all__ = ["NodeConfig", "ClusterConfig", "ConfigError", "CONTROL_PLANE_TAINT", "STORAGE_VALUES"]

#: values of the ``storage`` knob (``none``: no StorageClass, no provisioner)
STORAGE_VALUES = ("none", "local-path")
CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}


class ConfigError(ValueError):
    """A cluster configuration that cannot be used; the message names the file and field."""


@attrs.frozen
class NodeConfig:
    """One node: name, role, capacity (Kubernetes quantities), labels, taints, zone."""

    name: str
    role: str = "worker"
    cpu: str = "4"
    memory: str = "8Gi"
    pods: int = 110
    ephemeral_storage: str = "100Gi"
    zone: str | None = None
    labels: dict[str, str] = attrs.field(factory=dict)
    taints: tuple[dict[str, Any], ...] = ()
    internal_ip: str = ""

    def node_labels(self) -> dict[str, str]:
        """The labels the kubelet registers the Node with."""
        out = {
            "beta.kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/hostname": self.name,
            "kubernetes.io/os": "linux",
        }
        if self.role == "control-plane":
            out["node-role.kubernetes.io/control-plane"] = ""
            out["node.kubernetes.io/exclude-from-external-load-balancers"] = ""
        if self.zone:
            out["topology.kubernetes.io/zone"] = self.zone
        out.update(self.labels)
        return out

    def node_taints(self) -> list[dict[str, Any]]:
        taints = [dict(t) for t in self.taints]
        if self.role == "control-plane" and not any(t.get("key") == CONTROL_PLANE_TAINT["key"] for t in taints):
            taints.insert(0, dict(CONTROL_PLANE_TAINT))
        return taints

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self, recurse=False) | {"taints": list(self.taints)}


@attrs.frozen
class ClusterConfig:
    """The cluster's nodes and global knobs (recorded in the log header)."""

    nodes: tuple[NodeConfig, ...]
    image_pull_seconds: float | None = None
    pod_subnet: str | None = None
    #: ``"local-path"`` (kind's default StorageClass and provisioner) or None (none)
    storage: str | None = None
    _positions: dict[str, int] = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_positions", {n.name: i for i, n in enumerate(self.nodes)})

    @property
    def pod_cidr(self) -> str:
        """The cluster CIDR (kube-controller-manager's and kube-proxy's ``--cluster-cidr``)."""
        if self.pod_subnet:
            return self.pod_subnet
        if len(self.nodes) <= 256:
            return "10.244.0.0/16"
        return f"10.128.0.0/{24 - math.ceil(math.log2(len(self.nodes)))}"

    @classmethod
    def default(cls, workers: int = 3) -> "ClusterConfig":
        """One control-plane node and ``workers`` workers."""
        return cls._numbered([{"name": "control-plane", "role": "control-plane"}, {"count": workers}])

    @classmethod
    def _numbered(cls, entries: list[dict[str, Any]], source: str = "config") -> "ClusterConfig":
        nodes: list[NodeConfig] = []
        next_worker = 1
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict):
                raise ConfigError(f"{source}: nodes[{i}]: must be a mapping")
            entry = dict(entry)
            count = entry.pop("count", None)
            names = []
            if count is not None:
                if not isinstance(count, int) or count < 0:
                    raise ConfigError(f"{source}: nodes[{i}].count: must be a non-negative integer")
                if "name" in entry:
                    raise ConfigError(f"{source}: nodes[{i}]: give either name or count")
                names = [f"node-{next_worker + k}" for k in range(count)]
                next_worker += count
            else:
                if not entry.get("name"):
                    raise ConfigError(f"{source}: nodes[{i}].name: required")
                names = [entry.pop("name")]
            for name in names:
                try:
                    nodes.append(_node(name, entry, len(nodes)))
                except (TypeError, ValueError) as e:
                    raise ConfigError(f"{source}: nodes[{i}]: {e}") from None
        seen = set()
        for n in nodes:
            if n.name in seen:
                raise ConfigError(f"{source}: duplicate node name {n.name!r}")
            seen.add(n.name)
        return cls(tuple(nodes))

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "config") -> "ClusterConfig":
        """Build from a parsed YAML/JSON mapping (``nodes`` plus global knobs)."""
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: must be a mapping")
        unknown = set(data) - {"kind", "apiVersion", "nodes", "imagePullSeconds", "podSubnet", "storage"}
        if unknown:
            raise ConfigError(f"{source}: unknown field {sorted(unknown)[0]!r}")
        cfg = cls._numbered(list(data.get("nodes") or []), source) if data.get("nodes") else cls.default()
        subnet = data.get("podSubnet")
        if subnet is not None:
            try:
                net = ipaddress.IPv4Network(str(subnet))
            except ValueError as e:
                raise ConfigError(f"{source}: podSubnet: {e}") from None
            if 2 ** (24 - min(net.prefixlen, 24)) < len(cfg.nodes) or net.prefixlen > 24:
                raise ConfigError(f"{source}: podSubnet: {subnet} has fewer /24s than the "
                                  f"{len(cfg.nodes)} nodes")
            subnet = str(net)
        storage = data.get("storage")
        if storage is not None and storage not in STORAGE_VALUES:
            raise ConfigError(f"{source}: storage: must be " + " or ".join(f'"{v}"' for v in STORAGE_VALUES)
                              + f", not {storage!r}")
        return attrs.evolve(cfg, image_pull_seconds=data.get("imagePullSeconds"), pod_subnet=subnet,
                            storage=None if storage in (None, "none") else storage)

    @classmethod
    def load(cls, path: str | Path) -> "ClusterConfig":
        """Read a YAML configuration file.

        Raises:
            ConfigError: unreadable YAML or a bad field, naming the file.
        """
        from ruamel.yaml import YAML
        from ruamel.yaml.error import YAMLError

        try:
            data = YAML(typ="safe").load(Path(path).read_text())
        except OSError as e:
            why = e.strerror or str(e)
            raise ConfigError(f"{path}: {why[:1].lower()}{why[1:]}") from None
        except UnicodeDecodeError:
            raise ConfigError(f"{path}: not UTF-8 text") from None
        except YAMLError as e:
            raise ConfigError(f"{path}: invalid YAML: {e}") from None
        return cls.from_dict(data or {}, str(path))

    def to_dict(self) -> dict[str, Any]:
        """The form stored in the log header (round-trips through :meth:`from_header`)."""
        out: dict[str, Any] = {"nodes": [n.to_dict() for n in self.nodes]}
        if self.image_pull_seconds is not None:
            out["imagePullSeconds"] = self.image_pull_seconds
        if self.pod_subnet is not None:
            out["podSubnet"] = self.pod_subnet
        if self.storage is not None:
            out["storage"] = self.storage
        return out

    @classmethod
    def from_header(cls, data: dict[str, Any]) -> "ClusterConfig":
        """Inverse of :meth:`to_dict` (an empty header gives the default cluster)."""
        if not data.get("nodes"):
            return cls.default()
        nodes = tuple(
            NodeConfig(**{**n, "taints": tuple(n.get("taints") or ()), "labels": dict(n.get("labels") or {})})
            for n in data["nodes"]
        )
        return cls(nodes, data.get("imagePullSeconds"), data.get("podSubnet"), data.get("storage"))

    def node(self, name: str) -> NodeConfig:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def index(self, name: str) -> int:
        """Position of the node (0 = first): its IP is 172.18.0.<index+2>, its podCIDR the index-th /24.

        Raises:
            KeyError: no node has that name.
        """
        return self._positions[name]


def _node(name: str, entry: dict[str, Any], index: int) -> NodeConfig:
    from ..api.quantity import parse_quantity

    allowed = {"role", "cpu", "memory", "pods", "ephemeralStorage", "zone", "labels", "taints"}
    unknown = set(entry) - allowed
    if unknown:
        raise ValueError(f"unknown field {sorted(unknown)[0]!r}")
    role = entry.get("role", "worker")
    if role not in ("worker", "control-plane"):
        raise ValueError(f'role: must be "worker" or "control-plane", not {role!r}')
    for q in ("cpu", "memory", "ephemeralStorage"):
        if q in entry:
            parse_quantity(str(entry[q]))
    taints = tuple(dict(t) for t in entry.get("taints") or ())
    for t in taints:
        if t.get("effect") not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise ValueError(f"taints: effect must be NoSchedule, PreferNoSchedule or NoExecute, not {t.get('effect')!r}")
    return NodeConfig(
        name=name,
        role=role,
        cpu=str(entry.get("cpu", "4")),
        memory=str(entry.get("memory", "8Gi")),
        pods=int(entry.get("pods", 110)),
        ephemeral_storage=str(entry.get("ephemeralStorage", "100Gi")),
        zone=entry.get("zone"),
        labels={str(k): str(v) for k, v in (entry.get("labels") or {}).items()},
        taints=taints,
        internal_ip=f"172.18.0.{index + 2}" if index < 253 else f"172.18.{(index + 2) // 256}.{(index + 2) % 256}",
    )
