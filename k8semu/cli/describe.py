"""``kubectl describe``'s describers (``k8s.io/kubectl/pkg/describe``) over wire objects.

Every describer writes ``Key:\\tvalue`` lines through a :class:`PrefixWriter`
(two spaces per level) and the text goes through Go's tabwriter as upstream's
``tabbedString`` does (minwidth 0, padding 2; columns aligned per block of
consecutive tabbed lines, see :func:`~k8semu.cli.printing.tabwrite`). The
events table is flushed separately, as upstream's ``DescribeEvents`` does.

Events are read as kubectl reads them: a list of core Events with the field
selector ``involvedObject.name=X,involvedObject.namespace=NS,involvedObject.uid=UID``
(plus ``involvedObject.kind`` for kinds other than Pod).

Layout follows kubectl v1.3x; times print in RFC 1123 with numeric zone
(``Wed, 01 Jan 2025 00:00:05 +0000``) and ages relative to the cluster's
virtual ``now``.
"""

from __future__ import annotations

from contextvars import ContextVar
from datetime import datetime
from fractions import Fraction
from typing import Any, Callable, Mapping, Sequence

from ..api import errors
from ..api.humanize import format_label_selector, human_duration, parse_timestamp, translate_timestamp_since
from ..api.quantity import Quantity, parse_quantity
from .printing import tabwrite

__all__ = ["PrefixWriter", "describe", "describe_events", "event_field_selector", "rfc1123z",
           "describe_probe"]

Obj = Mapping[str, Any]
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


class PrefixWriter:
    """Upstream's ``PrefixWriter``: ``write(level, text)`` indents by two spaces per level;
    :meth:`flush` ends a tabwriter run (columns before and after are aligned separately)."""

    def __init__(self) -> None:
        self._done: list[str] = []
        self._buf: list[str] = []

    def write(self, level: int, text: str) -> None:
        self._buf.append("  " * level + text)

    def line(self, text: str = "") -> None:
        """``WriteLine``: text and a newline, no indent."""
        self._buf.append(text + "\n")

    def flush(self) -> None:
        self._done.append(tabwrite("".join(self._buf)))
        self._buf = []

    def text(self) -> str:
        self.flush()
        return "".join(self._done)

    def raw(self) -> str:
        """What was written, tabs left as they are (a PrefixWriter over a plain buffer, as
        ``kubectl rollout history --revision`` prints its pod template)."""
        return "".join(self._buf)


# ----------------------------------------------------------------------------- small helpers

def rfc1123z(ts: str | None) -> str:
    """Go's ``time.RFC1123Z`` for an RFC 3339 timestamp (``Wed, 01 Jan 2025 00:00:00 +0000``)."""
    t = parse_timestamp(ts)
    if t is None:
        return "Mon, 01 Jan 0001 00:00:00 +0000"
    return t.strftime("%a, %d %b %Y %H:%M:%S +0000")


def _q(v: Any) -> str:
    return str(parse_quantity(v)) if v not in (None, "") else "0"


def _meta(o: Obj) -> Obj:
    return o.get("metadata") or {}


def _name_namespace_labels_annotations(w: PrefixWriter, m: Mapping[str, Any]) -> None:
    """The four lines most describers start with (``Name:``, ``Namespace:``, ``Labels:``, ``Annotations:``)."""
    w.write(0, f"Name:\t{m.get('name')}\n")
    w.write(0, f"Namespace:\t{m.get('namespace')}\n")
    _labels_multiline(w, "Labels", m.get("labels"))
    _annotations_multiline(w, "Annotations", m.get("annotations"))


def _labels_multiline(w: PrefixWriter, title: str, labels: Mapping[str, str] | None,
                      initial: str = "") -> None:
    w.write(0, f"{initial}{title}:\t")
    keys = sorted(labels or {})
    if not keys:
        w.line("<none>")
        return
    for i, k in enumerate(keys):
        if i:
            w.write(0, initial + "\t")
        w.write(0, f"{k}={labels[k]}\n")


def _annotations_multiline(w: PrefixWriter, title: str, annotations: Mapping[str, str] | None) -> None:
    w.write(0, f"{title}:\t")
    keys = sorted(k for k in (annotations or {}) if k != LAST_APPLIED)
    if not keys:
        w.line("<none>")
        return
    for i, k in enumerate(keys):
        if i:
            w.write(0, "\t")
        value = annotations[k].removesuffix("\n")
        if len(value) + len(k) + 2 > 140 or "\n" in value:
            w.write(0, f"{k}:\n")
            for s in value.split("\n"):
                w.write(0, f"\t  {s[:138] + '...' if len(s) > 138 else s}\n")
        else:
            w.write(0, f"{k}: {value}\n")


def _tolerations_multiline(w: PrefixWriter, title: str, tolerations: Sequence[Obj] | None) -> None:
    w.write(0, f"{title}:\t")
    if not tolerations:
        w.line("<none>")
        return
    for i, t in enumerate(sorted(tolerations, key=lambda t: t.get("key") or "")):
        if i:
            w.write(0, "\t")
        text = t.get("key") or ""
        if t.get("value"):
            text += f"={t['value']}"
        if t.get("effect"):
            text += f":{t['effect']}"
        if t.get("operator") == "Exists" and not t.get("value"):
            text += " op=Exists" if (t.get("key") or t.get("effect")) else "op=Exists"
        if t.get("tolerationSeconds") is not None:
            text += f" for {t['tolerationSeconds']}s"
        w.write(0, text + "\n")


def _taint_string(t: Obj) -> str:
    v = f"={t['value']}" if t.get("value") else ""
    return f"{t.get('key', '')}{v}:{t.get('effect', '')}"


def _controller_of(o: Obj) -> str:
    for ref in _meta(o).get("ownerReferences") or ():
        if ref.get("controller"):
            return f"{ref.get('kind')}/{ref.get('name')}"
    return ""


def _int_or_string(v: Any) -> str:
    return "" if v is None else str(v)


def describe_probe(probe: Obj) -> str:
    """``DescribeProbe``: ``http-get http://:http/ delay=2s timeout=1s period=5s #success=1 #failure=3``."""
    attrs = (f"delay={probe.get('initialDelaySeconds', 0)}s timeout={probe.get('timeoutSeconds', 0)}s "
             f"period={probe.get('periodSeconds', 0)}s #success={probe.get('successThreshold', 0)} "
             f"#failure={probe.get('failureThreshold', 0)}")
    if "exec" in probe:
        return f"exec [{' '.join((probe['exec'] or {}).get('command') or [])}] {attrs}"
    if "httpGet" in probe:
        h = probe["httpGet"] or {}
        scheme = str(h.get("scheme") or "").lower()
        port = _int_or_string(h.get("port"))
        host = h.get("host") or ""
        hostport = f"{host}:{port}" if port else host
        url = f"{scheme}://{hostport}{h.get('path') or ''}" if scheme else f"//{hostport}{h.get('path') or ''}"
        return f"http-get {url} {attrs}"
    if "tcpSocket" in probe:
        t = probe["tcpSocket"] or {}
        return f"tcp-socket {t.get('host') or ''}:{_int_or_string(t.get('port'))} {attrs}"
    if "grpc" in probe:
        g = probe["grpc"] or {}
        return f"grpc <pod>:{g.get('port')} {g.get('service') or ''} {attrs}"
    return f"unknown {attrs}"


# ----------------------------------------------------------------------------- events

def event_field_selector(obj: Obj) -> str:
    """The field selector kubectl's ``searchEvents`` sends for ``obj`` (keys sorted, as
    ``fields.Set.AsSelector``); Pods leave the kind out, as kubectl's PodDescriber does."""
    m = _meta(obj)
    parts = {}
    if obj.get("kind") and obj.get("kind") != "Pod":
        parts["involvedObject.kind"] = obj["kind"]
    parts["involvedObject.name"] = m.get("name", "")
    if m.get("namespace"):
        parts["involvedObject.namespace"] = m["namespace"]
    if m.get("uid"):
        parts["involvedObject.uid"] = m["uid"]
    return ",".join(f"{k}={v}" for k, v in sorted(parts.items()))


def search_events(api: Any, obj: Obj) -> list[dict[str, Any]]:
    """Core Events about ``obj`` (in its namespace; ``default`` for cluster-scoped objects)."""
    ns = _meta(obj).get("namespace") or "default"
    try:
        return api.list("events", namespace=ns, field_selector=event_field_selector(obj))["items"]
    except errors.StatusError:
        return []


def _event_time(e: Obj, key: str) -> datetime | None:
    return parse_timestamp(e.get(key))


#: ``describe --show-events`` (kubectl's ``DescriberSettings.ShowEvents``): false leaves the
#: ``Events:`` section out of every description (:func:`describe` sets it for one call).
_SHOW_EVENTS: ContextVar[bool] = ContextVar("show_events", default=True)


def describe_events(events: Sequence[Obj], w: PrefixWriter, now: datetime) -> None:
    """``DescribeEvents``: ``Events:  <none>`` or the ``Type Reason Age From Message`` table,
    sorted by last timestamp, ``(x4 over 2m)`` for repeated events; nothing at all under
    ``--show-events=false``."""
    if not _SHOW_EVENTS.get():
        return
    if not events:
        w.write(0, "Events:\t<none>\n")
        return
    w.flush()

    def last(e: Obj) -> datetime:
        # kubectl's event.SortableEvents: by lastTimestamp alone, so the events.k8s.io ones (the
        # scheduler's: no lastTimestamp, an eventTime) come first, in the order listed
        t = _event_time(e, "lastTimestamp")
        return t or datetime.min.replace(tzinfo=now.tzinfo)

    w.write(0, "Events:\n  Type\tReason\tAge\tFrom\tMessage\n")
    w.write(1, "----\t------\t----\t----\t-------\n")
    for e in sorted(events, key=last):
        first = e.get("eventTime") or e.get("firstTimestamp")
        first_since = translate_timestamp_since(first, now) if first else "<unknown>"
        series = e.get("series")
        if series:
            interval = (f"{translate_timestamp_since(series.get('lastObservedTime'), now)} "
                        f"(x{series.get('count')} over {first_since})")
        elif (e.get("count") or 0) > 1:
            interval = f"{translate_timestamp_since(e.get('lastTimestamp'), now)} (x{e['count']} over {first_since})"
        else:
            interval = first_since
        source = (e.get("source") or {}).get("component") or e.get("reportingComponent") or ""
        w.write(1, f"{e.get('type', '')}\t{e.get('reason', '')}\t{interval}\t{source}\t"
                   f"{(e.get('message') or '').strip()}\n")


# ----------------------------------------------------------------------------- pods

