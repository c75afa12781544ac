"""Server-side ``meta.k8s.io/v1`` Tables: what ``kubectl get`` prints for each kind.

kubectl has no column printers of its own for built-in kinds: it asks the
server for ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io`` and prints
the cells it gets back. This module is the emulator's version of upstream's
``pkg/printers/internalversion/printers.go`` (kubernetes v1.3x): for every kind
in :mod:`k8semu.api.resources` it holds the column definitions (name, type,
format, priority) and a pure function computing one row's cells from a wire
object and ``now``.

Design:

* One :class:`_Printer` per kind: a tuple of :class:`Column` and a ``cells``
  function ``(obj, now) -> list``. As kube-apiserver does (its
  ``TableConvertor`` always generates with ``Wide: true``), every row carries
  all cells, priority-1 (``-o wide``) ones included; the client drops the
  priority-1 columns unless asked for wide output.
* Kinds whose upstream registry has no printer (Role, ClusterRole, LimitRange)
  use the generic ``NAME``/``CREATED AT`` convertor as upstream does; kinds
  this server does not know (custom resources) get a CRD's default
  ``NAME``/``AGE``.
* Each row's ``object`` is a ``PartialObjectMetadata`` (the default
  ``includeObject=Metadata``), the full object (``Object``) or ``null``
  (``None``), as the apiserver's response transform does.
* :func:`render_table` is the client half: kubectl's ``TablePrinter`` and its
  tabwriter settings (minwidth 6, padding 3, space padding), including
  ``-A`` (NAMESPACE first), ``--show-labels``, ``-L`` and ``--show-kind``.

Everything is deterministic: ``now`` is an argument, never read from a clock.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Callable, Iterable, Mapping, Sequence

import attrs

from .errors import BadRequest
from .humanize import (
    as_datetime,
    format_label_selector,
    format_labels,
    human_duration,
    parse_timestamp,
    seconds_between,
    translate_timestamp_since,
)
from .resources import RESOURCES, ResourceInfo, lookup

__all__ = [
    "Column",
    "table_for",
    "column_definitions",
    "column_names",
    "render_table",
    "pod_status_reason",
]

Obj = Mapping[str, Any]
Cells = list[Any]


@attrs.frozen
class Column:
    """One ``TableColumnDefinition``.

    Attributes:
        name: as upstream spells it (``Nominated Node``); kubectl upper-cases it.
        type: OpenAPI type (``string``, ``integer``, ``boolean``, ``date``).
        format: ``name`` for the object-name column, else ``""``.
        description: a short description of the cell.
        priority: 0 shown by default, 1 only with ``-o wide``.
    """

    name: str
    type: str = "string"
    format: str = ""
    description: str = ""
    priority: int = 0

    def wire(self) -> dict[str, Any]:
        """The JSON form (all five keys are always present on the wire)."""
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


@attrs.frozen
class _Printer:
    columns: tuple[Column, ...]
    cells: Callable[[Obj, datetime], Cells]
    conditions: Callable[[Obj], list[dict[str, Any]] | None] | None = None


# --- small accessors ------------------------------------------------------------------------

def _meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _spec(obj: Obj) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def _status(obj: Obj) -> Mapping[str, Any]:
    return obj.get("status") or {}


def _name(obj: Obj) -> str:
    return _meta(obj).get("name") or ""


def _age(obj: Obj, now: datetime) -> str:
    return translate_timestamp_since(_meta(obj).get("creationTimestamp"), now)


def _int(v: Any) -> int:
    return int(v or 0)


def _quantity(v: Any) -> str:
    """``resource.Quantity.String()``: the canonical form; an absent quantity prints ``0``."""
    from .quantity import parse_quantity

    if v is None or v == "":
        return "0"
    return str(parse_quantity(v))


def _or(v: Any, default: str) -> str:
    """A Go ``*string`` field: ``default`` when nil (absent), the value (even ``""``) otherwise."""
    return default if v is None else str(v)


def _int_or_string(v: Any) -> str:
    return str(v)


def _bool_word(v: Any) -> str:
    """Upstream ``printBoolPtr``: ``True``/``False``, ``<unset>`` for nil."""
    if v is None:
        return "<unset>"
    return "True" if v else "False"


def _containers_cells(pod_spec: Mapping[str, Any] | None) -> tuple[str, str]:
    """``layoutContainerCells``: container names and images, comma-joined."""
    containers = (pod_spec or {}).get("containers") or []
    return (",".join(c.get("name") or "" for c in containers),
            ",".join(c.get("image") or "" for c in containers))


def _template_spec(obj: Obj) -> Mapping[str, Any]:
    return (_spec(obj).get("template") or {}).get("spec") or {}


def _selector_string(selector: Mapping[str, Any] | None) -> str:
    """``LabelSelectorAsSelector(sel).String()`` (empty for nil/empty; ``<invalid>`` on error)."""
    from .selectors import selector_from_label_selector

    try:
        return str(selector_from_label_selector(selector))
    except ValueError:
        return "<invalid>"


def _list_with_more(items: Sequence[str], count: int, limit: int = 3, empty: str = "<unset>") -> str:
    """``listWithMoreString``: the first ``limit`` items, then `` + N more...``."""
    ret = ",".join(items[:limit])
    if count > limit:
        return f"{ret} + {count - limit} more..."
    return ret or empty


# --- column helpers ---------------------------------------------------------------------------

_NAME = Column("Name", "string", "name", "Name must be unique within a namespace.")
_AGE = Column("Age", "string", "", "Time since the object was created (metadata.creationTimestamp).")
_CONTAINERS = Column("Containers", priority=1, description="Names of each container in the template.")
_IMAGES = Column("Images", priority=1, description="Images referenced by each container in the template.")


def _sel(desc: str = "Label selector for the pods.") -> Column:
    return Column("Selector", priority=1, description=desc)


# --- Pod ------------------------------------------------------------------------------------------

_NODE_UNREACHABLE_POD_REASON = "NodeLost"


def _is_restartable_init(container: Mapping[str, Any] | None) -> bool:
    return bool(container) and container.get("restartPolicy") == "Always"


def _pod_summary(pod: Obj) -> tuple[int, int, str, int, datetime | None]:
    """``printPod``'s arithmetic: (ready, total, reason, restarts, last restart time)."""
    spec, status = _spec(pod), _status(pod)
    init_specs = spec.get("initContainers") or []
    init_by_name = {c.get("name"): c for c in init_specs}
    total = len(spec.get("containers") or []) + sum(1 for c in init_specs if _is_restartable_init(c))
    ready = 0
    restarts = 0
    sidecar_restarts = 0
    last_restart: datetime | None = None
    last_sidecar_restart: datetime | None = None

    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    for cond in status.get("conditions") or ():
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    def finished_at(cs: Mapping[str, Any]) -> datetime | None:
        term = (cs.get("lastState") or {}).get("terminated")
        return parse_timestamp(term.get("finishedAt")) if term is not None else None

    def later(a: datetime | None, b: datetime | None) -> datetime | None:
        return b if b is not None and (a is None or a < b) else a

    initializing = False
    for i, cs in enumerate(status.get("initContainerStatuses") or ()):
        state = cs.get("state") or {}
        term, waiting = state.get("terminated"), state.get("waiting")
        restarts += _int(cs.get("restartCount"))
        last_restart = later(last_restart, finished_at(cs))
        sidecar = _is_restartable_init(init_by_name.get(cs.get("name")))
        if sidecar:
            sidecar_restarts += _int(cs.get("restartCount"))
            last_sidecar_restart = later(last_sidecar_restart, finished_at(cs))
        if term is not None and _int(term.get("exitCode")) == 0:
            continue
        if sidecar and cs.get("started"):
            if cs.get("ready"):
                ready += 1
            continue
        if term is not None:
            if not term.get("reason"):
                if _int(term.get("signal")) != 0:
                    reason = f"Init:Signal:{_int(term.get('signal'))}"
                else:
                    reason = f"Init:ExitCode:{_int(term.get('exitCode'))}"
            else:
                reason = "Init:" + term["reason"]
        elif waiting is not None and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break

    initialized = any(c.get("type") == "Initialized" and c.get("status") == "True"
                      for c in status.get("conditions") or ())
    if not initializing or initialized:
        restarts = sidecar_restarts
        last_restart = last_sidecar_restart
        has_running = False
        for cs in reversed(status.get("containerStatuses") or []):
            state = cs.get("state") or {}
            term, waiting = state.get("terminated"), state.get("waiting")
            restarts += _int(cs.get("restartCount"))
            last_restart = later(last_restart, finished_at(cs))
            if waiting is not None and waiting.get("reason"):
                reason = waiting["reason"]
            elif term is not None and term.get("reason"):
                reason = term["reason"]
            elif term is not None:
                if _int(term.get("signal")) != 0:
                    reason = f"Signal:{_int(term.get('signal'))}"
                else:
                    reason = f"ExitCode:{_int(term.get('exitCode'))}"
            elif cs.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            pod_ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                            for c in status.get("conditions") or ())
            reason = "Running" if pod_ready else "NotReady"

    deleting = _meta(pod).get("deletionTimestamp") is not None
    if deleting and status.get("reason") == _NODE_UNREACHABLE_POD_REASON:
        reason = "Unknown"
    elif deleting and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"
    return ready, total, reason, restarts, last_restart


