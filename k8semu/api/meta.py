"""Object metadata helpers: timestamps, UIDs, generated names, owner references.

Everything here is deterministic: times come from the cluster's virtual clock
(seconds since the cluster's epoch), randomness from the cluster's seeded
``random.Random``.
"""

from __future__ import annotations

import copy
import random
from datetime import datetime, timedelta, timezone
from typing import Any

import orjson

__all__ = [
    "copy_object",
    "DEFAULT_EPOCH",
    "format_time",
    "parse_time",
    "new_uid",
    "random_suffix",
    "controller_of",
    "is_controlled_by",
]

#: Wall-clock date that virtual time 0 maps to, unless the cluster config says otherwise.
DEFAULT_EPOCH = datetime(2025, 1, 1, tzinfo=timezone.utc)

# kube's utilrand.String alphabet: no vowels (no accidental words), no 0/1/3 look-alikes.
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"


def format_time(epoch: datetime, t: float) -> str:
    """RFC 3339 in seconds, as metav1.Time serializes: ``2025-01-01T00:02:30Z``."""
    return (epoch + timedelta(seconds=int(t))).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(epoch: datetime, t: float) -> str:
    """RFC 3339 with microseconds, as metav1.MicroTime (Lease renewTime, events.k8s.io eventTime)."""
    return (epoch + timedelta(seconds=t)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(epoch: datetime, text: str) -> float:
    """The virtual seconds of an RFC 3339 timestamp (inverse of :func:`format_time`)."""
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return (dt - epoch).total_seconds()


def new_uid(rng: random.Random) -> str:
    """A version-4 UUID string drawn from the cluster's seeded RNG."""
    n = rng.getrandbits(128)
    n = (n & ~(0xF000 << 64)) | (0x4000 << 64)  # version 4
    n = (n & ~(0xC000 << 48)) | (0x8000 << 48)  # RFC 4122 variant
    h = f"{n:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def random_suffix(rng: random.Random, n: int = 5) -> str:
    """``n`` characters as kube's generateName suffix (``web-7c9f8``)."""
    return "".join(rng.choice(_ALPHANUMS) for _ in range(n))


def controller_of(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The ownerReference with ``controller: true``, or None (metav1.GetControllerOf)."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref
    return None


def is_controlled_by(obj: dict[str, Any], owner: dict[str, Any]) -> bool:
    """Whether ``obj``'s controller reference points at ``owner``'s uid."""
    ref = controller_of(obj)
    return ref is not None and ref.get("uid") == owner["metadata"].get("uid")


def copy_object(obj: Any) -> Any:
    """A deep copy of a wire-form (JSON-shaped) object: dicts, lists, strings, numbers, booleans, None.

    A JSON round trip through orjson (about 6x faster than :func:`copy.deepcopy`
    on a Pod); anything that is not JSON-shaped (a datetime from YAML, a
    non-string key, an integer beyond 64 bits) falls back to ``copy.deepcopy``.
    A NaN or infinite float (which JSON cannot carry, and kube-apiserver never
    stores) comes back as None.
    """
    try:
        return orjson.loads(orjson.dumps(obj, option=orjson.OPT_PASSTHROUGH_DATETIME
                                         | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS))
    except TypeError:
        return copy.deepcopy(obj)
