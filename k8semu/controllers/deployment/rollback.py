"""Client-side rollback and restart, as modern ``kubectl rollout undo`` /
``kubectl rollout restart`` do them (``polymorphichelpers/rollback.go`` and
``objectrestarter.go``); the deployment controller itself has no rollback
step any more (the ``extensions`` ``rollbackTo`` path is gone from apps/v1).

``undo`` finds the ReplicaSet of the wanted revision (the previous one by
default) and JSON-patches the deployment's ``spec.template`` back to that
set's template (without its ``pod-template-hash`` label), carrying the set's
annotations over; the controller then sees a template matching an existing
ReplicaSet and rolls to it, giving it the next revision number.
"""

from __future__ import annotations

from typing import Any

from ...api.apiserver import JSON_PATCH, STRATEGIC_MERGE_PATCH
from ...api.meta import copy_object, is_controlled_by
from . import util

__all__ = ["RollbackError", "rollback_patch", "restart_patch"]

Obj = dict[str, Any]


class RollbackError(ValueError):
    """kubectl's client-side refusal; ``str()`` is kubectl's message (after ``error: ``)."""


def _revision_or_none(rs: Obj) -> int | None:
    try:
        return util.revision(rs) if util.REVISION_ANNOTATION in ((rs.get("metadata") or {}).get("annotations") or {}) \
            else None
    except ValueError:
        return None


def _find_revision(d: Obj, rss: list[Obj], to_revision: int) -> Obj:
    latest: Obj | None = None
    latest_rev = -1
    previous: Obj | None = None
    previous_rev = -1
    for rs in rss:
        v = _revision_or_none(rs)
        if v is None:
            continue
        if to_revision == 0:
            if latest_rev < v:
                previous, previous_rev = latest, latest_rev
                latest, latest_rev = rs, v
            elif previous_rev < v:
                previous, previous_rev = rs, v
        elif to_revision == v:
            return rs
    if to_revision > 0:
        raise RollbackError(f"unable to find specified revision {to_revision} in history")
    if previous is None:
        raise RollbackError(f'no rollout history found for deployment "{d["metadata"]["name"]}"')
    return previous


def rollback_patch(deployment: Obj, replicasets: list[Obj], to_revision: int = 0) -> Obj:
    """What ``kubectl rollout undo deployment/NAME [--to-revision=N]`` sends.

    Args:
        deployment: the Deployment (wire form).
        replicasets: ReplicaSets of its namespace; only those it controls count.
        to_revision: the revision to go back to; 0 means the previous one.
    Returns:
        ``{"patchType": "application/json-patch+json", "patch": [ops], "message":
        "deployment.apps/web rolled back"}``; when the template already matches,
        ``patch`` is None and ``message`` is ``deployment.apps/web skipped rollback
        (current template already matches revision N)``.
    Raises:
        RollbackError: ``unable to find specified revision N in history``,
            ``no rollout history found for deployment "web"``, or the deployment
            is paused (``you cannot rollback a paused deployment; resume it first
            with 'kubectl rollout resume' and try again``).
    """
    name = f"deployment.apps/{deployment['metadata']['name']}"
    if to_revision < 0:
        raise RollbackError(f"unable to find specified revision {to_revision} in history")
    owned = [rs for rs in replicasets if is_controlled_by(rs, deployment)]
    target = _find_revision(deployment, owned, to_revision)
    if (deployment.get("spec") or {}).get("paused"):
        raise RollbackError("you cannot rollback a paused deployment; resume it first with "
                            "'kubectl rollout resume' and try again")
    template = copy_object((target.get("spec") or {}).get("template") or {})
    if util.equal_ignore_hash(template, (deployment.get("spec") or {}).get("template")):
        return {"patchType": JSON_PATCH, "patch": None,
                "message": f"{name} skipped rollback (current template already matches revision {to_revision})"}
    labels = (template.get("metadata") or {}).get("labels")
    if labels is not None:
        labels.pop(util.DEFAULT_UNIQUE_LABEL_KEY, None)
    d_ann = (deployment.get("metadata") or {}).get("annotations") or {}
    annotations = {k: d_ann[k] for k in sorted(util.ANNOTATIONS_TO_SKIP) if k in d_ann}
    for k, v in ((target.get("metadata") or {}).get("annotations") or {}).items():
        if k not in util.ANNOTATIONS_TO_SKIP:
            annotations[k] = v
    patch = [
        {"op": "replace", "path": "/spec/template", "value": template},
        {"op": "replace", "path": "/metadata/annotations", "value": annotations},
    ]
    return {"patchType": JSON_PATCH, "patch": patch, "message": f"{name} rolled back"}


def restart_patch(deployment: Obj, stamp: str) -> Obj:
    """What ``kubectl rollout restart deployment/NAME`` sends: a strategic merge
    patch setting the template annotation ``kubectl.kubernetes.io/restartedAt``
    to ``stamp`` (RFC 3339).

    Returns:
        ``{"patchType": "application/strategic-merge-patch+json", "patch": {...},
        "message": "deployment.apps/web restarted"}``.
    Raises:
        RollbackError: ``can't restart paused deployment (run rollout resume first)``.
    """
    if (deployment.get("spec") or {}).get("paused"):
        raise RollbackError("can't restart paused deployment (run rollout resume first)")
    patch = {"spec": {"template": {"metadata": {"annotations": {util.RESTARTED_AT_ANNOTATION: stamp}}}}}
    return {"patchType": STRATEGIC_MERGE_PATCH, "patch": patch,
            "message": f"deployment.apps/{deployment['metadata']['name']} restarted"}
