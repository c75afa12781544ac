"""core/v1 types (k8s.io/api/core/v1): Pod and everything it embeds, plus the other core kinds.

Field names, JSON types and patch tags follow ``core/v1/types.go`` of v1.3x.
The volume sources people write by hand (emptyDir, hostPath, configMap, secret,
persistentVolumeClaim, projected, downwardAPI, nfs, csi, ephemeral, image) are
typed; the cloud/legacy in-tree sources are kept as loose objects.
"""

from __future__ import annotations

import attrs

from .fields import (
    Bytes,
    Int32,
    Int64,
    IntOrString,
    Loose,
    MicroTime,
    Quantity,
    Time,
    field,
)
from .meta import Condition, LabelSelector, ObjectMeta

_RL = "v1.ResourceList"  # map[ResourceName]resource.Quantity


# --- references and selectors -------------------------------------------------------------


@attrs.frozen
class LocalObjectReference:
    name: str | None = field()


@attrs.frozen
class ObjectReference:
    kind: str | None = field()
    namespace: str | None = field()
    name: str | None = field()
    uid: str | None = field(go="types.UID")
    api_version: str | None = field()
    resource_version: str | None = field()
    field_path: str | None = field()


@attrs.frozen
class TypedLocalObjectReference:
    api_group: str | None = field()
    kind: str | None = field()
    name: str | None = field()


@attrs.frozen
class TypedObjectReference:
    api_group: str | None = field()
    kind: str | None = field()
    name: str | None = field()
    namespace: str | None = field()


@attrs.frozen
class SecretReference:
    name: str | None = field()
    namespace: str | None = field()


@attrs.frozen
class ObjectFieldSelector:
    api_version: str | None = field()
    field_path: str | None = field()


@attrs.frozen
class ResourceFieldSelector:
    container_name: str | None = field()
    resource: str | None = field()
    divisor: Quantity | None = field()


@attrs.frozen
class ConfigMapKeySelector:
    name: str | None = field()
    key: str | None = field()
    optional: bool | None = field()


@attrs.frozen
class SecretKeySelector:
    name: str | None = field()
    key: str | None = field()
    optional: bool | None = field()


@attrs.frozen
class FileKeySelector:
    volume_name: str | None = field()
    path: str | None = field()
    key: str | None = field()
    optional: bool | None = field()


@attrs.frozen
class NodeSelectorRequirement:
    key: str | None = field()
    operator: str | None = field(go="v1.NodeSelectorOperator")
    values: tuple[str, ...] | None = field()


@attrs.frozen
class NodeSelectorTerm:
    match_expressions: tuple[NodeSelectorRequirement, ...] | None = field()
    match_fields: tuple[NodeSelectorRequirement, ...] | None = field()


@attrs.frozen
class NodeSelector:
    node_selector_terms: tuple[NodeSelectorTerm, ...] | None = field()


# --- containers -----------------------------------------------------------------------------


@attrs.frozen
class ContainerPort:
    name: str | None = field()
    host_port: Int32 | None = field()
    container_port: Int32 | None = field()
    protocol: str | None = field(go="v1.Protocol")
    host_ip: str | None = field()


@attrs.frozen
class ConfigMapEnvSource:
    name: str | None = field()
    optional: bool | None = field()


@attrs.frozen
class SecretEnvSource:
    name: str | None = field()
    optional: bool | None = field()


@attrs.frozen
class EnvFromSource:
    prefix: str | None = field()
    config_map_ref: ConfigMapEnvSource | None = field()
    secret_ref: SecretEnvSource | None = field()


@attrs.frozen
class EnvVarSource:
    field_ref: ObjectFieldSelector | None = field()
    resource_field_ref: ResourceFieldSelector | None = field()
    config_map_key_ref: ConfigMapKeySelector | None = field()
    secret_key_ref: SecretKeySelector | None = field()
    file_key_ref: FileKeySelector | None = field()


@attrs.frozen
class EnvVar:
    name: str | None = field()
    value: str | None = field()
    value_from: EnvVarSource | None = field()


@attrs.frozen
class ResourceClaim:
    name: str | None = field()
    request: str | None = field()


@attrs.frozen
class ResourceRequirements:
    limits: dict[str, Quantity] | None = field(go=_RL)
    requests: dict[str, Quantity] | None = field(go=_RL)
    claims: tuple[ResourceClaim, ...] | None = field()


@attrs.frozen
class VolumeResourceRequirements:
    limits: dict[str, Quantity] | None = field(go=_RL)
    requests: dict[str, Quantity] | None = field(go=_RL)


@attrs.frozen
class ContainerResizePolicy:
    resource_name: str | None = field(go="v1.ResourceName")
    restart_policy: str | None = field(go="v1.ResourceResizeRestartPolicy")


@attrs.frozen
class ContainerRestartRuleOnExitCodes:
    operator: str | None = field(go="v1.ContainerRestartRuleOnExitCodesOperator")
    values: tuple[Int32, ...] | None = field()


@attrs.frozen
class ContainerRestartRule:
    action: str | None = field(go="v1.ContainerRestartRuleAction")
    exit_codes: ContainerRestartRuleOnExitCodes | None = field()


@attrs.frozen
class VolumeMount:
    name: str | None = field()
    read_only: bool | None = field()
    recursive_read_only: str | None = field(go="v1.RecursiveReadOnlyMode")
    mount_path: str | None = field()
    sub_path: str | None = field()
    mount_propagation: str | None = field(go="v1.MountPropagationMode")
    sub_path_expr: str | None = field()


@attrs.frozen
class VolumeDevice:
    name: str | None = field()
    device_path: str | None = field()


@attrs.frozen
class ExecAction:
    command: tuple[str, ...] | None = field()


@attrs.frozen
class HTTPHeader:
    name: str | None = field()
    value: str | None = field()


@attrs.frozen
class HTTPGetAction:
    path: str | None = field()
    port: IntOrString | None = field()
    host: str | None = field()
    scheme: str | None = field(go="v1.URIScheme")
    http_headers: tuple[HTTPHeader, ...] | None = field()


@attrs.frozen
class TCPSocketAction:
    port: IntOrString | None = field()
    host: str | None = field()


