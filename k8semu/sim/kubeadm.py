"""What ``kubeadm init`` leaves in ``kube-system``, and the control plane's leader election.

:func:`bootstrap_kubeadm` runs once, from :meth:`Cluster.create`, right after
kube-apiserver's own bootstrap, and writes (actor ``kubeadm``, user
``kubernetes-admin``) what kubeadm v1.33's ``upload-config`` and ``addon``
phases create:

- ConfigMaps ``kubeadm-config`` (ClusterConfiguration), ``kubelet-config``
  (KubeletConfiguration), ``kube-proxy`` (``config.conf`` + ``kubeconfig.conf``)
  and ``coredns`` (the Corefile); ``cluster-info`` in ``kube-public``;
- ServiceAccounts ``kube-proxy`` and ``coredns``, ClusterRole ``system:coredns``
  and the bindings kubeadm makes for them;
- the kube-proxy DaemonSet (host network, tolerating every taint, one pod
  ``kube-proxy-xxxxx`` per node, made by the DaemonSet controller);
- CoreDNS: Deployment ``coredns`` (2 replicas, ``k8s-app: kube-dns``,
  ``registry.k8s.io/coredns/coredns:v1.12.0``, readiness ``/ready`` on 8181,
  ``system-cluster-critical``, tolerating the control-plane taint) behind
  Service ``kube-dns`` at ``10.96.0.10`` (dns 53/UDP, dns-tcp 53/TCP,
  metrics 9153/TCP).

The control-plane static pods (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler) are the control-plane node's kubelet's business
(:mod:`k8semu.node.static_pods`).

Emulation note: the CoreDNS pod template carries a behaviour annotation
(``k8semu.io/behaviour.coredns``) saying the container serves its health
(8080) and readiness (8181) endpoints, which it does not declare as
container ports; without it the emulated probes would fail.

With the cluster option ``storage: local-path`` (``k8semu cluster create --storage
local-path``), :func:`bootstrap_local_path` then adds what kind's node image applies after
kubeadm (``/kind/manifests/default-storage.yaml``, applied by kind with ``kubectl apply`` as
``kubernetes-admin``: actor ``kind``, field manager ``kubectl-client-side-apply``, each object
with kubectl's ``last-applied-configuration``): Namespace ``local-path-storage``, ServiceAccount
``local-path-provisioner-service-account``, ClusterRole ``local-path-provisioner-role`` and
ClusterRoleBinding ``local-path-provisioner-bind``, Deployment ``local-path-provisioner`` (one
replica, ``kubernetes.io/os: linux``, tolerating the control-plane taint, so on the
control-plane node or a worker), the default StorageClass ``standard`` (``rancher.io/local-path``,
``WaitForFirstConsumer``, ``Delete``) and ConfigMap ``local-path-config`` (``config.json`` with
the ``nodePathMap`` ``/var/local-path-provisioner``, the helper pod's ``setup`` / ``teardown``
scripts and ``helperPod.yaml``). The provisioner's work is
:class:`~k8semu.controllers.localpath.LocalPathProvisioner`.

:class:`LeaseHolder` is the leader election of kube-controller-manager and
kube-scheduler: each holds a Lease of its name in ``kube-system``
(holderIdentity ``<node>_<uuid>``), renewed every 2 s (client-go's
retryPeriod). Renewals are heartbeats: they never count as work for
:meth:`~k8semu.sim.runtime.Runtime.settle`.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..api import errors
from ..api.apiserver import RequestContext
from ..api.auth import UserInfo, admin
from ..api.resources import by_kind
from ..client.component import Component
from ..client.leaderelection import LeaderElector
from ..node.static_pods import KUBERNETES_VERSION, POD_CIDR, SERVICE_CIDR

__all__ = ["bootstrap_kubeadm", "kubeadm_objects", "bootstrap_local_path", "local_path_objects", "STORAGE_OPTIONS",
           "LOCAL_PATH_ACTOR", "LeaseHolder", "holder_identity", "KUBEADM_ACTOR",
           "COREDNS_IMAGE", "KUBE_PROXY_IMAGE", "DNS_SERVICE_IP"]

Obj = dict[str, Any]

KUBEADM_ACTOR = "kubeadm"
COREDNS_IMAGE = "registry.k8s.io/coredns/coredns:v1.12.0"
KUBE_PROXY_IMAGE = f"registry.k8s.io/kube-proxy:{KUBERNETES_VERSION}"
DNS_SERVICE_IP = "10.96.0.10"
_COREDNS_BEHAVIOUR = "cpu 1m\nmemory 12Mi\nserve\nready true\nlive true\n"

COREFILE = """.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30 {
       disable success cluster.local
       disable denial cluster.local
    }
    loop
    reload
    loadbalance
}
"""


def _cluster_configuration(endpoint: str, pod_cidr: str) -> str:
    return f"""apiServer: {{}}
