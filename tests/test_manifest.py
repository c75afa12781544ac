"""The manifest reader behind ``apply -f``: real documentation manifests and kubectl's messages."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from k8semu.api.manifest import (
    STDIN,
    ManifestDoc,
    ManifestError,
    load_manifests,
    load_text,
    resource_for,
)

CASES = Path(__file__).resolve().parents[2] / "shared" / "cases"
WEBSITE = CASES / "website"
STOP = "if you choose to ignore these errors, turn validation off with --validate=false"

needs_cases = pytest.mark.skipif(not (WEBSITE / "INDEX.tsv").is_file(), reason="shared/cases/website absent")


def _index() -> list[dict[str, str]]:
    if not (WEBSITE / "INDEX.tsv").is_file():
        return []
    with open(WEBSITE / "INDEX.tsv", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def _gvk(obj: dict) -> str:
    return f"{obj.get('apiVersion', '<none>')}/{obj.get('kind')}"


def _ok(docs: list[ManifestDoc]) -> list[dict]:
    assert all(d.ok for d in docs), [str(d.error) for d in docs if d.error]
    return [d.obj for d in docs]


# ------------------------------------------------------------------ the documentation corpus


@needs_cases
@pytest.mark.parametrize("row", _index(), ids=lambda r: r["path"])
def test_every_website_manifest_loads_with_the_indexed_kinds(row):
    path = WEBSITE / row["path"]
    docs = load_manifests(path)  # never raises for bad content
    kinds = row["kinds"].split(",")
    assert all(d.source == str(path) for d in docs)
    if "YAML_PARSE_ERROR" in kinds:
        # The whole file is one document; kubectl applies nothing from it.
        assert len(docs) == 1 and docs[0].error is not None and docs[0].error.reason == "parse"
    elif kinds == ["v1/List"]:
        assert {d.index for d in docs} == {0} and [d.item for d in docs] == list(range(len(docs)))
    else:
        assert [_gvk(d.obj) for d in docs] == kinds
        assert [d.index for d in docs] == list(range(len(kinds)))
        assert all(d.line >= 1 for d in docs)


@needs_cases
def test_invalid_yaml_files_name_file_and_line_like_kubectl():
    tab = WEBSITE / "pods/inject/pod-multiple-secret-env-variable.yaml"
    [doc] = load_manifests(tab)
    assert str(doc.error) == (
        f"error parsing {tab}: error converting YAML to JSON: yaml: line 15: "
        "found character that cannot start any token")
    assert (doc.error.source, doc.error.line, doc.obj) == (str(tab), 15, None)

    escape = WEBSITE / "pods/inject/envars-file-container.yaml"
    [doc] = load_manifests(escape)
    assert str(doc.error) == (
        f"error parsing {escape}: error converting YAML to JSON: yaml: line 9: "
        "found unknown escape character")
    assert doc.error.line == 9
    with pytest.raises(ManifestError) as exc:
        resource_for(doc)
    assert exc.value is doc.error


@needs_cases
def test_manifest_without_api_version_is_a_validation_error():
    path = WEBSITE / "pods/inject/pod-single-secret-env-variable.yaml"
    [doc] = load_manifests(path)
    assert str(doc.error) == (
        f'error validating "{path}": error validating data: apiVersion not set; {STOP}')
    assert (doc.error.reason, doc.error.line, doc.obj["kind"]) == ("validation", 1, "Pod")


@needs_cases
@pytest.mark.parametrize("rel, name, kind, version", [
    ("policy/baseline-psp.yaml", "baseline", "PodSecurityPolicy", "policy/v1beta1"),
    ("policy/example-psp.yaml", "example", "PodSecurityPolicy", "policy/v1beta1"),
    ("service/networking/example-ingress.yaml", "example-ingress", "Ingress", "networking.k8s.io/v1beta1"),
    ("application/volume-snaphot.yaml", "example-snapshot", "VolumeSnapshot", "snapshot.storage.k8s.io/v1"),
])
def test_unserved_versions_give_kubectl_mapping_error(rel, name, kind, version):
    path = WEBSITE / rel
    [doc] = load_manifests(path)
    assert doc.ok  # the file itself is fine; only the mapping fails
    with pytest.raises(ManifestError) as exc:
        resource_for(doc)
    assert str(exc.value) == (
        f'resource mapping not found for name: "{name}" namespace: "" from "{path}": '
        f'no matches for kind "{kind}" in version "{version}"')
    assert exc.value.hint == "ensure CRDs are installed first"
    assert (exc.value.reason, exc.value.line) == ("mapping", doc.line)


@needs_cases
def test_kyaml_files_load_as_plain_objects():
    kyaml = [r["path"] for r in _index() if (WEBSITE / r["path"]).read_text().startswith("---\n{")]
    assert len(kyaml) > 100
    for rel in kyaml:
        assert all(d.ok for d in load_manifests(WEBSITE / rel)), rel
    [rs] = _ok(load_manifests(WEBSITE / "controllers/replicaset.yaml"))
    assert rs["spec"]["selector"] == {"matchLabels": {"pod-is-for": "garbage-collection-example"}}
    assert rs["spec"]["replicas"] == 3
    assert rs["spec"]["template"]["spec"]["containers"] == [{"name": "nginx", "image": "nginx"}]


@needs_cases
def test_list_file_is_flattened_into_its_items():
    path = WEBSITE / "policy/quota-vac.yaml"
    docs = load_manifests(path)
    assert [d.obj["metadata"]["name"] for d in docs] == ["pvcs-gold", "pvcs-silver", "pvcs-copper"]
    assert [d.line for d in docs] == [4, 17, 30]
    assert all(resource_for(d).plural == "resourcequotas" for d in docs)


@needs_cases
def test_leading_zero_is_octal_as_in_kubectl():
    # `mode: 01777` is YAML 1.1 octal for go-yaml v2 (kubectl), i.e. the sticky-bit 1777.
    [pod] = _ok(load_manifests(WEBSITE / "pods/emptydir-volume-mode.yaml"))
    assert pod["spec"]["volumes"][0]["emptyDir"]["mode"] == 0o1777 == 1023


@needs_cases
def test_directories_take_yaml_files_in_name_order_and_recurse_only_with_R():
    ctrl = WEBSITE / "controllers"
    docs = load_manifests(ctrl)
    sources = list(dict.fromkeys(d.source for d in docs))
    assert sources == sorted(str(p) for p in ctrl.iterdir() if p.suffix in (".yaml", ".yml", ".json"))
    assert load_manifests(WEBSITE) == []  # only sub-directories and INDEX.tsv at the top
    every = load_manifests(WEBSITE, recursive=True)
    assert len({d.source for d in every}) == len(_index())


@needs_cases
def test_print_summary_table():
    """Shows (under ``pytest -s``) which documentation files do not apply cleanly, and why."""
    rows = []
    for row in _index():
        docs = load_manifests(WEBSITE / row["path"])
        status = "ok"
        for d in docs:
            if d.error is not None:
                status = d.error.reason
                break
            try:
                resource_for(d)
            except ManifestError:
                status = "unserved"
        rows.append((row["path"], len(docs), status))
    counts: dict[str, int] = {}
    for _, _, status in rows:
        counts[status] = counts.get(status, 0) + 1
    print(f"\n{'file':60s} docs  result")
    for path, n, status in rows:
        if status != "ok":
            print(f"{path:60s} {n:4d}  {status}")
    print("totals:", ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    assert counts["ok"] >= 190 and counts["parse"] == 2 and counts["validation"] == 1


# ------------------------------------------------------------------ unit behaviour


def test_broken_yaml_names_the_line():
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels: app: web\n"
    [doc] = load_text(text, "cm.yaml")
    assert str(doc.error) == (
        "error parsing cm.yaml: error converting YAML to JSON: yaml: line 5: "
        "mapping values are not allowed in this context")
    assert (doc.error.source, doc.error.line, doc.error.reason) == ("cm.yaml", 5, "parse")
    [doc] = load_text("apiVersion: v1\nkind: Pod\nspec:\n\tcontainers: []\n", "tab.yaml")
    assert str(doc.error).endswith("yaml: line 4: found character that cannot start any token")


def test_parser_errors_keep_go_yaml_line_numbering():
    # go-yaml prints parser (not scanner) errors with the 0-based line: one line early.
    text = "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: b\n - x\n"
    [doc] = load_text(text, "f.yaml")
    assert str(doc.error).endswith("yaml: line 4: did not find expected key")
    assert doc.error.line == 5  # .line is the true line
    [doc] = load_text("apiVersion: v1\nkind: ConfigMap\nx: [1, 2\n", "f.yaml")
    assert str(doc.error).endswith("yaml: line 3: did not find expected ',' or ']'")


def test_bad_document_stops_the_file_but_earlier_ones_stay():
    text = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
        "---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  bad: x: y\n"
        "---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    docs = load_text(text, "multi.yaml")
    assert [d.ok for d in docs] == [True, False]
    assert docs[0].obj["metadata"]["name"] == "a"
    # kubectl parses each document alone, so its line counts from the document's start.
    assert str(docs[1].error) == (
        "error parsing multi.yaml: error converting YAML to JSON: yaml: line 5: "
        "mapping values are not allowed in this context")
    assert (docs[1].index, docs[1].line, docs[1].error.line) == (1, 5, 9)


def test_validation_error_stops_the_file_but_unserved_kind_does_not():
    text = ("apiVersion: batch/v1beta1\nkind: CronJob\nmetadata: {name: old, namespace: jobs}\n---\n"
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fine}\n---\n"
            "kind: Secret\n---\n"
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: never-read}\n")
    docs = load_text(text, "mix.yaml")
    assert [d.ok for d in docs] == [True, True, False]
    with pytest.raises(ManifestError) as exc:
        resource_for(docs[0])
    assert str(exc.value) == (
        'resource mapping not found for name: "old" namespace: "jobs" from "mix.yaml": '
        'no matches for kind "CronJob" in version "batch/v1beta1"')
    assert resource_for(docs[1]).plural == "configmaps"
    assert str(docs[2].error) == f'error validating "mix.yaml": error validating data: apiVersion not set; {STOP}'
    assert docs[2].line == 9


@pytest.mark.parametrize("text, detail", [
    ("apiVersion: v1\n", "kind not set"),
    ("metadata: {}\n", "[apiVersion not set, kind not set]"),
    ("apiVersion: 1\nkind: Pod\n", "apiVersion isn't string type"),
    ("apiVersion: a/b/c\nkind: Pod\n", "unexpected GroupVersion string: a/b/c"),
    ("- a\n- b\n", "invalid object to validate"),
    ("just text\n", "invalid object to validate"),
])
def test_validation_messages(text, detail):
    [doc] = load_text(text, "v.yaml")
    assert str(doc.error) == f'error validating "v.yaml": error validating data: {detail}; {STOP}'


def test_empty_kind_is_a_decode_error_and_reading_goes_on():
    docs = load_text("apiVersion: v1\nkind: ''\n---\napiVersion: v1\nkind: Namespace\n", "d.yaml")
    assert str(docs[0].error) == (
        "unable to decode \"d.yaml\": Object 'Kind' is missing in '{\"apiVersion\":\"v1\",\"kind\":\"\"}'")
    assert docs[0].error.reason == "decode" and docs[1].ok


def test_empty_documents_are_skipped():
    text = "---\n# only a comment\n---\n\n---\nnull\n---\napiVersion: v1\nkind: Namespace\n---\n"
    [doc] = load_text(text, "e.yaml")
    assert (doc.index, doc.line, doc.obj["kind"]) == (0, 8, "Namespace")
    assert load_text("", "e.yaml") == [] and load_text("# nothing\n", "e.yaml") == []


def test_anchors_aliases_and_merge_keys():
    text = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: &labels {app: web, tier: front}
spec:
  selector:
    matchLabels: *labels
  template:
    metadata:
      labels:
        <<: *labels
        tier: back
    spec:
      containers:
      - &c {name: a, image: nginx, env: [{name: X, value: "1"}]}
      - <<: [*c, {name: ignored, ports: [{containerPort: 80}]}]
        name: b
"""
    [d] = _ok(load_text(text, "a.yaml"))
    assert d["spec"]["selector"]["matchLabels"] == {"app": "web", "tier": "front"}
    assert d["spec"]["template"]["metadata"]["labels"] == {"app": "web", "tier": "back"}
    a, b = d["spec"]["template"]["spec"]["containers"]
    assert a == {"name": "a", "image": "nginx", "env": [{"name": "X", "value": "1"}]}
    # earlier maps in a merge list win; the mapping's own keys win over all of them
    assert b == {"name": "b", "image": "nginx", "env": [{"name": "X", "value": "1"}],
                 "ports": [{"containerPort": 80}]}
    assert a["env"] is not b["env"]  # aliases are copies, not shared objects

    [doc] = load_text("apiVersion: v1\nkind: ConfigMap\ndata: *nope\n", "x.yaml")
    assert str(doc.error) == (
        "error parsing x.yaml: error converting YAML to JSON: yaml: unknown anchor 'nope' referenced")