@attrs.frozen
class GRPCAction:
    port: Int32 | None = field()
    service: str | None = field()


@attrs.frozen
class SleepAction:
    seconds: Int64 | None = field()


@attrs.frozen
class Probe:
    exec: ExecAction | None = field()
    http_get: HTTPGetAction | None = field()
    tcp_socket: TCPSocketAction | None = field()
    grpc: GRPCAction | None = field()
    initial_delay_seconds: Int32 | None = field()
    timeout_seconds: Int32 | None = field()
    period_seconds: Int32 | None = field()
    success_threshold: Int32 | None = field()
    failure_threshold: Int32 | None = field()
    termination_grace_period_seconds: Int64 | None = field()


@attrs.frozen
class LifecycleHandler:
    exec: ExecAction | None = field()
    http_get: HTTPGetAction | None = field()
    tcp_socket: TCPSocketAction | None = field()
    sleep: SleepAction | None = field()


@attrs.frozen
class Lifecycle:
    post_start: LifecycleHandler | None = field()
    pre_stop: LifecycleHandler | None = field()
    stop_signal: str | None = field(go="v1.Signal")


@attrs.frozen
class Capabilities:
    add: tuple[str, ...] | None = field(go="[]v1.Capability")
    drop: tuple[str, ...] | None = field(go="[]v1.Capability")


@attrs.frozen
class SELinuxOptions:
    user: str | None = field()
    role: str | None = field()
    type: str | None = field()
    level: str | None = field()


@attrs.frozen
class WindowsSecurityContextOptions:
    gmsa_credential_spec_name: str | None = field()
    gmsa_credential_spec: str | None = field()
    run_as_user_name: str | None = field()
    host_process: bool | None = field()


@attrs.frozen
class SeccompProfile:
    type: str | None = field(go="v1.SeccompProfileType")
    localhost_profile: str | None = field()


@attrs.frozen
class AppArmorProfile:
    type: str | None = field(go="v1.AppArmorProfileType")
    localhost_profile: str | None = field()


@attrs.frozen
class SecurityContext:
    capabilities: Capabilities | None = field()
    privileged: bool | None = field()
    se_linux_options: SELinuxOptions | None = field()
    windows_options: WindowsSecurityContextOptions | None = field()
    run_as_user: Int64 | None = field()
    run_as_group: Int64 | None = field()
    run_as_non_root: bool | None = field()
    read_only_root_filesystem: bool | None = field()
    allow_privilege_escalation: bool | None = field()
    proc_mount: str | None = field(go="v1.ProcMountType")
    seccomp_profile: SeccompProfile | None = field()
    app_armor_profile: AppArmorProfile | None = field()


@attrs.frozen
class Container:
    name: str | None = field()
    image: str | None = field()
    command: tuple[str, ...] | None = field()
    args: tuple[str, ...] | None = field()
    working_dir: str | None = field()
    ports: tuple[ContainerPort, ...] | None = field(strategy="merge", merge_key="containerPort")
    env_from: tuple[EnvFromSource, ...] | None = field()
    env: tuple[EnvVar, ...] | None = field(strategy="merge", merge_key="name")
    resources: ResourceRequirements | None = field()
    resize_policy: tuple[ContainerResizePolicy, ...] | None = field()
    restart_policy: str | None = field(go="v1.ContainerRestartPolicy")
    restart_policy_rules: tuple[ContainerRestartRule, ...] | None = field()
    volume_mounts: tuple[VolumeMount, ...] | None = field(strategy="merge", merge_key="mountPath")
    volume_devices: tuple[VolumeDevice, ...] | None = field(
        strategy="merge", merge_key="devicePath"
    )
    liveness_probe: Probe | None = field()
    readiness_probe: Probe | None = field()
    startup_probe: Probe | None = field()
    lifecycle: Lifecycle | None = field()
    termination_message_path: str | None = field()
    termination_message_policy: str | None = field(go="v1.TerminationMessagePolicy")
    image_pull_policy: str | None = field(go="v1.PullPolicy")
    security_context: SecurityContext | None = field()
    stdin: bool | None = field()
    stdin_once: bool | None = field()
    tty: bool | None = field()


@attrs.frozen
class EphemeralContainer:
    """A debugging container; the same fields as Container plus ``targetContainerName``."""

    name: str | None = field()
    image: str | None = field()
    command: tuple[str, ...] | None = field()
    args: tuple[str, ...] | None = field()
    working_dir: str | None = field()
    ports: tuple[ContainerPort, ...] | None = field(strategy="merge", merge_key="containerPort")
    env_from: tuple[EnvFromSource, ...] | None = field()
    env: tuple[EnvVar, ...] | None = field(strategy="merge", merge_key="name")
    resources: ResourceRequirements | None = field()
    resize_policy: tuple[ContainerResizePolicy, ...] | None = field()
    restart_policy: str | None = field(go="v1.ContainerRestartPolicy")
    restart_policy_rules: tuple[ContainerRestartRule, ...] | None = field()
    volume_mounts: tuple[VolumeMount, ...] | None = field(strategy="merge", merge_key="mountPath")
    volume_devices: tuple[VolumeDevice, ...] | None = field(
        strategy="merge", merge_key="devicePath"
    )
    liveness_probe: Probe | None = field()
    readiness_probe: Probe | None = field()
    startup_probe: Probe | None = field()
    lifecycle: Lifecycle | None = field()
    termination_message_path: str | None = field()
    termination_message_policy: str | None = field(go="v1.TerminationMessagePolicy")
    image_pull_policy: str | None = field(go="v1.PullPolicy")
    security_context: SecurityContext | None = field()
    stdin: bool | None = field()
    stdin_once: bool | None = field()
    tty: bool | None = field()
    target_container_name: str | None = field()


# --- volumes --------------------------------------------------------------------------------


@attrs.frozen
class KeyToPath:
    key: str | None = field()
    path: str | None = field()
    mode: Int32 | None = field()


@attrs.frozen
class EmptyDirVolumeSource:
    medium: str | None = field(go="v1.StorageMedium")
    size_limit: Quantity | None = field()
    mode: Int32 | None = field()  # v1.37 alpha (EmptyDirVolumeMode)


