"""The event log: k8semu's etcd and the cluster's whole history.

Public names: :class:`EventLog`, :class:`Record`, :class:`Watch`,
:class:`Bookmark`, the store errors, and :class:`LogFormatError`.
"""

from .log import (
    Compacted,
    EventLog,
    FutureRevision,
    KeyExists,
    KeyNotFound,
    RevisionMismatch,
    StoreError,
    resource_of,
)
from .logfile import FORMAT_VERSION, LogFormatError
from .record import ADDED, DELETED, MODIFIED, Record, collector_paused
from .watch import Bookmark, Watch

__all__ = [
    "ADDED",
    "DELETED",
    "MODIFIED",
    "Bookmark",
    "collector_paused",
    "Compacted",
    "EventLog",
    "FORMAT_VERSION",
    "FutureRevision",
    "KeyExists",
    "KeyNotFound",
    "LogFormatError",
    "Record",
    "RevisionMismatch",
    "StoreError",
    "Watch",
    "resource_of",
]
