"""Where flags may stand on a command line, and what kubectl checks before it asks the server.

Flags between and after names (``get cm -n kube-system NAME``), ``-n`` before the
command (``k8semu -n kube-system get cm``), ``get -o`` with an unknown format,
``describe`` with nothing to describe, and ``wait`` on an object that does not
exist — each line and exit code as kubectl's. The ``k`` fixture (a
:class:`conftest.Kubectl` on a copy of the prepared lab cluster) passes
``--cluster PATH`` before the command.
"""

from __future__ import annotations

import pytest

KUBE_SYSTEM_CM = ["NAME               DATA   AGE", "kube-root-ca.crt   1      30s"]
BAD_FORMAT = ('error: unable to match a printer suitable for the output format "foo", allowed formats are: '
              "custom-columns,custom-columns-file,go-template,go-template-file,json,jsonpath,"
              "jsonpath-as-json,jsonpath-file,name,template,templatefile,wide,yaml")


def _pod(k) -> str:
    return k.pods()[0]["metadata"]["name"]


# --------------------------------------------------------------------------- flags anywhere

def test_get_takes_flags_before_and_between_names(k):
    assert k("get", "cm", "-n", "kube-system", "kube-root-ca.crt") == (0, KUBE_SYSTEM_CM, [])
    assert k("get", "-o", "name", "pods", "-n", "kube-system", "NAME") == (
        1, [], ['Error from server (NotFound): pods "NAME" not found'])
    pod = _pod(k)
    assert k("get", "-o", "name", "pods", "-n", "default", pod) == (0, [f"pod/{pod}"], [])
    assert k("get", "pods", "-o", "name", pod, "web") == (
        1, [f"pod/{pod}"], ['Error from server (NotFound): pods "web" not found'])


def test_top_takes_flags_before_and_between_names(k):
    assert k("top", "pods", "-n", "kube-system", "NAME") == (
        1, [], ['Error from server (NotFound): pod "NAME" not found'])
    pod = _pod(k)
    rc, out, err = k("top", "pods", "-n", "default", pod)
    assert (rc, err, len(out)) == (0, [], 2) and out[1].startswith(f"{pod}   ")
    rc, bare, err = k("top", "--no-headers", "pods", pod)
    assert (rc, err, [line.split() for line in bare]) == (0, [], [out[1].split()])
    assert k("top", "-n", "kube-system", "pods") == (0, [], ["No resources found in kube-system namespace."])


def test_describe_and_wait_take_flags_between_names(k):
    rc, out, err = k("describe", "deployment", "-n", "default", "web")
    assert (rc, err, out[:2]) == (0, [], ["Name:                   web", "Namespace:              default"])
    assert k("wait", "deployment", "--for", "condition=Available", "web") == (
        0, ["deployment.apps/web condition met"], [])


# --------------------------------------------------------------------------- -n before the command

@pytest.mark.parametrize("flags", [["-n", "kube-system"], ["--namespace", "kube-system"],
                                   ["--namespace=kube-system"], ["-nkube-system"], ["-n=kube-system"]])
def test_namespace_before_the_command(k, flags):
    assert k(*flags, "get", "cm") == (0, KUBE_SYSTEM_CM, [])


def test_namespace_before_the_command_applies_to_nested_commands_and_yields_to_one_after(k):
    assert k("-n", "kube-system", "get", "pods") == (0, [], ["No resources found in kube-system namespace."])
    assert k("-n", "kube-system", "get", "pods", "-n", "default") == k("get", "pods")
    assert k("-n", "kube-system", "rollout", "status", "deployment/web") == (
        1, [], ['Error from server (NotFound): deployments.apps "web" not found'])
    assert k("-n", "kube-system", "describe", "deployment", "web") == (
        1, [], ['Error from server (NotFound): deployments.apps "web" not found'])


# --------------------------------------------------------------------------- get -o FORMAT

def test_get_refuses_an_unknown_output_format_before_listing(k):
    assert k("get", "pods", "-n", "kube-system", "-o", "foo") == (1, [], [BAD_FORMAT])
    assert k("get", "pods", "-o", "foo") == (1, [], [BAD_FORMAT])
    assert k("get", "pods", "-o", "foo", "-w") == (1, [], [BAD_FORMAT])
    assert k("get", "pods", "-o", "foo", "nope", "web") == (1, [], [BAD_FORMAT])
    # kubectl's type lookup comes first, and a single named object's NotFound
    assert k("get", "foos", "-o", "foo") == (1, [], ['error: the server doesn\'t have a resource type "foos"'])
    assert k("get", "pod", "nope", "-o", "foo") == (1, [], ['Error from server (NotFound): pods "nope" not found'])
    assert k("get", "pod", _pod(k), "-o", "foo") == (1, [], [BAD_FORMAT])


# --------------------------------------------------------------------------- describe without arguments

def test_describe_without_a_type_is_kubectls_error(k):
    want = (1, [], ['error: You must specify the type of resource to describe. Use "kubectl api-resources" '
                    "for a complete list of supported resources."])
    assert k("describe") == want
    assert k("describe", "-n", "kube-system") == want


# --------------------------------------------------------------------------- wait on a missing object

def test_wait_for_a_missing_object_fails_at_once(k):
    before, time = k.path.read_bytes(), k.cluster_time()
    assert k("wait", "--for=condition=Ready", "pod/nope", "--timeout=5s") == (
        1, [], ['Error from server (NotFound): pods "nope" not found'])
    assert k("wait", "--for=condition=Ready", "pod/nope", "deployment/web") == (
        1, [], ['Error from server (NotFound): pods "nope" not found'])
    # --for=delete ignores the NotFound (and a selector that matches nothing)
    assert k("wait", "--for=delete", "pod/nope", "--timeout=5s") == (0, [], [])
    assert k("wait", "--for=delete", "pods", "-l", "app=nope") == (0, [], [])
    assert k.path.read_bytes() == before and k.cluster_time() == time  # nothing ran, nothing was written
    # the objects named before it are waited for first, as kubectl visits them in turn
    assert k("wait", "--for=condition=Available", "deployment/web", "pod/nope") == (
        1, ["deployment.apps/web condition met"], ['Error from server (NotFound): pods "nope" not found'])