@attrs.frozen
class HostPathVolumeSource:
    path: str | None = field()
    type: str | None = field(go="v1.HostPathType")


@attrs.frozen
class ConfigMapVolumeSource:
    name: str | None = field()
    items: tuple[KeyToPath, ...] | None = field()
    default_mode: Int32 | None = field()
    optional: bool | None = field()


@attrs.frozen
class SecretVolumeSource:
    secret_name: str | None = field()
    items: tuple[KeyToPath, ...] | None = field()
    default_mode: Int32 | None = field()
    optional: bool | None = field()


@attrs.frozen
class PersistentVolumeClaimVolumeSource:
    claim_name: str | None = field()
    read_only: bool | None = field()


@attrs.frozen
class DownwardAPIVolumeFile:
    path: str | None = field()
    field_ref: ObjectFieldSelector | None = field()
    resource_field_ref: ResourceFieldSelector | None = field()
    mode: Int32 | None = field()


@attrs.frozen
class DownwardAPIVolumeSource:
    items: tuple[DownwardAPIVolumeFile, ...] | None = field()
    default_mode: Int32 | None = field()


@attrs.frozen
class SecretProjection:
    name: str | None = field()
    items: tuple[KeyToPath, ...] | None = field()
    optional: bool | None = field()


@attrs.frozen
class ConfigMapProjection:
    name: str | None = field()
    items: tuple[KeyToPath, ...] | None = field()
    optional: bool | None = field()


@attrs.frozen
class DownwardAPIProjection:
    items: tuple[DownwardAPIVolumeFile, ...] | None = field()


@attrs.frozen
class ServiceAccountTokenProjection:
    audience: str | None = field()
    expiration_seconds: Int64 | None = field()
    path: str | None = field()


@attrs.frozen
class ClusterTrustBundleProjection:
    name: str | None = field()
    signer_name: str | None = field()
    label_selector: LabelSelector | None = field()
    optional: bool | None = field()
    path: str | None = field()


@attrs.frozen
class VolumeProjection:
    secret: SecretProjection | None = field()
    downward_api: DownwardAPIProjection | None = field(wire="downwardAPI")
    config_map: ConfigMapProjection | None = field()
    service_account_token: ServiceAccountTokenProjection | None = field()
    cluster_trust_bundle: ClusterTrustBundleProjection | None = field()
    pod_certificate: Loose | None = field(go="v1.PodCertificateProjection")


@attrs.frozen
class ProjectedVolumeSource:
    sources: tuple[VolumeProjection, ...] | None = field()
    default_mode: Int32 | None = field()


@attrs.frozen
class NFSVolumeSource:
    server: str | None = field()
    path: str | None = field()
    read_only: bool | None = field()


@attrs.frozen
class CSIVolumeSource:
    driver: str | None = field()
    read_only: bool | None = field()
    fs_type: str | None = field()
    volume_attributes: dict[str, str] | None = field()
    node_publish_secret_ref: LocalObjectReference | None = field()


@attrs.frozen
class ImageVolumeSource:
    reference: str | None = field()
    pull_policy: str | None = field(go="v1.PullPolicy")


@attrs.frozen
class PersistentVolumeClaimTemplate:
    metadata: ObjectMeta | None = field()
    spec: PersistentVolumeClaimSpec | None = field()


@attrs.frozen
class EphemeralVolumeSource:
    volume_claim_template: PersistentVolumeClaimTemplate | None = field()


@attrs.frozen
class Volume:
    name: str | None = field()
    host_path: HostPathVolumeSource | None = field()
    empty_dir: EmptyDirVolumeSource | None = field()
    gce_persistent_disk: Loose | None = field(
        wire="gcePersistentDisk", go="v1.GCEPersistentDiskVolumeSource"
    )
    aws_elastic_block_store: Loose | None = field(
        wire="awsElasticBlockStore", go="v1.AWSElasticBlockStoreVolumeSource"
    )
    git_repo: Loose | None = field(go="v1.GitRepoVolumeSource")
    secret: SecretVolumeSource | None = field()
    nfs: NFSVolumeSource | None = field()
    iscsi: Loose | None = field(go="v1.ISCSIVolumeSource")
    glusterfs: Loose | None = field(go="v1.GlusterfsVolumeSource")
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = field()
    rbd: Loose | None = field(go="v1.RBDVolumeSource")
    flex_volume: Loose | None = field(go="v1.FlexVolumeSource")
    cinder: Loose | None = field(go="v1.CinderVolumeSource")
    cephfs: Loose | None = field(go="v1.CephFSVolumeSource")
    flocker: Loose | None = field(go="v1.FlockerVolumeSource")
    downward_api: DownwardAPIVolumeSource | None = field(wire="downwardAPI")
    fc: Loose | None = field(go="v1.FCVolumeSource")
    azure_file: Loose | None = field(go="v1.AzureFileVolumeSource")
    config_map: ConfigMapVolumeSource | None = field()
    vsphere_volume: Loose | None = field(go="v1.VsphereVirtualDiskVolumeSource")
    quobyte: Loose | None = field(go="v1.QuobyteVolumeSource")
    azure_disk: Loose | None = field(go="v1.AzureDiskVolumeSource")
    photon_persistent_disk: Loose | None = field(go="v1.PhotonPersistentDiskVolumeSource")
    projected: ProjectedVolumeSource | None = field()
    portworx_volume: Loose | None = field(go="v1.PortworxVolumeSource")
    scale_io: Loose | None = field(wire="scaleIO", go="v1.ScaleIOVolumeSource")
    storageos: Loose | None = field(go="v1.StorageOSVolumeSource")
    csi: CSIVolumeSource | None = field()
    ephemeral: EphemeralVolumeSource | None = field()
    image: ImageVolumeSource | None = field()


# --- scheduling -----------------------------------------------------------------------------


@attrs.frozen
class PreferredSchedulingTerm:
    weight: Int32 | None = field()
    preference: NodeSelectorTerm | None = field()


