"""The scheduling framework and one scheduling cycle, as upstream ``pkg/scheduler/framework``
and ``pkg/scheduler/schedule_one.go``.

Design
======

A :class:`Framework` is one instantiated profile: the plugin objects for each
extension point, in upstream's expanded order, and the score weights. Plugins
are plain objects; which extension points a plugin implements is decided by
the methods it has (``pre_filter``, ``filter``, ``score`` …, see the
``*Plugin`` protocols below). Success is spelled ``None`` (as upstream's nil
``*Status``); anything else is a :class:`Status`.

:meth:`Framework.schedule_one` is the pure, synchronous core of a scheduling
cycle: PreFilter → (nominated node first) → Filter over nodes starting at a
round-robin index until ``numFeasibleNodesToFind`` fit → PreScore → Score →
NormalizeScore → weights → :func:`select_host` (reservoir sampling among the
top scores with the caller's seeded ``random.Random``). When no node fits it
runs PostFilter (DefaultPreemption) and returns a :class:`FitError` whose
:meth:`FitError.message` is upstream's ``FailedScheduling`` text. It never
mutates the snapshot or the pod; the caller assumes the pod in the cache,
deletes preemption victims and binds.

Hot path. Plugins may also offer batch forms — ``filter_nodes`` (a verdict per
node of a batch), ``score_nodes`` and ``normalize_scores`` (plain lists instead
of :class:`NodeScore` objects) — which must give exactly what the per-node forms
give. When no pod is nominated the Filter loop runs in batches of as many
nodes as feasible ones are still wanted (so it stops where the node-by-node
loop would), each plugin seeing only the nodes the plugins before it accepted;
the Score loop always uses the batch forms where they exist. Decisions,
messages and explanations are the same either way (``tests/test_scheduler_placements.py``
pins them).

Every result carries the raw material for an ``explain-scheduling`` report
(:meth:`ScheduleResult.explanation`): per node the Filter verdict and the
rejecting plugin, per plugin the raw, normalised and weighted scores.
"""

from __future__ import annotations

import copy
import enum
import random
from collections import OrderedDict
from collections.abc import MutableMapping
from itertools import repeat
from operator import add, mul
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence

from .cache import Snapshot
from .config import (EXTENSION_POINTS, IGNORED_PLUGINS, Profile, SchedulerConfiguration,
                     default_profile, load_configuration)
from .types import NodeInfo, PodInfo

__all__ = [
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "MIN_FEASIBLE_NODES_TO_FIND",
    "MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND",
    "Code",
    "Status",
    "CycleState",
    "NodeScore",
    "PreFilterResult",
    "PostFilterResult",
    "Nominator",
    "PreEnqueuePlugin",
    "QueueSortPlugin",
    "PreFilterPlugin",
    "FilterPlugin",
    "PostFilterPlugin",
    "PreScorePlugin",
    "ScorePlugin",
    "ReservePlugin",
    "PermitPlugin",
    "PreBindPlugin",
    "BindPlugin",
    "PostBindPlugin",
    "Registry",
    "Framework",
    "Diagnosis",
    "FitError",
    "ScheduleResult",
    "NodeExplanation",
    "Explanation",
    "Explanations",
    "num_feasible_nodes_to_find",
    "select_host",
    "default_normalize_score",
    "default_normalize_scores",
    "new_frameworks",
    "ERR_NO_NODES_AVAILABLE",
]

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
ERR_NO_NODES_AVAILABLE = "no nodes available to schedule pods"


class Code(enum.IntEnum):
    """Upstream ``framework.Code``; ``str()`` gives upstream's names."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6

    def __str__(self) -> str:
        return ("Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable",
                "Wait", "Skip", "Pending")[self.value]


@dataclass(frozen=True, slots=True)
class Status:
    """A plugin verdict (upstream ``*framework.Status``). Plugins return None for success.

    Attributes:
        code: a :class:`Code`.
        reasons: the reason strings (each counted separately in a FitError).
        plugin: the plugin that produced it (set by the framework).
    """

    code: Code
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @classmethod
    def unschedulable(cls, *reasons: str) -> "Status":
        return cls(Code.UNSCHEDULABLE, reasons)

    @classmethod
    def unresolvable(cls, *reasons: str) -> "Status":
        """``UnschedulableAndUnresolvable``: preemption cannot help on this node."""
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)

    @classmethod
    def error(cls, message: str) -> "Status":
        return cls(Code.ERROR, (message,))

    @classmethod
    def skip(cls) -> "Status":
        return cls(Code.SKIP)

    def message(self) -> str:
        """The reasons joined with ``", "`` (upstream ``Status.Message``)."""
        return ", ".join(self.reasons)

    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

    def with_plugin(self, plugin: str) -> "Status":
        return self if self.plugin == plugin else Status(self.code, self.reasons, plugin)


def _ok(st: Status | None) -> bool:
    return st is None or st.code == Code.SUCCESS


class CycleState:
    """Per-cycle scratch space shared by the plugins (upstream ``framework.CycleState``).

    Attributes:
        snapshot: the cycle's :class:`Snapshot`.
        nominator: where nominated pods come from (may be None).
        rng: the cycle's seeded ``random.Random`` (preemption's start offset).
        data: ``{key: value}``; values with a ``clone()`` method are cloned by :meth:`clone`.
        skip_filter_plugins / skip_score_plugins: names that returned Skip at PreFilter / PreScore.
    """

    __slots__ = ("snapshot", "nominator", "rng", "data", "skip_filter_plugins", "skip_score_plugins")

    def __init__(self, snapshot: Snapshot, nominator: "Nominator | None" = None,
                 rng: random.Random | None = None) -> None:
        self.snapshot = snapshot
        self.nominator = nominator
        self.rng = rng
        self.data: dict[str, Any] = {}
        self.skip_filter_plugins: frozenset[str] = frozenset()
        self.skip_score_plugins: frozenset[str] = frozenset()

    def read(self, key: str) -> Any:
        """The value stored under ``key``, or None."""
        return self.data.get(key)

    def write(self, key: str, value: Any) -> None:
        self.data[key] = value

    def clone(self) -> "CycleState":
        """A copy whose plugin states can diverge (preemption, nominated pods)."""
        c = CycleState(self.snapshot, self.nominator, self.rng)
        c.data = {k: (v.clone() if hasattr(v, "clone") else v) for k, v in self.data.items()}
        c.skip_filter_plugins = self.skip_filter_plugins
        c.skip_score_plugins = self.skip_score_plugins
        return c


@dataclass(slots=True)
class NodeScore:
    """A node's score from one plugin (mutable so NormalizeScore can rewrite it)."""

    name: str
    score: int