def test_scalars_follow_kubectl_yaml_1_1_rules():
    text = """\
apiVersion: v1
kind: ConfigMap
data:
  a: yes
  b: Off
  c: "yes"
  d: 0777
  e: 0x1F
  f: 1_000
  g: 2024-01-02
  h: 2001-12-14t21:59:43.10-05:00
  i: 1.0
  j: 1.5
  k: 123456789012345678901234567890
  l: !!str 5
  m: ~
  dot: .5
  o: 1e3
  p: !!binary aGVsbG8=
  q: 12:30
  r: y
  n: kept
  1: one
  true: t
"""
    [d] = _ok(load_text(text, "s.yaml"))
    assert d["data"] == {
        "a": True, "b": False, "c": "yes", "d": 511, "e": 31, "f": 1000,
        "g": "2024-01-02", "h": "2001-12-14t21:59:43.10-05:00", "i": 1, "j": 1.5,
        "k": 123456789012345678901234567890, "l": "5", "m": None, "dot": 0.5, "o": 1000,
        "p": "hello", "q": "12:30", "r": True, "false": "kept", "1": "one", "true": "t",
    }
    assert isinstance(d["data"]["i"], int) and isinstance(d["data"]["j"], float)


def test_nan_cannot_become_json():
    [doc] = load_text("apiVersion: v1\nkind: ConfigMap\nx: .nan\n", "n.yaml")
    assert str(doc.error) == "error parsing n.yaml: error converting YAML to JSON: json: unsupported value: NaN"


