"""What a user sees of busybox in emulated containers, as on a Kubernetes 1.33 node with containerd:
``ps`` in a shared process namespace (``shareProcessNamespace``), in a debug container that targets
another (``kubectl debug --target``) and with ``hostPID``; ``ls -l`` in busybox's long format; and
ash's errors for redirects into a missing directory or a read-only file system."""

from __future__ import annotations

import contextlib
import json
import shutil
from datetime import datetime, timedelta

import pytest
from conftest import Kubectl, one_node_cluster

from k8semu.node import behaviour
from k8semu.node.behaviour import Mount, build_program

PODS = """\
apiVersion: v1
kind: Pod
metadata: {name: nginx}
spec:
  shareProcessNamespace: true
  containers:
  - {name: nginx, image: "nginx:1.29"}
  - name: shell
    image: "busybox:1.28"
    securityContext: {capabilities: {add: [SYS_PTRACE]}}
    stdin: true
    tty: true
---
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - {name: web, image: "nginx:1.30-alpine"}
---
apiVersion: v1
kind: Pod
metadata: {name: node-debugger}
spec:
  hostPID: true
  containers:
  - {name: debugger, image: "busybox:1.37", command: [sleep, "3600"]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {key: "hello\\n"}
---
apiVersion: v1
kind: Pod
metadata: {name: box}
spec:
  containers:
  - name: main
    image: "busybox:1.37"
    command: [sleep, "3600"]
    volumeMounts: [{name: cfg, mountPath: /etc/config}, {name: scratch, mountPath: /scratch}]
  volumes: [{name: cfg, configMap: {name: cfg}}, {name: scratch, emptyDir: {}}]
---
apiVersion: v1
kind: Pod
metadata: {name: locked}
spec:
  securityContext: {runAsUser: 65534}
  containers:
  - name: main
    image: "busybox:1.37"
    command: [sleep, "3600"]
    securityContext: {readOnlyRootFilesystem: true}
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  volumes: [{name: scratch, emptyDir: {}}]
"""

HEADER = "PID   USER     TIME  COMMAND"


@pytest.fixture(scope="module")
def cluster_file(tmp_path_factory):
    """One worker with PODS applied and 60 s of virtual time run."""
    return one_node_cluster(tmp_path_factory, "shell", PODS, "60s")


@pytest.fixture
def k(cluster_file, tmp_path, capsys):
    path = tmp_path / "cluster.log"
    shutil.copy(cluster_file, path)
    return Kubectl(path, capsys)


def _stamp(when: datetime) -> str:
    """busybox ``ls -l``'s time of a recent file (``ctime()``'s ``Mmm dd hh:mm``)."""
    return f"{when:%b} {when.day:>2} {when:%H:%M}"


def _now(k: Kubectl) -> datetime:
    """The cluster's wall clock now: what an exec's ``ls -l`` shows for what it writes."""
    c = k.api()
    try:
        return c.api.epoch + timedelta(seconds=c.time)
    finally:
        c.close()


