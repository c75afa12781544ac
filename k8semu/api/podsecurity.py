"""The Pod Security Standards and the decisions of the PodSecurity admission plugin, as upstream's
``k8s.io/pod-security-admission`` (``api/``, ``policy/``, ``admission/``) of Kubernetes 1.33.

Pure functions over wire-form dicts; the plugin that calls them (reading the namespace, raising
the errors, adding the warnings) is :class:`k8semu.api.admission.PodSecurity`.

**Levels and versions.** A namespace's labels ``pod-security.kubernetes.io/<mode>`` (``enforce``,
``audit``, ``warn``) name a level — ``privileged``, ``baseline`` or ``restricted`` — and
``pod-security.kubernetes.io/<mode>-version`` a policy version, ``latest`` or ``v1.N``; a missing
label takes the cluster default, ``privileged:latest`` (kube-apiserver without an
AdmissionConfiguration). :func:`policy_to_evaluate` resolves them as upstream's
``PolicyToEvaluate``: a bad level is reported (``must be one of privileged, baseline,
restricted``) and evaluated as ``restricted`` for enforce, ``privileged`` for audit and warn (they
fail open); a bad version (``must be "latest" or "v1.x"``) as ``latest``.

**Checks.** :func:`check_pod` runs the checks of a level at a version over a pod's spec and
metadata and returns each failed check's ``(reason, detail)``, in upstream's order: the baseline
checks by ID (``appArmorProfile``, ``capabilities_baseline``, ``hostNamespaces``,
``hostPathVolumes``, ``hostPorts``, ``privileged``, ``procMount``, ``seLinuxOptions``,
``seccompProfile_baseline``, ``sysctls``, ``windowsHostProcess``), then, for ``restricted``, the
restricted ones (``allowPrivilegeEscalation``, ``capabilities_restricted``, ``restrictedVolumes``,
``runAsNonRoot``, ``runAsUser``, ``seccompProfile_restricted``), each of which replaces the
baseline check it strengthens (capabilities from v1.22, hostPath volumes, seccomp from v1.19).
Containers are visited init containers first, then containers, then ephemeral containers; the
texts are upstream's (``allowPrivilegeEscalation != false`` / ``container "nginx" must set
securityContext.allowPrivilegeEscalation=false``). :func:`forbidden_detail` joins them as the
refusal does (``reason (detail), reason``), :func:`forbidden_reason` without the details (the
namespace warnings).

**Versions.** Each check has upstream's minimum versions and revisions: ``runAsUser`` from v1.23,
``capabilities_restricted`` v1.22, ``allowPrivilegeEscalation`` v1.8, ``seccompProfile_restricted``
v1.19; the baseline seccomp check reads the alpha annotations (``seccomp.security.alpha.kubernetes.io/pod``,
``container.seccomp.security.alpha.kubernetes.io/<c>``) before v1.19 and the fields from then on;
from v1.25 a Windows pod (``spec.os.name: windows``) passes the three Linux-only restricted checks;
the safe sysctls grow at v1.27, v1.29 and v1.32. ``latest`` and any version newer than v1.32 (the
newest any check has) evaluate as v1.32. Not modelled: the ``UserNamespacesPodSecurityStandards``
relaxation (an alpha feature gate, off by default in 1.33), the v1.34 ``hostProbesAndHostLifecycle``
check (not in 1.33), exemptions (none without an AdmissionConfiguration).
"""

from __future__ import annotations

import re

from typing import Any, Callable, Iterable, Iterator

import attrs

from .errors import FieldError
from .gofmt import go_quote

__all__ = [
    "LEVELS", "LABEL_PREFIX", "ENFORCE_LEVEL_LABEL", "ENFORCE_VERSION_LABEL", "AUDIT_LEVEL_LABEL",
    "AUDIT_VERSION_LABEL", "WARN_LEVEL_LABEL", "WARN_VERSION_LABEL", "Version", "LevelVersion", "Policy",
    "DEFAULT_POLICY", "parse_level", "parse_version", "policy_to_evaluate", "compare_levels", "check_pod",
    "forbidden_detail", "forbidden_reason", "evaluate_pods_in_namespace", "is_significant_pod_update",
    "pod_template_of", "POD_CONTROLLER_RESOURCES", "IGNORED_POD_SUBRESOURCES",
    "NAMESPACE_MAX_PODS_TO_CHECK",
]

PRIVILEGED, BASELINE, RESTRICTED = "privileged", "baseline", "restricted"
LEVELS = (PRIVILEGED, BASELINE, RESTRICTED)

