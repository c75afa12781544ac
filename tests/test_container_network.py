"""wget, curl and nslookup inside an exec'd container reach the emulated cluster: cluster DNS through
the pod's resolv.conf, Services through kube-proxy's table, pods by IP (``k8semu exec`` on the lab).
So do a container's own processes (a client polling a Service, an exec probe), whose ``logs`` show
what they got then, even after the cluster has changed."""

from __future__ import annotations

WELCOME = "<title>Welcome to nginx!</title>"


def _cluster_ip(k) -> str:
    return next(s for s in k.objects("services") if s["metadata"]["name"] == "web")["spec"]["clusterIP"]


def test_wget_reaches_the_service_by_its_short_name(k):
    rc, out, err = k("exec", "deploy/web", "--", "wget", "-qO-", "web")
    assert rc == 0 and err == []
    assert out[0] == "<!DOCTYPE html>" and WELCOME in out and out[-1] == "</html>"


def test_wget_without_q_says_where_it_connects_and_shows_progress(k):
    ip = _cluster_ip(k)
    rc, out, err = k("exec", "deploy/web", "--", "wget", "-O-", "web")
    assert rc == 0 and WELCOME in out
    assert err[:2] == [f"Connecting to web ({ip}:80)", "writing to stdout"]
    # the progress line starts with a carriage return (splitlines makes that an empty line)
    assert err[2:] == ["", "-                    100% |********************************|   615  0:00:00 ETA",
                       "written to stdout"]


def test_curl_reaches_the_service_by_its_full_name(k):
    rc, out, err = k("exec", "deploy/web", "--", "curl", "-s", "web.default.svc.cluster.local")
    assert rc == 0 and err == [] and WELCOME in out


def test_an_unknown_name_does_not_resolve(k):
    assert k("exec", "deploy/web", "--", "wget", "-qO-", "nope") == (
        1, [], ["wget: bad address 'nope'", "command terminated with exit code 1"])
    assert k("exec", "deploy/web", "--", "curl", "-sS", "nope.default") == (
        6, [], ["curl: (6) Could not resolve host: nope.default", "command terminated with exit code 6"])


def test_http_errors(k):
    assert k("exec", "deploy/web", "--", "curl", "-sf", "web/missing") == (
        22, [], ["command terminated with exit code 22"])
    assert k("exec", "deploy/web", "--", "curl", "-sSf", "web/missing")[2][0] == (
        "curl: (22) The requested URL returned error: 404")
    rc, out, err = k("exec", "deploy/web", "--", "wget", "-q", "-O", "/dev/null", "web/missing")
    assert (rc, out) == (1, []) and err[0] == "wget: server returned error: HTTP/1.1 404 Not Found"
    rc, out, _ = k("exec", "deploy/web", "--", "curl", "-s", "web/missing")  # without -f: the 404 page
    assert rc == 0 and "<head><title>404 Not Found</title></head>" in out


def test_nslookup_answers_from_cluster_dns(k):
    ip = _cluster_ip(k)
    rc, out, _ = k("exec", "deploy/web", "--", "nslookup", "web.default.svc.cluster.local")
    assert rc == 0
    assert out == ["Server:\t\t10.96.0.10", "Address:\t10.96.0.10:53", "",
                   "Name:\tweb.default.svc.cluster.local", f"Address: {ip}", "",
                   "*** Can't find web.default.svc.cluster.local: No answer", ""]
    # a short name: one query per search domain, as busybox sends them; the misses make it exit 1
    rc, out, _ = k("exec", "deploy/web", "--", "nslookup", "web")
    assert rc == 1
    assert out[3:6] == ["Name:\tweb.default.svc.cluster.local", f"Address: {ip}", ""]
    assert "** server can't find web.svc.cluster.local: NXDOMAIN" in out
    rc, out, _ = k("exec", "deploy/web", "--", "nslookup", "nope.default.svc.cluster.local")
    assert rc == 1 and out[3] == "** server can't find nope.default.svc.cluster.local: NXDOMAIN"


def test_a_pod_by_its_ip_and_a_closed_port(k):
    pods = sorted(k.pods(), key=lambda p: p["metadata"]["name"])
    other = pods[1]["status"]["podIP"]
    rc, out, err = k("exec", f"pod/{pods[0]['metadata']['name']}", "--", "wget", "-qO-", other)
    assert rc == 0 and WELCOME in out
    rc, out, err = k("exec", "deploy/web", "--", "wget", "-qO-", f"{other}:8080")
    assert (rc, out) == (1, []) and err[0] == f"wget: can't connect to remote host ({other}): Connection refused"
    rc, out, err = k("exec", "deploy/web", "--", "curl", "-sS", f"http://{other}:8080/")
    assert rc == 7 and err[0] == (f"curl: (7) Failed to connect to {other} port 8080 after 0 ms: "
                                  "Couldn't connect to server")


def test_an_address_nobody_answers_times_out_in_virtual_time(k):
    assert k("exec", "deploy/web", "--", "wget", "-T", "3", "-qO-", "10.9.9.9") == (
        1, [], ["wget: download timed out", "command terminated with exit code 1"])
    assert k("exec", "deploy/web", "--", "curl", "-sS", "--max-time", "2", "10.9.9.9") == (
        28, [], ["curl: (28) Connection timed out after 2000 milliseconds", "command terminated with exit code 28"])