def _started(k: Kubectl, pod: str) -> datetime:
    p = next(p for p in k.objects("pods") if p["metadata"]["name"] == pod)
    stamp = p["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _exec(run, argv) -> tuple[int, str, str]:
    """Exec ``argv`` in a bare run (no cluster): (status, stdout, stderr)."""
    out: list[str] = []
    err: list[str] = []
    gen = behaviour.exec_command(run, list(argv), out.append, err.append)
    try:
        while True:
            next(gen)
    except StopIteration as stop:
        return int(stop.value or 0), "".join(out), "".join(err)


# --------------------------------------------------------------------------- 1. ps and PID namespaces


def test_ps_in_a_shared_process_namespace_lists_every_container(k):
    # upstream's "Share Process Namespace between Containers in a Pod": /pause is PID 1, nginx's
    # master 8, its workers run as 101 (no such user in busybox), then the shell container
    assert k("exec", "nginx", "-c", "shell", "--", "ps", "ax") == (0, [
        HEADER,
        "    1 65535     0:00 /pause",
        "    8 root      0:00 nginx: master process nginx -g daemon off;",
        "   36 101       0:00 nginx: worker process",
        "   37 101       0:00 nginx: worker process",
        "   38 root      0:00 sh",
        "   44 root      0:00 ps ax"], [])


def test_ps_in_a_debug_container_sees_its_targets_processes(k):
    debugger = {"name": "debugger", "image": "busybox:1.37", "command": ["sh"], "stdin": True, "tty": True,
                "targetContainerName": "web"}
    patch = json.dumps({"spec": {"ephemeralContainers": [debugger]}})
    assert k("patch", "pod", "web", "--subresource", "ephemeralcontainers", "-p", patch)[0] == 0
    assert k("advance", "20s")[0] == 0
    # kubectl debug -it web --image=busybox --target=web: the target's entrypoint is PID 1, no /pause
    assert k("exec", "web", "-c", "debugger", "--", "ps") == (0, [
        HEADER,
        "    1 root      0:00 nginx: master process nginx -g daemon off;",
        "   30 101       0:00 nginx: worker process",
        "   31 101       0:00 nginx: worker process",
        "   32 root      0:00 sh",
        "   38 root      0:00 ps"], [])
    # the target sees the debugger's shell too (nginx:alpine has busybox, and a user nginx)
    assert k("exec", "web", "-c", "web", "--", "ps")[1][1:] == [
        "    1 root      0:00 nginx: master process nginx -g daemon off;",
        "   30 nginx     0:00 nginx: worker process",
        "   31 nginx     0:00 nginx: worker process",
        "   32 root      0:00 sh",
        "   33 root      0:00 ps"]


def test_ps_without_a_shared_namespace_is_the_containers_own(k):
    assert k("exec", "box", "--", "ps") == (0, [HEADER, "    1 root      0:00 sleep 3600",
                                               "    7 root      0:00 ps"], [])


def test_ps_with_host_pid_lists_the_nodes_processes(k):
    rc, out, err = k("exec", "node-debugger", "--", "ps")
    assert (rc, err) == (0, [])
    assert out[:7] == [
        HEADER,
        "    1 root      0:00 /sbin/init",
        "    2 root      0:00 [kthreadd]",
        "   96 root      0:00 /lib/systemd/systemd-journald",
        "  131 root      0:00 /lib/systemd/systemd-udevd",
        "  187 root      0:00 /usr/bin/containerd",
        "  402 root      0:00 /usr/bin/kubelet --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf "
        "--kubeconfig=/etc/kubernetes/kubelet.conf --config=/var/lib/kubelet/config.yaml "
        "--container-runtime-endpoint=unix:///run/containerd/containerd.sock"]
    pids = [int(line.split()[0]) for line in out[1:]]
    assert pids == sorted(set(pids))
    commands = [line[21:] for line in out[1:]]
    # each of the node's 5 pods: its shim, /pause (as the pause image's user), its containers
    shims = [c for c in commands if c.startswith("/usr/bin/containerd-shim-runc-v2 -namespace k8s.io -id ")]
    assert len(shims) == 5 and all(c.endswith(" -address /run/containerd/containerd.sock") for c in shims)
    assert sum(line.endswith(" 65535     0:00 /pause") for line in out) == 5
    assert commands.count("sleep 3600") == 3 and commands.count("nginx: worker process") == 4
    assert " nobody    0:00 sleep 3600" in "\n".join(out)  # the pod that runs as 65534
    assert out[-1].endswith(" root      0:00 ps") and "1000 root      0:00 /usr/bin/containerd-shim" in out[7]
    assert k("exec", "node-debugger", "--", "ps") == (rc, out, err)  # deterministic


def test_ps_of_a_run_without_a_pod_is_alone_in_its_namespace():
    run = build_program({"name": "c", "image": "busybox:1.37", "command": ["sleep", "9"]}).start(0.0)
    assert _exec(run, ["ps"])[1].splitlines() == [HEADER, "    1 root      0:00 sleep 9", "    7 root      0:00 ps"]


# --------------------------------------------------------------------------- 2. ls


def test_ls_long_format_as_busybox(k):
    now, started = _stamp(_now(k)), _stamp(_started(k, "box"))
    script = ("cd /scratch && echo 'hello world' > greeting && mkdir sub && ln -s greeting link && touch .hidden"
              " && ls -l && ls -la sub && ls -1 && ls -A && ls -ld . sub greeting && cat link && ls -l /etc/config")
    rc, out, err = k("exec", "box", "--", "sh", "-c", script)
    assert (rc, err) == (0, [])
    assert out == [
        "total 8",
        f"-rw-r--r--    1 root     root            12 {now} greeting",
        f"lrwxrwxrwx    1 root     root             8 {now} link -> greeting",
        f"drwxr-xr-x    2 root     root          4096 {now} sub",
        "total 8",
        f"drwxr-xr-x    2 root     root          4096 {now} .",
        f"drwxr-xr-x    3 root     root          4096 {started} ..",
        "greeting", "link", "sub",
        ".hidden", "greeting", "link", "sub",
        f"drwxr-xr-x    3 root     root          4096 {started} .",
        f"-rw-r--r--    1 root     root            12 {now} greeting",
        f"drwxr-xr-x    2 root     root          4096 {now} sub",
        "hello world",
        "total 4",
        f"-rw-r--r--    1 root     root             6 {started} key"]


def test_ls_lists_files_then_directories_and_reports_missing_ones(k):
    assert k("exec", "box", "--", "ls", "/scratch", "/etc/config/key", "/nope", "/etc/config") == (1, [
        "/etc/config/key", "", "/etc/config:", "key", "", "/scratch:"], [
        "ls: /nope: No such file or directory", "command terminated with exit code 1"])
    rc, out, _ = k("exec", "box", "--", "ls", "-l", "/")
    started = _stamp(_started(k, "box"))
    assert out[0] == "total 44" and f"drwxrwxrwt    2 root     root          4096 {started} tmp" in out
    assert any(line.startswith("drwx------    2 root     root ") and line.endswith(" root") for line in out)
    assert any(line.startswith("dr-xr-xr-x    2 root     root             0 ") and line.endswith(" proc")
               for line in out)


def test_ls_shows_the_owner_of_what_a_non_root_container_wrote(k):
    rc, out, err = k("exec", "locked", "--", "sh", "-c", "echo a > /scratch/f; ls -l /scratch; ls -ln /scratch")
    now = _stamp(_now(k))
    assert (rc, err) == (0, [])
    # its group as id has it (gid=0(root): no runAsGroup)
    assert out == ["total 4", f"-rw-r--r--    1 nobody   root             2 {now} f",
                   "total 4", f"-rw-r--r--    1 65534    0                2 {now} f"]


def test_ls_shows_the_year_of_a_file_older_than_six_months():
    run = build_program({"name": "c", "image": "busybox:1.37", "command": ["sleep", "inf"]}).start(0.0)
    run.advance(200 * 86400.0)
    assert _exec(run, ["sh", "-c", "echo x > /tmp/new; ls -l /etc/hosts /tmp/new"]) == (0, (
        "-rw-r--r--    1 root     root           183 Jan  1  2025 /etc/hosts\n"
        "-rw-r--r--    1 root     root             2 Jul 20 00:00 /tmp/new\n"), "")


# --------------------------------------------------------------------------- 3. redirects


def test_a_redirect_into_a_missing_directory_fails_as_ash(k):
    script = ("echo x > /nope/file; echo \"status $?\"; echo x >> /nope/file; echo \"status $?\"; "
              "cat < /nope; echo \"status $?\"; echo x > /tmp; echo \"status $?\"; ls /nope")
    assert k("exec", "box", "--", "sh", "-c", script) == (1, ["status 1"] * 4, [
        "sh: can't create /nope/file: nonexistent directory",
        "sh: can't create /nope/file: nonexistent directory",
        "sh: can't open /nope: no such file",
        "sh: can't create /tmp: Is a directory",
        "ls: /nope: No such file or directory",
        "command terminated with exit code 1"])
    assert k("exec", "box", "--", "sh", "-c", "echo x > /nope/file") == (1, [], [
        "sh: can't create /nope/file: nonexistent directory", "command terminated with exit code 1"])


def test_writes_into_read_only_file_systems_fail(k):
    # a ConfigMap volume: read-only although its volumeMount does not say so
    assert k("exec", "box", "--", "sh", "-c", "echo x > /etc/config/key; echo $?; cat /etc/config/key") == (
        0, ["1", "hello"], ["sh: can't create /etc/config/key: Read-only file system"])
    # readOnlyRootFilesystem: the root fails, the emptyDir and /dev/termination-log do not
    script = ("echo x > /tmp/f; echo $?; echo x >> /scratch/f; echo $?; echo bye > /dev/termination-log; echo $?; "
              "touch /etc/x; mkdir /opt")
    assert k("exec", "locked", "--", "sh", "-c", script) == (1, ["1", "0", "0"], [
        "sh: can't create /tmp/f: Read-only file system", "touch: /etc/x: Read-only file system",
        "mkdir: can't create directory '/opt': Read-only file system", "command terminated with exit code 1"])


def test_a_read_only_mount_refuses_writes():
    """ConfigMap, Secret, downward API and projected volumes are mounted read-only whatever the
    volumeMount says: the kubelet marks their :class:`Mount` read-only."""
    store = {"/key": "v\n"}
    run = build_program({"name": "c", "image": "busybox:1.37", "command": ["sleep", "inf"]},
                        mounts=[Mount("/etc/config", store, read_only=True)]).start(0.0)
    assert _exec(run, ["sh", "-c", "echo x >> /etc/config/key; rm /etc/config/key; cat /etc/config/key"]) == (
        0, "v\n", "sh: can't create /etc/config/key: Read-only file system\n"
                  "rm: can't remove '/etc/config/key': Read-only file system\n")
    assert store == {"/key": "v\n"}


def test_an_unknown_image_writes_where_its_program_wants():
    """The model does not know an unknown image's directories: writing into one is not refused."""
    run = build_program({"name": "c", "image": "registry.example.org/app:1", "command": ["sleep", "inf"]}).start(0.0)
    assert _exec(run, ["sh", "-c", "echo x > /app/data.txt; cat /app/data.txt"]) == (0, "x\n", "")


# --------------------------------------------------------------------------- 4. processes: PIDs, kill, /proc


def _typed(k: Kubectl, pod: str, container: str, text: str) -> list[str]:
    """What the container's own shell prints for ``text`` typed into its stdin (``kubectl attach
    -i``): its run rebuilt as the kubelet has it now, fed ``text`` one second later."""
    from k8semu.node.podnetwork import PastNetwork
    from k8semu.server import remotecommand

    c = k.api()
    try:
        pod_obj = c.api.get("pods", pod, namespace="default")
        base = remotecommand.container_run(c.api, pod_obj, container, c.time)
        feed = behaviour.StdinFeed()
        run = base.program.start(base.started_at, wall_clock=base.wall_clock, stdin=feed)
        run.network = PastNetwork(c.api, dict(pod_obj), run)
        run.advance(c.time)
        feed.append(c.time + 1, text)
        effects = run.advance(c.time + 5)
    finally:
        c.close()
    return [e.text for e in effects if isinstance(e, behaviour.LogLine)]


def test_the_share_process_namespace_task_signals_nginx_and_reads_its_files(k):
    # upstream's task, typed into the shell container (kubectl attach -it nginx -c shell): ps forks
    # 6 PIDs after the shell (runc's threads), SIGHUP makes nginx start new workers with new PIDs,
    # and /proc/8/root is the nginx container's file system
    out = _typed(k, "nginx", "shell", "ps ax\nkill -HUP 8\necho $?\nps ax\nhead /proc/8/root/etc/nginx/nginx.conf\n")
    assert out == [
        HEADER,
        "    1 65535     0:00 /pause",
        "    8 root      0:00 nginx: master process nginx -g daemon off;",
        "   36 101       0:00 nginx: worker process",
        "   37 101       0:00 nginx: worker process",
        "   38 root      0:00 sh",
        "   44 root      0:00 ps ax",
        "0",
        HEADER,
        "    1 65535     0:00 /pause",
        "    8 root      0:00 nginx: master process nginx -g daemon off;",
        "   38 root      0:00 sh",
        "   45 101       0:00 nginx: worker process",
        "   46 101       0:00 nginx: worker process",
        "   47 root      0:00 ps ax",
        "",
        "user  nginx;",
        "worker_processes  auto;",
        "",
        "error_log  /var/log/nginx/error.log notice;",
        "pid        /var/run/nginx.pid;",
        "",
        "",
        "events {",
        "    worker_connections  1024;"]


def test_the_same_through_exec(k):
    script = "kill -HUP 8; echo $?; ps ax; head -3 /proc/8/root/etc/nginx/nginx.conf"
    assert k("exec", "nginx", "-c", "shell", "--", "sh", "-c", script) == (0, [
        "0",
        HEADER,
        "    1 65535     0:00 /pause",
        "    8 root      0:00 nginx: master process nginx -g daemon off;",
        "   38 root      0:00 sh",
        f"   44 root      0:00 sh -c {script}",
        "   50 101       0:00 nginx: worker process",
        "   51 101       0:00 nginx: worker process",
        "   52 root      0:00 ps ax",
        "", "user  nginx;", "worker_processes  auto;"], [])


def test_kill_is_ashs_builtin(k):
    script = ("kill 99; echo $?; kill -0 1; echo $?; kill -0 1 99 98; echo $?; kill abc; kill -FOO 1; echo $?; "
              "kill; type kill exit ps nosuch; echo $?; kill -l 15 TERM")
    assert k("exec", "box", "--", "sh", "-c", script) == (0, [
        "1", "0", "2", "1",
        "kill is a shell builtin", "exit is a special shell builtin", "ps is /bin/ps", "nosuch: not found", "127",
        "TERM", "15"], [
        "sh: can't kill pid 99: No such process",
        "sh: can't kill pid 99: No such process", "sh: can't kill pid 98: No such process",
        "sh: invalid number 'abc'", "sh: bad signal name 'FOO'", "sh: you need to specify whom to kill"])
    # a non-root shell may not signal root's processes
    assert k("exec", "nginx", "-c", "shell", "--", "sh", "-c", "kill -0 36")[0] == 0
    assert k("exec", "locked", "--", "sh", "-c", "kill -0 1; kill -0 $$; echo $?") == (0, ["0"], [])


def test_pids_of_a_shell_and_its_children_are_the_ones_ps_shows(k):
    # the exec'd sh is PID 7 (not 1); its background job is $!; each command it forks takes the next
    # PID; its last command is exec'd in its place (ash does not fork for it)
    script = "echo $$; sleep 1000 & echo $!; ps; ps x; sleep 5 & kill $!; ps"
    assert k("exec", "box", "--", "sh", "-c", script) == (0, [
        "7", "13",
        HEADER, "    1 root      0:00 sleep 3600", f"    7 root      0:00 sh -c {script}",
        "   13 root      0:00 sleep 1000", "   14 root      0:00 ps",
        HEADER, "    1 root      0:00 sleep 3600", f"    7 root      0:00 sh -c {script}",
        "   13 root      0:00 sleep 1000", "   15 root      0:00 ps x",
        HEADER, "    1 root      0:00 sleep 3600", "    7 root      0:00 ps", "   13 root      0:00 sleep 1000"], [])
    # a pipeline's stages are forked together; a shell killing itself ends with 128 + the signal
    assert k("exec", "box", "--", "sh", "-c", "ps | cat; kill $$; echo not reached") == (143, [
        HEADER, "    1 root      0:00 sleep 3600", "    7 root      0:00 sh -c ps | cat; kill $$; echo not reached",
        "   13 root      0:00 ps", "   14 root      0:00 cat"], ["command terminated with exit code 143"])


def test_a_shell_session_and_a_loop_take_pids_as_they_go():
    run = build_program({"name": "c", "image": "busybox:1.37",
                         "command": ["sh", "-c", "while true; do sleep 10; done"]}).start(0.0)
    run.advance(35.0)  # four sleeps forked so far, the fourth still running
    assert _exec(run, ["ps"]) == (0, "\n".join([
        HEADER, "    1 root      0:00 sh -c while true; do sleep 10; done", "   10 root      0:00 sleep 10",
        "   11 root      0:00 ps"]) + "\n", "")
    out: list[str] = []
    session = behaviour.ShellSession(run, "sh", out.append, out.append)
    with contextlib.suppress(StopIteration):
        gen = session.run_text("echo $$\nps\n")
        while True:
            next(gen)
    assert "".join(out).splitlines() == ["17", HEADER, "    1 root      0:00 sh -c while true; do sleep 10; done",
                                         "   10 root      0:00 sleep 10", "   17 root      0:00 sh",
                                         "   23 root      0:00 ps"]


def test_read_only_root_file_system_keeps_etc_hosts_writable(k):
    script = ("echo nameserver 1.1.1.1 > /etc/resolv.conf; echo $?; echo x > /etc/hostname; echo $?; "
              "echo '10.0.0.9 db' >> /etc/hosts; echo $?; tail -1 /etc/hosts")
    assert k("exec", "locked", "--", "sh", "-c", script) == (0, ["1", "1", "0", "10.0.0.9 db"], [
        "sh: can't create /etc/resolv.conf: Read-only file system",
        "sh: can't create /etc/hostname: Read-only file system"])
    # without readOnlyRootFilesystem they are writable
    assert k("exec", "box", "--", "sh", "-c", "echo search x > /etc/resolv.conf; cat /etc/resolv.conf") == (
        0, ["search x"], [])


def test_ln_readlink_and_ls_dereferencing_as_busybox(k):
    now = _stamp(_now(k))
    script = ("cd /scratch && echo hi > f && ln -s f good && ln -s /nope bad && readlink good; readlink -f good; "
              "readlink f; echo $?; readlink -f /scratch/nope/x; echo $?; readlink -f bad; ls -lL; ls -lL good; "
              "ln -s f good; ln /data/f g")
    assert k("exec", "box", "--", "sh", "-c", script) == (1, [
        "f", "/scratch/f", "1", "1", "/nope",
        "total 8",
        f"-rw-r--r--    1 root     root             3 {now} f",
        f"-rw-r--r--    1 root     root             3 {now} good",
        f"-rw-r--r--    1 root     root             3 {now} good"], [
        "ls: ./bad: No such file or directory",
        "ln: good: File exists", "ln: /data/f: No such file or directory",
        "command terminated with exit code 1"])
    assert k("exec", "locked", "--", "sh", "-c", "ln -s /a /b") == (1, [], [
        "ln: /b: Read-only file system", "command terminated with exit code 1"])


def test_proc_refuses_new_files_and_names_processes(k):
    script = ("echo x > /proc/x; echo $?; touch /proc/y; echo 1 > /proc/sys/net/ipv4/ip_forward; "
              "readlink /proc/self; readlink /proc/1/root; cat /proc/1/root/etc/hostname")
    assert k("exec", "box", "--", "sh", "-c", script) == (0, ["1", "14", "/", "box"], [  # touch was 13
        "sh: can't create /proc/x: nonexistent directory", "touch: /proc/y: No such file or directory",
        "sh: can't create /proc/sys/net/ipv4/ip_forward: Read-only file system"])


def test_top_in_batch_mode_lists_the_namespace(k):
    rc, out, err = k("exec", "nginx", "-c", "shell", "--", "top", "-bn1")
    assert (rc, err) == (0, [])
    assert out[0].startswith("Mem: ") and out[0].endswith("K cached")
    assert out[1] == "CPU:   0% usr   0% sys   0% nic 100% idle   0% io   0% irq   0% sirq"
    assert out[2].startswith("Load average: 0.00 0.00 0.00 ") and out[2].endswith(" 49")  # the last PID taken
    assert out[3:] == [
        "  PID  PPID USER     STAT   VSZ %VSZ CPU %CPU COMMAND",
        "   36     8 101      S    11944   0%   0   0% nginx: worker process",
        "   37     8 101      S    11944   0%   1   0% nginx: worker process",
        "    8     0 root     S    11476   0%   0   0% nginx: master process nginx -g daemon off;",
        "   38     0 root     S     1328   0%   0   0% sh",
        "   44     0 root     R     1328   0%   0   0% top -bn1",
        "    1     0 65535    S     1020   0%   1   0% /pause"]


def test_a_missing_program_is_containerds_unknown_error(k):
    rc, out, err = k("exec", "box", "--", "nosuch")
    assert (rc, out) == (1, []) and err[0].endswith(
        'OCI runtime exec failed: exec failed: unable to start container process: exec: "nosuch": '
        "executable file not found in $PATH: unknown")
    assert k("exec", "box", "--", "/bin/nosuch")[2][0].endswith(
        'exec: "/bin/nosuch": stat /bin/nosuch: no such file or directory: unknown')


def test_host_pid_shows_kube_proxys_node_name(tmp_path, capsys):
    """kube-proxy's DaemonSet passes ``--hostname-override=$(NODE_NAME)``, NODE_NAME a ``fieldRef``
    to ``spec.nodeName``: the kubelet expanded it, so the node's ``ps`` shows the node's name."""
    path = tmp_path / "cluster.log"
    manifest = tmp_path / "pod.yaml"
    manifest.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: dbg}\nspec:\n  hostPID: true\n  containers:\n"
                        "  - {name: dbg, image: 'busybox:1.37', command: [sleep, '3600']}\n")
    k = Kubectl(path, capsys)
    assert k("cluster", "create", "--nodes", "1")[0] == 0
    assert k("apply", "-f", str(manifest), "--for", "30s", "-q")[0] == 0
    node = next(p for p in k.objects("pods") if p["metadata"]["name"] == "dbg")["spec"]["nodeName"]
    rc, out, _ = k("exec", "dbg", "--", "ps")
    proxy = [line for line in out if "kube-proxy" in line]
    assert rc == 0 and len(proxy) == 1
    assert proxy[0].endswith(f"/usr/local/bin/kube-proxy --config=/var/lib/kube-proxy/config.conf "
                             f"--hostname-override={node}")


def test_nginx_reload_replaces_its_workers(k):
    # in the nginx container itself: nginx -s reload (its notice names its own PID) and SIGHUP to
    # PID 1 both start new workers; the old ones are gone; a killed worker is replaced
    script = "nginx -s reload; ps; kill -HUP 1; kill 30; echo $?; kill 42; ps x"
    now = f"{_now(k):%Y/%m/%d %H:%M:%S}"
    assert k("exec", "web", "--", "sh", "-c", script) == (0, [
        HEADER, "    1 root      0:00 nginx: master process nginx -g daemon off;",
        f"   32 root      0:00 sh -c {script}", "   39 nginx     0:00 nginx: worker process",
        "   40 nginx     0:00 nginx: worker process", "   41 root      0:00 ps",
        "1",
        HEADER, "    1 root      0:00 nginx: master process nginx -g daemon off;", "   32 root      0:00 ps x",
        "   43 nginx     0:00 nginx: worker process", "   44 nginx     0:00 nginx: worker process"], [
        f"{now} [notice] 38#38: signal process started", "sh: can't kill pid 30: No such process"])
