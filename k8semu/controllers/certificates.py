"""kube-controller-manager's CertificateSigningRequest controllers: the signer
(``csrsigning``, pkg/controller/certificates/signer) and the cleaner (``csrcleaner``,
pkg/controller/certificates/cleaner), v1.33.

Design
======

**Signing** (:class:`CSRSigningController`, actor ``csrsigning-controller``). It watches
CertificateSigningRequests. One that is ``Approved``, not ``Failed``, has no certificate yet
and names a signer this controller serves is signed with the cluster CA and its
``status.certificate`` written through ``/status``; upstream adds no condition on issue
(``kubectl get csr`` shows ``Approved,Issued`` because the certificate is set). Served
signers, each checked as upstream's ``isRequestForSignerFn`` (a request that fails gets a
``Failed`` condition, reason ``SignerValidationFailure``, the message the check's error):

* ``kubernetes.io/kube-apiserver-client``: usages ``client auth`` and optionally
  ``digital signature`` / ``key encipherment`` (``invalid usage for client certificate: X``,
  ``missing required usage for client certificate: client auth``);
* ``kubernetes.io/kube-apiserver-client-kubelet``: organization exactly ``system:nodes``, no
  SANs, common name ``system:node:…``, usages ``client auth`` + ``digital signature`` (+
  ``key encipherment``) (``ValidateKubeletClientCSR``);
* ``kubernetes.io/kubelet-serving``: organization ``system:nodes``, at least one DNS or IP
  SAN, no email or URI SAN, usages ``server auth`` + ``digital signature`` (+
  ``key encipherment``), common name ``system:node:…`` (``ValidateKubeletServingCSR``).

Any other signer name is left alone (an approved request stays ``Approved`` without a
certificate), and so are ``Denied`` requests.

The certificate (upstream ``CertificateAuthority.Sign`` with the
``PermissiveSigningPolicy``): subject, public key and SANs of the request; key usage and
extended key usages from ``spec.usages``; basic constraints CA:false; no other extension;
validity ``spec.expirationSeconds`` clamped to [10 min, the controller's TTL] (kube-controller-
manager's ``--cluster-signing-duration``, one year); ``NotBefore`` is backdated 5 minutes unless
the validity is shorter than 8 hours, and ``NotAfter`` never passes the CA's own.

**Where the CA comes from.** Upstream reads ``--cluster-signing-cert-file`` / ``-key-file``;
here the controller is given a ``ca`` callable returning ``(certificate, private key)`` —
the wiring (:mod:`k8semu.sim.components`) passes the CA of the cluster file's ``pki/`` folder,
the one ``k8semu serve`` trusts for client certificates (made on first use if absent). Without
one (a cluster in memory) the controller signs nothing, as kube-controller-manager skips its
signer when given no signing files.

**Determinism.** Times come from the virtual clock (the cluster's epoch plus virtual seconds);
the serial number is a 127-bit hash of the request's UID (itself drawn from the cluster's seeded
RNG) and request bytes — not a draw from the shared RNG, so signing does not shift any later
UID or name; the CA's ECDSA signature is RFC 6979 deterministic (an RSA CA signs with
PKCS#1 v1.5, deterministic too). So the certificate written to the log is a pure function of
the log and the CA. The CA itself is not in the log (``trustme`` made it with the system's
randomness when the ``pki/`` folder was first needed): a replay of the log next to the same
``pki/`` folder writes byte-identical certificates, elsewhere it signs with another CA.

**Cleaning** (:class:`CSRCleanerController`, actor ``csrcleaner-controller``): deletes a
request whose certificate has expired, or that was issued (approved with a certificate) or
denied or failed more than an hour ago (its condition's ``lastUpdateTime``), or that has had
no condition for 24 hours since creation. Upstream lists every request once an hour; here each
request waits in the workqueue until its own deadline (``add_after``), so it goes at the
deadline itself rather than at the next hourly pass.
"""

from __future__ import annotations

import datetime
import hashlib
from typing import Any, Callable

from ..api import errors
from ..api.meta import parse_time
from ..client.component import Component
from ..client.informer import EventHandler

__all__ = [
    "CSRSigningController", "CSRCleanerController", "SIGNERS", "DEFAULT_TTL",
    "sign_request", "signer_validation_error", "is_approved", "has_true_condition",
]

