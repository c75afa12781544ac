"""``k8semu trace pod/NAME`` lists the 12 steps of pod creation in causal order, each at the
record where it happened (k8semu.timeline.trace_pod)."""

from __future__ import annotations

from pathlib import Path

import pytest

from k8semu.cli.main import main
from k8semu.timeline import open_log, trace_pod

WEB = Path(__file__).resolve().parents[1] / "manifests" / "web.yaml"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """The lab's web Deployment, then scaled to 6: the first pods on each node pull the image,
    the later ones find it already present (Pulled, Created, Started in one kubelet sync)."""
    path = tmp_path_factory.mktemp("trace") / "cluster.log"
    for argv in (["apply", "-f", str(WEB)], ["scale", "deployment", "web", "--replicas", "6"]):
        assert main(["--cluster", str(path), *argv]) == 0
    return path


def _pods(log):
    return sorted({r.key.rsplit("/", 1)[1] for r in log.records(0, "/registry/pods/default/") if r.type == "ADDED"})


def _first_pod_ip_write(log, name):
    return next(r for r in log.history(f"/registry/pods/default/{name}") if (r.object.get("status") or {}).get("podIP"))


def _kubelet_events(log, name):
    out = []
    for r in log.records(0, "/registry/events/default/"):
        inv = r.object.get("involvedObject") or {}
        if r.type == "ADDED" and inv.get("name") == name and r.actor.startswith("kubelet/"):
            out.append(r)
    return out


def test_every_pods_steps_come_in_causal_order(cluster, capsys):
    log = open_log(cluster)
    pods = _pods(log)
    assert len(pods) == 6
    for name in pods:
        steps = trace_pod(log, "default", name)
        revs = [s.revision for s in steps]
        assert None not in revs, (name, revs)
        assert revs == sorted(revs), (name, [(s.number, s.revision, s.detail) for s in steps])


def test_the_sandbox_step_is_the_pod_ip_write_when_it_comes_before_the_containers(cluster):
    log = open_log(cluster)
    pulled = [n for n in _pods(log) if any(e.object["reason"] == "Pulling" for e in _kubelet_events(log, n))]
    assert pulled  # the first pod on a node pulls its image
    for name in pulled:
        steps = trace_pod(log, "default", name)
        ip_write = _first_pod_ip_write(log, name)
        assert (steps[4].revision, steps[4].detail) == (ip_write.revision, f"podIP={ip_write.object['status']['podIP']}")
        assert steps[3].detail == "event Pulling"  # the kubelet's first write about the pod
        assert steps[5].detail.startswith("Successfully pulled image")


def test_with_the_image_present_the_sandbox_step_precedes_the_container_events(cluster, capsys):
    log = open_log(cluster)
    present = [n for n in _pods(log) if not any(e.object["reason"] == "Pulling" for e in _kubelet_events(log, n))]
    assert present
    for name in present:
        events = _kubelet_events(log, name)
        first = events[0]
        assert first.object["reason"] == "Pulled"
        ip_write = _first_pod_ip_write(log, name)
        started = next(e for e in events if e.object["reason"] == "Started")
        assert ip_write.revision > started.revision  # the kubelet reports the IP after the containers start
        steps = trace_pod(log, "default", name)
        s4, s5, s6, s8 = steps[3], steps[4], steps[5], steps[7]
        assert (s4.revision, s4.detail) == (first.revision, "event Pulled")
        assert (s5.revision, s5.actor) == (first.revision, first.actor)
        assert s5.detail == (f"sandbox up before event Pulled; podIP={ip_write.object['status']['podIP']} "
                             f"reported at revision {ip_write.revision}")
        assert s6.revision == first.revision and s8.revision == started.revision
    # and so it reads on the command line
    name = present[0]
    assert main(["--cluster", str(cluster), "trace", f"pod/{name}"]) == 0
    lines = capsys.readouterr().out.splitlines()
    numbered = [line for line in lines if line[:3].strip().rstrip(".").isdigit()]
    assert [int(line.split(".")[0]) for line in numbered] == list(range(1, 13))
    revs = [int(line.split(" rev ")[1].split()[0]) for line in numbered]
    assert revs == sorted(revs)
    assert lines[lines.index(numbered[4]) + 1].strip().startswith("sandbox up before event Pulled; podIP=")