LABEL_PREFIX = "pod-security.kubernetes.io/"
ENFORCE_LEVEL_LABEL = LABEL_PREFIX + "enforce"
ENFORCE_VERSION_LABEL = LABEL_PREFIX + "enforce-version"
AUDIT_LEVEL_LABEL = LABEL_PREFIX + "audit"
AUDIT_VERSION_LABEL = LABEL_PREFIX + "audit-version"
WARN_LEVEL_LABEL = LABEL_PREFIX + "warn"
WARN_VERSION_LABEL = LABEL_PREFIX + "warn-version"

#: upstream's ``defaultNamespaceMaxPodsToCheck``: a namespace's enforce change checks at most this many pods
NAMESPACE_MAX_PODS_TO_CHECK = 3000

#: pod subresources the plugin never looks at (upstream's ``ignoredPodSubresources``); any other
#: one (``ephemeralcontainers``, ``resize``) is evaluated as a pod update
IGNORED_POD_SUBRESOURCES = frozenset(
    ("exec", "attach", "binding", "eviction", "log", "portforward", "proxy", "status"))

#: (group, resource) of the workload kinds whose pod template is evaluated for warn and audit
#: (upstream's ``defaultPodSpecResources`` less pods)
POD_CONTROLLER_RESOURCES = frozenset({
    ("", "replicationcontrollers"), ("", "podtemplates"), ("apps", "replicasets"), ("apps", "deployments"),
    ("apps", "statefulsets"), ("apps", "daemonsets"), ("batch", "jobs"), ("batch", "cronjobs"),
})


# ------------------------------------------------------------------ levels, versions, policies


@attrs.frozen(order=False)
class Version:
    """A policy version: ``latest`` or ``v<major>.<minor>``."""

    major: int = 0
    minor: int = 0
    latest: bool = False

    def __str__(self) -> str:
        return "latest" if self.latest else f"v{self.major}.{self.minor}"

    def older(self, other: "Version") -> bool:
        """Upstream's ``Older``: ``latest`` is newer than every version, even future ones."""
        if self.latest:
            return False
        if other.latest:
            return True
        return (self.major, self.minor) < (other.major, other.minor)


LATEST = Version(latest=True)


def _v(minor: int) -> Version:
    return Version(1, minor)


@attrs.frozen
class LevelVersion:
    level: str
    version: Version = LATEST

    def __str__(self) -> str:
        return f"{self.level}:{self.version}"


@attrs.frozen
class Policy:
    """The level and version of each mode."""

    enforce: LevelVersion
    audit: LevelVersion
    warn: LevelVersion

    def fully_privileged(self) -> bool:
        return PRIVILEGED == self.enforce.level == self.audit.level == self.warn.level


#: kube-apiserver's default without an AdmissionConfiguration: privileged:latest for every mode
DEFAULT_POLICY = Policy(LevelVersion(PRIVILEGED), LevelVersion(PRIVILEGED), LevelVersion(PRIVILEGED))

_VERSION_RE = re.compile(r"^v1\.([0-9]|[1-9][0-9]*)$")


def parse_level(text: str) -> tuple[str, str | None]:
    """``(level, error)``: an unknown level is ``restricted`` with upstream's error text."""
    if text in LEVELS:
        return text, None
    return RESTRICTED, "must be one of " + ", ".join(LEVELS)


def parse_version(text: str) -> tuple[Version, str | None]:
    """``(version, error)``: ``latest`` or ``v1.N``; anything else is ``latest`` with an error."""
    if text == "latest":
        return LATEST, None
    m = _VERSION_RE.match(text)
    if m is None:
        return LATEST, 'must be "latest" or "v1.x"'
    return Version(1, int(m.group(1))), None


def policy_to_evaluate(labels: dict[str, str] | None,
                       defaults: Policy = DEFAULT_POLICY) -> tuple[Policy, list[FieldError]]:
    """Upstream's ``PolicyToEvaluate``: the namespace's policy from its labels (unset ones from
    ``defaults``) and a ``FieldError`` (``metadata.labels[<label>]: Invalid value: "<v>": <why>``)
    for each bad label, in the order enforce, enforce-version, audit, audit-version, warn,
    warn-version. A valid policy is always returned."""
    errs: list[FieldError] = []
    if not labels:
        return defaults, errs

    def err(label: str, value: str, why: str | None) -> None:
        if why is not None:
            errs.append(FieldError.invalid(f"metadata.labels[{label}]", value, why))

    modes = {"enforce": defaults.enforce, "audit": defaults.audit, "warn": defaults.warn}
    for mode in ("enforce", "audit", "warn"):
        lv = modes[mode]
        level, version = lv.level, lv.version
        label = LABEL_PREFIX + mode
        if label in labels:
            level, why = parse_level(labels[label])
            err(label, labels[label], why)
            if why is not None and mode != "enforce":
                level = PRIVILEGED  # audit and warn fail open
        label = LABEL_PREFIX + mode + "-version"
        if label in labels:
            version, why = parse_version(labels[label])
            err(label, labels[label], why)
        modes[mode] = LevelVersion(level, version)
    return Policy(modes["enforce"], modes["audit"], modes["warn"]), errs


