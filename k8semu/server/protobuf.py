"""Decoding ``application/vnd.kubernetes.protobuf`` request bodies into JSON-shaped dicts.

kubectl's typed clients (``kubectl create namespace|deployment|configmap|…``,
``kubectl create token``) send their bodies as Kubernetes protobuf. The
envelope, as k8s.io/apimachinery's protobuf serializer writes it, is the magic
``k8s\\x00`` followed by a ``runtime.Unknown`` message::

    Unknown { 1 typeMeta { 1 apiVersion, 2 kind }, 2 raw (the object's own message),
              3 contentEncoding, 4 contentType }

The object's message follows the field numbers of its type's
``generated.proto`` in k8s.io/api. There are no compiled descriptors of those
types for Python, so this module carries a hand-written table (:data:`_SCHEMA`,
a small text DSL parsed at import) of the messages kubectl can send, and a
minimal wire-format reader.

What the decoder reproduces of the Go side (gogo-protobuf marshalling into
Go structs, then ``encoding/json`` with ``omitempty``):

* non-pointer scalars are always on the wire, zero or not; a zero one
  decodes to "absent" (what ``omitempty`` gives in JSON);
* pointer scalars (``*int32``, ``*bool``, ``*string`` — marked ``?`` in the
  table) are on the wire only when set, and keep their zero value
  (``replicas: 0``);
* nested messages present on the wire decode to a dict, possibly ``{}``;
  embedded Go structs (``LocalObjectReference`` in ``ConfigMapKeySelector``,
  ``ProbeHandler`` in ``Probe``, …; marked ``^``) are merged into their parent;
* ``Time`` becomes an RFC 3339 string, ``MicroTime`` the same with
  microseconds, ``Quantity`` its string, ``IntOrString`` an int or a string,
  ``RawExtension`` / ``FieldsV1`` the JSON they carry, bytes base64.

A field number the table does not know is accepted only when it carries a zero
value (a newer kubectl's always-marshalled empty field: the Go struct would
hold the same zero); otherwise decoding fails with a message naming the
message type and the field number, rather than dropping data.
"""

from __future__ import annotations

import base64
import re
from datetime import datetime, timezone
from typing import Any, Iterator

import orjson

__all__ = ["MEDIA_TYPE", "MAGIC", "ProtobufError", "UnsupportedProtobufType", "decode_body", "decode_message"]

#: The request ``Content-Type`` of Kubernetes protobuf.
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
#: The four bytes every Kubernetes protobuf body starts with.
MAGIC = b"k8s\x00"


class ProtobufError(ValueError):
    """A body that is not valid Kubernetes protobuf, or holds a field k8semu does not know
    (the HTTP front answers 400 ``BadRequest``)."""


class UnsupportedProtobufType(ProtobufError):
    """A well-formed body of a kind k8semu has no protobuf schema for (answered 415)."""