def _ports(ports: Sequence[Obj], key: str) -> str:
    """A container's ``Port:`` / ``Host Port:`` value as kubectl 1.33's ``describeContainerPorts``
    (and its host-port twin): ``80/TCP, 443/TCP`` — the port names are not shown."""
    return ", ".join(f"{p.get(key, 0)}/{p.get('protocol', 'TCP')}" for p in ports)


def _state(w: PrefixWriter, title: str, state: Obj) -> None:
    if "running" in state:
        w.write(2, f"{title}:\tRunning\n")
        w.write(3, f"Started:\t{rfc1123z((state['running'] or {}).get('startedAt'))}\n")
    elif "terminated" in state:
        t = state["terminated"] or {}
        w.write(2, f"{title}:\tTerminated\n")
        if t.get("reason"):
            w.write(3, f"Reason:\t{t['reason']}\n")
        if t.get("message"):
            w.write(3, f"Message:\t{t['message']}\n")
        w.write(3, f"Exit Code:\t{t.get('exitCode', 0)}\n")
        if t.get("signal"):
            w.write(3, f"Signal:\t{t['signal']}\n")
        w.write(3, f"Started:\t{rfc1123z(t.get('startedAt'))}\n")
        w.write(3, f"Finished:\t{rfc1123z(t.get('finishedAt'))}\n")
    else:
        w.write(2, f"{title}:\tWaiting\n")
        reason = (state.get("waiting") or {}).get("reason")
        if reason:
            w.write(3, f"Reason:\t{reason}\n")


def _resources(w: PrefixWriter, res: Obj | None, level: int) -> None:
    res = res or {}
    for title in ("limits", "requests"):
        values = res.get(title) or {}
        if values:
            w.write(level, f"{title.capitalize()}:\n")
        for name in sorted(values):
            w.write(level + 1, f"{name}:\t{_q(values[name])}\n")


def _env_value(pod: Obj | None, e: Obj) -> str:
    ref = (e.get("valueFrom") or {}).get("fieldRef") or {}
    path = ref.get("fieldPath", "")
    if pod is None:
        return ""
    m, spec, st = _meta(pod), pod.get("spec") or {}, pod.get("status") or {}
    simple = {"metadata.name": m.get("name"), "metadata.namespace": m.get("namespace"),
              "metadata.uid": m.get("uid"), "spec.nodeName": spec.get("nodeName"),
              "spec.serviceAccountName": spec.get("serviceAccountName"), "status.hostIP": st.get("hostIP"),
              "status.podIP": st.get("podIP")}
    if path in simple:
        return simple[path] or ""
    for prefix, src in (("metadata.labels['", m.get("labels")), ("metadata.annotations['", m.get("annotations"))):
        if path.startswith(prefix) and path.endswith("']"):
            return (src or {}).get(path[len(prefix):-2], "")
    return ""


def _containers(w: PrefixWriter, label: str, containers: Sequence[Obj], statuses: Sequence[Obj] | None,
                pod: Obj | None, space: str) -> None:
    by_name = {s.get("name"): s for s in statuses or ()}
    w.write(0, f"{space}{label}:{'' if containers else ' <none>'}\n")
    for c in containers:
        st = by_name.get(c.get("name")) if statuses is not None else None
        ok = st is not None
        w.write(1, f"{' ' if space else ''}{c.get('name')}:\n")
        if ok:
            w.write(2, f"Container ID:\t{st.get('containerID', '')}\n")
        w.write(2, f"Image:\t{c.get('image', '')}\n")
        if ok:
            w.write(2, f"Image ID:\t{st.get('imageID', '')}\n")
        ports = c.get("ports") or []
        ps, hps = _ports(ports, "containerPort"), _ports(ports, "hostPort")
        w.write(2, f"Ports:\t{ps}\n" if "," in ps else f"Port:\t{ps or '<none>'}\n")
        w.write(2, f"Host Ports:\t{hps}\n" if "," in hps else f"Host Port:\t{hps or '<none>'}\n")
        for key, title in (("command", "Command"), ("args", "Args")):
            if c.get(key):
                w.write(2, f"{title}:\n")
                for item in c[key]:
                    for s in str(item).split("\n"):
                        w.write(3, f"{s}\n")
        if ok:
            _state(w, "State", st.get("state") or {})
            if (st.get("lastState") or {}).get("terminated"):
                _state(w, "Last State", st["lastState"])
            w.write(2, f"Ready:\t{'True' if st.get('ready') else 'False'}\n")
            w.write(2, f"Restart Count:\t{st.get('restartCount', 0)}\n")
        _resources(w, c.get("resources"), 2)
        for key, title in (("livenessProbe", "Liveness"), ("readinessProbe", "Readiness"),
                           ("startupProbe", "Startup")):
            if c.get(key):
                w.write(2, f"{title}:\t{describe_probe(c[key])}\n")
        if c.get("envFrom"):
            w.write(2, "Environment Variables from:\n")
            for e in c["envFrom"]:
                src, kind = (e.get("configMapRef"), "ConfigMap") if e.get("configMapRef") else (e.get("secretRef"), "Secret")
                src = src or {}
                opt = "true" if src.get("optional") else "false"
                with_prefix = f" with prefix '{e['prefix']}'" if e.get("prefix") else ""
                w.write(3, f"{src.get('name', '')}\t{kind}{with_prefix}\tOptional: {opt}\n")
        env = c.get("env") or []
        w.write(2, "Environment:" + ("" if env else "\t<none>") + "\n")
        for e in env:
            vf = e.get("valueFrom")
            if vf is None:
                for i, s in enumerate(str(e.get("value", "")).split("\n")):
                    w.write(3, f"{e.get('name')}:\t{s}\n" if i == 0 else f"\t{s}\n")
            elif vf.get("fieldRef"):
                fr = vf["fieldRef"]
                w.write(3, f"{e.get('name')}:\t{_env_value(pod, e)} ({fr.get('apiVersion', 'v1')}:{fr.get('fieldPath')})\n")
            elif vf.get("resourceFieldRef"):
                w.write(3, f"{e.get('name')}:\t ({vf['resourceFieldRef'].get('resource')})\n")
            elif vf.get("secretKeyRef"):
                r = vf["secretKeyRef"]
                w.write(3, f"{e.get('name')}:\t<set to the key '{r.get('key')}' in secret '{r.get('name')}'>\t"
                           f"Optional: {'true' if r.get('optional') else 'false'}\n")
            elif vf.get("configMapKeyRef"):
                r = vf["configMapKeyRef"]
                w.write(3, f"{e.get('name')}:\t<set to the key '{r.get('key')}' of config map '{r.get('name')}'>\t"
                           f"Optional: {'true' if r.get('optional') else 'false'}\n")
        mounts = c.get("volumeMounts") or []
        w.write(2, "Mounts:" + ("" if mounts else "\t<none>") + "\n")
        for m in sorted(mounts, key=lambda m: m.get("mountPath", "")):
            flags = ["ro" if m.get("readOnly") else "rw"]
            if m.get("subPath"):
                flags.append(f'path="{m["subPath"]}"')
            w.write(3, f"{m.get('mountPath')} from {m.get('name')} ({','.join(flags)})\n")


def _volumes(w: PrefixWriter, volumes: Sequence[Obj] | None, space: str) -> None:
    if not volumes:
        w.write(0, f"{space}Volumes:\t<none>\n")
        return
    w.write(0, f"{space}Volumes:\n")
    for v in volumes:
        w.write(1, f"{' ' if space else ''}{v.get('name')}:\n")
        if "emptyDir" in v:
            ed = v["emptyDir"] or {}
            size = ed.get("sizeLimit")
            w.write(2, "Type:\tEmptyDir (a temporary directory that shares a pod's lifetime)\n"
                       f"    Medium:\t{ed.get('medium', '')}\n    SizeLimit:\t{_q(size) if size else '<unset>'}\n")
        elif "hostPath" in v:
            hp = v["hostPath"] or {}
            w.write(2, "Type:\tHostPath (bare host directory volume)\n"
                       f"    Path:\t{hp.get('path', '')}\n    HostPathType:\t{hp.get('type') or '<none>'}\n")
        elif "configMap" in v:
            cm = v["configMap"] or {}
            w.write(2, "Type:\tConfigMap (a volume populated by a ConfigMap)\n"
                       f"    Name:\t{cm.get('name', '')}\n    Optional:\t{'true' if cm.get('optional') else 'false'}\n")
        elif "secret" in v:
            s = v["secret"] or {}
            w.write(2, "Type:\tSecret (a volume populated by a Secret)\n"
                       f"    SecretName:\t{s.get('secretName', '')}\n    Optional:\t{'true' if s.get('optional') else 'false'}\n")
        elif "persistentVolumeClaim" in v:
            p = v["persistentVolumeClaim"] or {}
            w.write(2, "Type:\tPersistentVolumeClaim (a reference to a PersistentVolumeClaim in the same namespace)\n"
                       f"    ClaimName:\t{p.get('claimName', '')}\n    ReadOnly:\t{'true' if p.get('readOnly') else 'false'}\n")
        elif "projected" in v:
            w.write(2, "Type:\tProjected (a volume that contains injected data from multiple sources)\n")
            for src in (v["projected"] or {}).get("sources") or ():
                if "secret" in src:
                    s = src["secret"] or {}
                    w.write(2, f"SecretName:\t{s.get('name', '')}\n    Optional:\t{'true' if s.get('optional') else 'false'}\n")
                elif "downwardAPI" in src:
                    w.write(2, "DownwardAPI:\ttrue\n")
                elif "configMap" in src:
                    cm = src["configMap"] or {}
                    w.write(2, f"ConfigMapName:\t{cm.get('name', '')}\n"
                               f"    Optional:\t{'true' if cm.get('optional') else 'false'}\n")
                elif "serviceAccountToken" in src:
                    w.write(2, f"TokenExpirationSeconds:\t{(src['serviceAccountToken'] or {}).get('expirationSeconds', 3600)}\n")
        elif "downwardAPI" in v:
            w.write(2, "Type:\tDownwardAPI (a volume populated by information about the pod)\n    Items:\n")
            for it in (v["downwardAPI"] or {}).get("items") or ():
                if it.get("fieldRef"):
                    w.write(3, f"{it['fieldRef'].get('fieldPath')} -> {it.get('path')}\n")
        else:
            w.write(1, "<unknown>\n")


