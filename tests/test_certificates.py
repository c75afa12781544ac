"""certificates.k8s.io/v1 CertificateSigningRequests: the API (user info filled on create,
validation, the main / status / approval update paths, approve authorization), the csrsigning and
csrcleaner controllers in virtual time, the table, ``k8semu certificate approve|deny``, and one
end-to-end run with the real kubectl against ``k8semu serve``."""

from __future__ import annotations

import base64
import datetime
import subprocess
import time

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from k8semu.api import errors
from k8semu.api.apiserver import RequestContext
from k8semu.api.auth import user
from k8semu.api.tables import render_table, table_for
from k8semu.sim.cluster import Cluster
from k8semu.sim.components import default_factories
from k8semu.sim.runtime import run_cluster

CSR = "certificatesigningrequests.certificates.k8s.io"
CLIENT = "kubernetes.io/kube-apiserver-client"
JANE = RequestContext(user("jane", "dev"))


def _key(n: int = 1) -> ec.EllipticCurvePrivateKey:
    return ec.derive_private_key(1000 + n, ec.SECP256R1())


def request_pem(cn: str = "jane", orgs: tuple[str, ...] = ("dev",), key: ec.EllipticCurvePrivateKey | None = None) -> bytes:
    names = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    names.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
    req = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(names)).sign(
        key or _key(), hashes.SHA256(), ecdsa_deterministic=True)
    return req.public_bytes(serialization.Encoding.PEM)


def csr(name: str = "jane", pem: bytes | None = None, signer: str = CLIENT, usages=("client auth",), **spec) -> dict:
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
            "spec": {"request": base64.b64encode(pem or request_pem()).decode(), "signerName": signer,
                     "usages": list(usages), **spec}}


def approved(obj: dict, type_: str = "Approved") -> dict:
    return {**obj, "status": {"conditions": [
        {"type": type_, "status": "True", "reason": "KubectlApprove", "message": "ok"}]}}


def grant_jane(api, *rules) -> None:
    """A ClusterRole with ``rules`` bound to user jane."""
    api.create("clusterroles", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                "metadata": {"name": "csr-jane"}, "rules": list(rules)})
    api.create("clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "csr-jane"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "csr-jane"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "jane"}]})


CSR_RW = {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests",
                                                              "certificatesigningrequests/approval"],
          "verbs": ["create", "get", "list", "watch", "update"]}


def table(api, at: datetime.datetime) -> list[str]:
    """``kubectl get csr`` at ``at``."""
    return render_table(table_for(api.list(CSR)["items"], "CertificateSigningRequest", at)).splitlines()


def certificate_of(obj: dict) -> x509.Certificate:
    return x509.load_pem_x509_certificate(base64.b64decode(obj["status"]["certificate"]))


# --- the API --------------------------------------------------------------------------------------------

def test_create_fills_the_requesting_user_and_resets_status():
    api = Cluster.create().api
    grant_jane(api, CSR_RW)
    body = csr(username="mallory", groups=["system:masters"], uid="x")
    body["status"] = {"conditions": [{"type": "Approved", "status": "True"}]}
    out = api.create(CSR, body, ctx=JANE)
    assert out["spec"]["username"] == "jane"
    assert out["spec"]["groups"] == ["dev", "system:authenticated"]
    assert "uid" not in out["spec"] and "extra" not in out["spec"]
    assert out["status"] == {}  # no pre-approved requests
    assert api.get("csr", "jane")["spec"]["username"] == "jane"  # short name