# ---------------------------------------------------------------------------- the schema
#
# One message per line (continuation lines are indented): ``Name: N field[:type]; …``.
# Types: ``s`` string (the default), ``i`` int32/int64, ``b`` bool, ``y`` bytes (base64
# in JSON); a trailing ``?`` marks a Go pointer (a present zero is kept); ``[T]``
# repeated, ``{T}`` map<string, T>; ``^T`` an embedded struct merged into the parent;
# any other name is a message (the special ones are in _SPECIAL).
_SCHEMA = """
TypeMeta: 1 apiVersion; 2 kind
ObjectMeta: 1 name; 2 generateName; 3 namespace; 4 selfLink; 5 uid; 6 resourceVersion; 7 generation:i;
  8 creationTimestamp:Time; 9 deletionTimestamp:Time; 10 deletionGracePeriodSeconds:i?; 11 labels:{s};
  12 annotations:{s}; 13 ownerReferences:[OwnerReference]; 14 finalizers:[s]; 17 managedFields:[ManagedFieldsEntry]
OwnerReference: 1 kind; 3 name; 4 uid; 5 apiVersion; 6 controller:b?; 7 blockOwnerDeletion:b?
ManagedFieldsEntry: 1 manager; 2 operation; 3 apiVersion; 4 time:Time; 6 fieldsType; 7 fieldsV1:FieldsV1;
  8 subresource
LabelSelector: 1 matchLabels:{s}; 2 matchExpressions:[LabelSelectorRequirement]
LabelSelectorRequirement: 1 key; 2 operator; 3 values:[s]
Condition: 1 type; 2 status; 3 observedGeneration:i; 4 lastTransitionTime:Time; 5 reason; 6 message
DeleteOptions: 1 gracePeriodSeconds:i?; 2 preconditions:Preconditions; 3 orphanDependents:b?;
  4 propagationPolicy:s?; 5 dryRun:[s]; 6 ignoreStoreReadErrorWithClusterBreakingPotential:b?
Preconditions: 1 uid:s?; 2 resourceVersion:s?
ObjectReference: 1 kind; 2 namespace; 3 name; 4 uid; 5 apiVersion; 6 resourceVersion; 7 fieldPath
LocalObjectReference: 1 name
TypedLocalObjectReference: 1 apiGroup:s?; 2 kind; 3 name
EmptyStatus:

Namespace: 1 metadata:ObjectMeta; 2 spec:NamespaceSpec; 3 status:NamespaceStatus
NamespaceSpec: 1 finalizers:[s]
NamespaceStatus: 1 phase
ConfigMap: 1 metadata:ObjectMeta; 2 data:{s}; 3 binaryData:{y}; 4 immutable:b?
Secret: 1 metadata:ObjectMeta; 2 data:{y}; 3 type; 4 stringData:{s}; 5 immutable:b?
ServiceAccount: 1 metadata:ObjectMeta; 2 secrets:[ObjectReference]; 3 imagePullSecrets:[LocalObjectReference];
  4 automountServiceAccountToken:b?
Service: 1 metadata:ObjectMeta; 2 spec:ServiceSpec; 3 status:ServiceStatus
ServiceSpec: 1 ports:[ServicePort]; 2 selector:{s}; 3 clusterIP; 4 type; 5 externalIPs:[s]; 7 sessionAffinity;
  8 loadBalancerIP; 9 loadBalancerSourceRanges:[s]; 10 externalName; 11 externalTrafficPolicy;
  12 healthCheckNodePort:i; 13 publishNotReadyAddresses:b; 14 sessionAffinityConfig:SessionAffinityConfig;
  17 ipFamilyPolicy:s?; 18 clusterIPs:[s]; 19 ipFamilies:[s]; 20 allocateLoadBalancerNodePorts:b?;
  21 loadBalancerClass:s?; 22 internalTrafficPolicy:s?; 23 trafficDistribution:s?
ServicePort: 1 name; 2 protocol; 3 port:i; 4 targetPort:IntOrString; 5 nodePort:i; 6 appProtocol:s?
ServiceStatus: 1 loadBalancer:LoadBalancerStatus; 2 conditions:[Condition]
LoadBalancerStatus: 1 ingress:[LoadBalancerIngress]
LoadBalancerIngress: 1 ip; 2 hostname
SessionAffinityConfig: 1 clientIP:ClientIPConfig
ClientIPConfig: 1 timeoutSeconds:i?
ResourceQuota: 1 metadata:ObjectMeta; 2 spec:ResourceQuotaSpec; 3 status:ResourceQuotaStatus
ResourceQuotaSpec: 1 hard:{Quantity}; 2 scopes:[s]; 3 scopeSelector:ScopeSelector
ResourceQuotaStatus: 1 hard:{Quantity}; 2 used:{Quantity}
ScopeSelector: 1 matchExpressions:[ScopedResourceSelectorRequirement]
ScopedResourceSelectorRequirement: 1 scopeName; 2 operator; 3 values:[s]

Pod: 1 metadata:ObjectMeta; 2 spec:PodSpec; 3 status:EmptyStatus
PodTemplateSpec: 1 metadata:ObjectMeta; 2 spec:PodSpec
PodSpec: 1 volumes:[Volume]; 2 containers:[Container]; 3 restartPolicy; 4 terminationGracePeriodSeconds:i?;
  5 activeDeadlineSeconds:i?; 6 dnsPolicy; 7 nodeSelector:{s}; 8 serviceAccountName; 9 serviceAccount;
  10 nodeName; 11 hostNetwork:b; 12 hostPID:b; 13 hostIPC:b; 14 securityContext:PodSecurityContext;
  15 imagePullSecrets:[LocalObjectReference]; 16 hostname; 17 subdomain; 18 affinity:Affinity;
  19 schedulerName; 20 initContainers:[Container]; 21 automountServiceAccountToken:b?;
  22 tolerations:[Toleration]; 23 hostAliases:[HostAlias]; 24 priorityClassName; 25 priority:i?;
  26 dnsConfig:PodDNSConfig; 27 shareProcessNamespace:b?; 28 readinessGates:[PodReadinessGate];
  29 runtimeClassName:s?; 30 enableServiceLinks:b?; 31 preemptionPolicy:s?; 32 overhead:{Quantity};
  33 topologySpreadConstraints:[TopologySpreadConstraint]; 35 setHostnameAsFQDN:b?; 36 os:PodOS;
  37 hostUsers:b?; 38 schedulingGates:[PodSchedulingGate]; 40 resources:ResourceRequirements
Container: 1 name; 2 image; 3 command:[s]; 4 args:[s]; 5 workingDir; 6 ports:[ContainerPort]; 7 env:[EnvVar];
  8 resources:ResourceRequirements; 9 volumeMounts:[VolumeMount]; 10 livenessProbe:Probe;
  11 readinessProbe:Probe; 12 lifecycle:Lifecycle; 13 terminationMessagePath; 14 imagePullPolicy;
  15 securityContext:SecurityContext; 16 stdin:b; 17 stdinOnce:b; 18 tty:b; 19 envFrom:[EnvFromSource];
  20 terminationMessagePolicy; 21 volumeDevices:[VolumeDevice]; 22 startupProbe:Probe;
  23 resizePolicy:[ContainerResizePolicy]; 24 restartPolicy:s?
ContainerPort: 1 name; 2 hostPort:i; 3 containerPort:i; 4 protocol; 5 hostIP
ContainerResizePolicy: 1 resourceName; 2 restartPolicy
EnvVar: 1 name; 2 value; 3 valueFrom:EnvVarSource
EnvVarSource: 1 fieldRef:ObjectFieldSelector; 2 resourceFieldRef:ResourceFieldSelector;
  3 configMapKeyRef:ConfigMapKeySelector; 4 secretKeyRef:SecretKeySelector
ObjectFieldSelector: 1 apiVersion; 2 fieldPath
ResourceFieldSelector: 1 containerName; 2 resource; 3 divisor:Quantity
ConfigMapKeySelector: 1 :^LocalObjectReference; 2 key; 3 optional:b?
SecretKeySelector: 1 :^LocalObjectReference; 2 key; 3 optional:b?
EnvFromSource: 1 prefix; 2 configMapRef:ConfigMapEnvSource; 3 secretRef:SecretEnvSource
ConfigMapEnvSource: 1 :^LocalObjectReference; 2 optional:b?
SecretEnvSource: 1 :^LocalObjectReference; 2 optional:b?
ResourceRequirements: 1 limits:{Quantity}; 2 requests:{Quantity}; 3 claims:[ResourceClaim]
ResourceClaim: 1 name; 2 request
VolumeMount: 1 name; 2 readOnly:b; 3 mountPath; 4 subPath; 5 mountPropagation:s?; 6 subPathExpr;
  7 recursiveReadOnly:s?
VolumeDevice: 1 name; 2 devicePath
Probe: 1 :^ProbeHandler; 2 initialDelaySeconds:i; 3 timeoutSeconds:i; 4 periodSeconds:i;
  5 successThreshold:i; 6 failureThreshold:i; 7 terminationGracePeriodSeconds:i?
ProbeHandler: 1 exec:ExecAction; 2 httpGet:HTTPGetAction; 3 tcpSocket:TCPSocketAction; 4 grpc:GRPCAction
LifecycleHandler: 1 exec:ExecAction; 2 httpGet:HTTPGetAction; 3 tcpSocket:TCPSocketAction; 4 sleep:SleepAction
Lifecycle: 1 postStart:LifecycleHandler; 2 preStop:LifecycleHandler; 3 stopSignal:s?
ExecAction: 1 command:[s]
HTTPGetAction: 1 path; 2 port:IntOrString; 3 host; 4 scheme; 5 httpHeaders:[HTTPHeader]
HTTPHeader: 1 name; 2 value
TCPSocketAction: 1 port:IntOrString; 2 host
GRPCAction: 1 port:i; 2 service:s?
SleepAction: 1 seconds:i
SecurityContext: 1 capabilities:Capabilities; 2 privileged:b?; 3 seLinuxOptions:SELinuxOptions; 4 runAsUser:i?;
  5 runAsNonRoot:b?; 6 readOnlyRootFilesystem:b?; 7 allowPrivilegeEscalation:b?; 8 runAsGroup:i?;
  9 procMount:s?; 10 windowsOptions:WindowsSecurityContextOptions; 11 seccompProfile:SeccompProfile;
  12 appArmorProfile:AppArmorProfile
PodSecurityContext: 1 seLinuxOptions:SELinuxOptions; 2 runAsUser:i?; 3 runAsNonRoot:b?;
  4 supplementalGroups:[i]; 5 fsGroup:i?; 6 runAsGroup:i?; 7 sysctls:[Sysctl];
  8 windowsOptions:WindowsSecurityContextOptions; 9 fsGroupChangePolicy:s?; 10 seccompProfile:SeccompProfile;
  11 appArmorProfile:AppArmorProfile; 12 supplementalGroupsPolicy:s?; 13 seLinuxChangePolicy:s?
Capabilities: 1 add:[s]; 2 drop:[s]
SELinuxOptions: 1 user; 2 role; 3 type; 4 level
WindowsSecurityContextOptions: 1 gmsaCredentialSpecName:s?; 2 gmsaCredentialSpec:s?; 3 runAsUserName:s?;
  4 hostProcess:b?
SeccompProfile: 1 type; 2 localhostProfile:s?
AppArmorProfile: 1 type; 2 localhostProfile:s?
Sysctl: 1 name; 2 value
Toleration: 1 key; 2 operator; 3 value; 4 effect; 5 tolerationSeconds:i?
HostAlias: 1 ip; 2 hostnames:[s]
PodDNSConfig: 1 nameservers:[s]; 2 searches:[s]; 3 options:[PodDNSConfigOption]
PodDNSConfigOption: 1 name; 2 value:s?
PodReadinessGate: 1 conditionType
PodOS: 1 name
PodSchedulingGate: 1 name
Affinity: 1 nodeAffinity:NodeAffinity; 2 podAffinity:PodAffinity; 3 podAntiAffinity:PodAffinity
NodeAffinity: 1 requiredDuringSchedulingIgnoredDuringExecution:NodeSelector;
  2 preferredDuringSchedulingIgnoredDuringExecution:[PreferredSchedulingTerm]
NodeSelector: 1 nodeSelectorTerms:[NodeSelectorTerm]
NodeSelectorTerm: 1 matchExpressions:[NodeSelectorRequirement]; 2 matchFields:[NodeSelectorRequirement]
NodeSelectorRequirement: 1 key; 2 operator; 3 values:[s]
PreferredSchedulingTerm: 1 weight:i; 2 preference:NodeSelectorTerm
PodAffinity: 1 requiredDuringSchedulingIgnoredDuringExecution:[PodAffinityTerm];
  2 preferredDuringSchedulingIgnoredDuringExecution:[WeightedPodAffinityTerm]
PodAffinityTerm: 1 labelSelector:LabelSelector; 2 namespaces:[s]; 3 topologyKey;
  4 namespaceSelector:LabelSelector; 5 matchLabelKeys:[s]; 6 mismatchLabelKeys:[s]
WeightedPodAffinityTerm: 1 weight:i; 2 podAffinityTerm:PodAffinityTerm
TopologySpreadConstraint: 1 maxSkew:i; 2 topologyKey; 3 whenUnsatisfiable; 4 labelSelector:LabelSelector;
  5 minDomains:i?; 6 nodeAffinityPolicy:s?; 7 nodeTaintsPolicy:s?; 8 matchLabelKeys:[s]
Volume: 1 name; 2 :^VolumeSource
VolumeSource: 1 hostPath:HostPathVolumeSource; 2 emptyDir:EmptyDirVolumeSource; 6 secret:SecretVolumeSource;
  7 nfs:NFSVolumeSource; 10 persistentVolumeClaim:PersistentVolumeClaimVolumeSource;
  16 downwardAPI:DownwardAPIVolumeSource; 19 configMap:ConfigMapVolumeSource;
  26 projected:ProjectedVolumeSource; 28 csi:CSIVolumeSource
HostPathVolumeSource: 1 path; 2 type:s?
EmptyDirVolumeSource: 1 medium; 2 sizeLimit:Quantity
SecretVolumeSource: 1 secretName; 2 items:[KeyToPath]; 3 defaultMode:i?; 4 optional:b?
NFSVolumeSource: 1 server; 2 path; 3 readOnly:b
PersistentVolumeClaimVolumeSource: 1 claimName; 2 readOnly:b
DownwardAPIVolumeSource: 1 items:[DownwardAPIVolumeFile]; 2 defaultMode:i?
DownwardAPIVolumeFile: 1 path; 2 fieldRef:ObjectFieldSelector; 3 resourceFieldRef:ResourceFieldSelector;
  4 mode:i?
ConfigMapVolumeSource: 1 :^LocalObjectReference; 2 items:[KeyToPath]; 3 defaultMode:i?; 4 optional:b?
KeyToPath: 1 key; 2 path; 3 mode:i?
ProjectedVolumeSource: 1 sources:[VolumeProjection]; 2 defaultMode:i?
VolumeProjection: 1 secret:SecretProjection; 2 downwardAPI:DownwardAPIProjection; 3 configMap:ConfigMapProjection;
  4 serviceAccountToken:ServiceAccountTokenProjection
SecretProjection: 1 :^LocalObjectReference; 2 items:[KeyToPath]; 4 optional:b?
ConfigMapProjection: 1 :^LocalObjectReference; 2 items:[KeyToPath]; 4 optional:b?
DownwardAPIProjection: 1 items:[DownwardAPIVolumeFile]
ServiceAccountTokenProjection: 1 audience; 2 expirationSeconds:i?; 3 path
CSIVolumeSource: 1 driver; 2 readOnly:b?; 3 fsType:s?; 4 volumeAttributes:{s};
  5 nodePublishSecretRef:LocalObjectReference

Deployment: 1 metadata:ObjectMeta; 2 spec:DeploymentSpec; 3 status:EmptyStatus
DeploymentSpec: 1 replicas:i?; 2 selector:LabelSelector; 3 template:PodTemplateSpec; 4 strategy:DeploymentStrategy;
  5 minReadySeconds:i; 6 revisionHistoryLimit:i?; 7 paused:b; 9 progressDeadlineSeconds:i?
DeploymentStrategy: 1 type; 2 rollingUpdate:RollingUpdateDeployment
RollingUpdateDeployment: 1 maxUnavailable:IntOrString?; 2 maxSurge:IntOrString?

Job: 1 metadata:ObjectMeta; 2 spec:JobSpec; 3 status:EmptyStatus
JobSpec: 1 parallelism:i?; 2 completions:i?; 3 activeDeadlineSeconds:i?; 4 selector:LabelSelector;
  5 manualSelector:b?; 6 template:PodTemplateSpec; 7 backoffLimit:i?; 8 ttlSecondsAfterFinished:i?;
  9 completionMode:s?; 10 suspend:b?; 11 podFailurePolicy:PodFailurePolicy; 12 backoffLimitPerIndex:i?;
  13 maxFailedIndexes:i?; 14 podReplacementPolicy:s?; 15 managedBy:s?; 16 successPolicy:SuccessPolicy
PodFailurePolicy: 1 rules:[PodFailurePolicyRule]
PodFailurePolicyRule: 1 action; 2 onExitCodes:PodFailurePolicyOnExitCodesRequirement;
  3 onPodConditions:[PodFailurePolicyOnPodConditionsPattern]
PodFailurePolicyOnExitCodesRequirement: 1 containerName:s?; 2 operator; 3 values:[i]
PodFailurePolicyOnPodConditionsPattern: 1 type; 2 status
SuccessPolicy: 1 rules:[SuccessPolicyRule]
SuccessPolicyRule: 1 succeededIndexes:s?; 2 succeededCount:i?
CronJob: 1 metadata:ObjectMeta; 2 spec:CronJobSpec; 3 status:EmptyStatus
CronJobSpec: 1 schedule; 2 startingDeadlineSeconds:i?; 3 concurrencyPolicy; 4 suspend:b?;
  5 jobTemplate:JobTemplateSpec; 6 successfulJobsHistoryLimit:i?; 7 failedJobsHistoryLimit:i?; 8 timeZone:s?
JobTemplateSpec: 1 metadata:ObjectMeta; 2 spec:JobSpec

Role: 1 metadata:ObjectMeta; 2 rules:[PolicyRule]
ClusterRole: 1 metadata:ObjectMeta; 2 rules:[PolicyRule]; 3 aggregationRule:AggregationRule
PolicyRule: 1 verbs:[s]; 2 apiGroups:[s]; 3 resources:[s]; 4 resourceNames:[s]; 5 nonResourceURLs:[s]
AggregationRule: 1 clusterRoleSelectors:[LabelSelector]
RoleBinding: 1 metadata:ObjectMeta; 2 subjects:[Subject]; 3 roleRef:RoleRef
ClusterRoleBinding: 1 metadata:ObjectMeta; 2 subjects:[Subject]; 3 roleRef:RoleRef
Subject: 1 kind; 2 apiGroup; 3 name; 4 namespace
RoleRef: 1 apiGroup; 2 kind; 3 name

PodDisruptionBudget: 1 metadata:ObjectMeta; 2 spec:PodDisruptionBudgetSpec; 3 status:EmptyStatus
PodDisruptionBudgetSpec: 1 minAvailable:IntOrString?; 2 selector:LabelSelector; 3 maxUnavailable:IntOrString?;
  4 unhealthyPodEvictionPolicy:s?
Eviction: 1 metadata:ObjectMeta; 2 deleteOptions:DeleteOptions
PriorityClass: 1 metadata:ObjectMeta; 2 value:i; 3 globalDefault:b; 4 description; 5 preemptionPolicy:s?

Ingress: 1 metadata:ObjectMeta; 2 spec:IngressSpec; 3 status:IngressStatus
IngressStatus: 1 loadBalancer:IngressLoadBalancerStatus
IngressLoadBalancerStatus: 1 ingress:[LoadBalancerIngress]
IngressSpec: 1 defaultBackend:IngressBackend; 2 tls:[IngressTLS]; 3 rules:[IngressRule]; 4 ingressClassName:s?
IngressBackend: 3 resource:TypedLocalObjectReference; 4 service:IngressServiceBackend
IngressServiceBackend: 1 name; 2 port:ServiceBackendPort
ServiceBackendPort: 1 name; 2 number:i
IngressTLS: 1 hosts:[s]; 2 secretName
IngressRule: 1 host; 2 :^IngressRuleValue
IngressRuleValue: 1 http:HTTPIngressRuleValue
HTTPIngressRuleValue: 1 paths:[HTTPIngressPath]
HTTPIngressPath: 1 path; 2 backend:IngressBackend; 3 pathType:s?

HorizontalPodAutoscaler: 1 metadata:ObjectMeta; 2 spec:HorizontalPodAutoscalerSpec; 3 status:EmptyStatus
HorizontalPodAutoscalerSpec: 1 scaleTargetRef:CrossVersionObjectReference; 2 minReplicas:i?; 3 maxReplicas:i;
  4 metrics:[MetricSpec]
CrossVersionObjectReference: 1 kind; 2 name; 3 apiVersion
MetricSpec: 1 type; 4 resource:ResourceMetricSource
ResourceMetricSource: 1 name; 2 target:MetricTarget
MetricTarget: 1 type; 2 value:Quantity; 3 averageValue:Quantity; 4 averageUtilization:i?

TokenRequest: 1 metadata:ObjectMeta; 2 spec:TokenRequestSpec; 3 status:TokenRequestStatus
TokenRequestSpec: 1 audiences:[s]; 3 boundObjectRef:BoundObjectReference; 4 expirationSeconds:i?
BoundObjectReference: 1 kind; 2 apiVersion; 3 name; 4 uid
TokenRequestStatus: 1 token; 2 expirationTimestamp:Time

SelfSubjectAccessReview: 1 metadata:ObjectMeta; 2 spec:SelfSubjectAccessReviewSpec; 3 status:SubjectAccessReviewStatus
SelfSubjectAccessReviewSpec: 1 resourceAttributes:ResourceAttributes; 2 nonResourceAttributes:NonResourceAttributes
SubjectAccessReview: 1 metadata:ObjectMeta; 2 spec:SubjectAccessReviewSpec; 3 status:SubjectAccessReviewStatus
LocalSubjectAccessReview: 1 metadata:ObjectMeta; 2 spec:SubjectAccessReviewSpec; 3 status:SubjectAccessReviewStatus
SubjectAccessReviewSpec: 1 resourceAttributes:ResourceAttributes; 2 nonResourceAttributes:NonResourceAttributes;
  3 user; 4 groups:[s]; 6 uid
ResourceAttributes: 1 namespace; 2 verb; 3 group; 4 version; 5 resource; 6 subresource; 7 name
NonResourceAttributes: 1 path; 2 verb
SubjectAccessReviewStatus: 1 allowed:b; 2 reason; 3 evaluationError; 4 denied:b
SelfSubjectRulesReview: 1 metadata:ObjectMeta; 2 spec:SelfSubjectRulesReviewSpec; 3 status:EmptyStatus
SelfSubjectRulesReviewSpec: 1 namespace
SelfSubjectReview: 1 metadata:ObjectMeta; 2 status:SelfSubjectReviewStatus
SelfSubjectReviewStatus: 1 userInfo:UserInfo
UserInfo: 1 username; 2 uid; 3 groups:[s]

CertificateSigningRequest: 1 metadata:ObjectMeta; 2 spec:CertificateSigningRequestSpec;
  3 status:CertificateSigningRequestStatus
CertificateSigningRequestSpec: 1 request:y; 2 username; 3 uid; 4 groups:[s]; 5 usages:[s]; 6 extra:{ExtraValue};
  7 signerName; 8 expirationSeconds:i?
CertificateSigningRequestStatus: 1 conditions:[CertificateSigningRequestCondition]; 2 certificate:y
CertificateSigningRequestCondition: 1 type; 2 reason; 3 message; 4 lastUpdateTime:Time; 5 lastTransitionTime:Time;
  6 status
"""