def pod_status_reason(pod: Obj) -> str:
    """The STATUS cell of ``kubectl get pods`` (upstream ``printPod``'s reason logic).

    E.g. ``Running``, ``Pending``, ``ContainerCreating``, ``CrashLoopBackOff``,
    ``Init:0/2``, ``Init:CrashLoopBackOff``, ``PodInitializing``, ``Completed``,
    ``Error``, ``OOMKilled``, ``Signal:9``, ``ExitCode:3``, ``Terminating``,
    ``Unknown`` (deleted pod on a lost node), ``NotReady``, ``SchedulingGated``,
    ``Evicted``.
    """
    return _pod_summary(pod)[2]


def _pod_cells(pod: Obj, now: datetime) -> Cells:
    ready, total, reason, restarts, last_restart = _pod_summary(pod)
    restarts_str = str(restarts)
    if restarts != 0 and last_restart is not None:
        restarts_str = f"{restarts} ({human_duration(seconds_between(last_restart, now))} ago)"
    spec, status = _spec(pod), _status(pod)
    ip = status.get("podIP") or ((status.get("podIPs") or [{}])[0].get("ip") or "")
    gates = spec.get("readinessGates") or []
    gates_str = "<none>"
    if gates:
        conds = status.get("conditions") or []
        true_count = 0
        for gate in gates:
            for cond in conds:
                if cond.get("type") == gate.get("conditionType"):
                    if cond.get("status") == "True":
                        true_count += 1
                    break
        gates_str = f"{true_count}/{len(gates)}"
    return [
        _name(pod), f"{ready}/{total}", reason, restarts_str, _age(pod, now),
        ip or "<none>", spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>", gates_str,
    ]


def _pod_conditions(pod: Obj) -> list[dict[str, Any]] | None:
    phase = _status(pod).get("phase")
    if phase == "Succeeded":
        return [{"type": "Completed", "status": "True", "reason": "Succeeded",
                 "message": "The pod has completed successfully."}]
    if phase == "Failed":
        return [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]
    return None


_POD = _Printer(
    (
        _NAME,
        Column("Ready", description="The aggregate readiness state of this pod for accepting traffic."),
        Column("Status", description="The aggregate status of the containers in this pod."),
        Column("Restarts", description="The number of times the containers in this pod have been "
               "restarted and when the last container in this pod has restarted."),
        _AGE,
        Column("IP", priority=1, description="IP address allocated to the pod."),
        Column("Node", priority=1, description="The node the pod is bound to (spec.nodeName)."),
        Column("Nominated Node", priority=1, description="The node the scheduler nominated for preemption."),
        Column("Readiness Gates", priority=1, description="Readiness gates satisfied / declared."),
    ),
    _pod_cells,
    _pod_conditions,
)


# --- workloads ------------------------------------------------------------------------------------

def _deployment_cells(obj: Obj, now: datetime) -> Cells:
    spec, st = _spec(obj), _status(obj)
    names, images = _containers_cells(_template_spec(obj))
    return [_name(obj), f"{_int(st.get('readyReplicas'))}/{_int(spec.get('replicas'))}",
            _int(st.get("updatedReplicas")), _int(st.get("availableReplicas")), _age(obj, now),
            names, images, _selector_string(spec.get("selector"))]


_DEPLOYMENT = _Printer(
    (_NAME, Column("Ready", description="Number of the pod with ready state"),
     Column("Up-to-date", description="Total number of non-terminated pods with the desired template."),
     Column("Available", description="Total number of available pods."),
     _AGE, _CONTAINERS, _IMAGES, _sel()),
    _deployment_cells,
)


def _replica_set_cells(obj: Obj, now: datetime) -> Cells:
    spec, st = _spec(obj), _status(obj)
    names, images = _containers_cells(_template_spec(obj))
    return [_name(obj), _int(spec.get("replicas")), _int(st.get("replicas")), _int(st.get("readyReplicas")),
            _age(obj, now), names, images, format_label_selector(spec.get("selector"))]


def _replication_controller_cells(obj: Obj, now: datetime) -> Cells:
    spec, st = _spec(obj), _status(obj)
    names, images = _containers_cells(_template_spec(obj))
    return [_name(obj), _int(spec.get("replicas")), _int(st.get("replicas")), _int(st.get("readyReplicas")),
            _age(obj, now), names, images, format_labels(spec.get("selector"))]


_RS_COLUMNS = (
    _NAME,
    Column("Desired", "integer", description="Number of desired pods."),
    Column("Current", "integer", description="Number of most recently observed pods."),
    Column("Ready", "integer", description="Number of ready pods."),
    _AGE, _CONTAINERS, _IMAGES, _sel(),
)
_REPLICA_SET = _Printer(_RS_COLUMNS, _replica_set_cells)
_REPLICATION_CONTROLLER = _Printer(_RS_COLUMNS, _replication_controller_cells)


def _stateful_set_cells(obj: Obj, now: datetime) -> Cells:
    names, images = _containers_cells(_template_spec(obj))
    return [_name(obj), f"{_int(_status(obj).get('readyReplicas'))}/{_int(_spec(obj).get('replicas'))}",
            _age(obj, now), names, images]


_STATEFUL_SET = _Printer(
    (_NAME, Column("Ready", description="Number of the pod with ready state"), _AGE, _CONTAINERS, _IMAGES),
    _stateful_set_cells,
)


def _daemon_set_cells(obj: Obj, now: datetime) -> Cells:
    st = _status(obj)
    tspec = _template_spec(obj)
    names, images = _containers_cells(tspec)
    return [_name(obj), _int(st.get("desiredNumberScheduled")), _int(st.get("currentNumberScheduled")),
            _int(st.get("numberReady")), _int(st.get("updatedNumberScheduled")),
            _int(st.get("numberAvailable")), format_labels(tspec.get("nodeSelector")), _age(obj, now),
            names, images, format_label_selector(_spec(obj).get("selector"))]


_DAEMON_SET = _Printer(
    (_NAME,
     Column("Desired", "integer", description="Number of nodes that should run the daemon pod."),
     Column("Current", "integer", description="Number of nodes running at least one daemon pod."),
     Column("Ready", "integer", description="Number of nodes with a ready daemon pod."),
     Column("Up-to-date", "integer", description="Number of nodes running the updated daemon pod."),
     Column("Available", "integer", description="Number of nodes with an available daemon pod."),
     Column("Node Selector", description="Node selector of the pod template."),
     _AGE, _CONTAINERS, _IMAGES, _sel()),
    _daemon_set_cells,
)


def _job_condition(obj: Obj, type_: str) -> bool:
    for cond in _status(obj).get("conditions") or ():
        if cond.get("type") == type_:
            return cond.get("status") == "True"
    return False


