"""RBAC authorizer, identities, aggregation and the bootstrap policy."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, strategies as st

from k8semu.api import auth
from k8semu.api.auth import Attributes
from k8semu.api.errors import Forbidden
from k8semu.api.rbac import (
    InMemoryPolicy,
    RBACAuthorizer,
    aggregate_cluster_roles,
    bootstrap_policy,
    rule_allows,
)

RBAC = "rbac.authorization.k8s.io/v1"


def role(name, ns, rules, kind="Role", labels=None):
    meta = {"name": name}
    if kind == "Role":
        meta["namespace"] = ns
    if labels:
        meta["labels"] = labels
    return {"apiVersion": RBAC, "kind": kind, "metadata": meta, "rules": rules}


def binding(name, ns, role_kind, role_name, subjects):
    kind = "RoleBinding" if ns else "ClusterRoleBinding"
    meta = {"name": name, **({"namespace": ns} if ns else {})}
    return {
        "apiVersion": RBAC, "kind": kind, "metadata": meta, "subjects": subjects,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role_name},
    }


def user_subject(name):
    return {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": name}


def group_subject(name):
    return {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": name}


JANE = auth.user("jane")
POD_READER = [{"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]}]


def authz(*objects, bootstrap=False):
    objs = list(objects)
    if bootstrap:
        objs = bootstrap_policy() + objs
    return RBACAuthorizer(InMemoryPolicy(objs))


def req(user, verb, resource="pods", ns="", name="", group="", sub=""):
    return Attributes(user, verb, api_group=group, resource=resource, subresource=sub,
                      namespace=ns, name=name)


# ---------------------------------------------------------------- identities


def test_well_known_identities():
    assert auth.admin() == auth.UserInfo(
        "kubernetes-admin", ("system:masters", "system:authenticated"))
    assert auth.node("n1").name == "system:node:n1"
    assert auth.node("n1").groups == ("system:nodes", "system:authenticated")
    assert auth.node_name_of(auth.node("n1")) == "n1"
    assert auth.node_name_of(JANE) is None
    sa = auth.service_account("dev", "builder")
    assert sa.name == "system:serviceaccount:dev:builder"
    assert sa.groups == ("system:serviceaccounts", "system:serviceaccounts:dev",
                         "system:authenticated")
    assert auth.parse_service_account_username(sa.name) == ("dev", "builder")
    assert auth.parse_service_account_username("system:serviceaccount:dev") is None
    assert auth.anonymous() == auth.UserInfo("system:anonymous", ("system:unauthenticated",))
    assert auth.scheduler().name == "system:kube-scheduler"
    assert auth.controller_manager().name == "system:kube-controller-manager"
    assert auth.kube_proxy().name == "system:kube-proxy"
    hash(sa)  # frozen and hashable


# ---------------------------------------------------------------- namespaced Role


def test_role_binding_grants_only_in_its_namespace():
    a = authz(role("pod-reader", "dev", POD_READER),
              binding("jane-reads", "dev", "Role", "pod-reader", [user_subject("jane")]))
    assert a.authorize(req(JANE, "list", ns="dev")) == (
        True, 'RBAC: allowed by RoleBinding "jane-reads/dev" of Role "pod-reader" to User "jane"')
    assert a.authorize(req(JANE, "list", ns="default")) == (False, "")
    with pytest.raises(Forbidden) as ei:
        a.check(req(JANE, "list", ns="default"))
    err = ei.value
    assert err.message == ('pods is forbidden: User "jane" cannot list resource "pods" '
                           'in API group "" in the namespace "default"')
    assert err.status()["code"] == 403
    assert err.status()["reason"] == "Forbidden"
    # Not allowed to write, and not allowed across all namespaces.
    with pytest.raises(Forbidden) as ei:
        a.check(req(JANE, "delete", ns="dev", name="web-1"))
    assert ei.value.message == ('pods "web-1" is forbidden: User "jane" cannot delete resource '
                                '"pods" in API group "" in the namespace "dev"')
    with pytest.raises(Forbidden) as ei:
        a.check(req(JANE, "list"))
    assert ei.value.message == ('pods is forbidden: User "jane" cannot list resource "pods" '
                                'in API group "" at the cluster scope')


def test_cluster_role_via_role_binding_is_namespaced():
    a = authz(role("pod-reader", "", POD_READER, kind="ClusterRole"),
              binding("jane-reads", "dev", "ClusterRole", "pod-reader", [user_subject("jane")]))
    a.check(req(JANE, "get", ns="dev", name="web-1"))
    assert not a.authorize(req(JANE, "get", ns="prod", name="web-1"))[0]
    assert not a.authorize(req(JANE, "list"))[0]  # all namespaces


def test_cluster_role_binding_grants_everywhere():
    a = authz(role("pod-reader", "", POD_READER, kind="ClusterRole"),
              binding("jane-reads", "", "ClusterRole", "pod-reader", [user_subject("jane")]))
    assert a.authorize(req(JANE, "list")) == (
        True,
        'RBAC: allowed by ClusterRoleBinding "jane-reads" of ClusterRole "pod-reader" '
        'to User "jane"')
    assert a.authorize(req(JANE, "list", ns="anything"))[0]


def test_forbidden_message_names_group_and_subresource():
    a = authz()
    with pytest.raises(Forbidden) as ei:
        a.check(req(JANE, "update", "deployments", "dev", "web", group="apps", sub="scale"))
    assert ei.value.message == (
        'deployments.apps "web" is forbidden: User "jane" cannot update resource '
        '"deployments/scale" in API group "apps" in the namespace "dev"')
    with pytest.raises(Forbidden) as ei:
        a.check(Attributes(JANE, "get", path="/metrics"))
    assert ei.value.message == 'forbidden: User "jane" cannot get path "/metrics"'


def test_missing_role_is_reported_in_denial():
    a = authz(binding("b1", "dev", "Role", "ghost", [user_subject("jane")]),
              binding("b2", "", "ClusterRole", "phantom", [user_subject("jane")]))
    allowed, reason = a.authorize(req(JANE, "list", ns="dev"))
    assert not allowed
    assert reason == ('RBAC: [clusterrole.rbac.authorization.k8s.io "phantom" not found, '
                      'role.rbac.authorization.k8s.io "ghost" not found]')
    with pytest.raises(Forbidden) as ei:
        a.check(req(JANE, "list", ns="prod"))
    assert ei.value.message == (
        'pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the '
        'namespace "prod": RBAC: clusterrole.rbac.authorization.k8s.io "phantom" not found')


# ---------------------------------------------------------------- rule matching


def test_resource_names_restrict_named_requests_only():
    rules = [{"verbs": ["get", "update", "list", "create"], "apiGroups": [""],
              "resources": ["configmaps"], "resourceNames": ["app-config"]}]
    a = authz(role("cfg", "dev", rules),
              binding("cfg", "dev", "Role", "cfg", [user_subject("jane")]))
    assert a.authorize(req(JANE, "get", "configmaps", "dev", "app-config"))[0]
    assert a.authorize(req(JANE, "update", "configmaps", "dev", "app-config"))[0]
    assert not a.authorize(req(JANE, "get", "configmaps", "dev", "other"))[0]
    # list and create carry no name, so a resourceNames rule never matches them.
    assert not a.authorize(req(JANE, "list", "configmaps", "dev"))[0]
    assert not a.authorize(req(JANE, "create", "configmaps", "dev"))[0]


def test_subresource_rules():
    rules = [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods/log"]}]
    a = authz(role("logs", "dev", rules),
              binding("logs", "dev", "Role", "logs", [user_subject("jane")]))
    assert a.authorize(req(JANE, "get", ns="dev", name="web-1", sub="log"))[0]
    assert not a.authorize(req(JANE, "get", ns="dev", name="web-1"))[0]  # pods itself
    assert not a.authorize(req(JANE, "get", ns="dev", name="web-1", sub="exec"))[0]
    # and "pods" does not cover its subresources
    a2 = authz(role("r", "dev", POD_READER),
               binding("r", "dev", "Role", "r", [user_subject("jane")]))
    assert not a2.authorize(req(JANE, "get", ns="dev", name="web-1", sub="log"))[0]


def test_wildcards():
    scale_any = {"verbs": ["update"], "apiGroups": ["*"], "resources": ["*/scale"]}
    assert rule_allows(req(JANE, "update", "deployments", "d", "w", "apps", "scale"), scale_any)
    assert rule_allows(req(JANE, "update", "replicationcontrollers", "d", "w", "", "scale"),
                       scale_any)
    assert not rule_allows(req(JANE, "update", "deployments", "d", "w", "apps"), scale_any)
    assert not rule_allows(req(JANE, "update", "deployments", "d", "w", "apps", "status"),
                           scale_any)
    star = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
    assert rule_allows(req(JANE, "get", "pods", "d", "w", "", "log"), star)
    urls = {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/apis/*"]}
    assert rule_allows(Attributes(JANE, "get", path="/healthz"), urls)
    assert rule_allows(Attributes(JANE, "get", path="/apis/apps/v1"), urls)
    assert not rule_allows(Attributes(JANE, "get", path="/healthz/etcd"), urls)
    assert not rule_allows(Attributes(JANE, "post", path="/healthz"), urls)
    assert not rule_allows(req(JANE, "get", "healthz"), urls)  # URL rules never match resources


@given(verb=st.sampled_from(auth.RESOURCE_VERBS), resource=st.sampled_from(
    ["pods", "secrets", "deployments", "nodes"]), name=st.sampled_from(["", "x"]),
    sub=st.sampled_from(["", "status", "log"]))
def test_rule_without_matching_verb_never_allows(verb, resource, name, sub):
    rule = {"verbs": [v for v in auth.RESOURCE_VERBS if v != verb], "apiGroups": ["*"],
            "resources": ["*"]}
    assert not rule_allows(req(JANE, verb, resource, "ns", name, sub=sub), rule)
    assert rule_allows(req(JANE, verb, resource, "ns", name, sub=sub),
                       {**rule, "verbs": ["*"]})


# ---------------------------------------------------------------- subjects


def test_group_subject():
    a = authz(role("r", "dev", POD_READER),
              binding("r", "dev", "Role", "r", [group_subject("qa")]))
    assert a.authorize(req(auth.user("bob", "qa"), "list", ns="dev")) == (
        True, 'RBAC: allowed by RoleBinding "r/dev" of Role "r" to Group "qa"')
    assert not a.authorize(req(auth.user("bob"), "list", ns="dev"))[0]


def test_service_account_subject_namespace_defaults_to_binding():
    builder = auth.service_account("dev", "builder")
    a = authz(
        role("r", "dev", POD_READER),
        binding("implicit", "dev", "Role", "r", [{"kind": "ServiceAccount", "name": "builder"}]),
        role("r", "prod", POD_READER),
        binding("explicit", "prod", "Role", "r",
                [{"kind": "ServiceAccount", "name": "builder", "namespace": "dev"}]),
    )
    assert a.authorize(req(builder, "list", ns="dev")) == (
        True, 'RBAC: allowed by RoleBinding "implicit/dev" of Role "r" to '
              'ServiceAccount "builder/dev"')
    assert a.authorize(req(builder, "list", ns="prod"))[0]
    other = auth.service_account("prod", "builder")
    assert not a.authorize(req(other, "list", ns="prod"))[0]
    # A ClusterRoleBinding subject without namespace matches nobody.
    a2 = authz(role("r", "", POD_READER, kind="ClusterRole"),
               binding("b", "", "ClusterRole", "r",
                       [{"kind": "ServiceAccount", "name": "builder"}]))
    assert not a2.authorize(req(builder, "list", ns="dev"))[0]


def test_service_account_group_subject():
    a = authz(role("r", "", POD_READER, kind="ClusterRole"),
              binding("b", "", "ClusterRole", "r", [group_subject("system:serviceaccounts:dev")]))
    assert a.authorize(req(auth.service_account("dev", "x"), "list", ns="dev"))[0]
    assert not a.authorize(req(auth.service_account("prod", "x"), "list", ns="dev"))[0]


# ---------------------------------------------------------------- aggregation


def test_aggregation_of_view_includes_custom_cluster_role():
    custom = role("crontab-viewer", "", [
        {"verbs": ["get", "list", "watch"], "apiGroups": ["stable.example.com"],
         "resources": ["crontabs"]}],
        kind="ClusterRole", labels={"rbac.authorization.k8s.io/aggregate-to-view": "true"})
    before = copy.deepcopy(bootstrap_policy(aggregated=False) + [custom])
    objs = bootstrap_policy(aggregated=False) + [custom]
    roles = [o for o in objs if o["kind"] == "ClusterRole"]
    aggregated = {r["metadata"]["name"]: r for r in aggregate_cluster_roles(roles)}
    assert objs == before  # inputs untouched
    crontab_rule = custom["rules"][0]
    for name in ("view", "edit", "admin"):  # view feeds edit, edit feeds admin
        assert crontab_rule in aggregated[name]["rules"]
    # Matching roles contribute in name order: "crontab-viewer" < "system:aggregate-to-view".
    assert aggregated["view"]["rules"][0] == crontab_rule
    a = RBACAuthorizer(InMemoryPolicy(
        list(aggregated.values()) + [binding("v", "dev", "ClusterRole", "view",
                                             [user_subject("jane")])]))
    assert a.authorize(req(JANE, "list", "crontabs", "dev", group="stable.example.com"))[0]


def test_aggregation_order_and_replacement():
    sel = {"clusterRoleSelectors": [{"matchLabels": {"agg": "yes"}}]}
    r_a = {"verbs": ["get"], "apiGroups": [""], "resources": ["a"]}
    r_b = {"verbs": ["get"], "apiGroups": [""], "resources": ["b"]}
    parent = {**role("parent", "", [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                     kind="ClusterRole"), "aggregationRule": sel}
    roles = [parent,
             role("zz", "", [r_a], kind="ClusterRole", labels={"agg": "yes"}),
             role("aa", "", [r_b, r_a], kind="ClusterRole", labels={"agg": "yes"}),
             role("other", "", [r_a], kind="ClusterRole")]
    out = aggregate_cluster_roles(roles)
    # Children sorted by name, duplicates dropped, the parent's own rules replaced.
    assert out[0]["rules"] == [r_b, r_a]
    assert out[1:] == roles[1:]
    assert parent["rules"][0]["verbs"] == ["*"]


# ---------------------------------------------------------------- bootstrap policy


def test_system_masters_allowed_everything():
    a = authz()  # no bindings at all
    admin = auth.admin()
    assert a.authorize(req(admin, "delete", "nodes", name="n1")) == (True, "")
    assert a.authorize(req(admin, "escalate", "clusterroles", group="rbac.authorization.k8s.io"))[0]
    assert a.authorize(Attributes(admin, "get", path="/metrics"))[0]


def test_view_cannot_read_secrets():
    a = authz(binding("v", "dev", "ClusterRole", "view", [user_subject("jane")]), bootstrap=True)
    assert a.authorize(req(JANE, "list", "pods", "dev"))[0]
    assert a.authorize(req(JANE, "get", "pods", "dev", "web-1", sub="log"))[0]
    assert a.authorize(req(JANE, "watch", "deployments", "dev", group="apps"))[0]
    assert not a.authorize(req(JANE, "create", "pods", "dev"))[0]
    with pytest.raises(Forbidden) as ei:
        a.check(req(JANE, "get", "secrets", "dev", "db-password"))
    assert ei.value.message == (
        'secrets "db-password" is forbidden: User "jane" cannot get resource "secrets" in '
        'API group "" in the namespace "dev"')


def test_edit_can_create_deployments_but_not_roles():
    a = authz(binding("e", "dev", "ClusterRole", "edit", [user_subject("jane")]), bootstrap=True)
    assert a.authorize(req(JANE, "create", "deployments", "dev", group="apps"))[0]
    assert a.authorize(req(JANE, "update", "deployments", "dev", "web", "apps", "scale"))[0]
    assert a.authorize(req(JANE, "get", "secrets", "dev", "db"))[0]
    assert not a.authorize(req(JANE, "create", "roles", "dev",
                               group="rbac.authorization.k8s.io"))[0]
    admin_binding = binding("a", "dev", "ClusterRole", "admin", [user_subject("jane")])
    a2 = authz(admin_binding, bootstrap=True)
    assert a2.authorize(req(JANE, "create", "roles", "dev",
                            group="rbac.authorization.k8s.io"))[0]
    assert not a2.authorize(req(JANE, "create", "namespaces"))[0]


def test_bootstrap_component_identities():
    a = authz(bootstrap=True)
    sched = auth.scheduler()
    assert a.authorize(req(sched, "create", "pods", "dev", "web-1", sub="binding"))[0]
    assert a.authorize(req(sched, "list", "nodes"))[0]
    assert a.authorize(req(sched, "update", "leases", "kube-system", "kube-scheduler",
                           "coordination.k8s.io"))[0]
    assert not a.authorize(req(sched, "update", "leases", "kube-system",
                               "kube-controller-manager", "coordination.k8s.io"))[0]
    assert not a.authorize(req(sched, "create", "pods", "dev"))[0]
    kubelet = auth.node("n1")
    assert a.authorize(req(kubelet, "patch", "pods", "dev", "web-1", sub="status"))[0]
    assert a.authorize(req(kubelet, "update", "nodes", name="n1", sub="status"))[0]
    proxy = auth.kube_proxy()
    assert a.authorize(req(proxy, "watch", "endpointslices", group="discovery.k8s.io"))[0]
    assert not a.authorize(req(proxy, "get", "secrets", "dev", "x"))[0]
    kcm = auth.controller_manager()
    assert a.authorize(req(kcm, "list", "replicasets", group="apps"))[0]
    # discovery and public info
    assert a.authorize(Attributes(JANE, "get", path="/apis/apps/v1"))[0]
    assert a.authorize(Attributes(auth.anonymous(), "get", path="/version"))[0]
    assert not a.authorize(Attributes(auth.anonymous(), "get", path="/api"))[0]
    assert not a.authorize(req(JANE, "list", "pods", "default"))[0]


def test_bootstrap_metadata_matches_upstream():
    objs = bootstrap_policy()
    for o in objs:
        assert o["apiVersion"] == "rbac.authorization.k8s.io/v1"
        assert o["metadata"]["labels"]["kubernetes.io/bootstrapping"] == "rbac-defaults"
        assert o["metadata"]["annotations"] == {
            "rbac.authorization.kubernetes.io/autoupdate": "true"}
    by = {(o["kind"], o["metadata"]["name"]): o for o in objs}
    assert by[("ClusterRole", "view")]["aggregationRule"] == {"clusterRoleSelectors": [
        {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}]}
    assert by[("ClusterRole", "view")]["metadata"]["labels"][
        "rbac.authorization.k8s.io/aggregate-to-edit"] == "true"
    assert by[("ClusterRoleBinding", "cluster-admin")]["subjects"] == [
        {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:masters"}]
    assert by[("ClusterRole", "cluster-admin")]["rules"] == [
        {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
        {"verbs": ["*"], "nonResourceURLs": ["*"]}]
    assert bootstrap_policy(aggregated=False)[0]["rules"] is None  # admin before aggregation
    assert bootstrap_policy() == bootstrap_policy()  # deterministic
