"""ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1): the two kinds as kube-apiserver
serves them (defaults, validation, ``kubectl get`` columns) and the admission plugin that enforces
them — what a user sees: the refused write's exact message and status, the ``Warning`` texts, and
``k8semu apply``'s error line as kubectl prints it."""

from __future__ import annotations

import json

from datetime import datetime, timezone

import pytest

from k8semu.api import errors
from k8semu.api.apiserver import RequestContext
from k8semu.api.tables import render_table, table_for
from k8semu.sim.cluster import Cluster

GROUP = "admissionregistration.k8s.io/v1"
NOW = datetime(2025, 1, 1, 0, 10, tzinfo=timezone.utc)


def policy(name="max-replicas", expression="object.spec.replicas <= 5", resources=("deployments",),
           operations=("CREATE", "UPDATE"), **extra):
    validation = {"expression": expression, **extra.pop("validation", {})}
    spec = {"matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                                                    "operations": list(operations),
                                                    "resources": list(resources)}]},
            "validations": [validation], **extra}
    return {"apiVersion": GROUP, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name}, "spec": spec}


def binding(name="max-replicas-binding", policy_name="max-replicas", actions=("Deny",), **extra):
    return {"apiVersion": GROUP, "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name},
            "spec": {"policyName": policy_name, "validationActions": list(actions), **extra}}


def deployment(name="big", replicas=6, namespace="default", labels=None):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, **({"labels": labels} if labels else {})},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


@pytest.fixture
def api():
    return Cluster.create(seed=1).api


def _setup(api, pol=None, bind=None):
    api.create("validatingadmissionpolicies", pol or policy())
    api.create("validatingadmissionpolicybindings", bind or binding())


def test_kinds_are_served_with_upstream_defaults_and_columns(api):
    """Cluster-scoped, no short names, category ``api-extensions``; ``failurePolicy: Fail``,
    ``matchPolicy: Equivalent``, empty selectors and ``scope: "*"`` filled in; ``kubectl get``
    shows VALIDATIONS/PARAMKIND and POLICYNAME/PARAMREF."""
    from k8semu.api import resources

    for plural in ("validatingadmissionpolicies", "validatingadmissionpolicybindings"):
        (info,) = resources.lookup(plural)
        assert (info.api_version, info.namespaced, info.short_names, info.categories) == \
            (GROUP, False, (), ("api-extensions",))
    p = api.create("validatingadmissionpolicies", policy())
    mc = p["spec"]["matchConstraints"]
    assert p["spec"]["failurePolicy"] == "Fail"
    assert (mc["matchPolicy"], mc["namespaceSelector"], mc["objectSelector"], mc["resourceRules"][0]["scope"]) == \
        ("Equivalent", {}, {}, "*")
    b = api.create("validatingadmissionpolicybindings",
                   binding(paramRef={"name": "limits", "namespace": "default", "parameterNotFoundAction": "Deny"}))
    assert "matchResources" not in b["spec"]
    out = render_table(table_for([p], "validatingadmissionpolicies", NOW), kind="validatingadmissionpolicies")
    assert out.splitlines()[0].split() == ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"]
    assert out.splitlines()[1].split()[:3] == ["max-replicas", "1", "<unset>"]
    out = render_table(table_for([b], "validatingadmissionpolicybindings", NOW),
                       kind="validatingadmissionpolicybindings")
    assert out.splitlines()[0].split() == ["NAME", "POLICYNAME", "PARAMREF", "AGE"]
    assert out.splitlines()[1].split()[:3] == ["max-replicas-binding", "max-replicas", "default/limits"]


def test_deny_binding_refuses_a_create_with_upstreams_message_and_status(api):
    _setup(api)
    with pytest.raises(errors.StatusError) as e:
        api.create("deployments", deployment(replicas=6))
    text = ("ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: "
            "failed expression: object.spec.replicas <= 5")
    assert e.value.message == f'deployments.apps "big" is forbidden: {text}'
    status = e.value.status()
    assert (status["code"], status["reason"]) == (422, "Invalid")
    assert status["details"] == {"name": "big", "group": "apps", "kind": "deployments", "causes": [{"message": text}]}
    assert api.create("deployments", deployment(replicas=5))["spec"]["replicas"] == 5