Obj = dict[str, Any]
CAProvider = Callable[[], "tuple[Any, Any] | None"]

KUBE_APISERVER_CLIENT = "kubernetes.io/kube-apiserver-client"
KUBE_APISERVER_CLIENT_KUBELET = "kubernetes.io/kube-apiserver-client-kubelet"
KUBELET_SERVING = "kubernetes.io/kubelet-serving"
#: The signer names this controller signs for.
SIGNERS = (KUBE_APISERVER_CLIENT, KUBE_APISERVER_CLIENT_KUBELET, KUBELET_SERVING)
#: ``--cluster-signing-duration``'s default: one year (seconds).
DEFAULT_TTL = 365 * 24 * 3600
_MIN_TTL = 600  # 10 minutes, twice the backdate
_BACKDATE = 300  # 5 minutes
_SHORT = 8 * 3600  # certificates valid for less are not backdated

_CSR = "certificatesigningrequests.certificates.k8s.io"


def has_true_condition(csr: Obj, type_: str) -> bool:
    """Whether ``status.conditions`` holds a ``type_`` condition with status ``True``."""
    return any(c.get("type") == type_ and c.get("status") == "True"
               for c in (csr.get("status") or {}).get("conditions") or () if isinstance(c, dict))


def is_approved(csr: Obj) -> bool:
    """``IsCertificateRequestApproved``: Approved and not Denied."""
    return has_true_condition(csr, "Approved") and not has_true_condition(csr, "Denied")


def _organizations(req: Any) -> list[str]:
    from cryptography.x509.oid import NameOID

    return [a.value for a in req.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]


def _common_name(req: Any) -> str:
    from cryptography.x509.oid import NameOID

    cns = req.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(cns[0].value) if cns else ""


def _sans(req: Any) -> dict[str, list[Any]]:
    from cryptography import x509

    try:
        ext = req.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return {"dns": [], "ip": [], "email": [], "uri": []}
    return {"dns": ext.get_values_for_type(x509.DNSName), "ip": ext.get_values_for_type(x509.IPAddress),
            "email": ext.get_values_for_type(x509.RFC822Name),
            "uri": ext.get_values_for_type(x509.UniformResourceIdentifier)}


def _usage_set_error(usages: list[str], required: tuple[str, ...], required_no_rsa: tuple[str, ...]) -> str | None:
    have = set(usages)
    if have != set(required) and have != set(required_no_rsa):
        return f"usages did not match [{' '.join(sorted(required))}]"
    return None


def signer_validation_error(signer: str, req: Any, usages: list[str]) -> str | None:
    """Upstream's per-signer check of a request (``isRequestForSignerFn``): None when the request
    may be signed by ``signer`` (one of :data:`SIGNERS`), else the error the ``Failed`` condition
    carries. ``req`` is the parsed :class:`cryptography.x509.CertificateSigningRequest`."""
    if signer == KUBE_APISERVER_CLIENT:
        has_client_auth = False
        for u in usages:
            if u in ("digital signature", "key encipherment"):
                continue
            if u == "client auth":
                has_client_auth = True
                continue
            return f"invalid usage for client certificate: {u}"
        return None if has_client_auth else "missing required usage for client certificate: client auth"
    sans = _sans(req)
    if _organizations(req) != ["system:nodes"]:
        return "subject organization is not system:nodes"
    if signer == KUBE_APISERVER_CLIENT_KUBELET:
        if sans["dns"]:
            return "DNS subjectAltNames are not allowed"
        if sans["email"]:
            return "Email subjectAltNames are not allowed"
        if sans["ip"]:
            return "IP subjectAltNames are not allowed"
        if sans["uri"]:
            return "URI subjectAltNames are not allowed"
        if not _common_name(req).startswith("system:node:"):
            return "subject common name does not begin with 'system:node:'"
        return _usage_set_error(usages, ("digital signature", "key encipherment", "client auth"),
                                ("digital signature", "client auth"))
    # kubelet-serving
    if not sans["dns"] and not sans["ip"]:
        return "DNS or IP subjectAltName is required"
    if sans["email"]:
        return "Email subjectAltNames are not allowed"
    if sans["uri"]:
        return "URI subjectAltNames are not allowed"
    err = _usage_set_error(usages, ("digital signature", "key encipherment", "server auth"),
                           ("digital signature", "server auth"))
    if err:
        return err
    if not _common_name(req).startswith("system:node:"):
        return "subject common name does not begin with 'system:node:'"
    return None


