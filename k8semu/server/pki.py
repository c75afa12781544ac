"""Credentials for ``k8semu serve``: the cluster CA, the serving certificate,
bearer tokens and the kubeconfig.

Design: everything lives in a ``pki/`` folder next to the cluster file
(``.k8semu/pki/`` for ``.k8semu/cluster.log``) and is created once, then
reused, so a kubeconfig stays valid across restarts of ``serve``:

* ``ca.crt`` / ``ca.key`` and ``apiserver.crt`` / ``apiserver.key`` — made with
  ``trustme`` (a per-cluster CA and a serving certificate for ``127.0.0.1`` and
  ``localhost``), as kubeadm makes ``/etc/kubernetes/pki``;
* ``admin.token`` — the bearer token of ``kubernetes-admin`` (group
  ``system:masters``), 32 random bytes from :mod:`secrets` (credentials are
  the one place where unseeded randomness is wanted).

Static token files use kube-apiserver's ``--token-auth-file`` CSV format:
``token,user,uid,"group1,group2"`` (groups optional).

Client certificates signed by ``ca.crt`` authenticate too, as kube-apiserver's
``--client-ca-file``: the subject's common name is the user, its organizations
the groups. :func:`issue_client_cert` makes one (``k8semu kubeconfig user``, as
``kubeadm kubeconfig user``).
"""

from __future__ import annotations

import base64
import csv
import io
import os
import secrets
from pathlib import Path
from typing import Any

import attrs

from ..api.auth import SYSTEM_MASTERS, UserInfo, admin, user

__all__ = ["Credentials", "load_credentials", "parse_token_file", "kubeconfig_text", "issue_client_cert",
           "client_identity", "load_signing_ca", "cluster_pki_folder"]


@attrs.frozen
class Credentials:
    """Paths and token of one cluster's PKI folder."""

    ca_cert: Path
    server_cert: Path
    server_key: Path
    admin_token: str


