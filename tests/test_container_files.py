"""A container's name-service files and the tools that read them, as a real pod shows them.

Mirrors the kubelet (v1.33) and containerd: ``/etc/resolv.conf`` from
``dns.Configurer.GetPodDNS`` (``pkg/kubelet/network/dns/dns.go``) written by containerd's
``parseDNSOptions``; ``/etc/hosts`` from ``managedHostsFileContent`` /
``nodeHostsFileContent`` (``pkg/kubelet/kubelet_pods.go``); ``hostname [-f|-i|-d|-s]`` as
busybox answers it from those files; ``head``/``tail`` ``-c``/``-n``; the nginx image's
``nginx.conf`` and ``nginx -v``. Everything in virtual time, through ``k8semu exec``.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import shutil

import pytest

from k8semu.cli.main import main
from k8semu.node import behaviour, dns
from k8semu.node.volumes import SANDBOX_STORE, DownwardContext, HostFiles, PodVolumes, container_mounts
from k8semu.sim.kubeadm import DNS_SERVICE_IP

MANIFEST = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: "nginx:1.25"}]
---
apiVersion: v1
kind: Service
metadata: {name: nginx}
spec:
  clusterIP: None
  selector: {app: sts}
  ports: [{port: 80}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: nginx
  replicas: 1
  selector: {matchLabels: {app: sts}}
  template:
    metadata: {labels: {app: sts}}
    spec:
      containers: [{name: c, image: busybox, command: [sleep, infinity]}]
---
apiVersion: v1
kind: Pod
metadata: {name: custom}
spec:
  dnsPolicy: "None"
  dnsConfig:
    nameservers: [1.2.3.4]
    searches: [ns1.svc.cluster-domain.example, my.dns.search.suffix]
    options: [{name: ndots, value: "2"}, {name: edns0}]
  hostAliases:
  - {ip: 127.0.0.1, hostnames: [foo.local, bar.local]}
  - {ip: 10.1.2.3, hostnames: [foo.remote]}
  containers: [{name: c, image: busybox, command: [sleep, infinity]}]
---
apiVersion: v1
kind: Pod
metadata: {name: merged}
spec:
  dnsConfig:
    searches: [extra.example]
    options: [{name: ndots, value: "1"}, {name: timeout, value: "2"}]
  containers: [{name: c, image: busybox, command: [sleep, infinity]}]
---
apiVersion: v1
kind: Pod
metadata: {name: default-dns}
spec:
  dnsPolicy: Default
  containers: [{name: c, image: busybox, command: [sleep, infinity]}]
---
apiVersion: v1
kind: Pod
metadata: {name: hostnet}
spec:
  hostNetwork: true
  containers: [{name: c, image: busybox, command: [sleep, infinity]}]
---
apiVersion: v1
kind: Pod
metadata: {name: hostnet-cluster}
spec:
  hostNetwork: true
  dnsPolicy: ClusterFirstWithHostNet
  containers: [{name: c, image: busybox, command: [sleep, infinity]}]
---
apiVersion: v1
kind: Pod
metadata: {name: own-hosts}
spec:
  volumes: [{name: h, configMap: {name: hosts}}]
  containers:
  - name: c
    image: busybox
    command: [sleep, infinity]
    volumeMounts: [{name: h, mountPath: /etc/hosts, subPath: hosts}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: hosts}
data: {hosts: "127.0.0.1 localhost mine\\n"}
"""

BOILERPLATE = ("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
               "fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")
CLUSTER_FIRST = ("search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\n"
                 "options ndots:5\n")


@pytest.fixture(scope="module")
def cluster_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("files") / "cluster.log"
    manifest = path.parent / "m.yaml"
    manifest.write_text(MANIFEST)
    with contextlib.redirect_stdout(None), contextlib.redirect_stderr(None):
        assert main(["--cluster", str(path), "cluster", "create", "--nodes", "2"]) == 0
        assert main(["--cluster", str(path), "apply", "-f", str(manifest), "-q"]) == 0
    return path


@pytest.fixture
def k8semu(cluster_file, tmp_path, capsys, monkeypatch):
    path = tmp_path / "cluster.log"
    shutil.copy(cluster_file, path)

    def run(*args):
        monkeypatch.setattr("sys.stdin", io.StringIO(""))
        capsys.readouterr()
        rc = main(["--cluster", str(path), *args])
        out, err = capsys.readouterr()
        return rc, out, err

    return run


