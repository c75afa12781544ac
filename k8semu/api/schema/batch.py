"""batch/v1 types (k8s.io/api/batch/v1): Job and CronJob."""

from __future__ import annotations

import attrs

from .core import ObjectReference, PodTemplateSpec
from .fields import Int32, Int64, Time, field
from .meta import LabelSelector, ObjectMeta


@attrs.frozen
class PodFailurePolicyOnExitCodesRequirement:
    container_name: str | None = field()
    operator: str | None = field(go="v1.PodFailurePolicyOnExitCodesOperator")
    values: tuple[Int32, ...] | None = field()


@attrs.frozen
class PodFailurePolicyOnPodConditionsPattern:
    type: str | None = field(go="v1.PodConditionType")
    status: str | None = field(go="v1.ConditionStatus")


@attrs.frozen
class PodFailurePolicyRule:
    action: str | None = field(go="v1.PodFailurePolicyAction")
    on_exit_codes: PodFailurePolicyOnExitCodesRequirement | None = field()
    on_pod_conditions: tuple[PodFailurePolicyOnPodConditionsPattern, ...] | None = field()


@attrs.frozen
class PodFailurePolicy:
    rules: tuple[PodFailurePolicyRule, ...] | None = field()


@attrs.frozen
class SuccessPolicyRule:
    succeeded_indexes: str | None = field()
    succeeded_count: Int32 | None = field()


@attrs.frozen
class SuccessPolicy:
    rules: tuple[SuccessPolicyRule, ...] | None = field()


@attrs.frozen
class JobSpec:
    parallelism: Int32 | None = field()
    completions: Int32 | None = field()
    active_deadline_seconds: Int64 | None = field()
    pod_failure_policy: PodFailurePolicy | None = field()
    success_policy: SuccessPolicy | None = field()
    backoff_limit: Int32 | None = field()
    backoff_limit_per_index: Int32 | None = field()
    max_failed_indexes: Int32 | None = field()
    selector: LabelSelector | None = field()
    manual_selector: bool | None = field()
    template: PodTemplateSpec | None = field()
    ttl_seconds_after_finished: Int32 | None = field()
    completion_mode: str | None = field(go="v1.CompletionMode")
    suspend: bool | None = field()
    pod_replacement_policy: str | None = field(go="v1.PodReplacementPolicy")
    managed_by: str | None = field()


@attrs.frozen
class JobCondition:
    type: str | None = field(go="v1.JobConditionType")
    status: str | None = field(go="v1.ConditionStatus")
    last_probe_time: Time | None = field()
    last_transition_time: Time | None = field()
    reason: str | None = field()
    message: str | None = field()


@attrs.frozen
class UncountedTerminatedPods:
    succeeded: tuple[str, ...] | None = field(go="[]types.UID")
    failed: tuple[str, ...] | None = field(go="[]types.UID")


@attrs.frozen
class JobStatus:
    conditions: tuple[JobCondition, ...] | None = field(strategy="merge", merge_key="type")
    start_time: Time | None = field()
    completion_time: Time | None = field()
    active: Int32 | None = field()
    succeeded: Int32 | None = field()
    failed: Int32 | None = field()
    terminating: Int32 | None = field()
    completed_indexes: str | None = field()
    failed_indexes: str | None = field()
    uncounted_terminated_pods: UncountedTerminatedPods | None = field()
    ready: Int32 | None = field()


@attrs.frozen
class Job:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: JobSpec | None = field()
    status: JobStatus | None = field()


@attrs.frozen
class JobTemplateSpec:
    metadata: ObjectMeta | None = field()
    spec: JobSpec | None = field()


@attrs.frozen
class CronJobSpec:
    schedule: str | None = field()
    time_zone: str | None = field()
    starting_deadline_seconds: Int64 | None = field()
    concurrency_policy: str | None = field(go="v1.ConcurrencyPolicy")
    suspend: bool | None = field()
    job_template: JobTemplateSpec | None = field()
    successful_jobs_history_limit: Int32 | None = field()
    failed_jobs_history_limit: Int32 | None = field()


@attrs.frozen
class CronJobStatus:
    active: tuple[ObjectReference, ...] | None = field()
    last_schedule_time: Time | None = field()
    last_successful_time: Time | None = field()


@attrs.frozen
class CronJob:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: CronJobSpec | None = field()
    status: CronJobStatus | None = field()


KINDS: dict[str, type] = {
    "batch/v1/Job": Job,
    "batch/v1/CronJob": CronJob,
}