apiVersion: kubeadm.k8s.io/v1beta4
caCertificateValidityPeriod: 87600h0m0s
certificateValidityPeriod: 8760h0m0s
certificatesDir: /etc/kubernetes/pki
clusterName: kubernetes
controlPlaneEndpoint: {endpoint}:6443
controllerManager: {{}}
dns: {{}}
encryptionAlgorithm: RSA-2048
etcd:
  local:
    dataDir: /var/lib/etcd
imageRepository: registry.k8s.io
kind: ClusterConfiguration
kubernetesVersion: {KUBERNETES_VERSION}
networking:
  dnsDomain: cluster.local
  podSubnet: {pod_cidr}
  serviceSubnet: {SERVICE_CIDR}
proxy: {{}}
scheduler: {{}}
"""


KUBELET_CONFIGURATION = f"""apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  anonymous:
    enabled: false
  webhook:
    cacheTTL: 0s
    enabled: true
  x509:
    clientCAFile: /etc/kubernetes/pki/ca.crt
authorization:
  mode: Webhook
  webhook:
    cacheAuthorizedTTL: 0s
    cacheUnauthorizedTTL: 0s
cgroupDriver: systemd
clusterDNS:
- {DNS_SERVICE_IP}
clusterDomain: cluster.local
containerRuntimeEndpoint: ""
cpuManagerReconcilePeriod: 0s
crashLoopBackOff: {{}}
evictionPressureTransitionPeriod: 0s
fileCheckFrequency: 0s
healthzBindAddress: 127.0.0.1
healthzPort: 10248
httpCheckFrequency: 0s
imageMaximumGCAge: 0s
imageMinimumGCAge: 0s
kind: KubeletConfiguration
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: "0"
    text:
      infoBufferSize: "0"
  verbosity: 0
memorySwap: {{}}
nodeStatusReportFrequency: 0s
nodeStatusUpdateFrequency: 0s
rotateCertificates: true
runtimeRequestTimeout: 0s
shutdownGracePeriod: 0s
shutdownGracePeriodCriticalPods: 0s
staticPodPath: /etc/kubernetes/manifests
streamingConnectionIdleTimeout: 0s
syncFrequency: 0s
volumeStatsAggPeriod: 0s
"""


def _kube_proxy_configuration(pod_cidr: str) -> str:
    """kube-proxy's KubeProxyConfiguration as kubeadm writes it (``config.conf``)."""
    return f"""apiVersion: kubeproxy.config.k8s.io/v1alpha1
bindAddress: 0.0.0.0
bindAddressHardFail: false
clientConnection:
  acceptContentTypes: ""
  burst: 0
  contentType: ""
  kubeconfig: /var/lib/kube-proxy/kubeconfig.conf
  qps: 0
clusterCIDR: {pod_cidr}
configSyncPeriod: 0s
conntrack:
  maxPerCore: null
  min: null
  tcpBeLiberal: false
  tcpCloseWaitTimeout: null
  tcpEstablishedTimeout: null
  udpStreamTimeout: 0s
  udpTimeout: 0s
detectLocal:
  bridgeInterface: ""
  interfaceNamePrefix: ""
detectLocalMode: ""
enableProfiling: false
healthzBindAddress: ""
hostnameOverride: ""
iptables:
  localhostNodePorts: null
  masqueradeAll: false
  masqueradeBit: null
  minSyncPeriod: 0s
  syncPeriod: 0s
ipvs:
  excludeCIDRs: null
  minSyncPeriod: 0s
  scheduler: ""
  strictARP: false
  syncPeriod: 0s
  tcpFinTimeout: 0s
  tcpTimeout: 0s
  udpTimeout: 0s
kind: KubeProxyConfiguration
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: "0"
    text:
      infoBufferSize: "0"
  verbosity: 0
metricsBindAddress: ""
mode: ""
nftables:
  masqueradeAll: false
  masqueradeBit: null
  minSyncPeriod: 0s
  syncPeriod: 0s
nodePortAddresses: null
oomScoreAdj: null
portRange: ""
showHiddenMetricsForVersion: ""
winkernel:
  enableDSR: false
  forwardHealthCheckVip: false
  networkName: ""
  rootHnsEndpointName: ""
  sourceVip: ""
"""


