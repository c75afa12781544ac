"""``k8semu logs``: which run of a container is shown, as the kubelet chooses it.

Upstream's ``validateContainerLogStatus``: a container waiting to restart
(CrashLoopBackOff) shows its last terminated run; only a container that never
ran is "waiting to start"; a pod not bound to a node has an empty log.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import pytest
from conftest import Kubectl

from k8semu.cli.main import main

FAILURES = str(Path(__file__).resolve().parents[1] / "manifests" / "failures.yaml")


@pytest.fixture(scope="module")
def failures(tmp_path_factory):
    """A 3-node cluster with manifests/failures.yaml applied and 90 s of virtual time run."""
    path = tmp_path_factory.mktemp("failures") / "cluster.log"
    with contextlib.redirect_stdout(None):
        assert main(["--cluster", str(path), "cluster", "create", "--nodes", "3", "--bare"]) == 0
        assert main(["--cluster", str(path), "apply", "-f", FAILURES, "--for", "90s", "-q"]) == 0
    return path


@pytest.fixture
def kf(failures, tmp_path, capsys):
    """A :class:`Kubectl` on a fresh copy of that cluster."""
    path = tmp_path / "cluster.log"
    shutil.copy(failures, path)
    return Kubectl(path, capsys)


def test_logs_of_a_crash_looping_container_are_its_last_run(kf):
    rc, out, _ = kf("get", "pod", "crasher")
    assert out[1].split()[2] == "CrashLoopBackOff"
    assert kf("logs", "crasher") == (0, ["starting", "fatal: cannot connect to database"], [])
    assert kf("logs", "crasher", "--previous") == (0, ["starting", "fatal: cannot connect to database"], [])
    rc, out, _ = kf("logs", "crasher", "--timestamps", "--tail", "1")
    assert rc == 0 and out[0].endswith("Z fatal: cannot connect to database")


def test_logs_of_a_container_whose_image_cannot_be_pulled(kf):
    pods = [p["metadata"]["name"] for p in kf.objects("pods") if p["metadata"]["name"].startswith("bad-image-")]
    rc, out, err = kf("logs", "deployment/bad-image")
    reason = kf("get", "pod", pods[0], "-o", "jsonpath={.status.containerStatuses[0].state.waiting.reason}")[1][0]
    words = {"ImagePullBackOff": "trying and failing to pull image", "ErrImagePull": "image can't be pulled"}[reason]
    assert (rc, out) == (1, [])
    assert err == [f'Error from server (BadRequest): container "nginx" in pod "{pods[0]}" is waiting to start: '
                   f'{words}']
    rc, _, err = kf("logs", pods[0], "--previous")
    assert rc == 1 and err == [f'Error from server (BadRequest): previous terminated container "nginx" in pod '
                               f'"{pods[0]}" not found']


def test_logs_of_an_unscheduled_pod_are_empty(kf):
    assert kf("logs", "too-big") == (0, [], [])


def test_logs_of_a_container_being_created(kf, tmp_path):
    manifest = tmp_path / "slow.yaml"
    manifest.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: slow}\n"
                        "spec:\n  containers: [{name: app, image: 'nginx:1.27'}]\n")
    assert kf("apply", "-f", str(manifest), "--for", "1s", "-q")[0] == 0
    assert kf("logs", "slow") == (1, [], ['Error from server (BadRequest): container "app" in pod "slow" is waiting '
                                          'to start: ContainerCreating'])
