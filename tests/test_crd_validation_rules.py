"""CRD validation rules (``x-kubernetes-validations``, CEL) as a user sees them: the API server's
``Invalid`` errors for custom objects on create, update and status update, the CRD's own
validation of its rules, and once through ``k8semu apply``.

Expected texts are upstream's (kube-apiserver v1.3x): the node's field path (``<nil>`` at the
root, ``[key]`` for map entries), the schema type as the value (``Invalid value: "object"``),
``message`` / ``messageExpression`` / ``failed rule: <rule>``, ``reason``; on the CRD,
``…x-kubernetes-validations[i].rule: Invalid value: apiextensions.ValidationRule{…}: compilation
failed: ERROR: <input>:L:C: …`` with cel-go's excerpt and caret.
"""

from __future__ import annotations

import copy

import orjson
import pytest
from ruamel.yaml import YAML

from k8semu.api import celrules, errors
from k8semu.api.apiserver import APIServer, RequestContext
from k8semu.cli.main import main
from k8semu.sim.cluster import Cluster
from k8semu.store import EventLog

WIDGET_CRD = YAML(typ="safe").load("""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.org}
spec:
  group: example.org
  scope: Namespaced
  names: {plural: widgets, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-validations:
        - {rule: "self.metadata.name.size() <= 10", message: name is too long}
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: self.minReplicas <= self.maxReplicas
              messageExpression: "'minReplicas (' + string(self.minReplicas) + ') must not exceed maxReplicas (' + string(self.maxReplicas) + ')'"
            - {rule: "!has(self.mode) || self.mode != 'legacy'", reason: FieldValueForbidden, fieldPath: .mode,
               message: legacy mode was removed}
            properties:
              minReplicas: {type: integer, default: 1}
              maxReplicas: {type: integer, default: 1}
              mode: {type: string}
              class:
                type: string
                x-kubernetes-validations:
                - {rule: self == oldSelf, message: Value is immutable}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
                    protocol: {type: string}
                  x-kubernetes-validations:
                  - {rule: "self.port >= 1 && self.port <= 65535", message: port must be between 1 and 65535}
                  - {rule: "!has(oldSelf.protocol) || self.protocol == oldSelf.protocol", message: protocol is immutable}
              labels:
                type: object
                additionalProperties:
                  type: string
                  x-kubernetes-validations:
                  - rule: self.size() <= 8
              surge:
                x-kubernetes-int-or-string: true
                x-kubernetes-validations:
                - rule: "type(self) == int ? self >= 0 : self.matches('^[0-9]+%$')"
          status:
            type: object
            properties:
              phase:
                type: string
                x-kubernetes-validations:
                - rule: self in ['Pending', 'Ready']
""")