def test_scale_subresource_is_matched_only_when_the_rule_names_it(api):
    """A rule on ``deployments`` does not see ``deployments/scale``; one that lists it does, with
    the autoscaling/v1 Scale as ``object``."""
    _setup(api)
    api.create("deployments", deployment(replicas=2))
    assert api.update_scale("deployments", "big", 8, namespace="default")["spec"]["replicas"] == 8
    api.create("validatingadmissionpolicies",
               policy("scale-limit", "object.spec.replicas <= 9", resources=("deployments/scale",),
                      validation={"message": "at most 9 replicas"}))
    api.create("validatingadmissionpolicybindings", binding("scale-limit", "scale-limit"))
    with pytest.raises(errors.StatusError) as e:
        api.update_scale("deployments", "big", 10, namespace="default")
    assert e.value.message == ('deployments.apps "big" is forbidden: ValidatingAdmissionPolicy \'scale-limit\' '
                               "with binding 'scale-limit' denied request: at most 9 replicas")
    # the controllers' status writes (deployments/status) match neither policy
    assert api.get("deployments", "big", namespace="default")["spec"]["replicas"] == 8


def test_warn_binding_adds_a_warning_and_admits(api):
    _setup(api, bind=binding(actions=("Warn", "Audit")))
    ctx = RequestContext(warnings=[])
    api.create("deployments", deployment(replicas=7), ctx=ctx)
    assert ctx.warnings == ["Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding "
                            "'max-replicas-binding': failed expression: object.spec.replicas <= 5"]


def test_reason_sets_the_status_and_warn_bindings_still_warn_on_a_denial(api):
    """A validation's ``reason: Forbidden`` makes the refusal a 403 Forbidden; a ``Warn`` binding
    of another policy still adds its warning to the refused request."""
    _setup(api, pol=policy(validation={"reason": "Forbidden", "message": "at most 5 replicas"}))
    api.create("validatingadmissionpolicies", policy("labelled", "has(object.metadata.labels)"))
    api.create("validatingadmissionpolicybindings", binding("labelled", "labelled", actions=("Warn",)))
    ctx = RequestContext(warnings=[])
    with pytest.raises(errors.StatusError) as e:
        api.create("deployments", deployment(replicas=6), ctx=ctx)
    assert (e.value.status()["code"], e.value.status()["reason"]) == (403, "Forbidden")
    assert e.value.message.endswith("with binding 'max-replicas-binding' denied request: at most 5 replicas")
    assert ctx.warnings == ["Validation failed for ValidatingAdmissionPolicy 'labelled' with binding 'labelled': "
                            "failed expression: has(object.metadata.labels)"]


def test_object_selector_and_delete_see_old_object(api):
    """``objectSelector`` matches the object's (or the old object's) labels; on DELETE ``object``
    is null and ``oldObject`` the stored object."""
    pol = policy("keep", "oldObject.metadata.name != 'keep'", operations=("DELETE",),
                 validation={"message": "protected"})
    _setup(api, pol, binding("keep", "keep", matchResources={"objectSelector": {"matchLabels": {"protect": "yes"}}}))
    api.create("deployments", deployment("keep", replicas=1, labels={"protect": "yes"}))
    api.create("deployments", deployment("loose", replicas=1))
    with pytest.raises(errors.StatusError) as e:
        api.delete("deployments", "keep", namespace="default")
    assert e.value.message == ('deployments.apps "keep" is forbidden: ValidatingAdmissionPolicy \'keep\' with '
                               "binding 'keep' denied request: protected")
    api.delete("deployments", "loose", namespace="default")


def test_message_expression_wins_over_message_and_sees_request(api):
    _setup(api, pol=policy(validation={
        "message": "too many", "messageExpression":
            "'replicas ' + string(object.spec.replicas) + ' > 5 asked by ' + request.userInfo.username"}))
    with pytest.raises(errors.StatusError) as e:
        api.create("deployments", deployment(replicas=6))
    assert e.value.message.endswith("denied request: replicas 6 > 5 asked by kubernetes-admin")
    cur = api.get("validatingadmissionpolicies", "max-replicas")
    spec = {**cur["spec"], "validations": [{"expression": "object.spec.replicas <= 5", "message": "too many",
                                            "messageExpression": "''"}]}
    api.update("validatingadmissionpolicies", {**cur, "spec": spec})
    with pytest.raises(errors.StatusError) as e:
        api.create("deployments", deployment(replicas=6))
    assert e.value.message.endswith("denied request: too many")