def _qos(pod: Obj) -> str:
    status_qos = (pod.get("status") or {}).get("qosClass")
    if status_qos:
        return status_qos
    any_set = False
    containers = list((pod.get("spec") or {}).get("containers") or []) + list(
        (pod.get("spec") or {}).get("initContainers") or [])
    guaranteed = True
    for c in containers:
        r = (c.get("resources") or {})
        rq, lm = r.get("requests") or {}, r.get("limits") or {}
        for k in ("cpu", "memory"):
            if k in rq or k in lm:
                any_set = True
            if k not in lm or (k in rq and parse_quantity(rq[k]) != parse_quantity(lm[k])):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def describe_pod(api: Any, pod: Obj, now: datetime) -> str:
    """kubectl's PodDescriber."""
    m, spec, st = _meta(pod), pod.get("spec") or {}, pod.get("status") or {}
    w = PrefixWriter()
    w.write(0, f"Name:\t{m.get('name', '')}\n")
    w.write(0, f"Namespace:\t{m.get('namespace', '')}\n")
    if spec.get("priority") is not None:
        w.write(0, f"Priority:\t{spec['priority']}\n")
    if spec.get("priorityClassName"):
        w.write(0, f"Priority Class Name:\t{spec['priorityClassName']}\n")
    if spec.get("runtimeClassName"):
        w.write(0, f"Runtime Class Name:\t{spec['runtimeClassName']}\n")
    if spec.get("serviceAccountName"):
        w.write(0, f"Service Account:\t{spec['serviceAccountName']}\n")
    node = spec.get("nodeName")
    w.write(0, f"Node:\t{node}/{st.get('hostIP', '')}\n" if node else "Node:\t<none>\n")
    if st.get("startTime"):
        w.write(0, f"Start Time:\t{rfc1123z(st['startTime'])}\n")
    _labels_multiline(w, "Labels", m.get("labels"))
    _annotations_multiline(w, "Annotations", m.get("annotations"))
    if m.get("deletionTimestamp") and st.get("phase") not in ("Failed", "Succeeded"):
        w.write(0, f"Status:\tTerminating (lasts {translate_timestamp_since(m['deletionTimestamp'], now)})\n")
        w.write(0, f"Termination Grace Period:\t{m.get('deletionGracePeriodSeconds', 0)}s\n")
    else:
        w.write(0, f"Status:\t{st.get('phase', '')}\n")
    if st.get("reason"):
        w.write(0, f"Reason:\t{st['reason']}\n")
    if st.get("message"):
        w.write(0, f"Message:\t{st['message']}\n")
    w.write(0, f"IP:\t{st.get('podIP', '')}\n")
    ips = st.get("podIPs") or []
    if not ips:
        w.write(0, "IPs:\t<none>\n")
    else:
        w.write(0, "IPs:\n")
        for ip in ips:
            w.write(1, f"IP:\t{ip.get('ip', '')}\n")
    ctl = _controller_of(pod)
    if ctl:
        w.write(0, f"Controlled By:\t{ctl}\n")
    if st.get("nominatedNodeName"):
        w.write(0, f"NominatedNodeName:\t{st['nominatedNodeName']}\n")
    if spec.get("initContainers"):
        _containers(w, "Init Containers", spec["initContainers"], st.get("initContainerStatuses") or [], pod, "")
    _containers(w, "Containers", spec.get("containers") or [], st.get("containerStatuses") or [], pod, "")
    if spec.get("ephemeralContainers"):
        _containers(w, "Ephemeral Containers", spec["ephemeralContainers"],
                    st.get("ephemeralContainerStatuses") or [], pod, "")
    if spec.get("readinessGates"):
        w.write(0, "Readiness Gates:\n  Type\tStatus\n")
        for g in spec["readinessGates"]:
            status = next((c.get("status") for c in st.get("conditions") or () if c.get("type") == g.get("conditionType")),
                          "<none>")
            w.write(1, f"{g.get('conditionType')} \t{status} \n")
    if st.get("conditions"):
        w.write(0, "Conditions:\n  Type\tStatus\n")
        for c in st["conditions"]:
            w.write(1, f"{c.get('type')} \t{c.get('status')} \n")
    _volumes(w, spec.get("volumes"), "")
    w.write(0, f"QoS Class:\t{_qos(pod)}\n")
    _labels_multiline(w, "Node-Selectors", spec.get("nodeSelector"))
    _tolerations_multiline(w, "Tolerations", spec.get("tolerations"))
    tscs = spec.get("topologySpreadConstraints") or []
    for i, t in enumerate(sorted(tscs, key=lambda t: t.get("topologyKey", ""))):
        w.write(0, "Topology Spread Constraints:\t" if i == 0 else "\t")
        sel = f" for selector {format_label_selector(t['labelSelector'])}" if t.get("labelSelector") else ""
        w.write(0, f"{t.get('topologyKey')}:{t.get('whenUnsatisfiable')} when max skew {t.get('maxSkew')} "
                   f"is exceeded{sel}\n")
    describe_events(search_events(api, pod), w, now)
    return w.text()


def describe_pod_template(w: PrefixWriter, template: Obj | None) -> None:
    """``DescribePodTemplate`` (inside Deployment, ReplicaSet, Job, … describers)."""
    w.write(0, "Pod Template:\n")
    if template is None:
        w.write(1, "<unset>")
        return
    tm, spec = template.get("metadata") or {}, template.get("spec") or {}
    _labels_multiline(w, "  Labels", tm.get("labels"))
    if tm.get("annotations"):
        _annotations_multiline(w, "  Annotations", tm["annotations"])
    if spec.get("serviceAccountName"):
        w.write(1, f"Service Account:\t{spec['serviceAccountName']}\n")
    if spec.get("initContainers"):
        _containers(w, "Init Containers", spec["initContainers"], None, None, "  ")
    _containers(w, "Containers", spec.get("containers") or [], None, None, "  ")
    _volumes(w, spec.get("volumes"), "  ")
    if spec.get("priorityClassName"):
        w.write(1, f"Priority Class Name:\t{spec['priorityClassName']}\n")
    _labels_multiline(w, "  Node-Selectors", spec.get("nodeSelector"))
    _tolerations_multiline(w, "  Tolerations", spec.get("tolerations"))


# ----------------------------------------------------------------------------- workloads

def _selector(o: Obj) -> str:
    from ..api.selectors import selector_from_label_selector

    try:
        return str(selector_from_label_selector((o.get("spec") or {}).get("selector")))
    except ValueError as e:
        return f"Failed to get selector: {e}"


def _owned_pods_status(api: Any, o: Obj) -> tuple[int, int, int, int]:
    from ..api.selectors import selector_from_label_selector

    m = _meta(o)
    try:
        sel = str(selector_from_label_selector((o.get("spec") or {}).get("selector")))
    except ValueError:
        sel = ""
    pods = api.list("pods", namespace=m.get("namespace"), label_selector=sel or None)["items"]
    counts = {"Running": 0, "Pending": 0, "Succeeded": 0, "Failed": 0}
    for p in pods:
        ref = next((r for r in _meta(p).get("ownerReferences") or () if r.get("controller")), None)
        if ref is None or ref.get("uid") != m.get("uid"):
            continue
        phase = (p.get("status") or {}).get("phase")
        if phase in counts:
            counts[phase] += 1
    return counts["Running"], counts["Pending"], counts["Succeeded"], counts["Failed"]


def _conditions3(w: PrefixWriter, conds: Sequence[Obj] | None) -> None:
    if conds:
        w.write(0, "Conditions:\n  Type\tStatus\tReason\n")
        w.write(1, "----\t------\t------\n")
        for c in conds:
            w.write(1, f"{c.get('type')} \t{c.get('status')}\t{c.get('reason', '')}\n")


def _template_equal(a: Obj, b: Obj) -> bool:
    def strip(t: Obj) -> Obj:
        tm = dict(t.get("metadata") or {})
        labels = {k: v for k, v in (tm.get("labels") or {}).items() if k != "pod-template-hash"}
        tm["labels"] = labels
        return {**t, "metadata": tm}
    return strip(a) == strip(b)


def describe_deployment(api: Any, d: Obj, now: datetime) -> str:
    """kubectl's DeploymentDescriber (``Replicas: 2 desired | 2 updated | …``, old/new ReplicaSets)."""
    m, spec, st = _meta(d), d.get("spec") or {}, d.get("status") or {}
    w = PrefixWriter()
    w.write(0, f"Name:\t{m.get('name')}\n")
    w.write(0, f"Namespace:\t{m.get('namespace')}\n")
    w.write(0, f"CreationTimestamp:\t{rfc1123z(m.get('creationTimestamp'))}\n")
    _labels_multiline(w, "Labels", m.get("labels"))
    _annotations_multiline(w, "Annotations", m.get("annotations"))
    w.write(0, f"Selector:\t{_selector(d)}\n")
    w.write(0, f"Replicas:\t{spec.get('replicas', 1)} desired | {st.get('updatedReplicas', 0)} updated | "
               f"{st.get('replicas', 0)} total | {st.get('availableReplicas', 0)} available | "
               f"{st.get('unavailableReplicas', 0)} unavailable\n")
    strategy = spec.get("strategy") or {}
    w.write(0, f"StrategyType:\t{strategy.get('type', '')}\n")
    w.write(0, f"MinReadySeconds:\t{spec.get('minReadySeconds', 0)}\n")
    ru = strategy.get("rollingUpdate")
    if ru is not None:
        w.write(0, f"RollingUpdateStrategy:\t{_int_or_string(ru.get('maxUnavailable'))} max unavailable, "
                   f"{_int_or_string(ru.get('maxSurge'))} max surge\n")
    describe_pod_template(w, spec.get("template"))
    _conditions3(w, st.get("conditions"))
    old, new = [], []
    try:
        rss = api.list("replicasets", namespace=m.get("namespace"))["items"]
    except errors.StatusError:
        rss = []
    for rs in sorted(rss, key=lambda r: (_meta(r).get("creationTimestamp") or "", _meta(r).get("name"))):
        if not any(r.get("controller") and r.get("uid") == m.get("uid") for r in _meta(rs).get("ownerReferences") or ()):
            continue
        if not new and _template_equal((rs.get("spec") or {}).get("template") or {}, spec.get("template") or {}):
            new.append(rs)
        else:
            old.append(rs)

    def fmt(items: list[Obj]) -> str:
        return ", ".join(f"{_meta(r).get('name')} ({(r.get('status') or {}).get('replicas', 0)}/"
                         f"{(r.get('spec') or {}).get('replicas', 1)} replicas created)" for r in items) or "<none>"
    if old or new:
        w.write(0, f"OldReplicaSets:\t{fmt(old)}\n")
        w.write(0, f"NewReplicaSet:\t{fmt(new)}\n")
    describe_events(search_events(api, d), w, now)
    return w.text()