def compare_levels(a: str, b: str) -> int:
    """-1, 0 or 1 as ``a`` is less strict than, as strict as, or stricter than ``b``."""
    if a == b:
        return 0
    return -1 if LEVELS.index(a) < LEVELS.index(b) else 1


# ------------------------------------------------------------------ helpers of the checks

Result = tuple[str, str]
CheckFn = Callable[[dict, dict], "Result | None"]


def _join_quote(items: Iterable[str]) -> str:
    items = list(items)
    return '"' + '", "'.join(items) + '"' if items else ""


def _plural(singular: str, plural: str, n: int) -> str:
    return singular if n == 1 else plural


def _containers(spec: dict) -> Iterator[dict]:
    """Init containers, containers, then ephemeral containers (upstream's ``visitContainers``)."""
    for field in ("initContainers", "containers", "ephemeralContainers"):
        yield from spec.get(field) or ()


def _sc(obj: dict) -> dict | None:
    return obj.get("securityContext")


def _pod_sc(spec: dict) -> dict | None:
    return spec.get("securityContext")


def _windows(spec: dict) -> bool:
    return ((spec.get("os") or {}).get("name")) == "windows"


def _setters(pod_bad: bool, containers: list[str]) -> list[str]:
    out = ["pod"] if pod_bad else []
    if containers:
        out.append(f"{_plural('container', 'containers', len(containers))} {_join_quote(containers)}")
    return out


# ------------------------------------------------------------------ baseline checks

_ALLOWED_APPARMOR_TYPES = ("RuntimeDefault", "Localhost")
_APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/"


def _bad_profiles(spec: dict, field: str, allowed: Any) -> tuple[list[str], set[str]]:
    """(the setters — ``pod`` / ``container "x"`` — whose ``securityContext.<field>.type`` is set
    and not in ``allowed``, the bad types) over the pod and all its containers."""
    bad_values: set[str] = set()
    profile = (_pod_sc(spec) or {}).get(field)
    pod_bad = profile is not None and profile.get("type") not in allowed
    if pod_bad:
        bad_values.add(profile.get("type") or "")
    bad_containers = []
    for c in _containers(spec):
        profile = (_sc(c) or {}).get(field)
        if profile is not None and profile.get("type") not in allowed:
            bad_containers.append(c.get("name", ""))
            bad_values.add(profile.get("type") or "")
    return _setters(pod_bad, bad_containers), bad_values


def _app_armor_profile(meta: dict, spec: dict) -> Result | None:
    setters, bad_values = _bad_profiles(spec, "appArmorProfile", _ALLOWED_APPARMOR_TYPES)
    annotations = sorted(
        f"{k}={go_quote(v)}" for k, v in ((meta.get("annotations") or {}).items())
        if k.startswith(_APPARMOR_ANNOTATION_PREFIX)
        and not (v == "" or v == "runtime/default" or v.startswith("localhost/")))
    values = sorted(bad_values) + annotations
    if annotations:
        setters.append(_plural("annotation", "annotations", len(annotations)))
    if not setters:
        return None
    return (_plural("forbidden AppArmor profile", "forbidden AppArmor profiles", len(values)),
            f"{' and '.join(setters)} must not set AppArmor profile type to {_join_quote(values)}")


_BASELINE_CAPABILITIES = frozenset((
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
    "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"))


def _capabilities_baseline(meta: dict, spec: dict) -> Result | None:
    bad_containers, caps = [], set()
    for c in _containers(spec):
        added = [a for a in ((_sc(c) or {}).get("capabilities") or {}).get("add") or ()
                 if a not in _BASELINE_CAPABILITIES]
        if added:
            bad_containers.append(c.get("name", ""))
            caps.update(added)
    if not bad_containers:
        return None
    return ("non-default capabilities",
            f"{_plural('container', 'containers', len(bad_containers))} {_join_quote(bad_containers)} "
            f"must not include {_join_quote(sorted(caps))} in securityContext.capabilities.add")


