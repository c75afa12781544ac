"""admissionregistration.k8s.io/v1: ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding.

The Go types of k8s.io/api/admissionregistration/v1 that these two kinds use (the webhook
configurations are not served). ``Rule``'s fields are inlined into ``NamedRuleWithOperations``
on the wire, as Go's embedded structs are.
"""

from __future__ import annotations

import attrs

from .fields import Int64, field
from .meta import Condition, LabelSelector, ObjectMeta


@attrs.frozen
class ParamKind:
    api_version: str | None = field()
    kind: str | None = field()


@attrs.frozen
class NamedRuleWithOperations:
    resource_names: tuple[str, ...] | None = field()
    operations: tuple[str, ...] | None = field(go="[]v1.OperationType")
    api_groups: tuple[str, ...] | None = field()
    api_versions: tuple[str, ...] | None = field()
    resources: tuple[str, ...] | None = field()
    scope: str | None = field(go="v1.ScopeType")


@attrs.frozen
class MatchResources:
    namespace_selector: LabelSelector | None = field()
    object_selector: LabelSelector | None = field()
    resource_rules: tuple[NamedRuleWithOperations, ...] | None = field()
    exclude_resource_rules: tuple[NamedRuleWithOperations, ...] | None = field()
    match_policy: str | None = field(go="v1.MatchPolicyType")


@attrs.frozen
class Validation:
    expression: str | None = field()
    message: str | None = field()
    reason: str | None = field(go="v1.StatusReason")
    message_expression: str | None = field()


@attrs.frozen
class AuditAnnotation:
    key: str | None = field()
    value_expression: str | None = field()


@attrs.frozen
class MatchCondition:
    name: str | None = field()
    expression: str | None = field()


@attrs.frozen
class Variable:
    name: str | None = field()
    expression: str | None = field()


@attrs.frozen
class ValidatingAdmissionPolicySpec:
    param_kind: ParamKind | None = field()
    match_constraints: MatchResources | None = field()
    validations: tuple[Validation, ...] | None = field()
    failure_policy: str | None = field(go="v1.FailurePolicyType")
    audit_annotations: tuple[AuditAnnotation, ...] | None = field()
    match_conditions: tuple[MatchCondition, ...] | None = field(strategy="merge", merge_key="name")
    variables: tuple[Variable, ...] | None = field()


@attrs.frozen
class ExpressionWarning:
    field_ref: str | None = field()
    warning: str | None = field()


@attrs.frozen
class TypeChecking:
    expression_warnings: tuple[ExpressionWarning, ...] | None = field()


@attrs.frozen
class ValidatingAdmissionPolicyStatus:
    observed_generation: Int64 | None = field()
    type_checking: TypeChecking | None = field()
    conditions: tuple[Condition, ...] | None = field()


@attrs.frozen
class ValidatingAdmissionPolicy:
    """admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy: CEL validations and what they match."""

    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: ValidatingAdmissionPolicySpec | None = field()
    status: ValidatingAdmissionPolicyStatus | None = field()


@attrs.frozen
class ParamRef:
    name: str | None = field()
    namespace: str | None = field()
    selector: LabelSelector | None = field()
    parameter_not_found_action: str | None = field(go="v1.ParameterNotFoundActionType")


@attrs.frozen
class ValidatingAdmissionPolicyBindingSpec:
    policy_name: str | None = field()
    param_ref: ParamRef | None = field()
    match_resources: MatchResources | None = field()
    validation_actions: tuple[str, ...] | None = field(go="[]v1.ValidationAction")


@attrs.frozen
class ValidatingAdmissionPolicyBinding:
    """admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBinding: a policy, where it applies
    and what a failure does (Deny, Warn, Audit)."""

    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: ValidatingAdmissionPolicyBindingSpec | None = field()


KINDS: dict[str, type] = {
    "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy": ValidatingAdmissionPolicy,
    "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding": ValidatingAdmissionPolicyBinding,
}