def _kube_proxy_kubeconfig(endpoint: str) -> str:
    return f"""apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
    server: https://{endpoint}:6443
  name: default
contexts:
- context:
    cluster: default
    namespace: default
    user: default
  name: default
current-context: default
users:
- name: default
  user:
    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
"""


def _cm(name: str, data: dict[str, str], namespace: str = "kube-system", labels: dict[str, str] | None = None) -> Obj:
    meta: Obj = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def _crb(name: str, role: str, subjects: list[Obj]) -> Obj:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": subjects}


def kubeadm_objects(endpoint: str, pod_cidr: str = POD_CIDR) -> list[Obj]:
    """The objects :func:`bootstrap_kubeadm` creates, in creation order, for a control plane
    at address ``endpoint`` (the first control-plane node's InternalIP) and a cluster
    CIDR ``pod_cidr``."""
    dns_labels = {"k8s-app": "kube-dns"}
    coredns_deploy = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "coredns", "namespace": "kube-system", "labels": dict(dns_labels)},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": dict(dns_labels)},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": dict(dns_labels),
                             "annotations": {"k8semu.io/behaviour.coredns": _COREDNS_BEHAVIOUR}},
                "spec": {
                    "priorityClassName": "system-cluster-critical",
                    "serviceAccountName": "coredns",
                    "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {"matchExpressions": [
                                {"key": "k8s-app", "operator": "In", "values": ["kube-dns"]}]},
                            "topologyKey": "kubernetes.io/hostname"},
                    }]}},
                    "tolerations": [
                        {"key": "CriticalAddonsOnly", "operator": "Exists"},
                        {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"},
                    ],
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "containers": [{
                        "name": "coredns",
                        "image": COREDNS_IMAGE,
                        "imagePullPolicy": "IfNotPresent",
                        "resources": {"limits": {"memory": "170Mi"}, "requests": {"cpu": "100m", "memory": "70Mi"}},
                        "args": ["-conf", "/etc/coredns/Corefile"],
                        "volumeMounts": [{"name": "config-volume", "mountPath": "/etc/coredns", "readOnly": True}],
                        "ports": [
                            {"containerPort": 53, "name": "dns", "protocol": "UDP"},
                            {"containerPort": 53, "name": "dns-tcp", "protocol": "TCP"},
                            {"containerPort": 9153, "name": "metrics", "protocol": "TCP"},
                        ],
                        "securityContext": {
                            "allowPrivilegeEscalation": False,
                            "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]},
                            "readOnlyRootFilesystem": True,
                        },
                        "livenessProbe": {"httpGet": {"path": "/health", "port": 8080, "scheme": "HTTP"},
                                          "initialDelaySeconds": 60, "timeoutSeconds": 5,
                                          "successThreshold": 1, "failureThreshold": 5},
                        "readinessProbe": {"httpGet": {"path": "/ready", "port": 8181, "scheme": "HTTP"}},
                    }],
                    "dnsPolicy": "Default",
                    "volumes": [{"name": "config-volume",
                                 "configMap": {"name": "coredns", "items": [{"key": "Corefile", "path": "Corefile"}]}}],
                },
            },
        },
    }
    kube_dns = {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "kube-dns", "namespace": "kube-system",
                     "labels": {"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true",
                                "kubernetes.io/name": "CoreDNS"},
                     "annotations": {"prometheus.io/port": "9153", "prometheus.io/scrape": "true"}},
        "spec": {
            "clusterIP": DNS_SERVICE_IP,
            "ports": [
                {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
                {"name": "metrics", "port": 9153, "protocol": "TCP", "targetPort": 9153},
            ],
            "selector": dict(dns_labels),
        },
    }
    proxy_labels = {"k8s-app": "kube-proxy"}
    kube_proxy = {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "kube-proxy", "namespace": "kube-system", "labels": dict(proxy_labels)},
        "spec": {
            "selector": {"matchLabels": dict(proxy_labels)},
            "template": {
                "metadata": {"labels": dict(proxy_labels)},
                "spec": {
                    "containers": [{
                        "command": ["/usr/local/bin/kube-proxy", "--config=/var/lib/kube-proxy/config.conf",
                                    "--hostname-override=$(NODE_NAME)"],
                        "env": [{"name": "NODE_NAME",
                                 "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                        "image": KUBE_PROXY_IMAGE,
                        "imagePullPolicy": "IfNotPresent",
                        "name": "kube-proxy",
                        "securityContext": {"privileged": True},
                        "volumeMounts": [
                            {"mountPath": "/var/lib/kube-proxy", "name": "kube-proxy"},
                            {"mountPath": "/run/xtables.lock", "name": "xtables-lock"},
                            {"mountPath": "/lib/modules", "name": "lib-modules", "readOnly": True},
                        ],
                    }],
                    "hostNetwork": True,
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "priorityClassName": "system-node-critical",
                    "serviceAccountName": "kube-proxy",
                    "tolerations": [{"operator": "Exists"}],
                    "volumes": [
                        {"configMap": {"name": "kube-proxy"}, "name": "kube-proxy"},
                        {"hostPath": {"path": "/run/xtables.lock", "type": "FileOrCreate"}, "name": "xtables-lock"},
                        {"hostPath": {"path": "/lib/modules"}, "name": "lib-modules"},
                    ],
                },
            },
            "updateStrategy": {"type": "RollingUpdate"},
        },
    }
    coredns_role = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "system:coredns"},
        "rules": [
            {"apiGroups": [""], "resources": ["endpoints", "services", "pods", "namespaces"],
             "verbs": ["list", "watch"]},
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
            {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list", "watch"]},
        ],
    }
    return [
        _cm("kubeadm-config", {"ClusterConfiguration": _cluster_configuration(endpoint, pod_cidr)}),
        _cm("kubelet-config", {"kubelet": KUBELET_CONFIGURATION}),
        _cm("cluster-info", {"kubeconfig": _cluster_info(endpoint)}, namespace="kube-public"),
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "coredns", "namespace": "kube-system"}},
        coredns_role,
        _crb("system:coredns", "system:coredns",
             [{"kind": "ServiceAccount", "name": "coredns", "namespace": "kube-system"}]),
        _cm("coredns", {"Corefile": COREFILE}),
        kube_dns,
        coredns_deploy,
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "kube-proxy", "namespace": "kube-system"}},
        _crb("kubeadm:node-proxier", "system:node-proxier",
             [{"kind": "ServiceAccount", "name": "kube-proxy", "namespace": "kube-system"}]),
        _cm("kube-proxy", {"config.conf": _kube_proxy_configuration(pod_cidr), "kubeconfig.conf": _kube_proxy_kubeconfig(endpoint)},
            labels={"app": "kube-proxy"}),
        kube_proxy,
    ]


