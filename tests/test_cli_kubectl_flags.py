"""kubectl's flags on k8semu's commands: what the user sees, as kubectl 1.33 prints it.

Each expectation was checked side by side with the real kubectl against ``k8semu serve``
of the same cluster (the lab: three workers, ``manifests/web.yaml``, 30 s run).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import WEB

POD_A, POD_B = "web-678b6b6dc8-8c9fq", "web-678b6b6dc8-dbbxz"  # the lab's two web pods (seeded names)
SVC_ROW = "service/web   ClusterIP   10.96.97.252   <none>        80/TCP    30s"


def _file(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


DEPLOY_ONLY = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"
TWO_SERVICES = ("apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n---\n"
                "apiVersion: v1\nkind: Service\nmetadata:\n  name: kubernetes\n")


# --------------------------------------------------------------------------- get -f / -R

def test_get_f_prints_one_table_per_kind_with_kinds_when_several(k):
    assert k("get", "-f", WEB) == (0, [
        "NAME                  READY   UP-TO-DATE   AVAILABLE   AGE",
        "deployment.apps/web   2/2     2            2           30s",
        "",
        "NAME          TYPE        CLUSTER-IP     EXTERNAL-IP   PORT(S)   AGE",
        SVC_ROW], [])
    assert k("get", "-f", WEB, "-o", "name") == (0, ["deployment.apps/web", "service/web"], [])


def test_get_f_one_kind_has_no_kind_prefix_and_one_object_is_not_a_list(k, tmp_path):
    one = _file(tmp_path, "one.yaml", DEPLOY_ONLY)
    assert k("get", "-f", one) == (0, ["NAME   READY   UP-TO-DATE   AVAILABLE   AGE",
                                       "web    2/2     2            2           30s"], [])
    rc, out, _ = k("get", "-f", one, "-o", "json")
    assert rc == 0 and json.loads("\n".join(out))["kind"] == "Deployment"
    rc, out, _ = k("get", "-f", str(tmp_path), "-o", "json")  # a directory: always a List
    assert rc == 0 and json.loads("\n".join(out))["kind"] == "List"


def test_get_f_errors_are_kubectls(k, tmp_path):
    assert k("get", "-f", "/nope.yaml") == (1, [], ['error: the path "/nope.yaml" does not exist'])
    assert k("get", "-f", WEB, "deploy") == (1, [], [
        "error: when paths, URLs, or stdin is provided as input, you may not specify resource arguments as well"])
    mixed = _file(tmp_path, "mixed.yaml", DEPLOY_ONLY + "---\n" + DEPLOY_ONLY.replace(
        "name: web\n", "name: web\n  namespace: kube-system\n"))
    # found objects are printed, the NotFound after them
    assert k("get", "-f", mixed) == (1, ["NAME   READY   UP-TO-DATE   AVAILABLE   AGE",
                                         "web    2/2     2            2           30s"],
                                     ['Error from server (NotFound): deployments.apps "web" not found'])
    # one file implies one item: an error stops -o name printing anything
    assert k("get", "-f", mixed, "-o", "name") == (
        1, [], ['Error from server (NotFound): deployments.apps "web" not found'])
    in_default = _file(tmp_path, "ns.yaml", DEPLOY_ONLY.replace("name: web\n", "name: web\n  namespace: default\n"))
    assert k("get", "-f", in_default, "-n", "kube-system") == (1, [], [
        'error: the namespace from the provided object "default" does not match the namespace "kube-system". '
        "You must pass '--namespace=default' to perform this operation."])
    assert k("get", "-f", _file(tmp_path, "two.yaml", TWO_SERVICES), "-A") == (1, [], [
        'no namespace set on resource /v1, Resource=services "web"',
        'no namespace set on resource /v1, Resource=services "kubernetes"'])


def test_get_f_selector_filters_the_live_objects_and_recursive_reads_subdirectories(k, tmp_path):
    assert k("get", "-f", WEB, "-l", "app=zzz") == (0, [], ["No resources found in default namespace."])
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    (sub / "web.yaml").write_text(Path(WEB).read_text())
    assert k("get", "-f", str(tmp_path / "a"), "-o", "name") == (0, [], [])  # not -R: the top only
    assert k("get", "-f", str(tmp_path / "a"), "-R", "-o", "name") == (0, ["deployment.apps/web", "service/web"], [])


def test_sort_by_several_results_is_kubectls_error(k, tmp_path):
    two = _file(tmp_path, "two.yaml", TWO_SERVICES)
    assert k("get", "-f", two, "--sort-by=.metadata.name") == (
        1, [], ['error: couldn\'t find any field with path "{.metadata.name}" in the list of objects'])
    assert k("get", "-f", two, "-o", "name", "--sort-by=.metadata.name") == (
        0, ["service/kubernetes", "service/web"], [])


# --------------------------------------------------------------------------- get --subresource / --raw / misc

def test_get_subresource(k):
    assert k("get", "deploy", "web", "--subresource=scale") == (0, ["NAME   DESIRED   AVAILABLE   AGE", "web    2         2           30s"], [])
    assert k("get", "deploy", "web", "--subresource=scale", "-o", "name") == (0, ["scale.autoscaling/web"], [])
    rc, out, _ = k("get", "deploy", "web", "--subresource=scale", "-o", "jsonpath={.spec.replicas} {.status.selector}")
    assert (rc, out) == (0, ["2 app=web"])
    assert k("get", "deploy", "--subresource=scale") == (
        1, [], ["error: subresource cannot be used when bulk resources are specified"])
    assert k("get", "pod", POD_A, "--subresource=scale") == (
        1, [], ["Error from server (NotFound): the server could not find the requested resource"])
    assert k("get", "deploy", "web", "-A") == (
        1, [], ["error: a resource cannot be retrieved by name across all namespaces"])


def test_get_raw_prints_the_servers_answer_as_it_is(k):
    rc, out, err = k("get", "--raw", "/api/v1/namespaces/default/services/web")
    assert rc == 0 and err == [] and len(out) == 1
    assert out[0].startswith('{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"')
    assert json.loads(out[0])["spec"]["clusterIP"] == "10.96.97.252"
    assert k("get", "--raw", "/api/v1/namespaces/default/services/nope") == (
        1, [], ['Error from server (NotFound): services "nope" not found'])
    assert k("get", "--raw", "nope") == (
        1, [], ['error: --raw must be a valid URL path: parse "nope": invalid URI for request'])
    assert k("get", "--raw", "/%zz") == (
        1, [], ['error: --raw must be a valid URL path: parse "/%zz": invalid URL escape "%zz"'])
    assert k("get", "--raw", "/api", "pods") == (1, [], ["error: arguments may not be passed when --raw is specified"])
    assert k("get", "--raw", "/api", "-o", "json") == (1, [], ["error: --raw and --output are mutually exclusive"])
    assert k("get", "--raw", "/healthz") == (0, ["ok"], [])


def test_get_server_print_chunk_size_and_flag_checks(k):
    assert k("get", "deploy", "--server-print=false", "--show-labels") == (
        0, ["NAME   AGE   LABELS", "web    30s   <none>"], [])
    assert k("get", "--server-print", "deploy", "--chunk-size=1", "--no-headers")[1] == [
        "web   2/2   2     2     30s"]  # a bare bool flag takes no value
    assert k("get", "deploy", "--chunk-size=abc") == (1, [], [
        'error: invalid argument "abc" for "--chunk-size" flag: strconv.ParseInt: parsing "abc": invalid syntax',
        "See 'k8semu get --help' for usage."])
    assert k("get", "deploy", "--server-print=xx")[2][0] == (
        'error: invalid argument "xx" for "--server-print" flag: strconv.ParseBool: parsing "xx": invalid syntax')
    assert k("get", "svc", "--output-watch-events") == (
        1, [], ["error: --output-watch-events option can only be used with --watch or --watch-only"])
    assert k("get", "svc", "-o", "yaml", "--show-labels") == (
        1, [], ["error: --show-labels option cannot be used with yaml printer"])
    assert k("get", "svc", "-l", "!!") == (1, [], [
        'Error from server (BadRequest): Unable to find "/v1, Resource=services" that match label selector "!!", '
        "field selector \"\": unable to parse requirement: found '!', expected: identifier"])


# --------------------------------------------------------------------------- get -w / --watch-only / events

SLEEPER = ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: w1\nspec:\n  restartPolicy: Never\n"
           "  containers:\n  - name: c\n    image: busybox\n    command: [sleep, '5']\n")


@pytest.fixture
def sleeping(k, tmp_path):
    """The lab with pod w1 (sleep 5) just created."""
    assert k("create", "-f", _file(tmp_path, "w1.yaml", SLEEPER), "--for", "0s")[0] == 0
    return k


def test_watch_with_events_lines_every_row_up_with_the_ones_before(sleeping):
    rc, out, _ = sleeping("get", "pods", "-w", "--output-watch-events", "--for", "20s")
    assert rc == 0
    assert out[:4] == [
        "EVENT      NAME                   READY   STATUS              RESTARTS   AGE",
        "ADDED      w1                     0/1     ContainerCreating   0          0s",
        f"ADDED      {POD_A}   1/1     Running             0          30s",
        f"ADDED      {POD_B}   1/1     Running             0          30s"]
    assert out[4:] == ["MODIFIED   w1                     1/1     Running             0          3s",
                       "MODIFIED   w1                     0/1     Completed           0          8s"]


def test_watch_only_prints_the_changes_with_the_header_first(sleeping):
    # the first flush lays out the header with the first change; a longer cell widens its column
    assert sleeping("get", "pods", "--watch-only", "--for", "20s") == (0, [
        "NAME   READY   STATUS    RESTARTS   AGE",
        "w1     1/1     Running   0          3s",
        "w1     0/1     Completed   0          8s"], [])


def test_watch_events_as_json_keep_the_objects_whole(sleeping):
    rc, out, _ = sleeping("get", "pod", "w1", "--watch-only", "--output-watch-events", "-o", "json", "--for", "20s")
    events = [json.loads(line) for line in out]
    assert rc == 0 and [e["type"] for e in events] == ["MODIFIED", "MODIFIED"]
    assert list(events[0]) == ["type", "object"] and "managedFields" in events[0]["object"]["metadata"]


def test_watch_refusals(k, tmp_path):
    assert k("get", "svc,deploy", "-w") == (1, [], ["error: you may only specify a single resource type"])
    rc, out, err = k("get", "svc", "web", "kubernetes", "-w", "--for", "1s")
    assert (rc, len(out), err) == (1, 3, ["error: you may only watch a single resource or type of resource at a time"])
    rc, out, err = k("get", "-f", _file(tmp_path, "two.yaml", TWO_SERVICES), "-w", "--for", "1s")
    assert (rc, err) == (1, ["error: watch is only supported on individual resources and resource collections - "
                             "2 resources were found"])


def test_events_output_formats_and_watch(sleeping):
    assert sleeping("events", "-o", "name") == (0, [], [])  # kubectl's name printer refuses a typed list
    rc, out, _ = sleeping("events", "--for", "deploy/web", "-o", "json")
    data = json.loads("\n".join(out))
    assert rc == 0 and list(data) == ["kind", "apiVersion", "metadata", "items"] and data["metadata"] == {}
    assert list(data["items"][0])[:3] == ["kind", "apiVersion", "metadata"]
    assert "managedFields" not in data["items"][0]["metadata"]
    assert sleeping("events", "-o", "wide") == (1, [], [
        'error: unable to match a printer suitable for the output format "wide", allowed formats are: '
        "go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,name,template,templatefile,yaml"])
    # --for also selects the involved object's apiVersion, as kubectl: the kubelet's node events have none
    assert sleeping("events", "--for", "node/node-1", "-o", "jsonpath={.items[*].reason}") == (
        0, ["RegisteredNode"], [])
    rc, out, _ = sleeping("events", "-w", "--for", "pod/w1", "--watch-for", "20s")
    assert rc == 0 and out[0] == "LAST SEEN   TYPE     REASON      OBJECT   MESSAGE"
    assert [line.split()[2] for line in out[1:]] == ["Scheduled", "Pulling", "Pulled", "Created", "Started"]


def test_go_sort_orders_ties_as_kubectl_events_did():
    from k8semu.cli.gosort import go_sort

    # 51 events' timestamps in the server's order (seconds) and the order kubectl 1.33 printed them in
    times = [0] * 6 + [5] + [0] * 6 + [5] + [0] * 6 + [5] + [0] * 6 + [5] + [0, 0, 1, 1, 1, 50, 50, 51, 51, 51, 72,
                                                                          0, 0, 1, 1, 1, 0, 0, 50, 72, 0, 50, 72]
    kubectl = [26, 44, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12, 14, 15, 16, 17, 18, 19, 21, 22, 48, 23, 24, 25, 1, 0, 45,
               40, 28, 29, 39, 41, 32, 42, 43, 30, 31, 6, 20, 13, 27, 46, 34, 33, 49, 37, 36, 35, 38, 47, 50]
    order = list(range(len(times)))
    go_sort(order, lambda a, b: times[a] < times[b])
    assert order == kubectl


# --------------------------------------------------------------------------- describe

def test_describe_f_and_show_events(k, tmp_path):
    rc, out, err = k("describe", "-f", WEB, "--show-events=false")
    assert rc == 0 and err == []
    assert [l for l in out if l.startswith("Name:")] == ["Name:                   web", "Name:                     web"]
    assert not any(l.startswith("Events:") for l in out)
    rc, out, _ = k("describe", "svc", "web")
    assert out[-1] == "Events:                   <none>"
    assert k("describe", "-f", _file(tmp_path, "one.yaml", DEPLOY_ONLY), "-l", "app=zz") == (
        0, [], ["No resources found in default namespace."])  # the manifest's own labels
    assert k("describe", "-f", "/nope") == (1, [], ['error: the path "/nope" does not exist'])


# --------------------------------------------------------------------------- logs

def test_logs_by_selector_with_prefix_and_kubectls_checks(k):
    assert k("logs", "-l", "app=web", "--tail=1", "--prefix") == (0, [
        f"[pod/{POD_A}/nginx] 2025/01/01 00:00:01 [notice] 1#1: start worker process 31",
        f"[pod/{POD_B}/nginx] 2025/01/01 00:00:01 [notice] 1#1: start worker process 31"], [])
    rc, out, _ = k("logs", "-l", "app=web")
    assert rc == 0 and len(out) == 20  # ten lines a pod by default with a selector
    assert k("logs", "-l", "app=web", "--prefix", "--limit-bytes=30") == (0, [
        f"[pod/{POD_A}/nginx] /docker-entrypoint.sh: Launchi[pod/{POD_B}/nginx] /docker-entrypoint.sh: Launchi"],
        [])
    assert k("logs", "-l", "app=nope") == (0, [], ["No resources found in default namespace."])
    assert k("logs", "-l", "app=web", "-f", "--max-log-requests=1") == (1, [], [
        "error: you are attempting to follow 2 log streams, but maximum allowed concurrency is 1, "
        "use --max-log-requests to increase the limit"])
    assert k("logs", "-l", "app=web", POD_A) == (1, [], [
        "error: only a selector (-l) or a POD name is allowed", "See 'kubectl logs -h' for help and examples"])
    assert k("logs", "-l", "app=web", "-c", "nope") == (
        1, [], [f"error: container nope is not valid for pod {POD_A}"])
    assert k("logs", POD_A, "--all-containers", "-c", "nginx") == (
        1, [], ["error: --all-containers=true should not be specified with container name nginx"])
    # (kubectl's order of several logs is a Go map's; k8semu's is the one it picks pods by)
    assert k("logs", "deploy/web", "--all-pods", "--tail=1") == (0, [
        f"[pod/{POD_A}/nginx] 2025/01/01 00:00:01 [notice] 1#1: start worker process 31",
        f"[pod/{POD_B}/nginx] 2025/01/01 00:00:01 [notice] 1#1: start worker process 31"], [])


@pytest.mark.parametrize("flags, error", [
    (["--since=1h", "--since-time=2025-01-01T00:00:00Z"],
     "error: at most one of `sinceTime` or `sinceSeconds` may be specified"),
    (["--since=-1s"], "error: --since must be greater than 0"),
    (["--since-time=2025/01/01"],
     'error: parsing time "2025/01/01" as "2006-01-02T15:04:05Z07:00": cannot parse "/01/01" as "-"'),
    (["--since-time=2025-13-01T00:00:00Z"], 'error: parsing time "2025-13-01T00:00:00Z": month out of range'),
    (["--limit-bytes=-1"], "error: --limit-bytes must be greater than 0"),
    (["--tail=-5"], "error: --tail must be greater than or equal to -1"),
])
def test_logs_option_errors(k, flags, error):
    assert k("logs", "-l", "app=web", *flags) == (1, [], [error])


def test_logs_since_and_duration_flags(k):
    rc, out, _ = k("logs", POD_A, "--since-time=2025-01-01T00:00:01Z", "--timestamps")
    assert rc == 0 and out and all(l >= "2025-01-01T00:00:01" for l in out)
    assert k("logs", POD_A, "--since=5") == (1, [], [
        'error: invalid argument "5" for "--since" flag: time: missing unit in duration "5"',
        "See 'k8semu logs --help' for usage."])
    assert k("logs", POD_A, "--since=5d")[2][0] == (
        'error: invalid argument "5d" for "--since" flag: time: unknown unit "d" in duration "5d"')


# --------------------------------------------------------------------------- delete / label / annotate

def test_delete_output_name_field_selector_and_raw(k):
    assert k("delete", "svc", "web", "-o", "name", "--dry-run=server") == (0, ["service/web"], [])
    assert k("delete", "svc", "web", "-o", "yaml") == (
        1, [], ["error: unexpected -o output mode: yaml. We only support '-o name'"])
    assert k("delete", "svc", "--field-selector", "metadata.name=web", "--dry-run=server") == (
        0, ['service "web" deleted (server dry run)'], [])
    assert k("delete", "svc", "--field-selector", "metadata.name=nope") == (0, ["No resources found"], [])
    assert k("delete", "svc", "--all", "-l", "app=x") == (
        1, [], ["error: setting 'all' parameter but found a non empty selector. "])
    assert k("delete", "--raw", "/api/v1/namespaces/default/configmaps/nope") == (
        1, [], ['Error from server (NotFound): configmaps "nope" not found'])
    rc, out, _ = k("delete", "--raw", "/api/v1/namespaces/default/services/web")
    assert rc == 0 and json.loads(out[0])["metadata"]["name"] == "web"
    assert k("get", "svc", "web")[0] == 1


def test_label_list_local_output_and_messages(k, tmp_path):
    assert k("label", "pods", "--all", "--list") == (0, [
        f"Listing labels for Pod./{POD_A}:", " app=web", " pod-template-hash=678b6b6dc8",
        f"Listing labels for Pod./{POD_B}:", " app=web", " pod-template-hash=678b6b6dc8"], [])
    assert k("label", "ns", "default", "a=b", "--list") == (
        0, ["a=b", "kubernetes.io/metadata.name=default"], [])  # changed locally, not sent
    assert k("label", "ns", "default", "--list")[1] == ["kubernetes.io/metadata.name=default"]
    one = _file(tmp_path, "one.yaml", DEPLOY_ONLY)
    assert k("label", "-f", one, "--local", "a=b", "-o", "yaml") == (0, [
        "apiVersion: apps/v1", "kind: Deployment", "metadata:", "  labels:", "    a: b", "  name: web"], [])
    assert k("label", "deploy", "web", "--local", "a=b") == (
        1, [], ["error: can only use local files by -f pod.yaml or --filename=pod.json when --local=true is set"])
    assert k("label", "ns", "default", "--list", "-o", "yaml") == (
        1, [], ["error: --list and --output may not be specified together"])
    assert k("label", "svc", "web", "nonexist-") == (0, ['label "nonexist" not found.', "service/web labeled"], [])
    assert k("label", "ns", "default", "kubernetes.io/metadata.name-", "--dry-run=client") == (
        0, ["namespace/default unlabeled (dry run)"], [])
    assert k("annotate", "ns", "default", "x-") == (0, ["namespace/default annotated"], [])
    assert k("label", "svc", "--field-selector", "metadata.name=web", "tier=x", "-o", "name") == (
        0, ["service/web"], [])
    assert k("label", "svc", "--all", "-l", "a=b", "x=y") == (
        1, [], ["error: cannot set --all and --selector at the same time"])


# --------------------------------------------------------------------------- patch / scale / set image / rollout

def test_patch_local_output_and_dry_run_lines(k, tmp_path):
    one = _file(tmp_path, "one.yaml", DEPLOY_ONLY)
    assert k("patch", "-f", one, "--local", "-p", '{"metadata":{"labels":{"a":"b"}}}') == (
        0, ["deployment.apps/web patched"], [])
    assert k("patch", "-f", one, "--local", "-p", "{}", "--dry-run=server") == (
        1, [], ["error: cannot specify --local and --dry-run=server - did you mean --dry-run=client?"])
    assert k("patch", "-f", one, "--local", "-p", '{"a":1}', "--type=json") == (
        1, [], ["error: json: cannot unmarshal object into Go value of type jsonpatch.Patch"])
    # kubectl patch marks no dry run in its line; a client dry run applies the patch here
    assert k("patch", "deploy", "web", "-p", '{"spec":{"replicas":2}}', "--dry-run=client") == (
        0, ["deployment.apps/web patched (no change)"], [])
    assert k("patch", "deploy", "web", "-p", '{"spec":{"replicas":3}}', "--dry-run=server",
             "-o", "jsonpath={.spec.replicas}") == (0, ["3"], [])


def test_scale_set_image_and_rollout_print_objects(k, tmp_path):
    # scale -o prints the object as it was read, before the scale
    assert k("scale", "deploy", "web", "--replicas=3", "-o", "jsonpath={.spec.replicas}",
             "--dry-run=server") == (0, ["2"], [])
    assert k("set", "image", "deploy", "web", "nginx=x", "--local")[2][0] == (
        "error: you must specify resources by --filename when --local is set.")
    assert k("set", "image", "deploy/web", "nginx=x", "-o", "jsonpath={.spec.template.spec.containers[0].image}",
             "--dry-run=client") == (0, ["x"], [])
    assert k("rollout", "pause", "deploy/web", "-o", "jsonpath={.spec.paused}") == (0, ["true"], [])
    assert k("rollout", "history", "deploy/web", "-o", "name") == (0, ["replicaset.apps/web-678b6b6dc8"], [])


def test_create_and_replace_flags(k, tmp_path):
    rc, out, _ = k("create", "cm", "y", "--save-config", "--dry-run=client", "-o", "yaml")
    assert rc == 0 and out[:5] == [
        "apiVersion: v1", "kind: ConfigMap", "metadata:", "  annotations:",
        "    kubectl.kubernetes.io/last-applied-configuration: |"]
    assert out[5] == '      {"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"y","creationTimestamp":null}}'
    assert k("create", "-f", _file(tmp_path, "one.yaml", DEPLOY_ONLY), "-l", "app=x") == (
        1, [], ["error: no objects passed to create"])
    assert k("create", "--raw", "/api/v1/namespaces/default/configmaps", "-f", "/nope") == (
        1, [], ["error: open /nope: no such file or directory"])
    rc, svc, _ = k("get", "svc", "web", "-o", "yaml")
    manifest = _file(tmp_path, "svc.yaml", "\n".join(svc) + "\n")
    assert k("replace", "-f", manifest, "--subresource=scale", "--dry-run=server") == (1, [], [
        f'Error from server (NotFound): error when replacing "{manifest}": the server could not find the '
        "requested resource"])
    assert k("replace", "-f", manifest, "--cascade=foo") == (
        1, [], ['error: invalid cascade value (foo). Must be "background", "foreground", or "orphan"'])


# --------------------------------------------------------------------------- wait / top / drain

def test_wait_selection_and_output(k, tmp_path):
    assert k("wait", "deploy", "--for=condition=Available", "--timeout=1s") == (
        1, [], ["error: resource(s) were provided, but no name was specified"])
    assert k("wait", "deploy", "-A", "--all", "--for=condition=Available", "--timeout=1s", "-o", "name") == (
        0, ["deployment.apps/web"], [])
    assert k("wait", "-f", _file(tmp_path, "one.yaml", DEPLOY_ONLY), "--for=condition=Available",
             "--timeout=1s") == (0, ["deployment.apps/web condition met"], [])
    assert k("wait", "deploy", "--field-selector", "metadata.name=nope", "--for=condition=Available",
             "--timeout=1s") == (1, [], ["error: no matching resources found"])


def test_top_containers_sum_and_capacity(k):
    assert k("top", "pods", "--containers", "--sum", "-A") == (0, [
        "NAMESPACE   POD                    NAME    CPU(cores)   MEMORY(bytes)   ",
        f"default     {POD_A}   nginx   1m           4Mi             ",
        f"default     {POD_B}   nginx   1m           4Mi             ",
        "                                           ________     ________        ",
        "                                           2m           8Mi             "], [])
    rc, out, _ = k("top", "nodes", "--show-capacity", "--use-protocol-buffers=false")
    assert rc == 0 and out[0].split() == ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]
    assert k("top", "pods", "--field-selector", f"metadata.name={POD_B}", "--no-headers") == (
        0, [f"{POD_B}   1m    4Mi   "], [])
    # metrics-server takes metadata.name/namespace only: kubectl 1.33 shows its 400
    assert k("top", "pods", "--field-selector", "spec.nodeName=node-1", "--no-headers") == (1, [], [
        'Error from server (BadRequest): "spec.nodeName" is not a known field selector: only '
        '"metadata.name", "metadata.namespace"'])


def test_drain_without_eviction_deletes_the_pods(k):
    assert k("drain", "node-2", "--disable-eviction", "--ignore-daemonsets", "--chunk-size=10") == (
        0, ["node/node-2 cordoned", f"pod/{POD_A} deleted", "node/node-2 drained"], [])
