"""What a user sees of emulated containers: the images' start-up logs (``k8semu logs``), the
output of exec probes in ``Unhealthy`` events, ``postStart`` hooks writing into the container,
the images' file systems (``k8semu exec … ls``), the image sizes of ``Pulled`` events, and the
processes' environment (``exec … env``: the image's ``Env``, ``HOME``) and ``ps``."""

from __future__ import annotations

import contextlib
import re
import shutil
from datetime import datetime
from pathlib import Path

import pytest
from conftest import Kubectl

from k8semu.cli.main import main
from k8semu.node import behaviour
from k8semu.node.behaviour import LogLine, Mount, build_program, http_answer, image_pull_result

WEBSITE = Path(__file__).resolve().parents[2] / "shared" / "cases" / "website"
needs_website = pytest.mark.skipif(not WEBSITE.is_dir(), reason="shared/cases/website not available")

PODS = """\
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers: [{name: nginx, image: "nginx:1.30-alpine", ports: [{containerPort: 80}]}]
---
apiVersion: v1
kind: Pod
metadata: {name: cache}
spec:
  containers: [{name: redis, image: "redis:7.2"}]
---
apiVersion: v1
kind: Pod
metadata: {name: frontend}
spec:
  containers: [{name: php-redis, image: "us-docker.pkg.dev/google-samples/containers/gke/gb-frontend:v5"}]
---
apiVersion: v1
kind: Pod
metadata: {name: box}
spec:
  containers: [{name: main, image: "busybox:1.37", command: [sleep, "3600"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: nobody}
spec:
  securityContext: {runAsUser: 65534}
  containers: [{name: main, image: "busybox:1.37", command: [sleep, "3600"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: hook-fails}
spec:
  containers:
  - name: app
    image: "busybox:1.37"
    command: [sleep, "3600"]
    lifecycle:
      postStart:
        exec: {command: [sh, -c, "echo boom; exit 3"]}
"""


@pytest.fixture(scope="module")
def cluster_file(tmp_path_factory):
    """One node with PODS (and, when available, the website's lifecycle and exec-liveness pods)
    applied and 60 s of virtual time run."""
    path = tmp_path_factory.mktemp("fidelity") / "cluster.log"
    manifest = path.parent / "pods.yaml"
    manifest.write_text(PODS)
    with contextlib.redirect_stdout(None), contextlib.redirect_stderr(None):
        assert main(["--cluster", str(path), "cluster", "create", "--nodes", "1", "--bare"]) == 0
        files = ["-f", str(manifest)]
        if WEBSITE.is_dir():
            files += ["-f", str(WEBSITE / "pods" / "lifecycle-events.yaml"),
                      "-f", str(WEBSITE / "pods" / "probe" / "exec-liveness.yaml")]
        assert main(["--cluster", str(path), "apply", *files, "--for", "60s", "-q"]) == 0
    return path


@pytest.fixture
def k(cluster_file, tmp_path, capsys):
    path = tmp_path / "cluster.log"
    shutil.copy(cluster_file, path)
    return Kubectl(path, capsys)


