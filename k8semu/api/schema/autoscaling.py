"""autoscaling/v2 types (k8s.io/api/autoscaling/v2): HorizontalPodAutoscaler.

Go names these in package ``v2``, which decode errors show (``v2.MetricTarget``).
"""

from __future__ import annotations

import attrs

from .fields import Int32, Int64, Quantity, Time, field
from .meta import LabelSelector, ObjectMeta

GO_PACKAGE = "v2"


@attrs.frozen
class CrossVersionObjectReference:
    kind: str | None = field()
    name: str | None = field()
    api_version: str | None = field()


@attrs.frozen
class MetricIdentifier:
    name: str | None = field()
    selector: LabelSelector | None = field()


@attrs.frozen
class MetricTarget:
    type: str | None = field(go="v2.MetricTargetType")
    value: Quantity | None = field()
    average_value: Quantity | None = field()
    average_utilization: Int32 | None = field()


@attrs.frozen
class ObjectMetricSource:
    described_object: CrossVersionObjectReference | None = field()
    target: MetricTarget | None = field()
    metric: MetricIdentifier | None = field()


@attrs.frozen
class PodsMetricSource:
    metric: MetricIdentifier | None = field()
    target: MetricTarget | None = field()


@attrs.frozen
class ResourceMetricSource:
    name: str | None = field(go="v1.ResourceName")
    target: MetricTarget | None = field()


@attrs.frozen
class ContainerResourceMetricSource:
    name: str | None = field(go="v1.ResourceName")
    target: MetricTarget | None = field()
    container: str | None = field()


@attrs.frozen
class ExternalMetricSource:
    metric: MetricIdentifier | None = field()
    target: MetricTarget | None = field()


@attrs.frozen
class MetricSpec:
    type: str | None = field(go="v2.MetricSourceType")
    object: ObjectMetricSource | None = field()
    pods: PodsMetricSource | None = field()
    resource: ResourceMetricSource | None = field()
    container_resource: ContainerResourceMetricSource | None = field()
    external: ExternalMetricSource | None = field()


@attrs.frozen
class HPAScalingPolicy:
    type: str | None = field(go="v2.HPAScalingPolicyType")
    value: Int32 | None = field()
    period_seconds: Int32 | None = field()


@attrs.frozen
class HPAScalingRules:
    stabilization_window_seconds: Int32 | None = field()
    select_policy: str | None = field(go="v2.ScalingPolicySelect")
    policies: tuple[HPAScalingPolicy, ...] | None = field()
    tolerance: Quantity | None = field()


@attrs.frozen
class HorizontalPodAutoscalerBehavior:
    scale_up: HPAScalingRules | None = field()
    scale_down: HPAScalingRules | None = field()


@attrs.frozen
class HorizontalPodAutoscalerSpec:
    scale_target_ref: CrossVersionObjectReference | None = field()
    min_replicas: Int32 | None = field()
    max_replicas: Int32 | None = field()
    metrics: tuple[MetricSpec, ...] | None = field()
    behavior: HorizontalPodAutoscalerBehavior | None = field()


@attrs.frozen
class MetricValueStatus:
    value: Quantity | None = field()
    average_value: Quantity | None = field()
    average_utilization: Int32 | None = field()


@attrs.frozen
class ObjectMetricStatus:
    metric: MetricIdentifier | None = field()
    current: MetricValueStatus | None = field()
    described_object: CrossVersionObjectReference | None = field()


@attrs.frozen
class PodsMetricStatus:
    metric: MetricIdentifier | None = field()
    current: MetricValueStatus | None = field()


@attrs.frozen
class ResourceMetricStatus:
    name: str | None = field(go="v1.ResourceName")
    current: MetricValueStatus | None = field()


@attrs.frozen
class ContainerResourceMetricStatus:
    name: str | None = field(go="v1.ResourceName")
    current: MetricValueStatus | None = field()
    container: str | None = field()


@attrs.frozen
class ExternalMetricStatus:
    metric: MetricIdentifier | None = field()
    current: MetricValueStatus | None = field()


@attrs.frozen
class MetricStatus:
    type: str | None = field(go="v2.MetricSourceType")
    object: ObjectMetricStatus | None = field()
    pods: PodsMetricStatus | None = field()
    resource: ResourceMetricStatus | None = field()
    container_resource: ContainerResourceMetricStatus | None = field()
    external: ExternalMetricStatus | None = field()


@attrs.frozen
class HorizontalPodAutoscalerCondition:
    type: str | None = field(go="v2.HorizontalPodAutoscalerConditionType")
    status: str | None = field(go="v1.ConditionStatus")
    last_transition_time: Time | None = field()
    reason: str | None = field()
    message: str | None = field()


@attrs.frozen
class HorizontalPodAutoscalerStatus:
    observed_generation: Int64 | None = field()
    last_scale_time: Time | None = field()
    current_replicas: Int32 | None = field()
    desired_replicas: Int32 | None = field()
    current_metrics: tuple[MetricStatus, ...] | None = field()
    conditions: tuple[HorizontalPodAutoscalerCondition, ...] | None = field(
        strategy="merge", merge_key="type"
    )


@attrs.frozen
class HorizontalPodAutoscaler:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: HorizontalPodAutoscalerSpec | None = field()
    status: HorizontalPodAutoscalerStatus | None = field()


KINDS: dict[str, type] = {
    "autoscaling/v2/HorizontalPodAutoscaler": HorizontalPodAutoscaler,
}
