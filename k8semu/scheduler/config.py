"""``KubeSchedulerConfiguration`` (``kubescheduler.config.k8s.io/v1``) to :class:`Profile` s.

Design
======

Upstream turns a configuration into per-profile plugin lists in two steps,
and so does this module:

1. **defaulting** (``apis/config/v1/default_plugins.go``): every profile's
   ``plugins`` are merged into the default set, which in v1 lives entirely in
   ``multiPoint`` (``mergePluginSet``: a custom entry for a default plugin
   replaces it in place, ``disabled`` removes it, ``"*"`` removes all, other
   custom entries are appended);
2. **expansion** (``frameworkImpl.expandMultiPointPlugins``): each extension
   point gets, in order, plugins explicitly enabled there that were also in
   multiPoint (overrides), then the multiPoint plugins implementing the point
   (unless disabled there), then the other explicitly enabled plugins.

Step 2 needs to know which extension points a plugin implements, so it runs
in :mod:`k8semu.scheduler.framework` when a profile is instantiated; this
module only does step 1 and the plugin-args defaulting, and stays free of
plugin imports.

Score weights: an explicit ``score`` entry's weight wins, then the multiPoint
weight, then 1. The default profile's weights are upstream's: TaintToleration
3, NodeAffinity 2, PodTopologySpread 2, InterPodAffinity 2,
NodeResourcesFit 1, NodeResourcesBalancedAllocation 1, ImageLocality 1.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = [
    "API_VERSION",
    "EXTENSION_POINTS",
    "DEFAULT_SCHEDULER_NAME",
    "DEFAULT_MULTI_POINT",
    "DEFAULT_PLUGIN_ARGS",
    "PluginRef",
    "Profile",
    "SchedulerConfiguration",
    "load_configuration",
    "default_profile",
]

API_VERSION = "kubescheduler.config.k8s.io/v1"
DEFAULT_SCHEDULER_NAME = "default-scheduler"

# Config keys of the extension points, in upstream's field order.
EXTENSION_POINTS = ("preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore",
                    "score", "reserve", "permit", "preBind", "bind", "postBind")

# getDefaultPlugins() for v1.3x, restricted to the plugins k8semu emulates
# (the cloud volume-limit plugins, VolumeZone and DynamicResources are left out).
DEFAULT_MULTI_POINT: tuple[tuple[str, int], ...] = (
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("VolumeBinding", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
)

_DEFAULT_RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]

# Defaulted plugin args (apis/config/v1/defaults.go), keyed by plugin name.
DEFAULT_PLUGIN_ARGS: dict[str, dict[str, Any]] = {
    "NodeResourcesFit": {"scoringStrategy": {"type": "LeastAllocated", "resources": _DEFAULT_RESOURCES},
                         "ignoredResources": [], "ignoredResourceGroups": []},
    "NodeResourcesBalancedAllocation": {"resources": _DEFAULT_RESOURCES},
    "PodTopologySpread": {"defaultingType": "System", "defaultConstraints": []},
    "InterPodAffinity": {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": False},
    "DefaultPreemption": {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100},
    "NodeAffinity": {},
    "VolumeBinding": {"bindTimeoutSeconds": 600},
}

# Plugins upstream knows that k8semu does not emulate: accepted in a config and ignored.
IGNORED_PLUGINS = frozenset({"VolumeZone", "NodeVolumeLimits", "EBSLimits", "GCEPDLimits",
                             "AzureDiskLimits", "DynamicResources"})


@dataclass(frozen=True)
class PluginRef:
    """An enabled plugin at a point; ``weight`` 0 means "not given"."""

    name: str
    weight: int = 0


@dataclass(frozen=True)
class Profile:
    """One defaulted ``KubeSchedulerProfile``.

    Attributes:
        scheduler_name: pods with this ``spec.schedulerName`` use the profile.
        percentage_of_nodes_to_score: ``None`` = the configuration-wide value.
        multi_point: the merged ``multiPoint`` enabled list.
        enabled / disabled: per extension point key (``"filter"`` …), the
            explicitly enabled plugins and the disabled names (``"*"`` = all).
        plugin_args: defaulted args per plugin name.
    """

    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    percentage_of_nodes_to_score: int | None = None
    multi_point: tuple[PluginRef, ...] = tuple(PluginRef(n, w) for n, w in DEFAULT_MULTI_POINT)
    enabled: Mapping[str, tuple[PluginRef, ...]] = field(default_factory=dict)
    disabled: Mapping[str, frozenset[str]] = field(default_factory=dict)
    plugin_args: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: copy.deepcopy(DEFAULT_PLUGIN_ARGS))


@dataclass(frozen=True)
class SchedulerConfiguration:
    """A defaulted ``KubeSchedulerConfiguration``.

    Attributes:
        profiles: the profiles, in configuration order.
        percentage_of_nodes_to_score: 0 = adaptive (50 - nodes/125 %, at least 5 %).
        pod_initial_backoff_seconds / pod_max_backoff_seconds: the queue's backoff.
    """

    profiles: tuple[Profile, ...]
    percentage_of_nodes_to_score: int = 0
    pod_initial_backoff_seconds: float = 1.0
    pod_max_backoff_seconds: float = 10.0


def default_profile() -> Profile:
    """The ``default-scheduler`` profile with upstream's default plugins and args."""
    return Profile()