@attrs.frozen
class NodeAffinity:
    required_during_scheduling_ignored_during_execution: NodeSelector | None = field()
    preferred_during_scheduling_ignored_during_execution: (
        tuple[PreferredSchedulingTerm, ...] | None
    ) = field()


@attrs.frozen
class PodAffinityTerm:
    label_selector: LabelSelector | None = field()
    namespaces: tuple[str, ...] | None = field()
    topology_key: str | None = field()
    namespace_selector: LabelSelector | None = field()
    match_label_keys: tuple[str, ...] | None = field()
    mismatch_label_keys: tuple[str, ...] | None = field()


@attrs.frozen
class WeightedPodAffinityTerm:
    weight: Int32 | None = field()
    pod_affinity_term: PodAffinityTerm | None = field()


@attrs.frozen
class PodAffinity:
    required_during_scheduling_ignored_during_execution: tuple[PodAffinityTerm, ...] | None = (
        field()
    )
    preferred_during_scheduling_ignored_during_execution: (
        tuple[WeightedPodAffinityTerm, ...] | None
    ) = field()


@attrs.frozen
class PodAntiAffinity:
    required_during_scheduling_ignored_during_execution: tuple[PodAffinityTerm, ...] | None = (
        field()
    )
    preferred_during_scheduling_ignored_during_execution: (
        tuple[WeightedPodAffinityTerm, ...] | None
    ) = field()


@attrs.frozen
class Affinity:
    node_affinity: NodeAffinity | None = field()
    pod_affinity: PodAffinity | None = field()
    pod_anti_affinity: PodAntiAffinity | None = field()


@attrs.frozen
class Toleration:
    key: str | None = field()
    operator: str | None = field(go="v1.TolerationOperator")
    value: str | None = field()
    effect: str | None = field(go="v1.TaintEffect")
    toleration_seconds: Int64 | None = field()


@attrs.frozen
class TopologySpreadConstraint:
    max_skew: Int32 | None = field()
    topology_key: str | None = field()
    when_unsatisfiable: str | None = field(go="v1.UnsatisfiableConstraintAction")
    label_selector: LabelSelector | None = field()
    min_domains: Int32 | None = field()
    node_affinity_policy: str | None = field(go="v1.NodeInclusionPolicy")
    node_taints_policy: str | None = field(go="v1.NodeInclusionPolicy")
    match_label_keys: tuple[str, ...] | None = field()


# --- pod ------------------------------------------------------------------------------------


@attrs.frozen
class Sysctl:
    name: str | None = field()
    value: str | None = field()


@attrs.frozen
class PodSecurityContext:
    se_linux_options: SELinuxOptions | None = field()
    windows_options: WindowsSecurityContextOptions | None = field()
    run_as_user: Int64 | None = field()
    run_as_group: Int64 | None = field()
    run_as_non_root: bool | None = field()
    supplemental_groups: tuple[Int64, ...] | None = field()
    supplemental_groups_policy: str | None = field(go="v1.SupplementalGroupsPolicy")
    fs_group: Int64 | None = field()
    sysctls: tuple[Sysctl, ...] | None = field()
    fs_group_change_policy: str | None = field(go="v1.PodFSGroupChangePolicy")
    seccomp_profile: SeccompProfile | None = field()
    app_armor_profile: AppArmorProfile | None = field()
    se_linux_change_policy: str | None = field(go="v1.PodSELinuxChangePolicy")


@attrs.frozen
class HostAlias:
    ip: str | None = field()
    hostnames: tuple[str, ...] | None = field()


@attrs.frozen
class PodDNSConfigOption:
    name: str | None = field()
    value: str | None = field()


@attrs.frozen
class PodDNSConfig:
    nameservers: tuple[str, ...] | None = field()
    searches: tuple[str, ...] | None = field()
    options: tuple[PodDNSConfigOption, ...] | None = field()


@attrs.frozen
class PodReadinessGate:
    condition_type: str | None = field(go="v1.PodConditionType")


@attrs.frozen
class PodOS:
    name: str | None = field(go="v1.OSName")


@attrs.frozen
class PodSchedulingGate:
    name: str | None = field()


@attrs.frozen
class PodResourceClaim:
    name: str | None = field()
    resource_claim_name: str | None = field()
    resource_claim_template_name: str | None = field()


@attrs.frozen
class PodSpec:
    volumes: tuple[Volume, ...] | None = field(strategy="merge,retainKeys", merge_key="name")
    init_containers: tuple[Container, ...] | None = field(strategy="merge", merge_key="name")
    containers: tuple[Container, ...] | None = field(strategy="merge", merge_key="name")
    ephemeral_containers: tuple[EphemeralContainer, ...] | None = field(
        strategy="merge", merge_key="name"
    )
    restart_policy: str | None = field(go="v1.RestartPolicy")
    termination_grace_period_seconds: Int64 | None = field()
    active_deadline_seconds: Int64 | None = field()
    dns_policy: str | None = field(go="v1.DNSPolicy")
    node_selector: dict[str, str] | None = field()
    service_account_name: str | None = field()
    service_account: str | None = field()
    automount_service_account_token: bool | None = field()
    node_name: str | None = field()
    host_network: bool | None = field()
    host_pid: bool | None = field()
    host_ipc: bool | None = field()
    share_process_namespace: bool | None = field()
    security_context: PodSecurityContext | None = field()
    image_pull_secrets: tuple[LocalObjectReference, ...] | None = field(
        strategy="merge", merge_key="name"
    )
    hostname: str | None = field()
    subdomain: str | None = field()
    affinity: Affinity | None = field()
    scheduler_name: str | None = field()
    tolerations: tuple[Toleration, ...] | None = field()
    host_aliases: tuple[HostAlias, ...] | None = field(strategy="merge", merge_key="ip")
    priority_class_name: str | None = field()
    priority: Int32 | None = field()
    dns_config: PodDNSConfig | None = field()
    readiness_gates: tuple[PodReadinessGate, ...] | None = field()
    runtime_class_name: str | None = field()
    enable_service_links: bool | None = field()
    preemption_policy: str | None = field(go="v1.PreemptionPolicy")
    overhead: dict[str, Quantity] | None = field(go=_RL)
    topology_spread_constraints: tuple[TopologySpreadConstraint, ...] | None = field(
        strategy="merge", merge_key="topologyKey"
    )
    set_hostname_as_fqdn: bool | None = field()
    os: PodOS | None = field()
    host_users: bool | None = field()
    scheduling_gates: tuple[PodSchedulingGate, ...] | None = field(
        strategy="merge", merge_key="name"
    )
    resource_claims: tuple[PodResourceClaim, ...] | None = field(
        strategy="merge,retainKeys", merge_key="name"
    )
    resources: ResourceRequirements | None = field()
    hostname_override: str | None = field()


