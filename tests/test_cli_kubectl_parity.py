"""What a user sees from k8semu's CLI where kubectl 1.33 has the same command, byte for byte.

Each expectation was taken from the real kubectl 1.33 run against ``k8semu serve``
on the same cluster: ``describe service`` (ports, EndpointSlice endpoints),
``describe cronjob`` (no ``Time Zone:`` line), ``describe node`` (``Kube-Proxy
Version:``), ``get -L a,b``, ``-o go-template…``, the JSONPath errors,
``logs``/``scale``/``patch`` errors and the order of ``get all``.
"""

from __future__ import annotations

import contextlib
import shutil

import pytest

from conftest import Kubectl
from k8semu.cli.gotemplate import TemplateExecError, TemplateParseError, go_sprintf, parse_template
from k8semu.cli.main import main
from k8semu.api.gofmt import go_float, go_sharp_v
from k8semu.api.jsonpath import jsonpath_text, parse_jsonpath

EXTRAS = """\
apiVersion: v1
kind: Service
metadata: {name: plain}
spec:
  selector: {app: web}
  ports: [{port: 8080, targetPort: 80}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "0 * * * *"
  timeZone: Etc/UTC
  suspend: true
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: c, image: busybox, command: [sh, -c, echo hi]}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox, command: [sh, -c, echo done]}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: c, image: busybox, command: [sleep, infinity]}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: c, image: busybox, command: [sleep, infinity]}]
---
apiVersion: v1
kind: ReplicationController
metadata: {name: rc1}
spec:
  replicas: 1
  selector: {app: rc1}
  template:
    metadata: {labels: {app: rc1}}
    spec:
      containers: [{name: c, image: busybox, command: [sleep, infinity]}]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 4
"""


@pytest.fixture(scope="module")
def rich(base, tmp_path_factory):
    """The lab cluster plus one object of each kind ``get all`` lists (applied once per module)."""
    d = tmp_path_factory.mktemp("rich")
    path = d / "cluster.log"
    shutil.copy(base, path)
    (d / "extras.yaml").write_text(EXTRAS)
    with contextlib.redirect_stdout(None):
        assert main(["--cluster", str(path), "apply", "-f", str(d / "extras.yaml"), "--for", "20s", "-q"]) == 0
    return path


@pytest.fixture
def kr(rich, tmp_path, capsys):
    path = tmp_path / "cluster.log"
    shutil.copy(rich, path)
    return Kubectl(path, capsys)


def _slice_addresses(k: Kubectl, service: str) -> list[str]:
    eps = [e for e in k.objects("endpointslices")
           if e["metadata"]["labels"].get("kubernetes.io/service-name") == service]
    return [e["addresses"][0] for s in eps for e in s.get("endpoints") or []]


# ----------------------------------------------------------------------------- describe

def test_describe_service_ports_named_and_unset_with_endpoint_slice_endpoints(kr):
    """kubectl: ``Port:  http  80/TCP`` / ``Port:  <unset>  8080/TCP``, ``TargetPort:`` as given,
    ``Endpoints:`` the ready endpoints of the Service's EndpointSlices, in the slice's order."""
    rc, out, err = kr("describe", "svc", "plain")
    ips = _slice_addresses(kr, "plain")
    assert len(ips) == 2
    assert rc == 0 and err == []
    assert out[out.index("Selector:                 app=web"):] == [
        "Selector:                 app=web",
        "Type:                     ClusterIP",
        "IP Family Policy:         SingleStack",
        "IP Families:              IPv4",
        f"IP:                       {out[9].split()[-1]}",
        f"IPs:                      {out[9].split()[-1]}",
        "Port:                     <unset>  8080/TCP",
        "TargetPort:               80/TCP",
        f"Endpoints:                {ips[0]}:80,{ips[1]}:80",
        "Session Affinity:         None",
        "Internal Traffic Policy:  Cluster",
        "Events:                   <none>",
    ]
    _, web, _ = kr("describe", "svc", "web")
    assert "Port:                     http  80/TCP" in web
    assert "TargetPort:               http/TCP" in web
    assert f"Endpoints:                {ips[0]}:80,{ips[1]}:80" in web


