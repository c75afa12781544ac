"""The typed schema: strict decoding with kube-apiserver's messages, and lossless round trips."""

from __future__ import annotations

import copy
import glob
import os
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from k8semu.api import schema
from k8semu.api.errors import BadRequest
from k8semu.api.resources import RESOURCES
from k8semu.api.schema import core, make_converter
from k8semu.api.schema.fields import wire_name

from strategies import kind_document, struct_paths, wire_object

CASES = "/work/shared/cases"

DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "labels": {"app": "web"}},
    "spec": {
        "replicas": 3,
        "selector": {"matchLabels": {"app": "web"}},
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [
                    {
                        "name": "nginx",
                        "image": "nginx:1.25",
                        "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": 1}},
                        "readinessProbe": {"httpGet": {"path": "/", "port": "http"}},
                        "env": [
                            {"name": "MODE", "value": "prod"},
                            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                        ],
                    }
                ]
            },
        },
    },
}

PREFIX = 'Deployment in version "v1" cannot be handled as a Deployment: '


def _decode_error(doc: dict[str, Any], key: str = "apps/v1/Deployment") -> str:
    with pytest.raises(BadRequest) as info:
        schema.decode_strict(doc, key)
    assert info.value.code == 400 and info.value.reason == "BadRequest"
    return info.value.message


def _with(path: tuple, value: Any, doc: dict[str, Any] = DEPLOYMENT) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    node = out
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return out


CONTAINER = ("spec", "template", "spec", "containers", 0)


# --- strict decoding: unknown fields ---------------------------------------------------------


def test_valid_deployment_decodes_to_typed_objects():
    dep = schema.decode_strict(DEPLOYMENT, "apps/v1/Deployment")
    c = dep.spec.template.spec.containers[0]
    assert (dep.spec.replicas, c.image, c.ports[0].container_port) == (3, "nginx:1.25", 80)
    assert c.resources.requests == {"cpu": "100m", "memory": "128Mi"}
    assert c.readiness_probe.http_get.port == "http"
    assert dep.spec.strategy.rolling_update.max_unavailable == 0


def test_typo_in_container_names_the_full_path():
    msg = _decode_error(_with((*CONTAINER, "imagee"), "nginx"))
    assert msg == PREFIX + 'strict decoding error: unknown field "spec.template.spec.containers[0].imagee"'


def test_every_unknown_field_is_listed_in_document_order():
    doc = _with(("spec", "foo"), 1)
    doc = _with((*CONTAINER, "imagee"), "x", doc)
    doc["metadata"]["spec"] = {"replicas": 1}  # the classic mis-indented spec
    assert _decode_error(doc) == PREFIX + (
        'strict decoding error: unknown field "metadata.spec", '
        'unknown field "spec.template.spec.containers[0].imagee", unknown field "spec.foo"'
    )
    assert schema.unknown_fields(doc, "apps/v1/Deployment") == [
        "metadata.spec",
        "spec.template.spec.containers[0].imagee",
        "spec.foo",
    ]


def test_restart_policy_is_not_a_field_of_a_pod_template_metadata():
    doc = _with(("spec", "template", "metadata", "restartPolicy"), "Always")
    assert _decode_error(doc).endswith('unknown field "spec.template.metadata.restartPolicy"')


def test_field_names_are_case_sensitive():
    doc = _with((*CONTAINER, "Image"), "nginx")
    assert _decode_error(doc).endswith('unknown field "spec.template.spec.containers[0].Image"')


def test_unknown_fields_is_empty_for_a_valid_object():
    assert schema.unknown_fields(DEPLOYMENT, "apps/v1/Deployment") == []


def test_pod_kind_key_uses_core_version():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "imagePullPolicyy": "Always"}]}}
    assert _decode_error(pod, "v1/Pod") == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        'unknown field "spec.containers[0].imagePullPolicyy"'
    )


def test_decoding_does_not_mutate_its_input():
    doc = _with((*CONTAINER, "imagee"), "x")
    before = copy.deepcopy(doc)
    with pytest.raises(BadRequest):
        schema.decode_strict(doc, "apps/v1/Deployment")
    schema.decode_strict(DEPLOYMENT, "apps/v1/Deployment")
    assert doc == before


# --- strict decoding: wrong JSON types -------------------------------------------------------