_KEY_USAGES = {
    "signing": "digital_signature", "digital signature": "digital_signature",
    "content commitment": "content_commitment", "key encipherment": "key_encipherment",
    "key agreement": "key_agreement", "data encipherment": "data_encipherment",
    "cert sign": "key_cert_sign", "crl sign": "crl_sign",
    "encipher only": "encipher_only", "decipher only": "decipher_only",
}


def _ext_key_usages() -> dict[str, Any]:
    """``spec.usages`` -> extended key usage OID, in Go's ``x509.ExtKeyUsage`` order."""
    from cryptography.x509.oid import ExtendedKeyUsageOID as E, ObjectIdentifier

    return {
        "any": E.ANY_EXTENDED_KEY_USAGE, "server auth": E.SERVER_AUTH, "client auth": E.CLIENT_AUTH,
        "code signing": E.CODE_SIGNING, "email protection": E.EMAIL_PROTECTION, "s/mime": E.EMAIL_PROTECTION,
        "ipsec end system": ObjectIdentifier("1.3.6.1.5.5.7.3.5"),
        "ipsec tunnel": ObjectIdentifier("1.3.6.1.5.5.7.3.6"),
        "ipsec user": ObjectIdentifier("1.3.6.1.5.5.7.3.7"),
        "timestamping": E.TIME_STAMPING, "ocsp signing": E.OCSP_SIGNING,
        "microsoft sgc": ObjectIdentifier("1.3.6.1.4.1.311.10.3.3"),
        "netscape sgc": ObjectIdentifier("2.16.840.1.113730.4.1"),
    }


def _ttl(expiration_seconds: Any, cert_ttl: int) -> int:
    """The signer's ``duration``: the requested seconds clamped to [600, ``cert_ttl``]; the TTL
    when none is requested."""
    if expiration_seconds is None:
        return cert_ttl
    return max(_MIN_TTL, min(int(expiration_seconds), cert_ttl))


