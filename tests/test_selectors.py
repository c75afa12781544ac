"""Label and field selectors parse, print and match like apimachinery's labels/fields."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from k8semu.api.errors import BadRequest
from k8semu.api.selectors import (
    EVERYTHING,
    NOTHING,
    LabelSelector,
    Requirement,
    field_set,
    parse_field_selector,
    parse_label_selector,
    selector_from_label_selector,
    selector_from_set,
    selector_string,
    set_matches,
    validate_field_selector,
)

QNAME_DETAIL = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


# --- label selector parsing ---------------------------------------------------

@pytest.mark.parametrize(
    "text,rendered",
    [
        # upstream TestSelectorParse good strings (they re-render unchanged)
        ("x=a,y=b,z=c", "x=a,y=b,z=c"),
        ("", ""),
        ("x!=a,y=b", "x!=a,y=b"),
        ("x>1", "x>1"),
        ("x>1,z<5", "x>1,z<5"),
        ("x<1", "x<1"),
        # upstream TestSetSelectorParser valid inputs
        ("\rx", "x"),
        ("this-is-a-dns.domain.com/key-with-dash", "this-is-a-dns.domain.com/key-with-dash"),
        ("this-is-another-dns.domain.com/key-with-dash in (so,what)",
         "this-is-another-dns.domain.com/key-with-dash in (so,what)"),
        ("0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
         "0.1.2.domain/99 notin (10.10.100.1,tick.tack.clock)"),
        ("foo  in\t (abc)", "foo in (abc)"),
        ("x notin\n (abc)", "x notin (abc)"),
        ("x  notin\t\t(abc,def)", "x notin (abc,def)"),
        ("x in (abc,def)", "x in (abc,def)"),
        ("x in (abc,)", "x in (,abc)"),
        ("x in ()", "x in ()"),
        ("x notin (abc,,def),bar,z in (),w", "bar,w,x notin (,abc,def),z in ()"),
        ("x,y in (a)", "x,y in (a)"),
        ("x=a,y!=b,z in (h,i,j)", "x=a,y!=b,z in (h,i,j)"),
        ("x notin ( )", "x notin ()"),
        ("x notin (, a)", "x notin (,a)"),
        ("a ", "a"),
        ("a in (x,y,notin, z,in)", "a in (in,notin,x,y,z)"),
        ("notin=in", "notin=in"),
        ("x=", "x="),
        ("!x", "!x"),
        ("x==a", "x==a"),
        ("env in (prod, qa), tier notin (frontend),!partition",
         "env in (prod,qa),!partition,tier notin (frontend)"),
    ],
)
def test_valid_label_selectors_render_like_upstream(text, rendered):
    sel = parse_label_selector(text)
    assert str(sel) == rendered
    assert str(parse_label_selector(rendered)) == rendered


def test_parse_is_deterministic():
    assert str(parse_label_selector("x=a,a=x")) == str(parse_label_selector("a=x,x=a")) == "a=x,x=a"


@pytest.mark.parametrize(
    "text,message",
    [
        ("x=a||y=b", "unable to parse requirement: values[0][x]: Invalid value: \"a||y\": a valid label must be "
                     "an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
                     "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
                     "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
        ("x==a==b", "found '==', expected: ',' or 'end of string'"),
        ("x,,y", "found ',', expected: identifier after ','"),
        (",x,y", "found ',', expected: !, identifier, or 'end of string'"),
        ("x nott in (y)", "unable to parse requirement: found 'nott', expected: in, notin, =, ==, !=, gt, lt"),
        ("a in (xyz),", "found '', expected: identifier after ','"),
        ("a in (xyz)b notin ()", "found 'b', expected: ',' or 'end of string'"),
        ("a in (xyz abc)", "unable to parse requirement: found 'abc', expected: ',' or ')'"),
        ("a notin(", "unable to parse requirement: found '', expected: ',', ')' or identifier"),
        ("a (", "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt"),
        ("(", "found '(', expected: !, identifier, or 'end of string'"),
        ("x in a", "unable to parse requirement: found 'a' expected: '('"),
        ("!x=a", "found '=', expected: ',' or 'end of string'"),
        ("x<a", "unable to parse requirement: values[0]: Invalid value: \"a\": "
                "for 'Gt', 'Lt' operators, the value must be an integer"),
        ("x>1.1", "unable to parse requirement: values[0]: Invalid value: \"1.1\": "
                  "for 'Gt', 'Lt' operators, the value must be an integer"),
        ("app:monolith", f"unable to parse requirement: <nil>: Invalid value: \"app:monolith\": {QNAME_DETAIL}"),
        ("*bar", f"unable to parse requirement: <nil>: Invalid value: \"*bar\": {QNAME_DETAIL}"),
        ("a/b/c ?=? def",
         "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a qualified name must consist of "
         "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
         "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
         "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' "
         "(e.g. 'example.com/MyName')"),
        ("app.kubernetes_io/name=x",
         "unable to parse requirement: <nil>: Invalid value: \"app.kubernetes_io/name\": prefix part a "
         "lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
         "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation "
         "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
        ("x=" + "z" * 64, "unable to parse requirement: values[0][x]: Invalid value: \"" + "z" * 64
         + "\": must be no more than 63 characters"),
        ("a" * 64, "unable to parse requirement: <nil>: Invalid value: \"" + "a" * 64
         + "\": name part must be no more than 63 characters"),
    ],
)
def test_invalid_label_selectors_give_upstream_messages(text, message):
    with pytest.raises(ValueError) as e:
        parse_label_selector(text)
    assert str(e.value) == message


# --- label selector matching --------------------------------------------------

@pytest.mark.parametrize(
    "text,labels,expected",
    [
        ("", {"x": "y"}, True),
        ("x=y", {"x": "y"}, True),
        ("x=y,z=w", {"x": "y", "z": "w"}, True),
        ("x!=y,z!=w", {"x": "z", "z": "a"}, True),
        ("notin=in", {"notin": "in"}, True),
        ("x=y", {"x": "z"}, False),
        ("x=y,z=w", {"x": "w", "z": "w"}, False),
        ("x!=y,z!=w", {"x": "z", "z": "w"}, False),
        ("foo=bar,foobar=bar,baz=blah", {"foo": "bar", "baz": "blah"}, False),
        ("x in (foo),y notin (alpha)", {"x": "foo", "y": "baz"}, True),
        ("x in (foo),y in (alpha)", {"x": "foo", "y": "baz"}, False),
        ("x notin (),y", {"y": ""}, True),  # notin matches a missing key; y exists with ""
        ("x in ()", {"y": "baz"}, False),
        ("x!=a", {}, True),  # != matches objects without the label
        ("!x", {"y": "1"}, True),
        ("!x", {"x": ""}, False),
        ("x", {"x": ""}, True),
        ("x=", {"x": ""}, True),
        ("x=", {}, False),
        ("x>1", {"x": "2"}, True),
        ("x>1", {"x": "1"}, False),
        ("x<7", {"x": "-3"}, True),
        ("x>1", {"x": "two"}, False),
        ("x>1", {}, False),
    ],
)
def test_label_selector_matches(text, labels, expected):
    assert parse_label_selector(text).matches(labels) is expected


def test_none_labels_are_no_labels():
    assert parse_label_selector("!app").matches(None)
    assert not parse_label_selector("app").matches(None)
    assert EVERYTHING.matches(None) and EVERYTHING.empty
    assert not NOTHING.matches({"a": "b"}) and not NOTHING.empty and str(NOTHING) == ""


def test_requires_exact_match():
    assert parse_label_selector("test in (b)").requires_exact_match("test") == "b"
    assert parse_label_selector("test=").requires_exact_match("test") == ""
    assert parse_label_selector("test notin (b)").requires_exact_match("test") is None
    assert parse_label_selector("a=b").requires_exact_match("test") is None


# --- metav1.LabelSelector conversion --------------------------------------------

def test_nil_selector_matches_nothing_and_empty_matches_everything():
    assert selector_from_label_selector(None) is NOTHING
    assert not selector_from_label_selector(None).matches({"app": "web"})
    assert selector_from_label_selector(None, nil_selects_everything=True).matches({"app": "web"})
    assert selector_from_label_selector({}).matches({"app": "web"})
    assert selector_from_label_selector({"matchLabels": {}, "matchExpressions": []}).empty


def test_match_labels_and_expressions_are_anded_and_sorted():
    sel = selector_from_label_selector({
        "matchLabels": {"tier": "web", "app": "shop"},
        "matchExpressions": [
            {"key": "env", "operator": "In", "values": ["qa", "prod"]},
            {"key": "legacy", "operator": "DoesNotExist"},
            {"key": "zone", "operator": "NotIn", "values": ["b"]},
            {"key": "track", "operator": "Exists"},
        ],
    })
    assert str(sel) == "app=shop,env in (prod,qa),!legacy,tier=web,track,zone notin (b)"
    assert sel.matches({"app": "shop", "tier": "web", "env": "qa", "track": "x"})
    assert not sel.matches({"app": "shop", "tier": "web", "env": "qa", "track": "x", "legacy": "1"})
    assert not sel.matches({"app": "shop", "tier": "web", "env": "dev", "track": "x"})


@pytest.mark.parametrize(
    "obj,message",
    [
        ({"matchExpressions": [{"key": "a", "operator": "Foo", "values": ["x"]}]},
         '"Foo" is not a valid label selector operator'),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
         "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"),
        ({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
         'values: Invalid value: []string{"x"}: values set must be empty for exists and does not exist'),
        ({"matchLabels": {"$$$$": "true"}}, f'key: Invalid value: "$$$$": {QNAME_DETAIL}'),
        ({"matchLabels": {"app": "a b"}},
         "values[0][app]: Invalid value: \"a b\": a valid label must be an empty string or consist of "
         "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
         "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
         "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
    ],
)
def test_invalid_label_selector_objects(obj, message):
    with pytest.raises(ValueError) as e:
        selector_from_label_selector(obj)
    assert str(e.value) == message


def test_new_requirement_aggregates_errors():
    with pytest.raises(ValueError) as e:
        Requirement.new("a b", "=", ["x", "y"])
    assert str(e.value) == (
        f'[key: Invalid value: "a b": {QNAME_DETAIL}, values: Invalid value: []string{{"x", "y"}}: '
        "exact-match compatibility requires one single value]"
    )
    assert Requirement.new("1234", "in", ["bar"]).key == "1234"


def test_selector_from_set_and_scale_selector_string():
    assert selector_from_set(None).empty and selector_from_set({}).empty
    assert str(selector_from_set({"b": "2", "a": "1"})) == "a=1,b=2"
    assert selector_string({"matchLabels": {"app": "web"}}) == "app=web"
    assert selector_string({"matchExpressions": [{"key": "a", "operator": "Exists"}]}) == "a"
    assert selector_string({"app": "web"}) == "app=web"  # ReplicationController map selector
    assert selector_string(None) == ""


def test_label_selector_is_frozen_and_hashable():
    sel = parse_label_selector("a=b")
    with pytest.raises(AttributeError):
        sel.requirements = ()  # type: ignore[misc]
    assert sel == parse_label_selector(" a = b ") and hash(sel) == hash(parse_label_selector("a=b"))
    assert isinstance(sel.add(Requirement.new("0", "exists")), LabelSelector)
    assert str(sel.add(Requirement.new("0", "exists"))) == "0,a=b"


label_keys = st.from_regex(r"[a-z]([a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True)
label_values = st.from_regex(r"([A-Za-z0-9]([A-Za-z0-9_.-]{0,6}[A-Za-z0-9])?)?", fullmatch=True)


@given(st.dictionaries(label_keys, label_values, max_size=5), st.dictionaries(label_keys, label_values, max_size=5))
def test_set_selector_round_trips_and_matches_superset(sel_labels, extra):
    sel = selector_from_set(sel_labels)
    reparsed = parse_label_selector(str(sel))
    assert str(reparsed) == str(sel)
    obj_labels = {**extra, **sel_labels}
    assert reparsed.matches(obj_labels)


# --- field selectors -------------------------------------------------------------

@pytest.mark.parametrize(
    "text,rendered",
    [
        ("x=a,y=b,z=c", "x=a,y=b,z=c"),
        ("", ""),
        ("x!=a,y=b", "x!=a,y=b"),
        ("x=a||y\\=b", "x=a||y\\=b"),
        ("x=a\\=\\=b", "x=a\\=\\=b"),
        ("y==b,x=a", "x=a,y=b"),
        ("x=a\\,b", "x=a\\,b"),
        ("x=,", "x="),
    ],
)
def test_valid_field_selectors(text, rendered):
    assert str(parse_field_selector(text)) == rendered


@pytest.mark.parametrize(
    "text,message",
    [
        ("x=a||y=b", "invalid field selector: unescaped character in value: 61"),
        ("x==a==b", "invalid field selector: unescaped character in value: 61"),
        ("x=a,b", "invalid selector: 'x=a,b'; can't understand 'b'"),
        ("x in (a)", "invalid selector: 'x in (a)'; can't understand 'x in (a)'"),
        ("x", "invalid selector: 'x'; can't understand 'x'"),
        ("x=a\\b", "invalid field selector: invalid escape sequence: \\b"),
        ("x=a\\", "invalid field selector: invalid escape sequence: \\"),
    ],
)
def test_invalid_field_selectors(text, message):
    with pytest.raises(ValueError) as e:
        parse_field_selector(text)
    assert str(e.value) == message


def _pod(name, node=None, phase="Pending", **spec):
    spec = {"restartPolicy": "Always", "schedulerName": "default-scheduler",
            "serviceAccountName": "default", **spec}
    status = {"phase": phase}
    if node:
        spec["nodeName"] = node
    if phase == "Running":
        status["podIPs"] = [{"ip": "10.244.0.5"}, {"ip": "fd00::5"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": spec, "status": status}


def test_pod_field_set():
    fs = field_set("pods", _pod("web", node="node-1", phase="Running", hostNetwork=True))
    assert fs == {
        "metadata.name": "web", "metadata.namespace": "default",
        "spec.nodeName": "node-1", "spec.restartPolicy": "Always",
        "spec.schedulerName": "default-scheduler", "spec.serviceAccountName": "default",
        "spec.hostNetwork": "true", "status.phase": "Running", "status.podIP": "10.244.0.5",
        "status.nominatedNodeName": "",
    }


def test_pod_field_selectors_as_kubelet_and_scheduler_use_them():
    pods = [_pod("a", node="node-1", phase="Running"), _pod("b"), _pod("c", node="node-2", phase="Succeeded")]

    def names(text):
        sel = validate_field_selector("pods", parse_field_selector(text))
        return [p["metadata"]["name"] for p in pods if sel.matches(field_set("pods", p))]

    assert names("spec.nodeName=node-1") == ["a"]
    assert names("spec.nodeName=") == ["b"]  # unscheduled pods, as the scheduler watches them
    assert names("spec.nodeName!=") == ["a", "c"]
    assert names("status.phase!=Succeeded,status.phase!=Failed") == ["a", "b"]
    assert names("spec.host=node-2") == ["c"]  # legacy alias of spec.nodeName
    assert names("spec.hostNetwork=false") == ["a", "b", "c"]
    assert names("metadata.name=b,metadata.namespace=default") == ["b"]
    assert names("status.podIPs=10.244.0.5") == []  # accepted, but not a selectable field
    assert str(validate_field_selector("pods", parse_field_selector("spec.host=n"))) == "spec.nodeName=n"
    assert validate_field_selector("pods", parse_field_selector("spec.nodeName=n")).requires_exact_match(
        "spec.nodeName") == "n"


def test_event_field_selectors_as_kubectl_describe_uses_them():
    ev = {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "web.17a", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web", "uid": "u-1",
                           "apiVersion": "v1", "resourceVersion": "42"},
        "reason": "Scheduled", "type": "Normal",
        "source": {"component": "default-scheduler"}, "reportingComponent": "default-scheduler",
    }
    fs = field_set("events", ev)
    assert fs["involvedObject.fieldPath"] == "" and fs["source"] == "default-scheduler"
    text = "involvedObject.name=web,involvedObject.namespace=default,involvedObject.kind=Pod,involvedObject.uid=u-1"
    sel = validate_field_selector("events", parse_field_selector(text))
    assert sel.matches(fs)
    assert not validate_field_selector("events", parse_field_selector("type=Warning")).matches(fs)
    # source falls back to reportingComponent
    ev2 = {**ev, "source": {}, "reportingComponent": "kubelet"}
    assert field_set("events", ev2)["source"] == "kubelet"
    # events.k8s.io names map onto the same fields
    new = {"metadata": {"name": "e", "namespace": "default"}, "regarding": {"kind": "Pod", "name": "web"},
           "reason": "Pulled", "type": "Normal", "reportingController": "kubelet"}
    sel = validate_field_selector("events", parse_field_selector("regarding.name=web,reportingController=kubelet"),
                                  group="events.k8s.io")
    assert sel.matches(field_set("events", new, group="events.k8s.io"))


def test_other_kinds_field_sets():
    assert field_set("nodes", {"metadata": {"name": "n1"}, "spec": {"unschedulable": True}}) == {
        "metadata.name": "n1", "spec.unschedulable": "true"}
    assert field_set("namespaces", {"metadata": {"name": "ns"}, "status": {"phase": "Active"}}) == {
        "metadata.name": "ns", "status.phase": "Active"}
    assert field_set("secrets", {"metadata": {"name": "s", "namespace": "d"}, "type": "Opaque"})["type"] == "Opaque"
    assert field_set("services", {"metadata": {"name": "s", "namespace": "d"},
                                  "spec": {"clusterIP": "None", "type": "ClusterIP"}})["spec.clusterIP"] == "None"
    assert field_set("replicasets", {"metadata": {"name": "r", "namespace": "d"},
                                     "status": {"replicas": 3}})["status.replicas"] == "3"
    assert field_set("replicationcontrollers", {"metadata": {"name": "r", "namespace": "d"},
                                                "status": {}})["status.replicas"] == "0"
    assert field_set("jobs", {"metadata": {"name": "j", "namespace": "d"},
                              "status": {"succeeded": 2}})["status.successful"] == "2"
    assert field_set("configmaps", {"metadata": {"name": "c", "namespace": "d"}}) == {
        "metadata.name": "c", "metadata.namespace": "d"}
    assert field_set("clusterroles", {"metadata": {"name": "admin"}}) == {"metadata.name": "admin"}


@pytest.mark.parametrize(
    "plural,text,message",
    [
        ("pods", "spec.containers=x", "field label not supported: spec.containers"),
        ("pods", "status.hostIP=1.2.3.4", "field label not supported: status.hostIP"),
        ("events", "message=x", "field label not supported: message"),
        ("nodes", "metadata.namespace=x", "field label not supported: metadata.namespace"),
        ("namespaces", "spec.finalizers=x", "field label not supported: spec.finalizers"),
        ("secrets", "data=x", "field label not supported: data"),
        ("services", "spec.ports=x", "field label not supported: spec.ports"),
        ("replicationcontrollers", "spec.replicas=1", "field label not supported: spec.replicas"),
        ("jobs", "status.succeeded=1", 'field label "status.succeeded" not supported for batchv1.Job'),
        ("deployments", "spec.replicas=1",
         '"spec.replicas" is not a known field selector: only "metadata.name", "metadata.namespace"'),
        ("replicasets", "status.replicas=0",  # upstream apps/v1 has no conversion for it (k/k#135136)
         '"status.replicas" is not a known field selector: only "metadata.name", "metadata.namespace"'),
        ("ingresses", "foo.bar=baz",
         '"foo.bar" is not a known field selector: only "metadata.name", "metadata.namespace"'),
    ],
)
def test_unsupported_field_labels_are_bad_requests(plural, text, message):
    with pytest.raises(BadRequest) as e:
        validate_field_selector(plural, parse_field_selector(text))
    assert e.value.message == message
    assert e.value.status()["code"] == 400 and e.value.status()["reason"] == "BadRequest"


def test_supported_field_labels_pass():
    for plural, text in [
        ("nodes", "spec.unschedulable=false"), ("namespaces", "status.phase=Active"),
        ("secrets", "type=kubernetes.io/tls"), ("services", "spec.clusterIP!=None,spec.type=ClusterIP"),
        ("jobs", "status.successful=1"), ("replicationcontrollers", "status.replicas=0"),
        ("configmaps", "metadata.name=c,metadata.namespace=d"), ("clusterroles", "metadata.namespace="),
    ]:
        validate_field_selector(plural, parse_field_selector(text))


@given(selector=st.dictionaries(st.sampled_from("abc"), st.sampled_from("xy"), max_size=3),
       labels=st.one_of(st.none(), st.dictionaries(st.sampled_from("abcd"), st.sampled_from("xyz"), max_size=4)))
def test_set_matches_is_selector_from_set_matches(selector, labels):
    assert set_matches(selector, labels) == selector_from_set(selector).matches(labels)


# --- MapSelectorIndex: the Services selecting a pod, without testing every Service ----------

_small = st.sampled_from(["a", "b", "c"])
_label_maps = st.dictionaries(_small, st.sampled_from(["1", "2"]), max_size=3)


@given(st.lists(st.tuples(st.sampled_from(["default", "dev"]), st.one_of(st.none(), _label_maps)), max_size=12),
       st.sampled_from(["default", "dev"]), _label_maps, st.sets(st.integers(0, 11)))
def test_map_selector_index_finds_what_a_scan_of_the_namespace_finds(services, ns, labels, removed):
    from k8semu.api.selectors import MapSelectorIndex

    idx = MapSelectorIndex()
    for i, (svc_ns, sel) in enumerate(services):
        idx.set(f"{svc_ns}/s{i:02d}", svc_ns, {"x": "0"})  # filed once, then moved: re-filing replaces
        idx.set(f"{svc_ns}/s{i:02d}", svc_ns, sel)
    for i in removed:
        if i < len(services):
            idx.discard(f"{services[i][0]}/s{i:02d}")
    snapshot = idx.copy()
    idx.set(f"{ns}/zz", ns, dict(labels))  # a later change does not show in the copy
    expected = [f"{svc_ns}/s{i:02d}" for i, (svc_ns, sel) in enumerate(services)
                if svc_ns == ns and sel and i not in removed and set_matches(sel, labels)]
    assert snapshot.matching(ns, labels) == expected  # an empty or absent selector selects nothing
    assert [snapshot.selector(k) for k in expected] == [services[int(k[-2:])][1] for k in expected]
