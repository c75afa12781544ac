"""apps/v1 types (k8s.io/api/apps/v1): Deployment, ReplicaSet, StatefulSet, DaemonSet, ControllerRevision."""

from __future__ import annotations

import attrs

from .core import PersistentVolumeClaim, PodTemplateSpec
from .fields import Int32, Int64, IntOrString, RawJSON, Time, field
from .meta import LabelSelector, ObjectMeta

# --- Deployment -----------------------------------------------------------------------------


@attrs.frozen
class RollingUpdateDeployment:
    max_unavailable: IntOrString | None = field()
    max_surge: IntOrString | None = field()


@attrs.frozen
class DeploymentStrategy:
    type: str | None = field(go="v1.DeploymentStrategyType")
    rolling_update: RollingUpdateDeployment | None = field()


@attrs.frozen
class DeploymentSpec:
    replicas: Int32 | None = field()
    selector: LabelSelector | None = field()
    template: PodTemplateSpec | None = field()
    strategy: DeploymentStrategy | None = field(strategy="retainKeys")
    min_ready_seconds: Int32 | None = field()
    revision_history_limit: Int32 | None = field()
    paused: bool | None = field()
    progress_deadline_seconds: Int32 | None = field()


@attrs.frozen
class DeploymentCondition:
    type: str | None = field(go="v1.DeploymentConditionType")
    status: str | None = field(go="v1.ConditionStatus")
    last_update_time: Time | None = field()
    last_transition_time: Time | None = field()
    reason: str | None = field()
    message: str | None = field()


@attrs.frozen
class DeploymentStatus:
    observed_generation: Int64 | None = field()
    replicas: Int32 | None = field()
    updated_replicas: Int32 | None = field()
    ready_replicas: Int32 | None = field()
    available_replicas: Int32 | None = field()
    unavailable_replicas: Int32 | None = field()
    terminating_replicas: Int32 | None = field()
    conditions: tuple[DeploymentCondition, ...] | None = field(strategy="merge", merge_key="type")
    collision_count: Int32 | None = field()


@attrs.frozen
class Deployment:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: DeploymentSpec | None = field()
    status: DeploymentStatus | None = field()


# --- ReplicaSet -----------------------------------------------------------------------------


@attrs.frozen
class ReplicaSetSpec:
    replicas: Int32 | None = field()
    min_ready_seconds: Int32 | None = field()
    selector: LabelSelector | None = field()
    template: PodTemplateSpec | None = field()


@attrs.frozen
class ReplicaSetCondition:
    type: str | None = field(go="v1.ReplicaSetConditionType")
    status: str | None = field(go="v1.ConditionStatus")
    last_transition_time: Time | None = field()
    reason: str | None = field()
    message: str | None = field()


@attrs.frozen
class ReplicaSetStatus:
    replicas: Int32 | None = field()
    fully_labeled_replicas: Int32 | None = field()
    ready_replicas: Int32 | None = field()
    available_replicas: Int32 | None = field()
    terminating_replicas: Int32 | None = field()
    observed_generation: Int64 | None = field()
    conditions: tuple[ReplicaSetCondition, ...] | None = field(strategy="merge", merge_key="type")


@attrs.frozen
class ReplicaSet:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: ReplicaSetSpec | None = field()
    status: ReplicaSetStatus | None = field()


# --- StatefulSet ----------------------------------------------------------------------------


@attrs.frozen
class RollingUpdateStatefulSetStrategy:
    partition: Int32 | None = field()
    max_unavailable: IntOrString | None = field()


@attrs.frozen
class StatefulSetUpdateStrategy:
    type: str | None = field(go="v1.StatefulSetUpdateStrategyType")
    rolling_update: RollingUpdateStatefulSetStrategy | None = field()


@attrs.frozen
class StatefulSetPersistentVolumeClaimRetentionPolicy:
    when_deleted: str | None = field(go="v1.PersistentVolumeClaimRetentionPolicyType")
    when_scaled: str | None = field(go="v1.PersistentVolumeClaimRetentionPolicyType")


