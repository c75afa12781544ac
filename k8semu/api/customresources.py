"""CustomResourceDefinitions and the custom resources they define (apiextensions-apiserver).

Two halves:

* **The CRD kind** (``apiextensions.k8s.io/v1`` ``CustomResourceDefinition``, cluster-scoped,
  in :data:`~k8semu.api.resources.RESOURCES`): :func:`default_crd` (upstream's ``SetDefaults``:
  ``names.singular`` = lower-case kind, ``names.listKind`` = kind + ``List``, ``conversion``
  ``{strategy: None}``), :func:`validate_crd` (the essentials of
  ``ValidateCustomResourceDefinition``, with upstream's messages), :func:`prepare_crd_for_create`
  (status reset to empty ``acceptedNames`` and ``storedVersions`` = the storage version) and
  :func:`controlled_status` — what apiextensions-apiserver's NamingConditionController and
  EstablishingController write: ``acceptedNames`` and the conditions ``NamesAccepted``
  (``NoConflicts``, ``no conflicts found``) and ``Established`` (``InitialNamesAccepted``,
  ``the initial names have been accepted``). The API server writes that status itself right
  after a CRD's create or update (actor :data:`ACTOR`, field manager ``kube-apiserver`` on the
  ``status`` subresource, as upstream's loopback client), so a CRD is Established in the same
  request and the log stays deterministic. Deleting a CRD runs the finalizer
  ``customresourcecleanup.apiextensions.k8s.io`` the same way (see
  ``APIServer._crd_cleanup``): ``Terminating`` (``InstanceDeletionInProgress``), every custom
  object deleted, ``Terminating`` False (``InstanceDeletionCompleted``, ``removed all
  instances``), finalizer removed, CRD gone.

* **Serving custom resources**: :class:`CustomResources`, one per
  :class:`~k8semu.api.apiserver.APIServer` (never module state: a process holds many
  clusters), derives a :class:`CustomResourceInfo` per served version of every Established
  CRD from the live objects, recomputed when a CRD changes (``EventLog.last_change``). The
  API server, the HTTP front (routing, discovery, OpenAPI), the manifest reader and the CLI
  consult it after the static table. Objects are stored like every other kind, under
  ``/registry/<plural>.<group>/[<namespace>/]<name>`` (the log format's key scheme), in the
  storage version; a read (:meth:`CustomResources.read`) prunes and defaults the object by the
  schema of the version it is stored in, sets the ``apiVersion`` read (conversion strategy
  ``None``) and prunes by that version's schema, as upstream's storage codec; a
  ``deprecated: true`` version's requests carry a ``Warning`` (:func:`deprecation_warning`, in
  the info's ``deprecated``). :func:`prune` drops fields the structural schema does not
  declare (unless ``x-kubernetes-preserve-unknown-fields``), :func:`apply_schema_defaults`
  fills ``default:`` values and :func:`validate_schema` checks types, ``required``,
  ``enum``, ``minimum``/``maximum``, lengths, item counts and ``pattern`` with upstream's
  messages (``spec.replicas: Invalid value: "string": spec.replicas in body must be of type
  integer: "string"``); then the schema's ``x-kubernetes-validations`` CEL rules run
  (:mod:`k8semu.api.celrules`, which :func:`validate_crd` also uses to refuse rules that do
  not compile). :func:`printer_columns` / :func:`table_cells` give the server-side
  Table (``Name``, then ``additionalPrinterColumns``, or ``Age`` when there are none).
"""

from __future__ import annotations

import re
from typing import Any, Iterable

import attrs

from .errors import FieldError
from .jsonpath import NIL, JSONPathError, parse_jsonpath
from .resources import ResourceInfo

__all__ = [
    "CRD_GROUP", "CRD_RESOURCE", "CLEANUP_FINALIZER", "ACTOR", "FIELD_MANAGER",
    "CustomResourceInfo", "CustomResources", "default_crd", "validate_crd", "prepare_crd_for_create",
    "controlled_status", "prune", "apply_schema_defaults", "validate_schema", "validate_custom",
    "prepare_for_create", "prepare_for_update", "version_sort_key", "printer_columns", "table_cells",
    "PATCH_TYPES", "is_established", "set_condition", "generic_meta_errors", "scale_of", "with_spec_replicas",
    "json_path", "openapi_schema", "schema_name", "deprecation_warning",
]

CRD_GROUP = "apiextensions.k8s.io"
#: the CRDs' resource as the store names it (``EventLog.last_change``)
CRD_RESOURCE = f"customresourcedefinitions.{CRD_GROUP}"
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
#: the log actor of the writes apiextensions-apiserver's own controllers make
ACTOR = "apiextensions-apiserver"
#: their field manager (upstream's loopback client is kube-apiserver itself)
FIELD_MANAGER = "kube-apiserver"
#: the patch types a custom resource accepts: no strategic merge (no Go struct tags to go by)
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml")