@pytest.mark.parametrize(
    "path,value,expected",
    [
        (("spec", "replicas"), "3",
         "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"),
        (("spec", "replicas"), 1.5,
         "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32"),
        (("spec", "replicas"), 2**31,
         "json: cannot unmarshal number 2147483648 into Go struct field DeploymentSpec.spec.replicas of type int32"),
        (("spec", "paused"), "yes",
         "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.paused of type bool"),
        (("spec", "selector"), [],
         "json: cannot unmarshal array into Go struct field DeploymentSpec.spec.selector of type v1.LabelSelector"),
        (("metadata", "labels", "tier"), 1,
         "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"),
        ((*CONTAINER, "env", 0, "value"), 8080,
         "json: cannot unmarshal number into Go struct field EnvVar.spec.template.spec.containers.env.value of type string"),
        ((*CONTAINER, "args"), "--verbose",
         "json: cannot unmarshal string into Go struct field Container.spec.template.spec.containers.args of type []string"),
        ((*CONTAINER, "ports", 0, "containerPort"), "80",
         "json: cannot unmarshal string into Go struct field ContainerPort.spec.template.spec.containers.ports.containerPort of type int32"),
        ((*CONTAINER, "ports", 0, "protocol"), 6,
         "json: cannot unmarshal number into Go struct field ContainerPort.spec.template.spec.containers.ports.protocol of type v1.Protocol"),
        ((*CONTAINER, "resources", "limits", "cpu"), "1 core",
         "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
        (("spec", "strategy", "rollingUpdate", "maxSurge"), True,
         "json: cannot unmarshal bool into Go value of type int32"),
        (("metadata", "creationTimestamp"), "yesterday",
         'parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"'),
    ],
)
def test_wrong_types_get_go_json_errors(path, value, expected):
    assert _decode_error(_with(path, value)) == PREFIX + expected


def test_type_error_wins_over_unknown_fields():
    doc = _with(("spec", "foo"), 1)
    doc = _with(("spec", "replicas"), "3", doc)
    assert "cannot unmarshal string" in _decode_error(doc)


def test_secret_data_must_be_base64():
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"password": "hello world"}}
    assert _decode_error(secret, "v1/Secret") == (
        'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 5'
    )
    secret["data"]["password"] = "aGVsbG8="
    assert schema.decode_strict(secret, "v1/Secret").data == {"password": "aGVsbG8="}


def test_null_and_integral_floats_are_accepted_like_go():
    doc = _with(("spec", "paused"), None)
    doc = _with(("spec", "replicas"), 3.0, doc)
    assert schema.decode_strict(doc, "apps/v1/Deployment").spec.replicas == 3


def test_quantities_and_int_or_string_accept_both_forms():
    doc = _with((*CONTAINER, "resources"), {"limits": {"cpu": 2, "memory": "1Gi"}, "requests": {"cpu": 0.5}})
    doc = _with(("spec", "strategy", "rollingUpdate"), {"maxSurge": 1, "maxUnavailable": "10%"}, doc)
    dep = schema.decode_strict(doc, "apps/v1/Deployment")
    assert dep.spec.template.spec.containers[0].resources.limits == {"cpu": 2, "memory": "1Gi"}
    assert schema.unstructure(dep) == doc


# --- coverage of the served kinds ------------------------------------------------------------


def test_every_served_kind_has_a_schema():
    for r in RESOURCES:
        assert f"{r.api_version}/{r.kind}" in schema.KINDS
    for key in ("v1/Status", "autoscaling/v1/Scale", "v1/Binding", "policy/v1/Eviction", "v1/DeleteOptions"):
        assert key in schema.KINDS


def test_patch_strategy_tags_follow_upstream():
    def md(cls: type, name: str) -> tuple:
        a = attrs.fields_dict(cls)[name]
        return a.metadata.get("patch_strategy"), a.metadata.get("patch_merge_key")

    assert md(core.PodSpec, "containers") == ("merge", "name")
    assert md(core.PodSpec, "volumes") == ("merge,retainKeys", "name")
    assert md(core.Container, "ports") == ("merge", "containerPort")
    assert md(core.Container, "volume_mounts") == ("merge", "mountPath")
    assert md(core.ServiceSpec, "ports") == ("merge", "port")
    assert md(core.PodSpec, "tolerations") == (None, None)


def test_wire_names_keep_upstream_acronyms():
    names = {wire_name(a) for a in attrs.fields(core.PodStatus)}
    assert {"hostIP", "hostIPs", "podIP", "podIPs", "qosClass"} <= names
    assert wire_name(attrs.fields_dict(core.DaemonEndpoint)["port"]) == "Port"
    assert {wire_name(a) for a in attrs.fields(core.PodSpec)} >= {"hostPID", "hostIPC", "setHostnameAsFQDN"}


def test_make_converter_returns_independent_converters():
    a, b = make_converter(), make_converter()
    assert a is not b
    assert a.unstructure(a.structure(DEPLOYMENT, schema.KINDS["apps/v1/Deployment"])) == DEPLOYMENT