def test_match_conditions_and_variables(api):
    """A false matchCondition skips the policy; ``variables`` are visible to validations."""
    pol = policy(expression="variables.count <= 5", matchConditions=[
        {"name": "not-exempt", "expression": "!has(object.metadata.labels) || "
                                             "!('exempt' in object.metadata.labels)"}],
        variables=[{"name": "count", "expression": "object.spec.replicas"}])
    _setup(api, pol=pol)
    api.create("deployments", deployment("exempt", replicas=9, labels={"exempt": "yes"}))
    with pytest.raises(errors.StatusError) as e:
        api.create("deployments", deployment(replicas=9))
    assert e.value.message.endswith("denied request: failed expression: variables.count <= 5")


def test_namespace_selector_of_the_binding(api):
    api.create("namespaces", {"apiVersion": "v1", "kind": "Namespace",
                              "metadata": {"name": "test", "labels": {"environment": "test"}}})
    _setup(api, bind=binding(matchResources={"namespaceSelector": {"matchLabels": {"environment": "test"}}}))
    api.create("deployments", deployment(replicas=8))  # default: not selected
    with pytest.raises(errors.StatusError) as e:
        api.create("deployments", deployment(replicas=8, namespace="test"))
    assert e.value.message.startswith('deployments.apps "big" is forbidden: ValidatingAdmissionPolicy')


def test_evaluation_error_follows_failure_policy(api):
    _setup(api, pol=policy(expression="object.spec.paused == false"))
    with pytest.raises(errors.StatusError) as e:
        api.create("deployments", deployment(replicas=1))
    assert e.value.message == (
        'deployments.apps "big" is forbidden: ValidatingAdmissionPolicy \'max-replicas\' with binding '
        "'max-replicas-binding' denied request: expression 'object.spec.paused == false' resulted in error: "
        "no such key: paused")
    cur = api.get("validatingadmissionpolicies", "max-replicas")
    api.update("validatingadmissionpolicies", {**cur, "spec": {**cur["spec"], "failurePolicy": "Ignore"}})
    assert api.create("deployments", deployment(replicas=1))["metadata"]["name"] == "big"


def test_params_from_a_configmap_named_by_the_binding(api):
    """``paramKind: v1 ConfigMap`` and a binding's ``paramRef``: ``params`` is the ConfigMap; with
    none found, ``parameterNotFoundAction: Deny`` refuses the request, ``Allow`` admits it."""
    pol = policy("max-from-params", "object.spec.replicas <= int(params.data.maxReplicas)",
                 paramKind={"apiVersion": "v1", "kind": "ConfigMap"})
    ref = {"name": "limits", "namespace": "default", "parameterNotFoundAction": "Deny"}
    _setup(api, pol, binding("max-from-params", "max-from-params", paramRef=ref))
    with pytest.raises(errors.StatusError) as e:
        api.create("deployments", deployment(replicas=1))
    assert e.value.message == (
        'deployments.apps "big" is forbidden: ValidatingAdmissionPolicy \'max-from-params\' with binding '
        "'max-from-params' denied request: failed to configure binding: no params found for policy binding "
        "with `Deny` parameterNotFoundAction")
    api.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "limits"},
                              "data": {"maxReplicas": "3"}}, namespace="default")
    with pytest.raises(errors.StatusError) as e:
        api.create("deployments", deployment(replicas=4))
    assert e.value.message.endswith(
        "denied request: failed expression: object.spec.replicas <= int(params.data.maxReplicas)")
    assert api.create("deployments", deployment(replicas=3))["spec"]["replicas"] == 3
    cur = api.get("validatingadmissionpolicybindings", "max-from-params")
    other = {**ref, "name": "absent", "parameterNotFoundAction": "Allow"}
    api.update("validatingadmissionpolicybindings", {**cur, "spec": {**cur["spec"], "paramRef": other}})
    assert api.create("deployments", deployment("other", replicas=9))["spec"]["replicas"] == 9