def _refs(items: Any) -> list[PluginRef]:
    out = []
    for p in items or ():
        if not isinstance(p, Mapping) or not p.get("name"):
            raise ValueError("plugin entries need a name")
        out.append(PluginRef(p["name"], int(p.get("weight") or 0)))
    return out


def _merge_plugin_set(default: list[PluginRef], custom: Mapping[str, Any] | None) -> tuple[list[PluginRef], set[str]]:
    """Upstream ``mergePluginSet``: returns (enabled, disabled names)."""
    custom = custom or {}
    disabled = {p["name"] for p in custom.get("disabled") or () if p.get("name")}
    custom_enabled = _refs(custom.get("enabled"))
    by_name = {p.name: i for i, p in enumerate(custom_enabled)}
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if "*" not in disabled:
        for d in default:
            if d.name in disabled:
                continue
            if d.name in by_name:
                i = by_name[d.name]
                d = custom_enabled[i]
                replaced.add(i)
            enabled.append(d)
    enabled += [p for i, p in enumerate(custom_enabled) if i not in replaced]
    return enabled, disabled


def _profile(raw: Mapping[str, Any]) -> Profile:
    plugins = raw.get("plugins") or {}
    multi, _ = _merge_plugin_set([PluginRef(n, w) for n, w in DEFAULT_MULTI_POINT], plugins.get("multiPoint"))
    enabled: dict[str, tuple[PluginRef, ...]] = {}
    disabled: dict[str, frozenset[str]] = {}
    for point in EXTENSION_POINTS:
        en, dis = _merge_plugin_set([], plugins.get(point))
        enabled[point] = tuple(en)
        disabled[point] = frozenset(dis)
    args = copy.deepcopy(DEFAULT_PLUGIN_ARGS)
    for pc in raw.get("pluginConfig") or ():
        name = pc.get("name")
        if not name:
            raise ValueError("pluginConfig entries need a name")
        merged = dict(args.get(name, {}))
        merged.update(pc.get("args") or {})
        merged.pop("kind", None)
        merged.pop("apiVersion", None)
        args[name] = merged
    pct = raw.get("percentageOfNodesToScore")
    if pct is not None and not 0 <= int(pct) <= 100:
        raise ValueError(f"percentageOfNodesToScore: Invalid value: {pct}: not in valid range [0-100]")
    return Profile(scheduler_name=raw.get("schedulerName") or DEFAULT_SCHEDULER_NAME,
                   percentage_of_nodes_to_score=None if pct is None else int(pct),
                   multi_point=tuple(multi), enabled=enabled, disabled=disabled, plugin_args=args)


def load_configuration(raw: Mapping[str, Any] | None = None) -> SchedulerConfiguration:
    """Default a ``KubeSchedulerConfiguration`` dict (``None`` = all defaults).

    Raises:
        ValueError: wrong ``apiVersion``/``kind``, duplicate scheduler names,
            a percentage outside [0, 100], or malformed plugin entries.
    """
    raw = raw or {"apiVersion": API_VERSION, "kind": "KubeSchedulerConfiguration"}
    if raw.get("apiVersion", API_VERSION) != API_VERSION or raw.get("kind", "KubeSchedulerConfiguration") != "KubeSchedulerConfiguration":
        raise ValueError(f"no kind \"{raw.get('kind')}\" is registered for version \"{raw.get('apiVersion')}\"")
    profiles = tuple(_profile(p) for p in raw.get("profiles") or [{}])
    names = [p.scheduler_name for p in profiles]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"profiles[1].schedulerName: Duplicate value: \"{dup[0]}\"")
    pct = int(raw.get("percentageOfNodesToScore") or 0)
    if not 0 <= pct <= 100:
        raise ValueError(f"percentageOfNodesToScore: Invalid value: {pct}: not in valid range [0-100]")
    return SchedulerConfiguration(
        profiles=profiles, percentage_of_nodes_to_score=pct,
        pod_initial_backoff_seconds=float(raw.get("podInitialBackoffSeconds") or 1),
        pod_max_backoff_seconds=float(raw.get("podMaxBackoffSeconds") or 10))
