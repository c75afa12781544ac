"""``k8semu rollout status|history|undo|restart|pause|resume``: kubectl rollout.

- ``status`` follows the object as kubectl does (as a watch on its name
  would): the status viewer's message is printed for the current state and
  again for every change — ``Waiting for deployment "web" rollout to finish: 1 out
  of 2 new replicas have been updated...``, ``… 1 old replicas are pending
  termination...``, ``… 1 of 2 updated replicas are available...``, then
  ``deployment "web" successfully rolled out`` — while the cluster runs in
  virtual time, until done or ``--timeout`` (``error: timed out waiting for
  the condition``; kubectl's default ``0``, wait forever, is one hour of virtual
  time here: :data:`k8semu.cli.session.WAIT_LIMIT`). DaemonSets and StatefulSets have kubectl's own messages.
  ``--watch=false`` prints once.
- ``history`` lists the revisions of a Deployment's ReplicaSets (``REVISION
  CHANGE-CAUSE`` through Go's tabwriter), or with ``--revision N`` that
  revision's pod template as ``kubectl describe`` prints it. Read-only.
- ``undo`` is client-side, as kubectl ≥ 1.2x: the ReplicaSet of the wanted
  revision is found and the Deployment's template JSON-patched back to it
  (:func:`k8semu.controllers.deployment.rollback_patch`). ``--dry-run=client``
  sends nothing and prints, as kubectl's rollbacker, that revision's pod
  template (``deployment.apps/web Pod Template:`` then ``describe``'s lines,
  then `` (dry run)`` on a line of its own) — before the paused and
  "already matches" checks, which only a real or server-side undo makes;
  ``--dry-run=server`` sends the patch with ``dryRun=All`` (``deployment.apps/web
  rolled back (server dry run)``). ``-o yaml|json|name`` prints the Deployment as
  it was read (kubectl's ``info.Object``, typed) instead of the line. A dry run
  leaves the log as it was.
- ``restart`` sets the template annotation ``kubectl.kubernetes.io/restartedAt``
  to the virtual time (RFC 3339); ``pause`` / ``resume`` set ``spec.paused``.

Writes use field manager ``kubectl-rollout``; then the cluster settles (or
runs ``--for``), so an undo or restart rolls out before the command returns.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ...api import errors
from ...api.apiserver import STRATEGIC_MERGE_PATCH
from ...api.meta import is_controlled_by
from ...controllers.deployment import RollbackError, restart_patch, rollback_patch
from ...controllers.deployment.rollback import _find_revision
from ...timeline.rerun import ClientWaits
from ..durations import parse_duration
from ..describe import PrefixWriter, describe_pod_template
from ..output import (add_dry_run_flag, add_output_flag, die, display_name, dry_run_strategy, dry_run_suffix,
                      server_error)
from ..printing import ObjectPrinter, tabwrite
from ..session import open_cluster
from ..session import WAIT_LIMIT
from ..targets import Target, add_run_flags, add_target_flags, resolve_args, run_write

FIELD_MANAGER = "kubectl-rollout"
REVISION_ANNOTATION = "deployment.kubernetes.io/revision"
CHANGE_CAUSE = "kubernetes.io/change-cause"

def register(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("rollout", help="manage the rollout of workloads (as kubectl rollout)")
    acts = r.add_subparsers(dest="action", required=True, metavar="ACTION")
    s = acts.add_parser("status", help="watch a rollout until it completes")
    add_target_flags(s, all_=False)
    s.add_argument("-w", "--watch", type=lambda v: v.lower() == "true", nargs="?", const=True, default=True)
    s.add_argument("--timeout", default="0s", help="give up after this much virtual time (0: kubectl's 'forever', 1h here)")
    s.add_argument("--revision", type=int, default=0, help="wait for this revision")
    s.set_defaults(func=run_status)
    h = acts.add_parser("history", help="list a Deployment's revisions")
    add_target_flags(h, all_=False)
    h.add_argument("--revision", type=int, default=0, help="show this revision's pod template")
    add_output_flag(h)
    h.set_defaults(func=run_history)
    u = acts.add_parser("undo", help="roll back to a previous revision")
    add_target_flags(u, all_=False)
    u.add_argument("--to-revision", type=int, default=0, help="the revision (0: the previous one)")
    add_dry_run_flag(u)
    add_output_flag(u)
    add_run_flags(u)
    u.set_defaults(func=lambda a: run_change(a, "undo"))
    for verb in ("restart", "pause", "resume"):
        p = acts.add_parser(verb, help=f"{verb} a rollout")
        add_target_flags(p, all_=False)
        p.add_argument("--field-manager", default=FIELD_MANAGER, help=f"field manager (default {FIELD_MANAGER})")
        add_output_flag(p)
        add_run_flags(p)
        p.set_defaults(func=lambda a, v=verb: run_change(a, v))


def _gk(t: Target) -> str:
    """Go's ``GroupKind.String()``: ``Deployment.apps``, ``Pod``."""
    return f"{t.info.kind}.{t.info.group}" if t.info.group else t.info.kind


