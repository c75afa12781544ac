"""``k8semu certificate approve|deny NAME...``: kubectl certificate approve / deny.

As kubectl's ``certificate`` command: each CertificateSigningRequest is read, then an
``Approved`` (or ``Denied``) condition with status ``True``, reason ``KubectlApprove``
(``KubectlDeny``), message ``This CSR was approved by kubectl certificate approve.``
(``… denied by kubectl certificate deny.``) and ``lastUpdateTime`` now (virtual time) is
appended and the object written back through the ``/approval`` subresource (an UPDATE, as
kubectl's ``UpdateApproval``). Prints ``certificatesigningrequest.certificates.k8s.io/jane
approved``. A request that already has the condition is printed the same way and not written
again unless ``--force``; one that has the opposite condition fails with kubectl's ``error:
certificate signing request "jane" is already Denied``. A missing one is the server's
``Error from server (NotFound): certificatesigningrequests.certificates.k8s.io "x" not found``.
Then the cluster settles (or runs ``--for``), so the signer has issued the certificate of an
approved ``kubernetes.io/kube-apiserver-client`` request by the time the command returns.
"""

from __future__ import annotations

import argparse
import copy
import sys

from ...api import errors
from ..output import display_name, server_error
from ..targets import add_run_flags, run_write

CSR = "certificatesigningrequests.certificates.k8s.io"

#: verb -> (condition added, condition that must be absent, reason, message, past tense)
ACTIONS = {
    "approve": ("Approved", "Denied", "KubectlApprove", "This CSR was approved by kubectl certificate approve.",
                "approved"),
    "deny": ("Denied", "Approved", "KubectlDeny", "This CSR was denied by kubectl certificate deny.", "denied"),
}


def register(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("certificate", help="approve or deny certificate signing requests (as kubectl certificate)")
    verbs = c.add_subparsers(dest="certificate_verb", metavar="approve|deny")
    verbs.required = True
    for verb in ACTIONS:
        p = verbs.add_parser(verb, help=f"{verb} certificate signing requests")
        p.add_argument("names", nargs="+", metavar="NAME")
        p.add_argument("--force", action="store_true",
                       help="update the request even if it already has the condition")
        add_run_flags(p)
        p.set_defaults(func=run)


def add_condition(csr: dict, verb: str, now: str) -> tuple[dict | None, bool]:
    """kubectl's ``addConditionIfNeeded``: ``(the request with the condition appended, whether it
    already had it)``; an already-present condition returns the request unchanged.

    Raises:
        ValueError: the request has the opposite condition (``certificate signing request
            "jane" is already Denied``).
    """
    cond, forbidden, reason, message, _ = ACTIONS[verb]
    for c in (csr.get("status") or {}).get("conditions") or ():
        if c.get("type") == forbidden:
            raise ValueError(f'certificate signing request "{csr["metadata"]["name"]}" is already {forbidden}')
        if c.get("type") == cond:
            return csr, True
    out = copy.deepcopy(csr)
    status = out.setdefault("status", {})
    status["conditions"] = [*(status.get("conditions") or []), {
        "type": cond, "status": "True", "reason": reason, "message": message, "lastUpdateTime": now}]
    return out, False


def run(args: argparse.Namespace) -> int:
    verb = args.certificate_verb
    past = ACTIONS[verb][4]
    failures: list[str] = []

    async def body(cluster, rt) -> None:
        api = cluster.api
        info = api.resource(CSR)
        for name in args.names:
            try:
                csr = api.get(info, name)
                new, had = add_condition(csr, verb, api.timestamp())
                if not had or args.force:
                    api.update(info, new, subresource="approval", field_manager="kubectl-certificate")
            except errors.StatusError as e:
                failures.append(server_error(e))
                continue
            except ValueError as e:
                failures.append(f"error: {e}")
                continue
            print(f"{display_name(info, name)} {past}")

    run_write(args, body, failures=failures)
    for line in failures:
        print(line, file=sys.stderr)
    return 1 if failures else 0
