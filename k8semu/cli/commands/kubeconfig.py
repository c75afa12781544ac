"""``k8semu kubeconfig user``: a kubeconfig for another user, authenticated by a client certificate.

As ``kubeadm kubeconfig user --client-name NAME --org GROUP``: a client certificate for
``NAME`` (organizations = groups) signed by the cluster's CA (the ``pki/`` folder beside the
cluster file, made by ``k8semu serve``), written inline into a kubeconfig printed on stdout.
``k8semu serve`` accepts such certificates as kube-apiserver's ``--client-ca-file`` does; RBAC
then applies to that user and those groups. The kubeconfig's server is the running ``serve``'s
(``--server`` to name another).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..output import die
from ..session import cluster_path, lock_holder

DEFAULT_SERVER = "https://127.0.0.1:6443"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("kubeconfig", help="kubeconfig files for other users of a served cluster")
    kinds = p.add_subparsers(dest="kubeconfig_command", required=True, metavar="COMMAND")
    u = kinds.add_parser("user", help="print a kubeconfig for a user with a client certificate signed by the "
                                      "cluster CA (as kubeadm kubeconfig user)")
    u.add_argument("--client-name", required=True, help="the user name (the certificate's common name)")
    u.add_argument("--org", action="append", default=[], metavar="GROUP",
                   help="a group (the certificate's organization); repeatable")
    u.add_argument("--validity-period", default="8760h", metavar="DURATION",
                   help="how long the certificate is valid (default 8760h, one year)")
    u.add_argument("--server", default=None,
                   help=f"the API server URL (default: the running serve's, else {DEFAULT_SERVER})")
    u.set_defaults(func=run)


def _server_of_serve(path: Path) -> str | None:
    """The server URL in the kubeconfig of the ``k8semu serve`` serving ``path``, if one runs."""
    holder = lock_holder(path) or {}
    kubeconfig = holder.get("kubeconfig") if holder.get("serve") else None
    if not kubeconfig:
        return None
    try:
        text = Path(kubeconfig).read_text()
    except OSError:
        return None
    return next((line.split("server: ", 1)[1].strip() for line in text.splitlines() if "server: " in line), None)


def run(args: argparse.Namespace) -> int:
    from ...server.pki import issue_client_cert, kubeconfig_text, load_credentials
    from ..durations import parse_duration

    if not args.client_name.strip():
        return die("--client-name must not be empty")
    try:
        seconds = parse_duration(args.validity_period, allow_negative=False)
    except ValueError as e:
        return die(str(e))
    if seconds <= 0:
        return die("--validity-period must be positive")
    path = cluster_path(args)
    server = args.server or _server_of_serve(path) or DEFAULT_SERVER
    if server.startswith("http://"):
        return die(f"{server} is plain HTTP (serve --insecure-http): client certificates need HTTPS")
    creds = load_credentials(path.parent / "pki")
    cert, key = issue_client_cert(creds, args.client_name, args.org, seconds=seconds)
    print(kubeconfig_text(server, None, creds.ca_cert, user_name=args.client_name, client_cert=cert,
                          client_key=key), end="")
    return 0