@attrs.frozen
class PodCondition:
    type: str | None = field(go="v1.PodConditionType")
    observed_generation: Int64 | None = field()
    status: str | None = field(go="v1.ConditionStatus")
    last_probe_time: Time | None = field()
    last_transition_time: Time | None = field()
    reason: str | None = field()
    message: str | None = field()


@attrs.frozen
class PodIP:
    ip: str | None = field()


@attrs.frozen
class HostIP:
    ip: str | None = field()


@attrs.frozen
class ContainerStateWaiting:
    reason: str | None = field()
    message: str | None = field()


@attrs.frozen
class ContainerStateRunning:
    started_at: Time | None = field()


@attrs.frozen
class ContainerStateTerminated:
    exit_code: Int32 | None = field()
    signal: Int32 | None = field()
    reason: str | None = field()
    message: str | None = field()
    started_at: Time | None = field()
    finished_at: Time | None = field()
    container_id: str | None = field()


@attrs.frozen
class ContainerState:
    waiting: ContainerStateWaiting | None = field()
    running: ContainerStateRunning | None = field()
    terminated: ContainerStateTerminated | None = field()


@attrs.frozen
class VolumeMountStatus:
    name: str | None = field()
    mount_path: str | None = field()
    read_only: bool | None = field()
    recursive_read_only: str | None = field(go="v1.RecursiveReadOnlyMode")


@attrs.frozen
class LinuxContainerUser:
    uid: Int64 | None = field()
    gid: Int64 | None = field()
    supplemental_groups: tuple[Int64, ...] | None = field()


@attrs.frozen
class ContainerUser:
    linux: LinuxContainerUser | None = field()


@attrs.frozen
class ResourceHealth:
    resource_id: str | None = field(go="v1.ResourceID")
    health: str | None = field(go="v1.ResourceHealthStatus")


@attrs.frozen
class ResourceStatus:
    name: str | None = field(go="v1.ResourceName")
    resources: tuple[ResourceHealth, ...] | None = field()


@attrs.frozen
class ContainerStatus:
    name: str | None = field()
    state: ContainerState | None = field()
    last_state: ContainerState | None = field()
    ready: bool | None = field()
    restart_count: Int32 | None = field()
    image: str | None = field()
    image_id: str | None = field()
    container_id: str | None = field()
    started: bool | None = field()
    allocated_resources: dict[str, Quantity] | None = field(go=_RL)
    resources: ResourceRequirements | None = field()
    volume_mounts: tuple[VolumeMountStatus, ...] | None = field(
        strategy="merge", merge_key="mountPath"
    )
    user: ContainerUser | None = field()
    allocated_resources_status: tuple[ResourceStatus, ...] | None = field(
        strategy="merge", merge_key="name"
    )
    stop_signal: str | None = field(go="v1.Signal")


@attrs.frozen
class PodResourceClaimStatus:
    name: str | None = field()
    resource_claim_name: str | None = field()


@attrs.frozen
class PodStatus:
    observed_generation: Int64 | None = field()
    phase: str | None = field(go="v1.PodPhase")
    conditions: tuple[PodCondition, ...] | None = field(strategy="merge", merge_key="type")
    message: str | None = field()
    reason: str | None = field()
    nominated_node_name: str | None = field()
    host_ip: str | None = field()
    host_ips: tuple[HostIP, ...] | None = field(strategy="merge", merge_key="ip")
    pod_ip: str | None = field()
    pod_ips: tuple[PodIP, ...] | None = field(strategy="merge", merge_key="ip")
    start_time: Time | None = field()
    init_container_statuses: tuple[ContainerStatus, ...] | None = field()
    container_statuses: tuple[ContainerStatus, ...] | None = field()
    qos_class: str | None = field(wire="qosClass", go="v1.PodQOSClass")
    ephemeral_container_statuses: tuple[ContainerStatus, ...] | None = field()
    resize: str | None = field(go="v1.PodResizeStatus")
    resource_claim_statuses: tuple[PodResourceClaimStatus, ...] | None = field(
        strategy="merge,retainKeys", merge_key="name"
    )
    extended_resource_claim_status: Loose | None = field(
        go="v1.PodExtendedResourceClaimStatus"
    )
    allocated_resources: dict[str, Quantity] | None = field(go=_RL)
    resources: ResourceRequirements | None = field()


@attrs.frozen
class Pod:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: PodSpec | None = field()
    status: PodStatus | None = field()


@attrs.frozen
class PodTemplateSpec:
    metadata: ObjectMeta | None = field()
    spec: PodSpec | None = field()


@attrs.frozen
class Binding:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    target: ObjectReference | None = field()


# --- namespace, node ------------------------------------------------------------------------


@attrs.frozen
class NamespaceSpec:
    finalizers: tuple[str, ...] | None = field(go="[]v1.FinalizerName")


@attrs.frozen
class NamespaceCondition:
    type: str | None = field(go="v1.NamespaceConditionType")
    status: str | None = field(go="v1.ConditionStatus")
    last_transition_time: Time | None = field()
    reason: str | None = field()
    message: str | None = field()


@attrs.frozen
class NamespaceStatus:
    phase: str | None = field(go="v1.NamespacePhase")
    conditions: tuple[NamespaceCondition, ...] | None = field(strategy="merge", merge_key="type")


@attrs.frozen
class Namespace:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: NamespaceSpec | None = field()
    status: NamespaceStatus | None = field()


@attrs.frozen
class Taint:
    key: str | None = field()
    value: str | None = field()
    effect: str | None = field(go="v1.TaintEffect")
    time_added: Time | None = field()