def _cluster_info(endpoint: str) -> str:
    return f"""apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: ""
    server: https://{endpoint}:6443
  name: ""
contexts: null
current-context: ""
kind: Config
preferences: {{}}
users: null
"""


def _endpoint(cluster: Any) -> str:
    nodes = list(cluster.nodes.nodes)
    cp = next((n for n in nodes if n.role == "control-plane"), nodes[0] if nodes else None)
    return cp.internal_ip if cp is not None else "127.0.0.1"


def bootstrap_kubeadm(cluster: Any) -> None:
    """Create kubeadm's kube-system addons in ``cluster`` (skipping any that exist), as ``kubeadm``."""
    api = cluster.api
    ctx = RequestContext(admin(), KUBEADM_ACTOR)
    for obj in kubeadm_objects(_endpoint(cluster), cluster.nodes.pod_cidr):
        info = by_kind(obj["apiVersion"], obj["kind"])
        meta = obj["metadata"]
        if api.log.get(info.key(meta.get("namespace"), meta["name"])) is not None:
            continue
        try:
            api.create(info, obj, namespace=meta.get("namespace"), ctx=ctx, field_validation="Ignore")
        except errors.AlreadyExists:
            pass


#: values of the cluster option ``storage`` (``none``: no StorageClass, as kubeadm leaves a cluster)
STORAGE_OPTIONS = ("none", "local-path")
#: the actor of what kind applies after kubeadm (kind runs ``kubectl apply`` as kubernetes-admin)
LOCAL_PATH_ACTOR = "kind"
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_LOCAL_PATH_CONFIG_JSON = """{
        "nodePathMap":[
        {
                "node":"DEFAULT_PATH_FOR_NON_LISTED_NODES",
                "paths":["%s"]
        }
        ]
}"""


