"""Time travel and replay over the event log (see ``docs/replay.md``).

Reading the past (:mod:`.view`, :mod:`.history`): open a log read-only,
resolve a revision or virtual time (one rule for every point: empty, or past
the end, is an error), the cluster as an API server at any revision, an
object's history with readable diffs, the cluster diff between two points or
between two logs, filtered timelines, a pod's creation trace and the objects
a name had over time (incarnations). Re-execution (:mod:`.rerun`): verified
replay, stopping early, forking, and the checks of an output file.
:mod:`.bisect`: the first revision at which a condition holds.
:mod:`.importers`: audit logs and SimKube traces into k8semu logs.
"""

from .history import (Change, ClusterDiff, Incarnation, TraceStep, Version, cluster_diff, describe_key,
                      diff_objects, incarnations, logs_diff, object_history, object_key, pick_incarnation,
                      timeline, trace_pod)
from .rerun import (Divergence, ForkRefused, OutputError, ReplayError, ReplayResult, Session, check_output, fork,
                    is_input, replay, sessions_of, write_log)
from .view import (LogView, PastCluster, PointError, add_at_argument, check_point_text, open_cluster_at, open_log,
                   resolve_point, revision_at_time, state_at)

__all__ = [
    "Change", "ClusterDiff", "Incarnation", "TraceStep", "Version", "cluster_diff", "describe_key",
    "diff_objects", "incarnations", "logs_diff", "object_history", "object_key", "pick_incarnation",
    "timeline", "trace_pod",
    "Divergence", "ForkRefused", "OutputError", "ReplayError", "ReplayResult", "Session", "check_output",
    "fork", "is_input", "replay", "sessions_of", "write_log",
    "LogView", "PastCluster", "PointError", "add_at_argument", "check_point_text", "open_cluster_at",
    "open_log", "resolve_point", "revision_at_time", "state_at",
]