@attrs.frozen
class StatefulSetOrdinals:
    start: Int32 | None = field()


@attrs.frozen
class StatefulSetSpec:
    replicas: Int32 | None = field()
    selector: LabelSelector | None = field()
    template: PodTemplateSpec | None = field()
    volume_claim_templates: tuple[PersistentVolumeClaim, ...] | None = field()
    service_name: str | None = field()
    pod_management_policy: str | None = field(go="v1.PodManagementPolicyType")
    update_strategy: StatefulSetUpdateStrategy | None = field()
    revision_history_limit: Int32 | None = field()
    min_ready_seconds: Int32 | None = field()
    persistent_volume_claim_retention_policy: (
        StatefulSetPersistentVolumeClaimRetentionPolicy | None
    ) = field()
    ordinals: StatefulSetOrdinals | None = field()


@attrs.frozen
class StatefulSetCondition:
    type: str | None = field(go="v1.StatefulSetConditionType")
    status: str | None = field(go="v1.ConditionStatus")
    last_transition_time: Time | None = field()
    reason: str | None = field()
    message: str | None = field()


@attrs.frozen
class StatefulSetStatus:
    observed_generation: Int64 | None = field()
    replicas: Int32 | None = field()
    ready_replicas: Int32 | None = field()
    current_replicas: Int32 | None = field()
    updated_replicas: Int32 | None = field()
    current_revision: str | None = field()
    update_revision: str | None = field()
    collision_count: Int32 | None = field()
    conditions: tuple[StatefulSetCondition, ...] | None = field(strategy="merge", merge_key="type")
    available_replicas: Int32 | None = field()


@attrs.frozen
class StatefulSet:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: StatefulSetSpec | None = field()
    status: StatefulSetStatus | None = field()


# --- DaemonSet ------------------------------------------------------------------------------


@attrs.frozen
class RollingUpdateDaemonSet:
    max_unavailable: IntOrString | None = field()
    max_surge: IntOrString | None = field()


@attrs.frozen
class DaemonSetUpdateStrategy:
    type: str | None = field(go="v1.DaemonSetUpdateStrategyType")
    rolling_update: RollingUpdateDaemonSet | None = field()


@attrs.frozen
class DaemonSetSpec:
    selector: LabelSelector | None = field()
    template: PodTemplateSpec | None = field()
    update_strategy: DaemonSetUpdateStrategy | None = field()
    min_ready_seconds: Int32 | None = field()
    revision_history_limit: Int32 | None = field()


@attrs.frozen
class DaemonSetCondition:
    type: str | None = field(go="v1.DaemonSetConditionType")
    status: str | None = field(go="v1.ConditionStatus")
    last_transition_time: Time | None = field()
    reason: str | None = field()
    message: str | None = field()


@attrs.frozen
class DaemonSetStatus:
    current_number_scheduled: Int32 | None = field()
    number_misscheduled: Int32 | None = field()
    desired_number_scheduled: Int32 | None = field()
    number_ready: Int32 | None = field()
    observed_generation: Int64 | None = field()
    updated_number_scheduled: Int32 | None = field()
    number_available: Int32 | None = field()
    number_unavailable: Int32 | None = field()
    collision_count: Int32 | None = field()
    conditions: tuple[DaemonSetCondition, ...] | None = field(strategy="merge", merge_key="type")


@attrs.frozen
class DaemonSet:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: DaemonSetSpec | None = field()
    status: DaemonSetStatus | None = field()


# --- ControllerRevision ---------------------------------------------------------------------


@attrs.frozen
class ControllerRevision:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    data: RawJSON | None = field()
    revision: Int64 | None = field()


KINDS: dict[str, type] = {
    "apps/v1/Deployment": Deployment,
    "apps/v1/ReplicaSet": ReplicaSet,
    "apps/v1/StatefulSet": StatefulSet,
    "apps/v1/DaemonSet": DaemonSet,
    "apps/v1/ControllerRevision": ControllerRevision,
}
