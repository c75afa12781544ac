"""Time travel and replay over the event log (see ``docs/replay.md``).

Reading the past (:mod:`.view`, :mod:`.history`): open a log read-only,
resolve a revision or virtual time, the cluster as an API server at any
revision, an object's history with readable diffs, the cluster diff between
two points, filtered timelines, a pod's creation trace. Re-execution
(:mod:`.replay`): verified replay, stopping early, forking. :mod:`.bisect`:
the first revision at which a condition holds. :mod:`.importers`: audit logs
and SimKube traces into k8semu logs.
"""

from .history import (Change, ClusterDiff, TraceStep, Version, cluster_diff, describe_key, diff_objects,
                      object_history, object_key, timeline, trace_pod)
from .rerun import (Divergence, ReplayError, ReplayResult, Session, fork, is_input, replay, sessions_of,
                     write_log)
from .view import (LogView, PastCluster, PointError, add_at_argument, open_cluster_at, open_log,
                   resolve_point, revision_at_time, state_at)

__all__ = [
    "Change", "ClusterDiff", "TraceStep", "Version", "cluster_diff", "describe_key", "diff_objects",
    "object_history", "object_key", "timeline", "trace_pod",
    "Divergence", "ReplayError", "ReplayResult", "Session", "fork", "is_input", "replay", "sessions_of",
    "write_log",
    "LogView", "PastCluster", "PointError", "add_at_argument", "open_cluster_at", "open_log",
    "resolve_point", "revision_at_time", "state_at",
]
