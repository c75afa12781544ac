"""apiextensions.k8s.io/v1: CustomResourceDefinition (k8s.io/apiextensions-apiserver's types).

A version's ``openAPIV3Schema`` (upstream's recursive ``JSONSchemaProps``) is kept as a free-form
object here: :mod:`k8semu.api.customresources` reads it as a structural schema.
"""

from __future__ import annotations

import attrs

from .fields import Bytes, Int32, Loose, Time, field
from .meta import ObjectMeta

#: the Go package the OpenAPI names of these types use
GO_PACKAGE = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1"


@attrs.frozen
class CustomResourceDefinitionNames:
    plural: str | None = field()
    singular: str | None = field()
    short_names: tuple[str, ...] | None = field()
    kind: str | None = field()
    list_kind: str | None = field()
    categories: tuple[str, ...] | None = field()


@attrs.frozen
class ServiceReference:
    namespace: str | None = field()
    name: str | None = field()
    path: str | None = field()
    port: Int32 | None = field()


@attrs.frozen
class WebhookClientConfig:
    url: str | None = field()
    service: ServiceReference | None = field()
    ca_bundle: Bytes | None = field()


@attrs.frozen
class WebhookConversion:
    client_config: WebhookClientConfig | None = field()
    conversion_review_versions: tuple[str, ...] | None = field()


@attrs.frozen
class CustomResourceConversion:
    strategy: str | None = field(go="v1.ConversionStrategyType")
    webhook: WebhookConversion | None = field()


@attrs.frozen
class CustomResourceValidation:
    open_apiv3_schema: Loose | None = field(wire="openAPIV3Schema", go="v1.JSONSchemaProps")


@attrs.frozen
class CustomResourceSubresourceStatus:
    pass


@attrs.frozen
class CustomResourceSubresourceScale:
    spec_replicas_path: str | None = field()
    status_replicas_path: str | None = field()
    label_selector_path: str | None = field()


@attrs.frozen
class CustomResourceSubresources:
    status: CustomResourceSubresourceStatus | None = field()
    scale: CustomResourceSubresourceScale | None = field()


@attrs.frozen
class CustomResourceColumnDefinition:
    name: str | None = field()
    type: str | None = field()
    format: str | None = field()
    description: str | None = field()
    priority: Int32 | None = field()
    json_path: str | None = field(wire="jsonPath")


@attrs.frozen
class SelectableField:
    json_path: str | None = field(wire="jsonPath")


@attrs.frozen
class CustomResourceDefinitionVersion:
    name: str | None = field()
    served: bool | None = field()
    storage: bool | None = field()
    deprecated: bool | None = field()
    deprecation_warning: str | None = field()
    schema: CustomResourceValidation | None = field()
    subresources: CustomResourceSubresources | None = field()
    additional_printer_columns: tuple[CustomResourceColumnDefinition, ...] | None = field()
    selectable_fields: tuple[SelectableField, ...] | None = field()


@attrs.frozen
class CustomResourceDefinitionSpec:
    group: str | None = field()
    names: CustomResourceDefinitionNames | None = field()
    scope: str | None = field(go="v1.ResourceScope")
    versions: tuple[CustomResourceDefinitionVersion, ...] | None = field()
    conversion: CustomResourceConversion | None = field()
    preserve_unknown_fields: bool | None = field()


@attrs.frozen
class CustomResourceDefinitionCondition:
    type: str | None = field(go="v1.CustomResourceDefinitionConditionType")
    status: str | None = field(go="v1.ConditionStatus")
    last_transition_time: Time | None = field()
    reason: str | None = field()
    message: str | None = field()


@attrs.frozen
class CustomResourceDefinitionStatus:
    conditions: tuple[CustomResourceDefinitionCondition, ...] | None = field()
    accepted_names: CustomResourceDefinitionNames | None = field()
    stored_versions: tuple[str, ...] | None = field()


@attrs.frozen
class CustomResourceDefinition:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: CustomResourceDefinitionSpec | None = field()
    status: CustomResourceDefinitionStatus | None = field()


KINDS: dict[str, type] = {
    "apiextensions.k8s.io/v1/CustomResourceDefinition": CustomResourceDefinition,
}