# ---------------------------------------------------------------------------- the CRD kind
def default_crd(obj: dict[str, Any]) -> None:
    """Upstream's v1 ``SetDefaults_CustomResourceDefinition*``, in place."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict) and isinstance(names.get("kind"), str) and names["kind"]:
        if not names.get("singular"):
            names["singular"] = names["kind"].lower()
        if not names.get("listKind"):
            names["listKind"] = names["kind"] + "List"
    if spec.get("conversion") is None:
        spec["conversion"] = {"strategy": "None"}


def _storage_version(obj: dict[str, Any]) -> str | None:
    for v in (obj.get("spec") or {}).get("versions") or ():
        if isinstance(v, dict) and v.get("storage"):
            return v.get("name")
    return None


def prepare_crd_for_create(obj: dict[str, Any]) -> dict[str, Any]:
    """The CRD strategy's ``PrepareForCreate``: generation 1, status reset, ``storedVersions``."""
    meta = {**(obj.get("metadata") or {}), "generation": 1}
    storage = _storage_version(obj)
    status: dict[str, Any] = {"acceptedNames": {"plural": "", "kind": ""}}
    status["storedVersions"] = [storage] if storage else []
    return {**obj, "metadata": meta, "status": status}


def _go_versions(versions: Any) -> str:
    """A short Go-like rendering of ``spec.versions`` for the storage-version error."""
    parts = []
    for v in versions if isinstance(versions, list) else ():
        if isinstance(v, dict):
            parts.append(f'apiextensions.CustomResourceDefinitionVersion{{Name:"{v.get("name", "")}", '
                         f'Served:{str(bool(v.get("served"))).lower()}, '
                         f'Storage:{str(bool(v.get("storage"))).lower()}, ...}}')
    return "[]apiextensions.CustomResourceDefinitionVersion{" + ", ".join(parts) + "}"


