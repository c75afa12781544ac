"""rbac.authorization.k8s.io/v1 types: Role, ClusterRole, RoleBinding, ClusterRoleBinding."""

from __future__ import annotations

import attrs

from .fields import field
from .meta import LabelSelector, ObjectMeta


@attrs.frozen
class PolicyRule:
    verbs: tuple[str, ...] | None = field()
    api_groups: tuple[str, ...] | None = field()
    resources: tuple[str, ...] | None = field()
    resource_names: tuple[str, ...] | None = field()
    non_resource_urls: tuple[str, ...] | None = field()


@attrs.frozen
class AggregationRule:
    cluster_role_selectors: tuple[LabelSelector, ...] | None = field()


@attrs.frozen
class Subject:
    kind: str | None = field()
    api_group: str | None = field()
    name: str | None = field()
    namespace: str | None = field()


@attrs.frozen
class RoleRef:
    api_group: str | None = field()
    kind: str | None = field()
    name: str | None = field()


@attrs.frozen
class Role:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    rules: tuple[PolicyRule, ...] | None = field()


@attrs.frozen
class ClusterRole:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    rules: tuple[PolicyRule, ...] | None = field()
    aggregation_rule: AggregationRule | None = field()


@attrs.frozen
class RoleBinding:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    subjects: tuple[Subject, ...] | None = field()
    role_ref: RoleRef | None = field()


@attrs.frozen
class ClusterRoleBinding:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    subjects: tuple[Subject, ...] | None = field()
    role_ref: RoleRef | None = field()


KINDS: dict[str, type] = {
    "rbac.authorization.k8s.io/v1/Role": Role,
    "rbac.authorization.k8s.io/v1/ClusterRole": ClusterRole,
    "rbac.authorization.k8s.io/v1/RoleBinding": RoleBinding,
    "rbac.authorization.k8s.io/v1/ClusterRoleBinding": ClusterRoleBinding,
}