def _job_cells(obj: Obj, now: datetime) -> Cells:
    spec, st = _spec(obj), _status(obj)
    succeeded = _int(st.get("succeeded"))
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{_int(spec['completions'])}"
    elif _int(spec.get("parallelism")) > 1:
        completions = f"{succeeded}/1 of {_int(spec['parallelism'])}"
    else:
        completions = f"{succeeded}/1"
    start = parse_timestamp(st.get("startTime"))
    end = parse_timestamp(st.get("completionTime"))
    duration = ""
    if start is not None:
        duration = human_duration(seconds_between(start, end if end is not None else now))
    if _job_condition(obj, "Complete"):
        status = "Complete"
    elif _job_condition(obj, "Failed"):
        status = "Failed"
    elif _meta(obj).get("deletionTimestamp") is not None:
        status = "Terminating"
    elif _job_condition(obj, "Suspended"):
        status = "Suspended"
    elif _job_condition(obj, "FailureTarget"):
        status = "FailureTarget"
    else:
        status = "Running"
    names, images = _containers_cells(_template_spec(obj))
    return [_name(obj), status, completions, duration, _age(obj, now), names, images,
            format_label_selector(spec.get("selector"))]


_JOB = _Printer(
    (_NAME, Column("Status", description="Status of the job."),
     Column("Completions", description="The number of pods which reached phase Succeeded."),
     Column("Duration", description="Time required to complete the job."),
     _AGE, _CONTAINERS, _IMAGES, _sel()),
    _job_cells,
)


def _cron_job_cells(obj: Obj, now: datetime) -> Cells:
    spec, st = _spec(obj), _status(obj)
    last = "<none>"
    if st.get("lastScheduleTime"):
        last = translate_timestamp_since(st["lastScheduleTime"], now)
    job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    names, images = _containers_cells((job_spec.get("template") or {}).get("spec"))
    return [_name(obj), spec.get("schedule") or "", _or(spec.get("timeZone"), "<none>"),
            _bool_word(spec.get("suspend")), len(st.get("active") or []), last, _age(obj, now),
            names, images, format_label_selector(job_spec.get("selector"))]


_CRON_JOB = _Printer(
    (_NAME, Column("Schedule", description="The schedule in Cron format."),
     Column("Timezone", description="The time zone name for the schedule."),
     Column("Suspend", "boolean", description="Whether subsequent executions are suspended."),
     Column("Active", "integer", description="Number of currently running jobs."),
     Column("Last Schedule", description="When a job was last scheduled."),
     _AGE, _CONTAINERS, _IMAGES, _sel()),
    _cron_job_cells,
)


def _controller_revision_cells(obj: Obj, now: datetime) -> Cells:
    controller = "<none>"
    for ref in _meta(obj).get("ownerReferences") or ():
        if ref.get("controller"):
            api_version = ref.get("apiVersion") or ""
            group = api_version.split("/", 1)[0] if "/" in api_version else ""
            kind = ref.get("kind") or ""
            group_kind = f"{kind}.{group}" if group else kind
            controller = f"{group_kind.lower()}/{ref.get('name') or ''}" if kind or group else ref.get("name") or ""
            break
    return [_name(obj), controller, _int(obj.get("revision")), _age(obj, now)]


_CONTROLLER_REVISION = _Printer(
    (_NAME, Column("Controller", description="Controller of the object"),
     Column("Revision", description="Revision number of the state this revision holds."), _AGE),
    _controller_revision_cells,
)


# --- Node -----------------------------------------------------------------------------------------

_NODE_ROLE_PREFIX = "node-role.kubernetes.io/"
_NODE_ROLE_LABEL = "kubernetes.io/role"


def _node_roles(node: Obj) -> list[str]:
    roles = set()
    for k, v in (_meta(node).get("labels") or {}).items():
        if k.startswith(_NODE_ROLE_PREFIX):
            role = k[len(_NODE_ROLE_PREFIX):]
            if role:
                roles.add(role)
        elif k == _NODE_ROLE_LABEL and v:
            roles.add(v)
    return sorted(roles)


def _node_address(node: Obj, type_: str) -> str:
    for addr in _status(node).get("addresses") or ():
        if addr.get("type") == type_:
            return addr.get("address") or ""
    return "<none>"


def _node_cells(node: Obj, now: datetime) -> Cells:
    st = _status(node)
    status: list[str] = []
    ready = None
    for cond in st.get("conditions") or ():
        if cond.get("type") == "Ready":
            ready = cond  # the last one wins, as upstream's map
    if ready is not None:
        status.append("Ready" if ready.get("status") == "True" else "NotReady")
    else:
        status.append("Unknown")
    if _spec(node).get("unschedulable"):
        status.append("SchedulingDisabled")
    info = st.get("nodeInfo") or {}
    return [_name(node), ",".join(status), ",".join(_node_roles(node)) or "<none>", _age(node, now),
            info.get("kubeletVersion") or "",
            _node_address(node, "InternalIP"), _node_address(node, "ExternalIP"),
            info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
            info.get("containerRuntimeVersion") or "<unknown>"]


_NODE = _Printer(
    (_NAME, Column("Status", description="The status of the node"),
     Column("Roles", description="The roles of the node"), _AGE,
     Column("Version", description="Kubelet version reported by the node."),
     Column("Internal-IP", priority=1, description="The node's first InternalIP address."),
     Column("External-IP", priority=1, description="The node's first ExternalIP address."),
     Column("OS-Image", priority=1, description="OS image reported by the node."),
     Column("Kernel-Version", priority=1, description="Kernel version reported by the node."),
     Column("Container-Runtime", priority=1, description="Container runtime version reported by the node.")),
    _node_cells,
)


# --- Service, Endpoints, EndpointSlice, Ingress ----------------------------------------------------

_LOAD_BALANCER_WIDTH = 16


def _load_balancer_ips(lb_status: Mapping[str, Any] | None, wide: bool) -> str:
    """``loadBalancerStatusStringer``: sorted unique IPs/hostnames, clipped to 16 chars unless wide."""
    result = set()
    for ing in (lb_status or {}).get("ingress") or ():
        if ing.get("ip"):
            result.add(ing["ip"])
        elif ing.get("hostname"):
            result.add(ing["hostname"])
    r = ",".join(sorted(result))
    if not wide and len(r) > _LOAD_BALANCER_WIDTH:
        r = r[: _LOAD_BALANCER_WIDTH - 3] + "..."
    return r


def _service_external_ip(svc: Obj, wide: bool) -> str:
    spec = _spec(svc)
    external_ips = spec.get("externalIPs") or []
    type_ = spec.get("type")
    if type_ in ("ClusterIP", "NodePort"):
        return ",".join(external_ips) if external_ips else "<none>"
    if type_ == "LoadBalancer":
        lb = _load_balancer_ips(_status(svc).get("loadBalancer"), wide)
        if external_ips:
            return ",".join((lb.split(",") if lb else []) + list(external_ips))
        return lb or "<pending>"
    if type_ == "ExternalName":
        return spec.get("externalName") or ""
    return "<unknown>"


def _service_ports(ports: Iterable[Mapping[str, Any]]) -> str:
    out = []
    for p in ports:
        proto = p.get("protocol") or ""
        if _int(p.get("nodePort")) > 0:
            out.append(f"{_int(p.get('port'))}:{_int(p['nodePort'])}/{proto}")
        else:
            out.append(f"{_int(p.get('port'))}/{proto}")
    return ",".join(out)


def _service_cells(svc: Obj, now: datetime) -> Cells:
    spec = _spec(svc)
    cluster_ips = spec.get("clusterIPs") or []
    internal_ip = spec.get("clusterIP") or (cluster_ips[0] if cluster_ips else "") or "<none>"
    return [_name(svc), spec.get("type") or "", internal_ip, _service_external_ip(svc, wide=True),
            _service_ports(spec.get("ports") or []) or "<none>", _age(svc, now),
            format_labels(spec.get("selector"))]


_SERVICE = _Printer(
    (_NAME, Column("Type", description="How the service is exposed."),
     Column("Cluster-IP", description="The IP address of the service inside the cluster."),
     Column("External-IP", description="External addresses the service is reachable at."),
     Column("Port(s)", description="The ports the service exposes."),
     _AGE, Column("Selector", priority=1, description="Label selector of the pods behind the service.")),
    _service_cells,
)