def widget(name: str = "w1", **spec) -> dict:
    return {"apiVersion": "example.org/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


@pytest.fixture
def api():
    s = APIServer(EventLog(), authorize=False)
    s.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    s.create("customresourcedefinitions", copy.deepcopy(WIDGET_CRD))
    return s


def invalid(fn, *args, **kwargs) -> str:
    with pytest.raises(errors.Invalid) as e:
        fn(*args, **kwargs)
    return e.value.message


def _fresh(api, name: str = "w1") -> dict:
    return copy.deepcopy(api.get("widgets", name, namespace="default"))


# ---------------------------------------------------------------------------- custom objects
def test_failing_rules_give_upstreams_field_errors_on_create(api):
    bad = widget("widget-number-two", minReplicas=3, maxReplicas=2, mode="legacy",
                 ports=[{"name": "http", "port": 80}, {"name": "admin", "port": 0}],
                 labels={"team": "platform-engineering"}, surge="half")
    assert invalid(api.create, "widgets", bad, namespace="default") == (
        'Widget.example.org "widget-number-two" is invalid: ['
        '<nil>: Invalid value: "object": name is too long, '
        'spec: Invalid value: "object": minReplicas (3) must not exceed maxReplicas (2), '
        'spec.mode: Forbidden: legacy mode was removed, '
        'spec.ports[1]: Invalid value: "object": port must be between 1 and 65535, '
        'spec.labels[team]: Invalid value: "string": failed rule: self.size() <= 8, '
        'spec.surge: Invalid value: "": failed rule: type(self) == int ? self >= 0 : self.matches(\'^[0-9]+%$\')]')
    ok = api.create("widgets", widget(minReplicas=1, maxReplicas=3, surge="25%", labels={"team": "web"},
                                      ports=[{"name": "http", "port": 8080}]), namespace="default")
    assert ok["spec"]["surge"] == "25%"


def test_message_expression_builds_the_message(api):
    with pytest.raises(errors.Invalid) as e:
        api.create("widgets", widget(minReplicas=5), namespace="default")
    details = e.value.status()["details"]
    assert e.value.message == ('Widget.example.org "w1" is invalid: spec: Invalid value: "object": '
                               'minReplicas (5) must not exceed maxReplicas (1)')
    assert details["causes"] == [{"reason": "FieldValueInvalid", "field": "spec",
                                  "message": 'Invalid value: "object": minReplicas (5) must not exceed maxReplicas (1)'}]


def test_a_rule_on_list_items_names_the_item(api):
    bad = widget(ports=[{"name": "http", "port": 80}, {"name": "metrics", "port": 70000}])
    assert invalid(api.create, "widgets", bad, namespace="default") == (
        'Widget.example.org "w1" is invalid: spec.ports[1]: Invalid value: "object": '
        'port must be between 1 and 65535')


def test_transition_rule_keeps_a_field_immutable(api):
    api.create("widgets", widget(**{"class": "gold"}), namespace="default")
    cur = _fresh(api)
    cur["spec"]["class"] = "silver"
    assert invalid(api.update, "widgets", cur, namespace="default") == (
        'Widget.example.org "w1" is invalid: spec.class: Invalid value: "string": Value is immutable')
    cur["spec"]["class"] = "gold"
    cur["spec"]["maxReplicas"] = 4
    assert api.update("widgets", cur, namespace="default")["spec"]["maxReplicas"] == 4


def test_transition_rules_need_an_old_value_at_the_same_place(api):
    # create never runs them; an update that sets the field for the first time neither
    api.create("widgets", widget(ports=[{"name": "http", "port": 80}]), namespace="default")
    cur = _fresh(api)
    cur["spec"]["class"] = "bronze"
    cur["spec"]["ports"] = [{"name": "dns", "port": 53, "protocol": "UDP"}, {"name": "http", "port": 80}]
    api.update("widgets", cur, namespace="default")
    # map-list items correlate by their keys, wherever they move in the list
    cur = _fresh(api)
    cur["spec"]["ports"] = [{"name": "http", "port": 80}, {"name": "dns", "port": 53, "protocol": "TCP"}]
    assert invalid(api.update, "widgets", cur, namespace="default") == (
        'Widget.example.org "w1" is invalid: spec.ports[1]: Invalid value: "object": protocol is immutable')


def test_status_updates_run_the_status_rules(api):
    api.create("widgets", widget(), namespace="default")
    cur = _fresh(api)
    cur["status"] = {"phase": "Exploded"}
    assert invalid(api.update, "widgets", cur, namespace="default", subresource="status") == (
        'Widget.example.org "w1" is invalid: status.phase: Invalid value: "string": '
        "failed rule: self in ['Pending', 'Ready']")
    cur["status"] = {"phase": "Ready"}
    assert api.update("widgets", cur, namespace="default", subresource="status")["status"] == {"phase": "Ready"}


def test_schema_errors_that_block_the_rules(api):
    assert invalid(api.create, "widgets", widget(minReplicas="three", maxReplicas=0), namespace="default") == (
        'Widget.example.org "w1" is invalid: [spec.minReplicas: Invalid value: "string": spec.minReplicas in body '
        'must be of type integer: "string", <nil>: Invalid value: "null": some validation rules were not checked '
        'because the object was invalid; correct the existing errors to complete validation]')


def test_reasons_and_field_paths():
    schema = {"type": "object", "properties": {"spec": {
        "type": "object",
        "properties": {"a": {"type": "string"}, "m": {"type": "object", "additionalProperties": {"type": "string"}}},
        "x-kubernetes-validations": [
            {"rule": "has(self.a)", "reason": "FieldValueRequired", "fieldPath": ".a", "message": "a is required"},
            {"rule": "false", "reason": "FieldValueDuplicate", "message": "ignored for duplicates"},
            {"rule": "'x' in self.m", "fieldPath": ".m['x']"},
            {"rule": "self.m.y == 'z'", "message": "  y must be z  "},
        ]}}}
    obj = {"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "k"}, "spec": {"m": {}}}
    assert [e.text() for e in celrules.validate_rules(schema, obj, None)] == [
        "spec.a: Required value: a is required",
        'spec: Duplicate value: "object"',
        "spec.m[x]: Invalid value: \"object\": failed rule: 'x' in self.m",
        'spec: Invalid value: "object": no such key: y evaluating rule: y must be z',
    ]


def test_unchanged_invalid_values_are_ratcheted():
    # an object stored before a rule existed can still be updated as long as the failing value
    # is unchanged (CRDValidationRatcheting): upstream turns the failure into a warning
    api = APIServer(EventLog(), authorize=False)
    api.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    crd = copy.deepcopy(WIDGET_CRD)
    labels = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["labels"]
    rules = labels["additionalProperties"].pop("x-kubernetes-validations")
    api.create("crd", copy.deepcopy(crd))
    api.create("widgets", widget(labels={"team": "platform-engineering"}), namespace="default")
    crd = copy.deepcopy(api.get("crd", "widgets.example.org"))
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["labels"][
        "additionalProperties"]["x-kubernetes-validations"] = rules
    api.update("crd", crd)
    old = _fresh(api)
    cur = copy.deepcopy(old)
    cur["spec"]["maxReplicas"] = 3
    ctx = RequestContext(warnings=[])
    assert api.update("widgets", cur, namespace="default", ctx=ctx)["spec"]["maxReplicas"] == 3
    # the request goes through, and kubectl prints the ratcheted failure as a Warning
    assert ctx.warnings == ['spec.labels[team]: Invalid value: "string": failed rule: self.size() <= 8']
    cur = _fresh(api)
    cur["spec"]["labels"]["team"] = "infrastructure"
    assert invalid(api.update, "widgets", cur, namespace="default") == (
        'Widget.example.org "w1" is invalid: spec.labels[team]: Invalid value: "string": '
        "failed rule: self.size() <= 8")
    schema = api.resource("widgets").schema
    warnings: list[str] = []
    new = {**old, "spec": {**old["spec"], "maxReplicas": 3}}
    assert celrules.validate_rules(schema, new, old, warnings=warnings) == []
    assert warnings == ['spec.labels[team]: Invalid value: "string": failed rule: self.size() <= 8']
    assert [e.text() for e in celrules.validate_rules(schema, new, None)] == warnings  # nothing ratchets on create


def test_optional_old_self_runs_on_create_too():
    schema = {"type": "object", "properties": {"spec": {
        "type": "object", "properties": {"n": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "oldSelf.hasValue() ? self.n >= oldSelf.value().n : self.n < 10",
                                      "optionalOldSelf": True, "message": "n too big or decreasing"}]}}}

    def run(n, old_n=None):
        obj = {"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "k"}, "spec": {"n": n}}
        old = None if old_n is None else {**obj, "spec": {"n": old_n}}
        return [e.text() for e in celrules.validate_rules(schema, obj, old)]

    assert run(3) == []
    assert run(12) == ['spec: Invalid value: "object": n too big or decreasing']
    assert run(12, old_n=11) == []
    assert run(10, old_n=11) == ['spec: Invalid value: "object": n too big or decreasing']


LIBRARY_RULES = [
    "has(self.name) && !has(self.missing)", "size(self.name) == 5 && self.name.size() == 5",
    "self.name.startsWith('Al') && self.name.endsWith('ce') && self.name.contains('lic')",
    "self.name.matches('^[A-Z][a-z]+$')", "self.name.lowerAscii() == 'alice' && self.name.upperAscii() == 'ALICE'",
    "self.tags.all(t, t.size() > 1) && self.tags.exists(t, t == 'db') && self.tags.exists_one(t, t == 'web')",
    "self.tags.map(t, t + '!')[0] == 'web!' && self.tags.filter(t, t != 'db') == ['web', 'api']",
    "['a', 'b', 'c'].isSorted() && !self.tags.isSorted()", "self.counts.sum() == 6 && self.counts.max() == 3",
    "self.limits.all(k, self.limits[k] > 0) && 'cpu' in self.limits", "self.name.split('l') == ['A', 'ice']",
    "self.name.substring(1, 3) == 'li' && self.name.indexOf('i') == 2 && self.name.charAt(0) == 'A'",
    "' x '.trim() == 'x' && self.name.replace('A', 'a') == 'alice' && self.tags.join(',') == 'web,db,api'",
    "quantity(self.memory).isGreaterThan(quantity('1Gi')) && quantity('500m').compareTo(quantity('0.5')) == 0",
    "self.x__dash__y == 1 && self.__namespace__ == 'prod'", "self.ratio > 0.5 && self.ratio < 1",
    "self.createdAt < timestamp('2030-01-01T00:00:00Z') && self.timeout > duration('1m')",
    "self.counts[2] == 3 && self.name in ['Alice', 'Bob']", "self.name.find('l[a-z]+') == 'lice'",
]


def test_kubernetes_cel_libraries_and_value_types():
    props = {"name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}},
             "counts": {"type": "array", "items": {"type": "integer"}}, "memory": {"type": "string"},
             "limits": {"type": "object", "additionalProperties": {"type": "integer"}},
             "x-y": {"type": "integer"}, "namespace": {"type": "string"}, "ratio": {"type": "number"},
             "createdAt": {"type": "string", "format": "date-time"}, "timeout": {"type": "string", "format": "duration"},
             "missing": {"type": "string"}}
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": props,
                                                         "x-kubernetes-validations": [{"rule": r} for r in LIBRARY_RULES]}}}
    spec = {"name": "Alice", "tags": ["web", "db", "api"], "counts": [1, 2, 3], "memory": "2Gi", "limits": {"cpu": 2},
            "x-y": 1, "namespace": "prod", "ratio": 0.75, "createdAt": "2024-05-01T10:00:00Z", "timeout": "90s",
            "missing": None}
    obj = {"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "k"}, "spec": spec}
    assert [e.text() for e in celrules.validate_rules(schema, obj, None)] == []


def test_evaluation_errors_are_reported_as_upstream():
    rules = ["self.items[3] == 'x'", "self.n / self.zero == 1", "has(self.obj.inner)", "self.n > 'a' || true",
             "dyn(self.n) + 'a' == 'b'", "self.obj.inner == 'x'"]
    schema = {"type": "object", "properties": {"spec": {
        "type": "object", "x-kubernetes-validations": [{"rule": r} for r in rules],
        "properties": {"items": {"type": "array", "items": {"type": "string"}}, "n": {"type": "integer"},
                       "zero": {"type": "integer"},
                       "obj": {"type": "object", "properties": {"inner": {"type": "string"}}}}}}}
    obj = {"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "k"},
           "spec": {"items": ["a"], "n": 1, "zero": 0, "obj": {}}}
    texts = [e.text() for e in celrules.validate_rules(schema, obj, None)]
    assert texts == [
        'spec: Invalid value: "object": index out of bounds: 3 evaluating rule: self.items[3] == \'x\'',
        'spec: Invalid value: "object": division by zero evaluating rule: self.n / self.zero == 1',
        'spec: Invalid value: "object": failed rule: has(self.obj.inner)',
        'spec: Invalid value: "object": rule compile error: compilation failed: ERROR: <input>:1:8: '
        "found no matching overload for '_>_' applied to '(int, string)'\n | self.n > 'a' || true\n | .......^",
        "spec: Invalid value: \"object\": 'no such overload': call arguments did not match a supported operator, "
        "function or macro signature for rule: dyn(self.n) + 'a' == 'b'",
        'spec: Invalid value: "object": no such key: inner evaluating rule: self.obj.inner == \'x\'',
    ]


def test_rules_using_unimplemented_libraries_are_accepted_and_not_evaluated():
    schema = {"type": "object", "properties": {"spec": {
        "type": "object", "properties": {"addr": {"type": "string"}},
        "x-kubernetes-validations": [{"rule": "isIP(self.addr) && ip(self.addr).family() == 4"},
                                     {"rule": "self.?addr.orValue('') != ''"}]}}}
    crd = copy.deepcopy(WIDGET_CRD)
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = schema
    assert celrules.crd_rule_errors(crd) == []
    obj = {"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "k"}, "spec": {"addr": "not an ip"}}
    assert celrules.validate_rules(schema, obj, None) == []


def test_property_names_are_escaped_as_upstream():
    assert [celrules.escape(n) for n in ("foo", "x-y", "a.b", "k8s.io/name", "a__b", "namespace", "1st", "a b")] == [
        "foo", "x__dash__y", "a__dot__b", "k8s__dot__io__slash__name", "a__underscores__b", "__namespace__",
        None, None]


# ---------------------------------------------------------------------------- the CRD
def _crd_with_spec_rules(*rules, versions: int = 1, differ: bool = False) -> dict:
    crd = copy.deepcopy(WIDGET_CRD)
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["x-kubernetes-validations"] = list(rules)
    first = crd["spec"]["versions"][0]
    crd["spec"]["versions"] = [first]
    for n in range(2, versions + 1):
        v = copy.deepcopy(first)
        v.update(name=f"v{n}", storage=False)
        if differ:
            v["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["extra"] = {"type": "string"}
        crd["spec"]["versions"].append(v)
    return crd


def test_a_crd_whose_rule_does_not_compile_is_refused():
    api = APIServer(EventLog(), authorize=False)
    crd = _crd_with_spec_rules({"rule": "self.minReplicas <="}, {"rule": "self.maxReplica > 0", "message": "m"})
    assert invalid(api.create, "crd", crd) == (
        'CustomResourceDefinition.apiextensions.k8s.io "widgets.example.org" is invalid: ['
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: "
        'apiextensions.ValidationRule{Rule:"self.minReplicas <=", Message:"", MessageExpression:"", '
        'Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}: '
        "compilation failed: ERROR: <input>:1:20: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', "
        "'.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n"
        " | self.minReplicas <=\n"
        " | ...................^, "
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].rule: Invalid value: "
        'apiextensions.ValidationRule{Rule:"self.maxReplica > 0", Message:"m", MessageExpression:"", '
        'Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}: '
        "compilation failed: ERROR: <input>:1:5: undefined field 'maxReplica'\n"
        " | self.maxReplica > 0\n"
        " | ....^]")
    assert api.list("crd")["items"] == []


def test_crd_rule_paths_follow_upstreams_hoisting_of_identical_schemas():
    bad = {"rule": "has(self.replicas)"}
    same = celrules.crd_rule_errors(_crd_with_spec_rules(bad, versions=2))
    assert [e.field for e in same] == [
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"]
    assert same[0].detail == ("compilation failed: ERROR: <input>:1:4: undefined field 'replicas'\n"
                              " | has(self.replicas)\n | ...^")
    differ = celrules.crd_rule_errors(_crd_with_spec_rules(bad, versions=2, differ=True))
    assert [e.field for e in differ] == [
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule",
        "spec.versions[1].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"]


def test_crd_rule_shape_checks():
    crd = _crd_with_spec_rules({"rule": " "}, {"rule": "true", "reason": "FieldValueWrong"},
                               {"rule": "true", "message": "a\nb"}, {"rule": "true", "fieldPath": ".nope"})
    assert [e.text() for e in celrules.crd_rule_errors(crd)] == [
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Required value: "
        "rule is not specified",
        'spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].reason: Unsupported value: '
        '"FieldValueWrong": supported values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", '
        '"FieldValueRequired"',
        'spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[2].message: Invalid value: '
        '"a\nb": message must not contain line breaks',
        'spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[3].fieldPath: Invalid value: '
        '".nope": fieldPath must be a valid path: does not refer to a valid field',
    ]
    crd = _crd_with_spec_rules({"rule": "true", "messageExpression": "self.minReplicas"},
                               {"rule": "self.minReplicas", "optionalOldSelf": False})
    texts = [e.text() for e in celrules.crd_rule_errors(crd)]
    assert texts[0].endswith(": messageExpression must evaluate to a string")
    assert texts[0].startswith("spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0]"
                               ".messageExpression: Invalid value: apiextensions.ValidationRule{")
    assert texts[1].endswith(": cel expression must evaluate to a bool")


def test_old_self_is_refused_where_old_and_new_cannot_be_correlated():
    crd = copy.deepcopy(WIDGET_CRD)
    tags = {"type": "array", "items": {"type": "string",
                                       "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["tags"] = tags
    assert [e.text() for e in celrules.crd_rule_errors(crd)] == [
        "spec.validation.openAPIV3Schema.properties[spec].properties[tags].items.x-kubernetes-validations[0].rule: "
        'Invalid value: "self == oldSelf": oldSelf cannot be used on the uncorrelatable portion of the schema '
        "within spec.validation.openAPIV3Schema.properties[spec].properties[tags]"]


# ---------------------------------------------------------------------------- the k8semu CLI
def test_cli_apply_prints_the_rule_failure_as_kubectl(tmp_path, capsys):
    path = tmp_path / "cluster.log"
    Cluster.create(path).close()

    def k8semu(*args: str) -> tuple[int, list[str], list[str]]:
        capsys.readouterr()
        try:
            rc = main(["--cluster", str(path), *args])
        except SystemExit as e:  # argparse
            rc = e.code
        out, err = capsys.readouterr()
        return rc, out.splitlines(), err.splitlines()

    crd_file = tmp_path / "crd.yaml"
    crd_file.write_text(orjson.dumps(WIDGET_CRD).decode() + "\n")
    rc, out, _ = k8semu("apply", "-f", str(crd_file), "--for", "0s", "-q")
    assert (rc, out) == (0, ["customresourcedefinition.apiextensions.k8s.io/widgets.example.org created"])
    bad = tmp_path / "bad.yaml"
    bad.write_text(orjson.dumps(widget(minReplicas=4, maxReplicas=2)).decode() + "\n")
    rc, out, err = k8semu("apply", "-f", str(bad), "--for", "0s", "-q")
    assert rc == 1
    assert err == ['The Widget "w1" is invalid: spec: Invalid value: "object": '
                   "minReplicas (4) must not exceed maxReplicas (2)"]


def test_optional_old_self_fields_are_optionals_at_compile_time():
    # with optionalOldSelf, oldSelf is optional_type(T) and oldSelf.replicas optional_type(int):
    # comparing it with an int does not type-check (cel-go), so the CRD is refused instead of
    # every later update failing at run time; unwrapping it with value() is fine
    api = APIServer(EventLog(), authorize=False)
    wrong = {"rule": "!has(oldSelf.minReplicas) || self.minReplicas >= oldSelf.minReplicas",
             "optionalOldSelf": True}
    text = invalid(api.create, "crd", _crd_with_spec_rules(wrong))
    assert ("compilation failed: ERROR: <input>:1:47: found no matching overload for '_>=_' applied to "
            "'(int, optional_type(int))'") in text
    right = {"rule": "!oldSelf.hasValue() || self.minReplicas >= oldSelf.value().minReplicas",
             "optionalOldSelf": True}
    api.create("crd", _crd_with_spec_rules(right))
