"""k8semu.scheduler: kube-scheduler's framework, default plugins, cache and queue as a pure library.

Wiring (done by the scheduler component that owns informers and the API)::

    cache = Cache()                      # fed by node/pod/namespace/PVC/PDB informers
    fw = new_frameworks(config)["default-scheduler"]
    queue = SchedulingQueue(fw.queue_sort_less(), fw.run_pre_enqueue)
    qpi = queue.pop(now)
    result = fw.schedule_one(qpi.pod, cache.snapshot(), rng, nominator=queue)

See :mod:`k8semu.scheduler.framework` for the cycle and :mod:`.cache` / :mod:`.queue`.
"""

from .cache import Cache, Snapshot
from .config import Profile, SchedulerConfiguration, default_profile, load_configuration
from .framework import (Code, CycleState, Explanation, FitError, Framework, NodeExplanation, PostFilterResult,
                        PreFilterResult, Registry, ScheduleResult, Status, new_frameworks,
                        num_feasible_nodes_to_find, select_host)
from .queue import QueuedPodInfo, SchedulingQueue
from .types import NodeInfo, PodInfo, Resource, pod_requests

__all__ = [
    "Cache",
    "Code",
    "CycleState",
    "Explanation",
    "FitError",
    "Framework",
    "NodeExplanation",
    "NodeInfo",
    "PodInfo",
    "PostFilterResult",
    "PreFilterResult",
    "Profile",
    "QueuedPodInfo",
    "Registry",
    "Resource",
    "ScheduleResult",
    "SchedulerConfiguration",
    "SchedulingQueue",
    "Snapshot",
    "Status",
    "default_profile",
    "load_configuration",
    "new_frameworks",
    "num_feasible_nodes_to_find",
    "pod_requests",
    "select_host",
]