def test_policy_that_does_not_compile_is_refused(api):
    with pytest.raises(errors.Invalid) as e:
        api.create("validatingadmissionpolicies", policy("bad", "object.spec.replicas <= "))
    assert e.value.message.startswith(
        'ValidatingAdmissionPolicy.admissionregistration.k8s.io "bad" is invalid: spec.validations[0].expression: '
        'Invalid value: "object.spec.replicas <= ": compilation failed: ERROR: <input>:1:25: Syntax error:')
    with pytest.raises(errors.Invalid) as e:
        api.create("validatingadmissionpolicies", policy("bad", "objekt.spec.replicas <= 5"))
    assert e.value.message == (
        'ValidatingAdmissionPolicy.admissionregistration.k8s.io "bad" is invalid: spec.validations[0].expression: '
        'Invalid value: "objekt.spec.replicas <= 5": compilation failed: ERROR: <input>:1:1: undeclared reference '
        "to 'objekt' (in container '')\n | objekt.spec.replicas <= 5\n | ^")
    with pytest.raises(errors.Invalid) as e:
        api.create("validatingadmissionpolicies", {**policy("empty"), "spec": {}})
    assert e.value.message == (
        'ValidatingAdmissionPolicy.admissionregistration.k8s.io "empty" is invalid: [spec.matchConstraints: '
        "Required value, spec.validations: Required value: validations or auditAnnotations must contain at "
        "least one item]")


def test_binding_validation(api):
    with pytest.raises(errors.Invalid) as e:
        api.create("validatingadmissionpolicybindings", binding(actions=()))
    assert e.value.message == (
        'ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io "max-replicas-binding" is invalid: '
        "spec.validationActions: Required value: at least one validation action is required")
    with pytest.raises(errors.Invalid) as e:
        api.create("validatingadmissionpolicybindings", binding(actions=("Deny", "Warn")))
    assert "must not contain both Deny and Warn" in e.value.message


POLICY_YAML = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: max-replicas
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  validations:
  - expression: "object.spec.replicas <= 5"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: max-replicas-binding
spec:
  policyName: max-replicas
  validationActions: [Deny]
"""


def test_cli_apply_prints_the_denial_as_kubectl(k, tmp_path):
    (tmp_path / "policy.yaml").write_text(POLICY_YAML)
    rc, out, err = k("apply", "-f", str(tmp_path / "policy.yaml"), "-q")
    assert rc == 0, err
    f = tmp_path / "f.yaml"
    f.write_text(json.dumps(deployment("big", replicas=6)))  # JSON is YAML
    rc, out, err = k("apply", "-f", str(f))
    assert rc == 1
    # kubectl prints a 422 with causes as ``The <kind> "<name>" is invalid: <field>: <message>``; the
    # policy's cause has no field (as in upstream's documentation of this very example)
    assert err == ['The deployments "big" is invalid: : ValidatingAdmissionPolicy \'max-replicas\' with binding '
                   "'max-replicas-binding' denied request: failed expression: object.spec.replicas <= 5"]
    rc, out, err = k("get", "validatingadmissionpolicies")
    assert out[0].split() == ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"]
    # the lab's Deployment (2 replicas) keeps being reconciled under the policy
    rc, out, err = k("scale", "deployment", "web", "--replicas=3")
    assert rc == 0, err
    assert k.objects("deployments")[-1]["status"].get("readyReplicas") == 3


def test_cli_apply_prints_a_warn_bindings_warning_as_kubectl(k, tmp_path):
    (tmp_path / "policy.yaml").write_text(POLICY_YAML.replace("validationActions: [Deny]", "validationActions: [Warn]"))
    assert k("apply", "-f", str(tmp_path / "policy.yaml"), "-q")[0] == 0
    f = tmp_path / "f.yaml"
    f.write_text(json.dumps(deployment("big", replicas=6)))
    rc, out, err = k("apply", "-f", str(f), "-q")
    assert (rc, out) == (0, ["deployment.apps/big created"])
    assert err == ["Warning: Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding "
                   "'max-replicas-binding': failed expression: object.spec.replicas <= 5"]
