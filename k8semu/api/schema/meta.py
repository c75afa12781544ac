"""meta/v1 types (k8s.io/apimachinery/pkg/apis/meta/v1): ObjectMeta, selectors, Status.

These are embedded by every kind. ``managedFields`` entries stay loose dicts
(their ``fieldsV1`` is a free-form field set that server-side apply owns).
"""

from __future__ import annotations

import attrs

from .fields import Int32, Int64, Loose, Time, field

__all__ = [
    "OwnerReference",
    "ObjectMeta",
    "ListMeta",
    "LabelSelectorRequirement",
    "LabelSelector",
    "Condition",
    "StatusCause",
    "StatusDetails",
    "Status",
    "Preconditions",
    "DeleteOptions",
    "KINDS",
]


@attrs.frozen
class OwnerReference:
    api_version: str | None = field()
    kind: str | None = field()
    name: str | None = field()
    uid: str | None = field(go="types.UID")
    controller: bool | None = field()
    block_owner_deletion: bool | None = field()


@attrs.frozen
class ObjectMeta:
    name: str | None = field()
    generate_name: str | None = field()
    namespace: str | None = field()
    self_link: str | None = field()
    uid: str | None = field(go="types.UID")
    resource_version: str | None = field()
    generation: Int64 | None = field()
    creation_timestamp: Time | None = field()
    deletion_timestamp: Time | None = field()
    deletion_grace_period_seconds: Int64 | None = field()
    labels: dict[str, str] | None = field()
    annotations: dict[str, str] | None = field()
    owner_references: tuple[OwnerReference, ...] | None = field(strategy="merge", merge_key="uid")
    finalizers: tuple[str, ...] | None = field(strategy="merge")
    managed_fields: tuple[Loose, ...] | None = field(go="[]v1.ManagedFieldsEntry")


@attrs.frozen
class ListMeta:
    self_link: str | None = field()
    resource_version: str | None = field()
    continue_: str | None = field()
    remaining_item_count: Int64 | None = field()


@attrs.frozen
class LabelSelectorRequirement:
    key: str | None = field()
    operator: str | None = field(go="v1.LabelSelectorOperator")
    values: tuple[str, ...] | None = field()


@attrs.frozen
class LabelSelector:
    match_labels: dict[str, str] | None = field()
    match_expressions: tuple[LabelSelectorRequirement, ...] | None = field()


@attrs.frozen
class Condition:
    """metav1.Condition, the standard condition shape of newer APIs."""

    type: str | None = field()
    status: str | None = field(go="v1.ConditionStatus")
    observed_generation: Int64 | None = field()
    last_transition_time: Time | None = field()
    reason: str | None = field()
    message: str | None = field()


@attrs.frozen
class StatusCause:
    reason: str | None = field(go="v1.CauseType")
    message: str | None = field()
    field: str | None = field()


@attrs.frozen
class StatusDetails:
    name: str | None = field()
    group: str | None = field()
    kind: str | None = field()
    uid: str | None = field(go="types.UID")
    causes: tuple[StatusCause, ...] | None = field()
    retry_after_seconds: Int32 | None = field()


@attrs.frozen
class Status:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ListMeta | None = field()
    status: str | None = field()
    message: str | None = field()
    reason: str | None = field(go="v1.StatusReason")
    details: StatusDetails | None = field()
    code: Int32 | None = field()


@attrs.frozen
class Preconditions:
    uid: str | None = field(go="types.UID")
    resource_version: str | None = field()


@attrs.frozen
class DeleteOptions:
    api_version: str | None = field()
    kind: str | None = field()
    grace_period_seconds: Int64 | None = field()
    preconditions: Preconditions | None = field()
    orphan_dependents: bool | None = field()
    propagation_policy: str | None = field(go="v1.DeletionPropagation")
    dry_run: tuple[str, ...] | None = field()
    ignore_store_read_error_with_cluster_breaking_potential: bool | None = field()


KINDS: dict[str, type] = {
    "v1/Status": Status,
    "v1/DeleteOptions": DeleteOptions,
    "meta.k8s.io/v1/DeleteOptions": DeleteOptions,
}