# --- round trips -----------------------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind_document())
def test_round_trip_of_generated_objects(case):
    key, doc = case
    assert schema.unstructure(schema.decode_strict(doc, key)) == doc
    assert schema.unknown_fields(doc, key) == []


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind_document(), st.data())
def test_a_planted_unknown_field_is_reported_by_path(case, data):
    key, doc = case
    path, keys = data.draw(st.sampled_from(list(struct_paths(doc, schema.KINDS[key]))))
    bad = _with((*keys, "zzUnknown"), 1, doc) if keys else {**doc, "zzUnknown": 1}
    field = f"{path}.zzUnknown" if path else "zzUnknown"
    assert schema.unknown_fields(bad, key) == [field]
    version, kind = key.rsplit("/", 2)[-2:]
    with pytest.raises(BadRequest) as info:
        schema.decode_strict(bad, key)
    assert info.value.message == (
        f'{kind} in version "{version}" cannot be handled as a {kind}: '
        f'strict decoding error: unknown field "{field}"'
    )


def _all_classes() -> list[type]:
    from k8semu.api.schema import apps, autoscaling, batch, meta, networking, other, rbac

    seen: dict[str, type] = {}
    for mod in (meta, core, apps, batch, autoscaling, networking, rbac, other):
        for name, obj in vars(mod).items():
            if attrs.has(obj) and obj.__module__ == mod.__name__:
                seen[f"{mod.__name__.rsplit('.', 1)[-1]}.{name}"] = obj
    return [seen[k] for k in sorted(seen)]


ALL_CLASSES = _all_classes()


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: f"{c.__module__.rsplit('.', 1)[-1]}.{c.__name__}")
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_round_trip_of_every_type(cls, data):
    doc = data.draw(wire_object(cls, 3))
    assert schema.unstructure(schema.structure(doc, cls)) == doc


def _manifests() -> list[tuple[str, int, dict[str, Any]]]:
    yaml = YAML(typ="safe")
    files = sorted(
        glob.glob(f"{CASES}/website/**/*.yaml", recursive=True)
        + glob.glob(f"{CASES}/examples/guestbook/*.yaml")
    )
    out = []
    for f in files:
        try:
            with open(f) as fh:
                docs = list(yaml.load_all(fh))
        except Exception:  # a few documentation files are not valid YAML
            continue
        for i, d in enumerate(docs):
            if isinstance(d, dict) and f"{d.get('apiVersion')}/{d.get('kind')}" in schema.KINDS:
                out.append((os.path.relpath(f, CASES), i, d))
    return out


# Manifests from the documentation that a v1.3x kube-apiserver rejects as well.
UPSTREAM_REJECTS = {
    # spec.ipFamily was replaced by ipFamilies/ipFamilyPolicy in v1.20.
    "website/service/networking/dual-stack-ipv6-svc.yaml": 'unknown field "spec.ipFamily"',
    "website/service/networking/dual-stack-ipv6-lb-svc.yaml": 'unknown field "spec.ipFamily"',
    # preferred anti-affinity terms need {weight, podAffinityTerm: {...}}.
    "website/deployments/deployment-with-capacity-reservation.yaml": (
        'unknown field "spec.template.spec.affinity.podAntiAffinity.'
        'preferredDuringSchedulingIgnoredDuringExecution[0].labelSelector"'
    ),
}

MANIFESTS = _manifests()


def test_the_case_corpus_is_present():
    assert len(MANIFESTS) > 200


@pytest.mark.parametrize("path,index,doc", MANIFESTS, ids=[f"{p}#{i}" for p, i, _ in MANIFESTS])
def test_real_manifests_decode_strictly_and_round_trip(path, index, doc):
    key = f"{doc['apiVersion']}/{doc['kind']}"
    if path in UPSTREAM_REJECTS:
        with pytest.raises(BadRequest) as info:
            schema.decode_strict(doc, key)
        assert UPSTREAM_REJECTS[path] in info.value.message
        return
    assert schema.unstructure(schema.decode_strict(doc, key)) == doc


def test_unquoted_yaml_timestamps_are_read_as_rfc3339_strings():
    from datetime import datetime, timezone

    doc = {"metadata": {"name": "p", "creationTimestamp": datetime(2024, 5, 1, 10, 0, tzinfo=timezone.utc)}}
    pod = schema.decode_strict(doc, "v1/Pod")
    assert schema.unstructure(pod) == {"metadata": {"name": "p", "creationTimestamp": "2024-05-01T10:00:00Z"}}