# --------------------------------------------------------------------------- status

def rollout_status(obj: dict[str, Any], revision: int = 0) -> tuple[str, bool]:
    """kubectl's status viewers: (message, done) for a Deployment, DaemonSet or StatefulSet.

    Raises:
        ValueError: kubectl's errors (``deployment "web" exceeded its progress
            deadline``, ``rollout status is only available for RollingUpdate strategy
            type``, a revision mismatch, or a kind without a viewer).
    """
    kind = obj.get("kind")
    name = obj["metadata"]["name"]
    gen = obj["metadata"].get("generation", 0)
    spec = obj.get("spec") or {}
    st = obj.get("status") or {}
    if kind == "Deployment":
        if revision > 0:
            have = int((obj["metadata"].get("annotations") or {}).get(REVISION_ANNOTATION, "0") or 0)
            if have != revision:
                raise ValueError(f"desired revision ({revision}) is different from the running revision ({have})")
        if gen <= st.get("observedGeneration", 0):
            for c in st.get("conditions") or []:
                if c.get("type") == "Progressing" and c.get("reason") == "ProgressDeadlineExceeded":
                    raise ValueError(f'deployment "{name}" exceeded its progress deadline')
            want = spec.get("replicas", 1)
            updated = st.get("updatedReplicas", 0)
            if updated < want:
                return (f'Waiting for deployment "{name}" rollout to finish: {updated} out of {want} new replicas '
                        "have been updated..."), False
            if st.get("replicas", 0) > updated:
                return (f'Waiting for deployment "{name}" rollout to finish: {st.get("replicas", 0) - updated} old '
                        "replicas are pending termination..."), False
            if st.get("availableReplicas", 0) < updated:
                return (f'Waiting for deployment "{name}" rollout to finish: {st.get("availableReplicas", 0)} of '
                        f"{updated} updated replicas are available..."), False
            return f'deployment "{name}" successfully rolled out', True
        return "Waiting for deployment spec update to be observed...", False
    if kind == "DaemonSet":
        if (spec.get("updateStrategy") or {}).get("type", "RollingUpdate") != "RollingUpdate":
            raise ValueError("rollout status is only available for RollingUpdate strategy type")
        if gen <= st.get("observedGeneration", 0):
            desired = st.get("desiredNumberScheduled", 0)
            if st.get("updatedNumberScheduled", 0) < desired:
                return (f'Waiting for daemon set "{name}" rollout to finish: {st.get("updatedNumberScheduled", 0)} '
                        f"out of {desired} new pods have been updated..."), False
            if st.get("numberAvailable", 0) < desired:
                return (f'Waiting for daemon set "{name}" rollout to finish: {st.get("numberAvailable", 0)} of '
                        f"{desired} updated pods are available..."), False
            return f'daemon set "{name}" successfully rolled out', True
        return "Waiting for daemon set spec update to be observed...", False
    if kind == "StatefulSet":
        strategy = spec.get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            raise ValueError("rollout status is only available for RollingUpdate strategy type")
        if st.get("observedGeneration", 0) == 0 or gen > st.get("observedGeneration", 0):
            return "Waiting for statefulset spec update to be observed...", False
        want = spec.get("replicas", 1)
        if st.get("readyReplicas", 0) < want:
            return f"Waiting for {want - st.get('readyReplicas', 0)} pods to be ready...", False
        partition = (strategy.get("rollingUpdate") or {}).get("partition")
        if strategy.get("rollingUpdate") is not None:
            if partition is not None and st.get("updatedReplicas", 0) < want - partition:
                return (f"Waiting for partitioned roll out to finish: {st.get('updatedReplicas', 0)} out of "
                        f"{want - partition} new pods have been updated..."), False
            return f"partitioned roll out complete: {st.get('updatedReplicas', 0)} new pods have been updated...", True
        if st.get("updateRevision") != st.get("currentRevision"):
            return (f"waiting for statefulset rolling update to complete {st.get('updatedReplicas', 0)} pods at "
                    f"revision {st.get('updateRevision')}..."), False
        return (f"statefulset rolling update complete {st.get('currentReplicas', 0)} pods at revision "
                f"{st.get('currentRevision')}..."), True
    raise ValueError(f"no status viewer has been implemented for {kind}")