def describe_replicaset(api: Any, rs: Obj, now: datetime) -> str:
    """kubectl's ReplicaSetDescriber."""
    m, spec, st = _meta(rs), rs.get("spec") or {}, rs.get("status") or {}
    w = PrefixWriter()
    w.write(0, f"Name:\t{m.get('name')}\n")
    w.write(0, f"Namespace:\t{m.get('namespace')}\n")
    w.write(0, f"Selector:\t{format_label_selector(spec.get('selector'))}\n")
    _labels_multiline(w, "Labels", m.get("labels"))
    _annotations_multiline(w, "Annotations", m.get("annotations"))
    ctl = _controller_of(rs)
    if ctl:
        w.write(0, f"Controlled By:\t{ctl}\n")
    w.write(0, f"Replicas:\t{st.get('replicas', 0)} current / {spec.get('replicas', 1)} desired\n")
    r, wt, s, f = _owned_pods_status(api, rs)
    w.write(0, f"Pods Status:\t{r} Running / {wt} Waiting / {s} Succeeded / {f} Failed\n")
    describe_pod_template(w, spec.get("template"))
    _conditions3(w, st.get("conditions"))
    describe_events(search_events(api, rs), w, now)
    return w.text()


def describe_statefulset(api: Any, ss: Obj, now: datetime) -> str:
    """kubectl's StatefulSetDescriber."""
    m, spec, st = _meta(ss), ss.get("spec") or {}, ss.get("status") or {}
    w = PrefixWriter()
    w.write(0, f"Name:\t{m.get('name')}\n")
    w.write(0, f"Namespace:\t{m.get('namespace')}\n")
    w.write(0, f"CreationTimestamp:\t{rfc1123z(m.get('creationTimestamp'))}\n")
    w.write(0, f"Selector:\t{_selector(ss)}\n")
    _labels_multiline(w, "Labels", m.get("labels"))
    _annotations_multiline(w, "Annotations", m.get("annotations"))
    w.write(0, f"Replicas:\t{spec.get('replicas', 1)} desired | {st.get('replicas', 0)} total\n")
    us = spec.get("updateStrategy") or {}
    w.write(0, f"Update Strategy:\t{us.get('type', '')}\n")
    ru = us.get("rollingUpdate")
    if ru and ru.get("partition") is not None:
        w.write(1, f"Partition:\t{ru['partition']}\n")
        if ru.get("maxUnavailable") is not None:
            w.write(1, f"MaxUnavailable:\t{ru['maxUnavailable']}\n")
    r, wt, s, f = _owned_pods_status(api, ss)
    w.write(0, f"Pods Status:\t{r} Running / {wt} Waiting / {s} Succeeded / {f} Failed\n")
    describe_pod_template(w, spec.get("template"))
    vcts = spec.get("volumeClaimTemplates") or []
    if not vcts:
        w.write(0, "Volume Claims:\t<none>\n")
    else:
        w.write(0, "Volume Claims:\n")
        for pvc in vcts:
            pm, ps = pvc.get("metadata") or {}, pvc.get("spec") or {}
            w.write(1, f"Name:\t{pm.get('name')}\n")
            w.write(1, f"StorageClass:\t{ps.get('storageClassName', '')}\n")
            _labels_multiline(w, "Labels", pm.get("labels"), "  ")
            _labels_multiline(w, "Annotations", pm.get("annotations"), "  ")
            cap = ((ps.get("resources") or {}).get("requests") or {}).get("storage")
            w.write(1, f"Capacity:\t{_q(cap) if cap else '<default>'}\n")
            w.write(1, f"Access Modes:\t[{' '.join(ps.get('accessModes') or [])}]\n")
    describe_events(search_events(api, ss), w, now)
    return w.text()


def describe_daemonset(api: Any, ds: Obj, now: datetime) -> str:
    """kubectl's DaemonSetDescriber."""
    from ..api.humanize import format_labels

    m, spec, st = _meta(ds), ds.get("spec") or {}, ds.get("status") or {}
    w = PrefixWriter()
    w.write(0, f"Name:\t{m.get('name')}\n")
    w.write(0, f"Namespace:\t{m.get('namespace')}\n")
    w.write(0, f"Selector:\t{_selector(ds)}\n")
    node_sel = ((spec.get("template") or {}).get("spec") or {}).get("nodeSelector")
    w.write(0, f"Node-Selector:\t{format_labels(node_sel) if node_sel else '<none>'}\n")
    _labels_multiline(w, "Labels", m.get("labels"))
    _annotations_multiline(w, "Annotations", m.get("annotations"))
    w.write(0, f"Desired Number of Nodes Scheduled: {st.get('desiredNumberScheduled', 0)}\n")
    w.write(0, f"Current Number of Nodes Scheduled: {st.get('currentNumberScheduled', 0)}\n")
    w.write(0, f"Number of Nodes Scheduled with Up-to-date Pods: {st.get('updatedNumberScheduled', 0)}\n")
    w.write(0, f"Number of Nodes Scheduled with Available Pods: {st.get('numberAvailable', 0)}\n")
    w.write(0, f"Number of Nodes Misscheduled: {st.get('numberMisscheduled', 0)}\n")
    r, wt, s, f = _owned_pods_status(api, ds)
    w.write(0, f"Pods Status:\t{r} Running / {wt} Waiting / {s} Succeeded / {f} Failed\n")
    describe_pod_template(w, spec.get("template"))
    describe_events(search_events(api, ds), w, now)
    return w.text()


def describe_job(api: Any, job: Obj, now: datetime) -> str:
    """kubectl's JobDescriber."""
    m, spec, st = _meta(job), job.get("spec") or {}, job.get("status") or {}
    w = PrefixWriter()
    w.write(0, f"Name:\t{m.get('name')}\n")
    w.write(0, f"Namespace:\t{m.get('namespace')}\n")
    w.write(0, f"Selector:\t{_selector(job)}\n")
    _labels_multiline(w, "Labels", m.get("labels"))
    _annotations_multiline(w, "Annotations", m.get("annotations"))
    ctl = _controller_of(job)
    if ctl:
        w.write(0, f"Controlled By:\t{ctl}\n")
    if spec.get("parallelism") is not None:
        w.write(0, f"Parallelism:\t{spec['parallelism']}\n")
    w.write(0, f"Completions:\t{spec['completions'] if spec.get('completions') is not None else '<unset>'}\n")
    if spec.get("completionMode"):
        w.write(0, f"Completion Mode:\t{spec['completionMode']}\n")
    if spec.get("suspend") is not None:
        w.write(0, f"Suspend:\t{'true' if spec['suspend'] else 'false'}\n")
    if spec.get("backoffLimit") is not None:
        w.write(0, f"Backoff Limit:\t{spec['backoffLimit']}\n")
    if spec.get("ttlSecondsAfterFinished") is not None:
        w.write(0, f"TTL Seconds After Finished:\t{spec['ttlSecondsAfterFinished']}\n")
    if st.get("startTime"):
        w.write(0, f"Start Time:\t{rfc1123z(st['startTime'])}\n")
    if st.get("completionTime"):
        w.write(0, f"Completed At:\t{rfc1123z(st['completionTime'])}\n")
    if st.get("startTime") and st.get("completionTime"):
        secs = (parse_timestamp(st["completionTime"]) - parse_timestamp(st["startTime"])).total_seconds()
        w.write(0, f"Duration:\t{human_duration(secs)}\n")
    if spec.get("activeDeadlineSeconds") is not None:
        w.write(0, f"Active Deadline Seconds:\t{spec['activeDeadlineSeconds']}s\n")
    a, s, f = st.get("active", 0), st.get("succeeded", 0), st.get("failed", 0)
    if st.get("ready") is None:
        w.write(0, f"Pods Statuses:\t{a} Active / {s} Succeeded / {f} Failed\n")
    else:
        w.write(0, f"Pods Statuses:\t{a} Active ({st['ready']} Ready) / {s} Succeeded / {f} Failed\n")
    if spec.get("completionMode") == "Indexed":
        idx = st.get("completedIndexes") or ""
        w.write(0, f"Completed Indexes:\t{idx or '<none>'}\n")
    describe_pod_template(w, spec.get("template"))
    describe_events(search_events(api, job), w, now)
    return w.text()


def describe_cronjob(api: Any, cj: Obj, now: datetime) -> str:
    """kubectl's CronJobDescriber.

    As kubectl's (1.33), it prints no ``Time Zone:`` line, whether or not
    ``spec.timeZone`` is set.
    """
    m, spec, st = _meta(cj), cj.get("spec") or {}, cj.get("status") or {}
    w = PrefixWriter()
    _name_namespace_labels_annotations(w, m)
    w.write(0, f"Schedule:\t{spec.get('schedule', '')}\n")
    w.write(0, f"Concurrency Policy:\t{spec.get('concurrencyPolicy', '')}\n")
    sus = spec.get("suspend")
    w.write(0, f"Suspend:\t{'<unset>' if sus is None else ('True' if sus else 'False')}\n")
    for key, title in (("successfulJobsHistoryLimit", "Successful Job History Limit"),
                       ("failedJobsHistoryLimit", "Failed Job History Limit")):
        w.write(0, f"{title}:\t{spec[key] if spec.get(key) is not None else '<unset>'}\n")
    sd = spec.get("startingDeadlineSeconds")
    w.write(0, f"Starting Deadline Seconds:\t{f'{sd}s' if sd is not None else '<unset>'}\n")
    jt = (spec.get("jobTemplate") or {}).get("spec") or {}
    w.write(0, f"Selector:\t{_selector({'spec': jt}) if jt.get('selector') else '<unset>'}\n")
    for key, title in (("parallelism", "Parallelism"), ("completions", "Completions")):
        w.write(0, f"{title}:\t{jt[key] if jt.get(key) is not None else '<unset>'}\n")
    if jt.get("activeDeadlineSeconds") is not None:
        w.write(0, f"Active Deadline Seconds:\t{jt['activeDeadlineSeconds']}s\n")
    describe_pod_template(w, jt.get("template"))
    lst = st.get("lastScheduleTime")
    w.write(0, f"Last Schedule Time:\t{rfc1123z(lst) if lst else '<unset>'}\n")
    active = st.get("active") or []
    w.write(0, "Active Jobs:\t")
    w.line(", ".join(a.get("name", "") for a in active) if active else "<none>")
    describe_events(search_events(api, cj), w, now)
    return w.text()


# ----------------------------------------------------------------------------- services, nodes, misc

def _format_endpoint_slices(slices: Sequence[Obj], port_name: str | None) -> str:
    """kubectl's ``formatEndpointSlices`` (1.33): the ready endpoints of the Service's slices,
    in the slices' order (by name, as listed) and each slice's own order, as ``ip:port`` for the
    slice ports named ``port_name`` (``None``: every port), the first three, then
    `` + N more...``; ``<none>`` when there is no slice at all, empty text when no endpoint is
    ready. A slice without ports lists bare addresses (a headless Service without ports).

    As kubectl's, "more" is decided before an endpoint's readiness is checked, so a fourth
    endpoint that is not ready still gives `` + 0 more...``.
    """
    if not slices:
        return "<none>"
    out: list[str] = []
    more = False
    count = 0
    for sl in slices:
        endpoints = sl.get("endpoints") or []
        ports = sl.get("ports") or []
        if not ports:
            targets = [(e, None) for e in endpoints]
        else:
            targets = [(e, p.get("port")) for p in ports
                       if port_name is None or (p.get("name") or "") == port_name for e in endpoints]
        for e, port in targets:
            if len(out) == 3:
                more = True
            ready = (e.get("conditions") or {}).get("ready")
            if ready is not None and not ready:
                continue
            if not more:
                addr = (e.get("addresses") or [""])[0]
                if port is None:
                    out.append(addr)
                else:
                    out.append(f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}")
            count += 1
    text = ",".join(out)
    if more:
        return f"{text} + {count - 3} more..."
    return text