def test_describe_cronjob_prints_no_time_zone_line(kr):
    """kubectl 1.33's CronJobDescriber has no ``Time Zone:`` line, even with ``spec.timeZone``."""
    _, out, _ = kr("describe", "cronjob", "tick")
    assert not any(line.startswith("Time Zone") for line in out)
    assert out[4:10] == [
        "Schedule:                      0 * * * *",
        "Concurrency Policy:            Allow",
        "Suspend:                       True",
        "Successful Job History Limit:  3",
        "Failed Job History Limit:      1",
        "Starting Deadline Seconds:     <unset>",
    ]


def test_describe_node_system_info_ends_with_kube_proxy_version(k):
    _, out, _ = k("describe", "node", "node-1")
    i = out.index("System Info:")
    titles = [line.split(":")[0].strip() for line in out[i + 1:i + 11]]
    assert titles == ["Machine ID", "System UUID", "Boot ID", "Kernel Version", "OS Image", "Operating System",
                      "Architecture", "Container Runtime Version", "Kubelet Version", "Kube-Proxy Version"]
    assert out[i + 10] == "  Kube-Proxy Version:         "  # empty, padded, as kubectl prints it
    assert out[i + 11].startswith("PodCIDR:")


# ----------------------------------------------------------------------------- get

def test_label_columns_comma_separated_or_repeated(kr):
    rc, joined, _ = kr("get", "svc", "-L", "app,kubernetes.io/name")
    _, repeated, _ = kr("get", "svc", "-L", "app", "-L", "kubernetes.io/name")
    assert rc == 0 and joined == repeated
    assert joined[0].split() == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "APP", "NAME"]
    assert joined[0].endswith("AGE   APP   NAME")


def test_get_all_lists_kinds_in_the_api_servers_discovery_order(kr):
    _, out, _ = kr("get", "all", "-o", "name")
    kinds = list(dict.fromkeys(line.split("/")[0] for line in out))
    assert kinds == ["pod", "replicationcontroller", "service", "daemonset.apps", "deployment.apps",
                     "replicaset.apps", "statefulset.apps", "horizontalpodautoscaler.autoscaling",
                     "cronjob.batch", "job.batch"]


def test_go_template_outputs(k, tmp_path):
    names = sorted(p["metadata"]["name"] for p in k.pods())
    rc, out, err = k("get", "pods", "-o", 'go-template={{range .items}}{{.metadata.name}} '
                     '{{index .metadata.labels "app"}}{{"\\n"}}{{end}}')
    assert (rc, out, err) == (0, [f"{n} web" for n in names], [])
    assert k("get", "deploy", "web", "-o", "go-template={{.metadata.name}}") == (0, ["web"], [])
    assert k("get", "deploy", "-o", 'go-template={{len .items}} {{printf "%s-%d" .kind .apiVersion}}') == (
        0, ["1 List-%!d(string=v1)"], [])
    assert k("get", "deploy", "web", "-o", "go-template={{if .spec.paused}}paused{{else}}{{.spec.replicas}}"
             "{{end}} {{.spec.nosuch}} {{.spec.selector}}") == (0, ["2 <no value> map[matchLabels:map[app:web]]"], [])
    assert k("get", "deploy", "-o", "go-template={{- range $i, $d := .items -}} {{ $i }}={{ $d.metadata.name }} "
             "{{- end }}|{{$x := .kind}}{{$x}}") == (0, ["0=web|List"], [])
    f = tmp_path / "t.tmpl"
    f.write_text("{{range .items}}{{.metadata.name}}{{end}}\n")
    assert k("get", "deploy", f"-o=go-template-file={f}") == (0, ["web"], [])
    assert k("get", "deploy", "--template={{.kind}}") == (0, ["List"], [])


def test_go_template_errors(k):
    assert k("get", "deploy", "-o", "go-template={{.x") == (
        1, [], ["error: error parsing template {{.x, template: output:1: unclosed action"])
    assert k("get", "deploy", "-o", "go-template={{nosuch .x}}")[2] == [
        'error: error parsing template {{nosuch .x}}, template: output:1: function "nosuch" not defined']
    assert k("get", "deploy", "-o", "go-template")[2] == ["error: template format specified but no template given"]
    assert k("get", "deploy", "-o", "go-template-file=/nonexistent")[2] == [
        "error: error reading --template /nonexistent, open /nonexistent: no such file or directory"]
    rc, out, err = k("get", "deploy", "-o", "go-template=A{{index .items 5}}")
    msg = ('template: output:1:3: executing "output" at <index .items 5>: error calling index: '
           "index out of range: 5")
    assert rc == 1 and err == [f'error: error executing template "A{{{{index .items 5}}}}": {msg}']
    # what was written, then kubectl's debugging text on stdout
    assert out[:4] == [f"AError executing template: {msg}. Printing more information for debugging the template:",
                       "\ttemplate was:", "\t\tA{{index .items 5}}", "\traw data was:"]
    assert out[4].startswith('\t\t{"apiVersion":"v1","items":[{"apiVersion":"apps/v1","kind":"Deployment",')
    assert out[5:7] == ["\tobject given to template engine was:", out[6]] and out[6].startswith(
        "\t\tmap[apiVersion:v1 items:[map[apiVersion:apps/v1 kind:Deployment metadata:map[")
    assert out[-1] == ""