def _exec(k8semu, pod, *argv):
    rc, out, err = k8semu("exec", pod, "--", *argv)
    return rc, out, err


def _pods(k8semu):
    rc, out, _ = k8semu("get", "pods", "-A", "-o", "json")
    assert rc == 0
    return {p["metadata"]["name"]: p for p in json.loads(out)["items"]}


def _web(pods):
    return next(n for n in pods if n.startswith("web-"))


# ---------------------------------------------------------------------------- resolv.conf

def test_cluster_dns_is_the_kube_dns_service(k8semu):
    rc, out, _ = k8semu("get", "service", "kube-dns", "-n", "kube-system", "-o", "jsonpath={.spec.clusterIP}")
    assert rc == 0 and out == dns.CLUSTER_DNS == DNS_SERVICE_IP


def test_cluster_first_resolv_conf(k8semu):
    pods = _pods(k8semu)
    assert _exec(k8semu, _web(pods), "cat", "/etc/resolv.conf") == (0, CLUSTER_FIRST, "")
    assert _exec(k8semu, "db-0", "cat", "/etc/resolv.conf") == (0, CLUSTER_FIRST, "")


def test_dns_policy_none_uses_dns_config_only(k8semu):
    assert _exec(k8semu, "custom", "cat", "/etc/resolv.conf") == (
        0, "search ns1.svc.cluster-domain.example my.dns.search.suffix\nnameserver 1.2.3.4\n"
           "options ndots:2 edns0\n", "")


def test_dns_config_merges_into_cluster_first(k8semu):
    assert _exec(k8semu, "merged", "cat", "/etc/resolv.conf") == (
        0, "search default.svc.cluster.local svc.cluster.local cluster.local extra.example\n"
           "nameserver 10.96.0.10\noptions ndots:1 timeout:2\n", "")


def test_default_policy_and_host_network_use_the_nodes_resolver(k8semu):
    node = "nameserver 172.18.0.1\noptions edns0 trust-ad ndots:0\n"
    assert _exec(k8semu, "default-dns", "cat", "/etc/resolv.conf") == (0, node, "")
    assert _exec(k8semu, "hostnet", "cat", "/etc/resolv.conf") == (0, node, "")  # ClusterFirst falls back
    assert _exec(k8semu, "hostnet-cluster", "cat", "/etc/resolv.conf") == (0, CLUSTER_FIRST, "")


# ---------------------------------------------------------------------------- /etc/hosts and hostname

def test_deployment_pod_hosts_and_hostname(k8semu):
    pods = _pods(k8semu)
    name = _web(pods)
    ip = pods[name]["status"]["podIP"]
    assert _exec(k8semu, name, "cat", "/etc/hosts") == (0, BOILERPLATE + f"{ip}\t{name}\n", "")
    assert _exec(k8semu, name, "hostname") == (0, name + "\n", "")
    assert _exec(k8semu, name, "hostname", "-f") == (0, name + "\n", "")
    assert _exec(k8semu, name, "hostname", "-i") == (0, ip + "\n", "")
    assert _exec(k8semu, name, "cat", "/etc/hostname") == (0, name + "\n", "")


def test_statefulset_pod_behind_headless_service_has_its_fqdn(k8semu):
    ip = _pods(k8semu)["db-0"]["status"]["podIP"]
    fqdn = "db-0.nginx.default.svc.cluster.local"
    assert _exec(k8semu, "db-0", "cat", "/etc/hosts") == (0, BOILERPLATE + f"{ip}\t{fqdn}\tdb-0\n", "")
    assert _exec(k8semu, "db-0", "hostname") == (0, "db-0\n", "")
    assert _exec(k8semu, "db-0", "hostname", "-f") == (0, fqdn + "\n", "")
    assert _exec(k8semu, "db-0", "hostname", "-d") == (0, "nginx.default.svc.cluster.local\n", "")
    assert _exec(k8semu, "db-0", "hostname", "-s") == (0, "db-0\n", "")
    assert _exec(k8semu, "db-0", "hostname", "-i") == (0, ip + "\n", "")
    assert _exec(k8semu, "db-0", "hostname", "other") == (
        1, "", "hostname: sethostname: Operation not permitted\ncommand terminated with exit code 1\n")