def _host_namespaces(meta: dict, spec: dict) -> Result | None:
    used = [f"{f}=true" for f in ("hostNetwork", "hostPID", "hostIPC") if spec.get(f)]
    return ("host namespaces", ", ".join(used)) if used else None


def _host_path_volumes(meta: dict, spec: dict) -> Result | None:
    names = [v.get("name", "") for v in spec.get("volumes") or () if v.get("hostPath") is not None]
    if not names:
        return None
    return "hostPath volumes", f"{_plural('volume', 'volumes', len(names))} {_join_quote(names)}"


def _host_ports(meta: dict, spec: dict) -> Result | None:
    bad_containers, ports = [], set()
    for c in _containers(spec):
        used = [str(p["hostPort"]) for p in c.get("ports") or () if p.get("hostPort")]
        if used:
            bad_containers.append(c.get("name", ""))
            ports.update(used)
    if not bad_containers:
        return None
    n = len(bad_containers)
    return ("hostPort",
            f"{_plural('container', 'containers', n)} {_join_quote(bad_containers)} {_plural('uses', 'use', n)} "
            f"{_plural('hostPort', 'hostPorts', len(ports))} {', '.join(sorted(ports))}")


def _privileged(meta: dict, spec: dict) -> Result | None:
    bad = [c.get("name", "") for c in _containers(spec) if (_sc(c) or {}).get("privileged") is True]
    if not bad:
        return None
    return ("privileged", f"{_plural('container', 'containers', len(bad))} {_join_quote(bad)} "
                          "must not set securityContext.privileged=true")


def _proc_mount(meta: dict, spec: dict) -> Result | None:
    bad, types = [], set()
    for c in _containers(spec):
        pm = (_sc(c) or {}).get("procMount")
        if pm is not None and pm != "Default":
            bad.append(c.get("name", ""))
            types.add(pm)
    if not bad:
        return None
    return ("procMount", f"{_plural('container', 'containers', len(bad))} {_join_quote(bad)} "
                         f"must not set securityContext.procMount to {_join_quote(sorted(types))}")


_SELINUX_TYPES = frozenset(("", "container_t", "container_init_t", "container_kvm_t"))


def _se_linux_options(meta: dict, spec: dict) -> Result | None:
    bad_types: set[str] = set()
    flags = {"user": False, "role": False}

    def valid(opts: dict) -> bool:
        ok = True
        if (opts.get("type") or "") not in _SELINUX_TYPES:
            ok = False
            bad_types.add(opts.get("type") or "")
        for field in ("user", "role"):
            if opts.get(field):
                ok = False
                flags[field] = True
        return ok

    opts = (_pod_sc(spec) or {}).get("seLinuxOptions")
    pod_bad = opts is not None and not valid(opts)
    bad_containers = []
    for c in _containers(spec):
        opts = (_sc(c) or {}).get("seLinuxOptions")
        if opts is not None and not valid(opts):
            bad_containers.append(c.get("name", ""))
    setters = _setters(pod_bad, bad_containers)
    if not setters:
        return None
    data = []
    # as upstream: the user and role notes are given only alongside a bad type
    if bad_types:
        data.append(f"{_plural('type', 'types', len(bad_types))} {_join_quote(sorted(bad_types))}")
        if flags["user"]:
            data.append("user may not be set")
        if flags["role"]:
            data.append("role may not be set")
    return ("seLinuxOptions",
            f"{' and '.join(setters)} set forbidden securityContext.seLinuxOptions: {'; '.join(data)}")


_SECCOMP_POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
_SECCOMP_CONTAINER_ANNOTATION_PREFIX = "container.seccomp.security.alpha.kubernetes.io/"
_VALID_SECCOMP_TYPES = ("RuntimeDefault", "Localhost")


def _valid_seccomp_annotation(v: str) -> bool:
    return v in ("runtime/default", "docker/default") or v.startswith("localhost/")


def _seccomp_baseline_1_0(meta: dict, spec: dict) -> Result | None:
    annotations = meta.get("annotations") or {}
    bad = set()
    if _SECCOMP_POD_ANNOTATION in annotations and not _valid_seccomp_annotation(annotations[_SECCOMP_POD_ANNOTATION]):
        bad.add(f"{_SECCOMP_POD_ANNOTATION}={go_quote(annotations[_SECCOMP_POD_ANNOTATION])}")
    for c in _containers(spec):
        key = _SECCOMP_CONTAINER_ANNOTATION_PREFIX + c.get("name", "")
        if key in annotations and not _valid_seccomp_annotation(annotations[key]):
            bad.add(f"{key}={go_quote(annotations[key])}")
    if not bad:
        return None
    return ("seccompProfile",
            f"forbidden {_plural('annotation', 'annotations', len(bad))} {', '.join(sorted(bad))}")


