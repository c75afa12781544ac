"""Authenticated identities and the attributes of one request to authorize.

Design: in process, authentication is trivial (every caller states who it
is), so this module only models *what* an authenticator would have produced
(``k8semu serve`` authenticates bearer tokens: its token table, then service
account JWTs through :mod:`k8semu.api.tokens`),
mirroring ``k8s.io/apiserver/pkg/authentication/user.Info``:

* :class:`UserInfo` - name, groups, uid, extra. Groups already include the
  ``system:authenticated`` / ``system:unauthenticated`` group that upstream's
  authenticator chain appends.
* Constructors for the well-known identities of a kubeadm cluster: the admin
  from ``admin.conf``, the control-plane components (client-certificate users),
  kubelets (``system:node:<name>`` in ``system:nodes``), service accounts
  (``system:serviceaccount:<ns>:<name>``) and the anonymous user.
* :class:`Attributes` - one request as ``authorizer.Attributes`` describes it:
  either a resource request (verb, API group, resource, subresource, namespace,
  name) or a non-resource request (verb and URL path such as ``/healthz``).

Everything is frozen and hashable (``extra`` is excluded from the hash).
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

__all__ = [
    "UserInfo",
    "Attributes",
    "SYSTEM_MASTERS",
    "AUTHENTICATED",
    "UNAUTHENTICATED",
    "NODES_GROUP",
    "SERVICE_ACCOUNTS_GROUP",
    "ANONYMOUS_USER",
    "ADMIN_USER",
    "SCHEDULER_USER",
    "CONTROLLER_MANAGER_USER",
    "KUBE_PROXY_USER",
    "RESOURCE_VERBS",
    "user",
    "admin",
    "scheduler",
    "controller_manager",
    "kube_proxy",
    "node",
    "service_account",
    "anonymous",
    "service_account_username",
    "parse_service_account_username",
    "node_name_of",
]

# Well-known group names (k8s.io/apiserver/pkg/authentication/user).
SYSTEM_MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
NODES_GROUP = "system:nodes"
SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts"

# Well-known user names.
ANONYMOUS_USER = "system:anonymous"
ADMIN_USER = "kubernetes-admin"
SCHEDULER_USER = "system:kube-scheduler"
CONTROLLER_MANAGER_USER = "system:kube-controller-manager"
KUBE_PROXY_USER = "system:kube-proxy"

_SA_PREFIX = "system:serviceaccount:"
_NODE_PREFIX = "system:node:"

#: The verbs kube-apiserver derives for resource requests (RBAC also knows
#: extra verbs such as ``bind``, ``escalate``, ``impersonate``, ``use``, ``approve``).
RESOURCE_VERBS = (
    "get", "list", "watch", "create", "update", "patch", "delete", "deletecollection",
)


@attrs.frozen
class UserInfo:
    """An authenticated (or anonymous) identity, as upstream's ``user.Info``.

    Attributes:
        name: the username (``jane``, ``system:serviceaccount:dev:builder``).
        groups: group names, in the order the authenticator produced them.
        uid: optional unique id (empty for certificate users).
        extra: optional extra attributes (``{key: (values…)}``); not hashed.
    """

    name: str
    groups: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    uid: str = ""
    extra: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict, hash=False)

    def in_group(self, group: str) -> bool:
        """Whether ``group`` is one of this user's groups."""
        return group in self.groups


def user(name: str, *groups: str) -> UserInfo:
    """An ordinary authenticated user: ``groups`` plus ``system:authenticated``.

    Mirrors what an x509 client certificate (CN=name, O=groups) or a token
    authenticator yields after the authenticated-group adder runs.
    """
    gs = tuple(groups)
    if AUTHENTICATED not in gs:
        gs += (AUTHENTICATED,)
    return UserInfo(name, gs)


def admin() -> UserInfo:
    """The ``kubernetes-admin`` user of kubeadm's ``admin.conf`` (group ``system:masters``).

    Note: kubeadm >= 1.29 puts admin.conf in group ``kubeadm:cluster-admins``
    (bound to ``cluster-admin``) and keeps ``system:masters`` for
    ``super-admin.conf``; the emulator uses the classic ``system:masters`` form.
    """
    return user(ADMIN_USER, SYSTEM_MASTERS)


