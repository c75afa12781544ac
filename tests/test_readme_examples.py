"""The README's quick start and its bisect example do what the README shows, on a fresh default cluster."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import WEB, Kubectl

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def _block_after(marker: str) -> str:
    start = README.index("```", README.index(marker)) + 3
    return README[README.index("\n", start) + 1:README.index("```", start)]


def test_quick_start_output_and_the_bisect_example(tmp_path, capsys):
    k = Kubectl(tmp_path / "cluster.log", capsys)
    rc, out, err = k("apply", "-f", WEB)
    assert rc == 0
    shown = _block_after("The first line installs k8semu").rstrip("\n").splitlines()
    wall = re.compile(r"\(\d+\.\d+s wall\)")
    assert [wall.sub("(…wall)", line) for line in out] == [wall.sub("(…wall)", line) for line in shown]

    # the "Using it like kubectl" node stop, then the Time travel bisect example as written
    (stop,) = re.findall(r"^k8semu node stop (\S+) ", README, re.M)  # the node the README stops
    assert k("node", "stop", stop)[0] == 0
    assert k("advance", "6m")[0] == 0
    (line,) = [x for x in README.splitlines() if x.startswith("k8semu bisect ")]
    args = re.findall(r"'[^']*'|\S+", line.split("#")[0])[2:]
    args = [a.strip("'") for a in args]
    assert args[0] == ".k8semu/cluster.log"
    rc, out, _ = k("bisect", str(k.path), *args[1:])
    assert rc == 0
    # NotReady 40 s after its last heartbeat (node-monitor-grace-period), marked by the node controller
    assert re.fullmatch(rf'"node/{stop} notready" first holds at revision \d+ \(t=51s; \d+ checks\)', out[0])
    assert out[1] == f"  MODIFIED node/{stop} by node-lifecycle-controller"