def _endpoints_cells(obj: Obj, now: datetime) -> Cells:
    subsets = obj.get("subsets") or []
    if not subsets:
        return [_name(obj), "<none>", _age(obj, now)]
    shown: list[str] = []
    count = 0
    for ss in subsets:
        addrs = [a.get("ip") or "" for a in ss.get("addresses") or ()]
        ports = ss.get("ports") or []
        if not ports:
            count += len(addrs)
            shown.extend(addrs[: max(0, 3 - len(shown))])
            continue
        for port in ports:
            count += len(addrs)
            for ip in addrs:
                if len(shown) == 3:
                    break
                host = f"[{ip}]" if ":" in ip else ip
                shown.append(f"{host}:{_int(port.get('port'))}")
    text = ",".join(shown)
    if count > 3:
        text = f"{text} + {count - 3} more..."
    return [_name(obj), text, _age(obj, now)]


_ENDPOINTS = _Printer(
    (_NAME, Column("Endpoints", description="The addresses and ports of the service's endpoints."), _AGE),
    _endpoints_cells,
)


def _endpoint_slice_cells(obj: Obj, now: datetime) -> Cells:
    ports = []
    for p in obj.get("ports") or ():
        if p.get("port") is not None:
            ports.append(str(_int(p["port"])))
        elif p.get("name") is not None:
            ports.append(p["name"])
        else:
            ports.append("*")
    addrs = [a for ep in obj.get("endpoints") or () for a in ep.get("addresses") or ()]
    return [_name(obj), obj.get("addressType") or "", _list_with_more(ports, len(ports)),
            _list_with_more(addrs, len(addrs)), _age(obj, now)]


_ENDPOINT_SLICE = _Printer(
    (_NAME, Column("AddressType", description="The type of address carried by this slice."),
     Column("Ports", description="The ports of this slice."),
     Column("Endpoints", description="The addresses of this slice's endpoints."), _AGE),
    _endpoint_slice_cells,
)


def _ingress_cells(obj: Obj, now: datetime) -> Cells:
    spec = _spec(obj)
    rules = spec.get("rules") or []
    hosts: list[str] = []
    more = False
    for rule in rules:
        if len(hosts) == 3:
            more = True
        if not more and rule.get("host"):
            hosts.append(rule["host"])
    hosts_str = "*" if not hosts else ",".join(hosts)
    if hosts and more:
        hosts_str = f"{hosts_str} + {len(rules) - 3} more..."
    address = _load_balancer_ips(_status(obj).get("loadBalancer"), wide=True)
    ports = "80, 443" if spec.get("tls") else "80"
    return [_name(obj), _or(spec.get("ingressClassName"), "<none>"), hosts_str, address, ports, _age(obj, now)]


_INGRESS = _Printer(
    (_NAME,
     Column("Class", description="The name of the IngressClass resource that should be used for "
            "additional configuration"),
     Column("Hosts", description="Hosts that incoming requests are matched against before the ingress rule"),
     Column("Address", description="Address is a list containing ingress points for the load-balancer"),
     Column("Ports", description="Ports of TLS configurations that open"), _AGE),
    _ingress_cells,
)


def _ingress_class_cells(obj: Obj, now: datetime) -> Cells:
    spec = _spec(obj)
    params = spec.get("parameters")
    text = "<none>"
    if params is not None:
        text = params.get("kind") or ""
        if params.get("apiGroup") is not None:
            text += "." + params["apiGroup"]
        text += "/" + (params.get("name") or "")
    return [_name(obj), spec.get("controller") or "", text, _age(obj, now)]


_INGRESS_CLASS = _Printer(
    (_NAME, Column("Controller", description="Controller that is responsible for handling this class"),
     Column("Parameters", description="A reference to a resource with additional parameters"), _AGE),
    _ingress_class_cells,
)


def _network_policy_cells(obj: Obj, now: datetime) -> Cells:
    return [_name(obj), format_label_selector(_spec(obj).get("podSelector") or {}), _age(obj, now)]


_NETWORK_POLICY = _Printer(
    (_NAME, Column("Pod-Selector", description="The pods this policy applies to."), _AGE),
    _network_policy_cells,
)


# --- config and storage ---------------------------------------------------------------------------

_NAMESPACE = _Printer(
    (_NAME, Column("Status", description="The status of the namespace"), _AGE),
    lambda o, now: [_name(o), _status(o).get("phase") or "", _age(o, now)],
)
_CONFIG_MAP = _Printer(
    (_NAME, Column("Data", description="Number of data and binaryData keys."), _AGE),
    lambda o, now: [_name(o), len(o.get("data") or {}) + len(o.get("binaryData") or {}), _age(o, now)],
)
_SECRET = _Printer(
    (_NAME, Column("Type", description="Used to facilitate programmatic handling of secret data."),
     Column("Data", description="Number of data keys."), _AGE),
    lambda o, now: [_name(o), o.get("type") or "", len(o.get("data") or {}), _age(o, now)],
)
_SERVICE_ACCOUNT = _Printer(
    (_NAME, Column("Secrets", description="Number of secrets the service account references."), _AGE),
    lambda o, now: [_name(o), len(o.get("secrets") or []), _age(o, now)],
)


#: ``podTemplateColumnDefinitions`` (all priority 0, no Age): ``printPodTemplate``.
_POD_TEMPLATE = _Printer(
    (_NAME, Column("Containers", description="Names of each container in the template."),
     Column("Images", description="Images referenced by each container in the template."),
     Column("Pod Labels", description="The labels for the pod template.")),
    lambda o, now: [_name(o), *_containers_cells((o.get("template") or {}).get("spec")),
                    format_labels(((o.get("template") or {}).get("metadata") or {}).get("labels"))],
)


def _component_status_cells(obj: Obj, now: datetime) -> Cells:
    """``printComponentStatus``: the first ``Healthy`` condition decides STATUS (``Healthy`` /
    ``Unhealthy``; ``Unknown`` without one), and gives MESSAGE and ERROR."""
    status, message, error = "Unknown", "", ""
    for c in obj.get("conditions") or ():
        if c.get("type") == "Healthy":
            status = "Healthy" if c.get("status") == "True" else "Unhealthy"
            message, error = c.get("message") or "", c.get("error") or ""
            break
    return [_name(obj), status, message, error]


_COMPONENT_STATUS = _Printer(
    (_NAME, Column("Status", description="Status of the component conditions"),
     Column("Message", description="Message of the component conditions"),
     Column("Error", description="Error of the component conditions")),
    _component_status_cells,
)

#: ``runtimeClassColumnDefinitions``: ``printRuntimeClass``.
_RUNTIME_CLASS = _Printer(
    (_NAME, Column("Handler", description="RuntimeClass Handler configures the CRI handler"), _AGE),
    lambda o, now: [_name(o), o.get("handler") or "", _age(o, now)],
)


def _vap_param_kind(obj: Obj) -> str:
    """``printValidatingAdmissionPolicy``'s PARAMKIND: ``apiVersion/kind``, ``<unset>`` without one."""
    pk = _spec(obj).get("paramKind")
    if not isinstance(pk, Mapping):
        return "<unset>"
    return f"{pk.get('apiVersion') or ''}/{pk.get('kind') or ''}"


def _vap_param_ref(obj: Obj) -> str:
    """``printValidatingAdmissionPolicyBinding``'s PARAMREF: ``namespace/name`` (``*/name`` without a
    namespace), the selector when no name is given, ``<unset>`` without a paramRef."""
    pr = _spec(obj).get("paramRef")
    if not isinstance(pr, Mapping):
        return "<unset>"
    if pr.get("name"):
        return f"{pr['namespace']}/{pr['name']}" if pr.get("namespace") else f"*/{pr['name']}"
    if pr.get("selector") is not None:
        return _selector_string(pr.get("selector"))
    return "<unset>"


#: ``validatingAdmissionPolicy`` columns: ``printValidatingAdmissionPolicy``.
_VALIDATING_ADMISSION_POLICY = _Printer(
    (_NAME, Column("Validations", "integer",
                   description="Validations indicates the number of validation rules defined in this configuration"),
     Column("ParamKind", description="ParamKind specifies the kind of resources used to parameterize this policy"),
     _AGE),
    lambda o, now: [_name(o), len(_spec(o).get("validations") or ()), _vap_param_kind(o), _age(o, now)],
)

