"""Kubernetes API errors, one exception hierarchy that maps onto ``Status`` objects.

Every failure the emulated kube-apiserver reports is a :class:`StatusError`.
``err.status()`` gives the ``meta/v1`` ``Status`` dict a real kube-apiserver
would return (``code`` equal to the HTTP status, upstream ``reason``), so the
CLI, the HTTP front and tests all see the same shape.

Messages follow k8s.io/apimachinery/pkg/api/errors, e.g.::

    deployments.apps "web" not found
    Operation cannot be fulfilled on deployments.apps "web": the object has been
    modified; please apply your changes to the latest version and try again
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "StatusError",
    "BadRequest",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "MethodNotAllowed",
    "AlreadyExists",
    "Conflict",
    "Gone",
    "Expired",
    "UnsupportedMediaType",
    "Invalid",
    "FieldError",
    "TooManyRequests",
    "InternalError",
    "ServiceUnavailable",
    "qualified_resource",
]


def qualified_resource(resource: str, group: str) -> str:
    """``deployments`` + ``apps`` -> ``deployments.apps``; core group stays bare."""
    return f"{resource}.{group}" if group else resource


class StatusError(Exception):
    """Base of all API errors; carries what a ``Status`` object needs.

    Attributes:
        code: HTTP status code (int).
        reason: upstream ``StatusReason`` (``NotFound``, ``Conflict``, …).
        message: the human message, exactly as kube-apiserver words it.
        details: optional ``StatusDetails`` dict (name, group, kind, causes, retryAfterSeconds).
    """

    code: int = 500
    reason: str = "InternalError"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        """The ``Status`` object (``kind: Status``, ``status: Failure``) for this error."""
        out: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details:
            out["details"] = self.details
        out["code"] = self.code
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code} {self.reason}: {self.message!r})"


def _details(name: str | None, group: str, kind: str) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if name:
        d["name"] = name
    if group:
        d["group"] = group
    d["kind"] = kind
    return d


class BadRequest(StatusError):
    """400: a malformed request (bad field selector, undecodable body, …)."""

    code = 400
    reason = "BadRequest"


class Unauthorized(StatusError):
    """401: no valid credentials."""

    code = 401
    reason = "Unauthorized"

    def __init__(self, message: str = "Unauthorized") -> None:
        super().__init__(message)


class Forbidden(StatusError):
    """403: authorization or admission refused the request.

    ``Forbidden.rbac(user, verb, resource, group, namespace, name, subresource)``
    builds RBAC's message, e.g. ``pods is forbidden: User "jane" cannot list
    resource "pods" in API group "" in the namespace "default"``.
    """

    code = 403
    reason = "Forbidden"

    @classmethod
    def for_resource(
        cls, resource: str, group: str, name: str | None, reason_text: str
    ) -> "Forbidden":
        qr = qualified_resource(resource, group)
        subject = f'{qr} "{name}"' if name else qr
        return cls(f"{subject} is forbidden: {reason_text}", details=_details(name, group, resource))

    @classmethod
    def rbac(
        cls,
        user: str,
        verb: str,
        resource: str,
        group: str,
        namespace: str | None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> "Forbidden":
        res = f"{resource}/{subresource}" if subresource else resource
        text = f'User "{user}" cannot {verb} resource "{res}" in API group "{group}"'
        if namespace:
            text += f' in the namespace "{namespace}"'
        else:
            text += " at the cluster scope"
        return cls.for_resource(resource, group, name, text)


class NotFound(StatusError):
    """404: ``deployments.apps "web" not found``."""

    code = 404
    reason = "NotFound"

    @classmethod
    def of(cls, resource: str, group: str, name: str) -> "NotFound":
        qr = qualified_resource(resource, group)
        return cls(f'{qr} "{name}" not found', details=_details(name, group, resource))


class MethodNotAllowed(StatusError):
    """405: the verb is not supported on this resource."""

    code = 405
    reason = "MethodNotAllowed"


class AlreadyExists(StatusError):
    """409 AlreadyExists: ``deployments.apps "web" already exists``."""

    code = 409
    reason = "AlreadyExists"

    @classmethod
    def of(cls, resource: str, group: str, name: str) -> "AlreadyExists":
        qr = qualified_resource(resource, group)
        return cls(f'{qr} "{name}" already exists', details=_details(name, group, resource))


class Conflict(StatusError):
    """409 Conflict: optimistic-concurrency failure (stale resourceVersion)."""

    code = 409
    reason = "Conflict"

    @classmethod
    def of(cls, resource: str, group: str, name: str, why: str | None = None) -> "Conflict":
        qr = qualified_resource(resource, group)
        why = why or (
            "the object has been modified; please apply your changes to the latest version and try again"
        )
        return cls(
            f'Operation cannot be fulfilled on {qr} "{name}": {why}',
            details=_details(name, group, resource),
        )


class Gone(StatusError):
    """410 Gone."""

    code = 410
    reason = "Gone"


class Expired(Gone):
    """410 with reason ``Expired``: ``too old resource version: N (M)``.

    ``requested`` is the revision asked for, ``oldest`` the oldest one still retained.
    """

    reason = "Expired"

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


class UnsupportedMediaType(StatusError):
    """415: an unknown ``Content-Type`` or patch type."""

    code = 415
    reason = "UnsupportedMediaType"


class RequestEntityTooLarge(StatusError):
    """413: a request body over kube-apiserver's ``--max-request-bytes`` limit (3 MiB)."""

    code = 413
    reason = "RequestEntityTooLarge"

    def __init__(self, limit: int) -> None:
        super().__init__(f"Request entity too large: limit is {limit}")