@attrs.frozen
class NodeSpec:
    pod_cidr: str | None = field()
    pod_cidrs: tuple[str, ...] | None = field(strategy="merge")
    provider_id: str | None = field()
    unschedulable: bool | None = field()
    taints: tuple[Taint, ...] | None = field()
    config_source: Loose | None = field(go="v1.NodeConfigSource")
    external_id: str | None = field()


@attrs.frozen
class NodeCondition:
    type: str | None = field(go="v1.NodeConditionType")
    status: str | None = field(go="v1.ConditionStatus")
    last_heartbeat_time: Time | None = field()
    last_transition_time: Time | None = field()
    reason: str | None = field()
    message: str | None = field()


@attrs.frozen
class NodeAddress:
    type: str | None = field(go="v1.NodeAddressType")
    address: str | None = field()


@attrs.frozen
class DaemonEndpoint:
    port: Int32 | None = field(wire="Port")


@attrs.frozen
class NodeDaemonEndpoints:
    kubelet_endpoint: DaemonEndpoint | None = field()


@attrs.frozen
class NodeSwapStatus:
    capacity: Int64 | None = field()


@attrs.frozen
class NodeSystemInfo:
    machine_id: str | None = field()
    system_uuid: str | None = field()
    boot_id: str | None = field()
    kernel_version: str | None = field()
    os_image: str | None = field()
    container_runtime_version: str | None = field()
    kubelet_version: str | None = field()
    kube_proxy_version: str | None = field()
    operating_system: str | None = field()
    architecture: str | None = field()
    swap: NodeSwapStatus | None = field()


@attrs.frozen
class ContainerImage:
    names: tuple[str, ...] | None = field()
    size_bytes: Int64 | None = field()


@attrs.frozen
class AttachedVolume:
    name: str | None = field(go="v1.UniqueVolumeName")
    device_path: str | None = field()


@attrs.frozen
class NodeRuntimeHandlerFeatures:
    recursive_read_only_mounts: bool | None = field()
    user_namespaces: bool | None = field()


@attrs.frozen
class NodeRuntimeHandler:
    name: str | None = field()
    features: NodeRuntimeHandlerFeatures | None = field()


@attrs.frozen
class NodeFeatures:
    supplemental_groups_policy: bool | None = field()


@attrs.frozen
class NodeStatus:
    capacity: dict[str, Quantity] | None = field(go=_RL)
    allocatable: dict[str, Quantity] | None = field(go=_RL)
    phase: str | None = field(go="v1.NodePhase")
    conditions: tuple[NodeCondition, ...] | None = field(strategy="merge", merge_key="type")
    addresses: tuple[NodeAddress, ...] | None = field(strategy="merge", merge_key="type")
    daemon_endpoints: NodeDaemonEndpoints | None = field()
    node_info: NodeSystemInfo | None = field()
    images: tuple[ContainerImage, ...] | None = field()
    volumes_in_use: tuple[str, ...] | None = field(go="[]v1.UniqueVolumeName")
    volumes_attached: tuple[AttachedVolume, ...] | None = field()
    config: Loose | None = field(go="v1.NodeConfigStatus")
    runtime_handlers: tuple[NodeRuntimeHandler, ...] | None = field()
    features: NodeFeatures | None = field()
    declared_features: tuple[str, ...] | None = field()


@attrs.frozen
class Node:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: NodeSpec | None = field()
    status: NodeStatus | None = field()


# --- services and endpoints -----------------------------------------------------------------


@attrs.frozen
class ServicePort:
    name: str | None = field()
    protocol: str | None = field(go="v1.Protocol")
    app_protocol: str | None = field()
    port: Int32 | None = field()
    target_port: IntOrString | None = field()
    node_port: Int32 | None = field()


@attrs.frozen
class ClientIPConfig:
    timeout_seconds: Int32 | None = field()


@attrs.frozen
class SessionAffinityConfig:
    client_ip: ClientIPConfig | None = field(wire="clientIP")


@attrs.frozen
class ServiceSpec:
    ports: tuple[ServicePort, ...] | None = field(strategy="merge", merge_key="port")
    selector: dict[str, str] | None = field()
    cluster_ip: str | None = field()
    cluster_ips: tuple[str, ...] | None = field()
    type: str | None = field(go="v1.ServiceType")
    external_ips: tuple[str, ...] | None = field()
    session_affinity: str | None = field(go="v1.ServiceAffinity")
    load_balancer_ip: str | None = field()
    load_balancer_source_ranges: tuple[str, ...] | None = field()
    external_name: str | None = field()
    external_traffic_policy: str | None = field(go="v1.ServiceExternalTrafficPolicy")
    health_check_node_port: Int32 | None = field()
    publish_not_ready_addresses: bool | None = field()
    session_affinity_config: SessionAffinityConfig | None = field()
    ip_families: tuple[str, ...] | None = field(go="[]v1.IPFamily")
    ip_family_policy: str | None = field(go="v1.IPFamilyPolicy")
    allocate_load_balancer_node_ports: bool | None = field()
    load_balancer_class: str | None = field()
    internal_traffic_policy: str | None = field(go="v1.ServiceInternalTrafficPolicy")
    traffic_distribution: str | None = field()


@attrs.frozen
class PortStatus:
    port: Int32 | None = field()
    protocol: str | None = field(go="v1.Protocol")
    error: str | None = field()


@attrs.frozen
class LoadBalancerIngress:
    ip: str | None = field()
    hostname: str | None = field()
    ip_mode: str | None = field(go="v1.LoadBalancerIPMode")
    ports: tuple[PortStatus, ...] | None = field()


@attrs.frozen
class LoadBalancerStatus:
    ingress: tuple[LoadBalancerIngress, ...] | None = field()


@attrs.frozen
class ServiceStatus:
    load_balancer: LoadBalancerStatus | None = field()
    conditions: tuple[Condition, ...] | None = field(strategy="merge", merge_key="type")


@attrs.frozen
class Service:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: ServiceSpec | None = field()
    status: ServiceStatus | None = field()


@attrs.frozen
class EndpointAddress:
    ip: str | None = field()
    hostname: str | None = field()
    node_name: str | None = field()
    target_ref: ObjectReference | None = field()