#: ``validatingAdmissionPolicyBinding`` columns: ``printValidatingAdmissionPolicyBinding``.
_VALIDATING_ADMISSION_POLICY_BINDING = _Printer(
    (_NAME, Column("PolicyName",
                   description="PolicyName indicates the policy definition which the policy binding binded to"),
     Column("ParamRef", description="ParamRef indicates the param resource which sets the configration param"),
     _AGE),
    lambda o, now: [_name(o), _spec(o).get("policyName") or "", _vap_param_ref(o), _age(o, now)],
)


def _api_service_cells(obj: Obj, now: datetime) -> Cells:
    """kube-aggregator's APIService ``ConvertToTable``: SERVICE is ``Local`` without a
    ``spec.service``, else ``namespace/name``; AVAILABLE the ``Available`` condition's status,
    ``False (Reason)`` when not True and it has a reason, ``Unknown`` without the condition."""
    svc = _spec(obj).get("service")
    service = f"{svc.get('namespace') or ''}/{svc.get('name') or ''}" if svc else "Local"
    available = "Unknown"
    for c in _status(obj).get("conditions") or ():
        if c.get("type") == "Available":
            st = c.get("status") or ""
            available = f"{st} ({c['reason']})" if st != "True" and c.get("reason") else st
            break
    return [_name(obj), service, available, _age(obj, now)]


_API_SERVICE = _Printer(
    (_NAME, Column("Service", description="The reference to the service that hosts this API endpoint."),
     Column("Available", description="Whether this service is available."), _AGE),
    _api_service_cells,
)


def _access_modes(modes: Iterable[str] | None) -> str:
    """``GetAccessModesAsString``: RWO, ROX, RWX, RWOP in that order."""
    have = set(modes or ())
    return ",".join(short for mode, short in (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"),
                                              ("ReadWriteMany", "RWX"), ("ReadWriteOncePod", "RWOP"))
                    if mode in have)


_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"


def _pv_cells(obj: Obj, now: datetime) -> Cells:
    spec = _spec(obj)
    claim = ""
    if spec.get("claimRef") is not None:
        claim = f"{spec['claimRef'].get('namespace') or ''}/{spec['claimRef'].get('name') or ''}"
    phase = _status(obj).get("phase") or ""
    if _meta(obj).get("deletionTimestamp") is not None:
        phase = "Terminating"
    annotations = _meta(obj).get("annotations") or {}
    storage_class = annotations.get(_BETA_STORAGE_CLASS, spec.get("storageClassName") or "")
    return [_name(obj), _quantity((spec.get("capacity") or {}).get("storage")), _access_modes(spec.get("accessModes")),
            spec.get("persistentVolumeReclaimPolicy") or "", phase, claim, storage_class,
            _or(spec.get("volumeAttributesClassName"), "<unset>"), _status(obj).get("reason") or "",
            _age(obj, now), _or(spec.get("volumeMode"), "<unset>")]


_PV = _Printer(
    (_NAME, Column("Capacity", description="The volume's storage capacity."),
     Column("Access Modes", description="The ways the volume can be mounted."),
     Column("Reclaim Policy", description="What happens to the volume when its claim is released."),
     Column("Status", description="The phase of the volume."),
     Column("Claim", description="The claim bound to the volume."),
     Column("StorageClass", description="StorageClass of the pv"),
     Column("VolumeAttributesClass", description="VolumeAttributesClass of the pv"),
     Column("Reason", description="Why the volume is in this phase."), _AGE,
     Column("VolumeMode", priority=1, description="Filesystem or Block.")),
    _pv_cells,
)


def _pvc_cells(obj: Obj, now: datetime) -> Cells:
    spec, st = _spec(obj), _status(obj)
    phase = st.get("phase") or ""
    if _meta(obj).get("deletionTimestamp") is not None:
        phase = "Terminating"
    capacity = access = ""
    if spec.get("volumeName"):
        access = _access_modes(st.get("accessModes"))
        capacity = _quantity((st.get("capacity") or {}).get("storage"))
    annotations = _meta(obj).get("annotations") or {}
    storage_class = annotations.get(_BETA_STORAGE_CLASS, spec.get("storageClassName") or "")
    return [_name(obj), phase, spec.get("volumeName") or "", capacity, access, storage_class,
            _or(spec.get("volumeAttributesClassName"), "<unset>"), _age(obj, now),
            _or(spec.get("volumeMode"), "<unset>")]


_PVC = _Printer(
    (_NAME, Column("Status", description="The phase of the claim."),
     Column("Volume", description="The volume bound to the claim."),
     Column("Capacity", description="The actual capacity of the bound volume."),
     Column("Access Modes", description="The access modes of the bound volume."),
     Column("StorageClass", description="StorageClass of the pvc"),
     Column("VolumeAttributesClass", description="VolumeAttributesClass of the pvc"), _AGE,
     Column("VolumeMode", priority=1, description="Filesystem or Block.")),
    _pvc_cells,
)

_DEFAULT_CLASS_ANNOTATIONS = ("storageclass.kubernetes.io/is-default-class",
                              "storageclass.beta.kubernetes.io/is-default-class")


def _storage_class_cells(obj: Obj, now: datetime) -> Cells:
    name = _name(obj)
    annotations = _meta(obj).get("annotations") or {}
    if any(annotations.get(a) == "true" for a in _DEFAULT_CLASS_ANNOTATIONS):
        name += " (default)"
    return [name, obj.get("provisioner") or "", _or(obj.get("reclaimPolicy"), "Delete"),
            _or(obj.get("volumeBindingMode"), "Immediate"), bool(obj.get("allowVolumeExpansion")),
            _age(obj, now)]


_STORAGE_CLASS = _Printer(
    (_NAME, Column("Provisioner", description="The volume plugin that provisions volumes."),
     Column("ReclaimPolicy", description="Reclaim policy of provisioned volumes."),
     Column("VolumeBindingMode", description="When volumes are bound and provisioned."),
     Column("AllowVolumeExpansion", description="Whether volumes of this class can be expanded."), _AGE),
    _storage_class_cells,
)


def _resource_quota_cells(obj: Obj, now: datetime) -> Cells:
    st = _status(obj)
    hard, used = st.get("hard") or {}, st.get("used") or {}
    requests: list[str] = []
    limits: list[str] = []
    for resource in sorted(hard):
        pieces = resource.split(".")
        target = limits if len(pieces) > 1 and pieces[0] == "limits" else requests
        target.append(f"{resource}: {_quantity(used.get(resource))}/{_quantity(hard[resource])}")
    return [_name(obj), ", ".join(requests), ", ".join(limits), _age(obj, now)]


_RESOURCE_QUOTA = _Printer(
    (_NAME,
     Column("Request", description="Request represents a minimum amount of cpu/memory that a container "
            "may consume."),
     Column("Limit", description="Limits control the maximum amount of cpu/memory that a container may use "
            "independent of contention on the node."), _AGE),
    _resource_quota_cells,
)


# --- policy, autoscaling, scheduling, coordination ------------------------------------------------