def test_host_aliases_follow_the_pods_line(k8semu):
    ip = _pods(k8semu)["custom"]["status"]["podIP"]
    assert _exec(k8semu, "custom", "cat", "/etc/hosts") == (
        0, BOILERPLATE + f"{ip}\tcustom\n\n# Entries added by HostAliases.\n127.0.0.1\tfoo.local\tbar.local\n"
                         "10.1.2.3\tfoo.remote\n", "")


def test_host_network_pod_gets_the_nodes_hosts_file(k8semu):
    pod = _pods(k8semu)["hostnet"]
    node, ip = pod["spec"]["nodeName"], pod["status"]["podIP"]
    assert _exec(k8semu, "hostnet", "cat", "/etc/hosts") == (
        0, "# Kubernetes-managed hosts file (host network).\n127.0.0.1\tlocalhost\n"
           f"::1\tlocalhost ip6-localhost ip6-loopback\n{ip}\t{node}\n", "")
    assert _exec(k8semu, "hostnet", "hostname") == (0, node + "\n", "")
    assert _exec(k8semu, "hostnet", "hostname", "-i") == (0, ip + "\n", "")


def test_a_volume_mounted_at_etc_hosts_replaces_the_managed_file(k8semu):
    assert _exec(k8semu, "own-hosts", "cat", "/etc/hosts") == (0, "127.0.0.1 localhost mine\n", "")
    assert _exec(k8semu, "own-hosts", "cat", "/etc/resolv.conf") == (0, CLUSTER_FIRST, "")


def test_the_hosts_file_is_the_same_in_a_later_run(cluster_file, tmp_path, monkeypatch):
    """Deterministic: a second cluster made the same way writes the same files."""
    monkeypatch.setattr("sys.stdin", io.StringIO(""))

    def files(path):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            main(["--cluster", str(path), "exec", "db-0", "--", "sh", "-c", "cat /etc/hosts /etc/resolv.conf"])
        return out.getvalue()
    again = tmp_path / "again.log"
    manifest = tmp_path / "m.yaml"
    manifest.write_text(MANIFEST)
    with contextlib.redirect_stdout(None), contextlib.redirect_stderr(None):
        assert main(["--cluster", str(again), "cluster", "create", "--nodes", "2"]) == 0
        assert main(["--cluster", str(again), "apply", "-f", str(manifest), "-q"]) == 0
    assert files(again) == files(cluster_file) != ""


# ---------------------------------------------------------------------------- head / tail, nginx

def test_head_and_tail_count_bytes_and_lines(k8semu):
    name = _web(_pods(k8semu))
    assert _exec(k8semu, name, "head", "-c", "30", "/etc/hosts") == (0, "# Kubernetes-managed hosts fil", "")
    assert _exec(k8semu, name, "head", "-c5", "/etc/hosts") == (0, "# Kub", "")
    assert _exec(k8semu, name, "head", "-n", "2", "/etc/hosts") == (
        0, "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n", "")
    assert _exec(k8semu, name, "head", "-1", "/etc/hosts") == (0, "# Kubernetes-managed hosts file.\n", "")
    assert _exec(k8semu, name, "tail", "-n", "1", "/etc/resolv.conf") == (0, "options ndots:5\n", "")
    assert _exec(k8semu, name, "tail", "-c", "6", "/etc/resolv.conf") == (0, "ots:5\n", "")
    assert _exec(k8semu, name, "tail", "-n", "+3", "/etc/resolv.conf") == (0, "options ndots:5\n", "")


def test_nginx_image_has_its_config_and_version(k8semu):
    name = _web(_pods(k8semu))
    rc, out, _ = _exec(k8semu, name, "cat", "/etc/nginx/nginx.conf")
    assert rc == 0 and "user  nginx;" in out and "include /etc/nginx/conf.d/*.conf;" in out
    assert _exec(k8semu, name, "nginx", "-v") == (0, "", "nginx version: nginx/1.25.5\n")


# ---------------------------------------------------------------------------- the pure functions