@attrs.frozen
class EndpointPort:
    name: str | None = field()
    port: Int32 | None = field()
    protocol: str | None = field(go="v1.Protocol")
    app_protocol: str | None = field()


@attrs.frozen
class EndpointSubset:
    addresses: tuple[EndpointAddress, ...] | None = field()
    not_ready_addresses: tuple[EndpointAddress, ...] | None = field()
    ports: tuple[EndpointPort, ...] | None = field()


@attrs.frozen
class Endpoints:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    subsets: tuple[EndpointSubset, ...] | None = field()


# --- configuration ---------------------------------------------------------------------------


@attrs.frozen
class ConfigMap:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    immutable: bool | None = field()
    data: dict[str, str] | None = field()
    binary_data: dict[str, Bytes] | None = field(go="map[string][]uint8")


@attrs.frozen
class Secret:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    immutable: bool | None = field()
    data: dict[str, Bytes] | None = field(go="map[string][]uint8")
    string_data: dict[str, str] | None = field()
    type: str | None = field(go="v1.SecretType")


@attrs.frozen
class ServiceAccount:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    secrets: tuple[ObjectReference, ...] | None = field(strategy="merge", merge_key="name")
    image_pull_secrets: tuple[LocalObjectReference, ...] | None = field()
    automount_service_account_token: bool | None = field()


# --- events ---------------------------------------------------------------------------------


@attrs.frozen
class EventSource:
    component: str | None = field()
    host: str | None = field()


@attrs.frozen
class EventSeries:
    count: Int32 | None = field()
    last_observed_time: MicroTime | None = field()


@attrs.frozen
class Event:
    """core/v1 Event (the older shape that ``kubectl get events`` lists)."""

    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    involved_object: ObjectReference | None = field()
    reason: str | None = field()
    message: str | None = field()
    source: EventSource | None = field()
    first_timestamp: Time | None = field()
    last_timestamp: Time | None = field()
    count: Int32 | None = field()
    type: str | None = field()
    event_time: MicroTime | None = field()
    series: EventSeries | None = field()
    action: str | None = field()
    related: ObjectReference | None = field()
    reporting_component: str | None = field()
    reporting_instance: str | None = field()


# --- quotas and limits ----------------------------------------------------------------------


@attrs.frozen
class ScopedResourceSelectorRequirement:
    scope_name: str | None = field(go="v1.ResourceQuotaScope")
    operator: str | None = field(go="v1.ScopeSelectorOperator")
    values: tuple[str, ...] | None = field()


@attrs.frozen
class ScopeSelector:
    match_expressions: tuple[ScopedResourceSelectorRequirement, ...] | None = field()


@attrs.frozen
class ResourceQuotaSpec:
    hard: dict[str, Quantity] | None = field(go=_RL)
    scopes: tuple[str, ...] | None = field(go="[]v1.ResourceQuotaScope")
    scope_selector: ScopeSelector | None = field()


@attrs.frozen
class ResourceQuotaStatus:
    hard: dict[str, Quantity] | None = field(go=_RL)
    used: dict[str, Quantity] | None = field(go=_RL)


@attrs.frozen
class ResourceQuota:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: ResourceQuotaSpec | None = field()
    status: ResourceQuotaStatus | None = field()


@attrs.frozen
class LimitRangeItem:
    type: str | None = field(go="v1.LimitType")
    max: dict[str, Quantity] | None = field(go=_RL)
    min: dict[str, Quantity] | None = field(go=_RL)
    default: dict[str, Quantity] | None = field(go=_RL)
    default_request: dict[str, Quantity] | None = field(go=_RL)
    max_limit_request_ratio: dict[str, Quantity] | None = field(go=_RL)


@attrs.frozen
class LimitRangeSpec:
    limits: tuple[LimitRangeItem, ...] | None = field()


@attrs.frozen
class LimitRange:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: LimitRangeSpec | None = field()


# --- storage --------------------------------------------------------------------------------


@attrs.frozen
class CSIPersistentVolumeSource:
    driver: str | None = field()
    volume_handle: str | None = field()
    read_only: bool | None = field()
    fs_type: str | None = field()
    volume_attributes: dict[str, str] | None = field()
    controller_publish_secret_ref: SecretReference | None = field()
    node_stage_secret_ref: SecretReference | None = field()
    node_publish_secret_ref: SecretReference | None = field()
    controller_expand_secret_ref: SecretReference | None = field()
    node_expand_secret_ref: SecretReference | None = field()


@attrs.frozen
class LocalVolumeSource:
    path: str | None = field()
    fs_type: str | None = field()


@attrs.frozen
class VolumeNodeAffinity:
    required: NodeSelector | None = field()


@attrs.frozen
class PersistentVolumeSpec:
    capacity: dict[str, Quantity] | None = field(go=_RL)
    gce_persistent_disk: Loose | None = field(
        wire="gcePersistentDisk", go="v1.GCEPersistentDiskVolumeSource"
    )
    aws_elastic_block_store: Loose | None = field(
        wire="awsElasticBlockStore", go="v1.AWSElasticBlockStoreVolumeSource"
    )
    host_path: HostPathVolumeSource | None = field()
    glusterfs: Loose | None = field(go="v1.GlusterfsPersistentVolumeSource")
    nfs: NFSVolumeSource | None = field()
    rbd: Loose | None = field(go="v1.RBDPersistentVolumeSource")
    iscsi: Loose | None = field(go="v1.ISCSIPersistentVolumeSource")
    cinder: Loose | None = field(go="v1.CinderPersistentVolumeSource")
    cephfs: Loose | None = field(go="v1.CephFSPersistentVolumeSource")
    fc: Loose | None = field(go="v1.FCVolumeSource")
    flocker: Loose | None = field(go="v1.FlockerVolumeSource")
    flex_volume: Loose | None = field(go="v1.FlexPersistentVolumeSource")
    azure_file: Loose | None = field(go="v1.AzureFilePersistentVolumeSource")
    vsphere_volume: Loose | None = field(go="v1.VsphereVirtualDiskVolumeSource")
    quobyte: Loose | None = field(go="v1.QuobyteVolumeSource")
    azure_disk: Loose | None = field(go="v1.AzureDiskVolumeSource")
    photon_persistent_disk: Loose | None = field(go="v1.PhotonPersistentDiskVolumeSource")
    portworx_volume: Loose | None = field(go="v1.PortworxVolumeSource")
    scale_io: Loose | None = field(wire="scaleIO", go="v1.ScaleIOPersistentVolumeSource")
    local: LocalVolumeSource | None = field()
    storageos: Loose | None = field(go="v1.StorageOSPersistentVolumeSource")
    csi: CSIPersistentVolumeSource | None = field()
    access_modes: tuple[str, ...] | None = field(go="[]v1.PersistentVolumeAccessMode")
    claim_ref: ObjectReference | None = field()
    persistent_volume_reclaim_policy: str | None = field(go="v1.PersistentVolumeReclaimPolicy")
    storage_class_name: str | None = field()
    mount_options: tuple[str, ...] | None = field()
    volume_mode: str | None = field(go="v1.PersistentVolumeMode")
    node_affinity: VolumeNodeAffinity | None = field()
    volume_attributes_class_name: str | None = field()


