"""The RBAC authorizer, ClusterRole aggregation and the bootstrap policy.

Design: the authorizer is a pure function of the RBAC objects it can see. It
reads them through :class:`PolicySource`, a small protocol (the API server's
store implements it; :class:`InMemoryPolicy` implements it over a list of
wire-form dicts for tests and bootstrapping). Decisions mirror upstream's
``plugin/pkg/auth/authorizer/rbac`` and ``pkg/registry/rbac/validation``:

* The ``system:masters`` group is allowed everything before RBAC is consulted
  (kube-apiserver's privileged-group authorizer).
* Otherwise every ClusterRoleBinding whose subjects match the user is visited,
  then - for namespaced requests - every RoleBinding in the request namespace.
  A RoleBinding that references a ClusterRole grants that ClusterRole's rules
  inside the binding's namespace only.
* A rule allows a resource request when verb, API group, resource (``*``,
  ``pods/log``, ``*/scale``) and resourceNames all match; a non-resource request
  when verb and a ``nonResourceURLs`` entry (exact, ``*`` or trailing ``*``
  prefix) match. A rule with resourceNames never matches a request without a
  name (list, create, deletecollection).
* Missing roles referenced by matching bindings are reported in the denial
  reason, e.g. ``RBAC: role.rbac.authorization.k8s.io "x" not found``.

:func:`aggregate_cluster_roles` computes what the clusterrole-aggregation
controller converges to; :func:`bootstrap_policy` returns the default
ClusterRoles and ClusterRoleBindings of a kubeadm v1.3x cluster (rules copied
as facts from upstream's bootstrappolicy testdata, restricted to the roles the
emulator's components need).

All inputs are treated as immutable; functions return new dicts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from k8semu.api.auth import (
    AUTHENTICATED,
    CONTROLLER_MANAGER_USER,
    KUBE_PROXY_USER,
    NODES_GROUP,
    SCHEDULER_USER,
    SYSTEM_MASTERS,
    UNAUTHENTICATED,
    Attributes,
    UserInfo,
    service_account_username,
)
from k8semu.api.errors import Forbidden

__all__ = [
    "RBAC_GROUP",
    "RBAC_API_VERSION",
    "RULE_FIELDS",
    "rule_key",
    "aggregated_rules",
    "PolicySource",
    "InMemoryPolicy",
    "RBACAuthorizer",
    "rule_allows",
    "applies_to",
    "label_selector_matches",
    "aggregate_cluster_roles",
    "bootstrap_policy",
    "certificate_policy",
]

RBAC_GROUP = "rbac.authorization.k8s.io"
RBAC_API_VERSION = f"{RBAC_GROUP}/v1"


# --------------------------------------------------------------------------- sources


class PolicySource(Protocol):
    """Where the authorizer reads RBAC objects (wire-form dicts).

    ``get_role`` / ``get_cluster_role`` return None when absent. Iteration
    order of the list methods only affects which binding an allow reason names.
    """

    def cluster_roles(self) -> Iterable[dict[str, Any]]: ...

    def cluster_role_bindings(self) -> Iterable[dict[str, Any]]: ...

    def roles(self, namespace: str) -> Iterable[dict[str, Any]]: ...

    def role_bindings(self, namespace: str) -> Iterable[dict[str, Any]]: ...

    def get_role(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def get_cluster_role(self, name: str) -> dict[str, Any] | None: ...


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


class InMemoryPolicy:
    """A :class:`PolicySource` over a fixed list of objects.

    Accepts any mix of Role, RoleBinding, ClusterRole and ClusterRoleBinding
    dicts (other kinds are ignored). Roles/RoleBindings without
    ``metadata.namespace`` are taken to be in ``default`` (as kubectl would
    create them). Lists are returned sorted by (namespace, name). Objects are
    not copied; callers must not mutate them.
    """

    def __init__(self, objects: Iterable[Mapping[str, Any]]) -> None:
        self._cluster_roles: dict[str, dict[str, Any]] = {}
        self._crbs: dict[str, dict[str, Any]] = {}
        self._roles: dict[tuple[str, str], dict[str, Any]] = {}
        self._rbs: dict[tuple[str, str], dict[str, Any]] = {}
        for obj in objects:
            kind = obj.get("kind")
            name = _meta(obj).get("name", "")
            ns = _meta(obj).get("namespace") or "default"
            if kind == "ClusterRole":
                self._cluster_roles[name] = obj  # type: ignore[assignment]
            elif kind == "ClusterRoleBinding":
                self._crbs[name] = obj  # type: ignore[assignment]
            elif kind == "Role":
                self._roles[(ns, name)] = obj  # type: ignore[assignment]
            elif kind == "RoleBinding":
                self._rbs[(ns, name)] = obj  # type: ignore[assignment]

    def cluster_roles(self) -> list[dict[str, Any]]:
        return [self._cluster_roles[k] for k in sorted(self._cluster_roles)]

    def cluster_role_bindings(self) -> list[dict[str, Any]]:
        return [self._crbs[k] for k in sorted(self._crbs)]

    def roles(self, namespace: str) -> list[dict[str, Any]]:
        return [v for k, v in sorted(self._roles.items()) if k[0] == namespace]

    def role_bindings(self, namespace: str) -> list[dict[str, Any]]:
        return [v for k, v in sorted(self._rbs.items()) if k[0] == namespace]

    def get_role(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._roles.get((namespace, name))

    def get_cluster_role(self, name: str) -> dict[str, Any] | None:
        return self._cluster_roles.get(name)


# --------------------------------------------------------------------------- matching


def _verb_matches(rule: Mapping[str, Any], verb: str) -> bool:
    return any(v == "*" or v == verb for v in rule.get("verbs") or ())


def _group_matches(rule: Mapping[str, Any], group: str) -> bool:
    return any(g == "*" or g == group for g in rule.get("apiGroups") or ())


def _resource_matches(rule: Mapping[str, Any], combined: str, subresource: str) -> bool:
    for r in rule.get("resources") or ():
        if r == "*" or r == combined:
            return True
        if subresource and r == "*/" + subresource:
            return True
    return False


def _name_matches(rule: Mapping[str, Any], name: str) -> bool:
    names = rule.get("resourceNames") or ()
    return not names or name in names


def _url_matches(rule: Mapping[str, Any], path: str) -> bool:
    for u in rule.get("nonResourceURLs") or ():
        if u == "*" or u == path:
            return True
        if u.endswith("*") and path.startswith(u.rstrip("*")):
            return True
    return False


def rule_allows(attrs: Attributes, rule: Mapping[str, Any]) -> bool:
    """Whether one PolicyRule dict allows the request (upstream ``RuleAllows``).

    Resource requests match on ``verbs``, ``apiGroups``, ``resources`` (the
    request's ``resource/subresource`` form, ``*`` or ``*/<subresource>``) and
    ``resourceNames`` (empty = any; otherwise the request name must be listed,
    so unnamed requests never match). Non-resource requests match ``verbs`` and
    ``nonResourceURLs``.
    """
    if not _verb_matches(rule, attrs.verb):
        return False
    if not attrs.is_resource_request:
        return _url_matches(rule, attrs.path)
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    return (
        _group_matches(rule, attrs.api_group)
        and _resource_matches(rule, combined, attrs.subresource)
        and _name_matches(rule, attrs.name)
    )


def _subject_applies(user: UserInfo, subject: Mapping[str, Any], namespace: str) -> bool:
    kind = subject.get("kind")
    name = subject.get("name", "")
    if kind == "User":
        return user.name == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        sa_ns = subject.get("namespace") or namespace
        return bool(sa_ns) and user.name == service_account_username(sa_ns, name)
    return False


def applies_to(
    user: UserInfo, subjects: Iterable[Mapping[str, Any]] | None, namespace: str = ""
) -> Mapping[str, Any] | None:
    """The first binding subject that names ``user``, or None.

    ``User`` matches the username, ``Group`` any of the user's groups,
    ``ServiceAccount`` the ``system:serviceaccount:<ns>:<name>`` username where
    ``<ns>`` defaults to the RoleBinding's ``namespace`` when the subject omits
    it (pass ``""`` for ClusterRoleBindings, where it does not default).
    """
    for s in subjects or ():
        if _subject_applies(user, s, namespace):
            return s
    return None


def _describe_subject(s: Mapping[str, Any], binding_ns: str) -> str:
    if s.get("kind") == "ServiceAccount":
        return f'ServiceAccount "{s.get("name", "")}/{s.get("namespace") or binding_ns}"'
    return f'{s.get("kind")} "{s.get("name", "")}"'


def _aggregate_error_text(errs: list[str]) -> str:
    """apimachinery's ``utilerrors.NewAggregate(errs).Error()``: dedupe, bracket if >1."""
    uniq = list(dict.fromkeys(errs))
    return uniq[0] if len(uniq) == 1 else "[" + ", ".join(uniq) + "]"


# --------------------------------------------------------------------------- authorizer


class RBACAuthorizer:
    """Allow/deny from RBAC objects, as kube-apiserver's ``RBAC`` authorizer mode.

    Args:
        policy: where Roles, ClusterRoles and their bindings are read (live;
            every call re-reads, so changes apply immediately).
        privileged_groups: groups allowed everything without consulting RBAC
            (upstream: ``system:masters``).
    """

    def __init__(
        self, policy: PolicySource, *, privileged_groups: Iterable[str] = (SYSTEM_MASTERS,)
    ) -> None:
        self.policy = policy
        self.privileged_groups = tuple(privileged_groups)

    def _role_rules(
        self, role_ref: Mapping[str, Any], binding_ns: str
    ) -> tuple[list[Mapping[str, Any]], str | None]:
        kind = role_ref.get("kind")
        name = role_ref.get("name", "")
        if kind == "Role":
            role = self.policy.get_role(binding_ns, name)
            if role is None:
                return [], f'role.{RBAC_GROUP} "{name}" not found'
        elif kind == "ClusterRole":
            role = self.policy.get_cluster_role(name)
            if role is None:
                return [], f'clusterrole.{RBAC_GROUP} "{name}" not found'
        else:
            return [], f'unsupported role reference kind: "{kind}"'
        return list(role.get("rules") or ()), None

    def _visit(self, user: UserInfo, namespace: str):
        """Yield ``(source description, rule, error)`` in upstream's visiting order."""
        for crb in self.policy.cluster_role_bindings():
            subject = applies_to(user, crb.get("subjects"), "")
            if subject is None:
                continue
            ref = crb.get("roleRef") or {}
            rules, err = self._role_rules(ref, "")
            if err:
                yield None, None, err
                continue
            src = (
                f'ClusterRoleBinding "{_meta(crb).get("name", "")}" of {ref.get("kind")} '
                f'"{ref.get("name", "")}" to {_describe_subject(subject, "")}'
            )
            for rule in rules:
                yield src, rule, None
        if not namespace:
            return
        for rb in self.policy.role_bindings(namespace):
            subject = applies_to(user, rb.get("subjects"), namespace)
            if subject is None:
                continue
            ref = rb.get("roleRef") or {}
            rules, err = self._role_rules(ref, namespace)
            if err:
                yield None, None, err
                continue
            src = (
                f'RoleBinding "{_meta(rb).get("name", "")}/{namespace}" of {ref.get("kind")} '
                f'"{ref.get("name", "")}" to {_describe_subject(subject, namespace)}'
            )
            for rule in rules:
                yield src, rule, None

    def authorize(self, attrs: Attributes) -> tuple[bool, str]:
        """Decide one request.

        Returns:
            ``(allowed, reason)``. Allowed by RBAC: reason is
            ``RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "r" to User "u"``
            (or ``RoleBinding "b/ns" …``); allowed by a privileged group: ``""``.
            Denied: ``""``, or ``RBAC: <resolution errors>`` when matching
            bindings reference missing roles.
        """
        allowed, reason, _rule = self.decide(attrs)
        return allowed, reason

    def decide(self, attrs: Attributes) -> tuple[bool, str, Mapping[str, Any] | None]:
        """:meth:`authorize`, plus the PolicyRule that allowed the request (None when a
        privileged group did, or when it is denied): a rule without ``resourceNames``
        allows the same request on any object name, which callers may cache."""
        if any(g in attrs.user.groups for g in self.privileged_groups):
            return True, "", None
        errors: list[str] = []
        for src, rule, err in self._visit(attrs.user, attrs.namespace):
            if rule is not None and rule_allows(attrs, rule):
                return True, f"RBAC: allowed by {src}", rule
            if err:
                errors.append(err)
        return False, (f"RBAC: {_aggregate_error_text(errors)}" if errors else ""), None

    def check(self, attrs: Attributes) -> None:
        """Raise :class:`Forbidden` unless :meth:`authorize` allows ``attrs``.

        The message is kube-apiserver's, e.g. ``pods is forbidden: User "jane"
        cannot list resource "pods" in API group "" in the namespace
        "default"``; ``deployments.apps "web" is forbidden: …`` with a name;
        ``… at the cluster scope`` without a namespace; ``forbidden: User
        "jane" cannot get path "/healthz"`` for non-resource URLs. A non-empty
        denial reason is appended after ``": "``.
        """
        self.check_rule(attrs)

    def check_rule(self, attrs: Attributes) -> Mapping[str, Any] | None:
        """:meth:`check`, returning the allowing rule as :meth:`decide` does."""
        allowed, reason, rule = self.decide(attrs)
        if allowed:
            return rule
        if attrs.is_resource_request:
            err = Forbidden.rbac(
                attrs.user.name, attrs.verb, attrs.resource, attrs.api_group,
                attrs.namespace or None, attrs.name or None, attrs.subresource or None,
            )
        else:
            err = Forbidden(
                f'forbidden: User "{attrs.user.name}" cannot {attrs.verb} path "{attrs.path}"'
            )
        if reason:
            err = Forbidden(f"{err.message}: {reason}", details=err.details)
        raise err

    def rules_for(self, user: UserInfo, namespace: str = "") -> tuple[list[dict[str, Any]], list[str]]:
        """Every rule granted to ``user`` in ``namespace`` (cluster-wide ones included).

        Returns ``(rules, resolution errors)``, in visiting order, as upstream's
        ``RulesFor`` (the basis of ``kubectl auth can-i --list``). Privileged
        groups are not expanded here.
        """
        rules: list[dict[str, Any]] = []
        errors: list[str] = []
        for _src, rule, err in self._visit(user, namespace):
            if rule is not None:
                rules.append(dict(rule))
            if err:
                errors.append(err)
        return rules, errors


# --------------------------------------------------------------------------- aggregation


def label_selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Whether a ``metav1.LabelSelector`` dict matches ``labels``.

    ``matchLabels`` must all be equal; ``matchExpressions`` support ``In``,
    ``NotIn``, ``Exists`` and ``DoesNotExist``. An empty selector matches
    everything; ``None`` matches nothing (as ``LabelSelectorAsSelector``).

    Raises:
        ValueError: an unknown ``operator``.
    """
    if selector is None:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or ():
        key, op = expr.get("key", ""), expr.get("operator")
        values = expr.get("values") or ()
        if op == "In":
            ok = key in labels and labels[key] in values
        elif op == "NotIn":
            ok = key not in labels or labels[key] not in values
        elif op == "Exists":
            ok = key in labels
        elif op == "DoesNotExist":
            ok = key not in labels
        else:
            raise ValueError(f'"{op}" is not a valid label selector operator')
        if not ok:
            return False
    return True


#: PolicyRule's fields, in the Go struct's (and its apply configuration's) order
RULE_FIELDS = ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs")


def rule_key(rule: Mapping[str, Any]) -> tuple:
    """Semantic identity of a PolicyRule (``equality.Semantic.DeepEqual``: missing and empty
    lists compare equal)."""
    return tuple(tuple(rule.get(f) or ()) for f in RULE_FIELDS)


def aggregated_rules(role: Mapping[str, Any], current: Mapping[str, Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rules upstream's clusterrole-aggregation controller (``syncClusterRole``) gives
    ``role`` from ``current`` (ClusterRoles by name): per selector of its aggregationRule,
    the matching roles in name order (``role`` itself excluded), their rules in order,
    duplicates (by :func:`rule_key`) dropped.

    Raises:
        ValueError: a selector that is not a valid label selector.
    """
    name = _meta(role).get("name", "")
    out: list[Mapping[str, Any]] = []
    seen: set[tuple] = set()
    for selector in (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or ():
        for other_name in sorted(current):
            other = current[other_name]
            if other_name == name:
                continue
            if not label_selector_matches(selector, _meta(other).get("labels") or {}):
                continue
            for rule in other.get("rules") or ():
                key = rule_key(rule)
                if key not in seen:
                    seen.add(key)
                    out.append(rule)
    return out


def aggregate_cluster_roles(roles: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fill the ``rules`` of every ClusterRole with an ``aggregationRule``.

    Mirrors the clusterrole-aggregation controller run to convergence: for each
    ``clusterRoleSelectors`` entry in order, the ClusterRoles whose labels match
    (sorted by name, the role itself excluded) contribute their rules, duplicates
    dropped; the result *replaces* the role's own rules. Aggregated roles that
    feed other aggregated roles (``view`` -> ``edit`` -> ``admin``) are resolved
    transitively.

    Args:
        roles: ClusterRole dicts (not mutated).

    Returns:
        The same roles in the same order; aggregated roles whose rules change are
        new dicts, the others are returned as given.
    """
    current: dict[str, Mapping[str, Any]] = {_meta(r).get("name", ""): r for r in roles}
    aggregated = sorted(n for n, r in current.items() if r.get("aggregationRule") is not None)
    for _ in range(len(aggregated) + 1):
        changed = False
        for name in aggregated:
            role = current[name]
            new_rules = aggregated_rules(role, current)
            if [rule_key(r) for r in new_rules] != [rule_key(r) for r in role.get("rules") or ()]:
                current[name] = {**role, "rules": [dict(r) for r in new_rules]}
                changed = True
        if not changed:
            break
    return [current[_meta(r).get("name", "")] for r in roles]  # type: ignore[misc]


# --------------------------------------------------------------------------- bootstrap policy

_BOOTSTRAP_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
_AUTOUPDATE = {"rbac.authorization.kubernetes.io/autoupdate": "true"}

_RW = ("create", "delete", "deletecollection", "patch", "update")
_READ = ("get", "list", "watch")
_ALL_RW = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


def _r(verbs: Iterable[str], groups: Iterable[str], resources: Iterable[str],
       names: Iterable[str] = ()) -> dict[str, Any]:
    """A resource PolicyRule in wire form, lists sorted as upstream's rule builder does."""
    rule: dict[str, Any] = {
        "verbs": sorted(set(verbs)),
        "apiGroups": sorted(set(groups)),
        "resources": sorted(set(resources)),
    }
    if names:
        rule["resourceNames"] = sorted(set(names))
    return rule


def _urls(verbs: Iterable[str], urls: Iterable[str]) -> dict[str, Any]:
    return {"verbs": sorted(set(verbs)), "nonResourceURLs": sorted(set(urls))}


def _cluster_role(name: str, rules: list[dict[str, Any]] | None, *,
                  labels: Mapping[str, str] | None = None,
                  aggregate_label: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "labels": {**_BOOTSTRAP_LABELS, **(labels or {})},
        "annotations": dict(_AUTOUPDATE),
    }
    role: dict[str, Any] = {
        "apiVersion": RBAC_API_VERSION, "kind": "ClusterRole", "metadata": meta, "rules": rules,
    }
    if aggregate_label:
        role["aggregationRule"] = {
            "clusterRoleSelectors": [{"matchLabels": {aggregate_label: "true"}}]
        }
    return role


def _subject(kind: str, name: str) -> dict[str, Any]:
    return {"kind": kind, "apiGroup": RBAC_GROUP, "name": name}


def _binding(name: str, role: str, subjects: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "ClusterRoleBinding",
        "metadata": {
            "name": name,
            "labels": dict(_BOOTSTRAP_LABELS),
            "annotations": dict(_AUTOUPDATE),
        },
        "subjects": subjects,
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role},
    }


_AGG_ADMIN = f"{RBAC_GROUP}/aggregate-to-admin"
# the signers certificates.k8s.io knows (k8s.io/api/certificates/v1)
_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client"
_KUBELET_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
_KUBELET_SERVING_SIGNER = "kubernetes.io/kubelet-serving"
_LEGACY_SIGNER = "kubernetes.io/legacy-unknown"
_AGG_EDIT = f"{RBAC_GROUP}/aggregate-to-edit"
_AGG_VIEW = f"{RBAC_GROUP}/aggregate-to-view"

def _events_rw() -> dict[str, Any]:
    return _r(("create", "patch", "update"), ("", "events.k8s.io"), ("events",))


def _bootstrap_cluster_roles() -> list[dict[str, Any]]:
    view_rules = [
        _r(_READ, [""], ["configmaps", "endpoints", "persistentvolumeclaims",
                          "persistentvolumeclaims/status", "pods", "replicationcontrollers",
                          "replicationcontrollers/scale", "serviceaccounts", "services",
                          "services/status"]),
        _r(_READ, [""], ["bindings", "events", "limitranges", "namespaces/status", "pods/log",
                          "pods/status", "replicationcontrollers/status", "resourcequotas",
                          "resourcequotas/status"]),
        _r(_READ, [""], ["namespaces"]),
        _r(_READ, ["discovery.k8s.io"], ["endpointslices"]),
        _r(_READ, ["apps"], ["controllerrevisions", "daemonsets", "daemonsets/status",
                              "deployments", "deployments/scale", "deployments/status",
                              "replicasets", "replicasets/scale", "replicasets/status",
                              "statefulsets", "statefulsets/scale", "statefulsets/status"]),
        _r(_READ, ["autoscaling"], ["horizontalpodautoscalers",
                                     "horizontalpodautoscalers/status"]),
        _r(_READ, ["batch"], ["cronjobs", "cronjobs/status", "jobs", "jobs/status"]),
        _r(_READ, ["extensions"], ["daemonsets", "daemonsets/status", "deployments",
                                    "deployments/scale", "deployments/status", "ingresses",
                                    "ingresses/status", "networkpolicies", "replicasets",
                                    "replicasets/scale", "replicasets/status",
                                    "replicationcontrollers/scale"]),
        _r(_READ, ["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
        _r(_READ, ["networking.k8s.io"], ["ingresses", "ingresses/status", "networkpolicies"]),
    ]
    edit_rules = [
        _r(_READ, [""], ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets",
                          "services/proxy"]),
        _r(["impersonate"], [""], ["serviceaccounts"]),
        _r(_RW, [""], ["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"]),
        _r(["create"], [""], ["pods/eviction"]),
        _r(_RW, [""], ["configmaps", "events", "persistentvolumeclaims", "replicationcontrollers",
                        "replicationcontrollers/scale", "secrets", "serviceaccounts", "services",
                        "services/proxy"]),
        _r(["create"], [""], ["serviceaccounts/token"]),
        _r(_RW, ["apps"], ["daemonsets", "deployments", "deployments/rollback",
                            "deployments/scale", "replicasets", "replicasets/scale",
                            "statefulsets", "statefulsets/scale"]),
        _r(_RW, ["autoscaling"], ["horizontalpodautoscalers"]),
        _r(_RW, ["batch"], ["cronjobs", "jobs"]),
        _r(_RW, ["extensions"], ["daemonsets", "deployments", "deployments/rollback",
                                  "deployments/scale", "ingresses", "networkpolicies",
                                  "replicasets", "replicasets/scale",
                                  "replicationcontrollers/scale"]),
        _r(_RW, ["policy"], ["poddisruptionbudgets"]),
        _r(_RW, ["networking.k8s.io"], ["ingresses", "networkpolicies"]),
        _r(_ALL_RW, ["coordination.k8s.io"], ["leases"]),
    ]
    admin_rules = [
        _r(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews"]),
        _r(_ALL_RW, [RBAC_GROUP], ["rolebindings", "roles"]),
    ]
    scheduler_rules = [
        _events_rw(),
        _r(["create"], ["coordination.k8s.io"], ["leases"]),
        _r(["get", "update"], ["coordination.k8s.io"], ["leases"], ["kube-scheduler"]),
        _r(_READ, [""], ["nodes"]),
        _r(("delete", *_READ), [""], ["pods"]),
        _r(["create"], [""], ["bindings", "pods/binding"]),
        _r(["patch", "update"], [""], ["pods/status"]),
        _r(_READ, [""], ["replicationcontrollers", "services"]),
        _r(_READ, ["apps", "extensions"], ["replicasets"]),
        _r(_READ, ["apps"], ["statefulsets"]),
        _r(_READ, ["policy"], ["poddisruptionbudgets"]),
        _r(_READ, [""], ["persistentvolumeclaims", "persistentvolumes"]),
        _r(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
        _r(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
        _r(_READ, ["storage.k8s.io"], ["csinodes"]),
        _r(_READ, [""], ["namespaces"]),
        _r(_READ, ["storage.k8s.io"], ["csidrivers"]),
        _r(_READ, ["storage.k8s.io"], ["csistoragecapacities"]),
    ]
    volume_scheduler_rules = [
        _r(("patch", "update", *_READ), [""], ["persistentvolumes"]),
        _r(_READ, ["storage.k8s.io"], ["storageclasses"]),
        _r(("patch", "update", *_READ), [""], ["persistentvolumeclaims"]),
    ]
    controller_manager_rules = [
        _events_rw(),
        _r(["create"], ["coordination.k8s.io"], ["leases"]),
        _r(["get", "update"], ["coordination.k8s.io"], ["leases"], ["kube-controller-manager"]),
        _r(["create"], [""], ["secrets", "serviceaccounts"]),
        _r(["delete"], [""], ["secrets"]),
        _r(["get"], [""], ["configmaps", "namespaces", "secrets", "serviceaccounts"]),
        _r(["update"], [""], ["secrets", "serviceaccounts"]),
        _r(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
        _r(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
        _r(["list", "watch"], ["*"], ["*"]),
        _r(["create"], [""], ["serviceaccounts/token"]),
    ]
    node_rules = [
        _r(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
        _r(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews",
                                                  "subjectaccessreviews"]),
        _r(_READ, [""], ["services"]),
        _r(("create", *_READ), [""], ["nodes"]),
        _r(["patch", "update"], [""], ["nodes/status"]),
        _r(["patch", "update"], [""], ["nodes"]),
        _r(["create", "patch", "update"], [""], ["events"]),
        _r(_READ, [""], ["pods"]),
        _r(["create", "delete"], [""], ["pods"]),
        _r(["patch", "update"], [""], ["pods/status"]),
        _r(["create"], [""], ["pods/eviction"]),
        _r(_READ, [""], ["configmaps", "secrets"]),
        _r(["get"], [""], ["persistentvolumeclaims", "persistentvolumes"]),
        _r(["get"], [""], ["endpoints"]),
        _r(("create", *_READ), ["certificates.k8s.io"], ["certificatesigningrequests"]),
        _r(["create", "delete", "get", "patch", "update"], ["coordination.k8s.io"], ["leases"]),
        _r(["get"], ["storage.k8s.io"], ["volumeattachments"]),
        _r(["create"], [""], ["serviceaccounts/token"]),
        _r(["get", "patch", "update"], [""], ["persistentvolumeclaims/status"]),
        _r(_READ, ["storage.k8s.io"], ["csidrivers"]),
        _r(["create", "delete", "get", "patch", "update"], ["storage.k8s.io"], ["csinodes"]),
        _r(_READ, ["node.k8s.io"], ["runtimeclasses"]),
    ]
    node_proxier_rules = [
        _r(["list", "watch"], [""], ["endpoints", "services"]),
        _r(_READ, [""], ["nodes"]),
        _events_rw(),
        _r(["list", "watch"], ["discovery.k8s.io"], ["endpointslices"]),
    ]
    return [
        _cluster_role("admin", None, aggregate_label=_AGG_ADMIN),
        _cluster_role("cluster-admin", [_r(["*"], ["*"], ["*"]), _urls(["*"], ["*"])]),
        _cluster_role("edit", None, labels={_AGG_ADMIN: "true"}, aggregate_label=_AGG_EDIT),
        _cluster_role("system:aggregate-to-admin", admin_rules, labels={_AGG_ADMIN: "true"}),
        _cluster_role("system:aggregate-to-edit", edit_rules, labels={_AGG_EDIT: "true"}),
        _cluster_role("system:aggregate-to-view", view_rules, labels={_AGG_VIEW: "true"}),
        _cluster_role("system:basic-user", [
            _r(["create"], ["authorization.k8s.io"], ["selfsubjectaccessreviews",
                                                      "selfsubjectrulesreviews"]),
            _r(["create"], ["authentication.k8s.io"], ["selfsubjectreviews"]),
        ]),
        _cluster_role("system:discovery", [_urls(["get"], [
            "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
            "/openapi/*", "/readyz", "/version", "/version/"])]),
        _cluster_role("system:kube-controller-manager", controller_manager_rules),
        _cluster_role("system:kube-scheduler", scheduler_rules),
        _cluster_role("system:node", node_rules),
        _cluster_role("system:node-proxier", node_proxier_rules),
        _cluster_role("system:public-info-viewer", [_urls(["get"], [
            "/healthz", "/livez", "/readyz", "/version", "/version/"])]),
        _cluster_role("system:volume-scheduler", volume_scheduler_rules),
        _cluster_role("view", None, labels={_AGG_EDIT: "true"}, aggregate_label=_AGG_VIEW),
    ]


def _bootstrap_bindings() -> list[dict[str, Any]]:
    return [
        _binding("cluster-admin", "cluster-admin", [_subject("Group", SYSTEM_MASTERS)]),
        _binding("system:basic-user", "system:basic-user", [_subject("Group", AUTHENTICATED)]),
        _binding("system:discovery", "system:discovery", [_subject("Group", AUTHENTICATED)]),
        _binding("system:kube-controller-manager", "system:kube-controller-manager",
                 [_subject("User", CONTROLLER_MANAGER_USER)]),
        _binding("system:kube-scheduler", "system:kube-scheduler",
                 [_subject("User", SCHEDULER_USER)]),
        # Upstream leaves this binding without subjects (kubelets are authorized by
        # the Node authorizer); the emulator has no Node authorizer, so it grants
        # the role to the system:nodes group, as clusters before v1.8 did.
        _binding("system:node", "system:node", [_subject("Group", NODES_GROUP)]),
        _binding("system:node-proxier", "system:node-proxier",
                 [_subject("User", KUBE_PROXY_USER)]),
        _binding("system:public-info-viewer", "system:public-info-viewer",
                 [_subject("Group", AUTHENTICATED), _subject("Group", UNAUTHENTICATED)]),
        _binding("system:volume-scheduler", "system:volume-scheduler",
                 [_subject("User", SCHEDULER_USER)]),
    ]


def certificate_policy() -> list[dict[str, Any]]:
    """certificates.k8s.io's bootstrap ClusterRoles (sorted by name), then the ClusterRoleBinding
    of ``system:controller:certificate-controller``, as upstream's bootstrap policy has them:
    the ``system:certificates.k8s.io:*`` approver roles (verb ``approve`` on ``signers`` named by
    each ``kubernetes.io/…`` signer; upstream binds none of them), the ``…:nodeclient`` and
    ``…:selfnodeclient`` roles, ``system:controller:certificate-controller`` (bound to the
    ``kube-system/certificate-controller`` service account) and ``system:node-bootstrapper``.

    Not part of :func:`bootstrap_policy` (so not created in a new cluster): each object bootstrapped
    is one more record, and a new cluster's seeded choices after its first command (ClusterIPs,
    UIDs, names, seeded from the log's revision) would all change — the README's quick start shows
    them. Apply them with ``k8semu apply`` (or pass ``bootstrap_policy(certificates=True)``) where
    they are wanted; the approve / sign checks work with any role granting those verbs.
    """
    certs = "certificates.k8s.io"
    certificate_controller_rules = [
        _r(("delete", *_READ), [certs], ["certificatesigningrequests"]),
        _r(["update"], [certs], ["certificatesigningrequests/approval", "certificatesigningrequests/status"]),
        _r(["approve"], [certs], ["signers"], [_KUBELET_CLIENT_SIGNER]),
        _r(["sign"], [certs], ["signers"], [_LEGACY_SIGNER, _CLIENT_SIGNER, _KUBELET_CLIENT_SIGNER,
                                            _KUBELET_SERVING_SIGNER]),
        _r(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
        _events_rw(),
    ]

    def approver(signer: str) -> list[dict[str, Any]]:
        return [_r(["approve"], [certs], ["signers"], [signer])]

    roles = [
        _cluster_role("system:certificates.k8s.io:certificatesigningrequests:nodeclient", [
            _r(["create"], [certs], ["certificatesigningrequests/nodeclient"])]),
        _cluster_role("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", [
            _r(["create"], [certs], ["certificatesigningrequests/selfnodeclient"])]),
        _cluster_role("system:certificates.k8s.io:kube-apiserver-client-approver", approver(_CLIENT_SIGNER)),
        _cluster_role("system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
                      approver(_KUBELET_CLIENT_SIGNER)),
        _cluster_role("system:certificates.k8s.io:kubelet-serving-approver", approver(_KUBELET_SERVING_SIGNER)),
        _cluster_role("system:certificates.k8s.io:legacy-unknown-approver", approver(_LEGACY_SIGNER)),
        _cluster_role("system:controller:certificate-controller", certificate_controller_rules),
        _cluster_role("system:node-bootstrapper", [
            _r(("create", *_READ), [certs], ["certificatesigningrequests"])]),
    ]
    roles.sort(key=lambda r: r["metadata"]["name"])
    return roles + [
        _binding("system:controller:certificate-controller", "system:controller:certificate-controller",
                 [{"kind": "ServiceAccount", "name": "certificate-controller", "namespace": "kube-system"}]),
    ]


def bootstrap_policy(*, aggregated: bool = True, certificates: bool = False) -> list[dict[str, Any]]:
    """The default ClusterRoles then ClusterRoleBindings of a kubeadm v1.3x cluster.

    Roles: ``cluster-admin``, the aggregated ``admin``/``edit``/``view`` and
    their ``system:aggregate-to-*`` parts, ``system:basic-user``,
    ``system:discovery``, ``system:public-info-viewer``,
    ``system:kube-scheduler``, ``system:volume-scheduler``,
    ``system:kube-controller-manager``, ``system:node``, ``system:node-proxier``;
    each with its upstream ClusterRoleBinding. With ``certificates=True`` also
    :func:`certificate_policy`'s (not bootstrapped into new clusters: see there). All carry the label
    ``kubernetes.io/bootstrapping: rbac-defaults`` and the annotation
    ``rbac.authorization.kubernetes.io/autoupdate: "true"``.

    Deviation: ``system:node`` is bound to group ``system:nodes`` (upstream
    binds no subjects and relies on the Node authorizer).

    Args:
        aggregated: when True (default) ``admin``/``edit``/``view`` already hold
            their aggregated rules, as a running cluster shows them; when False
            their ``rules`` are ``None`` as in upstream's bootstrap data.

    Returns:
        New dicts on every call (aggregated roles share rule dicts with their
        parts), ClusterRoles sorted by name then bindings sorted by name.
    """
    roles = _bootstrap_cluster_roles()
    bindings = _bootstrap_bindings()
    if certificates:
        extra = certificate_policy()
        roles = sorted(roles + [o for o in extra if o["kind"] == "ClusterRole"], key=lambda r: r["metadata"]["name"])
        bindings = sorted(bindings + [o for o in extra if o["kind"] == "ClusterRoleBinding"],
                          key=lambda b: b["metadata"]["name"])
    if aggregated:
        roles = aggregate_cluster_roles(roles)
    return roles + bindings
