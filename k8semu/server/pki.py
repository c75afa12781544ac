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
"""

from __future__ import annotations

import base64
import csv
import io
import os
import secrets
from pathlib import Path

import attrs

from ..api.auth import SYSTEM_MASTERS, UserInfo, admin, user

__all__ = ["Credentials", "load_credentials", "parse_token_file", "kubeconfig_text"]


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


def kubeconfig_text(server: str, token: str, ca_cert: Path | None) -> str:
    """A kubeconfig (YAML) for ``server`` with the admin ``token`` and, for HTTPS, the CA inline."""
    cluster = f"    server: {server}\n"
    if ca_cert is not None:
        data = base64.b64encode(ca_cert.read_bytes()).decode()
        cluster = f"    certificate-authority-data: {data}\n" + cluster
    return (
        "apiVersion: v1\n"
        "kind: Config\n"
        "clusters:\n"
        "- name: k8semu\n"
        "  cluster:\n"
        f"{cluster}"
        "users:\n"
        "- name: kubernetes-admin\n"
        "  user:\n"
        f"    token: {token}\n"
        "contexts:\n"
        "- name: kubernetes-admin@k8semu\n"
        "  context:\n"
        "    cluster: k8semu\n"
        "    user: kubernetes-admin\n"
        "    namespace: default\n"
        "current-context: kubernetes-admin@k8semu\n"
        "preferences: {}\n"
    )
