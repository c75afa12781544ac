"""certificates.k8s.io/v1 types: CertificateSigningRequest (k8s.io/api/certificates/v1).

``spec.request`` and ``status.certificate`` are ``[]byte`` on the wire: base64 of PEM
text (a ``CERTIFICATE REQUEST`` block; one or more ``CERTIFICATE`` blocks). ``spec.extra``
is ``map[string]ExtraValue`` (``ExtraValue`` is ``[]string``).
"""

from __future__ import annotations

import attrs

from .fields import Bytes, Int32, Time, field
from .meta import ObjectMeta


@attrs.frozen
class CertificateSigningRequestSpec:
    request: Bytes | None = field()
    signer_name: str | None = field()
    expiration_seconds: Int32 | None = field()
    usages: tuple[str, ...] | None = field(go="[]v1.KeyUsage")
    username: str | None = field()
    uid: str | None = field()
    groups: tuple[str, ...] | None = field()
    extra: dict[str, tuple[str, ...]] | None = field(go="map[string]v1.ExtraValue")


@attrs.frozen
class CertificateSigningRequestCondition:
    type: str | None = field(go="v1.RequestConditionType")
    status: str | None = field(go="v1.ConditionStatus")
    reason: str | None = field()
    message: str | None = field()
    last_update_time: Time | None = field()
    last_transition_time: Time | None = field()


@attrs.frozen
class CertificateSigningRequestStatus:
    conditions: tuple[CertificateSigningRequestCondition, ...] | None = field()
    certificate: Bytes | None = field()


@attrs.frozen
class CertificateSigningRequest:
    api_version: str | None = field()
    kind: str | None = field()
    metadata: ObjectMeta | None = field()
    spec: CertificateSigningRequestSpec | None = field()
    status: CertificateSigningRequestStatus | None = field()


KINDS: dict[str, type] = {
    "certificates.k8s.io/v1/CertificateSigningRequest": CertificateSigningRequest,
}