def load_credentials(folder: Path) -> Credentials:
    """Create (first time) or read the CA, serving cert and admin token in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_cert, srv_cert, srv_key = folder / "ca.crt", folder / "apiserver.crt", folder / "apiserver.key"
    token_file = folder / "admin.token"
    if not (ca_cert.exists() and srv_cert.exists() and srv_key.exists()):
        import trustme

        ca = trustme.CA(organization_name="k8semu")
        leaf = ca.issue_cert("127.0.0.1", "localhost", common_name="kube-apiserver")
        ca.cert_pem.write_to_path(str(ca_cert))
        ca.private_key_pem.write_to_path(str(folder / "ca.key"))
        leaf.private_key_pem.write_to_path(str(srv_key))
        with open(srv_cert, "wb") as f:
            for blob in leaf.cert_chain_pems:
                f.write(blob.bytes())
        os.chmod(folder / "ca.key", 0o600)
        os.chmod(srv_key, 0o600)
    if not token_file.exists():
        token_file.write_text(secrets.token_hex(32) + "\n")
        os.chmod(token_file, 0o600)
    return Credentials(ca_cert, srv_cert, srv_key, token_file.read_text().strip())


def parse_token_file(text: str) -> dict[str, UserInfo]:
    """Parse a ``--token-auth-file`` CSV: ``token,user,uid[,"g1,g2"]`` per line.

    Blank lines and lines starting with ``#`` are skipped. Every user also gets
    ``system:authenticated``, as upstream's authenticator chain adds.

    Raises:
        ValueError: a line with fewer than three fields (upstream's wording).
    """
    out: dict[str, UserInfo] = {}
    for n, row in enumerate(csv.reader(io.StringIO(text)), 1):
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        if len(row) < 3:
            raise ValueError(f"token file line {n}: expected at least 3 fields, got {len(row)}")
        token, name, uid = row[0].strip(), row[1].strip(), row[2].strip()
        groups = [g.strip() for g in row[3].split(",") if g.strip()] if len(row) > 3 else []
        info = user(name, *groups)
        out[token] = UserInfo(info.name, info.groups, uid)
    return out


def admin_user() -> UserInfo:
    """``kubernetes-admin`` in ``system:masters`` (the kubeconfig's user)."""
    info = admin()
    assert SYSTEM_MASTERS in info.groups
    return info


def kubeconfig_text(server: str, token: str | None, ca_cert: Path | None, *, user_name: str = "kubernetes-admin",
                    client_cert: bytes | None = None, client_key: bytes | None = None) -> str:
    """A kubeconfig (YAML) for ``server``: for HTTPS the CA inline; the user ``user_name``
    authenticated by ``token`` or by a client certificate and key (PEM, inline as
    ``client-certificate-data`` / ``client-key-data``, as kubeadm writes them)."""
    cluster = f"    server: {server}\n"
    if ca_cert is not None:
        data = base64.b64encode(ca_cert.read_bytes()).decode()
        cluster = f"    certificate-authority-data: {data}\n" + cluster
    if client_cert is not None and client_key is not None:
        creds = (f"    client-certificate-data: {base64.b64encode(client_cert).decode()}\n"
                 f"    client-key-data: {base64.b64encode(client_key).decode()}\n")
    else:
        creds = f"    token: {token}\n"
    return (
        "apiVersion: v1\n"
        "kind: Config\n"
        "clusters:\n"
        "- name: k8semu\n"
        "  cluster:\n"
        f"{cluster}"
        "users:\n"
        f"- name: {user_name}\n"
        "  user:\n"
        f"{creds}"
        "contexts:\n"
        f"- name: {user_name}@k8semu\n"
        "  context:\n"
        "    cluster: k8semu\n"
        f"    user: {user_name}\n"
        "    namespace: default\n"
        f"current-context: {user_name}@k8semu\n"
        "preferences: {}\n"
    )


def issue_client_cert(creds: Credentials, name: str, groups: list[str], *,
                      seconds: float = 365 * 86400) -> tuple[bytes, bytes]:
    """A client certificate for user ``name`` in ``groups`` (subject ``O=<group>…, CN=<name>``,
    extended key usage clientAuth) signed by the cluster CA, valid for ``seconds`` from now (wall
    clock: a credential, outside the emulated cluster); returns (certificate PEM, private key PEM).

    Raises:
        ValueError: an empty ``name``.
    """
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    if not name:
        raise ValueError("a client name is required")
    folder = creds.ca_cert.parent
    ca = x509.load_pem_x509_certificate(creds.ca_cert.read_bytes())
    ca_key = serialization.load_pem_private_key((folder / "ca.key").read_bytes(), password=None)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([*(x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups),
                         x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(seconds=seconds))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def client_identity(peercert: dict | None) -> tuple[str, tuple[str, ...]] | None:
    """The (user, groups) of a verified client certificate as :meth:`ssl.SSLSocket.getpeercert`
    gives it: the subject's common name and organizations, as kube-apiserver's x509
    authenticator; None without a certificate (or without a common name)."""
    if not peercert:
        return None
    cn, orgs = None, []
    for rdn in peercert.get("subject") or ():
        for attr, value in rdn:
            if attr == "commonName":
                cn = value
            elif attr == "organizationName":
                orgs.append(value)
    return (cn, tuple(orgs)) if cn else None


def cluster_pki_folder(cluster_file: Any) -> Path | None:
    """The ``pki/`` folder of the cluster whose log file is ``cluster_file`` (None: a cluster in
    memory, which has no CA)."""
    return None if cluster_file is None else Path(cluster_file).parent / "pki"


def load_signing_ca(folder: Path) -> tuple[Any, Any]:
    """The cluster CA as kube-controller-manager's ``--cluster-signing-cert-file`` /
    ``--cluster-signing-key-file`` give it to the CSR signer: ``(certificate, private key)``
    (:mod:`cryptography` objects) read from ``folder``, which is created first if it has no CA
    yet (:func:`load_credentials`: the same CA ``serve`` trusts for client certificates)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    if not ((folder / "ca.crt").exists() and (folder / "ca.key").exists()):
        load_credentials(folder)
    cert = x509.load_pem_x509_certificate((folder / "ca.crt").read_bytes())
    key = serialization.load_pem_private_key((folder / "ca.key").read_bytes(), password=None)
    return cert, key