#: apiVersion -> the kinds of that version a body may carry (the root messages of _SCHEMA).
_ROOTS: dict[str, tuple[str, ...]] = {
    "v1": ("Pod", "Namespace", "ConfigMap", "Secret", "ServiceAccount", "Service", "ResourceQuota"),
    "apps/v1": ("Deployment",),
    "batch/v1": ("Job", "CronJob"),
    "autoscaling/v2": ("HorizontalPodAutoscaler",),
    "rbac.authorization.k8s.io/v1": ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"),
    "policy/v1": ("PodDisruptionBudget", "Eviction"),
    "scheduling.k8s.io/v1": ("PriorityClass",),
    "networking.k8s.io/v1": ("Ingress",),
    "certificates.k8s.io/v1": ("CertificateSigningRequest",),
    "authentication.k8s.io/v1": ("TokenRequest", "SelfSubjectReview"),
    "authorization.k8s.io/v1": ("SelfSubjectAccessReview", "SubjectAccessReview", "LocalSubjectAccessReview",
                                "SelfSubjectRulesReview"),
}
#: Kinds accepted under any apiVersion (client-go encodes options with the request's group version).
_ANY_VERSION = ("DeleteOptions",)


class _Field:
    """One field of the table: JSON name, element type, and the pointer/repeated/map/inline flags."""

    __slots__ = ("name", "type", "pointer", "repeated", "map", "inline")

    def __init__(self, name: str, spec: str) -> None:
        self.name = name
        self.repeated = spec.startswith("[")
        self.map = spec.startswith("{")
        if self.repeated or self.map:
            spec = spec[1:-1]
        self.inline = spec.startswith("^")
        self.pointer = spec.endswith("?")
        self.type = spec.strip("^?")