def scheduler() -> UserInfo:
    """``system:kube-scheduler`` (certificate user, no extra groups)."""
    return user(SCHEDULER_USER)


def controller_manager() -> UserInfo:
    """``system:kube-controller-manager`` (certificate user, no extra groups)."""
    return user(CONTROLLER_MANAGER_USER)


def kube_proxy() -> UserInfo:
    """``system:kube-proxy`` (bound to ``system:node-proxier`` by the bootstrap policy)."""
    return user(KUBE_PROXY_USER)


def node(name: str) -> UserInfo:
    """The kubelet of node ``name``: ``system:node:<name>`` in group ``system:nodes``."""
    return user(_NODE_PREFIX + name, NODES_GROUP)


def service_account_username(namespace: str, name: str) -> str:
    """``system:serviceaccount:<namespace>:<name>``."""
    return f"{_SA_PREFIX}{namespace}:{name}"


def parse_service_account_username(username: str) -> tuple[str, str] | None:
    """``system:serviceaccount:dev:builder`` -> ``("dev", "builder")``; None if not an SA name."""
    if not username.startswith(_SA_PREFIX):
        return None
    ns, sep, name = username[len(_SA_PREFIX):].partition(":")
    if not sep or not ns or not name or ":" in name:
        return None
    return ns, name


def service_account(namespace: str, name: str, uid: str = "",
                    extra: Mapping[str, tuple[str, ...]] | None = None) -> UserInfo:
    """A service account's token identity.

    Groups are ``system:serviceaccounts``, ``system:serviceaccounts:<ns>``,
    ``system:authenticated`` (upstream's serviceaccount.UserInfo + authenticated group);
    ``uid`` is the account's; ``extra`` what a bound token adds
    (``authentication.kubernetes.io/credential-id``, ``pod-name``, ``pod-uid``, ``node-name``,
    ``node-uid``: see :mod:`k8semu.api.tokens`).
    """
    return UserInfo(
        service_account_username(namespace, name),
        (SERVICE_ACCOUNTS_GROUP, f"{SERVICE_ACCOUNTS_GROUP}:{namespace}", AUTHENTICATED),
        uid,
        dict(extra or {}),
    )


def anonymous() -> UserInfo:
    """``system:anonymous`` in group ``system:unauthenticated``."""
    return UserInfo(ANONYMOUS_USER, (UNAUTHENTICATED,))


def node_name_of(info: UserInfo) -> str | None:
    """The node name of a kubelet identity (``system:node:n1`` in ``system:nodes``), else None."""
    if info.name.startswith(_NODE_PREFIX) and NODES_GROUP in info.groups:
        return info.name[len(_NODE_PREFIX):] or None
    return None


@attrs.frozen
class Attributes:
    """One request to authorize, as upstream's ``authorizer.AttributesRecord``.

    A *resource request* leaves ``path`` empty and sets ``resource`` (plural,
    ``pods``), ``api_group`` (``""`` for core), optional ``subresource``
    (``log``, ``status``, ``scale``…), ``namespace`` (empty for cluster-scoped
    resources and for requests across all namespaces) and ``name`` (empty for
    list/watch/create/deletecollection).

    A *non-resource request* sets ``path`` (``/healthz``, ``/version``,
    ``/api``) and a lowercase HTTP-method verb (``get``, ``post``…).

    Conventions of upstream's RequestInfo the caller must follow: a request on
    ``/api/v1/namespaces/<ns>`` carries ``namespace=<ns>`` and ``name=<ns>``; a
    watch/list with ``fieldSelector=metadata.name=<n>`` carries ``name=<n>``.

    Attributes:
        user: who is asking.
        verb: ``get list watch create update patch delete deletecollection``
            (or RBAC's special verbs) for resources; HTTP verb for paths.
    """

    user: UserInfo
    verb: str
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""

    @property
    def is_resource_request(self) -> bool:
        """True for API resource requests, False for non-resource URLs (``path`` set)."""
        return not self.path