def _hpa_metrics(specs: Sequence[Mapping[str, Any]], statuses: Sequence[Mapping[str, Any]]) -> str:
    """``formatHPAMetrics``: ``cpu: 20%/50%``, ``<unknown>`` until measured, at most 2 then ``+ N more...``."""
    if not specs:
        return "<none>"

    def status_of(i: int, key: str) -> Mapping[str, Any] | None:
        return statuses[i].get(key) if len(statuses) > i else None

    def q(v: Any) -> str:
        return "<nil>" if v is None else _quantity(v)

    out: list[str] = []
    for i, spec in enumerate(specs):
        kind = spec.get("type")
        if kind == "External":
            target = (spec.get("external") or {}).get("target") or {}
            cur = status_of(i, "external")
            current = ((cur or {}).get("current") or {})
            if target.get("averageValue") is not None:
                c = q(current["averageValue"]) if current.get("averageValue") is not None else "<unknown>"
                out.append(f"{c}/{q(target['averageValue'])} (avg)")
            else:
                c = q(current.get("value")) if cur is not None else "<unknown>"
                out.append(f"{c}/{q(target.get('value'))}")
        elif kind == "Pods":
            target = (spec.get("pods") or {}).get("target") or {}
            cur = status_of(i, "pods")
            c = q(((cur or {}).get("current") or {}).get("averageValue")) if cur is not None else "<unknown>"
            out.append(f"{c}/{q(target.get('averageValue'))}")
        elif kind == "Object":
            target = (spec.get("object") or {}).get("target") or {}
            cur = status_of(i, "object")
            current = ((cur or {}).get("current") or {})
            if target.get("averageValue") is not None:
                c = q(current["averageValue"]) if current.get("averageValue") is not None else "<unknown>"
                out.append(f"{c}/{q(target['averageValue'])} (avg)")
            else:
                c = q(current.get("value")) if cur is not None else "<unknown>"
                out.append(f"{c}/{q(target.get('value'))}")
        elif kind in ("Resource", "ContainerResource"):
            key = "resource" if kind == "Resource" else "containerResource"
            src = spec.get(key) or {}
            target = src.get("target") or {}
            cur = status_of(i, key)
            current = ((cur or {}).get("current") or {})
            if target.get("averageValue") is not None:
                c = q(current.get("averageValue")) if cur is not None else "<unknown>"
                out.append(f"{src.get('name') or ''}: {c}/{q(target['averageValue'])}")
            else:
                c = "<unknown>"
                if cur is not None and current.get("averageUtilization") is not None:
                    c = f"{_int(current['averageUtilization'])}%"
                t = "<auto>"
                if target.get("averageUtilization") is not None:
                    t = f"{_int(target['averageUtilization'])}%"
                out.append(f"{src.get('name') or ''}: {c}/{t}")
        else:
            out.append("<unknown type>")
    if len(out) > 2:
        return f"{', '.join(out[:2])} + {len(out) - 2} more..."
    return ", ".join(out)


def _hpa_cells(obj: Obj, now: datetime) -> Cells:
    spec, st = _spec(obj), _status(obj)
    ref = spec.get("scaleTargetRef") or {}
    min_pods = "<unset>" if spec.get("minReplicas") is None else str(_int(spec["minReplicas"]))
    return [_name(obj), f"{ref.get('kind') or ''}/{ref.get('name') or ''}",
            _hpa_metrics(spec.get("metrics") or [], st.get("currentMetrics") or []),
            min_pods, _int(spec.get("maxReplicas")), _int(st.get("currentReplicas")), _age(obj, now)]


_HPA = _Printer(
    (_NAME, Column("Reference", description="The scale target."),
     Column("Targets", description="Current / target value of each metric."),
     Column("MinPods", description="Lower limit for the number of pods."),
     Column("MaxPods", description="Upper limit for the number of pods."),
     Column("Replicas", description="Current number of replicas."), _AGE),
    _hpa_cells,
)


def _pdb_cells(obj: Obj, now: datetime) -> Cells:
    spec = _spec(obj)
    min_available = "N/A" if spec.get("minAvailable") is None else _int_or_string(spec["minAvailable"])
    max_unavailable = "N/A" if spec.get("maxUnavailable") is None else _int_or_string(spec["maxUnavailable"])
    return [_name(obj), min_available, max_unavailable, _int(_status(obj).get("disruptionsAllowed")),
            _age(obj, now)]


_PDB = _Printer(
    (_NAME, Column("Min Available", description="The minimum number of pods that must be available."),
     Column("Max Unavailable", description="The maximum number of pods that may be unavailable."),
     Column("Allowed Disruptions", "integer",
            description="Calculated number of pods that may be disrupted at this time."), _AGE),
    _pdb_cells,
)

_PRIORITY_CLASS = _Printer(
    (_NAME, Column("Value", "integer", description="The priority value."),
     Column("Global-Default", "boolean", description="Whether this is the default priority class."), _AGE,
     Column("PreemptionPolicy", description="Whether pods of this class may preempt others.")),
    lambda o, now: [_name(o), _int(o.get("value")), bool(o.get("globalDefault")), _age(o, now),
                    o.get("preemptionPolicy") or ""],
)

_LEASE = _Printer(
    (_NAME, Column("Holder", description="The current holder of the lease."), _AGE),
    lambda o, now: [_name(o), _spec(o).get("holderIdentity") or "", _age(o, now)],
)


# --- certificates.k8s.io --------------------------------------------------------------------------

def csr_condition(obj: Obj) -> str:
    """kubectl's ``extractCSRStatus``: ``Denied`` over ``Approved`` over ``Pending``, then
    ``,Failed`` when failed and ``,Issued`` when ``status.certificate`` is set
    (``Approved,Issued``)."""
    types = {c.get("type") for c in _status(obj).get("conditions") or () if isinstance(c, Mapping)}
    text = "Denied" if "Denied" in types else "Approved" if "Approved" in types else "Pending"
    if "Failed" in types:
        text += ",Failed"
    if _status(obj).get("certificate"):
        text += ",Issued"
    return text


def _csr_cells(obj: Obj, now: datetime) -> Cells:
    spec = _spec(obj)
    exp = spec.get("expirationSeconds")
    return [_name(obj), _age(obj, now), spec.get("signerName") or "<none>", spec.get("username") or "",
            "<none>" if exp is None else human_duration(_int(exp)), csr_condition(obj)]


_CSR = _Printer(
    (_NAME, _AGE,
     Column("SignerName", description="Requested signer for the request."),
     Column("Requestor", description="Base64-encoded PKCS#10 CSR data"),
     Column("RequestedDuration", description="Requested duration of validity of the issued certificate."),
     Column("Condition", description="Conditions applied to the request. Known conditions are "
                                     "\"Approved\", \"Denied\", and \"Failed\".")),
    _csr_cells,
)


# --- RBAC -----------------------------------------------------------------------------------------

def _binding_cells(obj: Obj, now: datetime) -> Cells:
    ref = obj.get("roleRef") or {}
    users: list[str] = []
    groups: list[str] = []
    sas: list[str] = []
    for s in obj.get("subjects") or ():
        kind = s.get("kind")
        if kind == "ServiceAccount":
            sas.append(f"{s.get('namespace') or ''}/{s.get('name') or ''}")
        elif kind == "User":
            users.append(s.get("name") or "")
        elif kind == "Group":
            groups.append(s.get("name") or "")
    return [_name(obj), f"{ref.get('kind') or ''}/{ref.get('name') or ''}", _age(obj, now),
            ", ".join(users), ", ".join(groups), ", ".join(sas)]


def _binding_printer(what: str) -> _Printer:
    return _Printer(
        (_NAME, Column("Role", description="The role the binding grants."), _AGE,
         Column("Users", priority=1, description=f"Users in the {what}"),
         Column("Groups", priority=1, description=f"Groups in the {what}"),
         Column("ServiceAccounts", priority=1, description=f"ServiceAccounts in the {what}")),
        _binding_cells,
    )


# --- Event ----------------------------------------------------------------------------------------

def _core_event_view(ev: Obj) -> Mapping[str, Any]:
    """An events.k8s.io/v1 Event seen with core/v1 field names (the printer works on the core shape)."""
    if (ev.get("apiVersion") or "").startswith("events.k8s.io/") or (
            "involvedObject" not in ev and "regarding" in ev):
        return {
            "metadata": ev.get("metadata"),
            "involvedObject": ev.get("regarding") or {},
            "reason": ev.get("reason"),
            "message": ev.get("note"),
            "source": ev.get("deprecatedSource") or {},
            "firstTimestamp": ev.get("deprecatedFirstTimestamp"),
            "lastTimestamp": ev.get("deprecatedLastTimestamp"),
            "count": ev.get("deprecatedCount"),
            "type": ev.get("type"),
            "eventTime": ev.get("eventTime"),
            "series": ev.get("series"),
            "reportingComponent": ev.get("reportingController"),
            "reportingInstance": ev.get("reportingInstance"),
        }
    return ev