@dataclass(frozen=True)
class PreFilterResult:
    """``node_names``: the only nodes worth filtering (None = all nodes)."""

    node_names: frozenset[str] | None = None

    def merge(self, other: "PreFilterResult | None") -> "PreFilterResult":
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return other
        return PreFilterResult(self.node_names & other.node_names)


@dataclass(frozen=True)
class PostFilterResult:
    """What PostFilter found: the node to nominate (``""`` = clear the pod's nomination),
    the pods to delete first, and lower-priority pods nominated to that node whose
    ``status.nominatedNodeName`` should be cleared."""

    nominated_node_name: str = ""
    victims: tuple[Mapping[str, Any], ...] = ()
    nominated_pods_to_clear: tuple[Mapping[str, Any], ...] = ()


class Nominator(Protocol):
    """Who knows which pods are nominated to which node (the scheduling queue)."""

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]: ...


# --- extension point protocols ----------------------------------------------------------
# Each plugin has ``name`` (its NAME constant). Statuses: None = success.

class PreEnqueuePlugin(Protocol):
    name: str

    def pre_enqueue(self, pod: Mapping[str, Any]) -> Status | None: ...


class QueueSortPlugin(Protocol):
    name: str

    def less(self, a: Any, b: Any) -> bool: ...


class PreFilterPlugin(Protocol):
    name: str

    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status | None]: ...

    # optional PreFilterExtensions, used by preemption and nominated pods:
    # add_pod(state, pod, pod_to_add: PodInfo, node_info) / remove_pod(...)


class FilterPlugin(Protocol):
    name: str

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None: ...

    # optional batch form, used when no pods are nominated:
    # filter_nodes(state, pod, nodes: list[NodeInfo]) -> list[Status | None] | None
    # returns, per node, exactly what ``filter`` would (None = the whole batch passes).


class PostFilterPlugin(Protocol):
    name: str

    def post_filter(self, state: CycleState, pod: PodInfo,
                    statuses: Mapping[str, Status]) -> tuple[PostFilterResult | None, Status | None]: ...


class PreScorePlugin(Protocol):
    name: str

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None: ...


class ScorePlugin(Protocol):
    name: str

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status | None]: ...

    # optional: normalize_score(state, pod, scores: list[NodeScore]) -> Status | None
    # optional batch forms (must give exactly what the per-node forms give):
    # score_nodes(state, pod, nodes: list[NodeInfo]) -> list[int]   (scores never fail)
    # normalize_scores(state, pod, names: list[str], scores: list[int]) -> list[int]


class ReservePlugin(Protocol):
    name: str

    def reserve(self, state: CycleState, pod: Mapping[str, Any], node_name: str) -> Status | None: ...

    def unreserve(self, state: CycleState, pod: Mapping[str, Any], node_name: str) -> None: ...


class PermitPlugin(Protocol):
    name: str

    def permit(self, state: CycleState, pod: Mapping[str, Any], node_name: str) -> tuple[Status | None, float]: ...


class PreBindPlugin(Protocol):
    name: str

    def pre_bind(self, state: CycleState, pod: Mapping[str, Any], node_name: str) -> Status | None: ...


class BindPlugin(Protocol):
    name: str

    def bind(self, state: CycleState, pod: Mapping[str, Any], node_name: str) -> tuple[Any, Status | None]: ...


class PostBindPlugin(Protocol):
    name: str

    def post_bind(self, state: CycleState, pod: Mapping[str, Any], node_name: str) -> None: ...


_POINT_METHOD = {
    "preEnqueue": "pre_enqueue", "queueSort": "less", "preFilter": "pre_filter", "filter": "filter",
    "postFilter": "post_filter", "preScore": "pre_score", "score": "score", "reserve": "reserve",
    "permit": "permit", "preBind": "pre_bind", "bind": "bind", "postBind": "post_bind",
}

PluginFactory = Callable[[Mapping[str, Any], "Framework"], Any]


