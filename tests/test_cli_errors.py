"""What a kubectl user sees when a command line goes wrong: ``--at`` past the log, global flags
after the command, bad flags, and ``apply``'s server errors — each line and exit code as kubectl's.

The ``k`` fixture (a :class:`conftest.Kubectl` on a copy of the prepared lab cluster) passes
``--cluster PATH`` before the command; the tests of global flags call ``main`` themselves.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from k8semu.api import errors
from k8semu.api.resources import by_kind
from k8semu.cli.commands.apply import ApplyError, apply_one
from k8semu.cli.main import main
from k8semu.timeline import open_log

WEB = str(Path(__file__).resolve().parents[1] / "manifests" / "web.yaml")


def _end(path) -> tuple[int, float]:
    log = open_log(path)
    try:
        return log.revision, log.record(log.revision).time
    finally:
        log.close()


# --------------------------------------------------------------------------- --at past the log

def test_at_a_time_past_the_end_of_the_log_is_a_one_line_error(k):
    head, end = _end(k.path)
    assert 30 <= end < 31  # the lab ran "--for 30s"; the log ends at its last record
    want = f"error: --at 1h: the log ends at revision {head} (virtual time {end:g}s)"
    for argv in (["get", "pods"], ["describe", "pods"], ["events"], ["top", "pods"],
                 ["explain-scheduling", "web"]):
        assert k(*argv, "--at", "1h") == (1, [], [want]), argv
    assert k("get", "pods", "--at", "2m30s")[2] == [
        f"error: --at 2m30s: the log ends at revision {head} (virtual time {end:g}s)"]


def test_at_within_the_log_still_shows_the_past(k):
    head, _ = _end(k.path)
    rc, out, err = k("get", "deployment", "web", "--at", "0s")
    assert rc == 0 and err == [] and out[1].startswith("web    0/2")
    rc, out, err = k("get", "deployment", "web", "--at", "30s")
    assert rc == 0 and err == [] and out[1].startswith("web    2/2")
    assert k("get", "deployment", "web", "--at", str(head)) == k("get", "deployment", "web")
    # a revision past the end keeps its own one-line error (tests/test_timeline.py)
    assert k("get", "pods", "--at", str(head + 1)) == (
        1, [], [f"error: revision {head + 1} is outside the log (1..{head})"])


# --------------------------------------------------------------------------- global flags anywhere

def _run(capsys, *argv: str) -> tuple[int, list[str], list[str]]:
    capsys.readouterr()
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out.splitlines(), err.splitlines()


def test_cluster_flag_after_the_command(k, capsys, tmp_path):
    where = str(k.path)
    before = k("get", "deployment", "web", "-o", "name")
    assert before == (0, ["deployment.apps/web"], [])
    assert _run(capsys, "get", "deployment", "web", "--cluster", where, "-o", "name") == before
    assert _run(capsys, "get", "deployment", "web", f"--cluster={where}", "-n", "default", "-o", "name") == before
    # a write command, a nested command, flags between positionals
    assert _run(capsys, "scale", "deployment", "web", "--replicas", "3", "--cluster", where) == (
        0, ["deployment.apps/web scaled"], [])
    assert _run(capsys, "rollout", "status", "deployment/web", "--cluster", where) == (
        0, ['deployment "web" successfully rolled out'], [])
    assert _run(capsys, "label", "deployment", "web", "--cluster", where, "tier=front") == (
        0, ["deployment.apps/web labeled"], [])
    # given twice, the last one wins
    missing = str(tmp_path / "missing.log")
    assert _run(capsys, "--cluster", missing, "get", "deployment", "web", "--cluster", where, "-o", "name") == before
    assert _run(capsys, "--cluster", where, "get", "deployment", "web", "--cluster", missing) == (
        1, [], [f'error: no cluster at "{missing}": create one with "k8semu cluster create" or '
                f'"k8semu apply -f FILE"'])


# --------------------------------------------------------------------------- usage errors

@pytest.mark.parametrize("argv, lines", [
    (["get", "pods", "--foo"], ["error: unknown flag: --foo", "See 'k8semu get --help' for usage."]),
    (["get", "pods", "--foo=bar"], ["error: unknown flag: --foo", "See 'k8semu get --help' for usage."]),
    (["get", "pods", "-z"], ["error: unknown shorthand flag: 'z' in -z", "See 'k8semu get --help' for usage."]),
    (["get", "pods", "-o"], ["error: flag needs an argument: --output", "See 'k8semu get --help' for usage."]),
    (["rollout", "status", "deploy/web", "--bogus"],
     ["error: unknown flag: --bogus", "See 'k8semu rollout status --help' for usage."]),
    (["scale", "deploy", "web", "--replicas", "many"],
     ['error: invalid argument "many" for "--replicas" flag: strconv.ParseInt: parsing "many": invalid syntax',
      "See 'k8semu scale --help' for usage."]),
    (["frobnicate"], ['error: unknown command "frobnicate" for "k8semu"', "See 'k8semu --help' for usage."]),
    (["--foo", "get", "pods"], ["error: unknown flag: --foo", "See 'k8semu --help' for usage."]),
])
def test_bad_flags_and_usage_exit_1_with_kubectls_hint(k, argv, lines):
    assert k(*argv) == (1, [], lines)


def test_advance_by_a_negative_duration_is_a_one_line_error(k):
    before = k.path.read_bytes()
    for text in ("-5s", "-5", "-1m30s", "-.5s"):
        assert k("advance", text) == (
            1, [], [f'error: invalid duration "{text}": must not be negative (virtual time only moves forward)'])
    assert k("advance", "5x") == (1, [], ['error: invalid duration "5x"'])
    assert k.path.read_bytes() == before  # nothing ran, nothing was written
    rc, out, err = k("advance", "1s")
    assert rc == 0 and err == [] and out[0].startswith("advanced 1s: virtual time is now ")


@pytest.mark.parametrize("command", ["apply", "create", "replace"])
def test_an_unknown_validate_value_is_kubectls_error(k, command):
    assert k(command, "-f", WEB, "--validate=maybe") == (
        1, [], ['error: invalid - validate option "maybe"; must be one of: strict (or true), warn, ignore (or false)'])


def test_help_still_exits_0(k):
    rc, out, err = k("get", "--help")
    assert rc == 0 and err == [] and out[0].startswith("usage: k8semu get ")
    assert "global options:" in out and any(line.lstrip().startswith("--cluster PATH") for line in out)


def test_the_readme_documents_serve_and_time_travel_as_the_commands_are(k):
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    serve = readme[readme.index("## The real kubectl: `k8semu serve`"):]
    serve = serve[:serve.index("\n## ", 1)]
    rc, out, _ = k("serve", "--help")
    assert rc == 0
    flags = set(re.findall(r"--[a-z][a-z-]+", " ".join(out)))
    assert set(re.findall(r"`(--[a-z][a-z-]+)", serve)) <= flags
    assert "export KUBECONFIG=" in serve and "kubectl port-forward" in serve and "kubectl exec" in serve
    rc, out, _ = k("--help")
    commands = {line.split()[0] for line in out if line.startswith("    ") and line.split()}
    for name in ("history", "diff", "timeline", "trace", "replay", "bisect", "import"):
        assert name in commands and f"k8semu {name} " in readme, name
    assert "--at" in readme


# --------------------------------------------------------------------------- apply's server errors

def test_apply_create_refused_by_the_server_reads_as_kubectls(k, tmp_path):
    doc = tmp_path / "cm.yaml"
    doc.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: nope}\ndata: {a: b}\n")
    assert k("apply", "-f", str(doc)) == (
        1, [], [f'Error from server (NotFound): error when creating "{doc}": namespaces "nope" not found'])


class _RefusingAPI:
    """An API whose GET or PATCH fails, for apply's other two messages."""

    def __init__(self, fail: str, live: dict | None = None) -> None:
        self.fail, self.live = fail, live

    def get(self, info, name, namespace=None):
        if self.fail == "get":
            raise errors.Forbidden(f'deployments.apps "{name}" is forbidden: User "jane" cannot get resource')
        return self.live

    def patch(self, *args, **kwargs):
        raise errors.Conflict("the object has been modified")