def _parse_schema(text: str) -> dict[str, dict[int, _Field]]:
    out: dict[str, dict[int, _Field]] = {}
    for line in re.sub(r"\n[ \t]+", " ", text).splitlines():
        if not line.strip():
            continue
        name, _, body = line.partition(":")
        fields: dict[int, _Field] = {}
        for item in filter(None, (x.strip() for x in body.split(";"))):
            num, _, rest = item.partition(" ")
            fname, _, ftype = rest.partition(":")
            fields[int(num)] = _Field(fname, ftype or "s")
        out[name.strip()] = fields
    return out


_MESSAGES = _parse_schema(_SCHEMA)
_SCALARS = ("s", "i", "b", "y")


# ---------------------------------------------------------------------------- the wire format

def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ProtobufError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise ProtobufError("varint too long")


def _fields(buf: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) for each field of one message: an int for wire types
    0 (varint), 1 (64-bit) and 5 (32-bit), the bytes for wire type 2 (length-delimited)."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        num, wt = key >> 3, key & 7
        if num == 0:
            raise ProtobufError("field number 0")
        if wt == 0:
            val, pos = _varint(buf, pos)
        elif wt == 2:
            size, pos = _varint(buf, pos)
            if pos + size > len(buf):
                raise ProtobufError("truncated length-delimited field")
            val, pos = buf[pos:pos + size], pos + size
        elif wt in (1, 5):
            width = 8 if wt == 1 else 4
            if pos + width > len(buf):
                raise ProtobufError("truncated fixed-width field")
            val, pos = int.from_bytes(buf[pos:pos + width], "little"), pos + width
        else:
            raise ProtobufError(f"unsupported wire type {wt} (field {num})")
        yield num, wt, val