def test_jsonpath_errors(k):
    assert k("get", "deploy", "-o", "jsonpath={.items[}") == (
        1, [], ["error: error parsing jsonpath {.items[}, unterminated array"])
    assert k("get", "deploy", "-o", "jsonpath={.items[0].metadata.name")[2] == [
        "error: error parsing jsonpath {.items[0].metadata.name, unclosed action"]
    assert k("get", "deploy", "-o", 'jsonpath={.items[0]["a"]}')[2] == [
        'error: error parsing jsonpath {.items[0]["a"]}, invalid array index "a"']
    assert k("get", "deploy", "-o", "jsonpath={.nosuch}") == (0, [], [])  # missing keys print nothing
    rc, out, err = k("get", "deploy", "web", "-o", "jsonpath={.nosuch}", "--allow-missing-template-keys=false")
    assert rc == 1 and out == []
    assert err[:4] == [
        'error: error executing jsonpath "{.nosuch}": Error executing template: nosuch is not found. '
        "Printing more information for debugging the template:",
        "\ttemplate was:", "\t\t{.nosuch}", "\tobject given to jsonpath engine was:"]
    assert err[4].startswith('\t\tmap[string]interface {}{"apiVersion":"apps/v1", "kind":"Deployment", '
                             '"metadata":map[string]interface {}{"annotations":')
    assert err[5:] == ["", ""]
    assert k("get", "deploy", "-o", "jsonpath={.items[5]}")[2][0] == (
        'error: error executing jsonpath "{.items[5]}": Error executing template: array index out of bounds: '
        "index 5, length 1. Printing more information for debugging the template:")
    # templates see managedFields (only -o yaml|json leave them out)
    assert k("get", "deploy", "web", "-o", "jsonpath={.metadata.managedFields[0].manager}") == (
        0, ["kube-controller-manager"], [])


# ----------------------------------------------------------------------------- errors

def test_logs_scale_patch_errors(k):
    assert k("logs", "nosuch") == (
        1, [], ['error: error from server (NotFound): pods "nosuch" not found in namespace "default"'])
    assert k("logs", "deployment/nosuch")[2] == [
        'error: error from server (NotFound): deployments.apps "nosuch" not found in namespace "default"']
    assert k("scale", "deployment", "web") == (1, [], ['error: required flag(s) "replicas" not set'])
    assert k("scale", "deployment", "a", "b", "--replicas=2") == (1, [], [
        'error: no objects passed to scale [deployments.apps "a" not found, deployments.apps "b" not found]'])
    assert k("patch", "deployment", "web", "-p", "{bad") == (
        1, [], ["Error from server (BadRequest): invalid character 'b' looking for beginning of object key string"])
    assert k("patch", "deployment", "web", "--type=merge", "-p", '{"a":1 x}')[2] == [
        "Error from server (BadRequest): error decoding patch: invalid character 'x' after object key:value pair"]
    assert k("patch", "deployment", "nosuch", "-p", "{bad")[2] == [
        'Error from server (NotFound): deployments.apps "nosuch" not found']


# ----------------------------------------------------------------------------- the engines