def test_invalid_document_separator():
    docs = load_text("apiVersion: v1\nkind: Namespace\n---\napiVersion: v1\nkind: Pod\n--- x\n", "s.yaml")
    assert [d.ok for d in docs] == [True, False]
    assert str(docs[1].error) == "error parsing s.yaml: invalid Yaml document separator: x"
    assert docs[1].error.line == 6


def test_list_kinds_are_flattened():
    text = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: a}
- {apiVersion: v1, kind: Secret, metadata: {name: b}}
"""
    docs = load_text(text, "l.yaml")
    assert [(d.index, d.item, d.line, d.obj["kind"]) for d in docs] == [
        (0, 0, 4, "ConfigMap"), (0, 1, 7, "Secret")]
    # typed lists: items without apiVersion and kind take them from the list
    docs = load_text("apiVersion: apps/v1\nkind: DeploymentList\nitems:\n- metadata: {name: a}\n", "d.yaml")
    assert _gvk(docs[0].obj) == "apps/v1/Deployment" and docs[0].obj["metadata"] == {"name": "a"}
    # v1 List items are validated like documents
    docs = load_text("apiVersion: v1\nkind: List\nitems:\n- kind: Pod\n- kind: Pod\n", "b.yaml")
    assert len(docs) == 1 and docs[0].item == 0 and docs[0].line == 4
    assert str(docs[0].error) == f'error validating "b.yaml": error validating data: apiVersion not set; {STOP}'
    assert load_text("apiVersion: v1\nkind: List\nitems: []\n", "e.yaml") == []


def test_json_files_and_streams(tmp_path):
    path = tmp_path / "cm.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"},
                                "data": {"on": "yes", "n": "1"}}, indent=2))
    [d] = _ok(load_manifests(path))
    assert d["data"] == {"on": "yes", "n": "1"} and d["metadata"]["name"] == "j"
    docs = load_text('{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"}}\n'
                     '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"b"}}', "s.json")
    assert [(d.index, d.line, d.obj["metadata"]["name"]) for d in _ok_docs(docs)] == [(0, 1, "a"), (1, 2, "b")]
    # `{` that is not JSON (comments, trailing commas: KYAML) is read as YAML
    docs = load_text('{\n  # comment\n  apiVersion: "v1",\n  kind: "Namespace",\n}\n', "k.yaml")
    assert _ok(docs) == [{"apiVersion": "v1", "kind": "Namespace"}]


def _ok_docs(docs):
    assert all(d.ok for d in docs)
    return docs


def test_stdin_and_missing_paths(tmp_path):
    [doc] = load_manifests("-", text="apiVersion: v1\nkind: Namespace\nmetadata: {name: s}\n")
    assert doc.source == STDIN == "STDIN"
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ManifestError) as exc:
        load_manifests(missing)
    assert str(exc.value) == f'the path "{missing}" does not exist'
    assert exc.value.reason == "path"


def test_directory_filters_extensions_and_recursion(tmp_path):
    (tmp_path / "b.yml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n")
    (tmp_path / "a.json").write_text('{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}')
    (tmp_path / "notes.txt").write_text("not a manifest: [")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: c}\n")
    names = lambda docs: [d.obj["metadata"]["name"] for d in docs]  # noqa: E731
    assert names(load_manifests(tmp_path)) == ["a", "b"]
    assert names(load_manifests(tmp_path, recursive=True)) == ["a", "b", "c"]
    # a file named explicitly is read whatever its extension
    [doc] = load_manifests(tmp_path / "notes.txt")
    assert doc.error is not None and doc.error.reason == "parse"


def test_resource_for_served_kinds():
    [doc] = load_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: w}\n", "d.yaml")
    info = resource_for(doc)
    assert (info.group, info.version, info.plural) == ("apps", "v1", "deployments")
    [doc] = load_text("apiVersion: extensions/v1beta1\nkind: Deployment\n", "old.yaml")
    with pytest.raises(ManifestError, match='^resource mapping not found for name: "" namespace: "" '
                       'from "old.yaml": no matches for kind "Deployment" in version "extensions/v1beta1"$'):
        resource_for(doc)


# Printable text only: YAML (like go-yaml) refuses raw control characters that JSON allows.
_chars = st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"))
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.text(_chars, max_size=20))
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(_chars, max_size=8), inner, max_size=4)),
    max_leaves=20,
)


@settings(max_examples=80, deadline=None)
@given(data=st.dictionaries(st.text(_chars, min_size=1, max_size=8), _values, max_size=5))
def test_json_and_yaml_flow_paths_agree(data):
    obj = {**data, "apiVersion": "v1", "kind": "ConfigMap"}
    obj.pop("items", None)
    text = json.dumps(obj, ensure_ascii=False)
    via_json = load_text(text, "p.json")
    via_yaml = load_text("---\n" + text, "p.yaml")  # forces the YAML reader
    assert [d.obj for d in via_json] == [d.obj for d in via_yaml] == [obj]
