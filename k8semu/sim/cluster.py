"""The cluster: one event log, the API server over it, and (with the runtime) its components.

A cluster lives in one log file. :meth:`Cluster.create` starts a new one (the
header records the seed and configuration) and bootstraps what kube-apiserver
creates first, then what ``kubeadm init`` adds to ``kube-system``
(:mod:`k8semu.sim.kubeadm`); :meth:`Cluster.open` continues an existing one.

Randomness: each opening derives its RNG from the seed *and* the log's
revision (``random.Random(f"{seed}:{revision}")``, which hashes the string
with SHA-512, independent of ``PYTHONHASHSEED``), so a sequence of commands
on a cluster file is reproducible without storing the RNG's state.

Time: virtual seconds since the cluster started; a newly opened cluster
resumes at the time of its last record.
"""

from __future__ import annotations

import os
import random
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import ClusterConfig

from ..api.apiserver import APIServer
from ..api.bootstrap import bootstrap
from ..api.meta import DEFAULT_EPOCH
from ..store import EventLog
from .clock import VirtualClock

__all__ = ["Cluster", "DEFAULT_CLUSTER_PATH"]

DEFAULT_CLUSTER_PATH = Path(".k8semu") / "cluster.log"


class Cluster:
    """A cluster over one event log.

    Attributes:
        log: the event log (etcd).
        api: the API server.
        seed: the cluster's seed (int).
        config: the cluster configuration (dict, as in the log header).
        nodes: the same as a :class:`~k8semu.sim.config.ClusterConfig`.
        clock: the cluster's :class:`~k8semu.sim.clock.VirtualClock` (virtual seconds).
        time: the clock's current value; setting it moves the clock forward.
    """

    def __init__(self, log: EventLog, seed: int, config: dict[str, Any]) -> None:
        self.log = log
        self.seed = seed
        self.config = config
        # the clock goes on from where the last session left it: its end mark's time, which
        # can be later than the last record (a run that ended quiet)
        last = log.records(log.compact_revision)[-1:] if log.revision else []
        start = last[0].time if last else 0.0
        if log.marks:
            start = max(start, float(log.marks[-1].get("t", start)))
        self.clock = VirtualClock(start)
        log.clock = self.clock.now
        epoch = datetime.fromisoformat(config.get("epoch", DEFAULT_EPOCH.isoformat()).replace("Z", "+00:00"))
        self.api = APIServer(log, rng=random.Random(f"{seed}:{log.revision}"), epoch=epoch)
        from .config import ClusterConfig

        self.nodes = ClusterConfig.from_header(config)
        #: virtual time at which this session brought the cluster back after it was off (``serve``
        #: catching its clock up with the wall clock), or None
        self.resumed_at: float | None = None

    @property
    def time(self) -> float:
        """Virtual seconds since the cluster started."""
        return self.clock.now()

    @time.setter
    def time(self, t: float) -> None:
        self.clock.jump(t - self.clock.now())

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        seed: int = 0,
        config: "dict[str, Any] | ClusterConfig | None" = None,
        sync: str = "flush",
        kubeadm_addons: bool | None = None,
        storage: str | None = None,
    ) -> "Cluster":
        """Start a new cluster (in memory when ``path`` is None) and bootstrap it: what
        kube-apiserver creates, then (with ``kubeadm_addons``, as the CLI's clusters have) kubeadm's
        kube-system: CoreDNS, the kube-proxy DaemonSet, the control plane's static pods and its
        leader-election Leases (:mod:`k8semu.sim.kubeadm`). Without them (the default here, for
        tests and embedding, unless ``config`` records ``kubeadm: true``) the cluster is lighter:
        the same API and components, an empty kube-system.

        ``storage`` (``"local-path"`` or ``"none"``; default: what ``config`` says, else none):
        with ``"local-path"``, kind's default StorageClass ``standard`` and its
        local-path-provisioner are added (:func:`~k8semu.sim.kubeadm.bootstrap_local_path`),
        kubeadm add-ons or not, and the header records ``storage: local-path``.

        Raises:
            FileExistsError: ``path`` already holds a cluster.
        """
        from .config import ClusterConfig

        if isinstance(config, ClusterConfig):
            config = config.to_dict()
        config = dict(config or ClusterConfig.default().to_dict())
        if kubeadm_addons is None:
            kubeadm_addons = bool(config.get("kubeadm"))  # a replay re-creates what the header says
        config["kubeadm"] = bool(kubeadm_addons)
        if storage is not None:
            from .config import STORAGE_VALUES

            if storage not in STORAGE_VALUES:
                raise ValueError(f"storage: must be one of {', '.join(STORAGE_VALUES)}, not {storage!r}")
            config.pop("storage", None)
            if storage != "none":
                config["storage"] = storage
        config.setdefault("epoch", DEFAULT_EPOCH.strftime("%Y-%m-%dT%H:%M:%SZ"))
        if path is not None and Path(path).exists() and Path(path).stat().st_size:
            raise FileExistsError(f"{path}: a cluster already exists there")
        log = EventLog(path=path, header={"seed": seed, "cluster": config}, sync=sync)
        cluster = cls(log, seed, config)
        bootstrap(cluster.api)
        from .kubeadm import bootstrap_kubeadm, bootstrap_local_path

        if kubeadm_addons:
            bootstrap_kubeadm(cluster)  # kube-system as kubeadm init leaves it
        if config.get("storage") == "local-path":
            bootstrap_local_path(cluster)  # what kind applies next: its default StorageClass
        return cluster

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, read_only: bool = False, sync: str = "flush") -> "Cluster":
        """Continue the cluster in ``path``.

        Raises:
            FileNotFoundError: no such file.
            LogFormatError: the file is damaged (other than a torn last line).
        """
        from ..api.fieldpath import share_managed_fields

        log = EventLog.open(path, sync=sync, read_only=read_only, on_decode=share_managed_fields)
        return cls(log, int(log.header.get("seed", 0)), dict(log.header.get("cluster") or {}))

    def close(self) -> None:
        """Flush and close the log file (which may write its snapshot first: see
        :meth:`~k8semu.store.EventLog.close`)."""
        self.log.close()