def describe_service(api: Any, svc: Obj, now: datetime) -> str:
    """kubectl's ServiceDescriber (1.33): each port's ``Port:``/``TargetPort:`` (``<unset>`` for
    an unnamed port; no line for ``appProtocol``), then ``Endpoints:`` from the Service's EndpointSlices (those labelled
    ``kubernetes.io/service-name=<name>``; see :func:`_format_endpoint_slices`)."""
    from ..api.humanize import format_labels

    m, spec, st = _meta(svc), svc.get("spec") or {}, svc.get("status") or {}
    try:
        slices = api.list("endpointslices", namespace=m.get("namespace"),
                          label_selector=f"kubernetes.io/service-name={m.get('name')}")["items"]
    except errors.StatusError:
        slices = []
    w = PrefixWriter()
    _name_namespace_labels_annotations(w, m)
    sel = spec.get("selector")
    w.write(0, f"Selector:\t{format_labels(sel) if sel else '<none>'}\n")
    w.write(0, f"Type:\t{spec.get('type', '')}\n")
    if spec.get("ipFamilyPolicy"):
        w.write(0, f"IP Family Policy:\t{spec['ipFamilyPolicy']}\n")
    w.write(0, f"IP Families:\t{','.join(spec.get('ipFamilies') or []) or '<none>'}\n")
    w.write(0, f"IP:\t{spec.get('clusterIP', '')}\n")
    w.write(0, f"IPs:\t{','.join(spec.get('clusterIPs') or []) or '<none>'}\n")
    if spec.get("externalIPs"):
        w.write(0, f"External IPs:\t{','.join(spec['externalIPs'])}\n")
    if spec.get("loadBalancerIP"):
        w.write(0, f"Desired LoadBalancer IP:\t{spec['loadBalancerIP']}\n")
    if spec.get("externalName"):
        w.write(0, f"External Name:\t{spec['externalName']}\n")
    ingress = ((st.get("loadBalancer") or {}).get("ingress")) or []
    if ingress:
        w.write(0, f"LoadBalancer Ingress:\t{', '.join(i.get('ip') or i.get('hostname', '') for i in ingress)}\n")
    for p in spec.get("ports") or ():
        name = p.get("name") or "<unset>"
        proto = p.get("protocol", "TCP")
        w.write(0, f"Port:\t{name}\t{p.get('port')}/{proto}\n")
        w.write(0, f"TargetPort:\t{p.get('targetPort', p.get('port'))}/{proto}\n")
        if p.get("nodePort"):
            w.write(0, f"NodePort:\t{name}\t{p['nodePort']}/{proto}\n")
        w.write(0, f"Endpoints:\t{_format_endpoint_slices(slices, p.get('name') or '')}\n")
    w.write(0, f"Session Affinity:\t{spec.get('sessionAffinity', '')}\n")
    if spec.get("externalTrafficPolicy"):
        w.write(0, f"External Traffic Policy:\t{spec['externalTrafficPolicy']}\n")
    if spec.get("internalTrafficPolicy"):
        w.write(0, f"Internal Traffic Policy:\t{spec['internalTrafficPolicy']}\n")
    if spec.get("healthCheckNodePort"):
        w.write(0, f"HealthCheck NodePort:\t{spec['healthCheckNodePort']}\n")
    describe_events(search_events(api, svc), w, now)
    return w.text()


def _sum_resources(pods: Sequence[Obj], kind: str) -> dict[str, Quantity]:
    """``resourcehelper.PodRequests``/``PodLimits`` summed over ``pods`` (as Quantities)."""
    total: dict[str, Quantity] = {}
    for pod in pods:
        spec = pod.get("spec") or {}
        per: dict[str, Quantity] = {}
        for c in spec.get("containers") or ():
            for r, v in ((c.get("resources") or {}).get(kind) or {}).items():
                q = parse_quantity(v)
                per[r] = per[r] + q if r in per else q
        for c in spec.get("initContainers") or ():
            for r, v in ((c.get("resources") or {}).get(kind) or {}).items():
                q = parse_quantity(v)
                if r not in per or q > per[r]:
                    per[r] = q
        for r, q in per.items():
            total[r] = total[r] + q if r in total else q
    return total


def _pct(q: Quantity | None, alloc: Any, cpu: bool) -> int:
    if q is None or alloc in (None, ""):
        return 0
    a = parse_quantity(alloc)
    denom = a.milli_value() if cpu else a.int_value()
    if denom == 0:
        return 0
    return int((q.milli_value() if cpu else q.int_value()) / denom * 100)


