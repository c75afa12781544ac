"""What a fresh user's pass over the CLI found (each checked against kubectl 1.33 on ``k8semu serve``):
``patch/label --local -f`` on a custom resource (kubectl resolves its kind through the server's
discovery even with ``--local``), ``wait --for=create`` and ``wait`` reporting every object that
timed out, and ``kubeconfig user --validity-period`` shorter than a day."""

from __future__ import annotations

import base64

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {replicas: {type: integer}}}
"""
WIDGET = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {replicas: 1}\n"


def test_local_patch_and_label_of_a_custom_resource(k, tmp_path):
    crd, widget = tmp_path / "crd.yaml", tmp_path / "w.yaml"
    crd.write_text(CRD)
    widget.write_text(WIDGET)
    assert k("apply", "-f", str(crd))[0] == 0
    rc, out, err = k("patch", "--local", "-f", str(widget), "--type=merge", "-p", '{"spec":{"replicas":5}}', "-o", "yaml")
    assert (rc, err) == (0, [])
    assert out == ["apiVersion: example.com/v1", "kind: Widget", "metadata:", "  name: w1", "spec:", "  replicas: 5"]
    assert k("label", "--local", "-f", str(widget), "team=a", "-o", "name") == (0, ["widget.example.com/w1"], [])
    assert k("get", "widgets")[2] == ["No resources found in default namespace."]  # --local wrote nothing


def test_wait_for_create_and_every_timed_out_object(k):
    assert k("wait", "--for=create", "deployment/web", "--timeout=2s") == (
        0, ["deployment.apps/web condition met"], [])
    assert k("wait", "--for=create", "pod/not-yet", "--timeout=2s") == (
        1, [], ["error: timed out waiting for the condition"])
    rc, out, err = k("wait", "--for=condition=Ready=false", "pods", "-l", "app=web", "--timeout=1s")
    pods = sorted(p["metadata"]["name"] for p in k.objects("pods") if p["metadata"]["labels"].get("app") == "web")
    assert rc == 1 and len(pods) == 2
    assert err == [f"timed out waiting for the condition on pods/{name}" for name in pods]


def test_kubeconfig_user_accepts_a_validity_period_under_a_day(k, tmp_path):
    from cryptography import x509

    rc, out, err = k("kubeconfig", "user", "--client-name", "ci-bot", "--org", "ci", "--validity-period", "2h")
    assert (rc, err) == (0, [])
    data = next(line.split(": ", 1)[1] for line in out if "client-certificate-data:" in line)
    cert = x509.load_pem_x509_certificate(base64.b64decode(data))
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert lifetime.total_seconds() == 2 * 3600 + 300  # valid from 5 minutes back (clock skew), for 2h
    assert cert.subject.rfc4514_string() == "CN=ci-bot,O=ci"
    assert k("kubeconfig", "user", "--client-name", "x", "--validity-period", "0s") == (
        1, [], ["error: --validity-period must be positive"])


def test_endpoints_warn_as_a_v1_33_server_does(k):
    # kube-apiserver 1.33 deprecates v1 Endpoints: every request for them carries this Warning
    rc, out, err = k("get", "endpoints")
    assert rc == 0 and out[0].split() == ["NAME", "ENDPOINTS", "AGE"]
    assert err == ["Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"]


def test_get_scale_subresource_prints_upstreams_scale_columns(k):
    assert k("get", "deployment", "web", "--subresource=scale") == (
        0, ["NAME   DESIRED   AVAILABLE   AGE", "web    2         2           30s"], [])