async def _follow(log: Any, rt: Any, t: Target, revision: int, timeout: float) -> bool:
    """Print the status message for every later write of ``t``'s object until it is done;
    False if ``timeout`` virtual seconds pass first.

    The writes are followed as a watch on the object's name would deliver them
    (each one, in order), through a store listener called as each is made;
    the command itself only waits (:meth:`~k8semu.timeline.rerun.ClientWaits.until`,
    recorded so that ``k8semu replay`` waits the same way), so it joins the
    components' scheduling exactly as a replay does.

    Raises:
        NotFound: the object was deleted. ValueError: no status viewer for its new state.
    """
    key = t.info.key(t.namespace, t.name)
    seen: dict[str, Any] = {"done": False, "error": None}

    def on_write(rec: Any) -> None:
        if rec.key != key or seen["done"] or seen["error"] is not None:
            return
        if rec.type == "DELETED":
            seen["error"] = errors.NotFound.of(t.info.plural, t.info.group, t.name)
            return
        try:
            msg, seen["done"] = rollout_status(rec.object, revision)
        except ValueError as e:
            seen["error"] = e
            return
        print(msg)

    log.add_listener(on_write)
    try:
        done = await ClientWaits(rt).until(lambda: seen["done"] or seen["error"] is not None, limit=timeout)
    finally:
        log.remove_listener(on_write)
    if seen["error"] is not None:
        raise seen["error"]
    return done


def run_status(args: argparse.Namespace) -> int:
    timeout = parse_duration(args.timeout, allow_negative=False) or WAIT_LIMIT
    failures: list[str] = []

    async def body(cluster, rt) -> None:
        api = cluster.api
        for t in resolve_args(api, args):
            if t.info.kind not in ("Deployment", "DaemonSet", "StatefulSet"):
                failures.append(f"error: no status viewer has been implemented for {_gk(t)}")
                return
            try:
                obj = api.get(t.info, t.name, namespace=t.namespace)
                msg, done = rollout_status(obj, args.revision)
                print(msg)
                if done or not args.watch:
                    continue
                if not await _follow(cluster.log, rt, t, args.revision, timeout):
                    failures.append("error: timed out waiting for the condition")
                    return
            except errors.StatusError as e:
                failures.append(server_error(e))
                return
            except ValueError as e:
                failures.append(f"error: {e}")
                return

    run_write(args, body, settle=False, failures=failures)
    for line in failures:
        print(line, file=sys.stderr)
    return 1 if failures else 0


# --------------------------------------------------------------------------- history

def _history(api: Any, d: dict[str, Any]) -> dict[int, dict[str, Any]]:
    rss = api.list("replicasets", namespace=d["metadata"]["namespace"])["items"]
    out: dict[int, dict[str, Any]] = {}
    for rs in rss:
        if not is_controlled_by(rs, d):
            continue
        ann = rs["metadata"].get("annotations") or {}
        try:
            out[int(ann.get(REVISION_ANNOTATION, ""))] = rs
        except ValueError:
            continue
    return out


def run_history(args: argparse.Namespace) -> int:
    """kubectl rollout history: the revisions table, ``--revision``'s pod template, or with
    ``-o`` the revisions' ReplicaSets themselves (in revision order; ``--revision``: that one)."""
    try:
        printer = ObjectPrinter.from_args(args)
    except ValueError as e:
        return die(str(e))
    cluster = open_cluster(args, read_only=True)
    try:
        api = cluster.api
        for t in resolve_args(api, args):
            if t.info.kind != "Deployment":
                print(f'error: no history viewer has been implemented for "{_gk(t)}"', file=sys.stderr)
                return 1
            try:
                d = api.get(t.info, t.name, namespace=t.namespace)
            except errors.StatusError as e:
                print(server_error(e), file=sys.stderr)
                return 1
            history = _history(api, d)
            if printer.prints_objects:
                revisions = [args.revision] if args.revision > 0 else sorted(history)
                if args.revision > 0 and args.revision not in history:
                    print("error: unable to find the specified revision", file=sys.stderr)
                    return 1
                for rev in revisions:
                    rs = history[rev]
                    if printer.print({"apiVersion": "apps/v1", "kind": "ReplicaSet", **rs}, "", go_struct=True):
                        return 1
                continue
            if args.revision > 0:
                rs = history.get(args.revision)
                if rs is None:
                    print("error: unable to find the specified revision", file=sys.stderr)
                    return 1
                w = PrefixWriter()  # kubectl's printTemplate: describe's DescribePodTemplate, no tabwriter
                describe_pod_template(w, (rs.get("spec") or {}).get("template") or {})
                print(f"{display_name(t.info, t.name)} with revision #{args.revision}\n{w.raw()}")
                continue
            rows = ["REVISION\tCHANGE-CAUSE"]
            for rev in sorted(history):
                cause = (history[rev]["metadata"].get("annotations") or {}).get(CHANGE_CAUSE) or "<none>"
                rows.append(f"{rev}\t{cause}")
            print(f"{display_name(t.info, t.name)} \n{tabwrite(chr(10).join(rows))}\n")
    finally:
        cluster.close()
    return 0