def local_path_objects() -> list[Obj]:
    """The objects of kind's default-storage manifest, in its order, as written in the manifest
    (the StorageClass names namespace ``kube-system``, which the API server drops for a
    cluster-scoped object but kubectl keeps in its last-applied-configuration)."""
    from ..controllers import localpath as lp

    labels = {"app": lp.DEPLOYMENT}
    sa = {"kind": "ServiceAccount", "name": lp.SERVICE_ACCOUNT, "namespace": lp.NAMESPACE}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": lp.NAMESPACE}},
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": lp.SERVICE_ACCOUNT, "namespace": lp.NAMESPACE}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "local-path-provisioner-role"},
         "rules": [
             {"apiGroups": [""], "resources": ["nodes", "persistentvolumeclaims", "configmaps"],
              "verbs": ["get", "list", "watch"]},
             {"apiGroups": [""], "resources": ["endpoints", "persistentvolumes", "pods"], "verbs": ["*"]},
             {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
             {"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses"], "verbs": ["get", "list", "watch"]},
         ]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "local-path-provisioner-bind"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": "local-path-provisioner-role"},
         "subjects": [sa]},
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": lp.DEPLOYMENT, "namespace": lp.NAMESPACE},
         "spec": {
             "replicas": 1,
             "selector": {"matchLabels": dict(labels)},
             "template": {
                 "metadata": {"labels": dict(labels)},
                 "spec": {
                     "nodeSelector": {"kubernetes.io/os": "linux"},
                     "tolerations": [
                         {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "effect": "NoSchedule"},
                         {"key": "node-role.kubernetes.io/master", "operator": "Equal", "effect": "NoSchedule"},
                     ],
                     "serviceAccountName": lp.SERVICE_ACCOUNT,
                     "containers": [{
                         "name": lp.DEPLOYMENT,
                         "image": lp.PROVISIONER_IMAGE,
                         "imagePullPolicy": "IfNotPresent",
                         "command": ["local-path-provisioner", "--debug", "start", "--helper-image",
                                     lp.HELPER_IMAGE, "--config", "/etc/config/config.json"],
                         "volumeMounts": [{"name": "config-volume", "mountPath": "/etc/config/"}],
                         "env": [{"name": "POD_NAMESPACE",
                                  "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}],
                     }],
                     "volumes": [{"name": "config-volume", "configMap": {"name": lp.CONFIGMAP}}],
                 },
             },
         }},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
         "metadata": {"name": lp.STORAGE_CLASS, "namespace": "kube-system",
                      "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
         "provisioner": lp.PROVISIONER_NAME, "volumeBindingMode": "WaitForFirstConsumer", "reclaimPolicy": "Delete"},
        {"kind": "ConfigMap", "apiVersion": "v1",
         "metadata": {"name": lp.CONFIGMAP, "namespace": lp.NAMESPACE},
         "data": {
             "config.json": _LOCAL_PATH_CONFIG_JSON % lp.DEFAULT_PATH,
             "setup": '#!/bin/sh\nset -eu\nmkdir -m 0777 -p "$VOL_DIR"',
             "teardown": '#!/bin/sh\nset -eu\nrm -rf "$VOL_DIR"',
             "helperPod.yaml": ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: helper-pod\nspec:\n  containers:\n"
                                f"  - name: helper-pod\n    image: {lp.HELPER_IMAGE}\n    imagePullPolicy: IfNotPresent"),
         }},
    ]