class FieldError:
    """One cause of a 422 Invalid, as ``field.Error`` in apimachinery.

    ``type`` is the cause type (``FieldValueInvalid``, ``FieldValueRequired``,
    ``FieldValueNotSupported``, ``FieldValueDuplicate``, ``FieldValueForbidden``,
    ``FieldValueTooLong``); ``text`` renders as ``<field>: <Type words>: <detail>``.
    """

    __slots__ = ("type", "field", "value", "detail")

    _WORDS = {
        "FieldValueInvalid": "Invalid value",
        "FieldValueRequired": "Required value",
        "FieldValueNotSupported": "Unsupported value",
        "FieldValueDuplicate": "Duplicate value",
        "FieldValueForbidden": "Forbidden",
        "FieldValueTooLong": "Too long",
        "FieldValueTooMany": "Too many",
        "FieldValueTypeInvalid": "Invalid value",
    }

    def __init__(self, type: str, field: str, detail: str = "", value: Any = ...) -> None:
        self.type = type
        self.field = field
        self.detail = detail
        self.value = value

    @classmethod
    def invalid(cls, field: str, value: Any, detail: str) -> "FieldError":
        return cls("FieldValueInvalid", field, detail, value)

    @classmethod
    def required(cls, field: str, detail: str = "") -> "FieldError":
        return cls("FieldValueRequired", field, detail)

    @classmethod
    def forbidden(cls, field: str, detail: str) -> "FieldError":
        return cls("FieldValueForbidden", field, detail)

    @classmethod
    def not_supported(cls, field: str, value: Any, valid: list[str]) -> "FieldError":
        quoted = ", ".join(f'"{v}"' for v in valid)
        return cls("FieldValueNotSupported", field, f"supported values: {quoted}", value)

    @classmethod
    def duplicate(cls, field: str, value: Any) -> "FieldError":
        return cls("FieldValueDuplicate", field, "", value)

    def _value_text(self) -> str:
        v = self.value
        if v is ...:
            return ""
        if isinstance(v, str):
            return f'"{v}"'
        if v is None:
            return "null"
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return str(v)
        return _go_value(v)

    def text(self) -> str:
        words = self._WORDS.get(self.type, "Invalid value")
        if self.type in ("FieldValueRequired", "FieldValueForbidden", "FieldValueTooLong"):
            msg = f"{self.field}: {words}"
            return f"{msg}: {self.detail}" if self.detail else msg
        vt = self._value_text()
        msg = f"{self.field}: {words}: {vt}" if vt else f"{self.field}: {words}"
        return f"{msg}: {self.detail}" if self.detail else msg

    def cause(self) -> dict[str, Any]:
        words = self._WORDS.get(self.type, "Invalid value")
        text = self.text()
        prefix = f"{self.field}: "
        return {
            "reason": self.type,
            "message": text[len(prefix):] if text.startswith(prefix) else text,
            "field": self.field,
        } if words else {}

    def __repr__(self) -> str:
        return f"FieldError({self.text()!r})"


def _go_value(v: Any) -> str:
    """Render a composite value roughly as Go's %v does (for messages only)."""
    if isinstance(v, dict):
        inner = " ".join(f"{k}:{_go_value(x)}" for k, x in v.items())
        return f"map[{inner}]"
    if isinstance(v, list):
        return "[" + " ".join(_go_value(x) for x in v) + "]"
    if isinstance(v, str):
        return v
    return str(v)


class Invalid(StatusError):
    """422: ``Deployment.apps "web" is invalid: <cause>[, <cause>…]``.

    Built from :class:`FieldError` causes; ``details.causes`` carries each field path.
    """

    code = 422
    reason = "Invalid"

    def __init__(
        self, kind: str, group: str, name: str, errors: list[FieldError]
    ) -> None:
        qk = f"{kind}.{group}" if group else kind
        if len(errors) == 1:
            body = errors[0].text()
        else:
            body = "[" + ", ".join(e.text() for e in errors) + "]"
        super().__init__(
            f'{qk} "{name}" is invalid: {body}',
            details={
                "name": name,
                "group": group,
                "kind": kind,
                "causes": [e.cause() for e in errors],
            },
        )
        self.errors = errors


class TooManyRequests(StatusError):
    """429, e.g. an eviction blocked by a PodDisruptionBudget."""

    code = 429
    reason = "TooManyRequests"


class InternalError(StatusError):
    """500."""

    code = 500
    reason = "InternalError"


class UnknownError(StatusError):
    """500 with no reason: an error that is not an API status (upstream ``ErrorToAPIStatus`` of a
    plain Go error, e.g. failing to dial a kubelet); kubectl prints ``Error from server: <message>``."""

    code = 500
    reason = ""

    def status(self) -> dict[str, Any]:
        out = super().status()
        del out["reason"]  # StatusReasonUnknown is omitted on the wire
        return out


class ServiceUnavailable(StatusError):
    """503."""

    code = 503
    reason = "ServiceUnavailable"