def _run(argv, files):
    run = behaviour.build_program({"name": "c", "image": "busybox", "command": ["sleep", "infinity"]},
                                  env={"HOSTNAME": "p"}, files=files).start(0.0)
    out, err = [], []
    gen = behaviour.exec_command(run, argv, out.append, err.append, "")
    try:
        while True:
            assert next(gen) != math.inf
    except StopIteration as stop:
        return stop.value, "".join(out), "".join(err)


def test_head_minus_n_drops_the_last_lines():
    assert _run(["head", "-n", "-1", "/f"], {"/f": "a\nb\nc\n"}) == (0, "a\nb\n", "")
    assert _run(["tail", "-c", "+3", "/f"], {"/f": "abcdef"}) == (0, "cdef", "")
    assert _run(["tail", "-2", "/f"], {"/f": "a\nb\nc\n"}) == (0, "b\nc\n", "")


def test_parse_resolv_conf_like_the_kubelet():
    text = "# c\nnameserver 1.1.1.1\nsearch a. b\nnameserver 8.8.8.8\nsearch c.\noptions x\noptions ndots:2 rotate\n"
    assert dns.parse_resolv_conf(text) == (["1.1.1.1", "8.8.8.8"], ["c"], ["ndots:2", "rotate"])


def _pod(**spec):
    return {"metadata": {"name": "p", "namespace": "ns"}, "spec": spec}


def test_pod_dns_config_policies_and_limits():
    node = "nameserver 9.9.9.9\nsearch corp.example\noptions rotate\n"
    assert dns.pod_dns_config(_pod(), node) == (
        ["10.96.0.10"], ["ns.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example"], ["ndots:5"])
    assert dns.pod_dns_config(_pod(dnsPolicy="Default"), node) == (["9.9.9.9"], ["corp.example"], ["rotate"])
    assert dns.pod_dns_config(_pod(hostNetwork=True), node) == (["9.9.9.9"], ["corp.example"], ["rotate"])
    many = _pod(dnsPolicy="None", dnsConfig={"nameservers": ["1.1.1.1", "2.2.2.2", "1.1.1.1", "3.3.3.3", "4.4.4.4"],
                                             "searches": [f"d{i}.example" for i in range(40)]})
    servers, searches, options = dns.pod_dns_config(many, node)
    assert servers == ["1.1.1.1", "2.2.2.2", "3.3.3.3"] and len(searches) == 32 and options == []
    assert dns.resolv_conf_text([], [], [], node) == node  # containerd copies the node's file


def test_hosts_file_hostname_truncation_and_dual_stack():
    long = "x" * 62 + "-y"
    pod = {"metadata": {"name": long, "namespace": "ns"}, "spec": {"subdomain": "s"}}
    host = "x" * 62
    fqdn = f"{host}.s.ns.svc.cluster.local"
    assert dns.hosts_file(pod, ["10.0.0.1", "fd00::1"]) == (
        BOILERPLATE + f"10.0.0.1\t{fqdn}\t{host}\nfd00::1\t{fqdn}\t{host}\n")


def test_pod_volumes_write_the_sandbox_store_once_per_sandbox():
    pod = {"metadata": {"name": "p", "namespace": "default"}, "spec": {"containers": [{"name": "c"}]}}
    host = HostFiles("node-1", "m")
    vols = PodVolumes(pod, host)
    ctx = DownwardContext(["10.244.1.7"], ["172.18.0.3"], {}, "node-1")
    vols.refresh(pod, None, ctx)
    store = vols.stores[SANDBOX_STORE]
    store["/etc/resolv.conf"] += "# written by a container\n"
    store["/etc/hosts"] += "1.2.3.4 extra\n"
    vols.refresh(pod, None, ctx)  # the next container start: hosts rewritten, resolv.conf kept
    assert store["/etc/hosts"].endswith("10.244.1.7\tp\n") and store["/etc/resolv.conf"].endswith("container\n")
    assert host.files["/etc/hosts"].endswith("172.18.0.3\tnode-1\n")
    mounts = container_mounts(pod, pod["spec"]["containers"][0], vols.stores, host)
    assert [m.path for m in mounts] == ["/etc/hosts", "/etc/resolv.conf", "/etc/hostname"]
