"""The in-process kube-apiserver: every read and write of cluster state goes through here.

A request runs kube-apiserver's pipeline, in its order:

1. authorization (RBAC, :mod:`.rbac`) for the request's user;
2. decoding: strict unknown-field checks when ``field_validation="Strict"``
   (kubectl's default), kind/apiVersion and namespace checks;
3. the kind's strategy (:mod:`.strategy`): what a create resets, what an
   update carries over, generation;
4. defaulting (:mod:`.defaults`);
5. mutating admission, then validation (:mod:`.validation`), then validating
   admission (:mod:`.admission`);
6. the write to the event log, compare-and-swap on ``resourceVersion``.

Objects are wire-form dicts (exactly what ``kubectl get -o json`` shows) and are
never mutated in place: every stage returns a new dict, so objects read from
the log can be shared by every watcher and cache without copying.

Errors are :class:`~k8semu.api.errors.StatusError` subclasses, whose
``status()`` is the ``Status`` a real kube-apiserver returns.
"""

from __future__ import annotations

import base64
import functools
import ipaddress
import random
from datetime import datetime
from typing import Any, AsyncIterator, Callable, Iterable

import attrs
import orjson

from ..store import (
    DELETED,
    Bookmark,
    Compacted,
    EventLog,
    KeyExists,
    KeyNotFound,
    Record,
    RevisionMismatch,
    collector_paused,
)
from . import ephemeralcontainers, errors, podresize, strategy
from .auth import Attributes, UserInfo, admin
from .meta import DEFAULT_EPOCH, format_time, new_uid, random_suffix, share_equal_parts
from .customresources import CRD_RESOURCE, CustomResourceInfo, CustomResources
from .resources import RESOURCES, ResourceInfo, lookup

__all__ = ["APIServer", "RequestContext", "PATCH_TYPES", "WatchEvent"]

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (MERGE_PATCH, JSON_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH)

ResourceRef = ResourceInfo | str


@attrs.frozen
class RequestContext:
    """Who is asking: the authenticated user and the actor recorded in the log.

    ``actor`` defaults to ``user:<name>``; components pass their own
    (``kube-scheduler``, ``replicaset-controller``, ``kubelet/node-1``).
    """

    user: UserInfo = attrs.field(factory=admin)
    actor: str | None = None
    #: where the request's warnings go (``fieldValidation=Warn``'s unknown fields), sent back
    #: as ``Warning`` headers by ``serve``; None: not collected
    warnings: list[str] | None = attrs.field(default=None, eq=False)

    @property
    def log_actor(self) -> str:
        return self.actor or f"user:{self.user.name}"

    @property
    def typed_client(self) -> bool:
        """A component's request (actor set, not ``user:…``): it encodes Go structs in
        upstream, so it cannot carry unknown fields and strict decoding is skipped."""
        return self.actor is not None and not self.actor.startswith("user:")


@attrs.frozen
class WatchEvent:
    """One watch event: ``type`` is ADDED / MODIFIED / DELETED / BOOKMARK / ERROR."""

    type: str
    object: dict[str, Any]
    revision: int = 0
    time: float = 0.0  # virtual time of the write

    def wire(self) -> dict[str, Any]:
        return {"type": self.type, "object": self.object}


def _parsed_field_selector(text: str | None):
    """A field selector the matcher already accepted, parsed (None for none)."""
    if not text:
        return None
    from . import selectors

    return selectors.parse_field_selector(text)


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _rng_untouched_by_dry_run(method):
    """A dry run leaves the cluster's RNG where it was, so it changes no later UID or name."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if not kwargs.get("dry_run"):
            return method(self, *args, **kwargs)
        state = self.rng.getstate()
        try:
            return method(self, *args, **kwargs)
        finally:
            self.rng.setstate(state)

    return wrapper


def _kind_key(obj: dict[str, Any]) -> str:
    return f"{obj.get('apiVersion')}/{obj.get('kind')}"


def _pod_node_name(rec: Record) -> str:
    """A pod record's ``spec.nodeName`` (``""`` while unscheduled)."""
    return (rec.object.get("spec") or {}).get("nodeName") or ""


def _key_name(rec: Record) -> str:
    """The object name in a record's key (no decoding)."""
    return rec.key.rsplit("/", 1)[1]