@attrs.frozen
class PersistentVolumeStatus:
    phase: str | None = field(go="v1.PersistentVolumePhase")
    message: str | None = field()
    reason: str | None = field()
    last_phase_transition_time: Time | None = field()


@attrs.frozen
class PersistentVolume:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: PersistentVolumeSpec | None = field()
    status: PersistentVolumeStatus | None = field()


@attrs.frozen
class PersistentVolumeClaimSpec:
    access_modes: tuple[str, ...] | None = field(go="[]v1.PersistentVolumeAccessMode")
    selector: LabelSelector | None = field()
    resources: VolumeResourceRequirements | None = field()
    volume_name: str | None = field()
    storage_class_name: str | None = field()
    volume_mode: str | None = field(go="v1.PersistentVolumeMode")
    data_source: TypedLocalObjectReference | None = field()
    data_source_ref: TypedObjectReference | None = field()
    volume_attributes_class_name: str | None = field()


@attrs.frozen
class PersistentVolumeClaimCondition:
    type: str | None = field(go="v1.PersistentVolumeClaimConditionType")
    status: str | None = field(go="v1.ConditionStatus")
    last_probe_time: Time | None = field()
    last_transition_time: Time | None = field()
    reason: str | None = field()
    message: str | None = field()


@attrs.frozen
class ModifyVolumeStatus:
    target_volume_attributes_class_name: str | None = field()
    status: str | None = field(go="v1.PersistentVolumeClaimModifyVolumeStatus")


@attrs.frozen
class PersistentVolumeClaimStatus:
    phase: str | None = field(go="v1.PersistentVolumeClaimPhase")
    access_modes: tuple[str, ...] | None = field(go="[]v1.PersistentVolumeAccessMode")
    capacity: dict[str, Quantity] | None = field(go=_RL)
    conditions: tuple[PersistentVolumeClaimCondition, ...] | None = field(
        strategy="merge", merge_key="type"
    )
    allocated_resources: dict[str, Quantity] | None = field(go=_RL)
    allocated_resource_statuses: dict[str, str] | None = field(
        go="map[v1.ResourceName]v1.ClaimResourceStatus"
    )
    current_volume_attributes_class_name: str | None = field()
    modify_volume_status: ModifyVolumeStatus | None = field()


@attrs.frozen
class PersistentVolumeClaim:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: PersistentVolumeClaimSpec | None = field()
    status: PersistentVolumeClaimStatus | None = field()


# --- replication controller -----------------------------------------------------------------


@attrs.frozen
class ReplicationControllerSpec:
    replicas: Int32 | None = field()
    min_ready_seconds: Int32 | None = field()
    selector: dict[str, str] | None = field()
    template: PodTemplateSpec | None = field()


@attrs.frozen
class ReplicationControllerCondition:
    type: str | None = field(go="v1.ReplicationControllerConditionType")
    status: str | None = field(go="v1.ConditionStatus")
    last_transition_time: Time | None = field()
    reason: str | None = field()
    message: str | None = field()


@attrs.frozen
class ReplicationControllerStatus:
    replicas: Int32 | None = field()
    fully_labeled_replicas: Int32 | None = field()
    ready_replicas: Int32 | None = field()
    available_replicas: Int32 | None = field()
    observed_generation: Int64 | None = field()
    conditions: tuple[ReplicationControllerCondition, ...] | None = field(
        strategy="merge", merge_key="type"
    )


@attrs.frozen
class ReplicationController:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: ReplicationControllerSpec | None = field()
    status: ReplicationControllerStatus | None = field()


@attrs.frozen
class PodTemplate:
    """core/v1 PodTemplate: a stored pod template (``template``, no spec/status)."""

    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    template: PodTemplateSpec | None = field()


@attrs.frozen
class ComponentCondition:
    type: str | None = field(go="v1.ComponentConditionType")
    status: str | None = field(go="v1.ConditionStatus")
    message: str | None = field()
    error: str | None = field()


@attrs.frozen
class ComponentStatus:
    """core/v1 ComponentStatus (deprecated in v1.19+; computed by the server, never stored)."""

    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    conditions: tuple[ComponentCondition, ...] | None = field(strategy="merge", merge_key="type")


KINDS: dict[str, type] = {
    "v1/Namespace": Namespace,
    "v1/Node": Node,
    "v1/Pod": Pod,
    "v1/Service": Service,
    "v1/Endpoints": Endpoints,
    "v1/ConfigMap": ConfigMap,
    "v1/Secret": Secret,
    "v1/ServiceAccount": ServiceAccount,
    "v1/Event": Event,
    "v1/ResourceQuota": ResourceQuota,
    "v1/LimitRange": LimitRange,
    "v1/PersistentVolume": PersistentVolume,
    "v1/PersistentVolumeClaim": PersistentVolumeClaim,
    "v1/ReplicationController": ReplicationController,
    "v1/Binding": Binding,
    "v1/PodTemplate": PodTemplate,
    "v1/ComponentStatus": ComponentStatus,
}