def _event_cells(obj: Obj, now: datetime) -> Cells:
    ev = _core_event_view(obj)
    if ev.get("firstTimestamp"):
        first = translate_timestamp_since(ev["firstTimestamp"], now)
    else:
        first = translate_timestamp_since(ev.get("eventTime"), now)
    last = translate_timestamp_since(ev["lastTimestamp"], now) if ev.get("lastTimestamp") else first
    count = _int(ev.get("count"))
    series = ev.get("series")
    if series is not None:
        last = translate_timestamp_since(series.get("lastObservedTime"), now)
        count = _int(series.get("count"))
    elif count == 0:
        count = 1  # singleton events of the new API carry no count
    involved = ev.get("involvedObject") or {}
    kind = (involved.get("kind") or "").lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = ev.get("source") or {}
    component = source.get("component") or ev.get("reportingComponent") or ""
    instance = source.get("host") or ev.get("reportingInstance") or ""
    source_str = f"{component}, {instance}" if instance else component
    return [last, ev.get("type") or "", ev.get("reason") or "", target, involved.get("fieldPath") or "",
            source_str, (ev.get("message") or "").strip(), first, count, _name(obj)]


_EVENT = _Printer(
    (Column("Last Seen", description="The time at which the most recent occurrence of this event was recorded."),
     Column("Type", description="Type of this event (Normal, Warning)."),
     Column("Reason", description="Short, machine understandable reason for the event."),
     Column("Object", description="The object this event is about."),
     Column("Subobject", priority=1, description="The field path of the object this event is about."),
     Column("Source", priority=1, description="The component reporting this event."),
     Column("Message", description="A human-readable description of the event."),
     Column("First Seen", priority=1, description="The time at which the event was first recorded."),
     Column("Count", priority=1, description="The number of times this event has occurred."),
     Column("Name", format="name", priority=1, description="Name must be unique within a namespace.")),
    _event_cells,
)


# --- generic convertors ---------------------------------------------------------------------------

def _created_at(obj: Obj) -> str:
    """``creationTimestamp.UTC().Format(time.RFC3339)``; a zero time prints Go's zero time."""
    t = parse_timestamp(_meta(obj).get("creationTimestamp"))
    return t.strftime("%Y-%m-%dT%H:%M:%SZ") if t is not None else "0001-01-01T00:00:00Z"


#: apiserver's ``rest.NewDefaultTableConvertor`` (Role, ClusterRole, LimitRange upstream).
_DEFAULT = _Printer(
    (_NAME, Column("Created At", "date", description="Time the object was created (RFC 3339).")),
    lambda o, now: [_name(o), _created_at(o)],
)

#: A CustomResourceDefinition without additionalPrinterColumns: Name and an Age "date" column.
_GENERIC = _Printer(
    (_NAME, Column("Age", "date",
                   description="Custom resource definition column (in JSONPath format): "
                               ".metadata.creationTimestamp")),
    lambda o, now: [_name(o), _age(o, now)],
)

_PRINTERS: dict[tuple[str, str], _Printer] = {
    ("", "Pod"): _POD,
    ("", "Node"): _NODE,
    ("", "Namespace"): _NAMESPACE,
    ("", "Service"): _SERVICE,
    ("", "Endpoints"): _ENDPOINTS,
    ("", "ConfigMap"): _CONFIG_MAP,
    ("", "Secret"): _SECRET,
    ("", "ServiceAccount"): _SERVICE_ACCOUNT,
    ("", "Event"): _EVENT,
    ("events.k8s.io", "Event"): _EVENT,
    ("", "ResourceQuota"): _RESOURCE_QUOTA,
    ("", "LimitRange"): _DEFAULT,
    ("", "PersistentVolume"): _PV,
    ("", "PersistentVolumeClaim"): _PVC,
    ("", "ReplicationController"): _REPLICATION_CONTROLLER,
    ("", "PodTemplate"): _POD_TEMPLATE,
    ("", "ComponentStatus"): _COMPONENT_STATUS,
    ("node.k8s.io", "RuntimeClass"): _RUNTIME_CLASS,
    ("apiregistration.k8s.io", "APIService"): _API_SERVICE,
    ("coordination.k8s.io", "Lease"): _LEASE,
    ("scheduling.k8s.io", "PriorityClass"): _PRIORITY_CLASS,
    ("storage.k8s.io", "StorageClass"): _STORAGE_CLASS,
    ("apps", "Deployment"): _DEPLOYMENT,
    ("apps", "ReplicaSet"): _REPLICA_SET,
    ("apps", "StatefulSet"): _STATEFUL_SET,
    ("apps", "DaemonSet"): _DAEMON_SET,
    ("apps", "ControllerRevision"): _CONTROLLER_REVISION,
    ("batch", "Job"): _JOB,
    ("batch", "CronJob"): _CRON_JOB,
    ("autoscaling", "HorizontalPodAutoscaler"): _HPA,
    ("policy", "PodDisruptionBudget"): _PDB,
    ("networking.k8s.io", "NetworkPolicy"): _NETWORK_POLICY,
    ("networking.k8s.io", "Ingress"): _INGRESS,
    ("networking.k8s.io", "IngressClass"): _INGRESS_CLASS,
    ("discovery.k8s.io", "EndpointSlice"): _ENDPOINT_SLICE,
    ("certificates.k8s.io", "CertificateSigningRequest"): _CSR,
    ("rbac.authorization.k8s.io", "Role"): _DEFAULT,
    ("rbac.authorization.k8s.io", "ClusterRole"): _DEFAULT,
    ("rbac.authorization.k8s.io", "RoleBinding"): _binding_printer("roleBinding"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): _binding_printer("clusterRoleBinding"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): _DEFAULT,
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): _VALIDATING_ADMISSION_POLICY,
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"): _VALIDATING_ADMISSION_POLICY_BINDING,
}


def _resolve(kind: str) -> ResourceInfo | None:
    """A Kind (``Deployment``), plural (``deployments``), short name or ``plural.group``."""
    for r in RESOURCES:
        if r.kind == kind:
            return r
    found = lookup(kind)
    return found[0] if found else None


def _custom_printer(info: Any) -> _Printer:
    """A custom resource's printer: ``Name``, its ``additionalPrinterColumns`` (or ``Age``)."""
    from .customresources import printer_columns, table_cells

    cols = tuple(Column(c["name"], c["type"], c["format"], c["description"], c["priority"])
                 for c in printer_columns(info))
    return _Printer(cols, lambda o, now: table_cells(info, o, now))


def _scale_cells(obj: Obj, now: datetime) -> Cells:
    return [_name(obj), _int(_spec(obj).get("replicas")), _int(_status(obj).get("replicas")), _age(obj, now)]


# an autoscaling/v1 Scale (GET <resource>/NAME/scale), as upstream's scaleColumnDefinitions
_SCALE = _Printer(
    (_NAME, Column("Desired", "integer", description="Number of desired replicas"),
     Column("Available", "integer", description="Number of actual replicas"), _AGE),
    _scale_cells,
)


def _printer_for(kind: str) -> _Printer:
    if kind == "Scale":
        return _SCALE
    info = _resolve(kind)
    if info is None:
        return _GENERIC
    return _PRINTERS.get((info.group, info.kind), _GENERIC)


# --- public API -----------------------------------------------------------------------------------

_INCLUDE_OBJECT = ("None", "Metadata", "Object")


def column_definitions(kind: str) -> list[dict[str, Any]]:
    """The wire ``columnDefinitions`` for ``kind`` (Kind, plural, short name or ``plural.group``).

    Unknown kinds get a custom resource's default ``Name``/``Age`` columns.
    """
    return [c.wire() for c in _printer_for(kind).columns]


def column_names(kind: str, wide: bool = False) -> list[str]:
    """The headers kubectl prints for ``kind``: upper-cased, priority-1 columns only when ``wide``.

    ``column_names("pods", wide=True)`` is ``["NAME", "READY", "STATUS", "RESTARTS", "AGE",
    "IP", "NODE", "NOMINATED NODE", "READINESS GATES"]``.
    """
    return [c.name.upper() for c in _printer_for(kind).columns if wide or c.priority == 0]


