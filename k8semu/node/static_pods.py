"""Static pods and their mirror pods: how a kubeadm control plane runs on its node.

``kubeadm init`` writes four manifests to ``/etc/kubernetes/manifests`` on the
control-plane node — etcd, kube-apiserver, kube-controller-manager,
kube-scheduler — and that node's kubelet runs them as *static pods* (config
source ``file``). For each it creates a *mirror pod* in the API so users can
see it: named ``<pod>-<node>`` (``etcd-control-plane``) in ``kube-system``,
annotated ``kubernetes.io/config.source: file``, ``kubernetes.io/config.hash``
and ``kubernetes.io/config.mirror`` (the manifest's hash) and
``kubernetes.io/config.seen``, owned by the Node (``controller: true``), bound to
the node. A deleted mirror pod is created again.

:func:`static_pod_manifests` gives the manifests kubeadm v1.33 writes for a node
(its address in the flags, upstream's probes, requests, host paths);
:class:`StaticPodSource` is the kubelet's file source: its :meth:`~StaticPodSource.sync`
creates the missing mirror pods, which the kubelet then runs like any pod
bound to it. As on a kind node, the images of kubeadm's components
(:data:`PRELOADED_IMAGES`: the control plane's, kube-proxy's and CoreDNS's)
are in every node's image cache before its kubelet starts
(``Container image … already present on machine``).

Deviation: the kubelet here runs the mirror pod itself, so deleting a mirror
pod restarts its containers, where upstream's static pod keeps running and
only the mirror is recreated.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..api import errors

__all__ = ["KUBERNETES_VERSION", "ETCD_IMAGE", "PRELOADED_IMAGES", "static_pod_manifests", "mirror_pod", "config_hash",
           "StaticPodSource", "CONFIG_SOURCE", "CONFIG_MIRROR", "CONFIG_HASH", "CONFIG_SEEN"]

Obj = dict[str, Any]

KUBERNETES_VERSION = "v1.33.1"
ETCD_IMAGE = "registry.k8s.io/etcd:3.5.21-0"
#: Images every node has before its kubelet starts, as kind's node image preloads them.
PRELOADED_IMAGES = (
    ETCD_IMAGE,
    f"registry.k8s.io/kube-apiserver:{KUBERNETES_VERSION}",
    f"registry.k8s.io/kube-controller-manager:{KUBERNETES_VERSION}",
    f"registry.k8s.io/kube-scheduler:{KUBERNETES_VERSION}",
    f"registry.k8s.io/kube-proxy:{KUBERNETES_VERSION}",
    "registry.k8s.io/coredns/coredns:v1.12.0",
)
CONFIG_SOURCE = "kubernetes.io/config.source"
CONFIG_MIRROR = "kubernetes.io/config.mirror"
CONFIG_HASH = "kubernetes.io/config.hash"
CONFIG_SEEN = "kubernetes.io/config.seen"
SERVICE_CIDR = "10.96.0.0/16"
POD_CIDR = "10.244.0.0/16"


def _probe(path: str, port: int, scheme: str = "HTTP", *, initial: int | None = 10, period: int = 10,
           failure: int = 8, host: str = "127.0.0.1") -> Obj:
    p: Obj = {"failureThreshold": failure,
              "httpGet": {"host": host, "path": path, "port": port, "scheme": scheme}}
    if initial is not None:
        p["initialDelaySeconds"] = initial
    p["periodSeconds"] = period
    p["timeoutSeconds"] = 15
    return p


def _host_path(name: str, path: str, type_: str) -> Obj:
    return {"hostPath": {"path": path, "type": type_}, "name": name}


def _pod(component: str, container: Obj, volumes: list[Obj], annotations: Obj | None = None) -> Obj:
    meta: Obj = {"labels": {"component": component, "tier": "control-plane"}, "name": component,
                 "namespace": "kube-system"}
    if annotations:
        meta = {"annotations": annotations, **meta}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "containers": [{**container, "imagePullPolicy": "IfNotPresent"}],
            "hostNetwork": True,
            "priorityClassName": "system-node-critical",
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "volumes": volumes,
        },
    }


def _k8s_volumes(extra: list[Obj] = ()) -> tuple[list[Obj], list[Obj]]:
    vols = [
        _host_path("ca-certs", "/etc/ssl/certs", "DirectoryOrCreate"),
        _host_path("etc-ca-certificates", "/etc/ca-certificates", "DirectoryOrCreate"),
        *extra,
        _host_path("usr-local-share-ca-certificates", "/usr/local/share/ca-certificates", "DirectoryOrCreate"),
        _host_path("usr-share-ca-certificates", "/usr/share/ca-certificates", "DirectoryOrCreate"),
    ]
    mounts = [{"mountPath": v["hostPath"]["path"], "name": v["name"], "readOnly": True} for v in vols]
    return sorted(vols, key=lambda v: v["name"]), mounts


def static_pod_manifests(node_name: str, address: str, cluster_cidr: str = POD_CIDR) -> list[Obj]:
    """The four manifests ``kubeadm init`` (v1.33) writes on control-plane node ``node_name``
    advertising ``address``, in file-name order: etcd, kube-apiserver,
    kube-controller-manager, kube-scheduler."""
    etcd = _pod("etcd", {
        "command": [
            "etcd",
            f"--advertise-client-urls=https://{address}:2379",
            "--cert-file=/etc/kubernetes/pki/etcd/server.crt",
            "--client-cert-auth=true",
            "--data-dir=/var/lib/etcd",
            "--experimental-initial-corrupt-check=true",
            "--experimental-watch-progress-notify-interval=5s",
            f"--initial-advertise-peer-urls=https://{address}:2380",
            f"--initial-cluster={node_name}=https://{address}:2380",
            "--key-file=/etc/kubernetes/pki/etcd/server.key",
            f"--listen-client-urls=https://127.0.0.1:2379,https://{address}:2379",
            "--listen-metrics-urls=http://127.0.0.1:2381",
            f"--listen-peer-urls=https://{address}:2380",
            f"--name={node_name}",
            "--peer-cert-file=/etc/kubernetes/pki/etcd/peer.crt",
            "--peer-client-cert-auth=true",
            "--peer-key-file=/etc/kubernetes/pki/etcd/peer.key",
            "--peer-trusted-ca-file=/etc/kubernetes/pki/etcd/ca.crt",
            "--snapshot-count=10000",
            "--trusted-ca-file=/etc/kubernetes/pki/etcd/ca.crt",
        ],
        "image": ETCD_IMAGE,
        "livenessProbe": _probe("/livez", 2381),
        "name": "etcd",
        "resources": {"requests": {"cpu": "100m", "memory": "100Mi"}},
        "startupProbe": _probe("/readyz", 2381, failure=24),
        "volumeMounts": [{"mountPath": "/var/lib/etcd", "name": "etcd-data"},
                         {"mountPath": "/etc/kubernetes/pki/etcd", "name": "etcd-certs"}],
    }, [_host_path("etcd-certs", "/etc/kubernetes/pki/etcd", "DirectoryOrCreate"),
        _host_path("etcd-data", "/var/lib/etcd", "DirectoryOrCreate")],
        {"kubeadm.kubernetes.io/etcd.advertise-client-urls": f"https://{address}:2379"})

    vols, mounts = _k8s_volumes([_host_path("k8s-certs", "/etc/kubernetes/pki", "DirectoryOrCreate")])
    apiserver = _pod("kube-apiserver", {
        "command": [
            "kube-apiserver",
            f"--advertise-address={address}",
            "--allow-privileged=true",
            "--authorization-mode=Node,RBAC",
            "--client-ca-file=/etc/kubernetes/pki/ca.crt",
            "--enable-admission-plugins=NodeRestriction",
            "--enable-bootstrap-token-auth=true",
            "--etcd-cafile=/etc/kubernetes/pki/etcd/ca.crt",
            "--etcd-certfile=/etc/kubernetes/pki/apiserver-etcd-client.crt",
            "--etcd-keyfile=/etc/kubernetes/pki/apiserver-etcd-client.key",
            "--etcd-servers=https://127.0.0.1:2379",
            "--kubelet-client-certificate=/etc/kubernetes/pki/apiserver-kubelet-client.crt",
            "--kubelet-client-key=/etc/kubernetes/pki/apiserver-kubelet-client.key",
            "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
            "--proxy-client-cert-file=/etc/kubernetes/pki/front-proxy-client.crt",
            "--proxy-client-key-file=/etc/kubernetes/pki/front-proxy-client.key",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-client-ca-file=/etc/kubernetes/pki/front-proxy-ca.crt",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-username-headers=X-Remote-User",
            "--secure-port=6443",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--service-account-key-file=/etc/kubernetes/pki/sa.pub",
            "--service-account-signing-key-file=/etc/kubernetes/pki/sa.key",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--tls-cert-file=/etc/kubernetes/pki/apiserver.crt",
            "--tls-private-key-file=/etc/kubernetes/pki/apiserver.key",
        ],
        "image": f"registry.k8s.io/kube-apiserver:{KUBERNETES_VERSION}",
        "livenessProbe": _probe("/livez", 6443, "HTTPS", host=address),
        "name": "kube-apiserver",
        "readinessProbe": _probe("/readyz", 6443, "HTTPS", initial=None, period=1, failure=3, host=address),
        "resources": {"requests": {"cpu": "250m"}},
        "startupProbe": _probe("/livez", 6443, "HTTPS", failure=24, host=address),
        "volumeMounts": mounts,
    }, vols, {"kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint": f"{address}:6443"})

    vols, mounts = _k8s_volumes([
        _host_path("flexvolume-dir", "/usr/libexec/kubernetes/kubelet-plugins/volume/exec", "DirectoryOrCreate"),
        _host_path("k8s-certs", "/etc/kubernetes/pki", "DirectoryOrCreate"),
        _host_path("kubeconfig", "/etc/kubernetes/controller-manager.conf", "FileOrCreate"),
    ])
    controller_manager = _pod("kube-controller-manager", {
        "command": [
            "kube-controller-manager",
            "--allocate-node-cidrs=true",
            "--authentication-kubeconfig=/etc/kubernetes/controller-manager.conf",
            "--authorization-kubeconfig=/etc/kubernetes/controller-manager.conf",
            "--bind-address=127.0.0.1",
            "--client-ca-file=/etc/kubernetes/pki/ca.crt",
            f"--cluster-cidr={cluster_cidr}",
            "--cluster-name=kubernetes",
            "--cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt",
            "--cluster-signing-key-file=/etc/kubernetes/pki/ca.key",
            "--controllers=*,bootstrapsigner,tokencleaner",
            "--kubeconfig=/etc/kubernetes/controller-manager.conf",
            "--leader-elect=true",
            "--requestheader-client-ca-file=/etc/kubernetes/pki/front-proxy-ca.crt",
            "--root-ca-file=/etc/kubernetes/pki/ca.crt",
            "--service-account-private-key-file=/etc/kubernetes/pki/sa.key",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--use-service-account-credentials=true",
        ],
        "image": f"registry.k8s.io/kube-controller-manager:{KUBERNETES_VERSION}",
        "livenessProbe": _probe("/healthz", 10257, "HTTPS"),
        "name": "kube-controller-manager",
        "resources": {"requests": {"cpu": "200m"}},
        "startupProbe": _probe("/healthz", 10257, "HTTPS", failure=24),
        "volumeMounts": mounts,
    }, vols)

    scheduler = _pod("kube-scheduler", {
        "command": [
            "kube-scheduler",
            "--authentication-kubeconfig=/etc/kubernetes/scheduler.conf",
            "--authorization-kubeconfig=/etc/kubernetes/scheduler.conf",
            "--bind-address=127.0.0.1",
            "--kubeconfig=/etc/kubernetes/scheduler.conf",
            "--leader-elect=true",
        ],
        "image": f"registry.k8s.io/kube-scheduler:{KUBERNETES_VERSION}",
        "livenessProbe": _probe("/livez", 10259, "HTTPS"),
        "name": "kube-scheduler",
        "readinessProbe": _probe("/readyz", 10259, "HTTPS", initial=None, period=1, failure=3),
        "resources": {"requests": {"cpu": "100m"}},
        "startupProbe": _probe("/livez", 10259, "HTTPS", failure=24),
        "volumeMounts": [{"mountPath": "/etc/kubernetes/scheduler.conf", "name": "kubeconfig", "readOnly": True}],
    }, [_host_path("kubeconfig", "/etc/kubernetes/scheduler.conf", "FileOrCreate")])
    return [etcd, apiserver, controller_manager, scheduler]


def config_hash(manifest: Obj) -> str:
    """The kubelet's ``config.hash`` of a static pod: an MD5 over the manifest (32 hex digits)."""
    return hashlib.md5(json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def mirror_pod(manifest: Obj, node_name: str, node_uid: str, seen: str) -> Obj:
    """The mirror pod the kubelet creates for static pod ``manifest`` on ``node_name``.

    ``seen`` is ``kubernetes.io/config.seen`` (RFC 3339 with nanoseconds).
    """
    meta = manifest["metadata"]
    h = config_hash(manifest)
    annotations = {**(meta.get("annotations") or {}), CONFIG_HASH: h, CONFIG_MIRROR: h, CONFIG_SEEN: seen,
                   CONFIG_SOURCE: "file"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{meta['name']}-{node_name}",
            "namespace": meta.get("namespace") or "default",
            "labels": dict(meta.get("labels") or {}),
            "annotations": dict(sorted(annotations.items())),
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node_name, "uid": node_uid,
                                 "controller": True}],
        },
        "spec": {**manifest["spec"], "nodeName": node_name,
                 "tolerations": [{"effect": "NoExecute", "operator": "Exists"}]},
    }