# --------------------------------------------------------------------------- undo / restart / pause / resume

def _change(api: Any, t: Target, verb: str, to_revision: int,
            dry_run: str = "none", field_manager: str = FIELD_MANAGER) -> tuple[str, dict[str, Any]]:
    """Send one of undo / restart / pause / resume (``dry_run``: undo's ``--dry-run``); returns
    the line to print and the Deployment kubectl prints with ``-o``: undo's as read before,
    the others' as the PATCH returned it.

    Raises:
        RollbackError / ValueError: kubectl's refusal (message after ``error: ``).
        StatusError: the server's.
    """
    name = display_name(t.info, t.name)
    d = api.get(t.info, t.name, namespace=t.namespace)
    if verb == "undo":
        rss = api.list("replicasets", namespace=t.namespace)["items"]
        suffix = dry_run_suffix(dry_run)
        if dry_run == "client":  # kubectl's rollbacker: the revision's template, as `rollout history --revision`
            if to_revision < 0:
                raise RollbackError(f"unable to find specified revision {to_revision} in history")
            rs = _find_revision(d, [rs for rs in rss if is_controlled_by(rs, d)], to_revision)
            w = PrefixWriter()
            describe_pod_template(w, (rs.get("spec") or {}).get("template") or {})
            return f"{name} {w.raw()}{suffix}", d
        plan = rollback_patch(d, rss, to_revision)
        if plan["patch"] is not None:
            api.patch(t.info, t.name, plan["patch"], plan["patchType"], namespace=t.namespace,
                      field_manager=FIELD_MANAGER, dry_run=dry_run == "server")
        return plan["message"] + suffix, d
    if verb == "restart":
        try:
            plan = restart_patch(d, api.timestamp())
        except RollbackError as e:
            raise ValueError(f'{t.info.qualified} "{t.name}" {e}') from None
        out = api.patch(t.info, t.name, plan["patch"], plan["patchType"], namespace=t.namespace,
                        field_manager=field_manager)
        return plan["message"], out
    paused = bool((d.get("spec") or {}).get("paused"))
    if verb == "pause" and paused:
        raise ValueError(f'{t.info.qualified} "{t.name}" is already paused')
    if verb == "resume" and not paused:
        raise ValueError(f'{t.info.qualified} "{t.name}" is not paused')
    out = api.patch(t.info, t.name, {"spec": {"paused": True if verb == "pause" else None}}, STRATEGIC_MERGE_PATCH,
                    namespace=t.namespace, field_manager=field_manager)
    return f"{name} {'paused' if verb == 'pause' else 'resumed'}", out


def run_change(args: argparse.Namespace, verb: str) -> int:
    dry = dry_run_strategy(getattr(args, "dry_run", None))
    try:
        ObjectPrinter.from_args(args)  # (an unknown -o is an error before anything is sent)
    except ValueError as e:
        return die(str(e))
    failures: list[str] = []

    async def body(cluster, rt) -> None:
        api = cluster.api
        for t in resolve_args(api, args):
            if t.info.kind != "Deployment":
                what = "rollbacker" if verb == "undo" else ("restarter" if verb == "restart" else verb)
                failures.append(f"error: {t.info.qualified} \"{t.name}\" {what} is not supported for {_gk(t)}"
                                if verb != "undo" else f"error: no rollbacker has been implemented for \"{_gk(t)}\"")
                continue
            try:
                line, obj = _change(api, t, verb, getattr(args, "to_revision", 0), dry,
                                    getattr(args, "field_manager", FIELD_MANAGER))
            except errors.StatusError as e:
                failures.append(server_error(e))
                continue
            except ValueError as e:
                failures.append(f"error: {e}")
                continue
            # (kubectl makes a printer per object: no "---" between them)
            ObjectPrinter.from_args(args).print(obj, line, go_struct=True)

    run_write(args, body, dry_run=dry != "none", failures=failures)
    for line in failures:
        print(line, file=sys.stderr)
    return 1 if failures else 0