def _row_object(obj: Obj, include_object: str) -> Any:
    if include_object == "Object":
        return obj
    if include_object == "None":
        return None
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": _meta(obj)}


def table_for(
    objects: Sequence[Obj],
    kind: str,
    now: float | datetime,
    *,
    include_object: str = "Metadata",
    list_meta: Mapping[str, Any] | None = None,
    info: ResourceInfo | None = None,
) -> dict[str, Any]:
    """The ``meta.k8s.io/v1`` Table kube-apiserver returns for a list (or a single GET) of ``kind``.

    Mirrors ``pkg/printers/internalversion/printers.go`` (v1.3x) and the apiserver's
    Table response transform.

    Args:
        objects: wire objects (dicts), never mutated; a single GET passes one.
        kind: Kind (``Pod``), plural (``pods``), short name (``po``) or ``plural.group``;
            unknown kinds get a custom resource's default ``Name``/``Age`` columns.
        now: the current time (aware datetime, or POSIX seconds) that ages are measured to.
        include_object: ``Metadata`` (default: each row's ``object`` is a
            ``PartialObjectMetadata``), ``Object`` (the object itself) or ``None``
            (``object: null``). ``""`` means ``Metadata``.
        list_meta: the list's ``metadata``; ``resourceVersion``, ``continue`` and
            ``remainingItemCount`` are copied into the Table's ``metadata``.
        info: the resource, when it is a custom one
            (:class:`~k8semu.api.customresources.CustomResourceInfo`): its CRD's
            ``additionalPrinterColumns`` decide the columns.

    Returns:
        ``{"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {...},
        "columnDefinitions": [...], "rows": [{"cells": [...], "object": ...}]}``.
        Every row carries all cells, ``-o wide`` ones included (the server always
        generates wide rows); Succeeded/Failed pods also carry a ``Completed`` row condition.

    Raises:
        BadRequest: ``include_object`` is not one of the three policies.
    """
    include_object = include_object or "Metadata"
    if include_object not in _INCLUDE_OBJECT:
        raise BadRequest(f'includeObject: Invalid value: "{include_object}": '
                         "must be 'Metadata', 'Object', 'None', or empty")
    printer = _custom_printer(info) if getattr(info, "crd", "") else _printer_for(kind)
    t = as_datetime(now)
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": printer.cells(obj, t)}
        if printer.conditions is not None:
            conds = printer.conditions(obj)
            if conds:
                row["conditions"] = conds
        row["object"] = _row_object(obj, include_object)
        rows.append(row)
    metadata: dict[str, Any] = {}
    for key in ("resourceVersion", "continue", "remainingItemCount"):
        value = (list_meta or {}).get(key)
        if value not in (None, ""):
            metadata[key] = value
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": [c.wire() for c in printer.columns],
        "rows": rows,
    }


# --- the client side: kubectl's TablePrinter ------------------------------------------------------

_MIN_WIDTH = 6
_PADDING = 3


def _cell_text(cell: Any) -> str:
    """How kubectl prints one cell: cut at the first newline (then ``...``), escape ESC and CR."""
    if cell is None:
        return ""
    if isinstance(cell, bool):
        text = "true" if cell else "false"
    elif isinstance(cell, float) and cell.is_integer():
        text = str(int(cell))
    else:
        text = str(cell)
    if isinstance(cell, str):
        cut = min((i for i in (text.find("\f"), text.find("\n"), text.find("\r")) if i >= 0), default=-1)
        if cut >= 0:
            text = text[:cut] + "..."
    return text.replace("\x1b", "^[").replace("\r", "\\r")


def _tabwrite(lines: list[list[str]]) -> str:
    """Go's ``text/tabwriter`` with kubectl's settings (minwidth 6, padding 3, pad with spaces).

    Every cell but the last of a line is a tab-terminated column cell, padded to
    ``max(6, widest cell + 3)``; the last cell is written as is.
    """
    if not lines:
        return ""
    widths: list[int] = []
    for line in lines:
        for j, cell in enumerate(line[:-1]):
            w = max(_MIN_WIDTH, len(cell) + _PADDING)
            if j == len(widths):
                widths.append(w)
            elif w > widths[j]:
                widths[j] = w
    out = []
    for line in lines:
        text = "".join(cell.ljust(widths[j]) for j, cell in enumerate(line[:-1]))
        out.append(text + (line[-1] if line else "") + "\n")
    return "".join(out)


def _kind_prefix(kind: str) -> str:
    info = _resolve(kind)
    if info is None:
        return kind.lower()
    return (f"{info.kind}.{info.group}" if info.group else info.kind).lower()


def render_table(
    table: Mapping[str, Any],
    wide: bool = False,
    show_labels: bool = False,
    no_headers: bool = False,
    show_kind: bool = False,
    *,
    with_namespace: bool = False,
    kind: str = "",
    label_columns: Sequence[str] = (),
) -> str:
    """Print a Table as ``kubectl get`` does (cli-runtime's ``TablePrinter``).

    Args:
        table: a wire Table (as from :func:`table_for`).
        wide: ``-o wide``: also print priority-1 columns.
        show_labels: ``--show-labels``: a last ``LABELS`` column, ``k=v,k2=v2`` sorted,
            ``<none>`` for no labels.
        no_headers: ``--no-headers``.
        show_kind: ``--show-kind`` (or several kinds): the name cell becomes
            ``kind.group/name`` (``deployment.apps/web``, ``pod/nginx``); needs ``kind``.
        with_namespace: ``-A``: a first ``NAMESPACE`` column from each row's object.
        kind: the Kind/resource of the rows, for ``show_kind``.
        label_columns: ``-L key``: one column per key, headed by the key's last
            ``/`` segment upper-cased, holding the label's value or nothing.

    Returns:
        The text, one ``\\n``-terminated line per row (plus the header), columns
        left-aligned and padded to ``max(6, widest + 3)``; ``""`` when there are no rows
        (kubectl prints no header then; the caller prints ``No resources found``).
        Empty cells stay empty: the ``<none>`` markers come from the server's cells.
    """
    return _tabwrite(table_lines(table, wide, show_labels, no_headers, show_kind, with_namespace=with_namespace,
                                 kind=kind, label_columns=label_columns))


def table_lines(
    table: Mapping[str, Any],
    wide: bool = False,
    show_labels: bool = False,
    no_headers: bool = False,
    show_kind: bool = False,
    *,
    with_namespace: bool = False,
    kind: str = "",
    label_columns: Sequence[str] = (),
) -> list[list[str]]:
    """The cells :func:`render_table` lays out, line by line (the header first unless
    ``no_headers``; none when there are no rows), for a caller with a tabwriter of its own."""
    columns = list(table.get("columnDefinitions") or [])
    rows = list(table.get("rows") or [])
    if not rows:
        return []
    visible = [i for i, c in enumerate(columns) if wide or not c.get("priority")]
    name_col = -1
    if show_kind and kind:
        name_col = next((i for i, c in enumerate(columns)
                         if c.get("format") == "name" and c.get("type") == "string"), -1)
    prefix = _kind_prefix(kind) if name_col >= 0 else ""

    header: list[str] = []
    if with_namespace:
        header.append("NAMESPACE")
    header += [columns[i].get("name", "").upper() for i in visible]
    header += [key.rsplit("/", 1)[-1].upper() for key in label_columns]
    if show_labels:
        header.append("LABELS")

    lines: list[list[str]] = [] if no_headers else [header]
    for row in rows:
        cells = list(row.get("cells") or [])
        if name_col >= 0 and name_col < len(cells):
            cells[name_col] = f"{prefix}/{_cell_text(cells[name_col])}"
        obj = row.get("object")
        meta = obj.get("metadata") if isinstance(obj, Mapping) else None
        line: list[str] = []
        if with_namespace:
            line.append(_cell_text((meta or {}).get("namespace") if meta is not None else None))
        line += [_cell_text(cells[i]) if i < len(cells) else "" for i in visible]
        labels = (meta or {}).get("labels") or {}
        for key in label_columns:
            line.append(_cell_text(labels.get(key, "")) if meta is not None else "")
        if show_labels:
            line.append(format_labels(labels) if meta is not None else "")
        lines.append(line)
    return lines