def test_invalid_requests_are_422_with_upstreams_field_paths():
    api = Cluster.create().api
    with pytest.raises(errors.Invalid) as e:
        api.create(CSR, csr("bad", pem=b"hello", usages=("client auth", "nope", "client auth"), signer="example",
                            expirationSeconds=60))
    causes = [(c["field"], c["reason"]) for c in e.value.status()["details"]["causes"]]
    assert causes == [("spec.request", "FieldValueInvalid"), ("spec.usages[1]", "FieldValueNotSupported"),
                      ("spec.usages[2]", "FieldValueDuplicate"), ("spec.signerName", "FieldValueInvalid"),
                      ("spec.expirationSeconds", "FieldValueInvalid")]
    msg = e.value.message
    assert msg.startswith('CertificateSigningRequest.certificates.k8s.io "bad" is invalid: [spec.request: '
                          'Invalid value: []byte{0x68, 0x65, 0x6c, 0x6c, 0x6f}: PEM block type must be CERTIFICATE REQUEST')
    assert ("spec.signerName: Invalid value: \"example\": must be a fully qualified domain and path of the form "
            "'example.com/signer-name'") in msg
    assert "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 600 seconds (10 minutes)" in msg
    # a certificate that is no PEM request at all, missing usages and signer
    with pytest.raises(errors.Invalid) as e:
        api.create(CSR, {**csr("bad2"), "spec": {"request": base64.b64encode(
            b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n").decode()}})
    assert [c["field"] for c in e.value.status()["details"]["causes"]] == [
        "spec.request", "spec.usages", "spec.signerName"]
    with pytest.raises(errors.Invalid, match="the legacy signerName is not allowed via this API version"):
        api.create(CSR, csr("legacy", signer="kubernetes.io/legacy-unknown"))
    # the subject restriction admission plugin
    with pytest.raises(errors.Forbidden, match="use of kubernetes.io/kube-apiserver-client signer with "
                                               "system:masters group is not allowed"):
        api.create(CSR, csr("root", pem=request_pem("root", ("system:masters",))))


def test_update_paths_main_status_and_approval():
    api = Cluster.create().api
    made = api.create(CSR, csr())
    # the main resource keeps spec and status: approving there does nothing (a no-op, nothing written)
    same = api.update(CSR, approved(made))
    assert same["status"] == {} and same["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]
    # /status may not add an approval condition
    with pytest.raises(errors.Invalid, match='updates may not add a condition of type "Approved"'):
        api.update(CSR, approved(made), subresource="status")
    # /approval: conditions only, timestamps filled from the virtual clock, status defaulted to True
    body = approved(made)
    del body["status"]["conditions"][0]["status"]
    body["spec"] = {**body["spec"], "usages": ["server auth"]}
    out = api.update(CSR, body, subresource="approval")
    cond = out["status"]["conditions"][0]
    assert cond["status"] == "True" and cond["lastUpdateTime"] == cond["lastTransitionTime"] == api.timestamp()
    assert out["spec"]["usages"] == ["client auth"]
    # not both Approved and Denied, and no removing a condition
    both = {**out, "status": {"conditions": [*out["status"]["conditions"], {"type": "Denied", "status": "True"}]}}
    with pytest.raises(errors.Invalid, match="Approved and Denied conditions are mutually exclusive"):
        api.update(CSR, both, subresource="approval")
    with pytest.raises(errors.Invalid, match='updates may not remove a condition of type "Approved"'):
        api.update(CSR, {**out, "status": {}}, subresource="approval")
    # /status: the certificate must be PEM certificates
    with pytest.raises(errors.Invalid) as e:
        api.update(CSR, {**out, "status": {**out["status"], "certificate": base64.b64encode(b"junk").decode()}},
                   subresource="status")
    assert e.value.message.endswith(
        'status.certificate: Invalid value: "<certificate data>": must contain at least one CERTIFICATE PEM block')


def test_approving_needs_approve_on_the_signer():
    api = Cluster.create().api
    grant_jane(api, CSR_RW)
    made = api.create(CSR, csr(), ctx=JANE)
    with pytest.raises(errors.Forbidden) as e:
        api.update(CSR, approved(made), subresource="approval", ctx=JANE)
    assert e.value.message == ('certificatesigningrequests.certificates.k8s.io "jane" is forbidden: user not '
                               'permitted to approve requests with signerName "kubernetes.io/kube-apiserver-client"')
    # a role with approve on the signers named "<domain>/*" grants it
    api.create("clusterroles", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                "metadata": {"name": "wild"}, "rules": [{
                                    "apiGroups": ["certificates.k8s.io"], "resources": ["signers"],
                                    "resourceNames": ["kubernetes.io/*"], "verbs": ["approve"]}]})
    assert api.admission.plugins  # (the CSR plugin sits in the chain)
    from k8semu.api.admission import CertificateSigningRequestAdmission

    plugin = next(p for p in api.admission.plugins if isinstance(p, CertificateSigningRequestAdmission))
    assert not plugin.authorized_for_signer(JANE.user, "approve", CLIENT)
    api.create("clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "wild"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "wild"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "jane"}]})
    assert plugin.authorized_for_signer(JANE.user, "approve", CLIENT)
    assert not plugin.authorized_for_signer(JANE.user, "approve", "example.com/x")
    api.delete("clusterrolebindings", "wild")
    # upstream's approver role (rbac.certificate_policy) grants it by the signer's own name
    from k8semu.api.rbac import certificate_policy

    for obj in certificate_policy():
        if obj["kind"] == "ClusterRole":
            api.create("clusterroles", obj)
    api.create("clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "approver"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "system:certificates.k8s.io:kube-apiserver-client-approver"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "jane"}]})
    out = api.update(CSR, approved(made), subresource="approval", ctx=JANE)
    assert out["status"]["conditions"][0]["type"] == "Approved"


def test_table_columns_and_conditions():
    api = Cluster.create().api
    made = api.create(CSR, csr(expirationSeconds=3600))
    api.create(CSR, csr("other", signer="example.com/mine"))
    lines = table(api, api.epoch + datetime.timedelta(seconds=api.now + 90))
    assert lines == [
        "NAME    AGE   SIGNERNAME                            REQUESTOR          REQUESTEDDURATION   CONDITION",
        "jane    90s   kubernetes.io/kube-apiserver-client   kubernetes-admin   60m                 Pending",
        "other   90s   example.com/mine                      kubernetes-admin   <none>              Pending",
    ]
    api.update(CSR, approved(made, "Denied"), subresource="approval")
    row = table(api, api.epoch)[1].split()
    assert row[-1] == "Denied"


# --- the controllers ------------------------------------------------------------------------------------

def test_signer_issues_a_certificate_signed_by_the_cluster_ca(tmp_path):
    cluster = Cluster.create(path=tmp_path / "cluster.log")
    api = cluster.api
    key = _key(7)

    async def body(rt):
        api.create(CSR, csr(pem=request_pem(key=key), expirationSeconds=86400,
                            usages=("client auth", "digital signature")))
        api.create(CSR, csr("denied"))
        api.create(CSR, csr("unknown", signer="example.com/mine"))
        api.create(CSR, csr("server", usages=("server auth",)))
        assert await rt.settle()
        for name, verdict in (("jane", "Approved"), ("denied", "Denied"), ("unknown", "Approved"),
                              ("server", "Approved")):
            api.update(CSR, approved(api.get(CSR, name), verdict), subresource="approval")
        assert await rt.settle()

    run_cluster(cluster, body, default_factories(cluster))
    jane = api.get(CSR, "jane")
    cert = certificate_of(jane)
    assert cert.subject.rfc4514_string() == "CN=jane,O=dev"
    assert cert.public_key().public_numbers() == key.public_key().public_numbers()
    ca = x509.load_pem_x509_certificate((tmp_path / "pki" / "ca.crt").read_bytes())
    cert.verify_directly_issued_by(ca)
    approved_at = datetime.datetime.fromisoformat(jane["status"]["conditions"][0]["lastUpdateTime"])
    # backdated 5 minutes (a day is longer than 8 h), valid for the day asked
    assert cert.not_valid_before_utc == approved_at - datetime.timedelta(minutes=5)
    assert cert.not_valid_after_utc - cert.not_valid_before_utc == datetime.timedelta(days=1)
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    assert cert.extensions.get_extension_for_class(x509.KeyUsage).value.digital_signature
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert [c["type"] for c in jane["status"]["conditions"]] == ["Approved"]  # no condition on issue
    assert "certificate" not in api.get(CSR, "denied")["status"]
    assert "certificate" not in api.get(CSR, "unknown")["status"]  # stays Approved, unsigned
    server = api.get(CSR, "server")["status"]
    assert "certificate" not in server
    assert server["conditions"][1] == {
        "type": "Failed", "status": "True", "reason": "SignerValidationFailure",
        "message": "invalid usage for client certificate: server auth",
        "lastUpdateTime": server["conditions"][1]["lastUpdateTime"],
        "lastTransitionTime": server["conditions"][1]["lastTransitionTime"]}
    lines = table(api, api.epoch + datetime.timedelta(seconds=api.now))
    assert {ln.split()[0]: ln.split()[-1] for ln in lines[1:]} == {
        "denied": "Denied", "jane": "Approved,Issued", "server": "Approved,Failed", "unknown": "Approved"}
    cluster.close()


def test_signing_is_deterministic_and_the_ttl_capped(tmp_path):
    """The same log and CA give the same certificate bytes; a short request is not backdated and a
    long one is capped at a year."""
    certs = []
    for run in ("a", "b"):
        folder = tmp_path / run
        folder.mkdir()
        if run == "b":
            (folder / "pki").mkdir()
            for f in ("ca.crt", "ca.key", "apiserver.crt", "apiserver.key", "admin.token"):
                (folder / "pki" / f).write_bytes((tmp_path / "a" / "pki" / f).read_bytes())
        cluster = Cluster.create(path=folder / "cluster.log", seed=5)
        api = cluster.api

        async def body(rt):
            api.create(CSR, csr("short", expirationSeconds=1200))
            api.create(CSR, csr("long", expirationSeconds=10 * 365 * 86400))
            for name in ("short", "long"):
                api.update(CSR, approved(api.get(CSR, name)), subresource="approval")
            assert await rt.settle()

        run_cluster(cluster, body, default_factories(cluster))
        certs.append({n: api.get(CSR, n)["status"]["certificate"] for n in ("short", "long")})
        short, long_ = (certificate_of(api.get(CSR, n)) for n in ("short", "long"))
        assert short.not_valid_after_utc - short.not_valid_before_utc == datetime.timedelta(minutes=20)
        assert long_.not_valid_after_utc - long_.not_valid_before_utc == datetime.timedelta(days=365)
        assert short.not_valid_before_utc > long_.not_valid_before_utc  # the long one is backdated
        cluster.close()
    assert certs[0] == certs[1]


def test_cleaner_deletes_issued_after_an_hour_and_pending_after_a_day(tmp_path):
    cluster = Cluster.create(path=tmp_path / "cluster.log")
    api = cluster.api

    async def body(rt):
        api.create(CSR, csr("issued"))
        api.create(CSR, csr("pending"))
        api.update(CSR, approved(api.get(CSR, "issued")), subresource="approval")
        assert await rt.settle()
        assert api.get(CSR, "issued")["status"]["certificate"]
        await rt.advance(3500)
        assert [o["metadata"]["name"] for o in api.list(CSR)["items"]] == ["issued", "pending"]
        await rt.advance(200)
        assert [o["metadata"]["name"] for o in api.list(CSR)["items"]] == ["pending"]
        await rt.advance(23 * 3600)
        assert [o["metadata"]["name"] for o in api.list(CSR)["items"]] == []

    # only the two certificate controllers: a day of virtual time of a whole cluster takes long
    factories = {n: f for n, f in default_factories(cluster).items() if n.startswith("csr")}
    assert sorted(factories) == ["csrcleaner-controller", "csrsigning-controller"]
    run_cluster(cluster, body, factories)
    cluster.close()


# --- the CLI -------------------------------------------------------------------------------------------

def test_cli_certificate_approve_deny_and_get(tmp_path, capsys):
    from conftest import Kubectl

    k = Kubectl(tmp_path / "cluster.log", capsys)
    assert k("cluster", "create", "--nodes", "1", "--bare")[0] == 0
    manifest = tmp_path / "csr.yaml"
    import json

    manifest.write_text(json.dumps({"items": [csr("jane", expirationSeconds=86400), csr("bob")],
                                    "apiVersion": "v1", "kind": "List"}))
    assert k("create", "-f", str(manifest))[1] == [
        "certificatesigningrequest.certificates.k8s.io/jane created",
        "certificatesigningrequest.certificates.k8s.io/bob created"]
    rc, out, err = k("certificate", "approve", "jane")
    assert (rc, out, err) == (0, ["certificatesigningrequest.certificates.k8s.io/jane approved"], [])
    assert k("certificate", "deny", "bob")[1] == ["certificatesigningrequest.certificates.k8s.io/bob denied"]
    rc, out, err = k("certificate", "deny", "jane", "nope")
    assert rc == 1 and out == []
    assert err == ['error: certificate signing request "jane" is already Approved',
                   'Error from server (NotFound): certificatesigningrequests.certificates.k8s.io "nope" not found']
    assert k("certificate", "approve", "jane")[1] == ["certificatesigningrequest.certificates.k8s.io/jane approved"]
    rc, out, _ = k("get", "csr")
    assert [line.split()[-1] for line in out] == ["CONDITION", "Denied", "Approved,Issued"]
    assert out[0].split() == ["NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION"]
    c = k.api()
    try:
        jane = c.api.get(CSR, "jane")
    finally:
        c.close()
    cond = jane["status"]["conditions"][0]
    assert (cond["reason"], cond["message"]) == ("KubectlApprove", "This CSR was approved by kubectl certificate approve.")
    assert certificate_of(jane).subject.rfc4514_string() == "CN=jane,O=dev"
    # the log re-executes to the same bytes: the replay signs with the CA beside the cluster file
    rc, out, err = k("replay", str(tmp_path / "cluster.log"))
    assert rc == 0 and out[0].startswith("identical ("), (out, err)


# --- the real kubectl against k8semu serve ------------------------------------------------------------

def test_kubectl_create_user_with_a_csr(tmp_path):
    """The "create a user" exercise: kubectl create -f csr.yaml, certificate approve, read the
    certificate and use it in a kubeconfig: serve authenticates it as jane."""
    import shutil

    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not on the PATH")
    from test_kubectl_e2e import Server

    from k8semu.server.pki import kubeconfig_text

    srv = Server(tmp_path)
    try:
        key = _key(9)
        path = srv.write("csr.yaml", (
            "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata:\n  name: jane\nspec:\n"
            f"  request: {base64.b64encode(request_pem(key=key)).decode()}\n"
            f"  signerName: {CLIENT}\n  expirationSeconds: 86400\n  usages:\n  - client auth\n"))
        assert srv.kubectl("create", "-f", path).stdout == "certificatesigningrequest.certificates.k8s.io/jane created\n"
        assert srv.kubectl("certificate", "approve", "jane").stdout == (
            "certificatesigningrequest.certificates.k8s.io/jane approved\n")
        pem = b""
        deadline = time.monotonic() + 20
        while not pem and time.monotonic() < deadline:
            pem = base64.b64decode(srv.kubectl("get", "csr", "jane", "-o", "jsonpath={.status.certificate}").stdout)
            if not pem:
                time.sleep(0.2)
        assert x509.load_pem_x509_certificate(pem).subject.rfc4514_string() == "CN=jane,O=dev"
        rows = srv.kubectl("get", "csr").stdout.splitlines()
        assert rows[1].split()[-1] == "Approved,Issued"
        url = next(line.split()[-1] for line in srv.kubeconfig.read_text().splitlines()
                   if line.strip().startswith("server:"))
        kc = tmp_path / "jane.kubeconfig"
        kc.write_text(kubeconfig_text(url, None, tmp_path / "pki" / "ca.crt", user_name="jane", client_cert=pem,
                                      client_key=key.private_bytes(serialization.Encoding.PEM,
                                                                   serialization.PrivateFormat.TraditionalOpenSSL,
                                                                   serialization.NoEncryption())))
        out = subprocess.run(["kubectl", "--kubeconfig", str(kc), "auth", "whoami"], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, out.stderr
        assert [line.split() for line in out.stdout.splitlines()] == [
            ["ATTRIBUTE", "VALUE"], ["Username", "jane"], ["Groups", "[dev", "system:authenticated]"]]
    finally:
        assert srv.stop() == 0