def _started(k: Kubectl, pod: str) -> datetime:
    p = next(p for p in k.objects("pods") if p["metadata"]["name"] == pod)
    stamp = p["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _first(e: dict) -> str:
    """When an Event was first seen, in seconds: ``firstTimestamp``, or the scheduler's (events.k8s.io,
    no firstTimestamp) ``eventTime``."""
    return e.get("firstTimestamp") or e["eventTime"][:19] + "Z"


def _events(k: Kubectl, pod: str) -> list[tuple[str, str]]:
    evs = [e for e in k.objects("events") if e["involvedObject"]["name"] == pod]
    evs.sort(key=lambda e: (_first(e), int(e["metadata"]["resourceVersion"])))
    return [(e["reason"], e["message"]) for e in evs]


# --------------------------------------------------------------------------- 1. start-up logs


def test_nginx_logs_its_entrypoint_and_startup_notices(k):
    when = f"{_started(k, 'web'):%Y/%m/%d %H:%M:%S}"
    rc, out, err = k("logs", "web")
    assert (rc, err) == (0, [])
    assert out == [
        "/docker-entrypoint.sh: /docker-entrypoint.d/ is not empty, will attempt to perform configuration",
        "/docker-entrypoint.sh: Looking for shell scripts in /docker-entrypoint.d/",
        "/docker-entrypoint.sh: Launching /docker-entrypoint.d/10-listen-on-ipv6-by-default.sh",
        "10-listen-on-ipv6-by-default.sh: info: Getting the checksum of /etc/nginx/conf.d/default.conf",
        "10-listen-on-ipv6-by-default.sh: info: Enabled listen on IPv6 in /etc/nginx/conf.d/default.conf",
        "/docker-entrypoint.sh: Sourcing /docker-entrypoint.d/15-local-resolvers.envsh",
        "/docker-entrypoint.sh: Launching /docker-entrypoint.d/20-envsubst-on-templates.sh",
        "/docker-entrypoint.sh: Launching /docker-entrypoint.d/30-tune-worker-processes.sh",
        "/docker-entrypoint.sh: Configuration complete; ready for start up",
        f'{when} [notice] 1#1: using the "epoll" event method',
        f"{when} [notice] 1#1: nginx/1.30.0",
        f"{when} [notice] 1#1: built by gcc 14.2.0 (Alpine 14.2.0) ",
        f"{when} [notice] 1#1: OS: Linux 6.8.0-1021-azure",
        f"{when} [notice] 1#1: getrlimit(RLIMIT_NOFILE): 1048576:1048576",
        f"{when} [notice] 1#1: start worker processes",
        f"{when} [notice] 1#1: start worker process 30",
        f"{when} [notice] 1#1: start worker process 31",
    ]


def test_redis_logs_its_banner_and_is_ready(k):
    t = _started(k, "cache")
    when = f"{t:%d %b %Y %H:%M:%S}.{t.microsecond // 1000:03d}"
    assert k("logs", "cache") == (0, [
        f"1:C {when} * oO0OoO0OoO0Oo Redis is starting oO0OoO0OoO0Oo",
        f"1:C {when} * Redis version=7.2.11, bits=64, commit=00000000, modified=0, pid=1, just started",
        f"1:C {when} # Warning: no config file specified, using the default config. In order to specify a config "
        "file use redis-server /path/to/redis.conf",
        f"1:M {when} * monotonic clock: POSIX clock_gettime",
        f"1:M {when} * Running mode=standalone, port=6379.",
        f"1:M {when} * Server initialized",
        f"1:M {when} * Ready to accept connections tcp",
    ], [])


def test_the_guestbook_frontend_logs_apaches_notices(k):
    rc, out, _ = k("logs", "frontend")
    # /etc/hosts names the pod by its IP only, as on a real cluster: apache says so twice
    fqdn = re.compile(r"AH00558: apache2: Could not reliably determine the server's fully qualified domain name, "
                      r"using 10\.244\.\d+\.\d+\. Set the 'ServerName' directive globally to suppress this message")
    assert rc == 0 and out[0] == out[1] and fqdn.fullmatch(out[0])
    out = out[2:]
    assert [re.sub(r"^\[[^]]+\] ", "", line) for line in out] == [
        "[mpm_prefork:notice] [pid 1] AH00163: Apache/2.4.25 (Debian) PHP/5.6.40 configured -- resuming normal "
        "operations",
        "[core:notice] [pid 1] AH00094: Command line: 'apache2 -D FOREGROUND'",
    ]
    t = _started(k, "frontend")
    assert out[0].startswith(f"[{t:%a %b %d %H:%M:%S}.000000 {t.year}] ")


def test_old_nginx_images_log_nothing_at_start_and_redis_8_loads_its_modules():
    def lines(image: str) -> list[str]:
        run = build_program({"name": "c", "image": image}).start(0.0)
        return [e.text for e in run.advance(1.0) if isinstance(e, LogLine)]

    assert lines("nginx:1.16.1") == []  # before 1.19: no docker-entrypoint.d, error_log at "warn"
    out = lines("redis")
    assert out[0] == "Starting Redis Server" and out[-1].endswith(" * Ready to accept connections tcp")
    assert "Redis version=8.4.0, bits=64, commit=00000000, modified=1, pid=1, just started" in out[2]
    assert sum("* Module '" in line for line in out) == 4
    nginx_debian = lines("nginx")
    assert any(line.endswith("built by gcc 14.2.0 (Debian 14.2.0-19) ") for line in nginx_debian)
    assert nginx_debian[-1].endswith("start worker process 30")  # Debian: 29, 30


def test_nginx_entrypoint_reports_a_configmap_default_conf_and_renders_templates():
    conf = Mount("/etc/nginx/conf.d", {"/default.conf": "server { listen 8080; }\n"})
    templates = Mount("/etc/nginx/templates", {"/app.conf.template": "proxy_pass http://${BACKEND}:$PORT/; $KEEP\n"})
    container = {"name": "c", "image": "nginx:1.29", "env": [{"name": "BACKEND", "value": "api"},
                                                            {"name": "PORT", "value": "8080"}]}
    run = build_program(container, mounts=[conf]).start(0.0)
    out = [e.text for e in run.advance(1.0) if isinstance(e, LogLine)]
    assert ("10-listen-on-ipv6-by-default.sh: info: can not modify /etc/nginx/conf.d/default.conf "
            "(read-only file system?)") in out
    run = build_program(container, mounts=[templates]).start(0.0)
    out = [e.text for e in run.advance(1.0) if isinstance(e, LogLine)]
    assert ("20-envsubst-on-templates.sh: Running envsubst on /etc/nginx/templates/app.conf.template to "
            "/etc/nginx/conf.d/app.conf") in out
    assert run.fs["/etc/nginx/conf.d/app.conf"] == "proxy_pass http://api:8080/; $KEEP\n"
    quiet = dict(container, env=[{"name": "NGINX_ENTRYPOINT_QUIET_LOGS", "value": "1"}])
    out = [e.text for e in build_program(quiet).start(0.0).advance(1.0) if isinstance(e, LogLine)]
    assert not any(line.startswith("/docker-entrypoint.sh") for line in out) and "nginx/1.29.8" in out[1]


def test_nginx_logs_each_request_it_serves_and_serves_its_html_files():
    run = build_program({"name": "c", "image": "nginx:1.30-alpine"}).start(0.0)
    run.advance(5.0)
    ok = http_answer(run, 80, 5.0, user_agent="curl/8.11.1")
    assert (ok.status, len(ok.body)) == (200, 615)
    effects = run.advance(6.0)
    missing = http_answer(run, 80, 6.0, target="/missing.html", host="localhost:8080")
    assert missing.status == 404
    error = http_answer(run, 80, 6.0, target="/50x.html", method="HEAD")
    assert (error.status, dict(error.headers)["Content-Length"]) == (200, "497")
    logs = [(e.t, e.stream, e.text) for e in effects + run.advance(7.0) if isinstance(e, LogLine)]
    assert logs == [
        (5.0, "stdout", '127.0.0.1 - - [01/Jan/2025:00:00:05 +0000] "GET / HTTP/1.1" 200 615 "-" "curl/8.11.1" "-"'),
        (6.0, "stderr", '2025/01/01 00:00:06 [error] 30#30: *2 open() "/usr/share/nginx/html/missing.html" failed '
                        '(2: No such file or directory), client: 127.0.0.1, server: localhost, '
                        'request: "GET /missing.html HTTP/1.1", host: "localhost:8080"'),
        (6.0, "stdout", '127.0.0.1 - - [01/Jan/2025:00:00:06 +0000] "GET /missing.html HTTP/1.1" 404 153 "-" "-" "-"'),
        (6.0, "stdout", '127.0.0.1 - - [01/Jan/2025:00:00:06 +0000] "HEAD /50x.html HTTP/1.1" 200 0 "-" "-" "-"'),
    ]
    # what the container put into its html root is what it serves; an empty root is forbidden
    html = Mount("/usr/share/nginx/html", {"/index.html": "<h1>hi</h1>\n"})
    run = build_program({"name": "c", "image": "nginx:1.30-alpine"}, mounts=[html]).start(0.0)
    run.advance(1.0)
    assert http_answer(run, 80, 1.0).body == b"<h1>hi</h1>\n"
    run = build_program({"name": "c", "image": "nginx:1.30-alpine"}, mounts=[Mount("/usr/share/nginx/html", {})])
    run = run.start(0.0)
    run.advance(1.0)
    assert http_answer(run, 80, 1.0).status == 403


# --------------------------------------------------------------------------- 2. exec probe output


@needs_website
def test_exec_liveness_failure_event_carries_the_commands_output(k):
    msgs = _events(k, "liveness-exec")
    unhealthy = [m for reason, m in msgs if reason == "Unhealthy"]
    assert unhealthy and set(unhealthy) == {
        "Liveness probe failed: cat: can't open '/tmp/healthy': No such file or directory\n"}
    rc, out, _ = k("describe", "pod", "liveness-exec")
    assert any(line.rstrip().endswith("Liveness probe failed: cat: can't open '/tmp/healthy': No such file or "
                                      "directory") for line in out)


def test_exec_probe_output_is_stdout_then_stderr_capped_at_10_kib():
    run = build_program({"name": "c", "image": "busybox", "command": ["sleep", "3600"]}).start(0.0)
    run.advance(1.0)
    spec = {"exec": {"command": ["sh", "-c", "echo to-stderr >&2; echo to-stdout; exit 1"]}}
    assert run.probe("readiness", spec, 1.0) is False
    assert run.probe_output == "to-stdout\nto-stderr\n"
    big = {"exec": {"command": ["sh", "-c", "i=0; while [ $i -lt 3000 ]; do echo xxxxxxx; i=$((i+1)); done; exit 1"]}}
    assert run.probe("liveness", big, 1.0) is False and len(run.probe_output) == 10 * 1024


# --------------------------------------------------------------------------- 3. postStart hooks


@needs_website
def test_post_start_hook_writes_into_the_containers_file_system(k):
    assert k("exec", "lifecycle-demo", "--", "cat", "/usr/share/message") == \
        (0, ["Hello from the postStart handler"], [])
    assert ("Started", "Started container lifecycle-demo-container") in _events(k, "lifecycle-demo")
    assert not any(reason == "FailedPostStartHook" for reason, _ in _events(k, "lifecycle-demo"))


def test_a_failing_post_start_hook_kills_the_container(k):
    msgs = _events(k, "hook-fails")
    i = msgs.index(("Started", "Started container app"))
    assert msgs[i + 1:i + 3] == [("FailedPostStartHook", "PostStartHook failed"), ("Killing", "FailedPostStartHook")]
    pod = next(p for p in k.objects("pods") if p["metadata"]["name"] == "hook-fails")
    assert pod["status"]["containerStatuses"][0]["restartCount"] >= 1


def test_post_start_hook_output_stays_out_of_the_container_log():
    container = {"name": "c", "image": "busybox", "command": ["sh", "-c", "echo main; sleep 3600"],
                 "lifecycle": {"postStart": {"exec": {"command": ["sh", "-c", "echo hook; sleep 2; touch /ready"]}}}}
    run = build_program(container).start(0.0)
    assert [e.text for e in run.advance(1.0) if isinstance(e, LogLine)] == ["main"]
    assert run.post_start_result is None and run.next_event_time() == 2.0
    run.advance(2.0)
    assert run.post_start_result == (0, "hook\n", 2.0) and "/ready" in run.fs


# --------------------------------------------------------------------------- 4. file systems


def test_images_have_their_file_trees(k):
    assert k("exec", "web", "--", "ls", "/usr/share/nginx/html") == (0, ["50x.html", "index.html"], [])
    assert k("exec", "web", "--", "sh", "-c", "wc -c < /usr/share/nginx/html/index.html") == (0, ["615"], [])
    assert k("exec", "web", "--", "ls", "/") == (0, [
        "bin", "dev", "docker-entrypoint.d", "docker-entrypoint.sh", "etc", "home", "lib", "media", "mnt", "opt",
        "proc", "root", "run", "sbin", "srv", "sys", "tmp", "usr", "var"], [])
    assert k("exec", "box", "--", "ls", "/") == (0, [
        "bin", "dev", "etc", "home", "lib", "lib64", "proc", "root", "sys", "tmp", "usr", "var"], [])
    assert k("exec", "web", "--", "grep", "^ID=", "/etc/os-release") == (0, ["ID=alpine"], [])


def test_containers_share_the_image_tree_and_write_into_their_own_layer():
    a = build_program({"name": "a", "image": "nginx:1.30-alpine"}).start(0.0)
    b = build_program({"name": "b", "image": "nginx:1.30-alpine"}).start(0.0)
    assert a.tree is b.tree  # one base tree per image, not a copy per container
    out: list[str] = []

    def run(r, *argv):
        gen = behaviour.exec_command(r, list(argv), out.append, out.append)
        with contextlib.suppress(StopIteration):
            while True:
                next(gen)

    run(a, "rm", "/usr/share/nginx/html/index.html")
    run(a, "sh", "-c", "echo mine > /usr/share/nginx/html/50x.html")
    run(a, "rm", "-r", "/etc/nginx")
    assert "/usr/share/nginx/html/index.html" not in a.fs and a.fs["/usr/share/nginx/html/50x.html"] == "mine\n"
    assert not a.is_dir("/etc/nginx") and not a.is_dir("/etc/nginx/conf.d")
    assert len(b.fs["/usr/share/nginx/html/index.html"]) == 615 and b.is_dir("/etc/nginx/conf.d")
    assert len(b.fs["/usr/share/nginx/html/50x.html"]) == 497
    assert a.fs.own.keys() == {"/etc/hosts", "/usr/share/nginx/html/50x.html"}  # the layer: only the writes
    out.clear()
    run(a, "rm", "/etc")
    assert out == ["rm: can't remove '/etc': Is a directory\n"]


def test_the_shell_expands_globs_over_the_containers_files():
    run = build_program({"name": "c", "image": "nginx:1.30-alpine"}).start(0.0)
    out: list[str] = []

    def sh(script: str) -> str:
        out.clear()
        gen = behaviour.exec_command(run, ["sh", "-c", script], out.append, out.append)
        with contextlib.suppress(StopIteration):
            while True:
                next(gen)
        return "".join(out)

    assert sh("echo /etc/*release") == "/etc/alpine-release /etc/os-release\n"
    assert sh("cd /usr/share/nginx && echo html/*.html '*' nothing*") == "html/50x.html html/index.html * nothing*\n"
    assert sh("rm -rf /usr/share/nginx/html/*; ls /usr/share/nginx/html; echo end") == "end\n"


def test_polinux_stress_says_what_it_dispatches():
    container = {"name": "c", "image": "polinux/stress", "command": ["stress"],
                 "args": ["--vm", "1", "--vm-bytes", "150M", "--timeout", "10s"]}
    run = build_program(container).start(0.0)
    logs = [(e.t, e.text) for e in run.advance(20.0) if isinstance(e, LogLine)]
    assert logs == [(0.0, "stress: info: [1] dispatching hogs: 0 cpu, 0 io, 1 vm, 0 hdd"),
                    (10.0, "stress: info: [1] successful run completed in 10s")]
    assert run.exited is not None and run.exited.t == 10.0


# --------------------------------------------------------------------------- 5. image sizes


def test_pulled_events_report_containerds_compressed_image_sizes(k):
    pulled = [m for reason, m in _events(k, "box") if reason == "Pulled"]
    size = int(re.search(r"Image size: (\d+) bytes\.$", pulled[0]).group(1))
    assert 2_000_000 < size < 2_500_000  # busybox:1.37 is ~2.2 MB compressed (docker shows 4.3 MB unpacked)
    pulled = [m for reason, m in _events(k, "web") if reason == "Pulled"]
    size = int(re.search(r"Image size: (\d+) bytes\.$", pulled[0]).group(1))
    assert 19_000_000 < size < 24_000_000


def test_image_sizes_are_realistic_and_deterministic():
    def size(image: str) -> int:
        return image_pull_result(image).size

    assert size("busybox") == 2_236_931
    assert 700_000 < size("busybox:1.28") < 800_000
    assert 60_000_000 < size("nginx") < 66_000_000
    assert size("registry.k8s.io/pause:3.10") == 320_368
    assert 3_500_000 < size("alpine:3.22") < 3_800_000
    assert 150_000_000 < size("mysql:8.0") < 180_000_000
    unknown = [size(f"registry.example.org/team/app{i}:1.0") for i in range(200)]
    assert all(8_000_000 <= s <= 160_000_000 for s in unknown)
    assert all(3_000_000 <= size(f"app{i}:1.0-alpine") <= 30_000_000 for i in range(50))
    assert size("registry.example.org/team/app7:1.0") == unknown[7]


# --------------------------------------------------------------------------- 6. environment and processes

KUBERNETES_VARS = ["KUBERNETES_SERVICE_HOST=10.96.0.1", "KUBERNETES_SERVICE_PORT=443",
                   "KUBERNETES_SERVICE_PORT_HTTPS=443", "KUBERNETES_PORT=tcp://10.96.0.1:443",
                   "KUBERNETES_PORT_443_TCP=tcp://10.96.0.1:443", "KUBERNETES_PORT_443_TCP_PROTO=tcp",
                   "KUBERNETES_PORT_443_TCP_PORT=443", "KUBERNETES_PORT_443_TCP_ADDR=10.96.0.1"]


def _exec(run, argv, env=None) -> tuple[int, str]:
    out: list[str] = []
    gen = behaviour.exec_command(run, list(argv), out.append, out.append, env=env)
    try:
        while True:
            next(gen)
    except StopIteration as stop:
        return int(stop.value or 0), "".join(out)


def test_exec_env_shows_the_images_env_then_the_kubelets_variables_then_home(k):
    # containerd: its default PATH (replaced by the image's), HOSTNAME, the image config's Env, the
    # container's variables; runc appends HOME (root's home in the image's /etc/passwd)
    assert k("exec", "web", "--", "env") == (0, [
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME=web",
        "NGINX_VERSION=1.30.0", "PKG_RELEASE=1", "DYNPKG_RELEASE=1", "NJS_VERSION=0.9.6", "NJS_RELEASE=1",
        "ACME_VERSION=0.3.1", *KUBERNETES_VARS, "HOME=/root"], [])
    assert k("exec", "cache", "--", "env")[1][:3] == [
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME=cache", "REDIS_VERSION=7.2.11"]
    assert k("exec", "box", "--", "printenv", "PATH", "HOME") == (
        0, ["/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "/root"], [])
    assert k("exec", "nobody", "--", "sh", "-c", 'echo "$HOME"; cd; pwd') == (0, ["/home", "/home"], [])


def test_the_containers_variables_win_over_the_images_and_only_they_expand_in_args():
    container = {"name": "web", "image": "nginx:1.27", "tty": True,
                 "command": ["echo", "$(NGINX_VERSION)", "$(NJS_VERSION)", "$(HOME)"],
                 "env": [{"name": "NGINX_VERSION", "value": "mine"}, {"name": "PATH", "value": "/opt/bin:/usr/bin"}]}
    run = build_program(container).start(0.0)
    assert [e.text for e in run.advance(1.0) if isinstance(e, LogLine)] == ["mine $(NJS_VERSION) $(HOME)"]
    status, out = _exec(run, ["env"], env={"TERM": "xterm"})
    # PATH keeps its place with the container's value; a variable the container sets moves to its own
    # place; tty: true puts TERM after PATH; the exec's TERM replaces it there and HOME comes last
    assert (status, out.splitlines()) == (0, [
        "PATH=/opt/bin:/usr/bin", "TERM=xterm", "NJS_VERSION=0.8.10", "NJS_RELEASE=1~bookworm",
        "PKG_RELEASE=1~bookworm", "DYNPKG_RELEASE=1~bookworm", "NGINX_VERSION=mine", "HOME=/root"])
    assert _exec(build_program({"name": "m", "image": "mongo:8.2", "command": ["sleep", "9"]}).start(0.0),
                 ["printenv", "HOME", "MONGO_VERSION"]) == (0, "/data/db\n8.2.11\n")  # the image sets HOME


def test_well_known_images_env_and_homes():
    env = behaviour.image_env
    assert dict(env("nginx:1.14.2")) == {"PATH": behaviour.DEFAULT_PATH, "NGINX_VERSION": "1.14.2-1~stretch",
                                         "NJS_VERSION": "1.14.2.0.2.6-1~stretch"}
    assert list(env("nginx:1.25")) == ["PATH", "NGINX_VERSION", "NJS_VERSION", "NJS_RELEASE", "PKG_RELEASE"]
    assert env("nginx:1.21.6")["PKG_RELEASE"] == "1~bullseye" and env("nginx")["PKG_RELEASE"] == "1~trixie"
    assert dict(env("httpd:2.4")) == {
        "PATH": "/usr/local/apache2/bin:" + behaviour.DEFAULT_PATH, "HTTPD_PREFIX": "/usr/local/apache2",
        "HTTPD_VERSION": "2.4.65",
        "HTTPD_SHA256": "58b8be97d9940ec17f7656c0c6b9f41b618aac468b894b534148e3296c53b8b3", "HTTPD_PATCHES": ""}
    assert list(env("python:3.12-slim")) == ["PATH", "LANG", "GPG_KEY", "PYTHON_VERSION", "PYTHON_SHA256"]
    assert env("python:3.13")["PYTHON_VERSION"] == "3.13.15" and "LANG" not in env("python:3.13")
    assert env("python")["PATH"] == "/usr/local/bin:" + behaviour.DEFAULT_PATH and "GPG_KEY" not in env("python")
    assert env("postgres:17")["PATH"].endswith(":/usr/lib/postgresql/17/bin")
    assert env("postgres")["PGDATA"] == "/var/lib/postgresql/18/docker"
    assert dict(env("alpine:3.22")) == dict(env("debian:12")) == dict(env("registry.example.org/app:1")) == {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
    home = behaviour.runtime_home
    assert (home("busybox"), home("busybox", 65534), home("alpine", 65534), home("debian", 65534)) == (
        "/root", "/home", "/", "/nonexistent")
    assert (home("nginx:1.30-alpine", 101), home("nginx", 101), home("busybox", 1000), home("pause")) == (
        "/var/cache/nginx", "/nonexistent", "/", "/")


def test_containers_of_an_image_share_its_env():
    a = build_program({"name": "a", "image": "nginx:1.30-alpine"}).env
    b = build_program({"name": "b", "image": "nginx:1.30-alpine", "env": [{"name": "X", "value": "1"}]}).env
    assert a.image is b.image  # one read-only mapping per image, not a copy per container
    assert a["NGINX_VERSION"] == b["NGINX_VERSION"] == "1.30.0" and b["X"] == "1" and "X" not in a


def test_busybox_ps_lists_pid_1_and_itself(k):
    assert k("exec", "box", "--", "ps") == (0, [
        "PID   USER     TIME  COMMAND", "    1 root      0:00 sleep 3600", "    7 root      0:00 ps"], [])
    assert k("exec", "web", "--", "ps", "aux") == (0, [
        "PID   USER     TIME  COMMAND", "    1 root      0:00 nginx: master process nginx -g daemon off;",
        "   30 nginx     0:00 nginx: worker process", "   31 nginx     0:00 nginx: worker process",
        "   32 root      0:00 ps aux"], [])
    assert k("exec", "nobody", "--", "ps")[1][1:] == ["    1 nobody    0:00 sleep 3600", "    7 nobody    0:00 ps"]
    redis = build_program({"name": "r", "image": "redis:7.2-alpine"}).start(0.0)
    redis.advance(1.0)
    assert _exec(redis, ["ps"])[1].splitlines()[1:] == ["    1 redis     0:00 redis-server *:6379",
                                                        "    7 root      0:00 ps"]
    # kubectl exec -it … -- sh, then ps: the session's shell is a process too; runc's init threads
    # took the PIDs after it, so the ps it forks comes 6 later (as after a container's own sh)
    out: list[str] = []
    shell = behaviour.ShellSession(build_program({"name": "s", "image": "alpine:3.22"}).start(0.0), "sh",
                                   out.append, out.append)
    with contextlib.suppress(StopIteration):
        gen = shell.run_text("ps\n")
        while True:
            next(gen)
    assert "".join(out).splitlines() == ["PID   USER     TIME  COMMAND", "    1 root      0:00 /bin/sh",
                                         "    7 root      0:00 sh", "   13 root      0:00 ps"]


def test_ps_is_missing_from_debian_based_images(k):
    rc, out, err = k("exec", "cache", "--", "ps")
    assert rc != 0 and out == [] and err[-1].endswith('exec: "ps": executable file not found in $PATH: unknown')
    run = build_program({"name": "c", "image": "nginx:1.29", "command": ["sleep", "99"]}).start(0.0)
    assert _exec(run, ["sh", "-c", "ps; echo $?"]) == (0, "sh: ps: not found\n127\n")
    with pytest.raises(behaviour.ExecNotFound, match=r'exec: "/bin/ps": stat /bin/ps: no such file'):
        behaviour.exec_command(run, ["/bin/ps"], print, print)


def test_a_resolved_environment_copies_to_the_same_dict_in_the_same_order():
    from k8semu.node.behaviour import ResolvedEnv

    shared = {"WEB_SERVICE_HOST": "10.0.0.1", "PATH": "/svc", "X": "shared", "NGINX_VERSION": "svc"}
    image = {"PATH": "/img", "NGINX_VERSION": "1.30.0", "Y": "img"}
    for tty in (False, True):
        for home in (None, "/root"):
            env = ResolvedEnv({"HOSTNAME": "web", "X": "own", "Z": "own"}, shared, image=image, tty=tty, home=home)
            assert list(env.as_dict().items()) == [(k, env[k]) for k in env]
