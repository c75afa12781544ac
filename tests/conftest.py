"""Shared fixtures: driving the k8semu CLI in-process on a prepared lab cluster."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import pytest

from k8semu.cli.main import main
from k8semu.sim.cluster import Cluster

WEB = str(Path(__file__).resolve().parents[1] / "manifests" / "web.yaml")
FAILURES = str(Path(__file__).resolve().parents[1] / "manifests" / "failures.yaml")


class Kubectl:
    """Runs ``k8semu --cluster PATH ARGS…`` in-process; returns (exit code, stdout lines, stderr lines)."""

    def __init__(self, path: Path, capsys) -> None:
        self.path = path
        self.capsys = capsys

    def __call__(self, *args: str) -> tuple[int, list[str], list[str]]:
        self.capsys.readouterr()
        try:
            rc = main(["--cluster", str(self.path), *args])
        except SystemExit as e:  # argparse
            rc = e.code
        out, err = self.capsys.readouterr()
        return rc, out.splitlines(), err.splitlines()

    def api(self):
        """A read-only view of the cluster now (close it when done: use :meth:`objects`)."""
        return Cluster.open(self.path, read_only=True)

    def cluster_time(self) -> float:
        """The cluster's virtual time now (seconds since it started)."""
        c = self.api()
        try:
            return c.time
        finally:
            c.close()

    def objects(self, resource: str, namespace: str | None = "default") -> list[dict]:
        c = self.api()
        try:
            return c.api.list(resource, namespace=namespace)["items"]
        finally:
            c.close()

    def pods(self, live_only: bool = True) -> list[dict]:
        return [p for p in self.objects("pods")
                if not (live_only and p["metadata"].get("deletionTimestamp"))]


def prepared_cluster(tmp_path_factory, capsys=None) -> Path:
    """A 3-node cluster file (no kubeadm addons) with the lab applied and 30 s of virtual time run (2 web pods up)."""
    path = tmp_path_factory.mktemp("base") / "cluster.log"
    with contextlib.redirect_stdout(None):
        assert main(["--cluster", str(path), "cluster", "create", "--nodes", "3", "--bare"]) == 0
        assert main(["--cluster", str(path), "apply", "-f", WEB, "--for", "30s", "-q"]) == 0
    return path


def one_node_cluster(tmp_path_factory, name: str, manifest: str, run_for: str) -> Path:
    """A 1-node cluster file (no kubeadm addons) with ``manifest`` (YAML text) applied and
    ``run_for`` of virtual time run."""
    path = tmp_path_factory.mktemp(name) / "cluster.log"
    (path.parent / "manifest.yaml").write_text(manifest)
    with contextlib.redirect_stdout(None), contextlib.redirect_stderr(None):
        assert main(["--cluster", str(path), "cluster", "create", "--nodes", "1", "--bare"]) == 0
        assert main(["--cluster", str(path), "apply", "-f", str(path.parent / "manifest.yaml"),
                     "--for", run_for, "-q"]) == 0
    return path


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """The prepared lab cluster, once per test module."""
    return prepared_cluster(tmp_path_factory)


@pytest.fixture
def k(base, tmp_path, capsys):
    """A :class:`Kubectl` on a fresh copy of the prepared lab cluster."""
    path = tmp_path / "cluster.log"
    shutil.copy(base, path)
    return Kubectl(path, capsys)


@pytest.fixture(scope="session")
def failures_cluster(tmp_path_factory):
    """A 3-node cluster with manifests/failures.yaml applied and 90 s of virtual time run (once per session)."""
    path = tmp_path_factory.mktemp("failures") / "cluster.log"
    with contextlib.redirect_stdout(None):
        assert main(["--cluster", str(path), "cluster", "create", "--nodes", "3", "--bare"]) == 0
        assert main(["--cluster", str(path), "apply", "-f", FAILURES, "--for", "90s", "-q"]) == 0
    return path


@pytest.fixture
def kf(failures_cluster, tmp_path, capsys):
    """A :class:`Kubectl` on a fresh copy of the failures cluster."""
    path = tmp_path / "cluster.log"
    shutil.copy(failures_cluster, path)
    return Kubectl(path, capsys)