def sign_request(csr: Obj, req: Any, ca_cert: Any, ca_key: Any, now: datetime.datetime,
                 cert_ttl: int = DEFAULT_TTL) -> bytes:
    """The PEM certificate the signer issues for ``csr`` (its parsed request ``req``) with the
    CA ``ca_cert`` / ``ca_key`` at ``now`` (an aware UTC datetime). See the module docstring for
    its content.

    Raises:
        ValueError: the CA has expired (``the signer has expired: NotAfter=…``), or the clamped
            validity is empty.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    spec = csr.get("spec") or {}
    usages = list(spec.get("usages") or [])
    ttl = _ttl(spec.get("expirationSeconds"), cert_ttl)
    signer_not_after = ca_cert.not_valid_after_utc
    if now > signer_not_after:
        raise ValueError(f"the signer has expired: NotAfter={signer_not_after}")
    start = now - datetime.timedelta(seconds=_BACKDATE if ttl >= _SHORT else 0)
    not_before, not_after = start, min(start + datetime.timedelta(seconds=ttl), signer_not_after)
    if not not_before < not_after:
        raise ValueError(f"the signer has expired: NotAfter={signer_not_after}")
    meta = csr.get("metadata") or {}
    digest = hashlib.sha256(f"k8semu/csr-serial\x00{meta.get('uid', '')}\x00{spec.get('request', '')}".encode())
    serial = (int.from_bytes(digest.digest()[:16], "big") >> 1) or 1
    builder = (x509.CertificateBuilder().subject_name(req.subject).issuer_name(ca_cert.subject)
               .public_key(req.public_key()).serial_number(serial)
               .not_valid_before(not_before.replace(microsecond=0))
               .not_valid_after(not_after.replace(microsecond=0)))
    flags = {v: False for v in _KEY_USAGES.values()}
    for u in usages:
        if u in _KEY_USAGES:
            flags[_KEY_USAGES[u]] = True
    if any(flags.values()):
        builder = builder.add_extension(x509.KeyUsage(**flags), critical=True)
    table = _ext_key_usages()
    order = list(table)
    ext = []
    for u in sorted((u for u in usages if u in table), key=order.index):
        if table[u] not in ext:
            ext.append(table[u])
    if ext:
        builder = builder.add_extension(x509.ExtendedKeyUsage(ext), critical=False)
    builder = builder.add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
    try:
        ski = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
        builder = builder.add_extension(x509.AuthorityKeyIdentifier(ski.digest, None, None), critical=False)
    except x509.ExtensionNotFound:
        pass
    try:
        san = req.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        builder = builder.add_extension(san, critical=False)
    except x509.ExtensionNotFound:
        pass
    if isinstance(ca_key, ec.EllipticCurvePrivateKey):
        cert = builder.sign(ca_key, hashes.SHA256(), ecdsa_deterministic=True)
    elif isinstance(ca_key, rsa.RSAPrivateKey):
        cert = builder.sign(ca_key, hashes.SHA256())
    elif isinstance(ca_key, ed25519.Ed25519PrivateKey):
        cert = builder.sign(ca_key, None)
    else:
        raise ValueError(f"unsupported CA key type {type(ca_key).__name__}")
    return cert.public_bytes(serialization.Encoding.PEM)


class CSRSigningController(Component):
    """Signs approved CertificateSigningRequests of the :data:`SIGNERS` with the cluster CA
    (actor ``csrsigning-controller``; see the module docstring).

    Args:
        api: the API server.
        ca: returns the CA's ``(certificate, private key)`` (cryptography objects), called once,
            at the first request to sign; None (or a callable returning None): sign nothing.
        cert_ttl: the longest validity issued (seconds; ``--cluster-signing-duration``).
    """

    name = "csrsigning-controller"

    def __init__(self, api: Any, ca: CAProvider | None = None, cert_ttl: int = DEFAULT_TTL,
                 name: str | None = None, user: Any = None) -> None:
        super().__init__(api, name, user)
        self._ca_provider = ca
        self._ca: tuple[Any, Any] | None = None
        self.cert_ttl = cert_ttl
        self.csrs = self.informer(_CSR)
        self.q = self.queue()
        self.csrs.add_event_handler(EventHandler(on_add=self._enqueue, on_update=lambda o, n: self._enqueue(n)))

    def _enqueue(self, csr: Obj) -> None:
        if self._ca_provider is not None and self._wants_signing(csr):
            self.q.add(csr["metadata"]["name"])

    @staticmethod
    def _wants_signing(csr: Obj) -> bool:
        return (is_approved(csr) and not has_true_condition(csr, "Failed")
                and not (csr.get("status") or {}).get("certificate")
                and (csr.get("spec") or {}).get("signerName") in SIGNERS)

    async def main(self) -> None:
        await self.run_workers(self.q, self.sync)

    def _now(self) -> datetime.datetime:
        return parse_time_dt(self.api.epoch, self.api.now)

    def sync(self, name: str) -> None:
        """Sign the request ``name`` if it still wants signing (re-read from the API server).

        Raises:
            StatusError: a failed write other than NotFound (retried with back-off).
        """
        cached = self.csrs.indexer.get(name)
        if cached is None or not self._wants_signing(cached):
            return
        try:
            csr = self.api.get(_CSR, name, ctx=self.ctx)
        except errors.NotFound:
            return
        if not self._wants_signing(csr):
            return
        from ..api.validation import parse_csr_pem, wire_bytes

        spec = csr.get("spec") or {}
        try:
            req = parse_csr_pem(wire_bytes(spec.get("request")))
        except ValueError:
            return  # upstream: "unable to parse csr": an error, retried; validation makes it rare
        err = signer_validation_error(spec.get("signerName"), req, list(spec.get("usages") or []))
        status = dict(csr.get("status") or {})
        if err is not None:
            stamp = self.api.timestamp()
            status["conditions"] = [*(status.get("conditions") or []), {
                "type": "Failed", "status": "True", "reason": "SignerValidationFailure", "message": err,
                "lastUpdateTime": stamp}]
        else:
            ca = self._load_ca()
            if ca is None:
                return
            try:
                pem = sign_request(csr, req, ca[0], ca[1], self._now(), self.cert_ttl)
            except ValueError:
                return  # an expired CA: upstream logs "error auto signing csr" and retries
            import base64

            status["certificate"] = base64.b64encode(pem).decode()
        try:
            self.api.update(_CSR, {**csr, "status": status}, subresource="status", ctx=self.ctx)
        except errors.NotFound:
            pass

    def _load_ca(self) -> tuple[Any, Any] | None:
        if self._ca is None and self._ca_provider is not None:
            self._ca = self._ca_provider()
        return self._ca


def parse_time_dt(epoch: datetime.datetime, t: float) -> datetime.datetime:
    """Virtual time ``t`` (seconds) as an aware UTC datetime, whole seconds (as the API's
    timestamps)."""
    base = epoch if epoch.tzinfo is not None else epoch.replace(tzinfo=datetime.timezone.utc)
    return (base + datetime.timedelta(seconds=int(t))).astimezone(datetime.timezone.utc)


#: The cleaner's deadlines (seconds), upstream's ``approvedExpiration``, ``deniedExpiration``
#: (also for Failed) and ``pendingExpiration``.
APPROVED_EXPIRATION = 3600
DENIED_EXPIRATION = 3600
PENDING_EXPIRATION = 24 * 3600


def _cert_not_after(csr: Obj, epoch: datetime.datetime) -> float | None:
    """The first certificate's NotAfter, as virtual seconds, or None."""
    from ..api.validation import pem_blocks, wire_bytes

    blocks = pem_blocks(wire_bytes((csr.get("status") or {}).get("certificate")))
    if not blocks:
        return None
    from cryptography import x509

    try:
        cert = x509.load_der_x509_certificate(blocks[0][2])
    except ValueError:
        return None
    base = epoch if epoch.tzinfo is not None else epoch.replace(tzinfo=datetime.timezone.utc)
    return (cert.not_valid_after_utc - base).total_seconds()


