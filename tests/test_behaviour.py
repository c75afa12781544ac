"""Tests for k8semu.node.behaviour: what emulated containers do, in virtual time."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from k8semu.api.manifest import load_manifests
from k8semu.node.behaviour import (
    Exited,
    LivenessChanged,
    LogLine,
    ReadinessChanged,
    UsageChanged,
    build_program,
    expand_kube_vars,
    image_pull_result,
    normalize_image,
    parse_duration,
)

WEBSITE = Path(__file__).resolve().parents[2] / "shared" / "cases" / "website"
needs_website = pytest.mark.skipif(not WEBSITE.is_dir(), reason="shared/cases/website not available")


def start(container: dict, annotations: dict | None = None, env: dict | None = None, files: dict | None = None,
          now: float = 0.0):
    return build_program(container, annotations, env, files=files).start(now)


def logs(effects) -> list[tuple[float, str]]:
    return [(e.t, e.text) for e in effects if isinstance(e, LogLine)]


def exited(effects) -> Exited | None:
    return next((e for e in effects if isinstance(e, Exited)), None)


def sh(script: str, image: str = "busybox", **extra) -> dict:
    return {"name": "c", "image": image, "command": ["sh", "-c", script], **extra}


def website_container(path: str, name: str) -> dict:
    for doc in load_manifests(WEBSITE / path):
        stack = [doc.obj]
        while stack:
            obj = stack.pop()
            if isinstance(obj, dict):
                for c in (obj.get("initContainers") or []) + (obj.get("containers") or []):
                    if isinstance(c, dict) and c.get("name") == name:
                        return c
                stack.extend(v for v in obj.values() if isinstance(v, (dict, list)))
            elif isinstance(obj, list):
                stack.extend(obj)
    raise LookupError(name)


# --------------------------------------------------------------------------- durations and $(VAR)


@pytest.mark.parametrize("text,seconds", [("3600", 3600), ("1.5", 1.5), ("10s", 10), ("5m", 300), ("1h", 3600),
                                          ("2d", 172800), (".5", 0.5), ("infinity", float("inf"))])
def test_gnu_sleep_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "1x", "-1", "10ms"])
def test_bad_sleep_durations(text):
    with pytest.raises(ValueError):
        parse_duration(text)


def test_kubelet_var_expansion_matches_upstream():
    env = {"A": "x", "B": "y"}
    assert expand_kube_vars("$(A)-$(B)", env) == "x-y"
    assert expand_kube_vars("$(MISSING)", env) == "$(MISSING)"
    assert expand_kube_vars("$$(A)", env) == "$(A)"
    assert expand_kube_vars("$$", env) == "$"
    assert expand_kube_vars("$(date) $HOME $", env) == "$(date) $HOME $"
    assert expand_kube_vars("$(A", env) == "$(A"


@given(st.text(alphabet="$()AB x", max_size=30))
@settings(max_examples=200, deadline=None)
def test_kubelet_expansion_without_vars_only_unescapes(text):
    # with no variables defined, expansion only turns "$$" into "$"
    out = expand_kube_vars(text, {})
    assert out.replace("$", "") == text.replace("$", "")


def test_command_and_args_are_expanded_before_the_shell():
    c = {"name": "c", "image": "busybox", "command": ["/bin/echo", "$(A) $(B) $$(A)"],
         "env": [{"name": "A", "value": "very"}, {"name": "C", "value": "$(A)-x"}]}
    r = start(c)
    assert logs(r.advance(1)) == [(0, "very $(B) $(A)")]
    assert build_program(c).env["C"] == "very-x"  # dependent env vars


# --------------------------------------------------------------------------- commands


def test_echo_then_sleep_3600():
    r = start(sh("echo Hello Kubernetes! && sleep 3600"))
    eff = r.advance(10)
    assert logs(eff) == [(0, "Hello Kubernetes!")]
    assert r.next_event_time() == 3600
    assert exited(r.advance(3600)) == Exited(3600, 0, "Completed")


def test_while_loop_logs_every_10_seconds():
    r = start({"name": "c", "image": "busybox", "command": ["/bin/sh"],
               "args": ["-c", "while true; do echo hello from cnt01; sleep 10;done"]})
    assert [t for t, _ in logs(r.advance(35))] == [0, 10, 20, 30]
    assert r.exited is None and r.next_event_time() == 40


@pytest.mark.parametrize("argv,code,reason", [
    (["true"], 0, "Completed"), (["false"], 1, "Error"), (["sh", "-c", "exit 3"], 3, "Error"),
    (["sh", "-c", "exit 0"], 0, "Completed"), (["sleep", "1.5"], 0, "Completed"),
])
def test_exit_codes(argv, code, reason):
    r = start({"name": "c", "image": "busybox", "command": argv})
    assert r.advance(5)[-1] == Exited(1.5 if argv[0] == "sleep" else 0, code, reason)


def test_sleep_infinity_and_tail_f_run_until_stopped():
    for argv in (["sleep", "infinity"], ["tail", "-f", "/dev/null"]):
        r = start({"name": "c", "image": "debian", "command": argv})
        r.advance(1e6)
        assert r.exited is None and r.next_event_time() is None


def test_cat_waits_only_when_stdin_is_open():
    # stdin: false gives the container /dev/null: cat reads EOF and exits 0, as on a real node
    assert start({"name": "c", "image": "busybox", "command": ["cat"]}).advance(1)[-1] == Exited(0, 0, "Completed")
    r = start({"name": "c", "image": "busybox", "command": ["cat"], "stdin": True, "tty": True})
    r.advance(100)
    assert r.exited is None


def test_shell_features():
    script = (
        "i=0; until [ $i -ge 2 ]; do echo u$i; i=$((i+1)); done\n"
        "for i in $(seq 1 3); do echo -n $i; done; echo\n"
        "for w in a 'b c'; do echo \"[$w]\"; done\n"
        "if [ \"$GREETING\" = hi ]; then echo yes; else echo no; fi\n"
        "echo '$GREETING' \"${GREETING}\" ${UNSET:-dflt} > /tmp/out; cat /tmp/out\n"
        "(echo sub; exit 4); echo rc=$?\n"
        "false || echo recovered; true && echo chained\n"
        "echo to-stdout >> /dev/stdout; echo hidden > /dev/null\n"
        "printf '%s=%d\\n' a 1 b 2\n"
        "trap 'echo bye' TERM\n"
        "exec echo replaced; echo never\n"
    )
    r = start(sh(script, env=[{"name": "GREETING", "value": "hi"}]))
    assert [text for _, text in logs(r.advance(1))] == [
        "u0", "u1", "123", "[a]", "[b c]", "yes", "$GREETING hi dflt", "sub", "rc=4", "recovered", "chained",
        "to-stdout", "a=1", "b=2", "replaced"]
    assert r.exited == Exited(0, 0, "Completed")


def test_date_prints_virtual_time():
    r = start(sh("sleep 90; date; date +%H:%M"), now=0)
    assert [text for _, text in logs(r.advance(100))] == ["Wed Jan  1 00:01:30 UTC 2025", "00:01"]


def test_background_jobs_and_positional_parameters():
    r = start({"name": "c", "image": "busybox",
               "command": ["sh", "-c", "(sleep 5; echo bg) & echo \"$0:$1:$#\"; sleep 10", "zero", "one"]})
    assert logs(r.advance(20)) == [(0, "zero:one:1"), (5, "bg")]
    assert r.exited == Exited(10, 0, "Completed")


def test_busy_loop_spins_at_one_core_without_hanging():
    r = start(sh("while true; do :; done", resources={"limits": {"cpu": "500m"}}))
    r.advance(10)
    assert r.exited is None and r.cpu == 500 and r.next_event_time() is None


def test_unknown_programs_serve_until_stopped():
    for c in ({"name": "c", "image": "myco/app:1", "command": ["python", "app.py"]},
              {"name": "c", "image": "redis"}, {"name": "c", "image": "example.com/whatever"}):
        r = start(c)
        r.advance(1e5)
        assert r.exited is None and r.serving


def test_set_e_and_unreadable_script():
    assert start(sh("set -e; false; echo no")).advance(1)[-1] == Exited(0, 1, "Error")
    r = start(sh("case $x in a) echo a;; esac"))  # case is not supported: treated like an unknown program
    r.advance(10)
    assert r.exited is None


# --------------------------------------------------------------------------- images


@pytest.mark.parametrize("image", ["busybox", "alpine:3", "ubuntu", "debian:stable"])
def test_base_images_without_command_exit_0(image):
    assert start({"name": "c", "image": image}).advance(1)[-1] == Exited(0, 0, "Completed")


def test_hello_world():
    eff = start({"name": "c", "image": "hello-world"}).advance(1)
    assert "Hello from Docker!" in [text for _, text in logs(eff)]
    assert exited(eff).reason == "Completed"


def test_postgres_without_password_exits_1():
    eff = start({"name": "db", "image": "postgres:16"}).advance(1)
    assert logs(eff)[0][1] == "Error: Database is uninitialized and superuser password is not specified."
    assert exited(eff) == Exited(0, 1, "Error")
    r = start({"name": "db", "image": "postgres:16", "env": [{"name": "POSTGRES_PASSWORD", "value": "x"}]})
    r.advance(100)
    assert r.serving and r.exited is None


def test_nginx_serves_and_answers_probes_on_declared_ports():
    c = {"name": "web", "image": "nginx:1.29", "ports": [{"containerPort": 80, "name": "http"}]}
    r = start(c)
    r.advance(5)
    assert r.serving
    assert r.probe("readiness", {"httpGet": {"path": "/", "port": "http"}}, 5)
    assert r.probe("liveness", {"tcpSocket": {"port": 80}}, 5)
    assert not r.probe("liveness", {"tcpSocket": {"port": 8080}}, 5)
    assert not r.probe("readiness", {"httpGet": {"port": "nope"}}, 5)
    # nginx exits promptly on SIGTERM
    assert r.terminate(10) == [Exited(10, 0, "Completed")]
    assert not r.probe("liveness", {"tcpSocket": {"port": 80}}, 11)


def test_sleep_ignores_sigterm_until_sigkill():
    r = start({"name": "c", "image": "busybox", "command": ["sleep", "3600"]})
    r.advance(1)
    assert r.terminate(5) == []
    assert r.kill(35) == [Exited(35, 137, "Error")]


# --------------------------------------------------------------------------- image pulls


def test_pull_normalises_and_is_deterministic():
    res = image_pull_result("nginx")
    assert res.ok and res.ref == "docker.io/library/nginx:latest"
    digest = hashlib.sha256(b"docker.io/library/nginx:latest").hexdigest()
    assert res.image_id == f"docker.io/library/nginx@sha256:{digest}"
    assert 1 <= res.duration <= 5 and res.size > 0
    assert image_pull_result("nginx") == res
    assert image_pull_result("registry.k8s.io/pause:3.9").ref == "registry.k8s.io/pause:3.9"
    assert normalize_image("myuser/app:1").repository == "docker.io/myuser/app"
    assert normalize_image("localhost:5000/app").domain == "localhost:5000"


def test_pull_of_missing_tag_fails_like_containerd():
    res = image_pull_result("nginx:doesnotexist")
    assert (res.ok, res.reason) == (False, "ErrImagePull")
    assert res.message == (
        'Failed to pull image "nginx:doesnotexist": rpc error: code = NotFound desc = failed to pull and unpack '
        'image "docker.io/library/nginx:doesnotexist": failed to resolve reference '
        '"docker.io/library/nginx:doesnotexist": docker.io/library/nginx:doesnotexist: not found')
    assert image_pull_result("busybox:1.0-invalid").reason == "ErrImagePull"


def test_pull_of_unknown_host_and_repository():
    res = image_pull_result("registry.invalid/team/app:1")
    assert res.reason == "ErrImagePull"
    assert res.message.endswith("dial tcp: lookup registry.invalid: no such host")
    res = image_pull_result("non-existing-repo/non-existing-image:example")
    assert "pull access denied, repository does not exist or may require authorization" in res.message


@pytest.mark.parametrize("image,err", [
    ("<your-private-image>", "invalid reference format"),
    ("Nginx", "invalid reference format: repository name must be lowercase"),
    ("nginx:bad tag", "invalid reference format"),
])
def test_invalid_image_names(image, err):
    res = image_pull_result(image)
    assert res.reason == "InvalidImageName"
    assert res.message == f'Failed to apply default image tag "{image}": couldn\'t parse image name "{image}": {err}'


# --------------------------------------------------------------------------- behaviour scripts


def test_behaviour_script_annotation():
    script = """
    log "starting"          # emit a log line
    sleep 30s
    ready false for 20s     # readiness fails for 20 s from now
    live false after 60s    # liveness starts failing at 60 s from now
    memory 200Mi
    cpu 250m
    serve http
    exit 1 after 100s
    """
    c = {"name": "app", "image": "myco/app:1", "ports": [{"containerPort": 8080, "name": "http"}]}
    r = start(c, {"k8semu.io/behaviour.app": script})
    eff = r.advance(35)
    assert logs(eff) == [(0, "starting")]
    assert ReadinessChanged(30, False) in eff and UsageChanged(30, 250, 200 * 2**20) in eff
    assert not r.probe("readiness", {"httpGet": {"port": "http"}}, 35)
    assert r.advance(55) == [ReadinessChanged(50, True)]
    assert r.probe("readiness", {"httpGet": {"port": "http"}}, 55)
    assert r.advance(95) == [LivenessChanged(90, False)]
    assert r.advance(200) == [Exited(130, 1, "Error")]


def test_behaviour_memory_above_limit_is_oomkilled():
    c = {"name": "app", "image": "x", "resources": {"limits": {"memory": "128Mi"}}}
    r = start(c, {"k8semu.io/behaviour": "memory 64Mi\nmemory 300Mi after 5s"})
    assert r.advance(10)[-1] == Exited(5, 137, "OOMKilled")


def test_behaviour_exec_runs_the_container_command():
    c = sh("echo from-command; exit 7", name="app")
    r = start(c, {"k8semu.io/behaviour": "log first\nsleep 2\nexec"})
    assert logs(r.advance(10)) == [(0, "first"), (2, "from-command")]
    assert r.exited == Exited(2, 7, "Error")


def test_specific_annotation_wins_and_sigterm_directive():
    ann = {"k8semu.io/behaviour": "exit 9", "k8semu.io/behaviour.app": "sigterm exit 3 after 5s"}
    r = start({"name": "app", "image": "x"}, ann)
    r.advance(1)
    assert r.terminate(10) == []
    assert r.advance(20) == [Exited(15, 3, "Error")]


@pytest.mark.parametrize("script,problem", [
    ("frobnicate", "line 1: unknown directive 'frobnicate'"),
    ("log ok\nsleep soon", "line 2: invalid duration 'soon'"),
    ("ready maybe", "line 1: 'ready' takes true or false"),
    ("memory lots", "line 1: invalid quantity 'lots'"),
])
def test_behaviour_script_errors_name_container_and_line(script, problem):
    with pytest.raises(ValueError) as info:
        build_program({"name": "app", "image": "x"}, {"k8semu.io/behaviour.app": script})
    assert str(info.value).startswith('invalid behaviour for container "app" (annotation k8semu.io/behaviour.app):')
    assert problem in str(info.value)


# --------------------------------------------------------------------------- real manifests


@needs_website
def test_docs_exec_liveness_is_healthy_for_30_seconds():
    c = website_container("pods/probe/exec-liveness.yaml", "liveness")
    probe = c["livenessProbe"]
    r = start(c, now=100)
    for t, ok in [(105, True), (129, True), (130, False), (200, False)]:
        r.advance(t)
        assert r.probe("liveness", probe, t) is ok, t


@needs_website
def test_docs_http_liveness_agnhost_fails_after_10_seconds():
    c = website_container("pods/probe/http-liveness.yaml", "liveness")
    r = start(c)
    r.advance(3)
    assert r.probe("liveness", c["livenessProbe"], 3)
    r.advance(12)
    assert not r.probe("liveness", c["livenessProbe"], 12)


@needs_website
def test_docs_pi_job_prints_pi_and_completes():
    c = website_container("controllers/job.yaml", "pi")
    eff = start(c).advance(60)
    (t, text), = logs(eff)
    assert text.startswith("3.14159265358979323846264338327950288419716939937510")
    assert len(text) == 1001  # bpi(1000): 1000 significant digits
    assert exited(eff) == Exited(5.0, 0, "Completed")


@needs_website
def test_docs_memory_limit_exceeded_is_oomkilled():
    over = website_container("pods/resource/memory-request-limit-2.yaml", "memory-demo-2-ctr")
    assert start(over).advance(10)[-1] == Exited(1.0, 137, "OOMKilled")
    within = website_container("pods/resource/memory-request-limit.yaml", "memory-demo-ctr")
    r = start(within)
    r.advance(10)
    assert r.exited is None and 150 * 2**20 < r.memory <= 200 * 2**20


@needs_website
def test_docs_indexed_job_python_exit_codes_follow_the_index():
    c = website_container("controllers/job-backoff-limit-per-index-failindex.yaml", "main")
    codes = [start(c, env={"JOB_COMPLETION_INDEX": str(i)}).advance(5)[-1].code for i in range(4)]
    assert codes == [1, 42, 0, 0]


@needs_website
def test_docs_mysql_init_container_writes_server_id():
    c = website_container("application/mysql/mysql-statefulset.yaml", "init-mysql")
    files = {"/mnt/config-map/primary.cnf": "[mysqld]\n", "/mnt/config-map/secondary.cnf": "[mysqld]\n"}
    r = start(c, env={"HOSTNAME": "mysql-2"}, files=files)
    assert r.advance(5)[-1] == Exited(0, 0, "Completed")
    assert r.files["/mnt/conf.d/server-id.cnf"] == "[mysqld]\nserver-id=102\n"
    assert "/mnt/conf.d/secondary.cnf" in r.files


@needs_website
def test_docs_configmap_volume_pod_reads_files_given_by_the_kubelet():
    c = website_container("pods/pod-configmap-volume.yaml", "test-container")
    eff = start(c, files={"/etc/config/SPECIAL_LEVEL": "very", "/etc/config/SPECIAL_TYPE": "charm"}).advance(1)
    assert [text for _, text in logs(eff)] == ["SPECIAL_LEVEL", "SPECIAL_TYPE"]


def _interpretations() -> list[tuple[str, str, str, str]]:
    rows = []
    for path in sorted(WEBSITE.rglob("*.yaml")):
        try:
            docs = load_manifests(path)
        except Exception:
            continue
        for doc in docs:
            stack = [doc.obj]
            while stack:
                obj = stack.pop()
                if isinstance(obj, list):
                    stack.extend(reversed(obj))
                if not isinstance(obj, dict):
                    continue
                if isinstance(obj.get("containers"), list):
                    for c in (obj.get("initContainers") or []) + obj["containers"]:
                        env = {e["name"]: f"<{e['name']}>" for e in c.get("env") or [] if "valueFrom" in e}
                        program = build_program(c, {}, env)
                        run = program.start(0.0)
                        eff = run.advance(3600)
                        n = len(logs(eff))
                        if run.exited:
                            outcome = f"exit {run.exited.code} ({run.exited.reason}) at {run.exited.t:g}s"
                        elif run.serving:
                            outcome = "serves until stopped"
                        elif run.next_event_time() is None:
                            outcome = "waits until stopped" + (" (busy)" if run.cpu >= 1000 else "")
                        else:
                            outcome = "still running (loop)"
                        cmd = " ".join(program.argv).replace("\n", "⏎") or f"<{c.get('image')} entrypoint>"
                        rows.append((f"{path.relative_to(WEBSITE)}:{c.get('name')}", cmd[:60],
                                     f"{outcome}, {n} log lines, cpu {run.cpu}m mem {run.memory >> 20}Mi",
                                     program.source))
                else:
                    stack.extend(v for v in obj.values() if isinstance(v, (dict, list)))
    return rows


@needs_website
def test_website_commands_coverage_table():
    rows = _interpretations()
    assert len(rows) > 150
    width = max(len(r[0]) for r in rows)
    print(f"\n{'container':<{width}}  {'command line (first 60 chars)':<60}  source     after 1 h")
    for where, cmd, outcome, source in rows:
        print(f"{where:<{width}}  {cmd:<60}  {source:<9}  {outcome}")
    # nothing in the docs' examples crashes the interpreter, and the well-known ones behave as upstream
    by = {r[0]: r for r in rows}
    assert by["admin/resource/limit-range-pod-3.yaml:busybox-cnt01"][2].startswith("exit 0 (Completed) at 3600s")
    assert by["application/job/job-tmpl.yaml:c"][2].startswith("exit 0 (Completed) at 5s, 1 log lines")
    assert by["pods/security/hello-apparmor.yaml:hello"][2].startswith("exit 0 (Completed) at 3600s, 1 log")
    assert by["application/wordpress/mysql-deployment.yaml:mysql"][2].startswith("serves until stopped")
    assert by["admin/resource/limit-range-pod-2.yaml:busybox-cnt01"][2].startswith("still running (loop), 361")