def describe_node(api: Any, node: Obj, now: datetime) -> str:
    """kubectl's NodeDescriber (conditions, addresses, capacity, non-terminated pods, allocated resources)."""
    from ..api.tables import _node_roles

    m, spec, st = _meta(node), node.get("spec") or {}, node.get("status") or {}
    name = m.get("name", "")
    w = PrefixWriter()
    w.write(0, f"Name:\t{name}\n")
    roles = _node_roles(node)
    w.write(0, f"Roles:\t{','.join(roles) if roles else '<none>'}\n")
    _labels_multiline(w, "Labels", m.get("labels"))
    _annotations_multiline(w, "Annotations", m.get("annotations"))
    w.write(0, f"CreationTimestamp:\t{rfc1123z(m.get('creationTimestamp'))}\n")
    taints = sorted(spec.get("taints") or [], key=lambda t: f"{t.get('effect', '')},{t.get('key', '')}")
    w.write(0, "Taints:\t")
    if not taints:
        w.line("<none>")
    for i, t in enumerate(taints):
        w.write(0, ("\t" if i else "") + _taint_string(t) + "\n")
    w.write(0, f"Unschedulable:\t{'true' if spec.get('unschedulable') else 'false'}\n")
    try:
        lease = api.get("leases", name, namespace="kube-node-lease")
        ls = lease.get("spec") or {}
        w.write(0, "Lease:\n")
        w.write(1, f"HolderIdentity:\t{ls.get('holderIdentity') or '<unset>'}\n")
        w.write(1, f"AcquireTime:\t{rfc1123z(ls['acquireTime']) if ls.get('acquireTime') else '<unset>'}\n")
        w.write(1, f"RenewTime:\t{rfc1123z(ls['renewTime']) if ls.get('renewTime') else '<unset>'}\n")
    except errors.StatusError as e:
        w.write(0, f"Lease:\tFailed to get lease: {e.message}\n")
    if st.get("conditions"):
        w.write(0, "Conditions:\n  Type\tStatus\tLastHeartbeatTime\tLastTransitionTime\tReason\tMessage\n")
        w.write(1, "----\t------\t-----------------\t------------------\t------\t-------\n")
        for c in st["conditions"]:
            w.write(1, f"{c.get('type')} \t{c.get('status')} \t{rfc1123z(c.get('lastHeartbeatTime'))} \t"
                       f"{rfc1123z(c.get('lastTransitionTime'))} \t{c.get('reason', '')} \t{c.get('message', '')}\n")
    w.write(0, "Addresses:\n")
    for a in st.get("addresses") or ():
        w.write(1, f"{a.get('type')}:\t{a.get('address')}\n")
    for key, title in (("capacity", "Capacity"), ("allocatable", "Allocatable")):
        if st.get(key):
            w.write(0, f"{title}:\n")
            for r in sorted(st[key]):
                w.write(0, f"  {r}:\t{_q(st[key][r])}\n")
    info = st.get("nodeInfo") or {}
    w.write(0, "System Info:\n")
    for k, title in (("machineID", "Machine ID"), ("systemUUID", "System UUID"), ("bootID", "Boot ID"),
                     ("kernelVersion", "Kernel Version"), ("osImage", "OS Image"),
                     ("operatingSystem", "Operating System"), ("architecture", "Architecture"),
                     ("containerRuntimeVersion", "Container Runtime Version"),
                     ("kubeletVersion", "Kubelet Version"), ("kubeProxyVersion", "Kube-Proxy Version")):
        # kubectl prints every line, ``Kube-Proxy Version:`` too when the field is empty
        w.write(0, f"  {title}:\t{info.get(k, '')}\n")
    if spec.get("podCIDR"):
        w.write(0, f"PodCIDR:\t{spec['podCIDR']}\n")
    if spec.get("podCIDRs"):
        w.write(0, f"PodCIDRs:\t{','.join(spec['podCIDRs'])}\n")
    if spec.get("providerID"):
        w.write(0, f"ProviderID:\t{spec['providerID']}\n")
    pods = [p for p in api.list("pods", field_selector=f"spec.nodeName={name}")["items"]
            if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    alloc = st.get("allocatable") or st.get("capacity") or {}
    w.write(0, f"Non-terminated Pods:\t({len(pods)} in total)\n")
    w.write(1, "Namespace\tName\t\tCPU Requests\tCPU Limits\tMemory Requests\tMemory Limits\tAge\n")
    w.write(1, "---------\t----\t\t------------\t----------\t---------------\t-------------\t---\n")
    zero = parse_quantity("0")
    for p in pods:
        req, lim = _sum_resources([p], "requests"), _sum_resources([p], "limits")
        cr, cl = req.get("cpu", zero), lim.get("cpu", zero)
        mr, ml = req.get("memory", zero), lim.get("memory", zero)
        pm = _meta(p)
        w.write(1, f"{pm.get('namespace')}\t{pm.get('name')}\t\t{cr} ({_pct(cr, alloc.get('cpu'), True)}%)\t"
                   f"{cl} ({_pct(cl, alloc.get('cpu'), True)}%)\t{mr} ({_pct(mr, alloc.get('memory'), False)}%)\t"
                   f"{ml} ({_pct(ml, alloc.get('memory'), False)}%)\t"
                   f"{translate_timestamp_since(pm.get('creationTimestamp'), now)}\n")
    w.write(0, "Allocated resources:\n  (Total limits may be over 100 percent, i.e., overcommitted.)\n")
    w.write(1, "Resource\tRequests\tLimits\n")
    w.write(1, "--------\t--------\t------\n")
    reqs, lims = _sum_resources(pods, "requests"), _sum_resources(pods, "limits")
    for r, cpu in (("cpu", True), ("memory", False), ("ephemeral-storage", False)):
        rq, lm = reqs.get(r, zero), lims.get(r, zero)
        w.write(1, f"{r}\t{rq} ({_pct(rq, alloc.get(r), cpu)}%)\t{lm} ({_pct(lm, alloc.get(r), cpu)}%)\n")
    for r in sorted(alloc):
        if r.startswith("hugepages-"):
            rq, lm = reqs.get(r, zero), lims.get(r, zero)
            w.write(1, f"{r}\t{rq} ({_pct(rq, alloc.get(r), False)}%)\t{lm} ({_pct(lm, alloc.get(r), False)}%)\n")
    events = search_events(api, node)
    by_name = search_events(api, {**node, "metadata": {**m, "uid": name}})
    describe_events(events + by_name, w, now)
    return w.text()


def describe_namespace(api: Any, ns: Obj, now: datetime) -> str:
    """kubectl's NamespaceDescriber (status, quotas, limit ranges)."""
    m = _meta(ns)
    name = m.get("name")
    w = PrefixWriter()
    w.write(0, f"Name:\t{name}\n")
    _labels_multiline(w, "Labels", m.get("labels"))
    _annotations_multiline(w, "Annotations", m.get("annotations"))
    w.write(0, f"Status:\t{(ns.get('status') or {}).get('phase', '')}\n")
    quotas = api.list("resourcequotas", namespace=name)["items"]
    if not quotas:
        w.write(0, "\nNo resource quota.\n")
    else:
        w.write(0, "\nResource Quotas\n")
        for q in sorted(quotas, key=lambda q: _meta(q).get("name", "")):
            w.write(1, f"Name:\t{_meta(q).get('name')}\n")
            _quota_scopes(w, 1, q, "* ")
            w.write(1, "Resource\tUsed\tHard\n")
            w.write(1, "--------\t---\t---\n")
            hard, used = (q.get("status") or {}).get("hard") or {}, (q.get("status") or {}).get("used") or {}
            for r in sorted(hard):
                w.write(1, f"{r}\t{_q(used.get(r))}\t{_q(hard[r])}\n")
    limits = api.list("limitranges", namespace=name)["items"]
    if not limits:
        w.write(0, "\nNo LimitRange resource.\n")
    else:
        w.write(0, "\nResource Limits\n")
        w.write(1, "Type\tResource\tMin\tMax\tDefault Request\tDefault Limit\tMax Limit/Request Ratio\n")
        w.write(1, "----\t--------\t---\t---\t---------------\t-------------\t-----------------------\n")
        for lr in limits:
            for item in (lr.get("spec") or {}).get("limits") or ():
                keys = sorted(set().union(*[set((item.get(k) or {})) for k in
                                            ("min", "max", "defaultRequest", "default", "maxLimitRequestRatio")]))
                for r in keys:
                    cells = [str((item.get(k) or {}).get(r, "-")) for k in
                             ("min", "max", "defaultRequest", "default", "maxLimitRequestRatio")]
                    w.write(1, f"{item.get('type')}\t{r}\t" + "\t".join(cells) + "\n")
    return w.text()


_QUOTA_SCOPE_HELP = {
    "Terminating": "Matches all pods that have an active deadline. These pods have a limited lifespan on a node "
                   "before being actively terminated by the system.",
    "NotTerminating": "Matches all pods that do not have an active deadline. These pods usually include long "
                      "running pods whose container command is not expected to terminate.",
    "BestEffort": "Matches all pods that do not have resource requirements set. These pods have a best effort "
                  "quality of service.",
    "NotBestEffort": "Matches all pods that have at least one resource requirement set. These pods have a "
                     "burstable or guaranteed quality of service.",
}


def _quota_scopes(w: PrefixWriter, level: int, quota: Obj, bullet: str) -> None:
    """A quota's ``Scopes:`` line (sorted) and each scope's help text, as kubectl's describers."""
    scopes = sorted(str(s) for s in (quota.get("spec") or {}).get("scopes") or ())
    if not scopes:
        return
    w.write(level, f"Scopes:\t{', '.join(scopes)}\n")
    for scope in scopes:
        if scope in _QUOTA_SCOPE_HELP:
            w.write(level, f"{bullet}{_QUOTA_SCOPE_HELP[scope]}\n")


def describe_resourcequota(api: Any, quota: Obj, now: datetime) -> str:
    """kubectl's ResourceQuotaDescriber: scopes, then each hard resource (sorted) with its use,
    the use printed in the hard amount's format (``0`` against ``1Gi``, as ``Value()`` rounds)."""
    m = _meta(quota)
    w = PrefixWriter()
    w.write(0, f"Name:\t{m.get('name')}\n")
    w.write(0, f"Namespace:\t{m.get('namespace')}\n")
    _quota_scopes(w, 0, quota, " * ")
    w.write(0, "Resource\tUsed\tHard\n")
    w.write(0, "--------\t----\t----\n")
    status = quota.get("status") or {}
    hard, used = status.get("hard") or {}, status.get("used") or {}
    for r in sorted(hard):
        h = parse_quantity(hard[r])
        u = parse_quantity(used.get(r) or "0")
        if u.format != h.format:
            u = Quantity(Fraction(u.int_value()), h.format)
        w.write(0, f"{r}\t{u}\t{h}\n")
    return w.text()


def describe_configmap(api: Any, cm: Obj, now: datetime) -> str:
    """kubectl's ConfigMapDescriber (``Data`` / ``BinaryData`` sections)."""
    m = _meta(cm)
    w = PrefixWriter()
    _name_namespace_labels_annotations(w, m)
    w.write(0, "\nData\n====\n")
    data = cm.get("data") or {}
    for k in sorted(data):
        w.write(0, f"{k}:\n----\n")
        w.write(0, f"{data[k]}\n")
        w.write(0, "\n")
    w.write(0, "\nBinaryData\n====\n")
    binary = cm.get("binaryData") or {}
    for k in sorted(binary):
        import base64

        w.write(0, f"{k}: {len(base64.b64decode(binary[k]))} bytes\n")
    w.write(0, "\n")
    describe_events(search_events(api, cm), w, now)
    return w.text()


def _secret_data_len(value: Any) -> int:
    """The byte length of one of a Secret's ``data`` values (base64 on the wire)."""
    import base64
    import binascii

    try:
        return len(base64.b64decode(value or "", validate=False))
    except (binascii.Error, ValueError, TypeError):
        return len(str(value).encode())


def describe_secret(api: Any, secret: Obj, now: datetime) -> str:
    """kubectl's SecretDescriber: metadata, ``Type:``, then one ``key:  N bytes`` line per ``data`` key
    (sorted), never a value.

    kubectl itself prints the ``token`` of a ``kubernetes.io/service-account-token`` Secret in clear; the
    emulator prints its size like every other key (no value of a Secret ever reaches the terminal). Like
    kubectl, no ``Events:`` section.
    """
    m = _meta(secret)
    w = PrefixWriter()
    _name_namespace_labels_annotations(w, m)
    w.write(0, f"\nType:\t{secret.get('type') or ''}\n")
    w.write(0, "\nData\n====\n")
    data = secret.get("data") or {}
    for k in sorted(data):
        w.write(0, f"{k}:\t{_secret_data_len(data[k])} bytes\n")
    return w.text()


_SA_NAME_KEY = "kubernetes.io/service-account.name"
_SA_UID_KEY = "kubernetes.io/service-account.uid"


def describe_serviceaccount(api: Any, sa: Obj, now: datetime) -> str:
    """kubectl's ServiceAccountDescriber: ``Image pull secrets:``, ``Mountable secrets:`` and ``Tokens:``
    (the namespace's ``kubernetes.io/service-account-token`` Secrets annotated with this account's name
    and UID), a referenced Secret that does not exist marked ``(not found)``; then the events."""
    m = _meta(sa)
    tokens: list[str] = []
    missing: set[str] = set()
    try:
        secrets = api.list("secrets", namespace=m.get("namespace"))["items"]
    except errors.StatusError:  # kubectl tolerates it: no tokens, nothing marked missing
        secrets = None
    if secrets is not None:
        existing = set()
        for s in secrets:
            sm = _meta(s)
            ann = sm.get("annotations") or {}
            if (s.get("type") == "kubernetes.io/service-account-token" and ann.get(_SA_NAME_KEY) == m.get("name")
                    and ann.get(_SA_UID_KEY) == m.get("uid", "")):
                tokens.append(sm.get("name", ""))
            existing.add(sm.get("name"))
        for ref in list(sa.get("secrets") or ()) + list(sa.get("imagePullSecrets") or ()):
            if ref.get("name") not in existing:
                missing.add(ref.get("name"))
    w = PrefixWriter()
    _name_namespace_labels_annotations(w, m)
    empty = " " * 19
    sections = (("Image pull secrets:", [r.get("name", "") for r in sa.get("imagePullSecrets") or ()]),
                ("Mountable secrets: ", [r.get("name", "") for r in sa.get("secrets") or ()]),
                ("Tokens:            ", tokens))
    for header, names in sections:
        if not names:
            w.write(0, f"{header}\t<none>\n")
            continue
        prefix = header
        for name in names:
            w.write(0, f"{prefix}\t{name}{' (not found)' if name in missing else ''}\n")
            prefix = empty
    describe_events(search_events(api, sa), w, now)
    return w.text()


def describe_endpoints(api: Any, ep: Obj, now: datetime) -> str:
    """kubectl's EndpointsDescriber: per subset ``Addresses:``, ``NotReadyAddresses:`` (IPs, ``<none>``)
    and a ``Name Port Protocol`` table (``<unset>`` for an unnamed port), a blank line after each."""
    m = _meta(ep)
    w = PrefixWriter()
    _name_namespace_labels_annotations(w, m)
    w.write(0, "Subsets:\n")
    for subset in ep.get("subsets") or ():
        ready = ",".join(a.get("ip", "") for a in subset.get("addresses") or ())
        w.write(1, f"Addresses:\t{ready or '<none>'}\n")
        not_ready = ",".join(a.get("ip", "") for a in subset.get("notReadyAddresses") or ())
        w.write(1, f"NotReadyAddresses:\t{not_ready or '<none>'}\n")
        ports = subset.get("ports") or []
        if ports:
            w.write(1, "Ports:\n")
            w.write(2, "Name\tPort\tProtocol\n")
            w.write(2, "----\t----\t--------\n")
            for p in ports:
                w.write(2, f"{p.get('name') or '<unset>'}\t{p.get('port', 0)}\t{p.get('protocol', 'TCP')}\n")
        w.write(0, "\n")
    describe_events(search_events(api, ep), w, now)
    return w.text()


def describe_endpointslice(api: Any, eps: Obj, now: datetime) -> str:
    """kubectl's EndpointSliceDescriber (discovery.k8s.io/v1): ``AddressType:``, the ports table
    (``Ports: <unset>`` without ports), then per endpoint its addresses, ``Conditions: Ready``,
    ``Hostname``, ``TargetRef`` (when set), ``NodeName`` and ``Zone`` (``<unset>`` when absent)."""
    m = _meta(eps)
    w = PrefixWriter()
    _name_namespace_labels_annotations(w, m)
    w.write(0, f"AddressType:\t{eps.get('addressType', '')}\n")
    ports = eps.get("ports") or []
    if not ports:
        w.write(0, "Ports: <unset>\n")
    else:
        w.write(0, "Ports:\n")
        w.write(1, "Name\tPort\tProtocol\n")
        w.write(1, "----\t----\t--------\n")
        for p in ports:
            port = p.get("port")
            w.write(1, f"{p.get('name') or '<unset>'}\t{'<unset>' if port is None else port}\t"
                       f"{p.get('protocol', 'TCP')}\n")
    endpoints = eps.get("endpoints") or []
    if not endpoints:
        w.write(0, "Endpoints: <none>\n")
    else:
        w.write(0, "Endpoints:\n")
        for e in endpoints:
            w.write(1, f"- Addresses:\t{', '.join(e.get('addresses') or ()) or '<none>'}\n")
            w.write(2, "Conditions:\n")
            ready = (e.get("conditions") or {}).get("ready")
            w.write(3, f"Ready:\t{'<unset>' if ready is None else 'true' if ready else 'false'}\n")
            hostname = e.get("hostname")
            w.write(2, f"Hostname:\t{'<unset>' if hostname is None else hostname}\n")
            ref = e.get("targetRef")
            if ref is not None:
                w.write(2, f"TargetRef:\t{ref.get('kind', '')}/{ref.get('name', '')}\n")
            node = e.get("nodeName")
            w.write(2, f"NodeName:\t{'<unset>' if node is None else node}\n")
            zone = e.get("zone")
            w.write(2, f"Zone:\t{'<unset>' if zone is None else zone}\n")
    describe_events(search_events(api, eps), w, now)
    return w.text()


_ACCESS_MODE_SHORT = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"),
                      ("ReadWriteOncePod", "RWOP"))