def validate_crd(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """The essentials of upstream's ``ValidateCustomResourceDefinition`` (metadata is
    checked by the caller), in upstream's order and words, including the schemas'
    ``x-kubernetes-validations`` rules (:func:`~k8semu.api.celrules.crd_rule_errors`: shape
    checks and compilation; ``spec.validation.openAPIV3Schema…`` paths when every version has
    the same schema, as upstream hoists it, else per version)."""
    from .celrules import crd_rule_errors
    from .validation import is_dns1035_label, is_dns1123_subdomain

    errs: list[FieldError] = []
    rule_errs = crd_rule_errors(obj)
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
    group = spec.get("group") or ""
    plural = names.get("plural") or ""
    name = meta.get("name") or ""
    if name != f"{plural}.{group}":
        errs.append(FieldError.invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if not group:
        errs.append(FieldError.required("spec.group"))
    else:
        for msg in is_dns1123_subdomain(group):
            errs.append(FieldError.invalid("spec.group", group, msg))
        if len(group.split(".")) < 2:
            errs.append(FieldError.invalid("spec.group", group, "should be a domain with at least one dot"))
    scope = spec.get("scope")
    if not scope:
        errs.append(FieldError.required("spec.scope"))
    elif scope not in ("Cluster", "Namespaced"):
        errs.append(FieldError.not_supported("spec.scope", scope, ["Cluster", "Namespaced"]))
    versions = spec.get("versions")
    storage = 0
    seen: set[str] = set()
    if not isinstance(versions, list) or not versions:
        errs.append(FieldError.required("spec.versions", "must have exactly one version marked as storage version"))
    else:
        for i, v in enumerate(versions):
            path = f"spec.versions[{i}]"
            if not isinstance(v, dict):
                continue
            vname = v.get("name") or ""
            if not vname:
                errs.append(FieldError.required(f"{path}.name"))
            else:
                for msg in is_dns1035_label(vname):
                    errs.append(FieldError.invalid(f"{path}.name", vname, msg))
                if vname in seen:
                    errs.append(FieldError.duplicate(f"spec.versions[{i}].name", vname))
                seen.add(vname)
            if v.get("storage"):
                storage += 1
            schema = (v.get("schema") or {}).get("openAPIV3Schema") if isinstance(v.get("schema"), dict) else None
            if not isinstance(schema, dict):
                errs.append(FieldError.required(f"{path}.schema.openAPIV3Schema", "schemas are required"))
            elif not schema.get("type") and not schema.get("x-kubernetes-preserve-unknown-fields"):
                errs.append(FieldError.required(f"{path}.schema.openAPIV3Schema.type",
                                                "must not be empty at the root"))
            elif schema.get("type") not in (None, "object"):
                errs.append(FieldError.not_supported(f"{path}.schema.openAPIV3Schema.type",
                                                     schema.get("type"), ["object"]))
        errs.extend(e for e in rule_errs if e.field.startswith("spec.versions["))
        if storage != 1:
            errs.append(FieldError("FieldValueInvalid", "spec.versions",
                                   f"{_go_versions(versions)}: must have exactly one version marked as storage version"))
        if not any(isinstance(v, dict) and v.get("served") for v in versions):
            errs.append(FieldError("FieldValueInvalid", "spec.versions",
                                   f"{_go_versions(versions)}: must have at least one served version"))
    if not plural:
        errs.append(FieldError.required("spec.names.plural"))
    else:
        for msg in is_dns1035_label(plural):
            errs.append(FieldError.invalid("spec.names.plural", plural, msg))
    singular = names.get("singular") or ""
    if singular:
        for msg in is_dns1035_label(singular):
            errs.append(FieldError.invalid("spec.names.singular", singular, msg))
    kind = names.get("kind") or ""
    if not kind:
        errs.append(FieldError.required("spec.names.kind"))
    else:
        for msg in is_dns1035_label(kind.lower()):
            errs.append(FieldError.invalid("spec.names.kind", kind, msg))
    list_kind = names.get("listKind") or ""
    if not list_kind:
        errs.append(FieldError.required("spec.names.listKind"))
    elif kind and list_kind == kind:
        errs.append(FieldError.invalid("spec.names.listKind", list_kind, "kind and listKind may not be the same"))
    for i, short in enumerate(names.get("shortNames") or ()):
        for msg in is_dns1035_label(str(short)):
            errs.append(FieldError.invalid(f"spec.names.shortNames[{i}]", short, msg))
    errs.extend(e for e in rule_errs if e.field.startswith("spec.validation."))
    if old is not None:
        ospec = old.get("spec") or {}
        if ospec.get("group") != spec.get("group"):
            errs.append(FieldError.invalid("spec.group", spec.get("group"), "field is immutable"))
        if ospec.get("scope") != spec.get("scope"):
            errs.append(FieldError.invalid("spec.scope", spec.get("scope"), "field is immutable"))
    return errs


def _condition(type_: str, status: str, reason: str, message: str, now: str,
               old: list[dict[str, Any]]) -> dict[str, Any]:
    prev = next((c for c in old if c.get("type") == type_), None)
    when = prev["lastTransitionTime"] if prev and prev.get("status") == status and \
        prev.get("lastTransitionTime") else now
    return {"type": type_, "status": status, "lastTransitionTime": when, "reason": reason, "message": message}


def controlled_status(crd: dict[str, Any], others: Iterable[dict[str, Any]], now: str) -> dict[str, Any]:
    """The status apiextensions-apiserver's naming and establishing controllers give ``crd``.

    ``others``: the other live CRDs (a kind another CRD of the group already uses is a
    ``KindConflict``: names not accepted, not established). Conditions keep their
    ``lastTransitionTime`` while their status is unchanged.
    """
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    status = dict(crd.get("status") or {})
    old_conds = [c for c in status.get("conditions") or () if isinstance(c, dict)]
    conflict = None
    for other in others:
        ospec = other.get("spec") or {}
        if ospec.get("group") != spec.get("group"):
            continue
        accepted = (other.get("status") or {}).get("acceptedNames") or {}
        if names.get("kind") and accepted.get("kind") == names.get("kind"):
            conflict = ("KindConflict", f'"{names["kind"]}" is already in use')
            break
        if names.get("listKind") and accepted.get("listKind") == names.get("listKind"):
            conflict = ("ListKindConflict", f'"{names["listKind"]}" is already in use')
            break
    keep = [c for c in old_conds if c.get("type") not in ("NamesAccepted", "Established")]
    established_before = any(c.get("type") == "Established" and c.get("status") == "True" for c in old_conds)
    if conflict is None:
        accepted: dict[str, Any] = {"plural": names.get("plural", "")}
        for k in ("singular", "shortNames", "kind", "listKind", "categories"):
            if names.get(k):
                accepted[k] = names[k]
        accepted.setdefault("kind", "")
        status["acceptedNames"] = accepted
        conds = [_condition("NamesAccepted", "True", "NoConflicts", "no conflicts found", now, old_conds),
                 _condition("Established", "True", "InitialNamesAccepted",
                            "the initial names have been accepted", now, old_conds)]
    else:
        conds = [_condition("NamesAccepted", "False", conflict[0], conflict[1], now, old_conds)]
        if established_before:
            conds.append(next(c for c in old_conds if c.get("type") == "Established"))
        else:
            conds.append(_condition("Established", "False", "NotAccepted", "not all names are accepted",
                                    now, old_conds))
    status["conditions"] = conds + keep
    stored = list(status.get("storedVersions") or [])
    storage = _storage_version(crd)
    if storage and storage not in stored:
        stored.append(storage)
    status["storedVersions"] = stored
    order = ("conditions", "acceptedNames", "storedVersions")
    return {k: status[k] for k in order if k in status} | {k: v for k, v in status.items() if k not in order}


def is_established(crd: dict[str, Any]) -> bool:
    return any(c.get("type") == "Established" and c.get("status") == "True"
               for c in (crd.get("status") or {}).get("conditions") or () if isinstance(c, dict))


def set_condition(status: dict[str, Any], cond: dict[str, Any]) -> dict[str, Any]:
    """``status`` with ``cond`` replacing the condition of its type (appended if new);
    ``lastTransitionTime`` kept when the status did not change."""
    conds = list(status.get("conditions") or [])
    for i, c in enumerate(conds):
        if c.get("type") == cond["type"]:
            if c.get("status") == cond["status"] and c.get("lastTransitionTime"):
                cond = {**cond, "lastTransitionTime": c["lastTransitionTime"]}
            conds[i] = cond
            break
    else:
        conds.append(cond)
    return {**status, "conditions": conds}


# ---------------------------------------------------------------------------- served resources
def version_sort_key(name: str) -> tuple:
    """Kubernetes' version priority: GA > beta > alpha (higher numbers first), then others
    alphabetically (``v1`` < ``v1beta1`` < ``v1alpha1`` < ``foo`` as sort keys)."""
    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", name)
    if not m:
        return (3, 0, 0, name)
    major, stage, minor = int(m.group(1)), m.group(2), int(m.group(3) or 0)
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -major, -minor, name)


@attrs.frozen
class CustomResourceInfo(ResourceInfo):
    """A :class:`ResourceInfo` served from a CRD, for one served version.

    Attributes (beyond ResourceInfo's):
        crd: the CRD's name (``crontabs.stable.example.com``).
        storage_version: the version objects are stored in.
        list_kind: ``spec.names.listKind``.
        schema: the version's ``openAPIV3Schema`` (a dict) or None.
        columns: the version's ``additionalPrinterColumns``.
        scale: the version's ``subresources.scale`` (paths) or None.
        terminating: the CRD is being deleted (creates are refused).
    """

    crd: str = ""
    storage_version: str = ""
    list_kind: str = ""
    schema: Any = attrs.field(default=None, eq=False)
    columns: Any = attrs.field(default=(), eq=False)
    scale: Any = attrs.field(default=None, eq=False)
    terminating: bool = attrs.field(default=False, eq=False)
    singular_name: str = ""

    @property
    def singular(self) -> str:
        return self.singular_name or self.kind.lower()

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources


def deprecation_warning(crd: dict[str, Any], version: dict[str, Any]) -> str:
    """The ``Warning`` header apiextensions-apiserver's CRD handler adds to every request to a
    ``deprecated: true`` version (``""`` when it is not deprecated): the version's
    ``deprecationWarning``, else upstream's ``defaultDeprecationWarning`` —
    ``<group>/<version> <Kind> is deprecated``, followed by ``; use <group>/<v> <Kind>`` naming
    the highest-priority served, non-deprecated version that outranks it, when there is one
    (``example.org/v1beta1 Widget is deprecated; use example.org/v1 Widget``)."""
    if not version.get("deprecated"):
        return ""
    if isinstance(version.get("deprecationWarning"), str):
        return version["deprecationWarning"]
    spec = crd.get("spec") or {}
    group, kind = spec.get("group") or "", (spec.get("names") or {}).get("kind") or ""
    name = version.get("name") or ""
    msg = f"{group}/{name} {kind} is deprecated"
    better = sorted((v.get("name") or "" for v in spec.get("versions") or ()
                     if isinstance(v, dict) and v.get("served") and not v.get("deprecated")
                     and version_sort_key(v.get("name") or "") < version_sort_key(name)), key=version_sort_key)
    if better:
        msg += f"; use {group}/{better[0]} {kind}"
    return msg


def _infos_of(crd: dict[str, Any]) -> list[CustomResourceInfo]:
    spec = crd.get("spec") or {}
    names = (crd.get("status") or {}).get("acceptedNames") or spec.get("names") or {}
    storage = _storage_version(crd) or ""
    terminating = bool((crd.get("metadata") or {}).get("deletionTimestamp"))
    served = [v for v in spec.get("versions") or () if isinstance(v, dict) and v.get("served")]
    served.sort(key=lambda v: version_sort_key(v.get("name") or ""))
    out = []
    for v in served:
        subs = v.get("subresources") or {}
        subresources = tuple(s for s in ("status", "scale") if isinstance(subs, dict) and s in subs)
        out.append(CustomResourceInfo(
            spec.get("group") or "", v.get("name") or "", names.get("kind") or "", names.get("plural") or "",
            spec.get("scope") == "Namespaced", tuple(names.get("shortNames") or ()),
            tuple(names.get("categories") or ()), subresources,
            crd=(crd.get("metadata") or {}).get("name") or "", storage_version=storage,
            list_kind=names.get("listKind") or f"{names.get('kind')}List",
            schema=(v.get("schema") or {}).get("openAPIV3Schema"),
            columns=tuple(v.get("additionalPrinterColumns") or ()),
            scale=subs.get("scale") if isinstance(subs, dict) else None,
            terminating=terminating, singular_name=names.get("singular") or "",
            deprecated=deprecation_warning(crd, v),
        ))
    return out


def _version_schemas(crd: dict[str, Any]) -> dict[str, Any]:
    """Every version's ``openAPIV3Schema`` (served or not: a stored object may be in any)."""
    out = {}
    for v in (crd.get("spec") or {}).get("versions") or ():
        if isinstance(v, dict) and isinstance(v.get("schema"), dict):
            out[v.get("name") or ""] = v["schema"].get("openAPIV3Schema")
    return out


class CustomResources:
    """The custom resources one API server serves, derived from its live Established CRDs.

    Recomputed lazily when a CRD was written since the last look (``log.last_change``).
    ``infos()`` lists every (resource, served version), each resource's versions in
    priority order, resources in CRD-name order.
    """

    def __init__(self, log: Any) -> None:
        self.log = log
        self._rev = -1
        self._infos: tuple[CustomResourceInfo, ...] = ()
        self._crds: tuple[dict[str, Any], ...] = ()
        self._schemas: dict[str, dict[str, Any]] = {}

    def _refresh(self) -> None:
        rev = self.log.last_change(CRD_RESOURCE)
        if rev == self._rev and (rev or not self._infos):
            return
        crds = tuple(r.object for r in self.log.range(f"/registry/{CRD_RESOURCE}/"))
        infos: list[CustomResourceInfo] = []
        for crd in crds:
            if is_established(crd):
                infos.extend(_infos_of(crd))
        self._rev, self._crds, self._infos = rev, crds, tuple(infos)
        self._schemas = {(c.get("metadata") or {}).get("name") or "": _version_schemas(c) for c in crds}

    def crds(self) -> tuple[dict[str, Any], ...]:
        """Every live CRD object, in name order."""
        self._refresh()
        return self._crds

    def infos(self) -> tuple[CustomResourceInfo, ...]:
        self._refresh()
        return self._infos

    def preferred(self) -> list[CustomResourceInfo]:
        """One info per resource: its preferred (highest-priority) served version."""
        out, seen = [], set()
        for i in self.infos():
            if i.crd not in seen:
                seen.add(i.crd)
                out.append(i)
        return out

    def by_kind(self, api_version: str, kind: str) -> CustomResourceInfo | None:
        for i in self.infos():
            if i.api_version == api_version and i.kind == kind:
                return i
        return None

    def by_resource(self, group: str, plural: str, version: str | None = None) -> CustomResourceInfo | None:
        for i in self.infos():
            if i.group == group and i.plural == plural and (version is None or i.version == version):
                return i
        return None

    def storage_info(self, info: CustomResourceInfo) -> CustomResourceInfo:
        return self.by_resource(info.group, info.plural, info.storage_version) or info

    def lookup(self, name: str) -> list[CustomResourceInfo]:
        """What a user typed: ``crontabs``, ``crontab``, ``ct``, ``CronTab``,
        ``crontabs.stable.example.com``, ``crontabs.v1.stable.example.com``."""
        n = name.lower()
        out = []
        for i in self.preferred():
            if n in (i.plural, i.singular, i.kind.lower()) or n in i.short_names or n == i.qualified:
                out.append(i)
                continue
            if "." in n:
                head, rest = n.split(".", 1)
                if head in (i.plural, i.singular, i.kind.lower()) or head in i.short_names:
                    if rest == i.group:
                        out.append(i)
                    elif rest.startswith(".") is False and "." in rest:
                        ver, grp = rest.split(".", 1)
                        if grp == i.group:
                            exact = self.by_resource(i.group, i.plural, ver)
                            if exact is not None:
                                out.append(exact)
        return out

    def for_crd(self, crd_name: str) -> list[CustomResourceInfo]:
        return [i for i in self.infos() if i.crd == crd_name]

    def in_category(self, category: str) -> list[CustomResourceInfo]:
        """The resources (preferred versions) whose CRD lists ``category`` (``all``), in CRD-name order."""
        return [i for i in self.preferred() if category in i.categories]

    def read(self, info: CustomResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
        """A stored custom object as a read through ``info``'s version returns it, as upstream's
        storage codec decodes it (``crdConversionRESTOptionsGetter``): pruned by the schema of
        the version it is stored in, that version's structural defaults filled
        (``unstructuredDefaulter``), converted (strategy ``None``: only ``apiVersion``) and
        pruned by the schema of the version read (``schemaCoercingConverter``). A copy where
        anything changes; the stored record is never written back (as upstream, read-time
        defaults reach etcd only with the object's next write)."""
        if obj.get("kind") != info.kind:
            return obj
        self._refresh()
        schemas = self._schemas.get(info.crd) or {}
        group, _, stored = str(obj.get("apiVersion") or "").rpartition("/")
        if group == info.group and isinstance(schemas.get(stored), dict):
            obj = apply_schema_defaults(prune(obj, schemas[stored]), schemas[stored])
        if obj.get("apiVersion") != info.api_version:
            obj = {**obj, "apiVersion": info.api_version}
        if stored != info.version and isinstance(info.schema, dict):
            obj = prune(obj, info.schema)
        return obj


# ---------------------------------------------------------------------------- schemas
def _props(schema: dict[str, Any]) -> dict[str, Any]:
    p = schema.get("properties")
    return p if isinstance(p, dict) else {}


def apply_schema_defaults(value: Any, schema: Any) -> Any:
    """``value`` with the ``default:`` of every absent property filled in (a copy where
    changed), recursively through properties, additionalProperties and items."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        props = _props(schema)
        out = None
        for k, sub in props.items():
            if not isinstance(sub, dict):
                continue
            if k not in value and "default" in sub:
                out = out if out is not None else dict(value)
                out[k] = sub["default"]
            cur = (out if out is not None else value).get(k, ...)
            if cur is not ...:
                new = apply_schema_defaults(cur, sub)
                if new is not cur:
                    out = out if out is not None else dict(value)
                    out[k] = new
        add = schema.get("additionalProperties")
        if isinstance(add, dict):
            for k in list(value):
                if k in props:
                    continue
                new = apply_schema_defaults(value[k], add)
                if new is not value[k]:
                    out = out if out is not None else dict(value)
                    out[k] = new
        return value if out is None else out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        new = [apply_schema_defaults(v, schema["items"]) for v in value]
        return value if all(a is b for a, b in zip(new, value)) else new
    return value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def prune(value: Any, schema: Any, path: str = "", unknown: list[str] | None = None,
          root: bool = True) -> Any:
    """``value`` without the fields ``schema`` does not declare (upstream's structural
    pruning). ``unknown`` collects the dropped paths (``spec.foo``). At the root (and in an
    ``x-kubernetes-embedded-resource``) ``apiVersion``, ``kind`` and ``metadata`` stay."""
    if unknown is None:
        unknown = []
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        props = _props(schema)
        add = schema.get("additionalProperties")
        keep_all = bool(schema.get("x-kubernetes-preserve-unknown-fields")) or add is True
        embedded = root or bool(schema.get("x-kubernetes-embedded-resource"))
        out: dict[str, Any] = {}
        changed = False
        for k, v in value.items():
            if embedded and k in ("apiVersion", "kind", "metadata") and k not in props:
                out[k] = v
                continue
            if k in props:
                new = prune(v, props[k], _join(path, k), unknown, False)
            elif isinstance(add, dict):
                new = prune(v, add, _join(path, k), unknown, False)
            elif keep_all:
                new = v
            else:
                unknown.append(_join(path, k))
                changed = True
                continue
            changed = changed or new is not v
            out[k] = new
        return out if changed else value
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        new_list = [prune(v, schema["items"], f"{path}[{i}]", unknown, False) for i, v in enumerate(value)]
        return value if all(a is b for a, b in zip(new_list, value)) else new_list
    return value


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "integer" if v.is_integer() else "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def _num(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def validate_schema(value: Any, schema: Any, path: str, errs: list[FieldError]) -> None:
    """Append to ``errs`` what kube-openapi's validator reports for ``value`` at ``path``."""
    if not isinstance(schema, dict):
        return
    shown = path or "<root>"
    if value is None:
        if schema.get("nullable") or not schema.get("type"):
            return
    t = schema.get("type")
    actual = _json_type(value)
    if schema.get("x-kubernetes-int-or-string"):
        if actual not in ("integer", "string"):
            errs.append(FieldError("FieldValueTypeInvalid", shown,
                                   f"{shown} in body must be of type integer,string: \"{actual}\"", actual))
            return
    elif t and not (t == actual or (t == "number" and actual == "integer")):
        errs.append(FieldError("FieldValueTypeInvalid", shown, f"{shown} in body must be of type {t}: \"{actual}\"",
                               actual))
        return
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        errs.append(FieldError.not_supported(shown, value, [str(e) for e in enum]))
    if actual in ("integer", "number") and not isinstance(value, bool):
        mx, mn = schema.get("maximum"), schema.get("minimum")
        if isinstance(mx, (int, float)):
            if schema.get("exclusiveMaximum") and value >= mx:
                errs.append(FieldError.invalid(shown, value, f"{shown} in body should be less than {_num(mx)}"))
            elif value > mx:
                errs.append(FieldError.invalid(shown, value, f"{shown} in body should be less than or equal to {_num(mx)}"))
        if isinstance(mn, (int, float)):
            if schema.get("exclusiveMinimum") and value <= mn:
                errs.append(FieldError.invalid(shown, value, f"{shown} in body should be greater than {_num(mn)}"))
            elif value < mn:
                errs.append(FieldError.invalid(shown, value, f"{shown} in body should be greater than or equal to {_num(mn)}"))
        mult = schema.get("multipleOf")
        if isinstance(mult, (int, float)) and mult and value % mult:
            errs.append(FieldError.invalid(shown, value, f"{shown} in body should be a multiple of {_num(mult)}"))
    if actual == "string":
        mx, mn = schema.get("maxLength"), schema.get("minLength")
        if isinstance(mx, int) and len(value) > mx:
            errs.append(FieldError("FieldValueTooLong", shown, f"may not be more than {mx} bytes", value))
        if isinstance(mn, int) and len(value) < mn:
            errs.append(FieldError.invalid(shown, value, f"{shown} in body should be at least {mn} chars long"))
        pat = schema.get("pattern")
        if isinstance(pat, str):
            try:
                ok = re.search(pat, value) is not None
            except re.error:
                ok = True
            if not ok:
                errs.append(FieldError.invalid(shown, value, f"{shown} in body should match '{pat}'"))
    if actual == "array":
        mx, mn = schema.get("maxItems"), schema.get("minItems")
        if isinstance(mx, int) and len(value) > mx:
            errs.append(FieldError("FieldValueTooMany", shown, f"must have at most {mx} items", len(value)))
        if isinstance(mn, int) and len(value) < mn:
            errs.append(FieldError.invalid(shown, len(value), f"{shown} in body should have at least {mn} items"))
        items = schema.get("items")
        if isinstance(items, dict):
            for i, v in enumerate(value):
                validate_schema(v, items, f"{path}[{i}]", errs)
    if actual == "object":
        props = _props(schema)
        for req in schema.get("required") or ():
            if req not in value:
                errs.append(FieldError.required(_join(path, req)))
        for k, v in value.items():
            if path == "" and k in ("apiVersion", "kind", "metadata") and k not in props:
                continue
            if k in props:
                validate_schema(v, props[k], _join(path, k), errs)
            elif isinstance(schema.get("additionalProperties"), dict):
                validate_schema(v, schema["additionalProperties"], _join(path, k), errs)
        mx, mn = schema.get("maxProperties"), schema.get("minProperties")
        if isinstance(mx, int) and len(value) > mx:
            errs.append(FieldError("FieldValueTooMany", shown, f"must have at most {mx} items", len(value)))
        if isinstance(mn, int) and len(value) < mn:
            errs.append(FieldError.invalid(shown, len(value), f"{shown} in body should have at least {mn} properties"))


def validate_custom(info: CustomResourceInfo, obj: dict[str, Any], old: dict[str, Any] | None,
                    warnings: list[str] | None = None) -> list[FieldError]:
    """A custom object's validation: ObjectMeta (names are DNS subdomains), its schema, then
    the schema's ``x-kubernetes-validations`` rules (:func:`~k8semu.api.celrules.validate_rules`;
    ``old`` is the stored object on update and status update, None on create). As upstream's
    strategy, the rules are not run when the errors so far include a blocking one (wrong type,
    required, enum, too long, too many): ``<nil>: Invalid value: "null": some validation rules
    were not checked because the object was invalid; correct the existing errors to complete
    validation`` is added instead. Ratcheted rule failures (an unchanged value) go to
    ``warnings`` when given."""
    from . import validation

    errs: list[FieldError] = []
    validation._validate_meta(errs, obj, validation.is_dns1123_subdomain, info.namespaced)
    if old is not None:
        validation._validate_meta_update(errs, obj, old)
    errs = generic_meta_errors(errs)
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    if isinstance(info.schema, dict):
        validate_schema(body, info.schema, "", errs)
        from .celrules import blocking_error, schema_has_rules, validate_rules

        if schema_has_rules(info.schema):
            blocked = blocking_error(errs)
            if blocked is not None:
                errs.append(blocked)
            else:
                errs.extend(validate_rules(info.schema, obj, old, warnings=warnings))
    return errs


_NOT_SPEC = frozenset({"metadata", "status", "apiVersion", "kind"})
_CORE_FINALIZER_RULE = "name is neither a standard finalizer name nor is it fully qualified"


def generic_meta_errors(errs: list[FieldError]) -> list[FieldError]:
    """apiextensions-apiserver validates ObjectMeta with apimachinery's generic rules: a
    finalizer need only be a qualified name (``customresourcecleanup.apiextensions.k8s.io``
    is one), not the core API's standard-or-``domain/name`` rule."""
    return [e for e in errs if not (e.field.startswith("metadata.finalizers") and e.detail == _CORE_FINALIZER_RULE)]


def prepare_for_create(info: CustomResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
    """The custom resource strategy's ``PrepareForCreate``: generation 1; with a status
    subresource, ``status`` is dropped (only ``/status`` writes it)."""
    out = {**obj, "metadata": {**(obj.get("metadata") or {}), "generation": 1}}
    if info.has_status:
        out.pop("status", None)
    return out


def prepare_for_update(info: CustomResourceInfo, obj: dict[str, Any], old: dict[str, Any],
                       subresource: str) -> dict[str, Any]:
    """``PrepareForUpdate``: with a status subresource the main resource keeps the old
    ``status`` and a ``/status`` write changes nothing else; generation is bumped when
    anything but metadata (and status, when it is a subresource) changes."""
    old_meta = old.get("metadata") or {}
    if subresource == "status":
        out = {k: v for k, v in old.items() if k != "status"}
        if "status" in obj:
            out["status"] = obj["status"]
        meta = dict(old_meta)
        if "managedFields" in (obj.get("metadata") or {}):
            meta["managedFields"] = obj["metadata"]["managedFields"]
        out["metadata"] = meta
        return out
    obj = dict(obj)
    if info.has_status:
        if "status" in old:
            obj["status"] = old["status"]
        else:
            obj.pop("status", None)
    ignore = _NOT_SPEC if info.has_status else _NOT_SPEC - {"status"}
    keys = (set(obj) | set(old)) - ignore
    meta = dict(obj.get("metadata") or {})
    gen = old_meta.get("generation", 1)
    if any(obj.get(k) != old.get(k) for k in sorted(keys)):
        gen += 1
    meta["generation"] = gen
    obj["metadata"] = meta
    return obj


def _path_keys(path: str) -> list[str]:
    return [k for k in (path or "").split(".") if k]


def scale_of(info: CustomResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
    """The ``autoscaling/v1`` Scale of a custom object, read through the CRD's
    ``specReplicasPath`` / ``statusReplicasPath`` / ``labelSelectorPath``."""
    scale = info.scale if isinstance(info.scale, dict) else {}
    meta = obj.get("metadata") or {}

    def at(path: str) -> Any:
        v = json_path(obj, path) if path else ...
        return None if v is ... else v

    spec_r, status_r = at(scale.get("specReplicasPath", "")), at(scale.get("statusReplicasPath", ""))
    selector = at(scale.get("labelSelectorPath", ""))
    status: dict[str, Any] = {"replicas": status_r if isinstance(status_r, int) else 0}
    if isinstance(selector, str) and selector:
        status["selector"] = selector
    return {
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                     if k in meta},
        "spec": {"replicas": spec_r} if isinstance(spec_r, int) and spec_r else {},
        "status": status,
    }


def with_spec_replicas(info: CustomResourceInfo, obj: dict[str, Any], replicas: int) -> dict[str, Any]:
    """``obj`` with ``replicas`` at the CRD's ``specReplicasPath`` (maps made as needed)."""
    keys = _path_keys((info.scale or {}).get("specReplicasPath", ".spec.replicas"))

    def put(node: Any, rest: list[str]) -> Any:
        node = dict(node) if isinstance(node, dict) else {}
        node[rest[0]] = replicas if len(rest) == 1 else put(node.get(rest[0]), rest[1:])
        return node

    return put(obj, keys) if keys else obj


# ---------------------------------------------------------------------------- tables
_COLUMN_TYPES = ("integer", "number", "string", "boolean", "date")


def printer_columns(info: CustomResourceInfo) -> list[dict[str, Any]]:
    """The Table's ``columnDefinitions``: ``Name``, then the version's
    ``additionalPrinterColumns`` (or ``Age`` when it declares none)."""
    from .tables import _NAME

    cols = [_NAME.wire()]
    declared = [c for c in info.columns if isinstance(c, dict)]
    if not declared:
        declared = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    for c in declared:
        desc = c.get("description") or \
            f"Custom resource definition column (in JSONPath format): {c.get('jsonPath', '')}"
        cols.append({"name": c.get("name", ""), "type": c.get("type", "string"), "format": c.get("format", ""),
                     "description": desc, "priority": int(c.get("priority") or 0)})
    return cols


def json_path(obj: Any, path: str) -> Any:
    """A printer column's or scale path's ``jsonPath`` (``.spec.replicas``,
    ``.status.conditions[?(@.type=="Ready")].status``) as apiextensions-apiserver evaluates it
    (client-go's JSONPath, :mod:`k8semu.api.jsonpath`, on ``{PATH}``): the first value found;
    ``...`` when there is none or the path does not parse."""
    p = path.strip()
    if not (p.startswith("{") and p.endswith("}")):
        p = "{" + p + "}"
    try:
        results = parse_jsonpath(p).find_results(obj)
    except JSONPathError:
        return ...
    if not results or not results[0]:
        return ...
    return None if results[0][0] is NIL else results[0][0]


def table_cells(info: CustomResourceInfo, obj: dict[str, Any], now: Any) -> list[Any]:
    """One row's cells for :func:`printer_columns`: a ``date`` column is the time since
    (``5m``), a missing value ``None``, other values as they are (upstream's
    tableconvertor)."""
    from .humanize import translate_timestamp_since

    cells: list[Any] = [(obj.get("metadata") or {}).get("name") or ""]
    declared = [c for c in info.columns if isinstance(c, dict)] or \
        [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    for c in declared:
        v = json_path(obj, c.get("jsonPath") or "")
        if v is ...:
            cells.append(None)
        elif c.get("type") == "date" and isinstance(v, str):
            cells.append(translate_timestamp_since(v, now))
        elif c.get("type") == "string" and not isinstance(v, str):
            import orjson

            cells.append(orjson.dumps(v).decode() if isinstance(v, (dict, list)) else
                         ("true" if v is True else "false" if v is False else str(v)))
        else:
            cells.append(v)
    return cells


# ---------------------------------------------------------------------------- OpenAPI
def openapi_schema(info: CustomResourceInfo) -> dict[str, Any]:
    """The component schema of one custom kind (``com.example.stable.v1.CronTab``): the
    CRD's ``openAPIV3Schema`` with ``apiVersion``/``kind``/``metadata`` and its GVK."""
    base = dict(info.schema) if isinstance(info.schema, dict) else {"type": "object",
                                                                    "x-kubernetes-preserve-unknown-fields": True}
    props = dict(_props(base))
    props.setdefault("apiVersion", {"type": "string", "description": "APIVersion defines the versioned schema "
                                                                     "of this representation of an object."})
    props.setdefault("kind", {"type": "string", "description": "Kind is a string value representing the "
                                                               "REST resource this object represents."})
    props["metadata"] = {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],
                         "description": "Standard object's metadata."}
    base["properties"] = props
    base.setdefault("type", "object")
    base["x-kubernetes-group-version-kind"] = [{"group": info.group, "version": info.version, "kind": info.kind}]
    return base


def schema_name(info: CustomResourceInfo, kind: str | None = None) -> str:
    """Upstream's name: the group reversed, then version and kind."""
    return ".".join(reversed(info.group.split("."))) + f".{info.version}.{kind or info.kind}"
