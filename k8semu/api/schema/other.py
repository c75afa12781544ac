"""The smaller groups: events.k8s.io, coordination, scheduling, storage, policy, node, apiregistration, autoscaling/v1 Scale.

``Scale`` is the ``/scale`` subresource body (autoscaling/v1) and ``Eviction``
the ``/eviction`` one (policy/v1).
"""

from __future__ import annotations

import attrs

from .core import EventSource, ObjectReference, Toleration
from .fields import Bytes, Int32, Int64, IntOrString, MicroTime, Quantity, Time, field
from .meta import Condition, DeleteOptions, LabelSelector, ObjectMeta

# --- events.k8s.io/v1 -----------------------------------------------------------------------


@attrs.frozen
class EventSeries:
    count: Int32 | None = field()
    last_observed_time: MicroTime | None = field()


@attrs.frozen
class Event:
    """events.k8s.io/v1 Event (``regarding``/``note`` instead of ``involvedObject``/``message``)."""

    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    event_time: MicroTime | None = field()
    series: EventSeries | None = field()
    reporting_controller: str | None = field()
    reporting_instance: str | None = field()
    action: str | None = field()
    reason: str | None = field()
    regarding: ObjectReference | None = field()
    related: ObjectReference | None = field()
    note: str | None = field()
    type: str | None = field()
    deprecated_source: EventSource | None = field()
    deprecated_first_timestamp: Time | None = field()
    deprecated_last_timestamp: Time | None = field()
    deprecated_count: Int32 | None = field()


# --- coordination.k8s.io/v1 -----------------------------------------------------------------


@attrs.frozen
class LeaseSpec:
    holder_identity: str | None = field()
    lease_duration_seconds: Int32 | None = field()
    acquire_time: MicroTime | None = field()
    renew_time: MicroTime | None = field()
    lease_transitions: Int32 | None = field()
    strategy: str | None = field(go="v1.CoordinatedLeaseStrategy")
    preferred_holder: str | None = field()


@attrs.frozen
class Lease:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: LeaseSpec | None = field()


# --- scheduling.k8s.io/v1 -------------------------------------------------------------------


@attrs.frozen
class PriorityClass:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    value: Int32 | None = field()
    global_default: bool | None = field()
    description: str | None = field()
    preemption_policy: str | None = field(go="v1.PreemptionPolicy")


# --- storage.k8s.io/v1 ----------------------------------------------------------------------


@attrs.frozen
class TopologySelectorLabelRequirement:
    key: str | None = field()
    values: tuple[str, ...] | None = field()


@attrs.frozen
class TopologySelectorTerm:
    match_label_expressions: tuple[TopologySelectorLabelRequirement, ...] | None = field()


@attrs.frozen
class StorageClass:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    provisioner: str | None = field()
    parameters: dict[str, str] | None = field()
    reclaim_policy: str | None = field(go="v1.PersistentVolumeReclaimPolicy")
    mount_options: tuple[str, ...] | None = field()
    allow_volume_expansion: bool | None = field()
    volume_binding_mode: str | None = field(go="v1.VolumeBindingMode")
    allowed_topologies: tuple[TopologySelectorTerm, ...] | None = field()


# --- policy/v1 ------------------------------------------------------------------------------


@attrs.frozen
class PodDisruptionBudgetSpec:
    min_available: IntOrString | None = field()
    selector: LabelSelector | None = field(strategy="replace")
    max_unavailable: IntOrString | None = field()
    unhealthy_pod_eviction_policy: str | None = field(go="v1.UnhealthyPodEvictionPolicyType")


@attrs.frozen
class PodDisruptionBudgetStatus:
    observed_generation: Int64 | None = field()
    disrupted_pods: dict[str, Time] | None = field(go="map[string]v1.Time")
    disruptions_allowed: Int32 | None = field()
    current_healthy: Int32 | None = field()
    desired_healthy: Int32 | None = field()
    expected_pods: Int32 | None = field()
    conditions: tuple[Condition, ...] | None = field(strategy="merge", merge_key="type")


@attrs.frozen
class PodDisruptionBudget:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: PodDisruptionBudgetSpec | None = field()
    status: PodDisruptionBudgetStatus | None = field()


@attrs.frozen
class Eviction:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    delete_options: DeleteOptions | None = field()


# --- autoscaling/v1 Scale -------------------------------------------------------------------


@attrs.frozen
class ScaleSpec:
    replicas: Int32 | None = field()


@attrs.frozen
class ScaleStatus:
    replicas: Int32 | None = field()
    selector: str | None = field()


@attrs.frozen
class Scale:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: ScaleSpec | None = field()
    status: ScaleStatus | None = field()


# --- node.k8s.io/v1 -------------------------------------------------------------------------


@attrs.frozen
class Overhead:
    pod_fixed: dict[str, Quantity] | None = field(go="v1.ResourceList")


@attrs.frozen
class Scheduling:
    node_selector: dict[str, str] | None = field()
    tolerations: tuple[Toleration, ...] | None = field()


@attrs.frozen
class RuntimeClass:
    """node.k8s.io/v1 RuntimeClass: ``handler`` (the CRI runtime handler), ``overhead``,
    ``scheduling``; no spec/status."""

    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    handler: str | None = field()
    overhead: Overhead | None = field()
    scheduling: Scheduling | None = field()


# --- apiregistration.k8s.io/v1 (kube-aggregator) --------------------------------------------


@attrs.frozen
class ServiceReference:
    namespace: str | None = field()
    name: str | None = field()
    port: Int32 | None = field()


@attrs.frozen
class APIServiceSpec:
    service: ServiceReference | None = field()
    group: str | None = field()
    version: str | None = field()
    insecure_skip_tls_verify: bool | None = field(wire="insecureSkipTLSVerify")
    ca_bundle: Bytes | None = field(wire="caBundle")
    group_priority_minimum: Int32 | None = field()
    version_priority: Int32 | None = field()


@attrs.frozen
class APIServiceCondition:
    type: str | None = field(go="v1.APIServiceConditionType")
    status: str | None = field(go="v1.ConditionStatus")
    last_transition_time: Time | None = field()
    reason: str | None = field()
    message: str | None = field()


@attrs.frozen
class APIServiceStatus:
    conditions: tuple[APIServiceCondition, ...] | None = field(strategy="merge", merge_key="type")


@attrs.frozen
class APIService:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: APIServiceSpec | None = field()
    status: APIServiceStatus | None = field()


KINDS: dict[str, type] = {
    "events.k8s.io/v1/Event": Event,
    "coordination.k8s.io/v1/Lease": Lease,
    "scheduling.k8s.io/v1/PriorityClass": PriorityClass,
    "storage.k8s.io/v1/StorageClass": StorageClass,
    "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
    "policy/v1/Eviction": Eviction,
    "autoscaling/v1/Scale": Scale,
    "node.k8s.io/v1/RuntimeClass": RuntimeClass,
    "apiregistration.k8s.io/v1/APIService": APIService,
}