def cleanup_at(csr: Obj, epoch: datetime.datetime) -> float | None:
    """When the cleaner deletes ``csr`` (virtual seconds; the earliest of upstream's rules), or
    None when no rule applies (approved, not issued, not failed: kept)."""
    status = csr.get("status") or {}
    conds = [c for c in status.get("conditions") or () if isinstance(c, dict)]
    issued = bool(status.get("certificate"))
    times: list[float] = []

    def stamp(c: Obj) -> float | None:
        v = c.get("lastUpdateTime")
        return parse_time(epoch, v) if v else None

    for c in conds:
        t = stamp(c)
        if c.get("type") == "Approved" and issued:
            if t is not None:
                times.append(t + APPROVED_EXPIRATION)
            end = _cert_not_after(csr, epoch)
            if end is not None:
                times.append(end)
        elif c.get("type") in ("Denied", "Failed") and t is not None:
            times.append(t + DENIED_EXPIRATION)
    if not conds:
        created = (csr.get("metadata") or {}).get("creationTimestamp")
        if created:
            times.append(parse_time(epoch, created) + PENDING_EXPIRATION)
    return min(times) if times else None


class CSRCleanerController(Component):
    """Garbage-collects CertificateSigningRequests (actor ``csrcleaner-controller``; see the
    module docstring for the rules)."""

    name = "csrcleaner-controller"

    def __init__(self, api: Any, name: str | None = None, user: Any = None) -> None:
        super().__init__(api, name, user)
        self.csrs = self.informer(_CSR)
        self.q = self.queue()
        self.csrs.add_event_handler(EventHandler(on_add=self._enqueue, on_update=lambda o, n: self._enqueue(n)))

    def _enqueue(self, csr: Obj) -> None:
        if cleanup_at(csr, self.api.epoch) is not None:
            self.q.add(csr["metadata"]["name"])

    async def main(self) -> None:
        await self.run_workers(self.q, self.sync)

    def sync(self, name: str) -> None:
        """Delete ``name`` if its deadline has passed (re-read first); else wait for it."""
        csr = self.csrs.indexer.get(name)
        if csr is None or not self._due(name, csr):
            return
        try:
            fresh = self.api.get(_CSR, name, ctx=self.ctx)
        except errors.NotFound:
            return
        if not self._due(name, fresh):
            return
        meta = fresh["metadata"]
        try:
            self.api.delete(_CSR, name, ctx=self.ctx,
                            preconditions={"uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")})
        except (errors.NotFound, errors.Conflict):
            pass

    def _due(self, name: str, csr: Obj) -> bool:
        at = cleanup_at(csr, self.api.epoch)
        if at is None:
            return False
        now = self.api.now
        if now <= at:
            self.q.add_after(name, at - now + 1)
            return False
        return True

