"""The ClusterRole aggregation controller, as kube-controller-manager's
``clusterrole-aggregation-controller`` (pkg/controller/clusterroleaggregation).

Design
======

It watches ClusterRoles. Any add, update or delete enqueues *every* ClusterRole
that has an ``aggregationRule`` (upstream does the same: the set is small and
the dependency graph unknown), in name order. Syncing one such role computes
its rules afresh from the cache: for each ``clusterRoleSelectors`` entry in
order, the ClusterRoles its labels match, sorted by name and the role itself
left out, contribute their ``rules`` in order, a rule already collected
(semantically equal: a missing list equals an empty one) being skipped. When
the result differs from the role's ``rules`` it is written by server-side
apply (field manager ``clusterrole-aggregation-controller``, ``force``), an
apply configuration holding only the name and the new ``rules`` — so the
aggregated role's own rules are *replaced*, never merged. Roles that feed
other aggregated roles (``view`` → ``edit`` → ``admin``) converge as each
write enqueues the others again.

The bootstrap ``admin``/``edit``/``view`` roles are created already
aggregated (:func:`k8semu.api.rbac.bootstrap_policy`), so on a new cluster
this controller finds nothing to write; it acts once a user adds a role
labelled e.g. ``rbac.authorization.k8s.io/aggregate-to-view: "true"`` or a
ClusterRole of their own with an ``aggregationRule``.
"""

from __future__ import annotations

from typing import Any

from ..api import errors
from ..api.apiserver import APPLY_PATCH
from ..api.rbac import RULE_FIELDS, RBAC_API_VERSION, aggregated_rules, rule_key
from ..client.component import Component
from ..client.informer import EventHandler

__all__ = ["ClusterRoleAggregationController", "FIELD_MANAGER"]

Obj = dict[str, Any]

#: The field manager (and actor) of the controller's writes.
FIELD_MANAGER = "clusterrole-aggregation-controller"

def _apply_rule(rule: Obj) -> Obj:
    """``toApplyPolicyRule``: the five list fields, empty ones left out."""
    return {f: list(rule[f]) for f in RULE_FIELDS if rule.get(f)}


class ClusterRoleAggregationController(Component):
    """Keeps each aggregated ClusterRole's ``rules`` the union of the roles its selectors
    match (actor ``clusterrole-aggregation-controller``)."""

    name = "clusterrole-aggregation-controller"

    def __init__(self, api: Any, name: str | None = None, user: Any = None) -> None:
        super().__init__(api, name, user)
        self.roles = self.informer("clusterroles.rbac.authorization.k8s.io")
        self.q = self.queue()
        self.roles.add_event_handler(EventHandler(
            on_add=lambda o: self._enqueue(), on_update=lambda o, n: self._enqueue(),
            on_delete=lambda o: self._enqueue()))

    def _enqueue(self) -> None:
        for role in self.roles.indexer.list():
            if role.get("aggregationRule") is not None:
                self.q.add(role["metadata"]["name"])

    async def main(self) -> None:
        await self.run_workers(self.q, self.sync)

    def sync(self, name: str) -> None:
        """Recompute the aggregated ClusterRole ``name``; apply its rules if they changed."""
        role = self.roles.indexer.get_by(None, name)
        if role is None or role.get("aggregationRule") is None:
            return
        roles = {(r.get("metadata") or {}).get("name") or "": r for r in self.roles.indexer.list()}
        rules = aggregated_rules(role, roles)
        if [rule_key(r) for r in rules] == [rule_key(r) for r in role.get("rules") or ()]:
            return
        config: Obj = {"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole", "metadata": {"name": name}}
        if rules:
            config["rules"] = [_apply_rule(r) for r in rules]
        try:
            self.api.patch("clusterroles.rbac.authorization.k8s.io", name, config, APPLY_PATCH,
                           ctx=self.ctx, field_manager=FIELD_MANAGER, force=True)
        except errors.NotFound:
            pass
