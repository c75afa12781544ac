"""Scheduling helpers shared by the scheduler, the DaemonSet controller and the
taint-eviction controller: taints, tolerations, node selectors and required node affinity.

They mirror ``k8s.io/component-helpers/scheduling/corev1`` (``nodeaffinity``,
``FindMatchingUntoleratedTaint``) and ``v1.Toleration.ToleratesTaint``.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable, Mapping, Sequence

__all__ = [
    "tolerates_taint",
    "tolerations_tolerate_taint",
    "find_untolerated_taint",
    "node_selector_term_matches",
    "RequiredNodeAffinity",
]


_INT64 = re.compile(r"[+-]?[0-9]+")


def _is_int64(s: str) -> bool:
    return bool(_INT64.fullmatch(s)) and -(2**63) <= int(s) < 2**63


def tolerates_taint(tol: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Upstream ``Toleration.ToleratesTaint``: effect, key, then operator Equal/Exists."""
    if tol.get("effect") and tol.get("effect") != taint.get("effect"):
        return False
    if tol.get("key") and tol.get("key") != taint.get("key"):
        return False
    op = tol.get("operator") or "Equal"
    if op == "Equal":
        return (tol.get("value") or "") == (taint.get("value") or "")
    return op == "Exists"


def tolerations_tolerate_taint(tols: Iterable[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    """Whether any toleration tolerates ``taint``."""
    return any(tolerates_taint(t, taint) for t in tols)


def _no_schedule(taint: Mapping[str, Any]) -> bool:
    return taint.get("effect") in ("NoSchedule", "NoExecute")


def find_untolerated_taint(taints: Sequence[Mapping[str, Any]], tols: Sequence[Mapping[str, Any]],
                           include: Callable[[Mapping[str, Any]], bool] = _no_schedule) -> Mapping[str, Any] | None:
    """The first taint (among those ``include`` accepts, by default NoSchedule and
    NoExecute) that no toleration tolerates, or None."""
    for taint in taints:
        if include(taint) and not tolerations_tolerate_taint(tols, taint):
            return taint
    return None


def _req_matches(req: Mapping[str, Any], value: str | None) -> bool:
    op = req.get("operator")
    values = req.get("values") or []
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt"):
        if value is None or len(values) != 1 or not _is_int64(value) or not _is_int64(values[0]):
            return False
        return int(value) > int(values[0]) if op == "Gt" else int(value) < int(values[0])
    return False


def node_selector_term_matches(term: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """One ``NodeSelectorTerm``: all matchExpressions (labels) and matchFields
    (``metadata.name`` only) hold; a term with neither matches nothing."""
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    for r in exprs:
        if not _req_matches(r, labels.get(r.get("key", ""))):
            return False
    for r in fields:
        if r.get("key") != "metadata.name" or r.get("operator") not in ("In", "NotIn"):
            return False
        if not _req_matches(r, meta.get("name")):
            return False
    return True


class RequiredNodeAffinity:
    """A pod's ``nodeSelector`` AND required node affinity (upstream ``nodeaffinity.RequiredNodeAffinity``)."""

    __slots__ = ("selector", "terms")

    def __init__(self, pod: Mapping[str, Any]) -> None:
        spec = pod.get("spec") or {}
        self.selector: Mapping[str, str] = spec.get("nodeSelector") or {}
        req = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
               .get("requiredDuringSchedulingIgnoredDuringExecution"))
        self.terms: list[Mapping[str, Any]] | None = None if req is None else list(req.get("nodeSelectorTerms") or [])

    def matches(self, node: Mapping[str, Any]) -> bool:
        """Whether ``node`` satisfies both; terms are ORed (an empty list matches nothing)."""
        if self.selector:
            labels = (node.get("metadata") or {}).get("labels") or {}
            for k, v in self.selector.items():
                if labels.get(k) != v:
                    return False
        if self.terms is None:
            return True
        return any(node_selector_term_matches(t, node) for t in self.terms)