def test_apply_retrieve_and_patch_failures_name_the_object_as_kubectl(tmp_path):
    info = by_kind("apps/v1", "Deployment")
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 2}}
    with pytest.raises(ApplyError) as got:
        apply_one(_RefusingAPI("get"), info, obj, "default", server_side=False, force=False, dry=False)
    assert got.value.reason == "Forbidden" and got.value.context("web.yaml") == (
        "error when retrieving current configuration of:\n"
        'Resource: "apps/v1, Resource=deployments", GroupVersionKind: "apps/v1, Kind=Deployment"\n'
        'Name: "web", Namespace: "default"\n'
        'from server for: "web.yaml": ')
    live = {**obj, "spec": {"replicas": 1}}
    with pytest.raises(ApplyError) as got:
        apply_one(_RefusingAPI("patch", live), info, obj, "default", server_side=False, force=False, dry=False)
    ctx = got.value.context("web.yaml")
    assert ctx.startswith("error when applying patch:\n{") and '"spec":{"replicas":2}' in ctx
    assert ctx.endswith('\nto:\nResource: "apps/v1, Resource=deployments", GroupVersionKind: "apps/v1, '
                        'Kind=Deployment"\nName: "web", Namespace: "default"\nfor: "web.yaml": ')
    # kubectl returns a server-side apply's error as the server gave it
    with pytest.raises(ApplyError) as got:
        apply_one(_RefusingAPI("patch"), info, obj, "default", server_side=True, force=False, dry=False)
    assert got.value.context("web.yaml") == ""


