"""networking.k8s.io/v1 (NetworkPolicy, Ingress, IngressClass) and discovery.k8s.io/v1 (EndpointSlice)."""

from __future__ import annotations

import attrs

from .core import ObjectReference, TypedLocalObjectReference
from .fields import Int32, IntOrString, field
from .meta import LabelSelector, ObjectMeta

# --- NetworkPolicy --------------------------------------------------------------------------


@attrs.frozen
class NetworkPolicyPort:
    protocol: str | None = field(go="v1.Protocol")
    port: IntOrString | None = field()
    end_port: Int32 | None = field()


@attrs.frozen
class IPBlock:
    cidr: str | None = field()
    except_: tuple[str, ...] | None = field()


@attrs.frozen
class NetworkPolicyPeer:
    pod_selector: LabelSelector | None = field()
    namespace_selector: LabelSelector | None = field()
    ip_block: IPBlock | None = field()


@attrs.frozen
class NetworkPolicyIngressRule:
    ports: tuple[NetworkPolicyPort, ...] | None = field()
    from_: tuple[NetworkPolicyPeer, ...] | None = field()


@attrs.frozen
class NetworkPolicyEgressRule:
    ports: tuple[NetworkPolicyPort, ...] | None = field()
    to: tuple[NetworkPolicyPeer, ...] | None = field()


@attrs.frozen
class NetworkPolicySpec:
    pod_selector: LabelSelector | None = field()
    ingress: tuple[NetworkPolicyIngressRule, ...] | None = field()
    egress: tuple[NetworkPolicyEgressRule, ...] | None = field()
    policy_types: tuple[str, ...] | None = field(go="[]v1.PolicyType")


@attrs.frozen
class NetworkPolicy:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: NetworkPolicySpec | None = field()


# --- Ingress --------------------------------------------------------------------------------


@attrs.frozen
class ServiceBackendPort:
    name: str | None = field()
    number: Int32 | None = field()


@attrs.frozen
class IngressServiceBackend:
    name: str | None = field()
    port: ServiceBackendPort | None = field()


@attrs.frozen
class IngressBackend:
    service: IngressServiceBackend | None = field()
    resource: TypedLocalObjectReference | None = field()


@attrs.frozen
class HTTPIngressPath:
    path: str | None = field()
    path_type: str | None = field(go="v1.PathType")
    backend: IngressBackend | None = field()


@attrs.frozen
class HTTPIngressRuleValue:
    paths: tuple[HTTPIngressPath, ...] | None = field()


@attrs.frozen
class IngressRule:
    host: str | None = field()
    http: HTTPIngressRuleValue | None = field()


@attrs.frozen
class IngressTLS:
    hosts: tuple[str, ...] | None = field()
    secret_name: str | None = field()


@attrs.frozen
class IngressSpec:
    ingress_class_name: str | None = field()
    default_backend: IngressBackend | None = field()
    tls: tuple[IngressTLS, ...] | None = field()
    rules: tuple[IngressRule, ...] | None = field()


@attrs.frozen
class IngressPortStatus:
    port: Int32 | None = field()
    protocol: str | None = field(go="v1.Protocol")
    error: str | None = field()


@attrs.frozen
class IngressLoadBalancerIngress:
    ip: str | None = field()
    hostname: str | None = field()
    ports: tuple[IngressPortStatus, ...] | None = field()


@attrs.frozen
class IngressLoadBalancerStatus:
    ingress: tuple[IngressLoadBalancerIngress, ...] | None = field()


@attrs.frozen
class IngressStatus:
    load_balancer: IngressLoadBalancerStatus | None = field()


@attrs.frozen
class Ingress:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: IngressSpec | None = field()
    status: IngressStatus | None = field()


@attrs.frozen
class IngressClassParametersReference:
    api_group: str | None = field()
    kind: str | None = field()
    name: str | None = field()
    scope: str | None = field()
    namespace: str | None = field()


@attrs.frozen
class IngressClassSpec:
    controller: str | None = field()
    parameters: IngressClassParametersReference | None = field()


@attrs.frozen
class IngressClass:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: IngressClassSpec | None = field()


# --- EndpointSlice (discovery.k8s.io/v1) ----------------------------------------------------


@attrs.frozen
class EndpointConditions:
    ready: bool | None = field()
    serving: bool | None = field()
    terminating: bool | None = field()


@attrs.frozen
class ForZone:
    name: str | None = field()


@attrs.frozen
class ForNode:
    name: str | None = field()


@attrs.frozen
class EndpointHints:
    for_zones: tuple[ForZone, ...] | None = field()
    for_nodes: tuple[ForNode, ...] | None = field()


@attrs.frozen
class Endpoint:
    addresses: tuple[str, ...] | None = field()
    conditions: EndpointConditions | None = field()
    hostname: str | None = field()
    target_ref: ObjectReference | None = field()
    deprecated_topology: dict[str, str] | None = field()
    node_name: str | None = field()
    zone: str | None = field()
    hints: EndpointHints | None = field()


@attrs.frozen
class EndpointPort:
    name: str | None = field()
    protocol: str | None = field(go="v1.Protocol")
    port: Int32 | None = field()
    app_protocol: str | None = field()


@attrs.frozen
class EndpointSlice:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    address_type: str | None = field(go="v1.AddressType")
    endpoints: tuple[Endpoint, ...] | None = field()
    ports: tuple[EndpointPort, ...] | None = field()


KINDS: dict[str, type] = {
    "networking.k8s.io/v1/NetworkPolicy": NetworkPolicy,
    "networking.k8s.io/v1/Ingress": Ingress,
    "networking.k8s.io/v1/IngressClass": IngressClass,
    "discovery.k8s.io/v1/EndpointSlice": EndpointSlice,
}