def _go_json(value: Any) -> str:
    """Go's ``json.Marshal`` of a decoded manifest: map keys sorted, no spaces, ``<>&`` and
    U+2028/U+2029 escaped."""
    import json

    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                    ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    return text


def bootstrap_local_path(cluster: Any) -> None:
    """Apply kind's default-storage manifest to ``cluster`` (skipping objects that exist), as
    ``kubectl apply`` run by kind as kubernetes-admin does: each object created with kubectl's
    ``last-applied-configuration`` annotation, field manager ``kubectl-client-side-apply``,
    actor :data:`LOCAL_PATH_ACTOR`."""
    api = cluster.api
    ctx = RequestContext(admin(), LOCAL_PATH_ACTOR)
    for obj in local_path_objects():
        info = by_kind(obj["apiVersion"], obj["kind"])
        meta = dict(obj["metadata"])
        ann = dict(meta.get("annotations") or {})
        ann[_LAST_APPLIED] = _go_json(obj) + "\n"
        meta["annotations"] = ann
        namespace = meta.get("namespace") if info.namespaced else None
        if not info.namespaced:
            meta.pop("namespace", None)  # the API server clears it for a cluster-scoped object
        if api.log.get(info.key(namespace, meta["name"])) is not None:
            continue
        try:
            api.create(info, {**obj, "metadata": meta}, namespace=namespace, ctx=ctx, field_validation="Ignore",
                       field_manager="kubectl-client-side-apply")
        except errors.AlreadyExists:
            pass


def holder_identity(cluster: Any, lease: str) -> str:
    """A stable ``holderIdentity`` ``<control-plane node>_<uuid>`` for ``lease`` in ``cluster``
    (derived from the seed: the process lives on across k8semu commands)."""
    h = hashlib.sha256(f"{cluster.seed}/{lease}".encode()).hexdigest()
    uuid = f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"
    cp = next((n.name for n in cluster.nodes.nodes if n.role == "control-plane"), "control-plane")
    return f"{cp}_{uuid}"


class LeaseHolder(Component):
    """A control-plane process's leader election: acquires and renews the Lease ``lease`` in
    ``kube-system`` every ``retry_period`` seconds (writes as ``name`` with ``user``).

    The work itself (controllers, scheduling) runs in other components; this one only holds
    the Lease, so ``kubectl get lease -n kube-system`` shows what a kubeadm cluster shows.
    """

    def __init__(self, api: Any, name: str, user: UserInfo, identity: str, *, lease: str | None = None,
                 retry_period: float = 2.0) -> None:
        super().__init__(api, name, user)
        self.elector = LeaderElector(api, self.ctx, lease or name, identity, retry_period=retry_period)

    def next_wakeup(self) -> float | None:
        return None  # renewals are heartbeats

    async def main(self) -> None:
        await self.elector.run()