class StaticPodSource:
    """The kubelet's ``file`` config source on one node (see module docstring).

    Args:
        kubelet: the node's :class:`~k8semu.node.kubelet.Kubelet` (its API,
            identity, pod cache and container runtime are used).
        manifests: the static pods; default: kubeadm's four when the node's
            role is ``control-plane``, none otherwise.
    """

    def __init__(self, kubelet: Any, manifests: list[Obj] | None = None, *,
                 cluster_cidr: str | None = None) -> None:
        from .behaviour import image_pull_result
        from .runtime import Image, normalize_image

        self.k = kubelet
        cfg = kubelet.cfg
        if manifests is None:
            manifests = (static_pod_manifests(cfg.name, cfg.internal_ip, cluster_cidr or POD_CIDR)
                         if cfg.role == "control-plane" else [])
        self.manifests = manifests
        for image in PRELOADED_IMAGES:  # the node image ships them (kind), or kubeadm pre-pulled them
            r = image_pull_result(image)
            if r.ok and kubelet.runtime.images.get(image) is None:
                kubelet.runtime.images.add(Image(normalize_image(image), r.image_id, int(r.size)))

    def sync(self, now: float) -> None:
        """Create the mirror pods that are missing from the kubelet's pod cache."""
        k = self.k
        if not self.manifests or not k._node_uid:
            return
        present = {p["metadata"]["name"] for p in k.pods.indexer.list()
                   if p["metadata"].get("namespace") == "kube-system"}
        nanos = int(round((k.api.epoch.timestamp() + now) * 1e9))
        base = k.api.timestamp(now).rstrip("Z")
        seen = f"{base}.{nanos % 1_000_000_000:09d}Z"
        for m in self.manifests:
            pod = mirror_pod(m, k.node_name, k._node_uid, seen)
            if pod["metadata"]["name"] in present:
                continue
            try:
                k.api.create("pods", pod, namespace="kube-system", ctx=k.ctx)
            except errors.StatusError:
                pass  # already there (our watch is behind) or refused: try again on the next sync