def test_curl_head_and_output_file(k):
    rc, out, _ = k("exec", "deploy/web", "--", "curl", "-sI", "web")
    assert rc == 0 and out[0] == "HTTP/1.1 200 OK" and "Content-Length: 615" in out
    rc, out, err = k("exec", "deploy/web", "--", "sh", "-c", "curl -s -o /tmp/page web && grep -c nginx /tmp/page")
    assert (rc, out, err) == (0, ["6"], [])


def test_a_headless_service_resolves_to_its_ready_pods(k, tmp_path):
    manifest = tmp_path / "headless.yaml"
    manifest.write_text("apiVersion: v1\nkind: Service\nmetadata:\n  name: peers\nspec:\n  clusterIP: None\n"
                        "  selector:\n    app: web\n  ports:\n  - port: 80\n")
    assert k("apply", "-f", str(manifest), "-q")[0] == 0
    ips = sorted((p["status"]["podIP"] for p in k.pods()), key=lambda ip: tuple(map(int, ip.split("."))))
    rc, out, _ = k("exec", "deploy/web", "--", "nslookup", "peers.default.svc.cluster.local")
    assert rc == 0
    assert out[3:8] == ["Name:\tpeers.default.svc.cluster.local", f"Address: {ips[0]}",
                        "Name:\tpeers.default.svc.cluster.local", f"Address: {ips[1]}", ""]
    rc, out, _ = k("exec", "deploy/web", "--", "wget", "-qO-", "peers")
    assert rc == 0 and WELCOME in out


POLLER = """apiVersion: v1
kind: Pod
metadata: {name: poller}
spec:
  containers:
  - name: c
    image: busybox
    command: ["sh", "-c", "while true; do wget -qO- -T 2 web | grep -c title || echo down; sleep 10; done"]
"""


def test_a_containers_own_processes_reach_the_service_and_logs_replay_what_they_saw(k, tmp_path):
    """A client polling the Service prints what each poll got; once the Service's pods are gone it
    prints ``down``; ``logs`` (a replay of its run) still shows the earlier answers, read from the
    cluster as it was at each poll."""
    manifest = tmp_path / "poller.yaml"
    manifest.write_text(POLLER)
    assert k("apply", "-f", str(manifest), "--for", "30s", "-q")[0] == 0
    rc, out, _ = k("logs", "poller")
    assert rc == 0 and out[:3] == ["1", "1", "1"]  # the page's <title> line, every 10 s
    assert k("scale", "deployment/web", "--replicas=0")[0] == 0
    assert k("advance", "40s")[0] == 0
    rc, out, _ = k("logs", "poller")
    # then kube-proxy rejects connections to the Service without endpoints: wget's error (its
    # stderr is the container's, so in the log), grep's count, the loop's word
    assert out[:3] == ["1", "1", "1"]
    ip = _cluster_ip(k)
    assert out[-3:] == [f"wget: can't connect to remote host ({ip}): Connection refused", "0", "down"]


PROBED = """apiVersion: v1
kind: Pod
metadata: {name: probed}
spec:
  containers:
  - name: c
    image: busybox
    command: ["sleep", "3600"]
    readinessProbe:
      exec: {command: ["wget", "-q", "-O", "/dev/null", "-T", "1", "http://web"]}
      periodSeconds: 5
"""


def test_an_exec_probe_reaches_the_cluster_network(k, tmp_path):
    manifest = tmp_path / "probed.yaml"
    manifest.write_text(PROBED)
    assert k("apply", "-f", str(manifest), "--for", "20s", "-q")[0] == 0
    assert k("get", "pod", "probed", "-o", "jsonpath={.status.containerStatuses[0].ready}")[1] == ["true"]
    assert k("scale", "deployment/web", "--replicas=0")[0] == 0
    assert k("advance", "30s")[0] == 0
    assert k("get", "pod", "probed", "-o", "jsonpath={.status.containerStatuses[0].ready}")[1] == ["false"]


def test_logs_replay_after_the_history_was_compacted():
    """A replay's network calls before the oldest retained revision read the oldest state there
    is (``serve`` compacts every 5 minutes): ``logs`` still works — a regression test for a
    ``Compacted`` error that broke ``logs`` and ``exec`` of such pods under ``serve``."""
    from k8semu.api.meta import parse_time
    from k8semu.cli.commands.logs import container_log_lines
    from k8semu.sim.cluster import Cluster
    from k8semu.sim.components import default_factories
    from k8semu.sim.config import ClusterConfig
    from k8semu.sim.runtime import run_cluster

    c = Cluster.create(seed=2, config=ClusterConfig.default(workers=1))
    api = c.api
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "looper", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "busybox", "command": [
               "sh", "-c", "while true; do nslookup kubernetes.default.svc.cluster.local >/dev/null && echo OK; "
                           "sleep 5; done"]}]}}

    async def body(rt):
        api.create("pods", pod)
        await rt.advance(30)
        api.log.compact(api.log.revision)
        await rt.advance(12)

    run_cluster(c, body, default_factories(c))
    p = api.get("pods", "looper", namespace="default")
    started = parse_time(api.epoch, p["status"]["containerStatuses"][0]["state"]["running"]["startedAt"])
    lines = [text for _, text in container_log_lines(p, p["spec"]["containers"][0], started, api.now,
                                                      api.epoch, api)]
    assert lines and set(lines) == {"OK"} and len(lines) >= 8