class Registry(dict):
    """Plugin name → factory ``(args: dict, handle: Framework) -> plugin`` (upstream ``runtime.Registry``).

    :meth:`in_tree` returns the registry of the default plugins.
    """

    def register(self, name: str, factory: PluginFactory) -> None:
        """Add a plugin factory. Raises ValueError if ``name`` is taken."""
        if name in self:
            raise ValueError(f"a plugin named {name} already exists")
        self[name] = factory

    @classmethod
    def in_tree(cls) -> "Registry":
        from .plugins import in_tree_registry

        return cls(in_tree_registry())


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> None:
    """Upstream ``helper.DefaultNormalizeScore``: scale to [0, max_priority] by the highest
    score (integer division), optionally reversed; all-zero scores become max (reverse) or stay 0."""
    max_count = max((s.score for s in scores), default=0)
    if max_count == 0:
        if reverse:
            for s in scores:
                s.score = max_priority
        return
    for s in scores:
        v = max_priority * s.score // max_count
        s.score = max_priority - v if reverse else v


def default_normalize_scores(max_priority: int, reverse: bool, scores: list[int]) -> list[int]:
    """:func:`default_normalize_score` on a plain list of scores; returns the new list."""
    max_count = max(scores, default=0)
    if max_count == 0:
        return [max_priority] * len(scores) if reverse else list(scores)
    if reverse:
        return [max_priority - max_priority * s // max_count for s in scores]
    return [max_priority * s // max_count for s in scores]


def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    """How many feasible nodes to look for (upstream ``numFeasibleNodesToFind``).

    Fewer than 100 nodes: all. ``percentage`` 0 means adaptive
    ``50 - nodes/125`` (integer), at least 5 %. The result is at least 100.
    """
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage == 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    n = num_all_nodes * percentage // 100
    return max(n, MIN_FEASIBLE_NODES_TO_FIND)


def select_host(names: Sequence[str], totals: Sequence[int], rng: random.Random) -> tuple[str, int]:
    """The node with the highest total score; ties broken by reservoir sampling with ``rng``
    (each of the k tied nodes wins with probability 1/k, as upstream ``selectHost``).
    Returns (name, number of nodes tied at the top).

    The k-th tie draws ``rng.randrange(k)``; for a plain ``random.Random`` the draw is
    inlined (the same ``getrandbits`` calls ``randrange`` makes), so the choice for a
    given seed does not depend on the fast path.

    Raises:
        ValueError: ``names`` is empty ("empty priorityList").
    """
    if not names:
        raise ValueError("empty priorityList")
    inline = (type(rng).randrange is random.Random.randrange
              and type(rng)._randbelow is random.Random._randbelow_with_getrandbits)
    getrandbits = rng.getrandbits
    best, selected, count = totals[0], names[0], 1
    k, limit = 1, 2  # count.bit_length() and the count at which it grows
    i = 0
    for total in totals:
        if total > best:
            best, selected, count, k, limit = total, names[i], 1, 1, 2
        elif total == best and i:
            count += 1
            if count == limit:
                k += 1
                limit <<= 1
            if inline:
                r = getrandbits(k)
                while r >= count:
                    r = getrandbits(k)
            else:
                r = rng.randrange(count)
            if r == 0:
                selected = names[i]
        i += 1
    return selected, count


# --- results ------------------------------------------------------------------------------

@dataclass
class Diagnosis:
    """Why nodes were rejected (upstream ``framework.Diagnosis``)."""

    node_to_status: dict[str, Status] = field(default_factory=dict)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

    def add_plugin_status(self, st: Status) -> None:
        if st.plugin and st.is_rejected():
            self.unschedulable_plugins.add(st.plugin)


@dataclass
class FitError:
    """No node fits the pod (upstream ``framework.FitError``)."""

    pod: Mapping[str, Any]
    num_all_nodes: int
    diagnosis: Diagnosis

    def message(self) -> str:
        """Upstream ``FitError.Error()``: ``0/N nodes are available: <PreFilter msg>.
        <"count reason" histogram, strings sorted, ", "-joined>. <PostFilter msg>.``
        (the histogram is omitted when PreFilter rejected the pod; a PostFilter
        message that already ends with ``.`` gets no second one, as in v1.30+)."""
        msg = f"0/{self.num_all_nodes} nodes are available:"
        d = self.diagnosis
        if d.pre_filter_msg:
            msg += f" {d.pre_filter_msg}."
        else:
            counts: dict[str, int] = {}
            for st in d.node_to_status.values():
                for r in st.reasons:
                    counts[r] = counts.get(r, 0) + 1
            hist = sorted(f"{n} {r}" for r, n in counts.items())
            if hist:
                msg += f" {', '.join(hist)}."
        if d.post_filter_msg:
            pf = d.post_filter_msg
            msg += f" {pf}" if pf.endswith(".") else f" {pf}."
        return msg

    __str__ = message


@dataclass(frozen=True)
class NodeExplanation:
    """One node in an ``explain-scheduling`` report.

    ``filter_code`` is ``"Success"`` for a feasible node, or the rejecting
    status's code with ``filter_plugin`` and ``reasons``; ``scores`` maps a
    plugin name to (raw, normalised, weighted); ``total`` sums the weighted.
    """

    name: str
    filter_code: str
    filter_plugin: str = ""
    reasons: tuple[str, ...] = ()
    scores: Mapping[str, tuple[int, int, int]] = field(default_factory=dict)
    total: int | None = None


@dataclass(frozen=True)
class Explanation:
    """Why the scheduler chose (or could not choose) a node for one pod."""

    pod: str
    num_all_nodes: int
    num_nodes_to_find: int
    start_index: int
    nodes: tuple[NodeExplanation, ...]
    weights: Mapping[str, int]
    chosen: str | None
    tied: int
    message: str

    def lines(self) -> list[str]:
        """A plain-text rendering, one node per line (the CLI's ``explain-scheduling``)."""
        out = [f"pod {self.pod}: {self.num_all_nodes} nodes, looking for {self.num_nodes_to_find} feasible, "
               f"starting at index {self.start_index}"]
        for n in self.nodes:
            if n.filter_code != "Success":
                out.append(f"  {n.name}: filtered by {n.filter_plugin} ({n.filter_code}): {', '.join(n.reasons)}")
            else:
                parts = ", ".join(f"{p}={raw}->{norm}x{self.weights.get(p, 1)}={w}" for p, (raw, norm, w) in n.scores.items())
                out.append(f"  {n.name}: feasible" + (f"; total {n.total}: {parts}" if n.total is not None else ""))
        out.append(f"chosen: {self.chosen} ({self.tied} tied)" if self.chosen else f"unschedulable: {self.message}")
        return out


@dataclass
class ScheduleResult:
    """The outcome of :meth:`Framework.schedule_one`.

    Attributes:
        suggested_host: the chosen node, or None.
        evaluated_nodes / feasible_nodes: counts as upstream's ScheduleResult.
        fit_error: set when no node fits; ``fit_error.message()`` is the
            ``FailedScheduling`` event text.
        error: an Error status (a plugin failed, or there are no nodes).
        post_filter: PostFilter's nominated node and victims (when it ran).
        state: the cycle state, for Reserve/Permit/PreBind/Bind.
    """

    suggested_host: str | None = None
    evaluated_nodes: int = 0
    feasible_nodes: int = 0
    fit_error: FitError | None = None
    error: Status | None = None
    post_filter: PostFilterResult | None = None
    state: CycleState | None = None
    _pod: str = ""
    _num_all: int = 0
    _num_to_find: int = 0
    _start: int = 0
    _order: list[str] = field(default_factory=list)
    _statuses: Mapping[str, Status] = field(default_factory=dict)
    _scores: dict[str, tuple[list[int], list[int], int]] = field(default_factory=dict)
    _score_names: list[str] = field(default_factory=list)
    _tied: int = 0
    _weights: Mapping[str, int] = field(default_factory=dict)

    def message(self) -> str:
        """The failure text (FitError message, or the error), or ``""`` on success."""
        if self.fit_error is not None:
            return self.fit_error.message()
        if self.error is not None:
            return self.error.message()
        return ""

    def explanation(self) -> Explanation:
        """Per node: the Filter verdict, per-plugin raw/normalised/weighted scores, total."""
        index = {n: i for i, n in enumerate(self._score_names)}
        nodes = []
        for name in self._order:
            st = self._statuses.get(name)
            if st is not None:
                nodes.append(NodeExplanation(name, str(st.code), st.plugin, st.reasons))
                continue
            i = index.get(name)
            if i is None:
                nodes.append(NodeExplanation(name, "Success"))
                continue
            scores = {p: (raw[i], norm[i], norm[i] * w) for p, (raw, norm, w) in self._scores.items()}
            nodes.append(NodeExplanation(name, "Success", scores=scores,
                                         total=sum(v[2] for v in scores.values())))
        return Explanation(self._pod, self._num_all, self._num_to_find, self._start, tuple(nodes),
                           dict(self._weights), self.suggested_host, self._tied, self.message())


class Explanations(MutableMapping):
    """``{key: Explanation}`` that builds each :class:`Explanation` only when it is read.

    Building an explanation (one record per evaluated node, with every plugin's scores)
    costs more than the scheduling cycle itself, and most are never looked at. Values
    are stored with :meth:`record` as the :class:`ScheduleResult` minus its cycle
    state (so no snapshot is kept alive) and turned into an Explanation on first read.
    Only the latest ``limit`` pods' are kept (each is ~5 KB; a cluster schedules
    pods without end, and ``explain-scheduling`` re-derives any decision from the log).
    """

    def __init__(self, limit: int = 1024) -> None:
        self._data: OrderedDict[str, Any] = OrderedDict()
        self._limit = limit

    def record(self, key: str, result: ScheduleResult) -> None:
        """Keep ``result``'s explanation under ``key`` (built lazily), dropping the
        oldest kept one beyond ``limit``."""
        kept = copy.copy(result)
        kept.state = None
        self._data.pop(key, None)
        self._data[key] = kept
        if len(self._data) > self._limit:
            self._data.popitem(last=False)

    def __getitem__(self, key: str) -> Explanation:
        v = self._data[key]
        if isinstance(v, ScheduleResult):
            v = self._data[key] = v.explanation()
        return v

    def __setitem__(self, key: str, value: Explanation) -> None:
        self._data[key] = value

    def __delitem__(self, key: str) -> None:
        del self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


# --- the framework ---------------------------------------------------------------------------

class Framework:
    """One instantiated scheduling profile (upstream ``frameworkImpl`` plus the scheduler's
    ``schedulePod``), with the round-robin start index carried between cycles.

    Args:
        profile: a :class:`~k8semu.scheduler.config.Profile` (default: the default profile).
        registry: plugin factories (default: :meth:`Registry.in_tree`).
        percentage_of_nodes_to_score: the configuration-wide value (0 = adaptive);
            the profile's own value wins when set.

    Raises:
        ValueError: an unknown plugin name, or a plugin enabled twice at a point.
    """

    def __init__(self, profile: Profile | None = None, registry: Registry | None = None,
                 percentage_of_nodes_to_score: int = 0) -> None:
        profile = profile or default_profile()
        registry = registry if registry is not None else Registry.in_tree()
        self.profile = profile
        self.scheduler_name = profile.scheduler_name
        pct = profile.percentage_of_nodes_to_score
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score if pct is None else pct
        self.next_start_node_index = 0
        names: list[str] = []
        for ref in profile.multi_point:
            names.append(ref.name)
        for point in EXTENSION_POINTS:
            names += [r.name for r in profile.enabled.get(point, ())]
        self.plugins: dict[str, Any] = {}
        for name in names:
            if name in self.plugins or name in IGNORED_PLUGINS:
                continue
            factory = registry.get(name)
            if factory is None:
                raise ValueError(f"plugin \"{name}\" does not exist")
            self.plugins[name] = factory(profile.plugin_args.get(name, {}), self)
        self.points: dict[str, list[Any]] = {p: self._expand(p) for p in EXTENSION_POINTS}
        mp_weight = {r.name: r.weight for r in profile.multi_point}
        explicit = {r.name: r.weight for r in profile.enabled.get("score", ())}
        self.score_weights: dict[str, int] = {}
        for pl in self.points["score"]:
            w = explicit.get(pl.name) or mp_weight.get(pl.name) or 1
            self.score_weights[pl.name] = w
        self.pre_filter_plugins = self.points["preFilter"]
        self.filter_plugins = self.points["filter"]
        self.score_plugins = self.points["score"]

    def _expand(self, point: str) -> list[Any]:
        """Upstream ``expandMultiPointPlugins`` for one extension point."""
        method = _POINT_METHOD[point]
        disabled = self.profile.disabled.get(point, frozenset())
        enabled = [r.name for r in self.profile.enabled.get(point, ()) if r.name not in IGNORED_PLUGINS]
        if len(set(enabled)) != len(enabled):
            raise ValueError(f"plugin enabled more than once at extension point {point}")
        if "*" in disabled:
            multi: list[str] = []
        else:
            multi = [r.name for r in self.profile.multi_point
                     if r.name in self.plugins and hasattr(self.plugins[r.name], method) and r.name not in disabled]
        overrides = [n for n in enabled if n in multi]
        order = overrides + [n for n in multi if n not in overrides] + [n for n in enabled if n not in overrides]
        out = []
        for n in order:
            pl = self.plugins[n]
            if not hasattr(pl, method):
                raise ValueError(f"plugin \"{n}\" does not extend {point} plugin")
            out.append(pl)
        return out

    # --- queue-side points -----------------------------------------------------------------
    def run_pre_enqueue(self, pod: Mapping[str, Any]) -> Status | None:
        """The first non-success PreEnqueue status (with its plugin), or None."""
        for pl in self.points["preEnqueue"]:
            st = pl.pre_enqueue(pod)
            if not _ok(st):
                return st.with_plugin(pl.name)
        return None

    def queue_sort_less(self) -> Callable[[Any, Any], bool]:
        """The QueueSort ``less(a, b)`` on queued pod infos."""
        return self.points["queueSort"][0].less

    # --- filtering ---------------------------------------------------------------------------
    def run_pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult, Status | None]:
        """Run PreFilter plugins; Skip records the plugin in ``state.skip_filter_plugins``."""
        result = PreFilterResult()
        skipped: set[str] = set()
        with_nodes: list[str] = []
        for pl in self.pre_filter_plugins:
            r, st = pl.pre_filter(state, pod)
            if st is not None and st.code == Code.SKIP:
                skipped.add(pl.name)
                continue
            if not _ok(st):
                st = st.with_plugin(pl.name)
                if st.is_rejected():
                    return result, st
                return result, Status(Code.ERROR, (f'running PreFilter plugin "{pl.name}": {st.message()}',), pl.name)
            if r is not None and r.node_names is not None:
                with_nodes.append(pl.name)
            result = result.merge(r)
            if result.node_names is not None and not result.node_names:
                if len(with_nodes) == 1:
                    msg = f"node(s) didn't satisfy plugin {with_nodes[0]}"
                else:
                    msg = f"node(s) didn't satisfy plugin(s) [{' '.join(with_nodes)}] simultaneously"
                return result, Status.unresolvable(msg)
        state.skip_filter_plugins = frozenset(skipped)
        return result, None

    def run_filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        """Filter plugins in order; the first rejection (tagged with its plugin) or None."""
        skip = state.skip_filter_plugins
        for pl in self.filter_plugins:
            if skip and pl.name in skip:
                continue
            st = pl.filter(state, pod, node_info)
            if st is not None and st.code != Code.SUCCESS:
                if not st.is_rejected():
                    return Status(Code.ERROR, (f'running "{pl.name}" filter plugin: {st.message()}',), pl.name)
                return st.with_plugin(pl.name)
        return None

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo,
                                         node_info: NodeInfo) -> None:
        """Tell stateful PreFilter plugins that ``to_add`` now runs on ``node_info``."""
        for pl in self.pre_filter_plugins:
            if pl.name not in state.skip_filter_plugins and hasattr(pl, "add_pod"):
                pl.add_pod(state, pod, to_add, node_info)

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo,
                                            node_info: NodeInfo) -> None:
        """Tell stateful PreFilter plugins that ``to_remove`` left ``node_info``."""
        for pl in self.pre_filter_plugins:
            if pl.name not in state.skip_filter_plugins and hasattr(pl, "remove_pod"):
                pl.remove_pod(state, pod, to_remove, node_info)

    def run_filter_with_nominated_pods(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        """Upstream ``RunFilterPluginsWithNominatedPods``: filter once with the node's nominated
        pods of equal or higher priority added, and, if that passes, once without them."""
        nominator = state.nominator
        nominated = nominator.nominated_pods_for_node(node_info.name) if nominator is not None else ()
        extra = [p for p in nominated if p.priority >= pod.priority and p.key != pod.key]
        if not extra:
            return self.run_filter(state, pod, node_info)
        state2 = state.clone()
        ni2 = node_info.clone()
        for p in extra:
            ni2.add_pod(p)
            self.run_pre_filter_extension_add_pod(state2, pod, p, ni2)
        st = self.run_filter(state2, pod, ni2)
        if not _ok(st):
            return st
        return self.run_filter(state, pod, node_info)

    # --- the scheduling cycle -------------------------------------------------------------------
    def schedule_one(self, pod: Mapping[str, Any], snapshot: Snapshot, rng: random.Random,
                     nominator: Nominator | None = None) -> ScheduleResult:
        """Decide a node for ``pod`` (upstream ``schedulingCycle`` up to, not including, Reserve).

        Args:
            pod: the wire-form Pod (not mutated).
            snapshot: the cycle's :meth:`Cache.snapshot`.
            rng: seeded randomness for tie-breaking and preemption's start offset.
            nominator: the queue (nominated pods are counted on their nodes).

        Returns:
            A :class:`ScheduleResult`: ``suggested_host`` set on success; otherwise
            ``fit_error`` (with PostFilter's outcome in ``post_filter``) or ``error``.
        """
        pi = PodInfo.of(pod)
        state = CycleState(snapshot, nominator, rng)
        res = ScheduleResult(state=state, _pod=pi.key if not pi.namespace else
                             f"{pi.namespace}/{(pod.get('metadata') or {}).get('name', '')}",
                             _weights=self.score_weights)
        all_nodes = snapshot.node_infos
        n_all = len(all_nodes)
        res._num_all = n_all
        if n_all == 0:
            res.error = Status.error(ERR_NO_NODES_AVAILABLE)
            return res
        diagnosis = Diagnosis()
        statuses = diagnosis.node_to_status
        res._statuses = statuses
        pre_res, st = self.run_pre_filter(state, pi)
        feasible: list[NodeInfo] = []
        if not _ok(st):
            if not st.is_rejected():
                res.error = st
                return res
            for ni in all_nodes:
                statuses[ni.name] = st
            diagnosis.pre_filter_msg = st.message()
            diagnosis.add_plugin_status(st)
            res._order = [ni.name for ni in all_nodes]
        else:
            nominated = ((pod.get("status") or {}).get("nominatedNodeName") or "")
            if nominated and snapshot.get(nominated) is not None:
                ni = snapshot.by_name[nominated]
                nst = self.run_filter_with_nominated_pods(state, pi, ni)
                if nst is not None and nst.code == Code.ERROR:
                    res.error = nst
                    return res
                if _ok(nst):
                    feasible = [ni]
                    res._order = [nominated]
            if not feasible:
                feasible = self._find_nodes_that_pass_filters(state, pi, pre_res, diagnosis, res)
                if res.error is not None:
                    return res
        res.evaluated_nodes = len(feasible) + len(statuses)
        res.feasible_nodes = len(feasible)
        if not feasible:
            res.fit_error = FitError(pod, n_all, diagnosis)
            if self.points["postFilter"]:
                pf, pst = self.run_post_filter(state, pi, statuses)
                res.post_filter = pf
                if pst is not None and pst.reasons:
                    diagnosis.post_filter_msg = pst.message()
            return res
        if len(feasible) == 1:
            res.suggested_host = feasible[0].name
            res._tied = 1
            return res
        names, totals = self._prioritize(state, pi, feasible, res)
        if res.error is not None:
            return res
        res.suggested_host, res._tied = select_host(names, totals, rng)
        return res

    def _find_nodes_that_pass_filters(self, state: CycleState, pod: PodInfo, pre_res: PreFilterResult,
                                      diagnosis: Diagnosis, res: ScheduleResult) -> list[NodeInfo]:
        snapshot = state.snapshot
        statuses = diagnosis.node_to_status
        nodes = snapshot.node_infos
        if pre_res.node_names is not None:
            # one status for every node the PreFilter result leaves out, as upstream's
            # SetAbsentNodesStatus (a DaemonSet pod's affinity names one node of thousands)
            absent = Status.unresolvable("node is filtered out by the prefilter result")
            kept = []
            for ni in nodes:
                if ni.name in pre_res.node_names:
                    kept.append(ni)
                else:
                    statuses[ni.name] = absent
            nodes = kept
        n = len(nodes)
        if n == 0:
            res._order = list(statuses)
            return []
        to_find = num_feasible_nodes_to_find(self.percentage_of_nodes_to_score, n)
        res._num_to_find = to_find
        start = self.next_start_node_index % n
        res._start = start
        feasible: list[NodeInfo] = []
        order = res._order = [name for name in statuses]
        nominator = state.nominator
        has_nominator = nominator is not None
        run = self.run_filter_with_nominated_pods if has_nominator else self.run_filter
        if not self.filter_plugins:
            feasible = [nodes[(start + i) % n] for i in range(min(to_find, n))]
            order += [ni.name for ni in feasible]
        elif not has_nominator or not getattr(nominator, "has_nominated_pods", lambda: True)():
            feasible = self._filter_batched(state, pod, nodes, start, to_find, diagnosis, order, res)
        else:
            for i in range(n):
                ni = nodes[(start + i) % n]
                st = run(state, pod, ni)
                order.append(ni.name)
                if st is None or st.code == Code.SUCCESS:
                    feasible.append(ni)
                    if len(feasible) >= to_find:
                        break
                elif st.code == Code.ERROR:
                    res.error = st
                    break
                else:
                    statuses[ni.name] = st
                    diagnosis.add_plugin_status(st)
        processed = len(feasible) + len(statuses)
        self.next_start_node_index = (self.next_start_node_index + processed) % n
        return feasible

    def _filter_batched(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], start: int,
                        to_find: int, diagnosis: Diagnosis, order: list[str],
                        res: ScheduleResult) -> list[NodeInfo]:
        """The Filter loop in batches: same verdicts, order and stopping point as the
        node-by-node loop, but each plugin sees a whole batch (``filter_nodes``).

        A batch holds as many nodes as feasible ones are still wanted, so it never runs
        past the node where the node-by-node loop would have stopped; each plugin only
        sees the batch's nodes the plugins before it accepted. A batch with an Error
        status is redone node by node, so the error is the one that loop would report.
        """
        statuses = diagnosis.node_to_status
        skip = state.skip_filter_plugins
        plugins = [pl for pl in self.filter_plugins if not (skip and pl.name in skip)]
        batchers = [getattr(pl, "filter_nodes", None) for pl in plugins]
        n = len(nodes)
        ring = nodes[start:] + nodes[:start] if start else nodes
        feasible: list[NodeInfo] = []
        pos = 0
        while pos < n and len(feasible) < to_find:
            chunk = ring[pos:pos + (to_find - len(feasible))]
            pos += len(chunk)
            cand = chunk
            rejected: dict[str, Status] | None = None
            for pl, batch in zip(plugins, batchers):
                if batch is not None:
                    out = batch(state, pod, cand)
                    if out is None or out.count(None) == len(out):
                        continue
                else:
                    f = pl.filter
                    out = [f(state, pod, ni) for ni in cand]
                keep = []
                tagged: dict[int, tuple[Status, Status]] = {}  # id(status) -> (status, with plugin)
                for ni, st in zip(cand, out):
                    if st is None or st.code == Code.SUCCESS:
                        keep.append(ni)
                        continue
                    t = tagged.get(id(st))
                    if t is None:
                        if not st.is_rejected():
                            # an Error: let the node-by-node loop find and report the first one
                            return self._filter_one_by_one(state, pod, ring, pos - len(chunk), n, to_find,
                                                           feasible, diagnosis, order, res)
                        t = tagged[id(st)] = (st, st.with_plugin(pl.name))
                        diagnosis.add_plugin_status(t[1])
                    if rejected is None:
                        rejected = {}
                    rejected[ni.name] = t[1]
                cand = keep
                if not cand:
                    break
            names = [ni.name for ni in chunk]
            order += names
            if rejected:
                if len(rejected) == len(names):
                    statuses.update((name, rejected[name]) for name in names)
                else:
                    for name in names:
                        st = rejected.get(name)
                        if st is not None:
                            statuses[name] = st
            feasible += cand
        return feasible

    def _filter_one_by_one(self, state: CycleState, pod: PodInfo, ring: list[NodeInfo], pos: int, n: int,
                           to_find: int, feasible: list[NodeInfo], diagnosis: Diagnosis, order: list[str],
                           res: ScheduleResult) -> list[NodeInfo]:
        statuses = diagnosis.node_to_status
        while pos < n:
            ni = ring[pos]
            pos += 1
            st = self.run_filter(state, pod, ni)
            order.append(ni.name)
            if st is None or st.code == Code.SUCCESS:
                feasible.append(ni)
                if len(feasible) >= to_find:
                    break
            elif st.code == Code.ERROR:
                res.error = st
                break
            else:
                statuses[ni.name] = st
                diagnosis.add_plugin_status(st)
        return feasible

    def run_post_filter(self, state: CycleState, pod: PodInfo,
                        statuses: Mapping[str, Status]) -> tuple[PostFilterResult | None, Status | None]:
        """PostFilter plugins until one succeeds (upstream ``RunPostFilterPlugins``); the
        returned status's message is what ends up after the histogram in the FitError."""
        reasons: list[str] = []
        result: PostFilterResult | None = None
        for pl in self.points["postFilter"]:
            r, st = pl.post_filter(state, pod, statuses)
            if _ok(st):
                return r, None
            if not st.is_rejected():
                return None, st.with_plugin(pl.name)
            reasons += st.reasons
            if r is not None:
                result = r
        return result, Status(Code.UNSCHEDULABLE, tuple(reasons)) if reasons else None

    def _prioritize(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo],
                    res: ScheduleResult) -> tuple[list[str], list[int]]:
        names = [ni.name for ni in nodes]
        res._score_names = names
        if not self.score_plugins:
            return names, [1] * len(nodes)
        skipped: set[str] = set()
        for pl in self.points["preScore"]:
            st = pl.pre_score(state, pod, nodes)
            if st is not None and st.code == Code.SKIP:
                skipped.add(pl.name)
            elif not _ok(st):
                res.error = Status(Code.ERROR, (f'running PreScore plugin "{pl.name}": {st.message()}',), pl.name)
                return names, []
        state.skip_score_plugins = frozenset(skipped)
        totals = [0] * len(nodes)
        for pl in self.score_plugins:
            if pl.name in skipped:
                continue
            batch = getattr(pl, "score_nodes", None)
            if batch is not None:
                raw = batch(state, pod, nodes)
            else:
                score = pl.score
                raw = []
                for ni in nodes:
                    s, st = score(state, pod, ni)
                    if st is not None and st.code != Code.SUCCESS:
                        res.error = Status(Code.ERROR, (f'running Score plugin "{pl.name}": {st.message()}',), pl.name)
                        return names, []
                    raw.append(s)
            norm = raw
            if hasattr(pl, "normalize_scores"):
                norm = pl.normalize_scores(state, pod, names, raw)
            elif hasattr(pl, "normalize_score"):
                scores = [NodeScore(n, s) for n, s in zip(names, raw)]
                st = pl.normalize_score(state, pod, scores)
                if not _ok(st):
                    res.error = Status(Code.ERROR, (f'running Normalize on Score plugins: {st.message()}',), pl.name)
                    return names, []
                norm = [x.score for x in scores]
            weight = self.score_weights[pl.name]
            if norm and not (MIN_NODE_SCORE <= min(norm) and max(norm) <= MAX_NODE_SCORE):
                s = next(x for x in norm if not MIN_NODE_SCORE <= x <= MAX_NODE_SCORE)
                res.error = Status(Code.ERROR, (
                    f'applying score defaultWeights on Score plugins: plugin "{pl.name}" returns an invalid score '
                    f'{s}, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing',))
                return names, []
            if weight == 1:
                totals = list(map(add, totals, norm))
            elif any(norm):
                totals = list(map(add, totals, map(mul, norm, repeat(weight))))
            res._scores[pl.name] = (raw, norm, weight)
        return names, totals

    # --- binding cycle points (synchronous; the caller does the API calls) -----------------------
    def run_reserve(self, state: CycleState, pod: Mapping[str, Any], node_name: str) -> Status | None:
        """Reserve plugins in order; on failure the caller must call :meth:`run_unreserve`."""
        for pl in self.points["reserve"]:
            st = pl.reserve(state, pod, node_name)
            if not _ok(st):
                return st.with_plugin(pl.name)
        return None

    def run_unreserve(self, state: CycleState, pod: Mapping[str, Any], node_name: str) -> None:
        """Unreserve in reverse order."""
        for pl in reversed(self.points["reserve"]):
            pl.unreserve(state, pod, node_name)

    def run_permit(self, state: CycleState, pod: Mapping[str, Any], node_name: str) -> Status | None:
        """Permit plugins; the default profile has none. Wait statuses are returned as is."""
        for pl in self.points["permit"]:
            st, _timeout = pl.permit(state, pod, node_name)
            if not _ok(st):
                return st.with_plugin(pl.name)
        return None

    def run_pre_bind(self, state: CycleState, pod: Mapping[str, Any], node_name: str) -> Status | None:
        """PreBind plugins in order. An error reads ``running PreBind plugin "X": …`` (upstream
        ``runPreBindPlugins``); a ``Wait`` status (VolumeBinding waiting for its bindings) is
        returned as is: the scheduler calls this again at the plugin's next poll."""
        for pl in self.points["preBind"]:
            st = pl.pre_bind(state, pod, node_name)
            if not _ok(st):
                if st.code == Code.ERROR:
                    st = Status.error(f'running PreBind plugin "{pl.name}": {st.message()}')
                return st.with_plugin(pl.name)
        return None

    def run_bind(self, state: CycleState, pod: Mapping[str, Any], node_name: str) -> tuple[Any, Status | None]:
        """The first Bind plugin that does not Skip: returns (what to send, status).
        With DefaultBinder that is the ``Binding`` dict for ``APIServer.bind``."""
        for pl in self.points["bind"]:
            out, st = pl.bind(state, pod, node_name)
            if st is not None and st.code == Code.SKIP:
                continue
            return out, (None if _ok(st) else st.with_plugin(pl.name))
        return None, Status.error("no bind plugin handled the pod")

    def run_post_bind(self, state: CycleState, pod: Mapping[str, Any], node_name: str) -> None:
        for pl in self.points["postBind"]:
            pl.post_bind(state, pod, node_name)


def new_frameworks(config: SchedulerConfiguration | Mapping[str, Any] | None = None,
                   registry: Registry | None = None) -> dict[str, Framework]:
    """One :class:`Framework` per profile, keyed by ``schedulerName``.

    ``config`` is a :class:`SchedulerConfiguration` or a raw
    ``KubeSchedulerConfiguration`` dict (``None`` = defaults).
    """
    if not isinstance(config, SchedulerConfiguration):
        config = load_configuration(config)
    registry = registry if registry is not None else Registry.in_tree()
    return {p.scheduler_name: Framework(p, registry, config.percentage_of_nodes_to_score)
            for p in config.profiles}