# --------------------------------------------------------------------------- failed commands change nothing

@pytest.mark.parametrize("argv, err", [
    (["delete", "pod", "nope"], 'Error from server (NotFound): pods "nope" not found'),
    (["delete", "-f", "missing.yaml"], 'error: the path "missing.yaml" does not exist'),
    (["replace", "-f", "missing.yaml"], 'error: the path "missing.yaml" does not exist'),
    (["scale", "deployment", "nope", "--replicas=2"], 'error: no objects passed to scale deployments.apps "nope" not found'),
    (["rollout", "status", "deployment/nope"], 'Error from server (NotFound): deployments.apps "nope" not found'),
    (["rollout", "restart", "deployment/nope"], 'Error from server (NotFound): deployments.apps "nope" not found'),
    (["label", "pod", "nope", "a=b"], 'Error from server (NotFound): pods "nope" not found'),
    (["set", "image", "deployment/nope", "x=y"], 'Error from server (NotFound): deployments.apps "nope" not found'),
    (["taint", "node", "nope", "a=b:NoSchedule"], 'Error from server (NotFound): nodes "nope" not found'),
    (["create", "deployment", "web", "--image=nginx"],
     'Error from server (AlreadyExists): deployments.apps "web" already exists'),
    (["node", "stop", "nope"], 'Error from server (NotFound): nodes "nope" not found'),
])
def test_a_command_that_fails_at_once_leaves_the_log_byte_for_byte(k, argv, err):
    # as on a real cluster, a refused request changes nothing: no session, no time passing
    before = k.path.read_bytes()
    rc, _, lines = k(*argv)
    assert rc == 1 and lines[-1] == err
    assert k.path.read_bytes() == before


@pytest.mark.parametrize("argv, out", [
    (["scale", "deployment", "web", "--replicas=5", "--dry-run=server"], "deployment.apps/web scaled (server dry run)"),
    (["delete", "deployment", "web", "--dry-run=client"], 'deployment.apps "web" deleted (dry run)'),
    (["apply", "-f", WEB, "--dry-run=server"], "deployment.apps/web unchanged (server dry run)"),
    (["label", "deployment", "web", "a=b", "--dry-run=client"], "deployment.apps/web labeled (dry run)"),
])
def test_a_dry_run_leaves_the_log_byte_for_byte(k, argv, out):
    before = k.path.read_bytes()
    rc, lines, _ = k(*argv)
    assert rc == 0 and lines[0] == out
    assert k.path.read_bytes() == before


def test_a_partly_failed_command_keeps_what_succeeded(k):
    before = k.path.stat().st_size
    rc, out, err = k("label", "deployment", "web", "nope", "tier=x")
    assert rc == 1 and out == ["deployment.apps/web labeled"]
    assert err == ['Error from server (NotFound): deployments.apps "nope" not found']
    assert k.path.stat().st_size > before
    assert k.objects("deployments")[0]["metadata"]["labels"]["tier"] == "x"


def test_a_damaged_last_line_is_an_error_not_a_torn_append(k):
    # a torn append has no newline yet; a whole line that does not parse was damaged
    data = k.path.read_bytes()
    k.path.write_bytes(data + b"\x00\xff garbage\n")
    line = data.count(b"\n") + 1
    assert k("get", "pods") == (1, [], [f"error: cannot read the cluster log: {k.path}:{line}: damaged line: "
                                        "not UTF-8 text"])
    k.path.write_bytes(data + b'{"rev": 1,\n')
    assert k("get", "pods")[2] == [f"error: cannot read the cluster log: {k.path}:{line}: damaged line: "
                                   "not JSON (unexpected end of data at column 11)"]


@pytest.mark.parametrize("argv, out", [
    (["create", "deployment", "d1", "--image=nginx", "--dry-run=client"], "deployment.apps/d1 created (dry run)"),
    (["create", "deployment", "d2", "--image=nginx", "--dry-run=server"],
     "deployment.apps/d2 created (server dry run)"),
    (["create", "job", "j1", "--image=busybox", "--dry-run=client"], "job.batch/j1 created (dry run)"),
    (["create", "cronjob", "c1", "--image=busybox", "--schedule=*/1 * * * *", "--dry-run=client"],
     "cronjob.batch/c1 created (dry run)"),
])
def test_dry_run_after_the_name_of_a_generator_creates_nothing(k, argv, out):
    # (the flag was parsed with the generator's trailing flags, after the dry-run mode was read)
    before = k.path.read_bytes()
    rc, lines, _ = k(*argv)
    assert rc == 0 and lines == [out]
    assert k.path.read_bytes() == before