class APIServer:
    """The emulated kube-apiserver core over one :class:`~k8semu.store.EventLog`.

    Args:
        log: the event log (etcd).
        rng: the cluster's seeded RNG (UIDs, generated names, ClusterIPs, NodePorts).
        epoch: the wall-clock date of virtual time 0 (for timestamps).
        authorize: RBAC on (True) or everyone allowed (False).
        service_cidr: where ClusterIPs come from (upstream default 10.96.0.0/12).
        node_port_range: inclusive NodePort range (30000–32767).
        track_managed_fields: keep ``metadata.managedFields`` on every write (server-side apply).
    """

    def __init__(
        self,
        log: EventLog,
        *,
        rng: random.Random | None = None,
        epoch: datetime = DEFAULT_EPOCH,
        authorize: bool = True,
        service_cidr: str = "10.96.0.0/12",
        node_port_range: tuple[int, int] = (30000, 32767),
        track_managed_fields: bool = True,
    ) -> None:
        self.log = log
        self.rng = rng or random.Random(0)
        self.epoch = epoch
        self.service_cidr = ipaddress.ip_network(service_cidr)
        self.node_port_range = node_port_range
        self.track_managed_fields = track_managed_fields
        from .admission import default_admission_chain

        self.admission = default_admission_chain(self)
        # the watch cache's indexes (upstream: the pods' NodeNameTriggerFunc, and the name of
        # every object), so one kubelet's watch costs nothing on another node's pod writes and a
        # watch on one object (metadata.name=X) nothing on its siblings' writes
        log.add_watch_index("pods", "spec.nodeName", _pod_node_name)
        for info in RESOURCES:
            log.add_watch_index(info.qualified, "metadata.name", _key_name)
        #: the custom resources this server serves (from its Established CRDs)
        self.custom = CustomResources(log)
        self._crd_hook_running = False
        self._authorizer = None
        self._authz_cache: dict[tuple, bool] = {}
        self._authz_generation = -1
        #: values derived from the store at its head that the components of this server share,
        #: by a key naming what they are (e.g. the kubelets' Service environment); each entry
        #: records the revision it is valid for (see ``EventLog.last_change``)
        self.derived: dict[Any, Any] = {}
        #: where the warnings of requests made without a context go (the CLI prints them as
        #: kubectl does; None: dropped)
        self.default_warnings: list[str] | None = None
        if authorize:
            from .rbac import RBACAuthorizer

            self._authorizer = RBACAuthorizer(_StorePolicy(self))

    # ------------------------------------------------------------------ helpers
    @property
    def now(self) -> float:
        """The virtual time (seconds since the cluster started)."""
        return self.log.clock()

    def timestamp(self, t: float | None = None) -> str:
        """RFC 3339 for virtual time ``t`` (default: now)."""
        return format_time(self.epoch, self.now if t is None else t)

    @staticmethod
    def _writable(info: ResourceInfo) -> ResourceInfo:
        """A computed kind (componentstatuses, apiservices) has no storage to write: 405."""
        if info.computed:
            raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")
        return info

    def resource(self, ref: ResourceRef) -> ResourceInfo:
        """Resolve ``"pods"``, ``"deployments.apps"``, ``"deploy"``, a custom resource's
        plural, singular, short name or ``plural.group`` (from this server's CRDs), or a
        ResourceInfo.

        Raises:
            NotFound: nothing matches (``the server doesn't have a resource type "x"``).
        """
        if isinstance(ref, ResourceInfo):
            return ref
        found = lookup(ref) or self.custom.lookup(ref)
        if not found:
            raise errors.NotFound(f'the server doesn\'t have a resource type "{ref}"')
        return found[0]

    def resource_for_kind(self, api_version: str, kind: str) -> ResourceInfo:
        """The resource of a manifest's ``apiVersion`` + ``kind``: the static table's, else a
        custom resource this server serves.

        Raises:
            NoKindMatch: neither serves it.
        """
        from .resources import NoKindMatch, by_kind

        try:
            return by_kind(api_version, kind)
        except NoKindMatch:
            info = self.custom.by_kind(api_version, kind)
            if info is None:
                raise
            return info

    def _out(self, info: ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
        """A stored custom object as read through ``info``'s version
        (:meth:`~k8semu.api.customresources.CustomResources.read`: the stored version's pruning
        and defaults, ``apiVersion`` — conversion strategy ``None`` — and the read version's
        pruning); anything else as it is."""
        if isinstance(info, CustomResourceInfo):
            return self.custom.read(info, obj)
        return obj

    def _authz(
        self,
        ctx: RequestContext,
        verb: str,
        info: ResourceInfo,
        namespace: str | None,
        name: str = "",
        subresource: str = "",
    ) -> None:
        if self._authorizer is None or "system:masters" in ctx.user.groups:
            return
        # decisions are cached until an RBAC object changes (see _StorePolicy); an allow by a rule
        # without resourceNames holds for every object name, and is cached for any name (None)
        any_name = (ctx.user.name, ctx.user.groups, verb, info.group, info.plural, subresource,
                    namespace or "", None)
        key = any_name[:-1] + (name,)
        policy = self._authorizer.policy
        if policy.generation != self._authz_generation:
            self._authz_cache.clear()
            self._authz_generation = policy.generation
        cache = self._authz_cache
        if cache.get(any_name) is True or cache.get(key) is True:
            return
        if len(cache) > 100_000:
            cache.clear()
        attrs_ = Attributes(
            user=ctx.user,
            verb=verb,
            api_group=info.group,
            resource=info.plural,
            subresource=subresource,
            namespace=namespace or "",
            name=name,
        )
        rule = self._authorizer.check_rule(attrs_)
        cache[any_name if rule is not None and not rule.get("resourceNames") else key] = True

    def _namespace(self, info: ResourceInfo, namespace: str | None) -> str | None:
        if not info.namespaced:
            return None
        if not namespace:
            raise errors.BadRequest("the server could not find the requested resource: namespace is required")
        return namespace

    def _current(self, info: ResourceInfo, namespace: str | None, name: str) -> Record:
        rec = self.log.get(info.key(namespace, name))
        if rec is None:
            raise errors.NotFound.of(info.plural, info.group, name)
        return rec

    # ------------------------------------------------------------------ create
    @_rng_untouched_by_dry_run
    def create(
        self,
        resource: ResourceRef,
        obj: dict[str, Any],
        *,
        namespace: str | None = None,
        ctx: RequestContext | None = None,
        dry_run: bool = False,
        field_validation: str = "Strict",
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        """POST: create ``obj``; returns the stored object (with uid, resourceVersion…).

        ``namespace`` defaults to the object's own (then ``default``).

        Raises:
            BadRequest: undecodable / unknown fields (Strict) / namespace mismatch.
            AlreadyExists, Invalid, Forbidden, NotFound (namespace missing).
        """
        ctx = ctx or RequestContext(warnings=self.default_warnings)
        info = self._writable(self.resource(resource))
        custom = isinstance(info, CustomResourceInfo)
        if custom and info.terminating:
            raise errors.MethodNotAllowed("create not allowed while custom resource definition is terminating")
        if not isinstance(obj, dict):
            raise errors.BadRequest("the body of the request was in an unknown format")
        meta = _meta(obj)
        if info.namespaced:
            ns = namespace or meta.get("namespace") or "default"
            if meta.get("namespace") and meta["namespace"] != ns:
                raise errors.BadRequest(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
        else:
            ns = None
        self._authz(ctx, "create", info, ns)
        obj = self._decode(info, obj, field_validation, ctx)
        meta = dict(_meta(obj))
        if ns is not None:
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + random_suffix(self.rng)
        for k in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            meta.pop(k, None)
        meta["uid"] = new_uid(self.rng)
        meta["creationTimestamp"] = self.timestamp()
        obj = {**obj, "metadata": meta}
        # kube-apiserver's order: defaulting (at decode), mutating admission,
        # then the registry's PrepareForCreate and validation
        obj = self._default(obj)
        obj = self.admission.admit("create", info, obj, None, ctx)
        if custom:
            from .customresources import prepare_for_create

            obj = prepare_for_create(info, obj)
        else:
            if info.kind == "Service":
                obj = self._service_begin(obj, None)
            obj = strategy.prepare_for_create(obj)
            if info.kind == "Job":
                from .defaults import job_prepare_for_create

                obj = job_prepare_for_create(obj, meta["uid"])
            if info.qualified == CRD_RESOURCE:
                from .customresources import prepare_crd_for_create

                obj = prepare_crd_for_create(obj)
        self._validate_for(info, obj, None, ctx)
        self.admission.validate("create", info, obj, None, ctx)
        name = meta.get("name") or ""
        key = info.key(ns, name)
        if self.log.get(key) is not None:
            raise errors.AlreadyExists.of(info.plural, info.group, name)
        obj = self._allocate(info, obj, None)
        obj = self._track(None, obj, ctx, field_manager, "", info)
        if dry_run:
            return self._out(info, obj)
        share_equal_parts(obj, None)
        try:
            rec = self.log.create(key, obj, ctx.log_actor)
        except KeyExists:
            raise errors.AlreadyExists.of(info.plural, info.group, name) from None
        if info.qualified == CRD_RESOURCE:
            self._crd_controllers(name)
        return self._out(info, rec.object)

    def _decode(self, info: ResourceInfo, obj: dict[str, Any], field_validation: str,
                ctx: RequestContext) -> dict[str, Any]:
        api_version = obj.get("apiVersion")
        kind = obj.get("kind")
        if not kind or not api_version:
            what = "kind" if not kind else "apiVersion"
            raise errors.BadRequest(f"Object '{what}' is missing in '{orjson.dumps(obj).decode()[:200]}'")
        if isinstance(info, CustomResourceInfo):
            return self._decode_custom(info, obj, field_validation, ctx)
        if (api_version, kind) != (info.api_version, info.kind):
            raise errors.BadRequest(
                f"the API version in the data ({api_version}) does not match the expected API version ({info.api_version})"
                if kind == info.kind
                else f"{kind} in version \"{api_version}\" cannot be handled as a {info.kind}"
            )
        if ctx.typed_client:
            return obj
        from .schema import KINDS, decode_strict, drop_unknown_fields

        kind_key = _kind_key(obj)
        if field_validation == "Strict":
            decode_strict(obj, kind_key)
        elif kind_key in KINDS:  # Warn / Ignore: unknown fields are dropped, never stored
            obj, unknown = drop_unknown_fields(obj, kind_key)
            if field_validation == "Warn" and ctx.warnings is not None:
                ctx.warnings.extend(f'unknown field "{path}"' for path in unknown)
        return obj

    def _decode_custom(self, info: CustomResourceInfo, obj: dict[str, Any], field_validation: str,
                       ctx: RequestContext) -> dict[str, Any]:
        """A custom object's decoding: any served version of the kind is accepted and stored in
        the storage version; the schema's defaults are filled and undeclared fields pruned
        (``Strict``: refused, ``Warn``: dropped with a warning each)."""
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        other = self.custom.by_kind(api_version, kind) if kind == info.kind else None
        if other is None or other.crd != info.crd:
            raise errors.BadRequest(
                f"the API version in the data ({api_version}) does not match the expected API version ({info.api_version})"
                if kind == info.kind
                else f"{kind} in version \"{api_version}\" cannot be handled as a {info.kind}"
            )
        from .customresources import apply_schema_defaults

        obj = apply_schema_defaults(obj, other.schema)
        if other.schema is not None and not ctx.typed_client:
            obj = self._prune_unknown(obj, other.schema, field_validation, ctx)
        elif other.schema is not None:
            from .customresources import prune

            obj = prune(obj, other.schema)
        storage = f"{info.group}/{info.storage_version}"
        if obj.get("apiVersion") != storage:
            obj = {**obj, "apiVersion": storage}
        return obj

    @staticmethod
    def _prune_unknown(obj: dict[str, Any], schema: dict[str, Any], field_validation: str,
                       ctx: RequestContext) -> dict[str, Any]:
        from .customresources import prune

        unknown: list[str] = []
        pruned = prune(obj, schema, unknown=unknown)
        if unknown and field_validation == "Strict":
            kind = obj.get("kind")
            version = str(obj.get("apiVersion") or "").rpartition("/")[2]
            raise errors.BadRequest(
                f'{kind} in version "{version}" cannot be handled as a {kind}: strict decoding error: '
                + ", ".join(f'unknown field "{p}"' for p in unknown))
        if unknown and field_validation == "Warn" and ctx.warnings is not None:
            ctx.warnings.extend(f'unknown field "{p}"' for p in unknown)
        return pruned

    @staticmethod
    def _default(obj: dict[str, Any]) -> dict[str, Any]:
        from .defaults import apply_defaults

        return apply_defaults(obj)

    @staticmethod
    def _validate(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        from .validation import validate_or_raise

        validate_or_raise(obj, old)

    def _validate_for(self, info: ResourceInfo, obj: dict[str, Any], old: dict[str, Any] | None,
                      ctx: RequestContext) -> None:
        """Validation: a custom object's against its schema (ratcheted rule failures become the
        request's warnings), a CRD's as ``ValidateCustomResourceDefinition``, every other kind's
        as :mod:`.validation`."""
        if isinstance(info, CustomResourceInfo):
            from .customresources import validate_custom

            errs = validate_custom(info, obj, old, ctx.warnings)
            if errs:
                raise errors.Invalid(info.kind, info.group, _meta(obj).get("name") or "", errs)
            return
        if info.qualified == CRD_RESOURCE:
            from .customresources import generic_meta_errors, validate_crd
            from .validation import validate

            errs = generic_meta_errors(validate(obj, old)) + validate_crd(obj, old)
            if errs:
                raise errors.Invalid(info.kind, info.group, _meta(obj).get("name") or "", errs)
            return
        self._validate(obj, old)

    # ------------------------------------------------------------------ reads
    def get(
        self,
        resource: ResourceRef,
        name: str,
        *,
        namespace: str | None = None,
        ctx: RequestContext | None = None,
        resource_version: str | None = None,
    ) -> dict[str, Any]:
        """GET one object (at the head, or exactly at ``resource_version`` if given and not "0").

        The object returned is the store's own, shared with every reader: do not change it in
        place (``copy.deepcopy`` it first), as client-go's informer cache objects.

        Raises:
            NotFound, Forbidden, Expired (compacted revision).
        """
        ctx = ctx or RequestContext(warnings=self.default_warnings)
        info = self.resource(resource)
        ns = self._namespace(info, namespace)
        self._authz(ctx, "get", info, ns, name)
        if info.computed:
            from .resources import computed_get

            return computed_get(info, name, self.timestamp(0))
        rev = self._read_revision(resource_version)
        try:
            rec = self.log.get(info.key(ns, name), rev)
        except Compacted as e:
            raise errors.Expired(e.requested, e.compacted) from None
        if rec is None:
            raise errors.NotFound.of(info.plural, info.group, name)
        return self._out(info, rec.object)

    def _read_revision(self, resource_version: str | None) -> int | None:
        if resource_version in (None, "", "0"):
            return None
        try:
            rev = int(resource_version)
        except ValueError:
            raise errors.BadRequest(f"invalid resource version: {resource_version!r}") from None
        if rev > self.log.revision:
            raise errors.StatusError(f"Too large resource version: {rev}, current: {self.log.revision}")
        return rev

    def list(
        self,
        resource: ResourceRef,
        *,
        namespace: str | None = None,
        ctx: RequestContext | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
    ) -> dict[str, Any]:
        """LIST: a ``<Kind>List`` with ``metadata.resourceVersion`` (the store revision).

        ``limit``/``continue_`` page through a consistent snapshot;
        ``metadata.continue`` and ``remainingItemCount`` are set when more remain.

        Raises:
            BadRequest (bad selector, bad continue token), Forbidden, Expired.
        """
        ctx = ctx or RequestContext(warnings=self.default_warnings)
        info = self.resource(resource)
        ns = namespace if info.namespaced else None
        self._authz(ctx, "list", info, ns)
        match = self._matcher(info, label_selector, field_selector)
        if info.computed:
            from .resources import computed_list

            return computed_list(info, self.timestamp(0), self.log.revision, match)
        fs = _parsed_field_selector(field_selector)  # valid: the matcher took it
        start_after = None
        if continue_:
            rev, start_after = _decode_continue(continue_)
        else:
            rev = self._read_revision(resource_version) or self.log.revision
        try:
            recs = self._indexed_range(info, ns, rev, fs, start_after)
            if recs is None:
                recs = self.log.range(info.prefix(ns), rev, start_after=start_after)
        except Compacted:
            raise errors.Expired(rev, self.log.compact_revision) if not continue_ else errors.Gone(
                "The provided continue parameter is too old to display a consistent list result. "
                "You can start a new list without the continue parameter, or use the continue token "
                "in this response to retrieve the remainder of the results. Continuing with the "
                "provided token results in an inconsistent list - objects that were created, "
                "modified, or deleted between the time the first chunk was returned and now may "
                "show up in the list."
            ) from None
        items: list[dict[str, Any]] = []
        list_meta: dict[str, Any] = {"resourceVersion": str(rev)}
        needles = self._json_needles(info, fs)
        rest = needles[1:]
        with collector_paused():  # superseded versions are decoded here, thousands at a time
            for i, rec in enumerate(recs):
                if needles and not rec.decoded:
                    raw = rec.raw()
                    if needles[0] not in raw or (rest and not all(n in raw for n in rest)):
                        continue  # cannot match: not decoded at all (a cold Event, most of describe's)
                obj = rec.read_once()
                if match is not None and not match(obj):
                    continue
                if limit and len(items) == limit:
                    remaining = sum(1 for r in recs[i:] if match is None or match(r.object))
                    list_meta["continue"] = _encode_continue(rev, recs[i - 1].key)
                    list_meta["remainingItemCount"] = remaining
                    break
                items.append(self._out(info, obj))
        return {
            "kind": info.list_kind if isinstance(info, CustomResourceInfo) else f"{info.kind}List",
            "apiVersion": info.api_version,
            "metadata": list_meta,
            "items": items,
        }

    def _indexed_range(self, info: ResourceInfo, ns: str | None, rev: int, fs: Any,
                       start_after: str | None) -> list[Record] | None:
        """The records a LIST at the head needs when its field selector pins an indexed field
        (``metadata.name=X``; a pod's ``spec.nodeName=X``), from the key or the store's index
        instead of a scan of every object of the resource (each kubelet's informers list with
        such selectors: 1,000 kubelets over 30,000 pods were 30M selector checks). None: scan."""
        index = self._watch_index(info, fs)
        if index is None or rev != self.log.revision:
            return None
        field, value = index
        prefix = info.prefix(ns)
        if field == "metadata.name":
            if info.namespaced and not ns:
                return None  # every namespace: a scan
            keys = [prefix + value]
        else:
            live_keys = getattr(self.log, "live_keys", None)
            if live_keys is None:
                return None
            keys = [k for k in live_keys(info.qualified, field, value) if k.startswith(prefix)]
        if start_after is not None:
            keys = [k for k in keys if k > start_after]
        return [r for r in (self.log.get(k) for k in keys) if r is not None]

    @staticmethod
    def _json_needles(info: ResourceInfo, fs: Any) -> tuple[bytes, ...]:
        """For an Event LIST with a field selector (parsed): bytes an undecoded match must contain
        (see :meth:`~k8semu.api.selectors.FieldSelector.json_needles`); else none."""
        if fs is None or info.plural != "events":
            return ()
        # the longest first: it rules out most objects alone
        return tuple(sorted(fs.json_needles(), key=len, reverse=True))

    def _matcher(
        self, info: ResourceInfo, label_selector: str | None, field_selector: str | None
    ) -> Callable[[dict[str, Any]], bool] | None:
        from . import selectors

        checks: list[Callable[[dict[str, Any]], bool]] = []
        if label_selector:
            try:
                ls = selectors.parse_label_selector(label_selector)
            except ValueError as e:
                raise errors.BadRequest(str(e)) from None
            checks.append(lambda o: ls.matches(_meta(o).get("labels") or {}))
        if field_selector:
            try:
                fs = selectors.parse_field_selector(field_selector)
            except ValueError as e:
                raise errors.BadRequest(str(e)) from None
            fs = selectors.validate_field_selector(info.plural, fs, group=info.group)
            plural, group = info.plural, info.group
            checks.append(lambda o: fs.matches(selectors.field_set(plural, o, group=group)))
        if not checks:
            return None
        if len(checks) == 1:
            return checks[0]
        return lambda o: all(c(o) for c in checks)

    async def watch(
        self,
        resource: ResourceRef,
        *,
        namespace: str | None = None,
        ctx: RequestContext | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        allow_bookmarks: bool = False,
        send_initial_events: bool | None = None,
    ) -> AsyncIterator[WatchEvent]:
        """WATCH: an async iterator of :class:`WatchEvent`.

        ``resource_version`` absent or ``"0"``: ADDED events for the current
        state first, then every later change; ``"N"``: every change after N.
        With selectors, an object that starts or stops matching arrives as
        ADDED or DELETED, as kube-apiserver's watch cache filters.

        Raises:
            Expired (410): N is older than the compact revision.
        """
        ctx = ctx or RequestContext(warnings=self.default_warnings)
        info = self.resource(resource)
        ns = namespace if info.namespaced else None
        self._authz(ctx, "watch", info, ns)
        if info.computed and "watch" not in info.verbs:
            raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")
        match = self._matcher(info, label_selector, field_selector)
        prefix = info.prefix(ns)
        if info.computed:  # the objects once (unless resuming), then nothing: none is ever written
            from .resources import computed_objects

            resume = resource_version not in (None, "", "0") and not send_initial_events
            objs = [] if resume else [o for o in computed_objects(info, self.timestamp(0))
                                      if match is None or match(o)]
            w = self.log.watch(prefix, after=self.log.revision, bookmarks=allow_bookmarks)
            return self._computed_watch(objs, w, info)
        index = self._watch_index(info, _parsed_field_selector(field_selector))
        initial: list[Record] = []
        if resource_version in (None, "", "0") or send_initial_events:
            after = self.log.revision
            initial = self.log.range(prefix)
        else:
            after = self._read_revision(resource_version) or 0
        try:
            w = self.log.watch(prefix, after=after, bookmarks=allow_bookmarks, index=index)
        except Compacted as e:
            raise errors.Expired(e.requested, e.compacted) from None
        return self._watch_stream(w, initial, match, info)

    @staticmethod
    def _watch_index(info: ResourceInfo, fs: Any) -> tuple[str, str] | None:
        """The index a (parsed) field selector can use: ``("spec.nodeName", "node-1")``,
        ``("metadata.name", "web")`` or None."""
        if fs is None or isinstance(info, CustomResourceInfo):
            return None
        for field in ("metadata.name", "spec.nodeName") if info.plural == "pods" and not info.group \
                else ("metadata.name",):
            value = fs.requires_exact_match(field)
            if value is not None:
                return field, value
        return None

    async def _computed_watch(self, objs, w, info) -> AsyncIterator[WatchEvent]:
        for obj in objs:
            yield WatchEvent("ADDED", obj, self.log.revision, self.now)
        async for ev in self._watch_stream(w, [], None, info):
            yield ev

    async def _watch_stream(self, w, initial, match, info) -> AsyncIterator[WatchEvent]:
        custom = isinstance(info, CustomResourceInfo)
        for rec in initial:
            obj = rec.object
            if match is None or match(obj):
                yield WatchEvent("ADDED", self._out(info, obj) if custom else obj, rec.revision, rec.time)
        try:
            async for item in w:
                if isinstance(item, Bookmark):
                    yield WatchEvent(
                        "BOOKMARK",
                        {"kind": info.kind, "apiVersion": info.api_version,
                         "metadata": {"resourceVersion": str(item.revision)}},
                        item.revision,
                    )
                    continue
                ev = self._filter_event(item, match)
                if ev is not None:
                    yield attrs.evolve(ev, object=self._out(info, ev.object)) if custom else ev
        except Compacted as e:
            yield WatchEvent("ERROR", errors.Expired(e.requested, e.compacted).status())
        finally:
            w.stop()

    def _filter_event(self, rec: Record, match) -> WatchEvent | None:
        obj = rec.object
        if match is None:
            return WatchEvent(rec.type, obj, rec.revision, rec.time)
        now = match(obj)
        if rec.type == "ADDED":
            return WatchEvent("ADDED", obj, rec.revision, rec.time) if now else None
        if rec.type == DELETED:
            return WatchEvent(DELETED, obj, rec.revision, rec.time) if now else None
        try:
            prev = self.log.get(rec.key, rec.revision - 1)
        except Compacted:
            prev = None
        before = prev is not None and match(prev.object)
        if now and before:
            return WatchEvent("MODIFIED", obj, rec.revision, rec.time)
        if now:
            return WatchEvent("ADDED", obj, rec.revision, rec.time)
        if before:
            return WatchEvent(DELETED, obj, rec.revision, rec.time)
        return None

    # ------------------------------------------------------------------ update / patch
    @_rng_untouched_by_dry_run
    def update(
        self,
        resource: ResourceRef,
        obj: dict[str, Any],
        *,
        namespace: str | None = None,
        subresource: str = "",
        ctx: RequestContext | None = None,
        dry_run: bool = False,
        field_validation: str = "Strict",
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        """PUT: replace an object (or its ``status``); a stale ``resourceVersion`` is a 409.

        Objects :meth:`get` and :meth:`list` return are the store's (shared, as client-go's
        informer caches are): one changed in place and passed back here looks unchanged (a no-op
        update that writes nothing) — ``copy.deepcopy`` it before changing it.

        Raises:
            NotFound, Conflict, Invalid, BadRequest, Forbidden.
        """
        ctx = ctx or RequestContext(warnings=self.default_warnings)
        info = self._writable(self.resource(resource))
        meta = _meta(obj)
        name = meta.get("name") or ""
        ns = self._namespace(info, namespace or meta.get("namespace")) if info.namespaced else None
        if info.namespaced and meta.get("namespace") and meta["namespace"] != ns:
            raise errors.BadRequest(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        self._authz(ctx, "update", info, ns, name, subresource)
        obj = self._decode(info, obj, field_validation, ctx)
        cur = self._current(info, ns, name)
        rv = meta.get("resourceVersion")
        if rv and rv != str(cur.revision):
            raise errors.Conflict.of(info.plural, info.group, name)
        if subresource and subresource not in info.subresources:
            raise errors.NotFound("the server could not find the requested resource")
        return self._out(info, self._write_update(info, ns, name, obj, cur, subresource, ctx, dry_run,
                                                  field_manager))

    def _write_update(
        self,
        info: ResourceInfo,
        ns: str | None,
        name: str,
        obj: dict[str, Any],
        cur: Record,
        subresource: str,
        ctx: RequestContext,
        dry_run: bool,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        old = cur.object
        old_meta = _meta(old)
        meta = dict(_meta(obj))
        # fields the client may not change
        for k in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
            if k in old_meta:
                meta[k] = old_meta[k]
            else:
                meta.pop(k, None)
        meta["name"] = name
        if ns is not None:
            meta["namespace"] = ns
        meta.pop("resourceVersion", None)
        obj = {**obj, "metadata": meta}
        custom = isinstance(info, CustomResourceInfo)
        if info.kind == "Service" and not subresource and not custom:
            obj = _patch_allocated_values(obj, old)
        obj = self._default(obj)
        obj = self.admission.admit("update", info, obj, old, ctx)
        if info.kind == "Service" and not subresource and not custom:
            obj = self._service_begin(obj, old)
        if custom:
            from .customresources import prepare_for_update

            obj = prepare_for_update(info, obj, old, subresource)
            self._validate_for(info, obj, old, ctx)
        elif subresource == ephemeralcontainers.SUBRESOURCE:
            obj = ephemeralcontainers.prepare_for_update(obj, old)
            errs = ephemeralcontainers.update_errors(obj, old)
            if errs:
                raise errors.Invalid(info.kind, info.group, name, errs)
        elif subresource == podresize.SUBRESOURCE and info.kind == "Pod" and not info.group:
            obj = podresize.prepare_for_update(obj, old)
            podresize.validate_update(obj, old)
        else:
            obj = strategy.prepare_for_update(obj, old, subresource, now=self.timestamp())
            self._validate_for(info, obj, old, ctx)
        self.admission.validate("update", info, obj, old, ctx, subresource=subresource)
        obj = self._allocate(info, obj, old)
        obj = self._track(old, obj, ctx, field_manager, subresource, info)
        # a finalizing object whose last finalizer is gone is deleted now
        new_meta = _meta(obj)
        if new_meta.get("deletionTimestamp") and not new_meta.get("finalizers") and (
            not new_meta.get("deletionGracePeriodSeconds") or info.kind != "Pod"
        ) and not (info.kind == "Namespace" and (obj.get("spec") or {}).get("finalizers")):
            if dry_run:
                return _with_resource_version(obj, cur)
            return self._store_delete(info, cur, obj, ctx)
        if _same(obj, old):
            return old  # no-op updates write nothing, as upstream
        if dry_run:
            # upstream's dry-run storage returns the would-be object with the current resourceVersion
            return _with_resource_version(obj, cur)
        share_equal_parts(obj, old)
        try:
            rec = self.log.update(cur.key, obj, ctx.log_actor, expect_revision=cur.revision)
        except RevisionMismatch:
            raise errors.Conflict.of(info.plural, info.group, name) from None
        if info.qualified == CRD_RESOURCE:
            self._crd_controllers(name)
        return rec.object

    @_rng_untouched_by_dry_run
    def patch(
        self,
        resource: ResourceRef,
        name: str,
        patch: Any,
        patch_type: str = STRATEGIC_MERGE_PATCH,
        *,
        namespace: str | None = None,
        subresource: str = "",
        ctx: RequestContext | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
        force: bool = False,
        field_validation: str = "Strict",
    ) -> dict[str, Any]:
        """PATCH with a merge, JSON, strategic-merge or apply (server-side apply) patch.

        Retries internally when the object changes under it, unless the patch
        itself pins ``metadata.resourceVersion`` (then a stale one is a 409).

        Raises:
            UnsupportedMediaType (unknown patch type), NotFound, Conflict, Invalid, BadRequest.
        """
        ctx = ctx or RequestContext(warnings=self.default_warnings)
        info = self._writable(self.resource(resource))
        ns = self._namespace(info, namespace) if info.namespaced else None
        if patch_type not in PATCH_TYPES or (isinstance(info, CustomResourceInfo)
                                             and patch_type == STRATEGIC_MERGE_PATCH):
            from .customresources import PATCH_TYPES as CUSTOM_PATCH_TYPES

            accepted = CUSTOM_PATCH_TYPES if isinstance(info, CustomResourceInfo) else PATCH_TYPES
            raise errors.UnsupportedMediaType(
                f"the body of the request was in an unknown format - accepted media types include: "
                f"{', '.join(accepted)}"
            )
        if subresource and subresource not in info.subresources:
            raise errors.NotFound("the server could not find the requested resource")
        if isinstance(info, CustomResourceInfo):
            return self._out(info, self._patch(info, ns, name, patch, patch_type, subresource, ctx, dry_run,
                                               field_manager, force, field_validation))
        return self._patch(info, ns, name, patch, patch_type, subresource, ctx, dry_run, field_manager, force,
                           field_validation)

    def _patch(self, info: ResourceInfo, ns: str | None, name: str, patch: Any, patch_type: str,
               subresource: str, ctx: RequestContext, dry_run: bool, field_manager: str | None,
               force: bool, field_validation: str) -> dict[str, Any]:
        self._authz(ctx, "patch", info, ns, name, subresource)
        if patch_type == APPLY_PATCH:
            from .apply import server_side_apply

            return server_side_apply(
                self, info, ns, name, patch, ctx=ctx, field_manager=field_manager, force=force,
                dry_run=dry_run, subresource=subresource,
            )
        from . import patch as patching

        for _attempt in range(5):
            cur = self._current(info, ns, name)
            old = cur.object
            if patch_type == JSON_PATCH:
                new = patching.apply_json_patch(old, patch)
            elif not isinstance(patch, dict):
                raise errors.BadRequest("the body of the request was in an unknown format")
            elif patch_type == MERGE_PATCH:
                new = patching.apply_merge_patch(old, patch)
            else:
                new = patching.apply_strategic_merge_patch(old, patch, _kind_key(old))
            want_rv = _meta(new).get("resourceVersion")
            if want_rv and want_rv != str(cur.revision):
                raise errors.Conflict.of(info.plural, info.group, name)
            # Strict refuses unknown fields; Warn (the default) and Ignore drop them, never store them
            new = self._decode(info, new, field_validation, ctx)
            try:
                return self._write_update(info, ns, name, new, cur, subresource, ctx, dry_run, field_manager)
            except errors.Conflict:
                if want_rv:
                    raise
                continue
        raise errors.Conflict.of(info.plural, info.group, name)

    # ------------------------------------------------------------------ delete
    def delete(
        self,
        resource: ResourceRef,
        name: str,
        *,
        namespace: str | None = None,
        ctx: RequestContext | None = None,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
        preconditions: dict[str, str] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """DELETE: removes the object, or marks it for deletion.

        Pods bound to a node are deleted gracefully: ``deletionTimestamp`` =
        now + grace and ``deletionGracePeriodSeconds`` are set, and the kubelet
        finishes the deletion. Objects with finalizers (including
        ``foregroundDeletion`` / ``orphan`` added for those propagation
        policies) get a ``deletionTimestamp`` and stay until their finalizers
        are removed. Returns the object as it now is (or was).

        Raises:
            NotFound, Conflict (preconditions), Forbidden, BadRequest (bad policy).
        """
        ctx = ctx or RequestContext(warnings=self.default_warnings)
        info = self._writable(self.resource(resource))
        ns = self._namespace(info, namespace) if info.namespaced else None
        self._authz(ctx, "delete", info, ns, name)
        if propagation_policy not in (None, "Foreground", "Background", "Orphan"):
            raise errors.BadRequest(
                f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
                f'"{propagation_policy}": supported values: "Foreground", "Background", "Orphan", "nil"'
            )
        cur = self._current(info, ns, name)
        obj = cur.object
        meta = dict(_meta(obj))
        if preconditions:
            if preconditions.get("uid") and preconditions["uid"] != meta.get("uid"):
                raise errors.Conflict.of(
                    info.plural, info.group, name,
                    f"Precondition failed: UID in precondition: {preconditions['uid']}, UID in object meta: {meta.get('uid')}",
                )
            if preconditions.get("resourceVersion") and preconditions["resourceVersion"] != str(cur.revision):
                raise errors.Conflict.of(
                    info.plural, info.group, name,
                    f"Precondition failed: ResourceVersion in precondition: "
                    f"{preconditions['resourceVersion']}, ResourceVersion in object meta: {cur.revision}",
                )
        self.admission.validate("delete", info, obj, obj, ctx)
        finalizers = list(meta.get("finalizers") or [])
        if propagation_policy == "Foreground" and "foregroundDeletion" not in finalizers:
            finalizers.append("foregroundDeletion")
        elif propagation_policy == "Orphan" and "orphan" not in finalizers:
            finalizers.append("orphan")
        if info.kind == "Namespace":
            # the namespace controller empties it, then removes the "kubernetes" finalizer
            if meta.get("deletionTimestamp"):
                return obj
            meta["deletionTimestamp"] = self.timestamp()
            meta["deletionGracePeriodSeconds"] = 0
            if finalizers:
                meta["finalizers"] = finalizers
            new = {**obj, "metadata": meta, "status": {**(obj.get("status") or {}), "phase": "Terminating"}}
            return new if dry_run else self._store_update(info, cur, new, ctx)
        if info.qualified == CRD_RESOURCE and not meta.get("deletionTimestamp"):
            return self._delete_crd(info, cur, meta, finalizers, ctx, dry_run)
        grace = strategy.graceful_delete_seconds(obj, grace_period_seconds)
        if meta.get("deletionTimestamp"):
            # already being deleted: a shorter grace period may still apply
            cur_grace = meta.get("deletionGracePeriodSeconds")
            if info.kind == "Pod" and cur_grace is not None and grace < cur_grace:
                if grace == 0 and not finalizers:
                    return obj if dry_run else self._store_delete(info, cur, obj, ctx)
                meta["deletionGracePeriodSeconds"] = grace
                meta["deletionTimestamp"] = self.timestamp(self.now + grace)
                new = {**obj, "metadata": meta}
                return new if dry_run else self._store_update(info, cur, new, ctx)
            if finalizers != list(_meta(obj).get("finalizers") or []):
                meta["finalizers"] = finalizers
                new = {**obj, "metadata": meta}
                return new if dry_run else self._store_update(info, cur, new, ctx)
            return obj
        if grace > 0 or finalizers:
            meta["deletionTimestamp"] = self.timestamp(self.now + grace)
            meta["deletionGracePeriodSeconds"] = grace
            if finalizers:
                meta["finalizers"] = finalizers
            if strategy.tracks_generation(info.kind):
                meta["generation"] = meta.get("generation", 1) + 1
            new = {**obj, "metadata": meta}
            return new if dry_run else self._store_update(info, cur, new, ctx)
        if dry_run:
            return obj
        return self._store_delete(info, cur, obj, ctx)

    def _store_update(self, info: ResourceInfo, cur: Record, new: dict[str, Any], ctx: RequestContext):
        try:
            return self.log.update(cur.key, new, ctx.log_actor, expect_revision=cur.revision).object
        except (RevisionMismatch, KeyNotFound):
            raise errors.Conflict.of(info.plural, info.group, _meta(new).get("name", "")) from None

    def _store_delete(self, info: ResourceInfo, cur: Record, obj: dict[str, Any], ctx: RequestContext):
        try:
            out = self.log.delete(cur.key, ctx.log_actor, expect_revision=cur.revision, obj=obj).object
        except (RevisionMismatch, KeyNotFound):
            raise errors.Conflict.of(info.plural, info.group, _meta(obj).get("name", "")) from None
        if isinstance(info, CustomResourceInfo) and info.terminating:
            self._crd_controllers(info.crd)  # the last instance gone lets the CRD's finalizer finish
        return out

    # ------------------------------------------------------------------ apiextensions-apiserver
    def _controller_ctx(self) -> RequestContext:
        """apiextensions-apiserver's own controllers: kube-apiserver's loopback identity."""
        from .customresources import ACTOR

        return RequestContext(user=UserInfo(name="system:apiserver", groups=("system:masters",)), actor=ACTOR)

    def _delete_crd(self, info: ResourceInfo, cur: Record, meta: dict[str, Any], finalizers: list[str],
                    ctx: RequestContext, dry_run: bool) -> dict[str, Any]:
        """DELETE of a CRD (upstream's CRD REST ``Delete``): in one update, the deletion
        timestamp, the ``customresourcecleanup.apiextensions.k8s.io`` finalizer and a
        ``Terminating`` condition (``InstanceDeletionPending``); then the finalizer controller
        runs (:meth:`_crd_controllers`) and, once every instance is gone, the CRD goes."""
        from .customresources import CLEANUP_FINALIZER, set_condition

        obj = cur.object
        if CLEANUP_FINALIZER not in finalizers:
            finalizers.append(CLEANUP_FINALIZER)
        meta["deletionTimestamp"] = self.timestamp()
        meta["deletionGracePeriodSeconds"] = 0
        meta["finalizers"] = finalizers
        status = set_condition(dict(obj.get("status") or {}), {
            "type": "Terminating", "status": "True", "lastTransitionTime": self.timestamp(),
            "reason": "InstanceDeletionPending",
            "message": "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon"})
        new = {**obj, "metadata": meta, "status": status}
        if dry_run:
            return new
        out = self._store_update(info, cur, new, ctx)
        self._crd_controllers(meta.get("name") or "")
        rec = self.log.get(cur.key)
        return rec.object if rec is not None else out

    def _crd_controllers(self, name: str) -> None:
        """What apiextensions-apiserver's controllers do after a write to CRD ``name``, done at
        once (deterministically) as :data:`~k8semu.api.customresources.ACTOR`: the naming and
        establishing controllers' status (``acceptedNames``, ``NamesAccepted``,
        ``Established``) for a live CRD; the finalizer controller's clean-up for one being
        deleted (``Terminating`` ``InstanceDeletionInProgress``, every instance deleted, then
        ``InstanceDeletionCompleted`` / ``removed all instances`` with the finalizer removed,
        which deletes it). Instances that stay (finalizers of their own) keep the CRD
        ``Terminating`` until the last one goes (:meth:`_store_delete` calls back)."""
        if self._crd_hook_running:
            return
        self._crd_hook_running = True
        try:
            self._crd_reconcile(name)
        finally:
            self._crd_hook_running = False

    def _crd_reconcile(self, name: str) -> None:
        from . import customresources as cr

        info = self.resource(CRD_RESOURCE)
        rec = self.log.get(info.key(None, name))
        if rec is None:
            return
        crd = rec.object
        ctx = self._controller_ctx()
        meta = _meta(crd)
        if not meta.get("deletionTimestamp"):
            others = [c for c in self.custom.crds() if _meta(c).get("name") != name]
            status = cr.controlled_status(crd, others, self.timestamp())
            if status != crd.get("status"):
                body = {**crd, "status": status}
                self._write_update(info, None, name, body, rec, "status", ctx, False, cr.FIELD_MANAGER)
            return
        if cr.CLEANUP_FINALIZER not in (meta.get("finalizers") or ()):
            return
        established = cr.is_established(crd)
        if established:
            status = cr.set_condition(dict(crd.get("status") or {}), {
                "type": "Terminating", "status": "True", "lastTransitionTime": self.timestamp(),
                "reason": "InstanceDeletionInProgress", "message": "CustomResource deletion is in progress"})
            if status != crd.get("status"):
                self._write_update(info, None, name, {**crd, "status": status}, rec, "status", ctx, False,
                                   cr.FIELD_MANAGER)
            targets = self.custom.for_crd(name)
            if targets:
                target = self.custom.storage_info(targets[0])
                for item in self.log.range(target.prefix()):
                    m = _meta(item.object)
                    try:
                        self.delete(target, m.get("name", ""), namespace=m.get("namespace"), ctx=ctx)
                    except errors.NotFound:
                        continue
                if self.log.count(target.prefix()):
                    return  # instances with finalizers: finished when the last one goes
            cond = {"type": "Terminating", "status": "False", "lastTransitionTime": self.timestamp(),
                    "reason": "InstanceDeletionCompleted", "message": "removed all instances"}
        else:
            cond = {"type": "Terminating", "status": "False", "lastTransitionTime": self.timestamp(),
                    "reason": "NeverEstablished", "message": "resource was never established"}
        rec = self.log.get(info.key(None, name))
        if rec is None:
            return
        crd = rec.object
        meta = dict(_meta(crd))
        meta["finalizers"] = [f for f in meta.get("finalizers") or () if f != cr.CLEANUP_FINALIZER]
        if not meta["finalizers"]:
            meta.pop("finalizers")
        body = {**crd, "metadata": meta, "status": cr.set_condition(dict(crd.get("status") or {}), cond)}
        self._write_update(info, None, name, body, rec, "status", ctx, False, cr.FIELD_MANAGER)

    def delete_collection(
        self,
        resource: ResourceRef,
        *,
        namespace: str | None = None,
        ctx: RequestContext | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """DELETECOLLECTION: delete every matching object; returns the list of what was deleted."""
        ctx = ctx or RequestContext(warnings=self.default_warnings)
        info = self._writable(self.resource(resource))
        ns = namespace if info.namespaced else None
        self._authz(ctx, "deletecollection", info, ns)
        listed = self.list(info, namespace=ns, ctx=ctx, label_selector=label_selector,
                           field_selector=field_selector)
        out = []
        for item in listed["items"]:
            m = _meta(item)
            try:
                out.append(self.delete(
                    info, m["name"], namespace=m.get("namespace"), ctx=ctx,
                    grace_period_seconds=grace_period_seconds,
                    propagation_policy=propagation_policy, dry_run=dry_run,
                ))
            except errors.NotFound:
                continue
        return {**listed, "items": out}

    # ------------------------------------------------------------------ subresources
    def bind(
        self,
        name: str,
        binding: dict[str, Any],
        *,
        namespace: str,
        ctx: RequestContext | None = None,
    ) -> dict[str, Any]:
        """POST pods/NAME/binding: set ``spec.nodeName`` (and the PodScheduled condition).

        Raises:
            Conflict: the pod is already bound (``pod X is already assigned to node "N"``)
                or is being deleted; NotFound.
        """
        ctx = ctx or RequestContext(warnings=self.default_warnings)
        info = self.resource("pods")
        self._authz(ctx, "create", info, namespace, name, "binding")
        target = (binding.get("target") or {}).get("name")
        if not target:
            raise errors.Invalid("Binding", "", name, [errors.FieldError.required("target.name")])
        cur = self._current(info, namespace, name)
        pod = cur.object
        meta = _meta(pod)
        if meta.get("deletionTimestamp"):
            raise errors.Conflict.of("pods", "", name, f"pod {name} is being deleted, cannot be assigned to a host")
        if (pod.get("spec") or {}).get("nodeName"):
            raise errors.Conflict.of(
                "pods", "", name, f'pod {name} is already assigned to node "{pod["spec"]["nodeName"]}"'
            )
        want_uid = (binding.get("metadata") or {}).get("uid")
        if want_uid and want_uid != meta.get("uid"):
            raise errors.Conflict.of("pods", "", name, "the UID in the precondition does not match")
        status = dict(pod.get("status") or {})
        conds = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        conds.insert(0, {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                         "lastTransitionTime": self.timestamp()})
        status["conditions"] = conds
        new = {**pod, "spec": {**pod["spec"], "nodeName": target}, "status": status}
        return self._store_update(info, cur, new, ctx)

    def evict(
        self,
        name: str,
        eviction: dict[str, Any] | None = None,
        *,
        namespace: str,
        ctx: RequestContext | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """POST pods/NAME/eviction (policy/v1 Eviction): delete the pod if its
        PodDisruptionBudget allows, as upstream's eviction REST handler.

        A pod that is already terminal or being deleted is evicted without
        consulting budgets. Otherwise the one PDB selecting the pod must have
        ``status.disruptionsAllowed`` > 0 (and an up-to-date
        ``observedGeneration``); the eviction decrements it and records the
        pod in ``status.disruptedPods``, then deletes the pod with the
        eviction's ``deleteOptions``. Returns a ``Status`` (Success, 201).
        ``dry_run``, or ``deleteOptions.dryRun: [All]`` in the Eviction, checks
        and changes nothing.

        Raises:
            TooManyRequests (429): the budget allows no disruption now.
            InternalError: more than one PodDisruptionBudget selects the pod.
            NotFound.
        """
        from .selectors import selector_from_label_selector

        ctx = ctx or RequestContext(warnings=self.default_warnings)
        info = self.resource("pods")
        self._authz(ctx, "create", info, namespace, name, "eviction")
        pod = self._current(info, namespace, name).object
        opts = (eviction or {}).get("deleteOptions") or {}
        # kubectl drain --dry-run=server says so only here, not in the query
        dry_run = dry_run or "All" in (opts.get("dryRun") or ())
        if not (_meta(pod).get("deletionTimestamp") or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")):
            labels = _meta(pod).get("labels") or {}
            pdbs = [
                r for r in self.log.range(f"/registry/poddisruptionbudgets.policy/{namespace}/")
                if selector_from_label_selector((r.object.get("spec") or {}).get("selector")).matches(labels)
            ]
            if len(pdbs) > 1:
                raise errors.InternalError(
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
                )
            if pdbs:
                rec = pdbs[0]
                pdb = rec.object
                status = pdb.get("status") or {}
                pdb_name = _meta(pdb)["name"]
                if status.get("observedGeneration", 0) < _meta(pdb).get("generation", 1):
                    raise errors.TooManyRequests(
                        "Cannot evict pod as it would violate the pod's disruption budget.",
                        details={"causes": [{"reason": "DisruptionBudget", "message":
                                 "The disruption budget " + pdb_name + " is still being processed by the server."}]},
                    )
                allowed = status.get("disruptionsAllowed", 0)
                if allowed <= 0:
                    raise errors.TooManyRequests(
                        "Cannot evict pod as it would violate the pod's disruption budget.",
                        details={"causes": [{"reason": "DisruptionBudget", "message":
                                 f"The disruption budget {pdb_name} needs {status.get('desiredHealthy', 0)} "
                                 f"healthy pods and has {status.get('currentHealthy', 0)} currently"}]},
                    )
                if not dry_run:
                    disrupted = dict(status.get("disruptedPods") or {})
                    disrupted[name] = self.timestamp()
                    new_status = {**status, "disruptionsAllowed": allowed - 1, "disruptedPods": disrupted}
                    self._store_update(self.resource("poddisruptionbudgets"), rec,
                                       {**pdb, "status": new_status}, ctx)
        self.delete(info, name, namespace=namespace, ctx=ctx,
                    grace_period_seconds=opts.get("gracePeriodSeconds"),
                    propagation_policy=opts.get("propagationPolicy"),
                    preconditions=opts.get("preconditions"), dry_run=dry_run)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    def finalize_namespace(self, name: str, finalizers: list[str], *,
                           ctx: RequestContext | None = None) -> dict[str, Any]:
        """PUT namespaces/NAME/finalize: set ``spec.finalizers``; a terminating
        namespace with none left (and no metadata finalizers) is removed."""
        ns = self.get("namespaces", name, ctx=ctx)
        return self.update("namespaces", {**ns, "spec": {**(ns.get("spec") or {}), "finalizers": list(finalizers)}},
                           subresource="finalize", ctx=ctx, field_validation="Ignore")

    def get_scale(self, resource: ResourceRef, name: str, *, namespace: str | None = None,
                  ctx: RequestContext | None = None) -> dict[str, Any]:
        """GET <kind>/NAME/scale: an autoscaling/v1 Scale."""
        ctx = ctx or RequestContext(warnings=self.default_warnings)
        info = self.resource(resource)
        if "scale" not in info.subresources:
            raise errors.NotFound("the server could not find the requested resource")
        ns = self._namespace(info, namespace)
        self._authz(ctx, "get", info, ns, name, "scale")
        if isinstance(info, CustomResourceInfo):
            from .customresources import scale_of

            return scale_of(info, self._current(info, ns, name).object)
        return _scale_of(self._current(info, ns, name).object)

    def update_scale(self, resource: ResourceRef, name: str, replicas: int, *,
                     namespace: str | None = None, ctx: RequestContext | None = None,
                     dry_run: bool = False, field_manager: str | None = None) -> dict[str, Any]:
        """PUT/PATCH <kind>/NAME/scale: set ``spec.replicas``; returns the new Scale."""
        ctx = ctx or RequestContext(warnings=self.default_warnings)
        info = self.resource(resource)
        if "scale" not in info.subresources:
            raise errors.NotFound("the server could not find the requested resource")
        ns = self._namespace(info, namespace)
        self._authz(ctx, "update", info, ns, name, "scale")
        for _ in range(5):
            cur = self._current(info, ns, name)
            obj = cur.object
            if isinstance(info, CustomResourceInfo):
                from .customresources import scale_of, with_spec_replicas

                new = with_spec_replicas(info, obj, replicas)
                try:
                    return scale_of(info, self._write_update(info, ns, name, new, cur, "scale", ctx, dry_run,
                                                             field_manager))
                except errors.Conflict:
                    continue
            new = {**obj, "spec": {**(obj.get("spec") or {}), "replicas": replicas}}
            try:
                out = self._write_update(info, ns, name, new, cur, "scale", ctx, dry_run, field_manager)
                return _scale_of(out)
            except errors.Conflict:
                continue
        raise errors.Conflict.of(info.plural, info.group, name)

    # ------------------------------------------------------------------ managed fields
    def _track(self, old: dict[str, Any] | None, obj: dict[str, Any], ctx: RequestContext,
               field_manager: str | None, subresource: str, info: ResourceInfo | None = None) -> dict[str, Any]:
        """Record the write in ``metadata.managedFields`` (server-side apply's bookkeeping). The
        entry names the version the request was made in (``info``'s): a custom object is stored
        in its storage version, but its manager wrote, say, ``example.com/v1beta1``."""
        if not self.track_managed_fields or field_manager == _APPLIED:
            return obj
        from .apply import track_update

        stored = obj.get("apiVersion")
        if isinstance(info, CustomResourceInfo) and info.api_version != stored:
            tracked = track_update(old, {**obj, "apiVersion": info.api_version},
                                   field_manager or _default_manager(ctx), None, self.timestamp(),
                                   subresource=subresource)
            return {**tracked, "apiVersion": stored}
        return track_update(old, obj, field_manager or _default_manager(ctx), None,
                            self.timestamp(), subresource=subresource)

    # ------------------------------------------------------------------ allocation
    # Service ClusterIPs and NodePorts are derived from the stored Services (there is no
    # allocator state to release: deleting a Service, or a change of type that drops its
    # nodePorts / clusterIP, frees them for the next request), as upstream's allocators
    # (pkg/registry/core/service/{ipallocator,portallocator}) with the service registry's
    # hooks (storage/alloc.go): values a request names are checked before the strategy and
    # validation run (:meth:`_service_begin`), values left to the server are picked from
    # the cluster's seeded RNG once the write is known to succeed (:meth:`_allocate`).
    def _service_begin(self, obj: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
        """The service registry's ``beginCreate`` / ``beginUpdate``: ``normalizeClusterIPs``,
        then ``initIPFamilyFields``' checks of the clusterIP fields and of the IP families (the
        cluster has one, its service CIDR's: ``spec.ipFamilies[0]: Invalid value: "IPv6": not
        configured on this cluster``), and the allocation of the clusterIPs, nodePorts and
        healthCheckNodePort the request names (422 ``Invalid`` with the allocator's reason: out
        of range, already allocated)."""
        from .validation import GoValue, _go_str_slice, service_cluster_ips_errors

        name = _meta(obj).get("name") or ""
        spec = dict(obj.get("spec") or {})
        ospec = (old or {}).get("spec") or {}
        _normalize_cluster_ips(spec, ospec if old is not None else None)
        obj = {**obj, "spec": spec}
        stype = spec.get("type")
        if stype != "ExternalName":
            bad = service_cluster_ips_errors(obj)
            if bad:
                raise errors.Invalid("Service", "", name, bad)
            # the families this cluster has allocators for: one, its service CIDR's
            family = "IPv4" if self.service_cidr.version == 4 else "IPv6"
            bad = [errors.FieldError.invalid(f"spec.ipFamilies[{i}]", fam, "not configured on this cluster")
                   for i, fam in enumerate(spec.get("ipFamilies") or ()) if fam != family]
            if bad:
                raise errors.Invalid("Service", "", name, bad)
        own = None if old is None else _meta(old)
        own_key = None if own is None else f"/registry/services/{own.get('namespace')}/{own.get('name')}"
        cips = list(spec.get("clusterIPs") or [])
        if (stype != "ExternalName" and (old is None or ospec.get("type") == "ExternalName")
                and cips and cips[0] != "None"):
            used_ips = {ip for rec in self.log.range("/registry/services/") if rec.key != own_key
                        for ip in (rec.object.get("spec") or {}).get("clusterIPs") or ()}
            for ip in cips:
                reason = self._cluster_ip_unavailable(ip, used_ips)
                if reason:
                    raise errors.Invalid("Service", "", name, [errors.FieldError.invalid(
                        "spec.clusterIPs", GoValue(cips, _go_str_slice(cips)),
                        f"failed to allocate IP {ip}: {reason}")])
        if stype not in ("NodePort", "LoadBalancer"):
            return obj
        used = self._used_node_ports(exclude=own_key)
        old_ports = {p.get("nodePort") for p in ospec.get("ports") or () if p.get("nodePort")} \
            if old is not None and ospec.get("type") in ("NodePort", "LoadBalancer") else set()
        taken: set[int] = set()  # this request's (upstream: one PortAllocationOperation)
        by_port: dict[Any, Any] = {}
        for i, p in enumerate(spec.get("ports") or ()):
            np_ = p.get("nodePort") if isinstance(p, dict) else None
            if not np_ or np_ in old_ports:
                continue
            if old is None:
                # initNodePorts: ports with the same number share the first one's nodePort
                if by_port.get(p.get("port")) == np_:
                    continue
                by_port.setdefault(p.get("port"), np_)
            elif np_ in taken:
                continue
            reason = self._node_port_unavailable(np_, used | taken)
            if reason:
                raise errors.Invalid("Service", "", name, [errors.FieldError.invalid(
                    f"spec.ports[{i}].nodePort", np_, reason)])
            taken.add(np_)
        hc = spec.get("healthCheckNodePort")
        if hc and _needs_hc_node_port(spec) and (old is None or not _needs_hc_node_port(ospec)):
            reason = self._node_port_unavailable(hc, used | taken)
            if reason:
                raise _internal_error(f"failed to allocate requested HealthCheck NodePort {hc}: {reason}")
        return obj

    def _cluster_ip_unavailable(self, ip: str, used: set[str]) -> str:
        """Why ``ip`` cannot be allocated ("" if it can), in the words of the v1.33 allocators
        (the ServiceCIDR MetaAllocator, then the dual-written bitmap)."""
        net = self.service_cidr
        try:
            addr = ipaddress.ip_address(ip)
        except ValueError:
            return f"failed to parse service IP {ip!r}"
        if addr.version != net.version or addr not in net:
            return "the provided network does not match the current range"
        if addr in (net.network_address, net.broadcast_address):
            return f"the provided IP ({ip}) is not in the valid range. The range of valid IPs is {net}"
        if ip in used:
            return "provided IP is already allocated"
        return ""

    def _node_port_unavailable(self, port: Any, used: set[int]) -> str:
        lo, hi = self.node_port_range
        if not isinstance(port, int) or not lo <= port <= hi:
            return f"provided port is not in the valid range. The range of valid ports is {lo}-{hi}"
        if port in used:
            return "provided port is already allocated"
        return ""

    def _allocate(self, info: ResourceInfo, obj: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
        """Pick what a Service leaves to the server: a clusterIP (unless ExternalName or
        headless), a nodePort for each port of a NodePort / LoadBalancer Service without one
        (not when ``allocateLoadBalancerNodePorts`` is false; on create, ports with the same
        number share one, as ``initNodePorts``), and a healthCheckNodePort for a
        LoadBalancer with ``externalTrafficPolicy: Local``."""
        if info.kind != "Service":
            return obj
        spec = dict(obj.get("spec") or {})
        ospec = (old or {}).get("spec") or {}
        changed = False
        if spec.get("type") != "ExternalName" and not spec.get("clusterIP"):
            spec["clusterIP"] = self._allocate_cluster_ip()
            spec["clusterIPs"] = [spec["clusterIP"]]
            changed = True
        elif spec.get("clusterIP") and not spec.get("clusterIPs"):
            spec["clusterIPs"] = [spec["clusterIP"]]
            changed = True
        stype = spec.get("type")
        if stype == "NodePort" or (stype == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is not False):
            used = self._used_node_ports()
            shared: dict[Any, int] = {}
            if old is None:
                for p in spec.get("ports") or []:
                    if p.get("nodePort"):
                        shared.setdefault(p.get("port"), p["nodePort"])
            ports = []
            for p in spec.get("ports") or []:
                if not p.get("nodePort"):
                    np_ = shared.get(p.get("port")) or self._pick_node_port(used)
                    p = {**p, "nodePort": np_}
                    used.add(np_)
                    if old is None:
                        shared.setdefault(p.get("port"), np_)
                    changed = True
                ports.append(p)
            spec["ports"] = ports
        if (_needs_hc_node_port(spec) and not spec.get("healthCheckNodePort")
                and (old is None or not _needs_hc_node_port(ospec))):
            used = self._used_node_ports() | {p.get("nodePort") for p in spec.get("ports") or ()}
            spec["healthCheckNodePort"] = self._pick_node_port(used)
            changed = True
        return {**obj, "spec": spec} if changed else obj

    def _allocate_cluster_ip(self) -> str:
        used = set()
        for rec in self.log.range("/registry/services/"):
            for ip in (rec.object.get("spec") or {}).get("clusterIPs") or ():
                used.add(ip)
        net = self.service_cidr
        size = net.num_addresses
        # upstream reserves the low 1/16 (min 16, max 256) of the range for static IPs
        static = max(16, min(256, size // 16))
        start = self.rng.randrange(static, size - 1)
        for i in range(size - 1 - static):
            off = static + (start - static + i) % (size - 1 - static)
            ip = str(net.network_address + off)
            if ip not in used:
                return ip
        # the upper range is full: the lower one, as upstream's allocateNextService
        start = self.rng.randrange(1, static)
        for i in range(static - 1):
            ip = str(net.network_address + 1 + (start - 1 + i) % (static - 1))
            if ip not in used:
                return ip
        raise _internal_error("failed to allocate a serviceIP: range is full")

    def _used_node_ports(self, exclude: str | None = None) -> set[int]:
        """The nodePorts and healthCheckNodePorts of the stored Services (but ``exclude``'s)."""
        used = set()
        for rec in self.log.range("/registry/services/"):
            if rec.key == exclude:
                continue
            spec = rec.object.get("spec") or {}
            for p in spec.get("ports") or ():
                if p.get("nodePort"):
                    used.add(p["nodePort"])
            if spec.get("healthCheckNodePort"):
                used.add(spec["healthCheckNodePort"])
        return used

    def _pick_node_port(self, used: set[int]) -> int:
        lo, hi = self.node_port_range
        start = self.rng.randrange(lo, hi + 1)
        for i in range(hi - lo + 1):
            port = lo + (start - lo + i) % (hi - lo + 1)
            if port not in used:
                return port
        raise _internal_error("failed to allocate a nodePort: range is full")


_APPLIED = "\x00applied"  # the same marker as k8semu.api.apply.APPLIED


def _default_manager(ctx: RequestContext) -> str:
    """The field manager upstream derives from the client: kubectl for users, the binary for components."""
    actor = ctx.actor
    if actor is None:
        return "kubectl"
    if actor.startswith("kubelet/"):
        return "kubelet"
    if actor.startswith("kube-proxy/"):
        return "kube-proxy"
    if actor in ("kube-scheduler", "default-scheduler"):
        return "kube-scheduler"
    if actor == "kube-apiserver":
        return "kube-apiserver"
    if actor.endswith("-controller") or actor.endswith("-collector") or actor.endswith("-publisher"):
        return "kube-controller-manager"
    return actor


def _internal_error(err: str) -> errors.InternalError:
    """apimachinery's ``NewInternalError(err)``: 500 ``Internal error occurred: <err>``."""
    return errors.InternalError(f"Internal error occurred: {err}", details={"causes": [{"message": err}]})


def _needs_hc_node_port(spec: dict[str, Any]) -> bool:
    """Upstream's ``apiservice.NeedsHealthCheck``."""
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def _normalize_cluster_ips(spec: dict[str, Any], old_spec: dict[str, Any] | None) -> None:
    """Upstream's ``normalizeClusterIPs`` (in place): keep ``clusterIPs`` in step with a
    ``clusterIP`` the client set or changed alone (an old client, or a merge patch)."""
    cip, cips = spec.get("clusterIP") or "", list(spec.get("clusterIPs") or [])
    if old_spec is None:
        if cip and not cips:
            spec["clusterIPs"] = [cip]
        return
    ocip, ocips = old_spec.get("clusterIP") or "", list(old_spec.get("clusterIPs") or [])
    if ocips and not cips and ocip == cip:
        spec["clusterIPs"] = cips = ocips
    if ocip != cip:
        if ocip and not cip:
            if ocips == cips:
                spec.pop("clusterIPs", None)
        elif ocips == cips:
            spec["clusterIPs"] = [cip]


def _patch_allocated_values(new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """A Service update that leaves out what the server allocated keeps it, as upstream's
    ``patchAllocatedValues`` (so ``kubectl replace -f`` of a manifest without ``clusterIP`` works):
    ``clusterIP`` / ``clusterIPs``, each port's ``nodePort`` (by port name, unless another port
    of the update uses it) and ``healthCheckNodePort``."""
    spec, old_spec = dict(new.get("spec") or {}), old.get("spec") or {}
    changed = False
    if spec.get("type") != "ExternalName" and old_spec.get("type") != "ExternalName":
        if not spec.get("clusterIP") and old_spec.get("clusterIP"):
            spec["clusterIP"] = old_spec["clusterIP"]
            changed = True
        if not spec.get("clusterIPs") and old_spec.get("clusterIPs"):
            spec["clusterIPs"] = list(old_spec["clusterIPs"])
            changed = True

    def node_ports(s: dict[str, Any]) -> set[int]:
        return {p.get("nodePort") for p in s.get("ports") or () if p.get("nodePort")}

    wants_node_port = ("NodePort", "LoadBalancer")
    if spec.get("type") in wants_node_port and old_spec.get("type") in wants_node_port:
        used = node_ports(old_spec) & node_ports(spec)
        by_name = {p.get("name") or "": p.get("nodePort") for p in old_spec.get("ports") or ()}
        ports = []
        for p in spec.get("ports") or ():
            old_port = by_name.get(p.get("name") or "")
            if not p.get("nodePort") and old_port and old_port not in used:
                p = {**p, "nodePort": old_port}
                changed = True
            ports.append(p)
        spec["ports"] = ports
        if (spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"
                and not spec.get("healthCheckNodePort") and old_spec.get("healthCheckNodePort")):
            spec["healthCheckNodePort"] = old_spec["healthCheckNodePort"]
            changed = True
    return {**new, "spec": spec} if changed else new


def _with_resource_version(obj: dict[str, Any], cur: Record) -> dict[str, Any]:
    """``obj`` carrying ``cur``'s ``resourceVersion`` (what a dry-run update answers)."""
    return {**obj, "metadata": {**_meta(obj), "resourceVersion": str(cur.revision)}}


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Equal but for resourceVersion (what makes an update a no-op)."""
    if a.keys() != b.keys():
        return False
    for k in a:
        if k == "metadata":
            ma = {x: y for x, y in a[k].items() if x != "resourceVersion"}
            mb = {x: y for x, y in b[k].items() if x != "resourceVersion"}
            if ma != mb:
                return False
        elif a[k] != b[k]:
            return False
    return True


def _scale_of(obj: dict[str, Any]) -> dict[str, Any]:
    from .selectors import selector_from_label_selector

    meta = _meta(obj)
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    sel = spec.get("selector")
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta},
        "spec": {"replicas": spec.get("replicas", 0)},
        "status": {"replicas": status.get("replicas", 0),
                   "selector": str(selector_from_label_selector(sel)) if sel else ""},
    }


def _encode_continue(rev: int, key: str) -> str:
    return base64.urlsafe_b64encode(orjson.dumps({"v": "meta.k8s.io/v1", "rv": rev, "start": key})).decode()


def _decode_continue(token: str) -> tuple[int, str]:
    try:
        d = orjson.loads(base64.urlsafe_b64decode(token.encode()))
        return int(d["rv"]), str(d["start"])
    except Exception:
        raise errors.BadRequest(f"continue key is not valid: {token}") from None


class _StorePolicy:
    """RBAC objects read live from the store (the authorizer's PolicySource).

    ``generation`` moves whenever a Role, ClusterRole or binding is written, so
    readers can cache what they derived from the policy.
    """

    def __init__(self, server: APIServer) -> None:
        self.log = server.log
        self.generation = 0
        self._lists: dict[str, list[dict[str, Any]]] = {}
        self.log.add_listener(self._changed)

    def _changed(self, rec: Record) -> None:
        if rec.key.endswith(".rbac.authorization.k8s.io", 0, rec.key.find("/", 10)):
            self.generation += 1
            self._lists.clear()

    def _objs(self, prefix: str) -> Iterable[dict[str, Any]]:
        got = self._lists.get(prefix)
        if got is None:
            got = self._lists[prefix] = [r.object for r in self.log.range(prefix)]
        return got

    def cluster_roles(self):
        return self._objs("/registry/clusterroles.rbac.authorization.k8s.io/")

    def cluster_role_bindings(self):
        return self._objs("/registry/clusterrolebindings.rbac.authorization.k8s.io/")

    def roles(self, namespace: str):
        return self._objs(f"/registry/roles.rbac.authorization.k8s.io/{namespace}/")

    def role_bindings(self, namespace: str):
        return self._objs(f"/registry/rolebindings.rbac.authorization.k8s.io/{namespace}/")

    def get_role(self, namespace: str, name: str):
        rec = self.log.get(f"/registry/roles.rbac.authorization.k8s.io/{namespace}/{name}")
        return rec.object if rec else None

    def get_cluster_role(self, name: str):
        rec = self.log.get(f"/registry/clusterroles.rbac.authorization.k8s.io/{name}")
        return rec.object if rec else None