_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
_MAX_ANNOTATION_LEN = 140


def _access_modes_string(modes: Sequence[str] | None) -> str:
    """``storageutil.GetAccessModesAsString``: RWO, ROX, RWX, RWOP, in that order, comma-separated."""
    have = set(modes or ())
    return ",".join(short for mode, short in _ACCESS_MODE_SHORT if mode in have)


def _storage_class(o: Obj) -> str:
    """``GetPersistentVolume(Claim)Class``: the beta annotation, else ``spec.storageClassName``."""
    ann = _meta(o).get("annotations") or {}
    if _BETA_STORAGE_CLASS in ann:
        return ann[_BETA_STORAGE_CLASS] or ""
    return (o.get("spec") or {}).get("storageClassName") or ""


def _go_list(items: Sequence[str] | None) -> str:
    """Go's ``%v`` of a ``[]string``: ``[a b]`` (``[]`` when empty)."""
    return "[" + " ".join(items or ()) + "]"


def _go_bool(v: Any) -> str:
    return "true" if v else "false"


def _status_or_terminating(o: Obj, phase: Any, now: datetime) -> str:
    ts = _meta(o).get("deletionTimestamp")
    if ts:
        return f"Status:\tTerminating (lasts {translate_timestamp_since(ts, now)})\n"
    return f"Status:\t{phase or ''}\n"


def _volume_node_affinity(w: PrefixWriter, affinity: Obj | None) -> None:
    """``printVolumeNodeAffinity``: ``Required Terms:`` then ``Term N:`` lines of ``key op [values]``."""
    w.write(0, "Node Affinity:\t")
    required = (affinity or {}).get("required")
    if required is None:
        w.line("<none>")
        return
    w.line("")
    w.write(1, "Required Terms:\t")
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        w.line("<none>")
        return
    w.line("")
    for i, term in enumerate(terms):
        w.write(2, f"Term {i}:\t")
        reqs = term.get("matchExpressions") or []
        if not reqs:
            w.line("<none>")
            continue
        for j, req in enumerate(reqs):
            if j:
                w.write(2, "\t")
            expr = f"{req.get('key', '')} {str(req.get('operator') or '').lower()}"
            if req.get("values"):
                expr += f" [{', '.join(req['values'])}]"
            w.write(0, expr + "\n")


def _csi_attributes(w: PrefixWriter, attributes: Mapping[str, str] | None) -> None:
    """``printCSIPersistentVolumeAttributesMultiline`` (its quirky indentation kept)."""
    w.write(2, "VolumeAttributes:\t")
    if not attributes:
        w.line("<none>")
        return
    for i, key in enumerate(sorted(attributes)):
        if i:
            w.write(2, "")
            w.write(2, "\t")
        line = f"{key}={attributes[key]}"
        w.write(2, (line[:_MAX_ANNOTATION_LEN] + "...\n") if len(line) > _MAX_ANNOTATION_LEN else line + "\n")


def _pv_source(w: PrefixWriter, spec: Obj) -> None:
    """The type-specific ``Source:`` lines of kubectl's PersistentVolume describer."""
    if spec.get("hostPath") is not None:
        hp = spec["hostPath"] or {}
        w.write(2, "Type:\tHostPath (bare host directory volume)\n"
                   f"    Path:\t{hp.get('path', '')}\n    HostPathType:\t{hp.get('type') or '<none>'}\n")
    elif spec.get("nfs") is not None:
        nfs = spec["nfs"] or {}
        w.write(2, "Type:\tNFS (an NFS mount that lasts the lifetime of a pod)\n"
                   f"    Server:\t{nfs.get('server', '')}\n    Path:\t{nfs.get('path', '')}\n"
                   f"    ReadOnly:\t{_go_bool(nfs.get('readOnly'))}\n")
    elif spec.get("local") is not None:
        w.write(2, "Type:\tLocalVolume (a persistent volume backed by local storage on a node)\n"
                   f"    Path:\t{(spec['local'] or {}).get('path', '')}\n")
    elif spec.get("csi") is not None:
        csi = spec["csi"] or {}
        w.write(2, "Type:\tCSI (a Container Storage Interface (CSI) volume source)\n"
                   f"    Driver:\t{csi.get('driver', '')}\n    FSType:\t{csi.get('fsType', '')}\n"
                   f"    VolumeHandle:\t{csi.get('volumeHandle', '')}\n"
                   f"    ReadOnly:\t{_go_bool(csi.get('readOnly'))}\n")
        _csi_attributes(w, csi.get("volumeAttributes"))
    else:
        w.write(1, "<unknown>\n")


def describe_persistentvolume(api: Any, pv: Obj, now: datetime) -> str:
    """kubectl's PersistentVolumeDescriber (``describePersistentVolume``): metadata, ``Finalizers``,
    ``StorageClass``, ``Status`` (``Terminating (lasts …)`` once deleted), ``Claim``, ``Reclaim
    Policy``, ``Access Modes``, ``VolumeMode``, ``Capacity``, ``Node Affinity``, ``Message``, the
    ``Source`` (hostPath, nfs, local, csi; ``<unknown>`` for others), then the events."""
    m, spec, st = _meta(pv), pv.get("spec") or {}, pv.get("status") or {}
    w = PrefixWriter()
    w.write(0, f"Name:\t{m.get('name', '')}\n")
    _labels_multiline(w, "Labels", m.get("labels"))
    _annotations_multiline(w, "Annotations", m.get("annotations"))
    w.write(0, f"Finalizers:\t{_go_list(m.get('finalizers'))}\n")
    w.write(0, f"StorageClass:\t{_storage_class(pv)}\n")
    w.write(0, _status_or_terminating(pv, st.get("phase"), now))
    ref = spec.get("claimRef")
    w.write(0, f"Claim:\t{ref.get('namespace', '')}/{ref.get('name', '')}\n" if ref is not None else "Claim:\t\n")
    w.write(0, f"Reclaim Policy:\t{spec.get('persistentVolumeReclaimPolicy') or ''}\n")
    w.write(0, f"Access Modes:\t{_access_modes_string(spec.get('accessModes'))}\n")
    if spec.get("volumeMode") is not None:
        w.write(0, f"VolumeMode:\t{spec['volumeMode']}\n")
    w.write(0, f"Capacity:\t{_q((spec.get('capacity') or {}).get('storage'))}\n")
    _volume_node_affinity(w, spec.get("nodeAffinity"))
    w.write(0, f"Message:\t{st.get('message') or ''}\n")
    w.write(0, "Source:\n")
    _pv_source(w, spec)
    describe_events(search_events(api, pv), w, now)
    return w.text()


def _pods_for_pvc(api: Any, pvc: Obj) -> list[Obj]:
    """``getPodsForPVC``: the namespace's pods with a ``persistentVolumeClaim`` volume naming the
    claim (once per such volume), then the pods that own it (generic ephemeral volumes)."""
    m = _meta(pvc)
    try:
        pods = api.list("pods", namespace=m.get("namespace"))["items"]
    except errors.StatusError:
        return []
    out = [p for p in pods for v in (p.get("spec") or {}).get("volumes") or ()
           if (v.get("persistentVolumeClaim") or {}).get("claimName") == m.get("name")
           and v.get("persistentVolumeClaim") is not None]
    for ref in m.get("ownerReferences") or ():
        if ref.get("kind") != "Pod":
            continue
        owner = next((p for p in pods if _meta(p).get("uid") == ref.get("uid")), None)
        if owner is not None and all(_meta(p).get("uid") != ref.get("uid") for p in out):
            out.append(owner)
    return out