def _seccomp_baseline_1_19(meta: dict, spec: dict) -> Result | None:
    setters, bad_values = _bad_profiles(spec, "seccompProfile", _VALID_SECCOMP_TYPES)
    if not setters:
        return None
    return ("seccompProfile", f"{' and '.join(setters)} must not set securityContext.seccompProfile.type to "
                              f"{_join_quote(sorted(bad_values))}")


_SYSCTLS_1_0 = frozenset(("kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
                          "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start"))
_SYSCTLS_1_27 = _SYSCTLS_1_0 | {"net.ipv4.ip_local_reserved_ports"}
_SYSCTLS_1_29 = _SYSCTLS_1_27 | {"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
                                 "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}
_SYSCTLS_1_32 = _SYSCTLS_1_29 | {"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}


def _sysctls(allowed: frozenset[str]) -> CheckFn:
    def check(meta: dict, spec: dict) -> Result | None:
        bad = [s.get("name", "") for s in (_pod_sc(spec) or {}).get("sysctls") or () if s.get("name") not in allowed]
        return ("forbidden sysctls", ", ".join(bad)) if bad else None
    return check


def _windows_host_process(meta: dict, spec: dict) -> Result | None:
    def on(sc: dict | None) -> bool:
        return ((sc or {}).get("windowsOptions") or {}).get("hostProcess") is True

    bad_containers = [c.get("name", "") for c in _containers(spec) if on(_sc(c))]
    setters = _setters(on(_pod_sc(spec)), bad_containers)
    if not setters:
        return None
    return ("hostProcess", f"{' and '.join(setters)} must not set securityContext.windowsOptions.hostProcess=true")


# ------------------------------------------------------------------ restricted checks


def _linux_only(check: CheckFn) -> CheckFn:
    """The v1.25 revision of a Linux-only check: a Windows pod passes."""
    def revised(meta: dict, spec: dict) -> Result | None:
        return None if _windows(spec) else check(meta, spec)
    return revised


def _allow_privilege_escalation(meta: dict, spec: dict) -> Result | None:
    bad = [c.get("name", "") for c in _containers(spec)
           if (_sc(c) or {}).get("allowPrivilegeEscalation") is not False]
    if not bad:
        return None
    return ("allowPrivilegeEscalation != false",
            f"{_plural('container', 'containers', len(bad))} {_join_quote(bad)} "
            "must set securityContext.allowPrivilegeEscalation=false")


def _capabilities_restricted(meta: dict, spec: dict) -> Result | None:
    missing_drop, adding, caps = [], [], set()
    for c in _containers(spec):
        capabilities = (_sc(c) or {}).get("capabilities")
        if capabilities is None:
            missing_drop.append(c.get("name", ""))
            continue
        if "ALL" not in (capabilities.get("drop") or ()):
            missing_drop.append(c.get("name", ""))
        added = [a for a in capabilities.get("add") or () if a != "NET_BIND_SERVICE"]
        if added:
            adding.append(c.get("name", ""))
            caps.update(added)
    details = []
    if missing_drop:
        details.append(f"{_plural('container', 'containers', len(missing_drop))} {_join_quote(missing_drop)} "
                       'must set securityContext.capabilities.drop=["ALL"]')
    if adding:
        details.append(f"{_plural('container', 'containers', len(adding))} {_join_quote(adding)} "
                       f"must not include {_join_quote(sorted(caps))} in securityContext.capabilities.add")
    return ("unrestricted capabilities", "; ".join(details)) if details else None


_ALLOWED_VOLUME_SOURCES = ("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                           "projected", "secret")
_RESTRICTED_VOLUME_SOURCES = (
    "hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi", "glusterfs", "rbd",
    "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile", "vsphereVolume", "quobyte", "azureDisk",
    "photonPersistentDisk", "portworxVolume", "scaleIO", "storageos")


def _restricted_volumes(meta: dict, spec: dict) -> Result | None:
    bad, types = [], set()
    for v in spec.get("volumes") or ():
        if any(v.get(s) is not None for s in _ALLOWED_VOLUME_SOURCES):
            continue
        bad.append(v.get("name", ""))
        types.add(next((s for s in _RESTRICTED_VOLUME_SOURCES if v.get(s) is not None), "unknown"))
    if not bad:
        return None
    n = len(bad)
    return ("restricted volume types",
            f"{_plural('volume', 'volumes', n)} {_join_quote(bad)} {_plural('uses', 'use', n)} "
            f"{_plural('restricted volume type', 'restricted volume types', len(types))} {_join_quote(sorted(types))}")


def _run_as_non_root(meta: dict, spec: dict) -> Result | None:
    pod_value = (_pod_sc(spec) or {}).get("runAsNonRoot")
    pod_bad = pod_value is False
    explicitly_bad, implicitly_bad = [], []
    for c in _containers(spec):
        value = (_sc(c) or {}).get("runAsNonRoot")
        if value is not None:
            if value is False:
                explicitly_bad.append(c.get("name", ""))
        elif pod_value is not True:
            implicitly_bad.append(c.get("name", ""))
    setters = _setters(pod_bad, explicitly_bad)
    if setters:
        return ("runAsNonRoot != true", f"{' and '.join(setters)} must not set securityContext.runAsNonRoot=false")
    if implicitly_bad:
        return ("runAsNonRoot != true",
                f"pod or {_plural('container', 'containers', len(implicitly_bad))} {_join_quote(implicitly_bad)} "
                "must set securityContext.runAsNonRoot=true")
    return None


def _is_zero(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value == 0


def _run_as_user(meta: dict, spec: dict) -> Result | None:
    bad = [c.get("name", "") for c in _containers(spec) if _is_zero((_sc(c) or {}).get("runAsUser"))]
    setters = _setters(_is_zero((_pod_sc(spec) or {}).get("runAsUser")), bad)
    return ("runAsUser=0", f"{' and '.join(setters)} must not set runAsUser=0") if setters else None


def _seccomp_restricted(meta: dict, spec: dict) -> Result | None:
    bad_values: set[str] = set()
    profile = (_pod_sc(spec) or {}).get("seccompProfile")
    pod_bad = pod_set = False
    if profile is not None:
        if profile.get("type") in _VALID_SECCOMP_TYPES:
            pod_set = True
        else:
            pod_bad = True
            bad_values.add(profile.get("type") or "")
    explicitly_bad, implicitly_bad = [], []
    for c in _containers(spec):
        profile = (_sc(c) or {}).get("seccompProfile")
        if profile is not None:
            if profile.get("type") not in _VALID_SECCOMP_TYPES:
                explicitly_bad.append(c.get("name", ""))
                bad_values.add(profile.get("type") or "")
        elif not pod_set:
            implicitly_bad.append(c.get("name", ""))
    setters = _setters(pod_bad, explicitly_bad)
    if setters:
        return ("seccompProfile", f"{' and '.join(setters)} must not set securityContext.seccompProfile.type to "
                                  f"{_join_quote(sorted(bad_values))}")
    if implicitly_bad:
        return ("seccompProfile",
                f"pod or {_plural('container', 'containers', len(implicitly_bad))} {_join_quote(implicitly_bad)} "
                'must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"')
    return None


# ------------------------------------------------------------------ the registry


@attrs.frozen
class _Revision:
    minimum: Version
    check: CheckFn
    overrides: tuple[str, ...] = ()


@attrs.frozen
class _Check:
    id: str
    level: str
    revisions: tuple[_Revision, ...]


_CHECKS = (
    _Check("appArmorProfile", BASELINE, (_Revision(_v(0), _app_armor_profile),)),
    _Check("capabilities_baseline", BASELINE, (_Revision(_v(0), _capabilities_baseline),)),
    _Check("hostNamespaces", BASELINE, (_Revision(_v(0), _host_namespaces),)),
    _Check("hostPathVolumes", BASELINE, (_Revision(_v(0), _host_path_volumes),)),
    _Check("hostPorts", BASELINE, (_Revision(_v(0), _host_ports),)),
    _Check("privileged", BASELINE, (_Revision(_v(0), _privileged),)),
    _Check("procMount", BASELINE, (_Revision(_v(0), _proc_mount),)),
    _Check("seLinuxOptions", BASELINE, (_Revision(_v(0), _se_linux_options),)),
    _Check("seccompProfile_baseline", BASELINE,
           (_Revision(_v(0), _seccomp_baseline_1_0), _Revision(_v(19), _seccomp_baseline_1_19))),
    _Check("sysctls", BASELINE, (_Revision(_v(0), _sysctls(_SYSCTLS_1_0)), _Revision(_v(27), _sysctls(_SYSCTLS_1_27)),
                                 _Revision(_v(29), _sysctls(_SYSCTLS_1_29)),
                                 _Revision(_v(32), _sysctls(_SYSCTLS_1_32)))),
    _Check("windowsHostProcess", BASELINE, (_Revision(_v(0), _windows_host_process),)),
    _Check("allowPrivilegeEscalation", RESTRICTED,
           (_Revision(_v(8), _allow_privilege_escalation),
            _Revision(_v(25), _linux_only(_allow_privilege_escalation)))),
    _Check("capabilities_restricted", RESTRICTED,
           (_Revision(_v(22), _capabilities_restricted, ("capabilities_baseline",)),
            _Revision(_v(25), _linux_only(_capabilities_restricted), ("capabilities_baseline",)))),
    _Check("restrictedVolumes", RESTRICTED, (_Revision(_v(0), _restricted_volumes, ("hostPathVolumes",)),)),
    _Check("runAsNonRoot", RESTRICTED, (_Revision(_v(0), _run_as_non_root),)),
    _Check("runAsUser", RESTRICTED, (_Revision(_v(23), _run_as_user),)),
    _Check("seccompProfile_restricted", RESTRICTED,
           (_Revision(_v(19), _seccomp_restricted, ("seccompProfile_baseline",)),
            _Revision(_v(25), _linux_only(_seccomp_restricted), ("seccompProfile_baseline",)))),
)

#: the newest minimum version of any check: ``latest`` and newer versions evaluate as this one
MAX_VERSION = max((r.minimum for c in _CHECKS for r in c.revisions), key=lambda v: (v.major, v.minor))


def _revision_at(check: _Check, version: Version) -> _Revision | None:
    current = None
    for r in check.revisions:
        if not version.older(r.minimum):
            current = r
    return current


_REGISTRY: dict[tuple[str, Version], tuple[CheckFn, ...]] = {}


def _checks_for(level: str, version: Version) -> tuple[CheckFn, ...]:
    """The check functions of ``level`` at ``version`` (already clamped to :data:`MAX_VERSION`), in
    upstream's order: baseline IDs sorted, then restricted IDs sorted; at ``restricted`` a baseline
    check that a restricted one overrides at this version is left out."""
    key = (level, version)
    fns = _REGISTRY.get(key)
    if fns is not None:
        return fns
    at = [(c, r) for c in _CHECKS if (r := _revision_at(c, version)) is not None]
    baseline = sorted(((c, r) for c, r in at if c.level == BASELINE), key=lambda cr: cr[0].id.encode())
    if level == BASELINE:
        chosen = baseline
    else:
        restricted = sorted(((c, r) for c, r in at if c.level == RESTRICTED), key=lambda cr: cr[0].id.encode())
        overridden = {o for _, r in restricted for o in r.overrides}
        chosen = [(c, r) for c, r in baseline if c.id not in overridden] + restricted
    fns = tuple(r.check for _, r in chosen)
    _REGISTRY[key] = fns
    return fns


def check_pod(level: str | LevelVersion, pod_spec: dict | None, pod_meta: dict | None,
              version: Version | str = LATEST) -> list[Result]:
    """The failed checks of ``level`` (``privileged``/``baseline``/``restricted``, or a
    :class:`LevelVersion`, whose version wins over ``version``) at ``version`` (a
    :class:`Version` or its text) for a pod's ``spec`` and ``metadata`` (or a template's): each
    one's ``(reason, detail)``, in upstream's order; empty when the pod is allowed. Privileged
    allows everything."""
    if isinstance(level, LevelVersion):
        level, version = level.level, level.version
    if isinstance(version, str):
        version = parse_version(version)[0]
    if level == PRIVILEGED:
        return []
    if MAX_VERSION.older(version):
        version = MAX_VERSION
    spec, meta = pod_spec or {}, pod_meta or {}
    return [r for fn in _checks_for(level, version) if (r := fn(meta, spec)) is not None]


def forbidden_detail(results: list[Result]) -> str:
    """Upstream's ``ForbiddenDetail``: ``reason (detail), reason (detail)`` (an empty detail left out)."""
    return ", ".join(f"{r} ({d})" if d else r for r, d in results)


def forbidden_reason(results: list[Result]) -> str:
    """Upstream's ``ForbiddenReason``: the reasons alone, joined by ``, ``."""
    return ", ".join(r for r, _ in results)


# ------------------------------------------------------------------ namespaces and updates


def _controller_uid(pod: dict) -> str | None:
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref.get("uid") or ""
    return None


def evaluate_pods_in_namespace(namespace: str, pods: list[dict], enforce: LevelVersion,
                               max_pods: int = NAMESPACE_MAX_PODS_TO_CHECK) -> list[str]:
    """Upstream's ``EvaluatePodsInNamespace``: the warnings of a namespace update that makes its
    enforce policy stricter. The pods are taken one per controller first (``prioritizePods``),
    at most ``max_pods`` of them (then ``new PodSecurity enforce level only checked against the
    first 3000 of 3200 existing pods``); if any violate, ``existing pods in namespace "x" violate
    the new PodSecurity enforce level "restricted:latest"``, then one warning per distinct set of
    reasons, sorted: ``web-abc (and 2 other pods): allowPrivilegeEscalation != false, …``, named
    after the lexically first pod that has it. (Upstream also stops after one second; not here.)"""
    first, duplicates, seen = [], [], set()
    for pod in pods:
        uid = _controller_uid(pod)
        if uid is None:
            first.append(pod)
        elif uid in seen:
            duplicates.append(pod)
        else:
            seen.add(uid)
            first.append(pod)
    ordered = first + duplicates
    total = len(ordered)
    ordered = ordered[:max_pods]
    counts: dict[str, list[Any]] = {}  # reason -> [first pod name, count]
    order: list[str] = []
    for pod in ordered:
        results = check_pod(enforce, pod.get("spec"), pod.get("metadata"))
        if not results:
            continue
        warning = forbidden_reason(results)
        name = (pod.get("metadata") or {}).get("name", "")
        entry = counts.get(warning)
        if entry is None:
            counts[warning] = [name, 1]
            order.append(warning)
        else:
            entry[0] = min(entry[0], name)
            entry[1] += 1
    out = []
    if len(ordered) < total:
        out.append(f"new PodSecurity enforce level only checked against the first {len(ordered)} of {total} "
                   "existing pods")
    if order:
        out.append(f"existing pods in namespace {go_quote(namespace)} violate the new PodSecurity enforce level "
                   f"{go_quote(str(enforce))}")
    decorated = []
    for warning in order:
        name, n = counts[warning]
        if n == 1:
            decorated.append(f"{name}: {warning}")
        elif n == 2:
            decorated.append(f"{name} (and 1 other pod): {warning}")
        else:
            decorated.append(f"{name} (and {n - 1} other pods): {warning}")
    return out + sorted(decorated)


def namespace_update_needs_pod_check(new: Policy, old: Policy) -> bool:
    """Whether a namespace update evaluates the existing pods: the enforce policy changed, is not
    privileged, and is not the same version at an equal or laxer level."""
    if new.enforce == old.enforce or new.enforce.level == PRIVILEGED:
        return False
    if new.enforce.version == old.enforce.version and compare_levels(new.enforce.level, old.enforce.level) < 1:
        return False
    return True


_SECCOMP_CONTAINER_ANNOTATION = "container.seccomp.security.alpha.kubernetes.io/"


def is_significant_pod_update(pod: dict, old: dict) -> bool:
    """Upstream's ``isSignificantPodUpdate``: a pod update is evaluated only when the number of
    containers or init containers changes, an image changes, an ephemeral container is added or
    changes its image, or a container's seccomp annotation changes."""
    spec, old_spec = pod.get("spec") or {}, old.get("spec") or {}
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    old_ann = (old.get("metadata") or {}).get("annotations") or {}

    def changed(c: dict, oc: dict) -> bool:
        key = _SECCOMP_CONTAINER_ANNOTATION + c.get("name", "")
        return c.get("image") != oc.get("image") or ann.get(key) != old_ann.get(key)

    for field in ("containers", "initContainers"):
        new_cs, old_cs = spec.get(field) or [], old_spec.get(field) or []
        if len(new_cs) != len(old_cs):
            return True
    for field in ("containers", "initContainers"):
        if any(changed(c, oc) for c, oc in zip(spec.get(field) or [], old_spec.get(field) or [])):
            return True
    old_ephemeral = {c.get("name"): c for c in old_spec.get("ephemeralContainers") or ()}
    for c in spec.get("ephemeralContainers") or ():
        oc = old_ephemeral.get(c.get("name"))
        if oc is None or changed(c, oc):
            return True
    return False


def pod_template_of(resource: str, obj: dict) -> dict | None:
    """The pod template (``{"metadata": …, "spec": …}``) a workload object embeds, or None (a
    ReplicationController without one)."""
    if resource == "podtemplates":
        return obj.get("template")
    spec = obj.get("spec") or {}
    if resource == "cronjobs":
        return ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template")
    return spec.get("template")