DATA = {"kind": "List", "items": [{"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"n": 3}},
                                  {"metadata": {"name": "b"}, "spec": {"n": 1048576, "f": 0.5, "z": None}}]}


@pytest.mark.parametrize("template, text", [
    ("{{range .items}}{{.metadata.name}},{{end}}", "a,b,"),
    ("{{range .items}}{{.spec.n}} {{end}}", "3 1048576 "),
    ("{{(index .items 1).spec.f}} {{(index .items 1).spec.z}} {{.nosuch}}", "0.5 <no value> <no value>"),
    ('{{range .items}}{{with .metadata.labels}}{{.x}}{{else}}-{{end}}{{end}}', "1-"),
    ("{{range .items}}{{if eq .spec.n 3}}three{{else if gt .spec.n 3}}more{{end}}{{end}}", "threemore"),
    ("{{range $i, $e := .items}}{{if $i}},{{end}}{{$e.metadata.name}}{{end}}", "a,b"),
    ("a  {{- /* c */ -}}  b", "ab"),
    ('{{define "n"}}<{{.}}>{{end}}{{template "n" .kind}}', "<List>"),
    ("{{range .items}}{{.metadata.name}}{{break}}{{end}}", "a"),
    ('{{exists . "items" 1 "spec"}} {{base64decode "aGk="}} {{len .kind}}', "true hi 4"),
    ("{{.items | len}}", "2"),
])
def test_go_template_evaluator(template, text):
    assert parse_template(template).render(DATA) == text


@pytest.mark.parametrize("template, message", [
    ("{{end}}", "template: output:1: unexpected {{end}}"),
    ("{{range .items}}", "template: output:1: unexpected EOF"),
    ("{{$x}}", 'template: output:1: undefined variable "$x"'),
    ("{{.kind)}}", "template: output:1: unexpected right paren"),
    ('{{"abc}}', "template: output:1: unterminated quoted string"),
])
def test_go_template_parse_errors(template, message):
    with pytest.raises(TemplateParseError) as e:
        parse_template(template)
    assert str(e.value) == message


@pytest.mark.parametrize("template, message", [
    ("{{.kind.x}}", 'template: output:1:7: executing "output" at <.kind.x>: can\'t evaluate field x in type '
                    "interface {}"),
    ("{{eq .kind 1}}", 'template: output:1:2: executing "output" at <eq .kind 1>: error calling eq: '
                       "incompatible types for comparison"),
    ("{{len 1 2}}", 'template: output:1:2: executing "output" at <len>: wrong number of args for len: want 1 got 2'),
    ("{{printf 3}}", 'template: output:1:9: executing "output" at <3>: expected string; found 3'),
    ("{{range .kind}}{{end}}", 'template: output:1:8: executing "output" at <.kind>: range can\'t iterate over List'),
])
def test_go_template_exec_errors(template, message):
    with pytest.raises(TemplateExecError) as e:
        parse_template(template).render(DATA)
    assert str(e.value) == message


def test_go_formatting():
    assert [go_float(v) for v in (2.0, 0.5, 1e6, 1234567.0, 123456.5, 1e-05, 0.0001)] == [
        "2", "0.5", "1e+06", "1.234567e+06", "123456.5", "1e-05", "0.0001"]
    assert go_sprintf("%5d|%-5s|%05.1f|%x|%q|%v|%d", 3, "ab", 3.14159, 255, 'a"b', [1, "x"], "s") == (
        '    3|ab   |003.1|ff|"a\\"b"|[1 x]|%!d(string=s)')
    assert go_sprintf("%s %s", "a") == "a %!s(MISSING)"
    assert go_sharp_v({"b": [1, None, True], "a": "x\n"}) == (
        'map[string]interface {}{"a":"x\\n", "b":[]interface {}{1, interface {}(nil), true}}')


def test_jsonpath_engine_is_client_gos():
    obj = {"items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]}
    assert jsonpath_text("{range .items[*]}[{.metadata.name}]{end}{.items[0].metadata.name}", obj) == "[a][b]a"
    # no {end}: the nodes run per item, then once more on what the range started from
    assert jsonpath_text("{range .items[*]}[{.metadata.name}]", obj) == "[a][b][]"
    assert jsonpath_text("{range .items[*]}{range .x}{end}{.metadata.name}{end}", obj) == "ab"
    assert jsonpath_text("{.items[*].metadata}", obj) == '{"name":"a"} {"name":"b"}'
    with pytest.raises(ValueError, match="^array index out of bounds: index 2, length 2$"):
        jsonpath_text("{.items[0:3]}", obj)
    with pytest.raises(ValueError, match="^unrecognized identifier foo$"):
        jsonpath_text("{foo}", obj)
    with pytest.raises(ValueError, match="^unrecognized character in action: U\\+0023 '#'$"):
        parse_jsonpath("{#}")