def describe_persistentvolumeclaim(api: Any, pvc: Obj, now: datetime) -> str:
    """kubectl's PersistentVolumeClaimDescriber (``printPersistentVolumeClaim``): ``StorageClass``,
    ``Status``, ``Volume``, labels and annotations, ``Finalizers``, ``Capacity`` and ``Access Modes``
    (from the status, only once the claim names a volume), ``VolumeMode``, ``DataSource``, ``Used
    By`` (the pods that mount it, by name), ``Conditions``, then the events."""
    m, spec, st = _meta(pvc), pvc.get("spec") or {}, pvc.get("status") or {}
    w = PrefixWriter()
    w.write(0, f"Name:\t{m.get('name', '')}\n")
    w.write(0, f"Namespace:\t{m.get('namespace', '')}\n")
    w.write(0, f"StorageClass:\t{_storage_class(pvc)}\n")
    w.write(0, _status_or_terminating(pvc, st.get("phase"), now))
    w.write(0, f"Volume:\t{spec.get('volumeName') or ''}\n")
    _labels_multiline(w, "Labels", m.get("labels"))
    _annotations_multiline(w, "Annotations", m.get("annotations"))
    w.write(0, f"Finalizers:\t{_go_list(m.get('finalizers'))}\n")
    capacity = modes = ""
    if spec.get("volumeName"):
        modes = _access_modes_string(st.get("accessModes"))
        capacity = _q((st.get("capacity") or {}).get("storage"))
    w.write(0, f"Capacity:\t{capacity}\n")
    w.write(0, f"Access Modes:\t{modes}\n")
    if spec.get("volumeMode") is not None:
        w.write(0, f"VolumeMode:\t{spec['volumeMode']}\n")
    source = spec.get("dataSource")
    if source is not None:
        w.write(0, "DataSource:\n")
        if source.get("apiGroup") is not None:
            w.write(1, f"APIGroup:\t{source['apiGroup']}\n")
        w.write(1, f"Kind:\t{source.get('kind', '')}\n")
        w.write(1, f"Name:\t{source.get('name', '')}\n")
    pods = sorted(_pods_for_pvc(api, pvc), key=lambda p: _meta(p).get("name") or "")
    w.write(0, "Used By:\t")
    if not pods:
        w.line("<none>")
    for i, p in enumerate(pods):
        w.write(0, ("\t" if i else "") + f"{_meta(p).get('name', '')}\n")
    conditions = st.get("conditions") or []
    if conditions:
        w.write(0, "Conditions:\n")
        w.write(1, "Type\tStatus\tLastProbeTime\tLastTransitionTime\tReason\tMessage\n")
        w.write(1, "----\t------\t-----------------\t------------------\t------\t-------\n")
        for c in conditions:
            w.write(1, f"{c.get('type', '')} \t{c.get('status', '')} \t{rfc1123z(c.get('lastProbeTime'))} \t"
                       f"{rfc1123z(c.get('lastTransitionTime'))} \t{c.get('reason', '')} \t{c.get('message', '')}\n")
    describe_events(search_events(api, pvc), w, now)
    return w.text()


def _smart_label(key: str) -> str:
    """``smartLabelFor``: ``apiVersion`` -> ``API Version``, ``podIP`` -> ``Pod IP``."""
    words, cur = [], ""
    for ch in key:
        if ch.isupper() and cur and not cur[-1].isupper():
            words.append(cur)
            cur = ch
        else:
            cur += ch
    if cur:
        words.append(cur)
    special = {"api": "API", "ip": "IP", "ips": "IPs", "id": "ID", "uid": "UID", "url": "URL", "cidr": "CIDR",
               "dns": "DNS", "tls": "TLS", "http": "HTTP"}
    return " ".join(special.get(w_.lower(), w_[:1].upper() + w_[1:]) for w_ in words)


def _unstructured(w: PrefixWriter, level: int, content: Any, prefix: str, skip: set[str]) -> None:
    if isinstance(content, Mapping):
        for k in sorted(content):
            path = f"{prefix}.{k}"
            if path in skip:
                continue
            v = content[k]
            label = _smart_label(k)
            if isinstance(v, Mapping):
                w.write(level, f"{label}:\n")
                _unstructured(w, level + 1, v, path, skip)
            elif isinstance(v, list):
                w.write(level, f"{label}:\n")
                for item in v:
                    if isinstance(item, (Mapping, list)):
                        _unstructured(w, level + 1, item, path, skip)
                    else:
                        w.write(level + 1, f"{item}\n")
            else:
                w.write(level, f"{label}:\t{'true' if v is True else 'false' if v is False else v}\n")


def describe_generic(api: Any, obj: Obj, now: datetime) -> str:
    """kubectl's generic describer: metadata, then every other field as ``Label:  value`` lines."""
    m = _meta(obj)
    w = PrefixWriter()
    w.write(0, f"Name:\t{m.get('name')}\n")
    w.write(0, f"Namespace:\t{m.get('namespace', '')}\n")
    _labels_multiline(w, "Labels", m.get("labels"))
    _annotations_multiline(w, "Annotations", m.get("annotations"))
    _unstructured(w, 0, obj, "", {".metadata.managedFields", ".metadata.name", ".metadata.namespace",
                                  ".metadata.labels", ".metadata.annotations"})
    describe_events(search_events(api, obj), w, now)
    return w.text()


def _go_time_string(ts: str | None) -> str:
    """Go's ``time.Time.String()`` of a ``metav1.Time`` as kubectl holds it (decoded into its
    local zone; k8semu's is UTC): ``2025-01-01 00:00:00 +0000 UTC``; the zero time when unset."""
    t = parse_timestamp(ts)
    if t is None:
        return "0001-01-01 00:00:00 +0000 UTC"
    return t.strftime("%Y-%m-%d %H:%M:%S +0000 UTC")


def _np_port(port: Obj) -> str:
    """One ``NetworkPolicyPort`` line: ``To Port: 80/TCP`` or ``To Port Range: 32000-32768/TCP``
    (``port`` printed with ``%s`` of ``*intstr.IntOrString``: ``<nil>`` when unset)."""
    value = port.get("port")
    text = "<nil>" if value is None else str(value)
    proto = port.get("protocol") or "TCP"
    if port.get("endPort") is None:
        return f"To Port: {text}/{proto}"
    return f"To Port Range: {text}-{port['endPort']}/{proto}"


def _np_rules(w: PrefixWriter, rules: Sequence[Obj] | None, ingress: bool) -> None:
    """``printNetworkPolicySpecIngressFrom`` / ``printNetworkPolicySpecEgressTo``: per rule its
    ports, then its peers (namespaceSelector before podSelector when both are set; an ipBlock's
    ``Except:`` line is printed even when empty), rules separated by ``----------``."""
    indent = "    "
    word, peers_key = ("From", "from") if ingress else ("To", "to")
    if not rules:
        what = "ingress" if ingress else "egress"
        w.write(0, f"{indent}<none> (Selected pods are isolated for {what} connectivity)\n")
        return
    for i, rule in enumerate(rules):
        rule = rule or {}
        ports = rule.get("ports") or []
        if not ports:
            w.write(0, f"{indent}To Port: <any> (traffic allowed to all ports)\n")
        for port in ports:
            w.write(0, f"{indent}{_np_port(port or {})}\n")
        peers = rule.get(peers_key) or []
        if not peers:
            reason = "source" if ingress else "destination"
            w.write(0, f"{indent}{word}: <any> (traffic not restricted by {reason})\n")
        for peer in peers:
            peer = peer or {}
            w.write(0, f"{indent}{word}:\n")
            pod_sel, ns_sel, block = peer.get("podSelector"), peer.get("namespaceSelector"), peer.get("ipBlock")
            if pod_sel is not None and ns_sel is not None:
                w.write(1, f"{indent}NamespaceSelector: {format_label_selector(ns_sel)}\n")
                w.write(1, f"{indent}PodSelector: {format_label_selector(pod_sel)}\n")
            elif pod_sel is not None:
                w.write(1, f"{indent}PodSelector: {format_label_selector(pod_sel)}\n")
            elif ns_sel is not None:
                w.write(1, f"{indent}NamespaceSelector: {format_label_selector(ns_sel)}\n")
            elif block is not None:
                w.write(1, f"{indent}IPBlock:\n")
                w.write(2, f"{indent}CIDR: {block.get('cidr') or ''}\n")
                w.write(2, f"{indent}Except: {', '.join(block.get('except') or [])}\n")
        if i != len(rules) - 1:
            w.write(0, f"{indent}----------\n")


def describe_networkpolicy(api: Any, np: Obj, now: datetime) -> str:
    """kubectl's NetworkPolicyDescriber (``describeNetworkPolicy``): ``Created on:`` is the
    creation time's Go ``String()``; the spec is plain indented text (no tab columns); which of
    ingress/egress is described follows ``policyTypes``. No Events section: the describer
    does not look them up. (A custom resource also named NetworkPolicy gets the generic one.)"""
    if str(np.get("apiVersion") or "").split("/")[0] != "networking.k8s.io":
        return describe_generic(api, np, now)
    m = _meta(np)
    spec = np.get("spec") or {}
    w = PrefixWriter()
    w.write(0, f"Name:\t{m.get('name')}\n")
    w.write(0, f"Namespace:\t{m.get('namespace')}\n")
    w.write(0, f"Created on:\t{_go_time_string(m.get('creationTimestamp'))}\n")
    _labels_multiline(w, "Labels", m.get("labels"))
    _annotations_multiline(w, "Annotations", m.get("annotations"))
    w.write(0, "Spec:\n")
    w.write(1, "PodSelector: ")
    sel = spec.get("podSelector") or {}
    if not sel.get("matchLabels") and not sel.get("matchExpressions"):
        w.write(2, "<none> (Allowing the specific traffic to all pods in this namespace)\n")
    else:
        w.write(2, f"{format_label_selector(sel)}\n")
    types = spec.get("policyTypes")
    if "Ingress" in (types or ()):
        w.write(1, "Allowing ingress traffic:\n")
        _np_rules(w, spec.get("ingress"), ingress=True)
    else:
        w.write(1, "Not affecting ingress traffic\n")
    if "Egress" in (types or ()):
        w.write(1, "Allowing egress traffic:\n")
        _np_rules(w, spec.get("egress"), ingress=False)
    else:
        w.write(1, "Not affecting egress traffic\n")
    w.write(1, f"Policy Types: {', '.join(types) if types else '<none>'}\n")
    return w.text()


_DESCRIBERS: dict[str, Callable[[Any, Obj, datetime], str]] = {
    "Pod": describe_pod, "Deployment": describe_deployment, "ReplicaSet": describe_replicaset,
    "Service": describe_service, "Node": describe_node, "Job": describe_job, "CronJob": describe_cronjob,
    "StatefulSet": describe_statefulset, "DaemonSet": describe_daemonset, "Namespace": describe_namespace,
    "ConfigMap": describe_configmap, "Secret": describe_secret, "ServiceAccount": describe_serviceaccount,
    "Endpoints": describe_endpoints, "EndpointSlice": describe_endpointslice,
    "PersistentVolume": describe_persistentvolume, "PersistentVolumeClaim": describe_persistentvolumeclaim,
    "ResourceQuota": describe_resourcequota,
    "NetworkPolicy": describe_networkpolicy,
}


def describe(api: Any, obj: Obj, now: datetime, *, show_events: bool = True) -> str:
    """The ``kubectl describe`` text for one wire object (``now``: the cluster's aware datetime;
    ``show_events=False``: without its ``Events:`` section, as ``--show-events=false``)."""
    token = _SHOW_EVENTS.set(show_events)
    try:
        return _DESCRIBERS.get(str(obj.get("kind")), describe_generic)(api, obj, now)
    finally:
        _SHOW_EVENTS.reset(token)