def _signed(v: int) -> int:
    """int32 and int64 are plain varints; negatives are the 64-bit two's complement."""
    return v - (1 << 64) if v >= 1 << 63 else v


# ---------------------------------------------------------------------------- special messages

def _time(buf: bytes, micro: bool = False) -> str | None:
    seconds = nanos = 0
    for num, wt, val in _fields(buf):
        if wt == 0 and num == 1:
            seconds = _signed(val)
        elif wt == 0 and num == 2:
            nanos = _signed(val)
    if not buf:
        return None  # the zero time marshals to an empty message (JSON null)
    t = datetime.fromtimestamp(seconds, timezone.utc)
    if micro:
        return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{nanos // 1000:06d}Z"
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _int_or_string(buf: bytes) -> int | str:
    kind, ival, sval = 0, 0, ""
    for num, wt, val in _fields(buf):
        if num == 1 and wt == 0:
            kind = _signed(val)
        elif num == 2 and wt == 0:
            ival = _signed(val)
        elif num == 3 and wt == 2:
            sval = _text(val, "IntOrString", 3)
    return sval if kind == 1 else ival


def _only_string(buf: bytes, what: str) -> str:
    out = ""
    for num, wt, val in _fields(buf):
        if num != 1 or wt != 2:
            raise ProtobufError(f"protobuf: {what} has an unexpected field {num}")
        out = _text(val, what, 1)
    return out


def _raw_json(buf: bytes, what: str) -> Any:
    raw = b""
    for num, wt, val in _fields(buf):
        if num == 1 and wt == 2:
            raw = val
    if not raw:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise ProtobufError(f"protobuf: {what} does not hold JSON") from None


_SPECIAL = {
    "Time": _time,
    "MicroTime": lambda b: _time(b, micro=True),
    "Quantity": lambda b: _only_string(b, "Quantity"),
    "IntOrString": _int_or_string,
    "RawExtension": lambda b: _raw_json(b, "RawExtension"),
    "FieldsV1": lambda b: _raw_json(b, "FieldsV1"),
    # certificates/v1 ExtraValue { repeated string items = 1 }: a JSON list of strings
    "ExtraValue": lambda b: [_text(v, "ExtraValue", 1) for n, wt, v in _fields(b) if n == 1 and wt == 2],
}


def _text(val: bytes, msg: str, num: int) -> str:
    try:
        return val.decode()
    except UnicodeDecodeError:
        raise ProtobufError(f"protobuf: {msg} field {num} is not valid UTF-8") from None


# ---------------------------------------------------------------------------- decoding

def _scalar(f: _Field, wt: int, val: int | bytes, msg: str, num: int) -> Any:
    if f.type == "s" and wt == 2:
        return _text(val, msg, num)
    if f.type == "y" and wt == 2:
        return base64.b64encode(val).decode()
    if f.type == "i" and wt == 0:
        return _signed(val)
    if f.type == "b" and wt == 0:
        return bool(val)
    raise ProtobufError(f"protobuf: {msg} field {num} ({f.name}) has wire type {wt}, not a {f.type!r} value")


def _value(f: _Field, wt: int, val: int | bytes, msg: str, num: int) -> Any:
    if f.type in _SCALARS:
        return _scalar(f, wt, val, msg, num)
    if wt != 2:
        raise ProtobufError(f"protobuf: {msg} field {num} ({f.name}) has wire type {wt}, not a message")
    if f.type in _SPECIAL:
        return _SPECIAL[f.type](val)
    return decode_message(f.type, val)


def _zero(v: Any) -> bool:
    return v is None or v == "" or v is False or v == 0


def decode_message(name: str, buf: bytes) -> dict[str, Any]:
    """Decode one message of the schema table into its JSON form.

    Args:
        name: the message's name in the table (``"Deployment"``, ``"PodSpec"``, …).
        buf: the message's bytes (no magic, no envelope).

    Returns:
        A dict keyed by JSON field names, as ``encoding/json`` would render the Go struct
        (zero non-pointer scalars left out, pointer scalars kept, embedded structs merged).

    Raises:
        ProtobufError: malformed bytes, a wire type that does not fit the field, or a
            non-zero field number the table does not know (named with its message).
        UnsupportedProtobufType: ``name`` is not in the table.
    """
    schema = _MESSAGES.get(name)
    if schema is None:
        raise UnsupportedProtobufType(f"protobuf: k8semu has no schema for message {name}")
    out: dict[str, Any] = {}
    for num, wt, val in _fields(buf):
        f = schema.get(num)
        if f is None:
            if wt == 2 and not val or wt != 2 and val == 0:
                continue  # an always-marshalled zero field of a newer API version: no data
            raise ProtobufError(f"protobuf: field {num} of {name} is not supported by k8semu")
        if f.map:
            key, item = "", None
            for enum, ewt, eval_ in _fields(val if wt == 2 else b""):
                if enum == 1:
                    key = _text(eval_, name, num) if ewt == 2 else str(eval_)
                elif enum == 2:
                    item = _value(f, ewt, eval_, name, num)
            if item is None:
                item = "" if f.type in ("s", "y") else {} if f.type not in _SPECIAL else None
            out.setdefault(f.name, {})[key] = item
        elif f.repeated:
            items = out.setdefault(f.name, [])
            if wt == 2 and f.type in ("i", "b"):  # packed
                pos = 0
                while pos < len(val):
                    v, pos = _varint(val, pos)
                    items.append(_scalar(f, 0, v, name, num))
            else:
                items.append(_value(f, wt, val, name, num))
        elif f.inline:
            out.update(_value(f, wt, val, name, num))
        else:
            v = _value(f, wt, val, name, num)
            if f.pointer or isinstance(v, dict) or not _zero(v):
                out[f.name] = v
            else:
                out.pop(f.name, None)
    return out


def decode_body(data: bytes) -> dict[str, Any]:
    """Decode a Kubernetes protobuf request body into the object's JSON-shaped dict.

    Mirrors kube-apiserver's protobuf serializer on the decoding side: the body must
    start with :data:`MAGIC`; the ``runtime.Unknown`` envelope's ``typeMeta`` gives
    ``apiVersion`` and ``kind`` (put first in the result, as in JSON), its ``raw`` is
    the object's message.

    Args:
        data: the whole request body.

    Returns:
        e.g. ``{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"},
        "spec": {}, "status": {}}``.

    Raises:
        ProtobufError: no magic, malformed bytes, a content encoding, or a field k8semu
            does not know (the message names the type and the field number).
        UnsupportedProtobufType: a kind this module has no schema for.
    """
    if not data.startswith(MAGIC):
        raise ProtobufError("protobuf: the body does not start with the Kubernetes protobuf magic")
    tm: dict[str, Any] = {}
    raw = b""
    for num, wt, val in _fields(data[len(MAGIC):]):
        if num == 1 and wt == 2:
            tm = decode_message("TypeMeta", val)
        elif num == 2 and wt == 2:
            raw = val
        elif num == 3 and wt == 2 and val:
            raise ProtobufError(f"protobuf: unsupported content encoding {_text(val, 'Unknown', 3)!r}")
    api_version, kind = tm.get("apiVersion", ""), tm.get("kind", "")
    if kind not in _ANY_VERSION and kind not in _ROOTS.get(api_version, ()):
        raise UnsupportedProtobufType(
            f"protobuf: k8semu cannot decode {kind or '<no kind>'} ({api_version or '<no apiVersion>'}) bodies; "
            f"send it as application/json")
    return {"apiVersion": api_version, "kind": kind, **decode_message(kind, raw)}
