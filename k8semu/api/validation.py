"""Validation, as kube-apiserver's registry strategies run it on create and update.

Upstream, each strategy's ``Validate`` / ``ValidateUpdate`` calls the
``Validate<Kind>`` functions of ``pkg/apis/<group>/validation`` (object meta
from apimachinery, pod specs from ``pkg/apis/core/validation``). They return a
``field.ErrorList``; the registry turns a non-empty list into a 422 ``Invalid``
whose message lists every ``<path>: <Type>: <value>: <detail>``.

Design: :func:`validate` walks one defaulted object (plus the stored ``old``
object on update) with one function per kind, collecting
:class:`~k8semu.api.errors.FieldError` in upstream order. Paths are plain
strings built with ``_child`` / ``_idx`` / ``_key`` (``spec.containers[0].name``,
``data[my key]``). Messages and supported-value lists are written to match the
upstream text exactly. Where upstream prints a Go composite value with ``%#v``
(``map[string]string{"app":"web"}``, ``v1.LabelSelector{…}``,
``intstr.IntOrString{…}``), the value is wrapped in :class:`GoValue` so that
``FieldError.text()`` renders Go's spelling; ``GoValue.raw`` keeps the JSON value.

Inputs are expected to be defaulted (:func:`k8semu.api.defaults.apply_defaults`)
and, for Jobs, passed through ``job_prepare_for_create`` first, as upstream
validates after decoding (defaulting) and ``PrepareForCreate``. Generated names
are the registry's job: an object with ``generateName`` and no ``name`` is not
reported for the missing name. Quantities use ``k8semu.api.quantity`` (imported
lazily); a quantity that does not parse fails upstream while decoding, so
:func:`validate_or_raise` reports it as a 400 ``BadRequest`` like kube-apiserver.
"""

from __future__ import annotations

import json
import re
import zoneinfo
from typing import Any, Callable, Iterable

from k8semu.api.errors import BadRequest, FieldError, Invalid

__all__ = [
    "GoValue",
    "validate",
    "validate_or_raise",
    "parse_cron_schedule",
    "QUANTITY_REGEX_MSG",
]

# ---------------------------------------------------------------------------- messages

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = _DNS1123_LABEL + r"(\." + _DNS1123_LABEL + r")*"
_DNS1035_LABEL = r"[a-z]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = r"(" + _QUALIFIED_NAME + r")?"
_CONFIG_KEY = r"[-._a-zA-Z0-9]+"
_PERCENT = r"[0-9]+%"

_DNS1123_LABEL_RE = re.compile(f"^{_DNS1123_LABEL}$")
_DNS1123_SUBDOMAIN_RE = re.compile(f"^{_DNS1123_SUBDOMAIN}$")
_DNS1035_LABEL_RE = re.compile(f"^{_DNS1035_LABEL}$")
_QUALIFIED_NAME_RE = re.compile(f"^{_QUALIFIED_NAME}$")
_LABEL_VALUE_RE = re.compile(f"^{_LABEL_VALUE}$")
_CONFIG_KEY_RE = re.compile(f"^{_CONFIG_KEY}$")
_PERCENT_RE = re.compile(f"^{_PERCENT}$")
_QUANTITY_RE = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    # validation.RegexError: examples joined by ",  or " (sic, two spaces upstream).
    out = msg
    if examples:
        out += " (e.g. " + ",  or ".join(f"'{e}'" for e in examples) + ", "
    else:
        out += " ("
    return out + f"regex used for validation is '{fmt}')"


DNS1123_LABEL_MSG = _regex_error(
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character", _DNS1123_LABEL, "my-name", "123-abc")
DNS1123_SUBDOMAIN_MSG = _regex_error(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character", _DNS1123_SUBDOMAIN, "example.com")
DNS1035_LABEL_MSG = _regex_error(
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character", _DNS1035_LABEL,
    "my-name", "abc-123")
QUALIFIED_NAME_MSG = _regex_error(
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character", _QUALIFIED_NAME, "MyName", "my.name", "123-abc")
LABEL_VALUE_MSG = _regex_error(
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character", _LABEL_VALUE,
    "MyValue", "my_value", "12345")
CONFIG_KEY_MSG = _regex_error(
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'", _CONFIG_KEY,
    "key.name", "KEY_NAME", "key-name")
PERCENT_MSG = _regex_error(
    "a valid percent string must be a numeric string followed by an ending '%'", _PERCENT,
    "1%", "93%")
QUANTITY_REGEX_MSG = (
    "quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
NEGATIVE_MSG = "must be greater than or equal to 0"
IMMUTABLE_MSG = "field is immutable"
PORT_RANGE_MSG = "must be between 1 and 65535, inclusive"
POD_UPDATE_MSG = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
    "`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)
SELECTOR_MISMATCH_MSG = "`selector` does not match template `labels`"
TOTAL_ANNOTATION_SIZE = 256 * 1024
_MAX_INT32 = 2147483647


def _max_len(n: int) -> str:
    return f"must be no more than {n} characters"


# ---------------------------------------------------------------------------- Go rendering


class GoValue:
    """A value for an error message, rendered the way Go's ``%#v`` would print it.

    ``str(v)`` is the Go spelling (``map[string]string{"app":"web"}``);
    ``v.raw`` is the original JSON-shaped value.
    """

    __slots__ = ("raw", "text")

    def __init__(self, raw: Any, text: str) -> None:
        self.raw = raw
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"GoValue({self.text})"


def _q(s: Any) -> str:
    return json.dumps("" if s is None else str(s), ensure_ascii=False)


def _go_str_map(d: Any) -> str:
    if d is None:
        return "map[string]string(nil)"
    inner = ", ".join(f"{_q(k)}:{_q(v)}" for k, v in sorted(d.items()))
    return "map[string]string{" + inner + "}"


def _go_str_slice(xs: Any) -> str:
    if xs is None:
        return "[]string(nil)"
    return "[]string{" + ", ".join(_q(x) for x in xs) + "}"


def _go_selector(sel: Any) -> GoValue:
    sel = sel or {}
    exprs = sel.get("matchExpressions")
    if exprs is None:
        exprs_text = "[]v1.LabelSelectorRequirement(nil)"
    else:
        items = ", ".join(
            "v1.LabelSelectorRequirement{"
            f"Key:{_q(e.get('key'))}, Operator:{_q(e.get('operator'))}, "
            f"Values:{_go_str_slice(e.get('values'))}}}"
            for e in exprs
        )
        exprs_text = "[]v1.LabelSelectorRequirement{" + items + "}"
    text = (f"v1.LabelSelector{{MatchLabels:{_go_str_map(sel.get('matchLabels'))}, "
            f"MatchExpressions:{exprs_text}}}")
    return GoValue(sel, text)


def _go_labels(d: Any) -> GoValue:
    return GoValue(d, _go_str_map(d))


def _go_intstr(v: Any) -> GoValue:
    if isinstance(v, str):
        return GoValue(v, f'intstr.IntOrString{{Type:1, IntVal:0, StrVal:{_q(v)}}}')
    return GoValue(v, f'intstr.IntOrString{{Type:0, IntVal:{int(v or 0)}, StrVal:""}}')


def _go_strings(xs: Any) -> GoValue:
    return GoValue(xs, _go_str_slice(xs))


# ---------------------------------------------------------------------------- paths & errors


def _child(path: str, *names: str) -> str:
    for n in names:
        path = f"{path}.{n}" if path else n
    return path


def _idx(path: str, i: int) -> str:
    return f"{path}[{i}]"


def _key(path: str, k: str) -> str:
    return f"{path}[{k}]"


class _Err(FieldError):
    """FieldError with the cause types errors.py has no words for (NotFound, TooMany)."""

    __slots__ = ()
    _WORDS = {**FieldError._WORDS, "FieldValueNotFound": "Not found", "FieldValueTooMany": "Too many"}


def _not_found(path: str, value: Any) -> FieldError:
    return _Err("FieldValueNotFound", path, "", value)


def _too_long(path: str, detail: str) -> FieldError:
    return _Err("FieldValueTooLong", path, detail, "")


# ---------------------------------------------------------------------------- name checks


def is_dns1123_label(v: str) -> list[str]:
    errs = []
    if len(v) > 63:
        errs.append(_max_len(63))
    if not _DNS1123_LABEL_RE.match(v):
        errs.append(DNS1123_LABEL_MSG)
    return errs


def is_dns1123_subdomain(v: str) -> list[str]:
    errs = []
    if len(v) > 253:
        errs.append(_max_len(253))
    if not _DNS1123_SUBDOMAIN_RE.match(v):
        errs.append(DNS1123_SUBDOMAIN_MSG)
    return errs


def is_dns1035_label(v: str) -> list[str]:
    errs = []
    if len(v) > 63:
        errs.append(_max_len(63))
    if not _DNS1035_LABEL_RE.match(v):
        errs.append(DNS1035_LABEL_MSG)
    return errs


def is_path_segment_name(v: str) -> list[str]:
    if v in (".", ".."):
        return [f"may not be '{v}'"]
    errs = []
    for bad in ("/", "%"):
        if bad in v:
            errs.append(f"may not contain '{bad}'")
    return errs


def is_qualified_name(v: str) -> list[str]:
    errs: list[str] = []
    parts = v.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return ["a qualified name " + QUALIFIED_NAME_MSG
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part " + _max_len(63))
    if not _QUALIFIED_NAME_RE.match(name):
        errs.append("name part " + QUALIFIED_NAME_MSG)
    return errs


def is_label_value(v: str) -> list[str]:
    errs = []
    if len(v) > 63:
        errs.append(_max_len(63))
    if not _LABEL_VALUE_RE.match(v):
        errs.append(LABEL_VALUE_MSG)
    return errs


def is_config_key(v: str) -> list[str]:
    errs = []
    if len(v) > 253:
        errs.append(_max_len(253))
    if not _CONFIG_KEY_RE.match(v):
        errs.append(CONFIG_KEY_MSG)
    if v == ".":
        errs.append("must not be '.'")
    elif v == "..":
        errs.append("must not be '..'")
    elif v.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def is_valid_port_name(v: str) -> list[str]:
    errs = []
    if len(v) > 15:
        errs.append(_max_len(15))
    if not re.match(r"^[-a-z0-9]+$", v):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search(r"[a-z]", v):
        errs.append("must contain at least one letter (a-z)")
    if "--" in v:
        errs.append("must not contain consecutive hyphens")
    if v and (v[0] == "-" or v[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def _mask_trailing_dash(name: str) -> str:
    return name[:-1] + "a" if len(name) > 1 and name.endswith("-") else name


NameFn = Callable[[str], "list[str]"]


def _check(errs: list[FieldError], path: str, value: Any, msgs: Iterable[str]) -> None:
    for m in msgs:
        errs.append(FieldError.invalid(path, value, m))


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _nonneg(errs: list[FieldError], path: str, value: Any) -> None:
    if _is_int(value) and value < 0:
        errs.append(FieldError.invalid(path, value, NEGATIVE_MSG))


# ---------------------------------------------------------------------------- metadata


def _validate_labels(errs: list[FieldError], labels: Any, path: str) -> None:
    for k, v in (labels or {}).items():
        _check(errs, path, k, is_qualified_name(str(k)))
        _check(errs, path, v, is_label_value("" if v is None else str(v)))


def _validate_annotations(errs: list[FieldError], ann: Any, path: str) -> None:
    total = 0
    for k, v in (ann or {}).items():
        _check(errs, path, k, is_qualified_name(str(k).lower()))
        total += len(str(k).encode()) + len("" if v is None else str(v).encode())
    if total > TOTAL_ANNOTATION_SIZE:
        errs.append(_too_long(path, f"must have at most {TOTAL_ANNOTATION_SIZE} bytes"))


_STANDARD_FINALIZERS = ("kubernetes", "orphan", "foregroundDeletion")


def _validate_meta(errs: list[FieldError], obj: dict, name_fn: NameFn, namespaced: bool,
                   path: str = "metadata") -> None:
    meta = obj.get("metadata") or {}
    gen = meta.get("generateName") or ""
    if gen:
        _check(errs, _child(path, "generateName"), gen, name_fn(_mask_trailing_dash(gen)))
    name = meta.get("name") or ""
    if not name:
        if not gen:
            errs.append(FieldError.required(_child(path, "name"), "name or generateName is required"))
    else:
        _check(errs, _child(path, "name"), name, name_fn(name))
    ns = meta.get("namespace") or ""
    if namespaced:
        if not ns:
            errs.append(FieldError.required(_child(path, "namespace")))
        else:
            _check(errs, _child(path, "namespace"), ns, is_dns1123_label(ns))
    elif ns:
        errs.append(FieldError.forbidden(_child(path, "namespace"), "not allowed on this type"))
    _nonneg(errs, _child(path, "generation"), meta.get("generation"))
    _validate_labels(errs, meta.get("labels"), _child(path, "labels"))
    _validate_annotations(errs, meta.get("annotations"), _child(path, "annotations"))
    for f in meta.get("finalizers") or ():
        fpath = _child(path, "finalizers")
        msgs = is_qualified_name(str(f))
        _check(errs, fpath, f, msgs)
        if not msgs and "/" not in str(f) and f not in _STANDARD_FINALIZERS:
            errs.append(FieldError.invalid(
                fpath, f, "name is neither a standard finalizer name nor is it fully qualified"))


def _validate_meta_update(errs: list[FieldError], new: dict, old: dict) -> None:
    nm, om = new.get("metadata") or {}, old.get("metadata") or {}
    for field in ("name", "namespace", "uid", "creationTimestamp"):
        if om.get(field) and nm.get(field) and nm.get(field) != om.get(field):
            errs.append(FieldError.invalid(_child("metadata", field), nm.get(field), IMMUTABLE_MSG))


# ---------------------------------------------------------------------------- label selectors


def _validate_selector(errs: list[FieldError], sel: Any, path: str, *, values: bool = False) -> None:
    """``metav1validation.ValidateLabelSelector``: matchLabels, then per expression the
    operator/values rule and the key, and with ``values`` each value as a label value (what
    ``AllowInvalidLabelValueInSelector`` turns off: NetworkPolicy checks them)."""
    sel = sel or {}
    _validate_labels(errs, sel.get("matchLabels"), _child(path, "matchLabels"))
    for i, expr in enumerate(sel.get("matchExpressions") or ()):
        epath = _idx(_child(path, "matchExpressions"), i)
        op, vals = expr.get("operator"), expr.get("values") or []
        if op in ("In", "NotIn"):
            if not vals:
                errs.append(FieldError.required(
                    _child(epath, "values"), "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist"):
            if vals:
                errs.append(FieldError.forbidden(
                    _child(epath, "values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        else:
            errs.append(FieldError.invalid(_child(epath, "operator"), op or "", "not a valid selector operator"))
        key = str(expr.get("key") or "")
        _check(errs, _child(epath, "key"), key, is_qualified_name(key))
        if values:
            for j, v in enumerate(vals):
                v = "" if v is None else str(v)
                _check(errs, _idx(_child(epath, "values"), j), v, is_label_value(v))


def _selector_matches(sel: dict, labels: dict) -> bool:
    """metav1.LabelSelectorAsSelector(sel).Matches(labels); an empty selector matches all."""
    labels = labels or {}
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in sel.get("matchExpressions") or ():
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and (key not in labels or labels[key] not in values):
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def _selector_is_empty(sel: Any) -> bool:
    return not sel or (not sel.get("matchLabels") and not sel.get("matchExpressions"))


# ---------------------------------------------------------------------------- quantities


class _DecodeError(FieldError):
    """A quantity that does not parse: upstream rejects it while decoding (400), not in validation."""

    __slots__ = ()


def _parse_quantity(errs: list[FieldError], value: Any, path: str) -> Any:
    """The ``Quantity`` for ``value``, or None after appending a :class:`_DecodeError`."""
    if isinstance(value, bool) or value is None or not isinstance(value, (str, int, float)):
        errs.append(_DecodeError("FieldValueInvalid", path, QUANTITY_REGEX_MSG, str(value)))
        return None
    text = value if isinstance(value, str) else (str(value) if _is_int(value) else repr(value))
    if not _QUANTITY_RE.match(text):
        errs.append(_DecodeError("FieldValueInvalid", path, QUANTITY_REGEX_MSG, text))
        return None
    from k8semu.api.quantity import parse_quantity  # lazy: sibling module

    try:
        return parse_quantity(value if _is_int(value) else text)
    except ValueError as exc:
        errs.append(_DecodeError("FieldValueInvalid", path, str(exc), text))
        return None


def _is_negative(q: Any) -> bool:
    from k8semu.api.quantity import parse_quantity

    return q < parse_quantity("0")


def _validate_resource_list(errs: list[FieldError], rl: Any, path: str) -> dict[str, Any]:
    """Parse and check a ResourceList; returns name -> Quantity for the parseable ones."""
    parsed = {}
    for name, value in (rl or {}).items():
        q = _parse_quantity(errs, value, _key(path, name))
        if q is None:
            continue
        parsed[name] = q
        if _is_negative(q):
            errs.append(FieldError.invalid(_key(path, name), str(q), NEGATIVE_MSG))
    return parsed


_STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")


def _validate_resources(errs: list[FieldError], res: Any, path: str) -> None:
    if not isinstance(res, dict):
        return
    for part in ("limits", "requests"):
        for name in (res.get(part) or {}):
            if "/" not in name and name not in _STANDARD_CONTAINER_RESOURCES \
                    and not name.startswith("hugepages-"):
                errs.append(FieldError.invalid(_key(_child(path, part), name), name,
                                               "must be a standard resource for containers"))
    limits = _validate_resource_list(errs, res.get("limits"), _child(path, "limits"))
    req_path = _child(path, "requests")
    requests = _validate_resource_list(errs, res.get("requests"), req_path)
    for name, q in requests.items():
        lim = limits.get(name)
        if lim is not None and q > lim:
            errs.append(FieldError.invalid(
                req_path, str(q), f"must be less than or equal to {name} limit of {lim}"))


# ---------------------------------------------------------------------------- pod spec

_VOLUME_SOURCES = (
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret",
    "nfs", "iscsi", "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder",
    "cephfs", "flocker", "downwardAPI", "fc", "azureFile", "configMap", "vsphereVolume",
    "quobyte", "azureDisk", "photonPersistentDisk", "projected", "portworxVolume", "scaleIO",
    "storageos", "csi", "ephemeral", "image",
)
_HOST_PATH_TYPES = ("", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File",
                    "FileOrCreate", "Socket")
_PROTOCOLS = ["SCTP", "TCP", "UDP"]


def _validate_port_num_or_name(errs: list[FieldError], port: Any, path: str) -> None:
    if _is_int(port):
        if not 1 <= port <= 65535:
            errs.append(FieldError.invalid(path, port, PORT_RANGE_MSG))
    elif isinstance(port, str):
        if not port:
            errs.append(FieldError.required(path))
        else:
            _check(errs, path, port, is_valid_port_name(port))
    else:
        errs.append(FieldError.invalid(path, port, "must contain an int or string"))


def _validate_volumes(errs: list[FieldError], volumes: Any, path: str) -> set[str]:
    names: set[str] = set()
    for i, vol in enumerate(volumes or ()):
        vpath = _idx(path, i)
        name = vol.get("name") or ""
        if not name:
            errs.append(FieldError.required(_child(vpath, "name")))
        else:
            _check(errs, _child(vpath, "name"), name, is_dns1123_label(name))
            if name in names:
                errs.append(FieldError.duplicate(_child(vpath, "name"), name))
            names.add(name)
        sources = [k for k in _VOLUME_SOURCES if k in vol]
        if not sources:
            errs.append(FieldError.required(vpath, "must specify a volume type"))
        for extra in sources[1:]:
            errs.append(FieldError.forbidden(_child(vpath, extra), "may not specify more than 1 volume type"))
        if "configMap" in vol and not (vol["configMap"] or {}).get("name"):
            errs.append(FieldError.required(_child(vpath, "configMap", "name")))
        if "secret" in vol and not (vol["secret"] or {}).get("secretName"):
            errs.append(FieldError.required(_child(vpath, "secret", "secretName")))
        if "persistentVolumeClaim" in vol and not (vol["persistentVolumeClaim"] or {}).get("claimName"):
            errs.append(FieldError.required(_child(vpath, "persistentVolumeClaim", "claimName")))
        if "hostPath" in vol:
            hp = vol["hostPath"] or {}
            if not hp.get("path"):
                errs.append(FieldError.required(_child(vpath, "hostPath", "path")))
            if hp.get("type") not in _HOST_PATH_TYPES and hp.get("type") is not None:
                errs.append(FieldError.not_supported(_child(vpath, "hostPath", "type"), hp.get("type"),
                                                     list(_HOST_PATH_TYPES)))
        for key in ("configMap", "secret", "downwardAPI", "projected"):
            mode = (vol.get(key) or {}).get("defaultMode") if isinstance(vol.get(key), dict) else None
            if _is_int(mode) and not 0 <= mode <= 0o777:
                errs.append(FieldError.invalid(
                    _child(vpath, key, "defaultMode"), mode,
                    "must be a number between 0 and 0777 (octal), both inclusive"))
    return names


def _validate_probe(errs: list[FieldError], probe: Any, path: str, *, success_one: bool) -> None:
    if not isinstance(probe, dict):
        return
    handlers = [k for k in ("exec", "httpGet", "tcpSocket", "grpc") if probe.get(k) is not None]
    if not handlers:
        errs.append(FieldError.required(path, "must specify a handler type"))
    for extra in handlers[1:]:
        errs.append(FieldError.forbidden(_child(path, extra), "may not specify more than 1 handler type"))
    if handlers:
        kind = handlers[0]
        h = probe[kind] or {}
        hpath = _child(path, kind)
        if kind == "exec" and not h.get("command"):
            errs.append(FieldError.required(_child(hpath, "command")))
        elif kind == "httpGet":
            if not h.get("path"):
                errs.append(FieldError.required(_child(hpath, "path")))
            _validate_port_num_or_name(errs, h.get("port"), _child(hpath, "port"))
            if h.get("scheme") not in ("HTTP", "HTTPS"):
                errs.append(FieldError.not_supported(_child(hpath, "scheme"), h.get("scheme"),
                                                     ["HTTP", "HTTPS"]))
        elif kind == "tcpSocket":
            _validate_port_num_or_name(errs, h.get("port"), _child(hpath, "port"))
        elif kind == "grpc":
            port = h.get("port")
            if not _is_int(port) or not 1 <= port <= 65535:
                errs.append(FieldError.invalid(_child(hpath, "port"), port, PORT_RANGE_MSG))
    for field in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds",
                  "successThreshold", "failureThreshold"):
        _nonneg(errs, _child(path, field), probe.get(field))
    if success_one and probe.get("successThreshold") not in (None, 1):
        errs.append(FieldError.invalid(_child(path, "successThreshold"), probe.get("successThreshold"),
                                       "must be 1"))
    tgps = probe.get("terminationGracePeriodSeconds")
    if _is_int(tgps) and tgps <= 0:
        errs.append(FieldError.invalid(_child(path, "terminationGracePeriodSeconds"), tgps,
                                       "must be greater than 0"))


_PULL_POLICIES = ["Always", "IfNotPresent", "Never"]
_TERMINATION_MESSAGE_POLICIES = ["FallbackToLogsOnError", "File"]


def _validate_env(errs: list[FieldError], env: Any, path: str) -> None:
    for i, e in enumerate(env or ()):
        epath = _idx(path, i)
        name = e.get("name") or ""
        if not name:
            errs.append(FieldError.required(_child(epath, "name")))
        elif "=" in name or any(not (32 <= ord(ch) <= 126) for ch in name):
            errs.append(FieldError.invalid(
                _child(epath, "name"), name,
                "a valid environment variable name must consist only of printable ASCII "
                "characters other than '='"))
        vf = e.get("valueFrom")
        if vf is not None:
            sources = [k for k in ("fieldRef", "resourceFieldRef", "configMapKeyRef",
                                   "secretKeyRef", "fileKeyRef") if vf.get(k) is not None]
            if not sources:
                errs.append(FieldError.invalid(_child(epath, "valueFrom"), "",
                                               "must specify one of: `fieldRef`, `resourceFieldRef`, "
                                               "`configMapKeyRef` or `secretKeyRef`"))
            elif len(sources) > 1:
                errs.append(FieldError.invalid(_child(epath, "valueFrom"), "",
                                               "may not have more than one field specified at a time"))
            if e.get("value"):
                errs.append(FieldError.invalid(_child(epath, "valueFrom"), "",
                                               "may not be specified when `value` is not empty"))


def _validate_containers(errs: list[FieldError], containers: Any, path: str, volumes: set[str],
                         names: set[str], *, regular: bool, host_users: bool = True) -> None:
    for i, c in enumerate(containers or ()):
        cpath = _idx(path, i)
        name = c.get("name") or ""
        if not name:
            errs.append(FieldError.required(_child(cpath, "name")))
        else:
            _check(errs, _child(cpath, "name"), name, is_dns1123_label(name))
            if name in names:
                errs.append(FieldError.duplicate(_child(cpath, "name"), name))
            names.add(name)
        if not c.get("image"):
            errs.append(FieldError.required(_child(cpath, "image")))
        policy = c.get("imagePullPolicy")
        if not policy:
            errs.append(FieldError.required(_child(cpath, "imagePullPolicy")))
        elif policy not in _PULL_POLICIES:
            errs.append(FieldError.not_supported(_child(cpath, "imagePullPolicy"), policy, _PULL_POLICIES))
        tmp = c.get("terminationMessagePolicy")
        if tmp and tmp not in _TERMINATION_MESSAGE_POLICIES:
            errs.append(FieldError.not_supported(_child(cpath, "terminationMessagePolicy"), tmp,
                                                 _TERMINATION_MESSAGE_POLICIES))
        port_names: set[str] = set()
        for j, port in enumerate(c.get("ports") or ()):
            ppath = _idx(_child(cpath, "ports"), j)
            pname = port.get("name")
            if pname:
                _check(errs, _child(ppath, "name"), pname, is_valid_port_name(pname))
                if pname in port_names:
                    errs.append(FieldError.duplicate(_child(ppath, "name"), pname))
                port_names.add(pname)
            cport = port.get("containerPort")
            if not cport:
                errs.append(FieldError.required(_child(ppath, "containerPort")))
            elif not _is_int(cport) or not 1 <= cport <= 65535:
                errs.append(FieldError.invalid(_child(ppath, "containerPort"), cport, PORT_RANGE_MSG))
            hport = port.get("hostPort")
            if hport and (not _is_int(hport) or not 1 <= hport <= 65535):
                errs.append(FieldError.invalid(_child(ppath, "hostPort"), hport, PORT_RANGE_MSG))
            proto = port.get("protocol")
            if not proto:
                errs.append(FieldError.required(_child(ppath, "protocol")))
            elif proto not in _PROTOCOLS:
                errs.append(FieldError.not_supported(_child(ppath, "protocol"), proto, _PROTOCOLS))
        _validate_env(errs, c.get("env"), _child(cpath, "env"))
        mount_paths: set[str] = set()
        for j, m in enumerate(c.get("volumeMounts") or ()):
            mpath = _idx(_child(cpath, "volumeMounts"), j)
            mname = m.get("name") or ""
            if not mname:
                errs.append(FieldError.required(_child(mpath, "name")))
            elif mname not in volumes:
                errs.append(_not_found(_child(mpath, "name"), mname))
            mp = m.get("mountPath") or ""
            if not mp:
                errs.append(FieldError.required(_child(mpath, "mountPath")))
            elif mp in mount_paths:
                errs.append(FieldError.invalid(_child(mpath, "mountPath"), mp, "must be unique"))
            mount_paths.add(mp)
        if regular:
            _validate_probe(errs, c.get("livenessProbe"), _child(cpath, "livenessProbe"), success_one=True)
            _validate_probe(errs, c.get("readinessProbe"), _child(cpath, "readinessProbe"), success_one=False)
            _validate_probe(errs, c.get("startupProbe"), _child(cpath, "startupProbe"), success_one=True)
        _validate_resources(errs, c.get("resources"), _child(cpath, "resources"))
        _validate_container_security_context(errs, c.get("securityContext"), _child(cpath, "securityContext"),
                                             host_users)


_RESTART_POLICIES = ["Always", "OnFailure", "Never"]
_DNS_POLICIES = ["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"]
_TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]


def _validate_tolerations(errs: list[FieldError], tolerations: Any, path: str) -> None:
    for i, t in enumerate(tolerations or ()):
        tpath = _idx(path, i)
        key = t.get("key") or ""
        op = t.get("operator") or ""
        if key:
            _check(errs, _child(tpath, "key"), key, is_qualified_name(key))
        elif op != "Exists":
            errs.append(FieldError.invalid(
                _child(tpath, "operator"), op,
                'operator must be Exists when `key` is empty, which means "match all values and all keys"'))
        if t.get("tolerationSeconds") is not None and t.get("effect") != "NoExecute":
            errs.append(FieldError.invalid(_child(tpath, "effect"), t.get("effect") or "",
                                           "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        value = t.get("value") or ""
        if op in ("", "Equal"):
            msgs = is_label_value(value)
            if msgs:
                errs.append(FieldError.invalid(_child(tpath, "operator"), value, ";".join(msgs)))
        elif op == "Exists":
            if value:
                errs.append(FieldError.invalid(_child(tpath, "operator"), GoValue(t, _go_toleration(t)),
                                               "value must be empty when `operator` is 'Exists'"))
        else:
            errs.append(FieldError.not_supported(_child(tpath, "operator"), op, ["Equal", "Exists"]))
        effect = t.get("effect") or ""
        if effect and effect not in _TAINT_EFFECTS:
            errs.append(FieldError.not_supported(_child(tpath, "effect"), effect, _TAINT_EFFECTS))


def _go_toleration(t: dict) -> str:
    secs = t.get("tolerationSeconds")
    secs_text = "(*int64)(nil)" if secs is None else f"&{secs}"
    return (f"core.Toleration{{Key:{_q(t.get('key'))}, Operator:{_q(t.get('operator'))}, "
            f"Value:{_q(t.get('value'))}, Effect:{_q(t.get('effect'))}, TolerationSeconds:{secs_text}}}")


def _validate_pod_spec(errs: list[FieldError], spec: Any, path: str,
                       claim_names: Iterable[str] = ()) -> None:
    if not isinstance(spec, dict):
        errs.append(FieldError.required(path))
        return
    volumes = _validate_volumes(errs, spec.get("volumes"), _child(path, "volumes"))
    volumes |= set(claim_names)  # a StatefulSet's volumeClaimTemplates are mountable too
    names: set[str] = set()
    if not spec.get("containers"):
        errs.append(FieldError.required(_child(path, "containers")))
    _validate_containers(errs, spec.get("containers"), _child(path, "containers"), volumes, names,
                         regular=True, host_users=_host_users(spec))
    _validate_containers(errs, spec.get("initContainers"), _child(path, "initContainers"), volumes,
                         names, regular=False, host_users=_host_users(spec))
    rp = spec.get("restartPolicy") or ""
    if not rp:
        errs.append(FieldError.required(_child(path, "restartPolicy")))
    elif rp not in _RESTART_POLICIES:
        errs.append(FieldError.not_supported(_child(path, "restartPolicy"), rp, _RESTART_POLICIES))
    dp = spec.get("dnsPolicy") or ""
    if not dp:
        errs.append(FieldError.required(_child(path, "dnsPolicy")))
    elif dp not in _DNS_POLICIES:
        errs.append(FieldError.not_supported(_child(path, "dnsPolicy"), dp, _DNS_POLICIES))
    _validate_labels(errs, spec.get("nodeSelector"), _child(path, "nodeSelector"))
    _validate_windows_host_process(errs, spec, path)
    _validate_host_users(errs, spec, path)
    for field, fn in (("serviceAccountName", is_dns1123_subdomain), ("nodeName", is_dns1123_subdomain),
                      ("hostname", is_dns1123_label), ("subdomain", is_dns1123_label),
                      ("priorityClassName", is_dns1123_subdomain)):
        value = spec.get(field)
        if value:
            _check(errs, _child(path, field), value, fn(value))
    ads = spec.get("activeDeadlineSeconds")
    if ads is not None and (not _is_int(ads) or not 1 <= ads <= _MAX_INT32):
        errs.append(FieldError.invalid(_child(path, "activeDeadlineSeconds"), ads,
                                       f"must be between 1 and {_MAX_INT32}, inclusive"))
    _validate_tolerations(errs, spec.get("tolerations"), _child(path, "tolerations"))


def _host_process(sc: Any) -> Any:
    """``securityContext.windowsOptions.hostProcess`` (None when unset)."""
    if not isinstance(sc, dict) or not isinstance(sc.get("windowsOptions"), dict):
        return None
    return sc["windowsOptions"].get("hostProcess")


def _validate_windows_host_process(errs: list[FieldError], spec: dict, path: str) -> None:
    """Upstream ``validateWindowsHostProcessPod``: over every container (init, regular, then
    ephemeral, as ``VisitContainersWithPath``), a container's ``hostProcess`` that differs from
    the pod's is ``…securityContext.windowsOptions.hostProcess: Invalid value: false: pod
    hostProcess value must be identical if both are specified, was true``. A container is a
    HostProcess container when it sets ``hostProcess: true`` or inherits it from the pod; if
    any is, all must be (``spec: Invalid value: "": If pod contains any hostProcess containers
    then all containers must be HostProcess containers``) and the pod must use the host
    network (``spec.hostNetwork: Invalid value: false: hostNetwork must be true if pod contains
    any hostProcess containers``). (Privileged pods are allowed: kubeadm runs kube-apiserver
    with ``--allow-privileged=true``, so "disallowed by cluster policy" never applies.)"""
    pod_hp = _host_process(spec.get("securityContext"))
    total = host_process = 0
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for i, c in enumerate(spec.get(key) or ()):
            total += 1
            c_hp = _host_process((c or {}).get("securityContext"))
            if pod_hp is not None and c_hp is not None and pod_hp != c_hp:
                errs.append(FieldError.invalid(
                    _child(_idx(_child(path, key), i), "securityContext", "windowsOptions", "hostProcess"),
                    c_hp, f"pod hostProcess value must be identical if both are specified, was "
                          f"{'true' if pod_hp else 'false'}"))
            if c_hp is True or (c_hp is None and pod_hp is True):
                host_process += 1
    if host_process:
        if host_process != total:
            errs.append(FieldError.invalid(
                path, "", "If pod contains any hostProcess containers then all containers must be "
                          "HostProcess containers"))
        host_network = bool(spec.get("hostNetwork"))
        if not host_network:
            errs.append(FieldError.invalid(_child(path, "hostNetwork"), host_network,
                                           "hostNetwork must be true if pod contains any hostProcess containers"))


def _host_users(spec: dict) -> bool:
    """The pod shares the host's user namespace unless ``spec.hostUsers: false`` (upstream's
    internal type keeps it in the pod security context; v1 has it on the spec)."""
    return spec.get("hostUsers") is None or bool(spec["hostUsers"])


def _validate_host_users(errs: list[FieldError], spec: dict, path: str) -> None:
    """Upstream ``validateHostUsers`` (UserNamespacesSupport, on by default in 1.33): a pod in its
    own user namespace (``hostUsers: false``) may not share the host's network, PID or IPC
    namespace (``spec.hostNetwork: Forbidden: when `pod.Spec.HostUsers` is false``; upstream
    spells the other two paths ``spec.HostPID`` and ``spec.HostIPC``)."""
    if _host_users(spec):
        return
    for field, name in (("hostNetwork", "hostNetwork"), ("hostPID", "HostPID"), ("hostIPC", "HostIPC")):
        if spec.get(field):
            errs.append(FieldError.forbidden(_child(path, name), "when `pod.Spec.HostUsers` is false"))


_PROC_MOUNT_TYPES = ["Default", "Unmasked"]


def _validate_container_security_context(errs: list[FieldError], sc: Any, path: str, host_users: bool) -> None:
    """Upstream ``ValidateSecurityContext``'s ``procMount`` (ProcMountType, on by default in
    1.33): ``Default`` or ``Unmasked`` (else ``Unsupported value``), and ``Unmasked`` only in a
    pod with ``hostUsers: false`` (``…securityContext.procMount: Invalid value: "Unmasked":
    `hostUsers` must be false to use `Unmasked```)."""
    if not isinstance(sc, dict) or sc.get("procMount") is None:
        return
    pm = sc["procMount"]
    if pm not in _PROC_MOUNT_TYPES:
        errs.append(FieldError.not_supported(_child(path, "procMount"), pm, _PROC_MOUNT_TYPES))
    if host_users and pm == "Unmasked":
        errs.append(FieldError.invalid(_child(path, "procMount"), pm, "`hostUsers` must be false to use `Unmasked`"))


def _validate_template(errs: list[FieldError], tmpl: Any, path: str,
                       claim_names: Iterable[str] = ()) -> None:
    if not isinstance(tmpl, dict):
        errs.append(FieldError.required(path))
        return
    meta = tmpl.get("metadata") or {}
    _validate_labels(errs, meta.get("labels"), _child(path, "metadata", "labels"))
    _validate_annotations(errs, meta.get("annotations"), _child(path, "metadata", "annotations"))
    _validate_pod_spec(errs, tmpl.get("spec"), _child(path, "spec"), claim_names)


def _template_labels(spec: dict) -> Any:
    return ((spec.get("template") or {}).get("metadata") or {}).get("labels")


def _validate_pod(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    if old is not None and obj.get("spec") == old.get("spec"):
        # an unchanged spec was validated when it was stored, and breaks no update rule: a
        # status update (the kubelet's, ~every pod event) only validates what it changes, as
        # upstream's ValidatePodStatusUpdate
        return
    _validate_pod_spec(errs, obj.get("spec"), "spec")
    if old is not None:
        _validate_pod_update(errs, obj.get("spec") or {}, old.get("spec") or {})
    else:
        from .ephemeralcontainers import create_errors

        errs.extend(create_errors(obj))


def _validate_pod_update(errs: list[FieldError], new: dict, old: dict) -> None:
    new_ads, old_ads = new.get("activeDeadlineSeconds"), old.get("activeDeadlineSeconds")
    if old_ads is not None:
        if new_ads is None:
            errs.append(FieldError.invalid("spec.activeDeadlineSeconds", None,
                                           "must not update from a positive integer to nil value"))
        elif _is_int(new_ads) and new_ads > old_ads:
            errs.append(FieldError.invalid("spec.activeDeadlineSeconds", new_ads,
                                           "must be less than or equal to previous value"))
    if len(new.get("containers") or ()) != len(old.get("containers") or ()):
        errs.append(FieldError.forbidden("spec.containers", "pod updates may not add or remove containers"))
        return
    if len(new.get("initContainers") or ()) != len(old.get("initContainers") or ()):
        errs.append(FieldError.forbidden("spec.initContainers",
                                         "pod updates may not add or remove containers"))
        return
    # Munge the old spec with everything that may change, then demand equality.
    munged = json.loads(json.dumps(old))
    for key in ("containers", "initContainers"):
        for mc, nc in zip(munged.get(key) or (), new.get(key) or ()):
            mc["image"] = nc.get("image")
    for key in ("activeDeadlineSeconds", "tolerations"):
        if key in new:
            munged[key] = new[key]
        else:
            munged.pop(key, None)
    old_tgps = old.get("terminationGracePeriodSeconds")
    if _is_int(old_tgps) and old_tgps < 0 and new.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = 1
    for key in ("schedulingGates",):  # gates may only be removed, which the scheduler does
        if len(new.get(key) or ()) <= len(old.get(key) or ()):
            munged[key] = new.get(key)
            if munged[key] is None:
                munged.pop(key)
    if munged != new:
        errs.append(FieldError.forbidden("spec", POD_UPDATE_MSG + "\n" + _spec_diff(munged, new)))
        return
    for old_t in old.get("tolerations") or ():
        found = any({**old_t, "tolerationSeconds": t.get("tolerationSeconds")} == t
                    or ({k: v for k, v in old_t.items() if k != "tolerationSeconds"}
                        == {k: v for k, v in t.items() if k != "tolerationSeconds"})
                    for t in new.get("tolerations") or ())
        if not found:
            errs.append(FieldError.forbidden(
                "spec.tolerations", "existing toleration can not be modified except its tolerationSeconds"))
            break


def _spec_diff(old: dict, new: dict, type_name: str = "core.PodSpec") -> str:
    """A short, deterministic line diff (upstream prints go-cmp's diff of the Go type)."""
    lines = [f"  {type_name}{{"]
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            if key in old:
                lines.append(f"- \t{key}: {json.dumps(old[key], sort_keys=True)},")
            if key in new:
                lines.append(f"+ \t{key}: {json.dumps(new[key], sort_keys=True)},")
    lines.append("  }")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- workloads


def _validate_int_or_percent(errs: list[FieldError], v: Any, path: str) -> None:
    if isinstance(v, str):
        if not _PERCENT_RE.match(v):
            errs.append(FieldError.invalid(path, _go_intstr(v), PERCENT_MSG))
    elif _is_int(v) and v < 0:
        errs.append(FieldError.invalid(path, v, NEGATIVE_MSG))


def _intstr_value(v: Any) -> int:
    if isinstance(v, str):
        m = re.match(r"^([0-9]+)%$", v)
        return int(m.group(1)) if m else -1
    return v if _is_int(v) else 0


def _not_more_than_100(errs: list[FieldError], v: Any, path: str) -> None:
    if isinstance(v, str) and _intstr_value(v) > 100:
        errs.append(FieldError.invalid(path, _go_intstr(v), "must not be greater than 100%"))


def _validate_selector_and_template(errs: list[FieldError], spec: dict, kind_word: str | None,
                                    restart: list[str] | None, *, forbid_deadline: str | None = None,
                                    claim_names: Iterable[str] = ()) -> None:
    """Selector required/non-empty/valid and matching the template labels (apps/v1 style)."""
    sel = spec.get("selector")
    if sel is None:
        errs.append(FieldError.required("spec.selector"))
    else:
        _validate_selector(errs, sel, "spec.selector")
        if kind_word and _selector_is_empty(sel):
            errs.append(FieldError.invalid("spec.selector", _go_selector(sel),
                                           f"empty selector is invalid for {kind_word}"))
    tmpl = spec.get("template")
    if not isinstance(tmpl, dict):
        errs.append(FieldError.required("spec.template"))
        return
    labels = _template_labels(spec)
    # a missing selector is LabelSelectorAsSelector's Nothing, which matches no labels either
    if sel is None or (not _selector_is_empty(sel) and not _selector_matches(sel, labels or {})):
        errs.append(FieldError.invalid("spec.template.metadata.labels", _go_labels(labels),
                                       SELECTOR_MISMATCH_MSG))
    _validate_template(errs, tmpl, "spec.template", claim_names)
    rp = (tmpl.get("spec") or {}).get("restartPolicy")
    if restart is not None and rp and rp not in restart:
        errs.append(FieldError.not_supported("spec.template.spec.restartPolicy", rp, restart))
    if forbid_deadline and (tmpl.get("spec") or {}).get("activeDeadlineSeconds") is not None:
        errs.append(FieldError.forbidden("spec.template.spec.activeDeadlineSeconds",
                                         f"activeDeadlineSeconds in {forbid_deadline} is not Supported"))


def _selector_immutable(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    if old is None:
        return
    new_sel = (obj.get("spec") or {}).get("selector")
    old_sel = (old.get("spec") or {}).get("selector")
    if new_sel != old_sel:
        errs.append(FieldError.invalid("spec.selector", _go_selector(new_sel), IMMUTABLE_MSG))


def _validate_deployment(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    spec = obj.get("spec") or {}
    _nonneg(errs, "spec.replicas", spec.get("replicas"))
    _validate_selector_and_template(errs, spec, "deployment", ["Always"], forbid_deadline="ReplicaSet")
    strategy = spec.get("strategy") or {}
    stype = strategy.get("type")
    if stype == "Recreate":
        if strategy.get("rollingUpdate") is not None:
            errs.append(FieldError.forbidden("spec.strategy.rollingUpdate",
                                             "may not be specified when strategy `type` is 'Recreate'"))
    elif stype == "RollingUpdate":
        ru = strategy.get("rollingUpdate")
        if ru is None:
            errs.append(FieldError.required("spec.strategy.rollingUpdate",
                                            "this should be defaulted and never be nil"))
        else:
            base = "spec.strategy.rollingUpdate"
            mu, ms = ru.get("maxUnavailable"), ru.get("maxSurge")
            _validate_int_or_percent(errs, mu, _child(base, "maxUnavailable"))
            _validate_int_or_percent(errs, ms, _child(base, "maxSurge"))
            if _intstr_value(mu) == 0 and _intstr_value(ms) == 0:
                errs.append(FieldError.invalid(_child(base, "maxUnavailable"), _go_intstr(mu),
                                               "may not be 0 when `maxSurge` is 0"))
            _not_more_than_100(errs, mu, _child(base, "maxUnavailable"))
    else:
        errs.append(FieldError.not_supported(
            "spec.strategy",
            GoValue(strategy, f"apps.DeploymentStrategy{{Type:{_q(stype)}, "
                              "RollingUpdate:(*apps.RollingUpdateDeployment)(nil)}"),
            ["Recreate", "RollingUpdate"]))
    _nonneg(errs, "spec.minReadySeconds", spec.get("minReadySeconds"))
    _nonneg(errs, "spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
    pds = spec.get("progressDeadlineSeconds")
    if pds is not None:
        _nonneg(errs, "spec.progressDeadlineSeconds", pds)
        if _is_int(pds) and pds <= (spec.get("minReadySeconds") or 0):
            errs.append(FieldError.invalid("spec.progressDeadlineSeconds", pds,
                                           "must be greater than minReadySeconds"))
    _selector_immutable(errs, obj, old)


def _validate_replica_set(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    spec = obj.get("spec") or {}
    _nonneg(errs, "spec.replicas", spec.get("replicas"))
    _nonneg(errs, "spec.minReadySeconds", spec.get("minReadySeconds"))
    # sic: upstream's ReplicaSet message says "deployment" too.
    _validate_selector_and_template(errs, spec, "deployment", ["Always"], forbid_deadline="ReplicaSet")
    _selector_immutable(errs, obj, old)


def _validate_replication_controller(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    spec = obj.get("spec") or {}
    _nonneg(errs, "spec.replicas", spec.get("replicas"))
    _nonneg(errs, "spec.minReadySeconds", spec.get("minReadySeconds"))
    selector = spec.get("selector")
    if not selector:
        errs.append(FieldError.required("spec.selector"))
    else:
        _validate_labels(errs, selector, "spec.selector")
    tmpl = spec.get("template")
    if not isinstance(tmpl, dict):
        errs.append(FieldError.required("spec.template"))
        return
    labels = _template_labels(spec)
    if selector and not _selector_matches({"matchLabels": selector}, labels or {}):
        errs.append(FieldError.invalid("spec.template.metadata.labels", _go_labels(labels),
                                       SELECTOR_MISMATCH_MSG))
    _validate_template(errs, tmpl, "spec.template")
    rp = (tmpl.get("spec") or {}).get("restartPolicy")
    if rp and rp != "Always":
        errs.append(FieldError.not_supported("spec.template.spec.restartPolicy", rp, ["Always"]))
    if (tmpl.get("spec") or {}).get("activeDeadlineSeconds") is not None:
        errs.append(FieldError.forbidden("spec.template.spec.activeDeadlineSeconds",
                                         "activeDeadlineSeconds in ReplicationController is not Supported"))


_STS_UPDATABLE = ("replicas", "ordinals", "template", "updateStrategy",
                  "persistentVolumeClaimRetentionPolicy", "minReadySeconds")


def _validate_stateful_set(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    spec = obj.get("spec") or {}
    pmp = spec.get("podManagementPolicy")
    if not pmp:
        errs.append(FieldError.required("spec.podManagementPolicy"))
    elif pmp not in ("OrderedReady", "Parallel"):
        errs.append(FieldError.invalid(
            "spec.podManagementPolicy", pmp,
            "must be 'OrderedReady' or 'Parallel'"))
    strategy = spec.get("updateStrategy") or {}
    stype = strategy.get("type")
    if not stype:
        errs.append(FieldError.required("spec.updateStrategy"))
    elif stype == "OnDelete":
        if strategy.get("rollingUpdate") is not None:
            errs.append(FieldError.invalid(
                "spec.updateStrategy.rollingUpdate", GoValue(strategy.get("rollingUpdate"), "…"),
                "only allowed for updateStrategy 'RollingUpdate'"))
    elif stype == "RollingUpdate":
        partition = (strategy.get("rollingUpdate") or {}).get("partition")
        _nonneg(errs, "spec.updateStrategy.rollingUpdate.partition", partition)
    else:
        errs.append(FieldError.invalid(
            "spec.updateStrategy",
            GoValue(strategy, f"apps.StatefulSetUpdateStrategy{{Type:{_q(stype)}, "
                              "RollingUpdate:(*apps.RollingUpdateStatefulSetStrategy)(nil)}"),
            "must be 'RollingUpdate' or 'OnDelete'"))
    _nonneg(errs, "spec.replicas", spec.get("replicas"))
    _nonneg(errs, "spec.minReadySeconds", spec.get("minReadySeconds"))
    claims = [(c.get("metadata") or {}).get("name") or "" for c in spec.get("volumeClaimTemplates") or ()]
    _validate_selector_and_template(errs, spec, "statefulset", ["Always"], forbid_deadline="StatefulSet",
                                    claim_names=claims)
    for i, pvc in enumerate(spec.get("volumeClaimTemplates") or ()):
        name = (pvc.get("metadata") or {}).get("name") or ""
        _check(errs, _child(_idx("spec.volumeClaimTemplates", i), "metadata", "name"), name,
               is_dns1123_subdomain(name))
    if old is not None:
        new_rest = {k: v for k, v in spec.items() if k not in _STS_UPDATABLE}
        old_rest = {k: v for k, v in (old.get("spec") or {}).items() if k not in _STS_UPDATABLE}
        if new_rest != old_rest:
            errs.append(FieldError.forbidden(
                "spec", "updates to statefulset spec for fields other than 'replicas', 'ordinals', "
                        "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
                        "'minReadySeconds' are forbidden"))


def _validate_daemon_set(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    spec = obj.get("spec") or {}
    _validate_selector_and_template(errs, spec, "daemonset", ["Always"], forbid_deadline="DaemonSet")
    _nonneg(errs, "spec.minReadySeconds", spec.get("minReadySeconds"))
    _nonneg(errs, "spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
    strategy = spec.get("updateStrategy") or {}
    stype = strategy.get("type")
    if stype == "RollingUpdate":
        ru = strategy.get("rollingUpdate") or {}
        base = "spec.updateStrategy.rollingUpdate"
        mu, ms = ru.get("maxUnavailable"), ru.get("maxSurge")
        _validate_int_or_percent(errs, mu, _child(base, "maxUnavailable"))
        _validate_int_or_percent(errs, ms, _child(base, "maxSurge"))
        _not_more_than_100(errs, mu, _child(base, "maxUnavailable"))
        _not_more_than_100(errs, ms, _child(base, "maxSurge"))
        has_u, has_s = _intstr_value(mu) != 0, _intstr_value(ms) != 0
        if has_u and has_s:
            errs.append(FieldError.invalid(_child(base, "maxSurge"), _go_intstr(ms),
                                           "may not be set when maxUnavailable is non-zero"))
        elif not has_u and not has_s:
            errs.append(FieldError.required(_child(base, "maxUnavailable"), "cannot be 0 when maxSurge is 0"))
    elif stype != "OnDelete":
        errs.append(FieldError.not_supported("spec.updateStrategy", stype, ["OnDelete", "RollingUpdate"]))
    _selector_immutable(errs, obj, old)


def _validate_job_spec_common(errs: list[FieldError], spec: dict, path: str) -> None:
    for field in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit",
                  "ttlSecondsAfterFinished"):
        _nonneg(errs, _child(path, field), spec.get(field))
    mode = spec.get("completionMode")
    if mode is not None and mode not in ("NonIndexed", "Indexed"):
        errs.append(FieldError.not_supported(_child(path, "completionMode"), mode,
                                             ["NonIndexed", "Indexed"]))
    if mode == "Indexed" and spec.get("completions") is None:
        errs.append(FieldError.required(_child(path, "completions"), "when completion mode is Indexed"))
    tmpl = spec.get("template")
    if not isinstance(tmpl, dict):
        errs.append(FieldError.required(_child(path, "template")))
        return
    _validate_template(errs, tmpl, _child(path, "template"))
    rp = (tmpl.get("spec") or {}).get("restartPolicy")
    if rp not in ("OnFailure", "Never"):
        errs.append(FieldError.not_supported(_child(path, "template", "spec", "restartPolicy"), rp,
                                             ["OnFailure", "Never"]))


def _validate_job(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    spec = obj.get("spec") or {}
    sel = spec.get("selector")
    if sel is None:
        errs.append(FieldError.required("spec.selector"))
    else:
        _validate_selector(errs, sel, "spec.selector")
        labels = _template_labels(spec)
        if not _selector_is_empty(sel) and not _selector_matches(sel, labels or {}):
            errs.append(FieldError.invalid("spec.template.metadata.labels", _go_labels(labels),
                                           SELECTOR_MISMATCH_MSG))
    _validate_job_spec_common(errs, spec, "spec")
    if old is None:
        return
    ospec = old.get("spec") or {}
    _selector_immutable(errs, obj, old)
    if not ospec.get("suspend") and spec.get("template") != ospec.get("template"):
        errs.append(FieldError.invalid("spec.template",
                                       GoValue(spec.get("template"), "core.PodTemplateSpec{…}"),
                                       IMMUTABLE_MSG))
    for field in ("completionMode", "podFailurePolicy", "backoffLimitPerIndex"):
        if spec.get(field) != ospec.get(field):
            errs.append(FieldError.invalid(_child("spec", field), spec.get(field), IMMUTABLE_MSG))
    if spec.get("completions") != ospec.get("completions") and spec.get("completionMode") != "Indexed":
        errs.append(FieldError.invalid("spec.completions", spec.get("completions"), IMMUTABLE_MSG))


def _validate_cron_job(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    name = (obj.get("metadata") or {}).get("name") or ""
    if len(name) > 52:
        errs.append(FieldError.invalid("metadata.name", name, _max_len(52)))
    spec = obj.get("spec") or {}
    schedule = spec.get("schedule") or ""
    tz = spec.get("timeZone")
    if not schedule:
        errs.append(FieldError.required("spec.schedule"))
    else:
        try:
            parse_cron_schedule(schedule)
        except ValueError as exc:
            errs.append(FieldError.invalid("spec.schedule", schedule, str(exc)))
        if "TZ" in schedule and tz is not None:
            errs.append(FieldError.invalid("spec.schedule", schedule,
                                           "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
    if tz is not None:
        _validate_time_zone(errs, tz, "spec.timeZone")
    policy = spec.get("concurrencyPolicy") or ""
    if not policy:
        errs.append(FieldError.required("spec.concurrencyPolicy"))
    elif policy not in ("Allow", "Forbid", "Replace"):
        errs.append(FieldError.not_supported("spec.concurrencyPolicy", policy, ["Allow", "Forbid", "Replace"]))
    for field in ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        _nonneg(errs, _child("spec", field), spec.get(field))
    jt = spec.get("jobTemplate") or {}
    jspec = jt.get("spec") or {}
    _validate_labels(errs, (jt.get("metadata") or {}).get("labels"), "spec.jobTemplate.metadata.labels")
    if jspec.get("selector") is not None:
        errs.append(FieldError.invalid("spec.jobTemplate.spec.selector", _go_selector(jspec.get("selector")),
                                       "`selector` will be auto-generated"))
    if jspec.get("manualSelector"):
        errs.append(FieldError.not_supported("spec.jobTemplate.spec.manualSelector", True, ["nil", "false"]))
    _validate_job_spec_common(errs, jspec, "spec.jobTemplate.spec")


_TZ_PART_RE = re.compile(r"^[A-Za-z\.\-_0-9+]{1,14}$")


def _validate_time_zone(errs: list[FieldError], tz: str, path: str) -> None:
    if tz == "":
        errs.append(FieldError.invalid(path, tz, "timeZone must be nil or non-empty string"))
        return
    for part in tz.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TZ_PART_RE.match(part):
            errs.append(FieldError.invalid(path, tz, f"unknown time zone {tz}"))
            return
    if tz.lower() == "local":
        errs.append(FieldError.invalid(
            path, tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
        return
    try:
        zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        errs.append(FieldError.invalid(path, tz, f"unknown time zone {tz}"))


# ---------------------------------------------------------------------------- cron


_CRON_BOUNDS = (
    (0, 59, None),
    (0, 23, None),
    (1, 31, None),
    (1, 12, {m: i + 1 for i, m in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}),
    (0, 6, {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}),
)
_DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_DURATION_RE = re.compile(r"^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h))+$")


def _atoi(expr: str) -> int:
    if not re.match(r"^[+-]?\d+$", expr):
        raise ValueError(f'failed to parse int from {expr}: strconv.Atoi: parsing "{expr}": invalid syntax')
    num = int(expr)
    if num < 0:
        raise ValueError(f"negative number ({num}) not allowed: {expr}")
    return num


def _cron_range(expr: str, lo: int, hi: int, names: dict[str, int] | None) -> None:
    range_and_step = expr.split("/")
    low_high = range_and_step[0].split("-")

    def value(s: str) -> int:
        if names and s.lower() in names:
            return names[s.lower()]
        return _atoi(s)

    if low_high[0] in ("*", "?"):
        start, end = lo, hi
    else:
        start = value(low_high[0])
        if len(low_high) == 1:
            end = start
        elif len(low_high) == 2:
            end = value(low_high[1])
        else:
            raise ValueError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _atoi(range_and_step[1])
        if len(low_high) == 1:
            end = hi
    else:
        raise ValueError(f"too many slashes: {expr}")
    if start < lo:
        raise ValueError(f"beginning of range ({start}) below minimum ({lo}): {expr}")
    if end > hi:
        raise ValueError(f"end of range ({end}) above maximum ({hi}): {expr}")
    if start > end:
        raise ValueError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise ValueError(f"step of range should be a positive number: {expr}")


def parse_cron_schedule(spec: str) -> None:
    """Check a CronJob schedule as robfig/cron v3 ``ParseStandard`` does.

    Accepts five fields (minute hour day-of-month month day-of-week, with
    ``*``, ``?``, ranges, steps, lists, month/day names), an optional leading
    ``TZ=``/``CRON_TZ=`` zone, and the descriptors ``@yearly`` … ``@hourly`` and
    ``@every <duration>``. Raises ``ValueError`` whose text is the library's
    error (e.g. ``expected exactly 5 fields, found 1: [bad]``).
    """
    if not spec:
        raise ValueError("empty spec string")
    if spec.startswith("TZ=") or spec.startswith("CRON_TZ="):
        i = spec.find(" ")
        eq = spec.find("=")
        zone = spec[eq + 1:i] if i >= 0 else spec[eq + 1:]
        try:
            zoneinfo.ZoneInfo(zone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
            raise ValueError(f"provided bad location {zone}: unknown time zone {zone}") from None
        spec = spec[i:].strip() if i >= 0 else ""
    if spec.startswith("@"):
        if spec in _DESCRIPTORS:
            return
        if spec.startswith("@every "):
            dur = spec[len("@every "):]
            if not _DURATION_RE.match(dur) and dur != "0":
                raise ValueError(f'failed to parse duration {spec}: time: invalid duration "{dur}"')
            return
        raise ValueError(f"unrecognized descriptor: {spec}")
    fields = spec.split()
    if len(fields) != 5:
        raise ValueError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    for field, (lo, hi, names) in zip(fields, _CRON_BOUNDS):
        for expr in (e for e in field.split(",") if e):
            _cron_range(expr, lo, hi, names)


# ---------------------------------------------------------------------------- core kinds


_IP_MSG = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"


def _parse_ip(v: Any) -> Any:
    import ipaddress

    try:
        return ipaddress.ip_address(v) if isinstance(v, str) else None
    except ValueError:
        return None


def service_cluster_ips_errors(obj: dict) -> list[FieldError]:
    """Upstream's ``ValidateServiceClusterIPsRelatedFields``: ``clusterIP`` and ``clusterIPs``
    in sync, each a valid IP (``None`` first and alone), at most one per family. The service
    registry also runs it before allocating (its ``initIPFamilyFields``), so a bad value is
    reported on its own there."""
    spec = obj.get("spec") or {}
    if spec.get("type") == "ExternalName":
        return []
    errs: list[FieldError] = []
    cip, cips = spec.get("clusterIP") or "", list(spec.get("clusterIPs") or [])
    if cip:
        if not cips:
            errs.append(FieldError.required("spec.clusterIPs"))
        elif cips[0] != cip:
            errs.append(FieldError.invalid("spec.clusterIPs", _go_strings(cips), "first value must match `clusterIP`"))
    elif cips:
        errs.append(FieldError.invalid("spec.clusterIPs", _go_strings(cips),
                                       "must be empty when `clusterIP` is not specified"))
    bad = False
    for i, ip in enumerate(cips):
        if i == 0 and ip == "None":
            if len(cips) > 1:
                bad = True
                errs.append(FieldError.invalid("spec.clusterIPs", _go_strings(cips),
                                               "'None' must be the first and only value"))
            continue
        if _parse_ip(ip) is None:
            bad = True
            errs.append(FieldError.invalid(_idx("spec.clusterIPs", i), ip, _IP_MSG))
    if len(cips) > 2:
        errs.append(FieldError.invalid("spec.clusterIPs", _go_strings(cips), "may only hold up to 2 values"))
    if not bad and len(cips) == 2 and _parse_ip(cips[0]).version == _parse_ip(cips[1]).version:
        errs.append(FieldError.invalid("spec.clusterIPs", _go_strings(cips),
                                       "may specify no more than one IP for each IP family"))
    return errs


def _validate_service(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    spec = obj.get("spec") or {}
    stype = spec.get("type") or ""
    headless = spec.get("clusterIP") == "None"
    ports = spec.get("ports") or []
    if stype not in ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName"):
        if not stype:
            errs.append(FieldError.required("spec.type"))
        else:
            errs.append(FieldError.not_supported("spec.type", stype,
                                                 ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]))
    if stype in ("NodePort", "LoadBalancer") and headless:
        errs.append(FieldError.invalid("spec.clusterIPs[0]", "None", f"may not be set to 'None' for {stype} services"))
    if stype == "ExternalName":
        # the strategy sets clusterIPs from clusterIP, and drops them (and the family fields)
        # on a change of type that kept them (dropTypeDependentFields)
        if spec.get("clusterIPs") or spec.get("clusterIP"):
            errs.append(FieldError.forbidden("spec.clusterIPs", "may not be set for ExternalName services"))
        if spec.get("ipFamilies"):
            errs.append(FieldError.forbidden("spec.ipFamilies", "may not be set for ExternalName services"))
        if spec.get("ipFamilyPolicy") is not None:
            errs.append(FieldError.forbidden("spec.ipFamilyPolicy", "may not be set for ExternalName services"))
        ext = spec.get("externalName") or ""
        if not ext:
            errs.append(FieldError.required("spec.externalName"))
        else:
            _check(errs, "spec.externalName", ext, is_dns1123_subdomain(ext.rstrip(".")))
    elif not ports and not headless:
        errs.append(FieldError.required("spec.ports"))
    names: set[str] = set()
    require_name = len(ports) > 1
    for i, port in enumerate(ports):
        ppath = _idx("spec.ports", i)
        pname = port.get("name") or ""
        if require_name and not pname:
            errs.append(FieldError.required(_child(ppath, "name")))
        elif pname:
            _check(errs, _child(ppath, "name"), pname, is_dns1123_label(pname))
            if pname in names:
                errs.append(FieldError.duplicate(_child(ppath, "name"), pname))
            names.add(pname)
        num = port.get("port")
        if not _is_int(num) or not 1 <= num <= 65535:
            errs.append(FieldError.invalid(_child(ppath, "port"), num, PORT_RANGE_MSG))
        proto = port.get("protocol") or ""
        if not proto:
            errs.append(FieldError.required(_child(ppath, "protocol")))
        elif proto not in _PROTOCOLS:
            errs.append(FieldError.not_supported(_child(ppath, "protocol"), proto, _PROTOCOLS))
        if "targetPort" in port:
            _validate_port_num_or_name(errs, port.get("targetPort"), _child(ppath, "targetPort"))
        node_port = port.get("nodePort")
        if node_port:
            if stype == "ClusterIP":
                errs.append(FieldError.forbidden(_child(ppath, "nodePort"),
                                                 "may not be used when `type` is 'ClusterIP'"))
            elif not _is_int(node_port) or not 1 <= node_port <= 65535:
                errs.append(FieldError.invalid(_child(ppath, "nodePort"), node_port, PORT_RANGE_MSG))
            elif not 30000 <= node_port <= 32767:
                # upstream: the registry's nodePort allocator
                errs.append(FieldError.invalid(
                    _child(ppath, "nodePort"), node_port,
                    "provided port is not in the valid range. The range of valid ports is 30000-32767"))
    _validate_labels(errs, spec.get("selector"), "spec.selector")
    affinity = spec.get("sessionAffinity") or ""
    if not affinity:
        errs.append(FieldError.required("spec.sessionAffinity"))
    elif affinity not in ("ClientIP", "None"):
        errs.append(FieldError.not_supported("spec.sessionAffinity", affinity, ["ClientIP", "None"]))
    if spec.get("clusterIP") and "clusterIPs" not in spec:
        # what the registry's normalizeClusterIPs gives before validation runs
        obj = {**obj, "spec": {**spec, "clusterIPs": [spec["clusterIP"]]}}
    errs.extend(service_cluster_ips_errors(obj))
    etp = spec.get("externalTrafficPolicy")
    if etp:
        # upstream's apiservice.ExternallyAccessible
        if not (stype in ("NodePort", "LoadBalancer") or (stype == "ClusterIP" and spec.get("externalIPs"))):
            errs.append(FieldError.invalid("spec.externalTrafficPolicy", etp,
                                           "may only be set for externally-accessible services"))
        elif etp not in ("Cluster", "Local"):
            errs.append(FieldError.not_supported("spec.externalTrafficPolicy", etp, ["Cluster", "Local"]))
    hc = spec.get("healthCheckNodePort")
    if hc and not (stype == "LoadBalancer" and etp == "Local"):
        errs.append(FieldError.invalid("spec.healthCheckNodePort", hc,
                                       "may only be set when `type` is 'LoadBalancer' and "
                                       "`externalTrafficPolicy` is 'Local'"))
    itp = spec.get("internalTrafficPolicy")
    if itp is not None and itp not in ("Cluster", "Local"):
        errs.append(FieldError.not_supported("spec.internalTrafficPolicy", itp, ["Cluster", "Local"]))
    if old is not None:
        ospec = old.get("spec") or {}
        if "ExternalName" in (stype, ospec.get("type")):
            return
        if ospec.get("clusterIP") == "None" and headless:
            return
        old_ips = ospec.get("clusterIPs") or ([ospec["clusterIP"]] if ospec.get("clusterIP") else [])
        new_ips = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
        if old_ips and not new_ips:
            errs.append(FieldError.invalid("spec.clusterIPs[0]", _go_strings(new_ips),
                                           "primary clusterIP can not be unset"))
        elif old_ips and new_ips and old_ips[0] != new_ips[0]:
            errs.append(FieldError.invalid("spec.clusterIPs[0]", _go_strings(new_ips), "may not change once set"))


def _validate_config_data(errs: list[FieldError], obj: dict, keys: tuple[str, ...]) -> None:
    for bag in keys:
        for k in sorted(obj.get(bag) or {}):
            _check(errs, _key(bag, k), k, is_config_key(k))
    if len(keys) == 2:
        both = set(obj.get(keys[0]) or {}) & set(obj.get(keys[1]) or {})
        for k in sorted(both):
            errs.append(FieldError.invalid(_key(keys[0], k), k, "duplicate of key present in binaryData"))


def _immutable_data(errs: list[FieldError], obj: dict, old: dict | None, bags: tuple[str, ...]) -> None:
    if old is None or not old.get("immutable"):
        return
    if not obj.get("immutable"):
        errs.append(FieldError.forbidden("immutable", "field is immutable when `immutable` is set"))
    for bag in bags:
        if (obj.get(bag) or {}) != (old.get(bag) or {}):
            errs.append(FieldError.forbidden(bag, "field is immutable when `immutable` is set"))


def _validate_config_map(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    _validate_config_data(errs, obj, ("data", "binaryData"))
    size = sum(len(str(v).encode()) for v in (obj.get("data") or {}).values()) + sum(
        len(str(v)) * 3 // 4 for v in (obj.get("binaryData") or {}).values())
    if size > 1024 * 1024:
        errs.append(_too_long("", "must have at most 1048576 bytes"))
    _immutable_data(errs, obj, old, ("data", "binaryData"))


_SECRET_REQUIRED_KEYS = {
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/dockercfg": (".dockercfg",),
}


def _validate_secret(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    _validate_config_data(errs, obj, ("data",))
    data = obj.get("data") or {}
    size = sum(len(str(v)) * 3 // 4 for v in data.values())
    if size > 1024 * 1024:
        errs.append(_too_long("data", "must have at most 1048576 bytes"))
    stype = obj.get("type") or "Opaque"
    for key in _SECRET_REQUIRED_KEYS.get(stype, ()):
        if key not in data:
            errs.append(FieldError.required(_key("data", key)))
    if stype == "kubernetes.io/service-account-token":
        ann = (obj.get("metadata") or {}).get("annotations") or {}
        if not ann.get("kubernetes.io/service-account.name"):
            errs.append(FieldError.required("metadata.annotations[kubernetes.io/service-account.name]"))
    elif stype == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            errs.append(FieldError.required(
                "data[username]", "either username or password is required for basic authentication"))
    elif stype == "kubernetes.io/ssh-auth" and "ssh-privatekey" not in data:
        errs.append(FieldError.required("data[ssh-privatekey]"))
    if old is not None and (old.get("type") or "Opaque") != stype:
        errs.append(FieldError.invalid("type", stype, IMMUTABLE_MSG))
    _immutable_data(errs, obj, old, ("data",))


def _validate_namespace(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    for f in (obj.get("spec") or {}).get("finalizers") or ():
        msgs = is_qualified_name(str(f))
        _check(errs, "spec.finalizers", f, msgs)
        if not msgs and "/" not in str(f) and f not in _STANDARD_FINALIZERS:
            errs.append(FieldError.invalid("spec.finalizers", f,
                                           "name is neither a standard finalizer name nor is it fully qualified"))


def _validate_pvc(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    _validate_pvc_spec(errs, obj.get("spec") or {}, "spec")
    if old is not None:
        _validate_pvc_update(errs, obj, old)


_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
PVC_UPDATE_MSG = ("spec is immutable after creation except resources.requests and "
                  "volumeAttributesClassName for bound claims")


def _semantic_spec(spec: dict) -> dict:
    """A claim spec with its resource quantities parsed, for ``apiequality.Semantic`` (which
    compares quantities by value: ``1Gi`` equals ``1024Mi``)."""
    from k8semu.api.quantity import parse_quantity

    out = dict(spec)
    res = out.get("resources")
    if isinstance(res, dict):
        res = dict(res)
        for part in ("requests", "limits"):
            if isinstance(res.get(part), dict):
                parsed = {}
                for k, v in res[part].items():
                    try:
                        parsed[k] = parse_quantity(v) if v is not None else None
                    except Exception:  # unparseable: reported by the decoder already
                        parsed[k] = v
                res[part] = parsed
        out["resources"] = res
    return out


def _validate_pvc_update(errs: list[FieldError], new: dict, old: dict) -> None:
    """Upstream ``ValidatePersistentVolumeClaimUpdate`` (1.33 default feature gates:
    RecoverVolumeExpansionFailure on, VolumeAttributesClass off).

    A claim's spec is immutable except: ``volumeName`` may be set once (the PV binder);
    ``storageClassName`` may go from unset to a value (from the beta annotation's value, or
    from nothing: the retroactive default class); and, for a claim whose phase is ``Bound``
    (the stored status: a main-resource update keeps it), ``resources.requests.storage`` and
    ``volumeAttributesClassName``. Anything else is ``spec: Forbidden: spec is immutable after
    creation except resources.requests and volumeAttributesClassName for bound claims`` and a
    diff of ``core.PersistentVolumeClaimSpec``. The beta storage-class annotation is immutable
    (``metadata.annotations.volume.beta.kubernetes.io/storage-class: Invalid value: …: field is
    immutable``). A request lowered below the previous one must stay above
    ``status.capacity`` (``spec.resources.requests.storage: Forbidden: field can not be less
    than status.capacity``: recovering from a failed expansion, never shrinking the volume).
    ``volumeMode`` is immutable (upstream's path is the bare ``volumeMode``), and with the
    VolumeAttributesClass gate off any change of ``volumeAttributesClassName`` is forbidden.
    Whether a growth is allowed at all is the PersistentVolumeClaimResize admission plugin's
    call (:class:`k8semu.api.admission.PersistentVolumeClaimResize`), the quota's
    ResourceQuota's.
    """
    from k8semu.api.quantity import parse_quantity

    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    new_ann = (new.get("metadata") or {}).get("annotations") or {}
    old_ann = (old.get("metadata") or {}).get("annotations") or {}
    new_clone, old_clone = json.loads(json.dumps(new_spec)), json.loads(json.dumps(old_spec))

    def put(d: dict, key: str, value: Any) -> None:
        if value is None:
            d.pop(key, None)
        else:
            d[key] = value

    if not old_spec.get("volumeName"):  # the binder sets volumeName, once
        put(old_clone, "volumeName", new_clone.get("volumeName"))
    old_sc, new_sc = old_spec.get("storageClassName"), new_spec.get("storageClassName")
    if (_BETA_STORAGE_CLASS in old_ann and old_sc is None and new_sc is not None
            and new_sc == old_ann[_BETA_STORAGE_CLASS]
            and (_BETA_STORAGE_CLASS not in new_ann or new_ann[_BETA_STORAGE_CLASS] == old_ann[_BETA_STORAGE_CLASS])):
        # validateStorageClassUpgradeFromAnnotation: the class moves from the beta annotation
        new_clone.pop("storageClassName", None)
    else:
        if new_ann.get(_BETA_STORAGE_CLASS, "") != old_ann.get(_BETA_STORAGE_CLASS, ""):
            errs.append(FieldError.invalid("metadata.annotations." + _BETA_STORAGE_CLASS,
                                           new_ann.get(_BETA_STORAGE_CLASS, ""), "field is immutable"))
        if new_sc is not None and old_sc is None and (
                _BETA_STORAGE_CLASS not in old_ann or new_sc == old_ann[_BETA_STORAGE_CLASS]):
            # validateStorageClassUpgradeFromNil
            put(new_clone, "storageClassName", old_clone.get("storageClassName"))
    bound = (new.get("status") or {}).get("phase") == "Bound"
    requests = (new_clone.get("resources") or {}).get("requests")
    if bound and requests is not None:
        # Go sets the map key even when the old claim has none (a zero quantity)
        requests["storage"] = ((old_spec.get("resources") or {}).get("requests") or {}).get("storage", "0")
    if bound and new_clone.get("volumeAttributesClassName") is not None:
        put(new_clone, "volumeAttributesClassName", old_clone.get("volumeAttributesClassName"))
    if _semantic_spec(new_clone) != _semantic_spec(old_clone):
        errs.append(FieldError.forbidden(
            "spec", PVC_UPDATE_MSG + "\n" + _spec_diff(old_clone, new_clone, "core.PersistentVolumeClaimSpec")))

    def storage(spec_or_status: dict, part: str) -> Any:
        holder = spec_or_status.get(part) or {}
        if part == "resources":
            holder = holder.get("requests") or {}
        try:
            return parse_quantity(holder.get("storage") or "0")
        except Exception:
            return parse_quantity("0")

    old_size, new_size = storage(old_spec, "resources"), storage(new_spec, "resources")
    status_size = storage(old.get("status") or {}, "capacity")
    if new_size < old_size and not (status_size < new_size):
        errs.append(FieldError.forbidden("spec.resources.requests.storage",
                                         "field can not be less than status.capacity"))
    if new_spec.get("volumeMode") != old_spec.get("volumeMode"):
        errs.append(FieldError.invalid("volumeMode", new_spec.get("volumeMode"), "field is immutable"))
    old_vac, new_vac = old_spec.get("volumeAttributesClassName"), new_spec.get("volumeAttributesClassName")
    if old_vac != new_vac:
        errs.append(FieldError.forbidden("spec.volumeAttributesClassName",
                                         "update is forbidden when the VolumeAttributesClass feature gate is disabled"))
        if old_vac is not None:  # an old claim using the field keeps its validation
            if new_vac is None:
                errs.append(FieldError.forbidden("spec.volumeAttributesClassName",
                                                 "update from non-nil value to nil is forbidden"))
            elif not new_vac:
                errs.append(FieldError.forbidden("spec.volumeAttributesClassName",
                                                 "update from non-nil value to an empty string is forbidden"))


_ACCESS_MODES = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"]


def _validate_pvc_spec(errs: list[FieldError], spec: dict, path: str) -> None:
    modes = spec.get("accessModes") or []
    if not modes:
        errs.append(FieldError.required(_child(path, "accessModes"), "at least 1 access mode is required"))
    for mode in modes:
        if mode not in _ACCESS_MODES:
            errs.append(FieldError.not_supported(_child(path, "accessModes"), mode, _ACCESS_MODES))
    requests = (spec.get("resources") or {}).get("requests") or {}
    if "storage" not in requests and not spec.get("dataSourceRef") and not spec.get("dataSource"):
        errs.append(FieldError.required(_key(_child(path, "resources"), "storage")))
    parsed = _validate_resource_list(errs, requests, _child(path, "resources", "requests"))
    storage = parsed.get("storage")
    if storage is not None and not (storage > _zero()):
        errs.append(FieldError.invalid(_key(_child(path, "resources"), "storage"), str(storage),
                                       "must be greater than zero"))
    vm = spec.get("volumeMode")
    if vm is not None and vm not in ("Block", "Filesystem"):
        errs.append(FieldError.not_supported(_child(path, "volumeMode"), vm, ["Block", "Filesystem"]))


def _zero() -> Any:
    from k8semu.api.quantity import parse_quantity

    return parse_quantity("0")


# ---------------------------------------------------------------------------- persistent volumes

#: ``PersistentVolumeSource`` members in the order ``ValidatePersistentVolumeSpec`` checks them,
#: with the path its "more than 1 volume type" error names (upstream spells cephfs ``cephFS``
#: there) and the path its per-source checks use (upstream's GCE one is ``persistentDisk``).
_PV_SOURCES: tuple[tuple[str, str, str], ...] = (
    ("hostPath", "hostPath", "hostPath"),
    ("gcePersistentDisk", "gcePersistentDisk", "persistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore", "awsElasticBlockStore"),
    ("glusterfs", "glusterfs", "glusterfs"),
    ("flocker", "flocker", "flocker"),
    ("nfs", "nfs", "nfs"),
    ("rbd", "rbd", "rbd"),
    ("quobyte", "quobyte", "quobyte"),
    ("cephfs", "cephFS", "cephfs"),
    ("iscsi", "iscsi", "iscsi"),
    ("cinder", "cinder", "cinder"),
    ("fc", "fc", "fc"),
    ("flexVolume", "flexVolume", "flexVolume"),
    ("azureFile", "azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk", "azureDisk"),
    ("scaleIO", "scaleIO", "scaleIO"),
    ("local", "local", "local"),
    ("storageos", "storageos", "storageos"),
    ("csi", "csi", "csi"),
)
_PV_SOURCE_KEYS = tuple(k for k, _, _ in _PV_SOURCES)
_RECLAIM_POLICIES = ["Delete", "Recycle", "Retain"]
_VOLUME_MODES = ["Block", "Filesystem"]
_MOUNT_OPTIONS_ANNOTATION = "volume.beta.kubernetes.io/mount-options"
#: the sources ``checkMountOption`` (pkg/volume/validation) lets carry the beta mount-options annotation
_MOUNT_OPTION_SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "glusterfs", "nfs", "rbd", "quobyte",
                         "iscsi", "cinder", "cephfs", "azureFile", "vsphereVolume", "azureDisk",
                         "photonPersistentDisk")
PD_PARTITION_MSG = "must be between 1 and 255, inclusive"
PV_SOURCE_UPDATE_MSG = "spec.persistentvolumesource is immutable after creation"
_GO_PTR = "0xc000a1b2c0"  # upstream prints a heap address here; any fixed one stands in for it


def _path_no_backsteps(errs: list[FieldError], value: str, path: str) -> None:
    """``validatePathNoBacksteps``: one error for any ``..`` element."""
    if ".." in value.replace("\\", "/").split("/"):
        errs.append(FieldError.invalid(path, value, "must not contain '..'"))


def _go_quantity(value: Any) -> str:
    """``%#v`` of the ``resource.Quantity`` that ``ParseQuantity(value)`` returns: its int64 fast
    path (``i``, plus ``s`` when the text is already canonical) or the ``inf.Dec`` slow path."""
    from k8semu.api import quantity as qty

    text = str(value) if _is_int(value) else value
    empty_dec = "d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}"

    def fast(v: int, scale: int, s: str, fmt: str) -> str:
        return (f"resource.Quantity{{i:resource.int64Amount{{value:{v}, scale:{scale}}}, {empty_dec}, "
                f"s:{_q(s)}, Format:{_q(fmt)}}}")

    if text == "0":
        return fast(0, 0, "0", qty.DECIMAL_SI)
    try:
        positive, _value, num, denom, suffix = qty._scan(text)
        base, exponent, fmt = qty._interpret(suffix)
        shifted = num + denom
        if qty._takes_fast_path(num, denom, base, exponent):
            mantissa = 1 << exponent if base == 2 else 1
            scale = 0 if base == 2 else exponent - len(denom)
            result = int(shifted) * mantissa
            if result <= 2**63 - 1:
                result = result if positive else -result
                if base == 2:
                    canonical = exponent % 10 == 0 and int(shifted) & 7 != 0
                else:
                    canonical = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
                return fast(result, scale, text if canonical else "", fmt)
        q = qty.parse_quantity(text)
        fmt = q.format
    except (ValueError, TypeError):
        fmt = qty.DECIMAL_SI
    return (f"resource.Quantity{{i:resource.int64Amount{{value:0, scale:0}}, "
            f"d:resource.infDecAmount{{Dec:(*inf.Dec)({_GO_PTR})}}, s:\"\", Format:{_q(fmt)}}}")


def _go_resource_list(rl: Any) -> GoValue:
    if not rl:
        return GoValue(rl, "core.ResourceList(nil)" if rl is None else "core.ResourceList{}")
    inner = ", ".join(f"{_q(k)}:{_go_quantity(v)}" for k, v in sorted(rl.items()))
    return GoValue(rl, "core.ResourceList{" + inner + "}")


def _go_volume_node_affinity(na: Any) -> Any:
    if na is None:
        return None  # a nil pointer: "null"
    req = "nil" if na.get("required") is None else _GO_PTR
    return GoValue(na, f"core.VolumeNodeAffinity{{Required:(*core.NodeSelector)({req})}}")


def _node_selector_requirement(errs: list[FieldError], rq: dict, path: str, allow_invalid_values: bool) -> None:
    """``ValidateNodeSelectorRequirement`` (1.33: values are label values in required terms)."""
    op, values = rq.get("operator") or "", rq.get("values") or []
    if op in ("In", "NotIn"):
        if not values:
            errs.append(FieldError.required(_child(path, "values"),
                                            "must be specified when `operator` is 'In' or 'NotIn'"))
    elif op in ("Exists", "DoesNotExist"):
        if values:
            errs.append(FieldError.forbidden(_child(path, "values"),
                                             "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(FieldError.required(_child(path, "values"),
                                            "must be specified single value when `operator` is 'Lt' or 'Gt'"))
    else:
        errs.append(FieldError.invalid(_child(path, "operator"), op, "not a valid selector operator"))
    key = str(rq.get("key") or "")
    _check(errs, _child(path, "key"), key, is_qualified_name(key))
    if not allow_invalid_values:
        for i, v in enumerate(values):
            v = "" if v is None else str(v)
            _check(errs, _idx(_child(path, "values"), i), v, is_label_value(v))


def _node_field_selector_requirement(errs: list[FieldError], rq: dict, path: str) -> None:
    """``ValidateNodeFieldSelectorRequirement``: ``metadata.name In|NotIn [one node name]``."""
    op, values = rq.get("operator") or "", rq.get("values") or []
    if op in ("In", "NotIn"):
        if len(values) != 1:
            errs.append(FieldError.required(
                _child(path, "values"),
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
    else:
        errs.append(FieldError.invalid(_child(path, "operator"), op, "not a valid selector operator"))
    key = rq.get("key") or ""
    if key != "metadata.name":
        errs.append(FieldError.invalid(_child(path, "key"), key, "not a valid field selector key"))
    else:
        for i, v in enumerate(values):
            v = "" if v is None else str(v)
            _check(errs, _idx(_child(path, "values"), i), v, is_dns1123_subdomain(v))


def _validate_node_selector(errs: list[FieldError], ns: dict, path: str, allow_invalid_values: bool) -> None:
    """``ValidateNodeSelector`` / ``ValidateNodeSelectorTerm``."""
    terms_path = _child(path, "nodeSelectorTerms")
    terms = ns.get("nodeSelectorTerms") or []
    if not terms:
        errs.append(FieldError.required(terms_path, "must have at least one node selector term"))
        return
    for i, term in enumerate(terms):
        tpath = _idx(terms_path, i)
        term = term or {}
        for j, rq in enumerate(term.get("matchExpressions") or ()):
            _node_selector_requirement(errs, rq or {}, _idx(_child(tpath, "matchExpressions"), j),
                                       allow_invalid_values)
        for j, rq in enumerate(term.get("matchFields") or ()):
            _node_field_selector_requirement(errs, rq or {}, _idx(_child(tpath, "matchFields"), j))


def _has_invalid_label_value_in_terms(spec: dict) -> bool:
    """``helper.HasInvalidLabelValueInNodeSelectorTerms`` of a PV's required node affinity."""
    required = (spec.get("nodeAffinity") or {}).get("required") or {}
    for term in required.get("nodeSelectorTerms") or ():
        for rq in (term or {}).get("matchExpressions") or ():
            for v in (rq or {}).get("values") or ():
                if is_label_value("" if v is None else str(v)):
                    return True
    return False


def _pv_secret_ref(errs: list[FieldError], ref: dict, path: str) -> None:
    """``validatePVSecretReference``."""
    name, ns = ref.get("name") or "", ref.get("namespace") or ""
    if not name:
        errs.append(FieldError.required(_child(path, "name")))
    else:
        _check(errs, _child(path, "name"), name, is_dns1123_subdomain(name))
    if not ns:
        errs.append(FieldError.required(_child(path, "namespace")))
    else:
        _check(errs, _child(path, "namespace"), ns, is_dns1123_label(ns))


def _pv_source_errors(errs: list[FieldError], key: str, src: dict, path: str) -> None:
    """The per-source checks of ``ValidatePersistentVolumeSpec`` (see :func:`_validate_pv_spec`)."""
    def required(*fields: str) -> None:
        for f in fields:
            if not src.get(f):
                errs.append(FieldError.required(_child(path, f)))

    def partition() -> None:
        p = src.get("partition")
        if _is_int(p) and not 0 <= p <= 255:
            errs.append(FieldError.invalid(_child(path, "partition"), p, PD_PARTITION_MSG))

    if key == "hostPath":
        p = src.get("path") or ""
        if not p:
            errs.append(FieldError.required(_child(path, "path")))
            return
        _path_no_backsteps(errs, p, _child(path, "path"))
        t = src.get("type")
        if t is not None and t not in _HOST_PATH_TYPES:
            errs.append(FieldError.not_supported(_child(path, "type"), t, list(_HOST_PATH_TYPES)))
    elif key == "local":
        p = src.get("path") or ""
        if not p:
            errs.append(FieldError.required(_child(path, "path")))
            return
        _path_no_backsteps(errs, p, _child(path, "path"))
    elif key == "nfs":
        required("server", "path")
        p = src.get("path") or ""
        if not p.startswith("/"):
            errs.append(FieldError.invalid(_child(path, "path"), p, "must be an absolute path"))
    elif key == "csi":
        driver = src.get("driver") or ""
        dpath = _child(path, "driver")
        if not driver:
            errs.append(FieldError.required(dpath))
        if len(driver) > 63:
            errs.append(FieldError("FieldValueTooLong", dpath, "may not be more than 63 bytes", ""))
        _check(errs, dpath, driver, is_dns1123_subdomain(driver.lower()))
        required("volumeHandle")
        for ref in ("controllerPublishSecretRef", "controllerExpandSecretRef", "nodePublishSecretRef",
                    "nodeExpandSecretRef"):
            if src.get(ref) is not None:
                _pv_secret_ref(errs, src.get(ref) or {}, _child(path, ref))
    elif key in ("gcePersistentDisk", "awsElasticBlockStore"):
        required("pdName" if key == "gcePersistentDisk" else "volumeID")
        partition()
    elif key == "glusterfs":
        required("endpoints", "path")
        ens = src.get("endpointsNamespace")
        if ens is not None:
            epath = _child(path, "endpointsNamespace")
            if ens == "":
                errs.append(FieldError.invalid(
                    epath, ens, "if the endpointnamespace is set, it must be a valid namespace name"))
            else:
                _check(errs, epath, ens, is_dns1123_label(ens))
    elif key == "flocker":
        name, uuid = src.get("datasetName") or "", src.get("datasetUUID") or ""
        if not name and not uuid:
            errs.append(FieldError.required(path, "one of datasetName and datasetUUID is required"))
        if name and uuid:
            errs.append(FieldError.invalid(
                path, "resource", "datasetName and datasetUUID can not be specified simultaneously"))
        if "/" in name:
            errs.append(FieldError.invalid(_child(path, "datasetName"), name, "must not contain '/'"))
    elif key == "flexVolume":
        required("driver")
        for k in (src.get("options") or {}):
            ns = k.split("/", 1)[0] if "/" in k else k
            normalized = "." + ns.lower()
            if normalized.endswith(".kubernetes.io") or normalized.endswith(".k8s.io"):
                errs.append(FieldError.invalid(_key(_child(path, "options"), k), k,
                                               "kubernetes.io and k8s.io namespaces are reserved"))
    elif key == "azureFile":
        required("secretName", "shareName")
        if src.get("secretNamespace") == "":
            errs.append(FieldError.required(_child(path, "secretNamespace")))
    elif key == "vsphereVolume":
        required("volumePath")
    elif key == "photonPersistentDisk":
        required("pdID")
    elif key == "portworxVolume":
        required("volumeID")
    elif key == "scaleIO":
        required("gateway", "system", "volumeName")
    elif key == "storageos":
        vol = src.get("volumeName") or ""
        if not vol:
            errs.append(FieldError.required(_child(path, "volumeName")))
        else:
            _check(errs, _child(path, "volumeName"), vol, is_dns1123_label(vol))
        vns = src.get("volumeNamespace") or ""
        if vns:
            _check(errs, _child(path, "volumeNamespace"), vns, is_dns1123_label(vns))
        ref = src.get("secretRef")
        if ref is not None:
            ref = ref or {}
            if not ref.get("name"):
                errs.append(FieldError.required(_child(path, "secretRef", "name")))
            if not ref.get("namespace"):
                errs.append(FieldError.required(_child(path, "secretRef", "namespace")))
    # rbd, quobyte, cephfs, iscsi, cinder, fc, azureDisk: counted as a volume type only


def _validate_pv_spec(errs: list[FieldError], spec: dict, path: str, *, allow_invalid_affinity_values: bool = False,
                      vac_enabled: bool = False) -> None:
    """Upstream ``ValidatePersistentVolumeSpec`` for a PersistentVolume (not an inline volume),
    1.33 default feature gates (VolumeAttributesClass off).

    In order: ``accessModes`` required, each one of the four modes, ``ReadWriteOncePod`` alone;
    ``capacity`` required, with only ``storage``, each quantity non-negative and > 0;
    ``persistentVolumeReclaimPolicy`` one of Delete/Recycle/Retain; ``nodeAffinity.required``
    required once ``nodeAffinity`` is set and a valid node selector (``ValidateNodeSelector``:
    at least one term, operators, keys, label values); exactly one volume source (the first one
    set is checked, each later one is ``Forbidden: may not specify more than 1 volume type``,
    none is ``spec: Required value: must specify a volume type``) with its own checks (hostPath:
    path required, no ``..``, a known type; local: path required, no ``..``, and
    ``nodeAffinity`` required; nfs: server and absolute path; csi: driver name and
    volumeHandle, secret references; the simple required fields of the other in-tree sources);
    no ``Recycle`` for a hostPath of ``/``; ``storageClassName`` a DNS subdomain;
    ``volumeMode`` Block or Filesystem. ``claimRef`` is not validated upstream (only inline
    volumes forbid it).
    """
    modes = spec.get("accessModes") or []
    mpath = _child(path, "accessModes")
    if not modes:
        errs.append(FieldError.required(mpath))
    rwop = other = False
    for mode in modes:
        if mode not in _ACCESS_MODES:
            errs.append(FieldError.not_supported(mpath, mode, _ACCESS_MODES))
        if mode == "ReadWriteOncePod":
            rwop = True
        elif mode in _ACCESS_MODES:
            other = True
    if rwop and other:
        errs.append(FieldError.forbidden(mpath, "may not use ReadWriteOncePod with other access modes"))

    capacity = spec.get("capacity")
    cpath = _child(path, "capacity")
    if not capacity:
        errs.append(FieldError.required(cpath))
    if not isinstance(capacity, dict) or "storage" not in capacity or len(capacity) > 1:
        errs.append(FieldError.not_supported(cpath, _go_resource_list(capacity), ["storage"]))
    for name in sorted(capacity or {}):  # upstream ranges over a Go map: its order varies
        q = _parse_quantity(errs, capacity[name], _key(cpath, name))
        if q is None:
            continue
        if q.int_value() < 0:  # validateBasicResource
            errs.append(FieldError.invalid(_key(cpath, name), q.int_value(), "must be a valid resource quantity"))
        if not q > _zero():  # ValidatePositiveQuantityValue
            errs.append(FieldError.invalid(_key(cpath, name), str(q), "must be greater than zero"))

    policy = spec.get("persistentVolumeReclaimPolicy") or ""
    if policy and policy not in _RECLAIM_POLICIES:
        errs.append(FieldError.not_supported(_child(path, "persistentVolumeReclaimPolicy"), policy, _RECLAIM_POLICIES))

    affinity = spec.get("nodeAffinity")
    if affinity is not None:
        napath = _child(path, "nodeAffinity")
        required = (affinity or {}).get("required")
        if required is not None:
            _validate_node_selector(errs, required or {}, _child(napath, "required"), allow_invalid_affinity_values)
        else:
            errs.append(FieldError.required(_child(napath, "required"), "must specify required node constraints"))

    count = 0
    for key, more_path, check_path in _PV_SOURCES:
        if spec.get(key) is None:
            continue
        if count > 0 and key != "flexVolume":  # upstream never refuses a second flexVolume
            errs.append(FieldError.forbidden(_child(path, more_path), "may not specify more than 1 volume type"))
            continue
        count += 1
        _pv_source_errors(errs, key, spec.get(key) or {}, _child(path, check_path))
        if key == "local" and affinity is None:
            errs.append(FieldError.required(_child(path, "nodeAffinity"), "Local volume requires node affinity"))
    if count == 0:
        errs.append(FieldError.required(path, "must specify a volume type"))

    host_path = spec.get("hostPath")
    if host_path is not None and policy == "Recycle" and _clean_path((host_path or {}).get("path") or "") == "/":
        errs.append(FieldError.forbidden(_child(path, "persistentVolumeReclaimPolicy"),
                                         "may not be 'recycle' for a hostPath mount of '/'"))
    sc = spec.get("storageClassName") or ""
    if sc:
        _check(errs, _child(path, "storageClassName"), sc, is_dns1123_subdomain(sc))
    vm = spec.get("volumeMode")
    if vm is not None and vm not in _VOLUME_MODES:
        errs.append(FieldError.not_supported(_child(path, "volumeMode"), vm, _VOLUME_MODES))
    vac = spec.get("volumeAttributesClassName")
    if vac is not None and vac_enabled:
        vpath = _child(path, "volumeAttributesClassName")
        if not vac:
            errs.append(FieldError.required(vpath, "an empty string is disallowed"))
        else:
            _check(errs, vpath, vac, is_dns1123_subdomain(vac))
        if spec.get("csi") is None:
            errs.append(FieldError.required(_child(path, "csi"),
                                            "has to be specified when using volumeAttributesClassName"))


def _clean_path(p: str) -> str:
    """Go's ``path.Clean``, enough to tell ``/`` (``//``, ``/.``, ``/..``)."""
    import posixpath

    if not p:
        return "."
    out = posixpath.normpath(p)
    return "/" if out.startswith("//") and out.strip("/") == "" else out


#: ``PersistentVolumeSource`` fields that are pointers upstream: there an empty value is not the
#: field's zero value, so it is not dropped before comparing (``apiequality.Semantic``)
_PV_POINTER_FIELDS = frozenset({"type", "fsType", "endpointsNamespace", "secretNamespace", "cachingMode",
                                "kind", "readOnly", "secretRef", "controllerPublishSecretRef",
                                "controllerExpandSecretRef", "nodePublishSecretRef", "nodeExpandSecretRef",
                                "required", "chapAuthDiscovery", "chapAuthSession", "initiatorName"})


def _semantic_source(value: Any, top: bool = True) -> Any:
    """``value`` with the zero values ``apiequality.Semantic.DeepEqual`` does not tell apart
    from absent fields dropped: nil or empty lists and maps, ``false``, ``0`` and ``""``, except
    in the fields that are pointers upstream (and at the top level: the sources themselves)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            v = _semantic_source(v, False)
            keep = top or k in _PV_POINTER_FIELDS
            if v is None or (not keep and (v is False or v == "" or (_is_int(v) and v == 0)
                                           or (isinstance(v, (list, dict)) and not v))):
                continue
            out[k] = v
        return out
    if isinstance(value, list):
        return [_semantic_source(v, False) for v in value]
    return value


def _pv_source(spec: dict) -> dict:
    return {k: spec[k] for k in _PV_SOURCE_KEYS if spec.get(k) is not None}


def _validate_pv_update(errs: list[FieldError], new: dict, old: dict) -> None:
    """``ValidatePersistentVolumeUpdate``'s own checks (its repeat of ``ValidatePersistentVolume``
    is left out: the repeated errors are dropped from the message by ``ToAggregate``).

    The volume source is immutable (``spec.persistentvolumesource: Forbidden:
    spec.persistentvolumesource is immutable after creation`` and a diff), except that a CSI
    volume without ``controllerExpandSecretRef`` may get one; ``volumeMode`` is immutable (the
    bare path ``volumeMode``); ``nodeAffinity`` may be set once, then only its beta node labels
    may become their GA ones (``nodeAffinity: Invalid value: …: field is immutable, except for
    updating from beta label to GA``); ``volumeAttributesClassName`` may not change with the
    VolumeAttributesClass gate off.
    """
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    new_src, old_src = json.loads(json.dumps(_pv_source(new_spec))), _pv_source(old_spec)
    if (old_src.get("csi") is not None and (old_src["csi"] or {}).get("controllerExpandSecretRef") is None
            and new_src.get("csi") is not None and (new_src["csi"] or {}).get("controllerExpandSecretRef") is not None):
        new_src["csi"] = dict(new_src["csi"])
        new_src["csi"].pop("controllerExpandSecretRef", None)
    if _semantic_source(new_src) != _semantic_source(old_src):
        errs.append(FieldError.forbidden(
            "spec.persistentvolumesource",
            PV_SOURCE_UPDATE_MSG + "\n" + _spec_diff(old_src, new_src, "core.PersistentVolumeSource")))
    if new_spec.get("volumeMode") != old_spec.get("volumeMode"):
        errs.append(FieldError.invalid("volumeMode", new_spec.get("volumeMode"), IMMUTABLE_MSG))
    old_na, new_na = old_spec.get("nodeAffinity"), new_spec.get("nodeAffinity")
    if old_na is not None and not _node_affinity_equal_but_ga(new_na, old_na):
        errs.append(FieldError.invalid("nodeAffinity", _go_volume_node_affinity(new_na),
                                       IMMUTABLE_MSG + ", except for updating from beta label to GA"))
    old_vac, new_vac = old_spec.get("volumeAttributesClassName"), new_spec.get("volumeAttributesClassName")
    if old_vac != new_vac:
        errs.append(FieldError.forbidden("spec.volumeAttributesClassName",
                                         "update is forbidden when the VolumeAttributesClass feature gate is disabled"))
        if old_vac is not None and new_vac is None:
            errs.append(FieldError.forbidden("spec.volumeAttributesClassName",
                                             "update from non-nil value to nil is forbidden"))


#: ``betaToGALabel``: node labels a PV's node affinity may move from (beta) to (GA)
_BETA_TO_GA_LABEL = {
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
    "beta.kubernetes.io/os": "kubernetes.io/os",
    "beta.kubernetes.io/arch": "kubernetes.io/arch",
    "beta.kubernetes.io/instance-type": "node.kubernetes.io/instance-type",
}


def _node_affinity_equal_but_ga(new: Any, old: Any) -> bool:
    """``getMaskNodeSelectorLabelChangeEqualities().DeepEqual``: equal, where a requirement's
    beta key may have become its GA key."""
    if new is None or old is None:
        return new is None and old is None
    new_n, old_n = _semantic_source(new), _semantic_source(old)
    if ("required" in new_n) != ("required" in old_n):
        return False
    new_terms = (new_n.get("required") or {}).get("nodeSelectorTerms") or []
    old_terms = (old_n.get("required") or {}).get("nodeSelectorTerms") or []
    if len(new_terms) != len(old_terms):
        return False
    for nt, ot in zip(new_terms, old_terms):
        nt, ot = nt or {}, ot or {}
        if (nt.get("matchFields") or []) != (ot.get("matchFields") or []):
            return False
        ne, oe = nt.get("matchExpressions") or [], ot.get("matchExpressions") or []
        if len(ne) != len(oe):
            return False
        for nr, orq in zip(ne, oe):
            orq = dict(orq or {})
            nr = nr or {}
            if orq.get("key") != nr.get("key") and _BETA_TO_GA_LABEL.get(orq.get("key")) == nr.get("key"):
                orq["key"] = nr.get("key")
            if nr != orq:
                return False
    return True


def _validate_pv(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    """The PersistentVolume strategy: ``ValidatePersistentVolume`` (:func:`_validate_pv_spec`),
    ``volumevalidation.ValidatePersistentVolume`` (the beta mount-options annotation only on the
    sources that take mount options) and, on update, ``ValidatePersistentVolumeUpdate``
    (:func:`_validate_pv_update`).

    A ``status`` update (the spec carried over unchanged, the status changed) is
    ``ValidatePersistentVolumeStatusUpdate``: object metadata only, which :func:`validate` has
    already checked.
    """
    spec = obj.get("spec") or {}
    if old is not None and spec == (old.get("spec") or {}) and obj.get("status") != old.get("status"):
        return
    old_spec = (old or {}).get("spec") or {}
    _validate_pv_spec(errs, spec, "spec",
                      allow_invalid_affinity_values=old is not None and _has_invalid_label_value_in_terms(old_spec),
                      vac_enabled=old is not None and old_spec.get("volumeAttributesClassName") is not None)
    ann = (obj.get("metadata") or {}).get("annotations") or {}
    if _MOUNT_OPTIONS_ANNOTATION in ann and not any(spec.get(k) is not None for k in _MOUNT_OPTION_SOURCES):
        errs.append(FieldError.forbidden("metadata.annotations." + _MOUNT_OPTIONS_ANNOTATION,
                                         "may not specify mount options for this volume type"))
    if old is not None:
        _validate_pv_update(errs, obj, old)


def _validate_quota(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    spec = obj.get("spec") or {}
    _validate_resource_list(errs, spec.get("hard"), "spec.hard")


def _validate_limit_range(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    for i, item in enumerate((obj.get("spec") or {}).get("limits") or ()):
        ipath = _idx("spec.limits", i)
        ltype = item.get("type")
        if ltype not in ("Container", "Pod", "PersistentVolumeClaim"):
            errs.append(FieldError.not_supported(_child(ipath, "type"), ltype,
                                                 ["Container", "PersistentVolumeClaim", "Pod"]))
        for part in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
            _validate_resource_list(errs, item.get(part), _child(ipath, part))


def _validate_node(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    status = obj.get("status") or {}
    for part in ("capacity", "allocatable"):
        _validate_resource_list(errs, status.get(part), _child("status", part))
    for i, taint in enumerate((obj.get("spec") or {}).get("taints") or ()):
        tpath = _idx("spec.taints", i)
        key = taint.get("key") or ""
        if not key:
            errs.append(FieldError.required(_child(tpath, "key")))
        else:
            _check(errs, _child(tpath, "key"), key, is_qualified_name(key))
        effect = taint.get("effect") or ""
        if not effect:
            errs.append(FieldError.required(_child(tpath, "effect")))
        elif effect not in _TAINT_EFFECTS:
            errs.append(FieldError.not_supported(_child(tpath, "effect"), effect, _TAINT_EFFECTS))


def _validate_hpa(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    spec = obj.get("spec") or {}
    ref = spec.get("scaleTargetRef") or {}
    if not ref.get("kind"):
        errs.append(FieldError.required("spec.scaleTargetRef.kind"))
    if not ref.get("name"):
        errs.append(FieldError.required("spec.scaleTargetRef.name"))
    mn, mx = spec.get("minReplicas"), spec.get("maxReplicas")
    if _is_int(mn) and mn < 1:
        errs.append(FieldError.invalid("spec.minReplicas", mn, "must be greater than or equal to 1"))
    if not _is_int(mx) or mx < 1:
        errs.append(FieldError.invalid("spec.maxReplicas", mx, "must be greater than 0"))
    elif _is_int(mn) and mx < mn:
        errs.append(FieldError.invalid("spec.maxReplicas", mx, "must be greater than or equal to `minReplicas`"))


def _validate_pdb(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    spec = obj.get("spec") or {}
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        errs.append(FieldError.invalid("spec", GoValue(spec, "policy.PodDisruptionBudgetSpec{…}"),
                                       "minAvailable and maxUnavailable cannot be both set"))
    for field in ("minAvailable", "maxUnavailable"):
        if spec.get(field) is not None:
            _validate_int_or_percent(errs, spec[field], _child("spec", field))
            _not_more_than_100(errs, spec[field], _child("spec", field))
    if spec.get("selector") is not None:
        _validate_selector(errs, spec["selector"], "spec.selector")


_PATH_TYPES = ["Exact", "ImplementationSpecific", "Prefix"]


def _validate_ingress(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    spec = obj.get("spec") or {}
    if not spec.get("rules") and not spec.get("defaultBackend"):
        errs.append(FieldError.invalid("spec", GoValue(spec.get("rules"), "[]networking.IngressRule(nil)"),
                                       "either `defaultBackend` or `rules` must be specified"))
    for i, rule in enumerate(spec.get("rules") or ()):
        rpath = _idx("spec.rules", i)
        host = rule.get("host")
        if host:
            _check(errs, _child(rpath, "host"), host, is_dns1123_subdomain(host.removeprefix("*.")))
        for j, p in enumerate((rule.get("http") or {}).get("paths") or ()):
            ppath = _idx(_child(rpath, "http", "paths"), j)
            pt = p.get("pathType")
            if not pt:
                errs.append(FieldError.required(_child(ppath, "pathType"), "pathType must be specified"))
            elif pt not in _PATH_TYPES:
                errs.append(FieldError.not_supported(_child(ppath, "pathType"), pt, _PATH_TYPES))
            path = p.get("path") or ""
            if pt in ("Exact", "Prefix") and not path.startswith("/"):
                errs.append(FieldError.invalid(_child(ppath, "path"), path, "must be an absolute path"))


# ---------------------------------------------------------------------------- NetworkPolicy
#
# ``ValidateNetworkPolicy`` / ``ValidateNetworkPolicyUpdate`` of
# pkg/apis/networking/validation (v1.33): the spec's podSelector (a label selector, values
# included), then each ingress rule's ports and ``from`` peers, each egress rule's ports and
# ``to`` peers, then policyTypes.

_NP_PROTOCOLS = ["TCP", "UDP", "SCTP"]  # field.NotSupported keeps this order (not sorted)
_NP_POLICY_TYPES = ["Ingress", "Egress"]
CIDR_MSG = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"


def _go_parse_ipv4(s: str) -> bytes | None:
    """The IPv4 half of ``netutils.ParseIPSloppy`` (Go 1.16's parser): four dotted decimal
    octets, leading zeros allowed (read as decimal)."""
    parts = s.split(".")
    if len(parts) != 4 or not all(p.isascii() and p.isdigit() for p in parts):
        return None
    nums = [int(p) for p in parts]
    return bytes(nums) if all(n <= 255 for n in nums) else None


def _go_parse_cidr(s: str) -> tuple[bytes, bytes] | None:
    """``netutils.ParseCIDRSloppy``: the ``IPNet`` (masked IP, mask) of ``addr/len``, or None.

    An IPv4 text gives 4-byte IP and mask; an IPv6 text (IPv4-mapped ones included) 16-byte
    ones. Host bits may be set (they are masked off) and the prefix length may have leading
    zeros; zones (``%eth0``) are refused."""
    import ipaddress

    addr, sep, mask = s.partition("/")
    if not sep or not mask.isascii() or not mask.isdigit():
        return None
    ip = _go_parse_ipv4(addr)
    if ip is None:
        if "%" in addr or ":" not in addr:
            return None
        head, _, tail = addr.rpartition(":")
        if "." in tail:  # embedded IPv4, parsed as sloppily as the plain one
            v4 = _go_parse_ipv4(tail)
            if v4 is None:
                return None
            addr = f"{head}:{ipaddress.IPv4Address(v4)}"
        try:
            ip = ipaddress.IPv6Address(addr).packed
        except ValueError:
            return None
    bits = len(ip) * 8
    n = int(mask)
    if n > bits:
        return None
    m = ((1 << bits) - 1 ^ ((1 << (bits - n)) - 1)).to_bytes(len(ip), "big")
    return bytes(a & b for a, b in zip(ip, m)), m


def _go_to4(ip: bytes) -> bytes | None:
    if len(ip) == 4:
        return ip
    if len(ip) == 16 and ip[:10] == bytes(10) and ip[10:12] == b"\xff\xff":
        return ip[12:]
    return None


def _go_ipnet_contains(net: tuple[bytes, bytes], ip: bytes) -> bool:
    """``net.IPNet.Contains``: an IPv4-mapped network matches IPv4 addresses and the other way
    round; otherwise the families must agree."""
    nip, mask = net
    nn = _go_to4(nip) or nip
    if len(mask) == 16 and len(nn) == 4:
        mask = mask[12:]
    elif len(mask) != len(nn):
        return False
    ip = _go_to4(ip) or ip
    if len(ip) != len(nn):
        return False
    return all(a & m == b & m for a, b, m in zip(nn, ip, mask))


def _mask_ones(mask: bytes) -> int:
    return bin(int.from_bytes(mask, "big")).count("1")


def _validate_ip_block(errs: list[FieldError], ipb: dict, path: str) -> None:
    """``ValidateIPBlock``: ``cidr`` required and a CIDR; each ``except`` a CIDR strictly inside
    it (contained in ``cidr`` and with a longer prefix; an address of the other family never
    is). v1.33 parses the legacy way (``StrictIPCIDRValidation`` is alpha, off): leading zeros
    and host bits set pass, so ``AllowCIDRsEvenIfInvalid`` (old CIDRs on update) changes nothing."""
    cidr = ipb.get("cidr") or ""
    if not cidr:
        errs.append(FieldError.required(_child(path, "cidr"), ""))
        return
    net = _go_parse_cidr(cidr)
    if net is None:
        errs.append(FieldError.invalid(_child(path, "cidr"), cidr, CIDR_MSG))
        return
    for i, exc in enumerate(ipb.get("except") or ()):
        epath = _idx(_child(path, "except"), i)
        exc = "" if exc is None else str(exc)
        enet = _go_parse_cidr(exc)
        if enet is None:
            errs.append(FieldError.invalid(epath, exc, CIDR_MSG))
            continue
        if not _go_ipnet_contains(net, enet[0]) or _mask_ones(net[1]) >= _mask_ones(enet[1]):
            errs.append(FieldError.invalid(epath, exc, "must be a strict subset of `cidr`"))


def _validate_np_port(errs: list[FieldError], port: dict, path: str) -> None:
    """``ValidateNetworkPolicyPort``: protocol TCP/UDP/SCTP; a numeric ``port`` in 1-65535 with
    ``endPort`` (if any) ≥ it and in range; a named ``port`` an IANA_SVC_NAME and no
    ``endPort``; no ``endPort`` without a ``port``."""
    proto = port.get("protocol")
    if proto is not None and proto not in _NP_PROTOCOLS:
        errs.append(FieldError.not_supported(_child(path, "protocol"), proto, _NP_PROTOCOLS))
    value, end = port.get("port"), port.get("endPort")
    if value is None:
        if end is not None:
            errs.append(FieldError.invalid(_child(path, "endPort"), end,
                                           "may not be specified when `port` is not specified"))
    elif _is_int(value):
        if not 1 <= value <= 65535:
            errs.append(FieldError.invalid(_child(path, "port"), value, PORT_RANGE_MSG))
        if end is not None:
            if end < value:
                errs.append(FieldError.invalid(_child(path, "endPort"), end,
                                               "must be greater than or equal to `port`"))
            if not 1 <= end <= 65535:
                errs.append(FieldError.invalid(_child(path, "endPort"), end, PORT_RANGE_MSG))
    else:
        if end is not None:
            errs.append(FieldError.invalid(_child(path, "endPort"), end,
                                           "may not be specified when `port` is non-numeric"))
        _check(errs, _child(path, "port"), str(value), is_valid_port_name(str(value)))


def _validate_np_peer(errs: list[FieldError], peer: dict, path: str, allow_invalid_values: bool) -> None:
    """``ValidateNetworkPolicyPeer``: podSelector and/or namespaceSelector, or ipBlock alone.
    An empty selector (``{}``) counts as set; ``null`` does not."""
    peer = peer or {}
    n = 0
    for name in ("podSelector", "namespaceSelector"):
        if peer.get(name) is not None:
            n += 1
            _validate_selector(errs, peer[name], _child(path, name), values=not allow_invalid_values)
    if peer.get("ipBlock") is not None:
        n += 1
        _validate_ip_block(errs, peer["ipBlock"], _child(path, "ipBlock"))
    if n == 0:
        errs.append(FieldError.required(path, "must specify a peer"))
    elif n > 1 and peer.get("ipBlock") is not None:
        errs.append(FieldError.forbidden(path, "may not specify both ipBlock and another peer"))


def _validate_network_policy(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    """``ValidateNetworkPolicySpec`` (metadata is checked by :func:`validate`).

    On update, selector values that are not label values are let through when the stored
    policy's own podSelector does not validate (``ValidationOptionsForNetworking``). More
    than two policyTypes is one error on the whole list (and ends the checks); otherwise each
    must be ``Ingress`` or ``Egress`` (duplicates such as ``[Ingress, Ingress]`` pass, as upstream).
    """
    spec = obj.get("spec") or {}
    allow = False
    if old is not None:
        probe: list[FieldError] = []
        _validate_selector(probe, (old.get("spec") or {}).get("podSelector"), "", values=True)
        allow = bool(probe)
    _validate_selector(errs, spec.get("podSelector"), "spec.podSelector", values=not allow)
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(spec.get(direction) or ()):
            rpath = _idx(_child("spec", direction), i)
            rule = rule or {}
            for j, port in enumerate(rule.get("ports") or ()):
                _validate_np_port(errs, port or {}, _idx(_child(rpath, "ports"), j))
            for j, peer in enumerate(rule.get(peers) or ()):
                _validate_np_peer(errs, peer, _idx(_child(rpath, peers), j), allow)
    types = spec.get("policyTypes") or []
    if len(types) > len(_NP_POLICY_TYPES):
        text = "[]networking.PolicyType{" + ", ".join(_q(t) for t in types) + "}"
        errs.append(FieldError.invalid("spec.policyTypes", GoValue(types, text),
                                       "may not specify more than two policyTypes"))
        return
    for i, pt in enumerate(types):
        if pt not in _NP_POLICY_TYPES:
            errs.append(FieldError.not_supported(_idx("spec.policyTypes", i), pt, _NP_POLICY_TYPES))


def _validate_rules(errs: list[FieldError], obj: dict, namespaced: bool) -> None:
    for i, rule in enumerate(obj.get("rules") or ()):
        rpath = _idx("rules", i)
        if not rule.get("verbs"):
            errs.append(FieldError.required(_child(rpath, "verbs"), "verbs must contain at least one value"))
        urls = rule.get("nonResourceURLs") or []
        if urls:
            if namespaced:
                errs.append(FieldError.invalid(_child(rpath, "nonResourceURLs"), _go_strings(urls),
                                               "namespaced rules cannot apply to non-resource URLs"))
            if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
                errs.append(FieldError.invalid(_child(rpath, "nonResourceURLs"), _go_strings(urls),
                                               "rules cannot apply to both regular resources and "
                                               "non-resource URLs"))
            continue
        if not rule.get("apiGroups"):
            errs.append(FieldError.required(_child(rpath, "apiGroups"),
                                            "resource rules must supply at least one api group"))
        if not rule.get("resources"):
            errs.append(FieldError.required(_child(rpath, "resources"),
                                            "resource rules must supply at least one resource"))


def _validate_role(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    _validate_rules(errs, obj, namespaced=True)


def _validate_cluster_role(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    _validate_rules(errs, obj, namespaced=False)


_RBAC_GROUP = "rbac.authorization.k8s.io"


def _validate_binding(errs: list[FieldError], obj: dict, old: dict | None, *, cluster: bool) -> None:
    ref = obj.get("roleRef") or {}
    if ref.get("apiGroup") != _RBAC_GROUP:
        errs.append(FieldError.not_supported("roleRef.apiGroup", ref.get("apiGroup") or "", [_RBAC_GROUP]))
    kinds = ["ClusterRole"] if cluster else ["Role", "ClusterRole"]
    if ref.get("kind") not in kinds:
        errs.append(FieldError.not_supported("roleRef.kind", ref.get("kind") or "", kinds))
    if not ref.get("name"):
        errs.append(FieldError.required("roleRef.name"))
    else:
        _check(errs, "roleRef.name", ref["name"], is_path_segment_name(ref["name"]))
    for i, subject in enumerate(obj.get("subjects") or ()):
        spath = _idx("subjects", i)
        name = subject.get("name") or ""
        kind = subject.get("kind")
        if not name:
            errs.append(FieldError.required(_child(spath, "name")))
        if kind == "ServiceAccount":
            if name:
                _check(errs, _child(spath, "name"), name, is_dns1123_subdomain(name))
            if subject.get("apiGroup"):
                errs.append(FieldError.not_supported(_child(spath, "apiGroup"), subject["apiGroup"], [""]))
            if cluster and not subject.get("namespace"):
                errs.append(FieldError.required(_child(spath, "namespace")))
        elif kind in ("User", "Group"):
            if subject.get("apiGroup") != _RBAC_GROUP:
                errs.append(FieldError.not_supported(_child(spath, "apiGroup"), subject.get("apiGroup") or "",
                                                     [_RBAC_GROUP]))
        else:
            errs.append(FieldError.not_supported(_child(spath, "kind"), kind or "",
                                                 ["ServiceAccount", "User", "Group"]))
    if old is not None and (old.get("roleRef") or {}) != ref:
        text = (f"rbac.RoleRef{{APIGroup:{_q(ref.get('apiGroup'))}, Kind:{_q(ref.get('kind'))}, "
                f"Name:{_q(ref.get('name'))}}}")
        errs.append(FieldError.invalid("roleRef", GoValue(ref, text), "cannot change roleRef"))


def _validate_priority_class(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    pp = obj.get("preemptionPolicy")
    if pp is not None and pp not in ("Never", "PreemptLowerPriority"):
        errs.append(FieldError.not_supported("preemptionPolicy", pp, ["Never", "PreemptLowerPriority"]))
    if old is not None and obj.get("value") != old.get("value"):
        errs.append(FieldError.forbidden("value", "may not be changed in an update."))


def _validate_endpoint_slice(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    at = obj.get("addressType")
    if not at:
        errs.append(FieldError.required("addressType"))
    elif at not in ("FQDN", "IPv4", "IPv6"):
        errs.append(FieldError.not_supported("addressType", at, ["FQDN", "IPv4", "IPv6"]))
    for i, port in enumerate(obj.get("ports") or ()):
        proto = port.get("protocol")
        if proto is not None and proto not in _PROTOCOLS:
            errs.append(FieldError.not_supported(_child(_idx("ports", i), "protocol"), proto, _PROTOCOLS))


def _validate_pod_template(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    """Upstream ``ValidatePodTemplate`` / ``ValidatePodTemplateUpdate``: the ``template`` as a
    pod template spec (labels, annotations, pod spec), on create and on update."""
    _validate_template(errs, obj.get("template") or {}, "template")


def _validate_runtime_class(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    """Upstream ``ValidateRuntimeClass`` (pkg/apis/node/validation): ``handler`` is a DNS-1123
    label (an empty or missing one too: ``handler: Invalid value: ""``), ``overhead.podFixed``
    a valid, non-negative ResourceList, ``scheduling.nodeSelector`` valid labels and
    ``scheduling.tolerations`` valid tolerations; on update (``ValidateRuntimeClassUpdate``)
    ``handler`` is immutable."""
    if old is not None:
        if obj.get("handler") != old.get("handler"):
            errs.append(FieldError.invalid("handler", obj.get("handler") or "", IMMUTABLE_MSG))
        return
    handler = obj.get("handler") or ""
    _check(errs, "handler", handler, is_dns1123_label(handler))
    overhead = obj.get("overhead")
    if isinstance(overhead, dict):
        _validate_resource_list(errs, overhead.get("podFixed"), "overhead.podFixed")
    scheduling = obj.get("scheduling")
    if isinstance(scheduling, dict):
        _validate_labels(errs, scheduling.get("nodeSelector"), "scheduling.nodeSelector")
        _validate_tolerations(errs, scheduling.get("tolerations"), "scheduling.tolerations")


def _validate_vap(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    """``ValidateValidatingAdmissionPolicy``: see :func:`k8semu.api.admissionpolicy.validate_policy`."""
    from .admissionpolicy import validate_policy

    validate_policy(errs, obj, old)


def _validate_vap_binding(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    """``ValidateValidatingAdmissionPolicyBinding``: see :func:`k8semu.api.admissionpolicy.validate_binding`."""
    from .admissionpolicy import validate_binding

    validate_binding(errs, obj, old)


# ---------------------------------------------------------------------------- certificates.k8s.io

#: ``certificates.k8s.io/v1`` key usages (``allValidUsages``), as upstream lists them (sorted).
CSR_USAGES = (
    "any", "cert sign", "client auth", "code signing", "content commitment", "crl sign",
    "data encipherment", "decipher only", "digital signature", "email protection", "encipher only",
    "ipsec end system", "ipsec tunnel", "ipsec user", "key agreement", "key encipherment",
    "microsoft sgc", "netscape sgc", "ocsp signing", "s/mime", "server auth", "signing", "timestamping",
)
#: The signer name v1 refuses (v1beta1's default).
LEGACY_UNKNOWN_SIGNER = "kubernetes.io/legacy-unknown"
#: Condition types that may only be ``True`` (``trueConditionTypes``).
_CSR_TRUE_ONLY = ("Approved", "Denied", "Failed")
_CSR_STATUS_VALUES = ["False", "True", "Unknown"]


def go_bytes(data: bytes) -> GoValue:
    """A ``[]byte`` as Go's ``%#v`` prints it in a field error: ``[]byte{0x2d, 0x2d}``."""
    return GoValue(data, "[]byte{" + ", ".join(f"0x{b:x}" for b in data) + "}")


def wire_bytes(value: Any) -> bytes:
    """The bytes of a ``[]byte`` field in wire form (base64 text; the decoder has checked it).
    Anything else (None, not base64) is ``b""``."""
    import base64
    import binascii

    if not isinstance(value, str) or not value:
        return b""
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return b""


def parse_csr_pem(pem: bytes) -> Any:
    """``certificates.ParseCSR`` then ``CheckSignature``: the first PEM block of ``pem`` must be a
    ``CERTIFICATE REQUEST`` whose PKCS#10 content parses and whose signature verifies.

    Returns:
        the :class:`cryptography.x509.CertificateSigningRequest`.
    Raises:
        ValueError: with upstream's text (``PEM block type must be CERTIFICATE REQUEST``; for a
            request that does not parse or verify Go's x509 wording is approximated:
            ``x509: malformed certificate request``, ``x509: invalid signature …``).
    """
    from cryptography import x509

    block = _first_pem_block(pem)
    if block is None or block[0] != "CERTIFICATE REQUEST":
        raise ValueError("PEM block type must be CERTIFICATE REQUEST")
    try:
        csr = x509.load_der_x509_csr(block[2])
    except ValueError:
        raise ValueError("x509: malformed certificate request") from None
    try:
        ok = csr.is_signature_valid
    except Exception:  # an unsupported key or signature algorithm
        raise ValueError("x509: cannot verify signature: algorithm unimplemented") from None
    if not ok:
        from cryptography.hazmat.primitives.asymmetric import ec, ed25519

        key = csr.public_key()
        raise ValueError("x509: ECDSA verification failure" if isinstance(key, ec.EllipticCurvePublicKey)
                         else "x509: Ed25519 verification failure" if isinstance(key, ed25519.Ed25519PublicKey)
                         else "crypto/rsa: verification error")
    return csr


def _first_pem_block(data: bytes) -> tuple[str, dict[str, str], bytes] | None:
    """Go's ``pem.Decode``: the first well-formed block (type, headers, decoded bytes) of
    ``data``, skipping anything before it; None when there is none."""
    return next(iter(pem_blocks(data, first_only=True)), None)


def pem_blocks(data: bytes, *, first_only: bool = False) -> list[tuple[str, dict[str, str], bytes]]:
    """Every PEM block of ``data`` as ``pem.Decode`` finds them in turn: (type, headers, bytes).
    Text between blocks is skipped; a block whose base64 does not decode ends the scan."""
    import base64
    import binascii

    out: list[tuple[str, dict[str, str], bytes]] = []
    pos = 0
    begin, end_prefix = b"-----BEGIN ", b"-----END "
    while True:
        start = data.find(begin, pos)
        if start < 0:
            return out
        eol = data.find(b"-----", start + len(begin))
        if eol < 0:
            return out
        typ = data[start + len(begin):eol]
        body_start = data.find(b"\n", eol)
        if body_start < 0:
            return out
        end = data.find(end_prefix + typ + b"-----", body_start)
        if end < 0:
            return out
        lines = data[body_start + 1:end].decode("latin-1").splitlines()
        headers: dict[str, str] = {}
        while lines and ":" in lines[0]:
            k, v = lines.pop(0).split(":", 1)
            headers[k.strip()] = v.strip()
        if headers and lines and not lines[0].strip():
            lines.pop(0)
        try:
            raw = base64.b64decode("".join(x.strip() for x in lines), validate=True)
        except (binascii.Error, ValueError):
            return out
        out.append((typ.decode("latin-1"), headers, raw))
        if first_only:
            return out
        pos = end + len(end_prefix) + len(typ) + 5


def certificate_pem_error(pem: bytes) -> str | None:
    """``validateCertificate``: None when ``pem`` is empty or one or more ``CERTIFICATE`` blocks
    without headers that parse; else upstream's message."""
    from cryptography import x509

    if not pem:
        return None
    blocks = pem_blocks(pem)
    for typ, headers, raw in blocks:
        if typ != "CERTIFICATE":
            return f'only CERTIFICATE PEM blocks are allowed, found "{typ}"'
        if headers:
            return "no PEM block headers are permitted"
        try:
            x509.load_der_x509_certificate(raw)
        except ValueError:
            return "x509: malformed certificate"
    if not blocks:
        return "must contain at least one CERTIFICATE PEM block"
    return None


def validate_signer_name(errs: list[FieldError], path: str, name: Any) -> None:
    """apimachinery's ``ValidateSignerName``: ``<domain>/<path>``, the domain DNS-1123 labels
    (at least two) of at most 253 characters, the path a DNS-1123 subdomain of at most 317."""
    name = "" if name is None else str(name)
    if not name:
        errs.append(FieldError.required(path))
        return
    segments = name.split("/")
    if len(segments) != 2:
        errs.append(FieldError.invalid(
            path, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'"))
        return
    domain, rest = segments
    if len(domain) > 253:
        errs.append(FieldError("FieldValueTooLong", path, "may not be more than 253 bytes", domain))
    labels = domain.split(".")
    for lbl in labels:
        msgs = is_dns1123_label(lbl)
        if msgs:
            for m in msgs:
                errs.append(FieldError.invalid(path, domain, f'validating label "{lbl}": {m}'))
            break
    if len(labels) < 2:
        errs.append(FieldError.invalid(path, domain, "should be a domain with at least two segments separated by dots"))
    if len(rest) > 253 + 63 + 1:
        errs.append(FieldError("FieldValueTooLong", path, f"may not be more than {253 + 63 + 1} bytes", rest))
    for m in is_dns1123_subdomain(rest):
        errs.append(FieldError.invalid(path, rest, m))


def csr_conditions(obj: dict, type_: str) -> list[dict]:
    """``findConditions``: every condition of ``type_`` in ``status.conditions``, in order."""
    return [c for c in ((obj.get("status") or {}).get("conditions") or ()) if isinstance(c, dict)
            and c.get("type") == type_]


def _validate_csr(errs: list[FieldError], obj: dict, old: dict | None) -> None:
    """``validateCertificateSigningRequest`` (+ the subresource-independent part of
    ``validateCertificateSigningRequestUpdate``). The options upstream relaxes for objects stored
    by older releases (``getValidationOptions``) are relaxed the same way: a rule the stored
    object already broke is not enforced again (unknown or duplicate usages, the legacy signer,
    both Approved and Denied, duplicate or empty condition types, an unparseable certificate)."""
    spec = obj.get("spec") or {}
    old_spec = (old or {}).get("spec") or {}
    old_status = (old or {}).get("status") or {}
    request = wire_bytes(spec.get("request"))
    try:
        parse_csr_pem(request)
    except ValueError as e:
        errs.append(FieldError.invalid("spec.request", go_bytes(request), str(e)))
    usages = spec.get("usages") or []
    if not usages:
        errs.append(FieldError.required("spec.usages"))
    old_usages = old_spec.get("usages") or [] if old is not None else []
    if not (old is not None and any(u not in CSR_USAGES for u in old_usages)):
        for i, u in enumerate(usages):
            if u not in CSR_USAGES:
                errs.append(FieldError.not_supported(f"spec.usages[{i}]", u, list(CSR_USAGES)))
    if not (old is not None and len(set(old_usages)) != len(old_usages)):
        seen: set = set()
        for i, u in enumerate(usages):
            if u in seen:
                errs.append(FieldError.duplicate(f"spec.usages[{i}]", u))
            seen.add(u)
    signer = spec.get("signerName")
    if signer == LEGACY_UNKNOWN_SIGNER and not (old is not None and old_spec.get("signerName") == signer):
        errs.append(FieldError.invalid("spec.signerName", signer,
                                       "the legacy signerName is not allowed via this API version"))
    elif signer != LEGACY_UNKNOWN_SIGNER:
        validate_signer_name(errs, "spec.signerName", signer)
    exp = spec.get("expirationSeconds")
    if isinstance(exp, int) and exp < 600:
        errs.append(FieldError.invalid("spec.expirationSeconds", exp,
                                       "may not specify a duration less than 600 seconds (10 minutes)"))
    # conditions
    conds = (obj.get("status") or {}).get("conditions") or []
    old_conds = old_status.get("conditions") or []
    old_types = [c.get("type") for c in old_conds if isinstance(c, dict)]
    allow_empty_type = old is not None and any(not t for t in old_types)
    allow_dup_types = old is not None and len(set(old_types)) != len(old_types)
    allow_both = old is not None and "Approved" in old_types and "Denied" in old_types
    seen_types: set = set()
    has = set()
    for i, c in enumerate(conds):
        if not isinstance(c, dict):
            continue
        path = f"status.conditions[{i}]"
        t = c.get("type") or ""
        if not t and not allow_empty_type:
            errs.append(FieldError.required(f"{path}.type"))
        allowed = ["True"] if t in _CSR_TRUE_ONLY else _CSR_STATUS_VALUES
        status = c.get("status") or ""
        if not status:
            errs.append(FieldError.required(f"{path}.status"))
        elif status not in allowed:
            errs.append(FieldError.not_supported(f"{path}.status", status, allowed))
        if not allow_dup_types:
            if t in seen_types:
                errs.append(FieldError.duplicate(f"{path}.type", t))
            seen_types.add(t)
        if t in ("Approved", "Denied"):
            has.add(t)
    if has == {"Approved", "Denied"} and not allow_both:
        errs.append(FieldError.invalid("status.conditions", GoValue(conds, "[]certificates.CertificateSigningRequestCondition{…}"),
                                       "Approved and Denied conditions are mutually exclusive"))
    cert = wire_bytes((obj.get("status") or {}).get("certificate"))
    old_cert = wire_bytes(old_status.get("certificate"))
    if not (old is not None and cert == old_cert):  # allowArbitraryCertificate: unchanged content
        msg = certificate_pem_error(cert)
        if msg:
            errs.append(FieldError.invalid("status.certificate", "<certificate data>", msg))
    if old is None:
        return
    for t in ("Approved", "Denied", "Failed"):
        if len(csr_conditions(obj, t)) < len(csr_conditions(old, t)):
            errs.append(FieldError.forbidden("status.conditions", f'updates may not remove a condition of type "{t}"'))
    if cert != old_cert and old_cert:
        errs.append(FieldError.forbidden("status.certificate", "updates may not modify existing certificate content"))


# ---------------------------------------------------------------------------- dispatch

_KindFn = Callable[[list, dict, "dict | None"], None]

# (group, kind) -> (name check, kind-specific validator)
_KINDS: dict[tuple[str, str], tuple[NameFn, _KindFn | None]] = {
    ("", "Namespace"): (is_dns1123_label, _validate_namespace),
    ("", "Node"): (is_dns1123_subdomain, _validate_node),
    ("", "Pod"): (is_dns1123_subdomain, _validate_pod),
    ("", "Service"): (is_dns1035_label, _validate_service),
    ("", "Endpoints"): (is_dns1123_subdomain, None),
    ("", "ConfigMap"): (is_dns1123_subdomain, _validate_config_map),
    ("", "Secret"): (is_dns1123_subdomain, _validate_secret),
    ("", "ServiceAccount"): (is_dns1123_subdomain, None),
    ("", "Event"): (is_dns1123_subdomain, None),
    ("", "ResourceQuota"): (is_dns1123_subdomain, _validate_quota),
    ("", "LimitRange"): (is_dns1123_subdomain, _validate_limit_range),
    ("", "PersistentVolume"): (is_dns1123_subdomain, _validate_pv),
    ("", "PersistentVolumeClaim"): (is_dns1123_subdomain, _validate_pvc),
    ("", "ReplicationController"): (is_dns1123_subdomain, _validate_replication_controller),
    ("", "PodTemplate"): (is_dns1123_subdomain, _validate_pod_template),
    ("node.k8s.io", "RuntimeClass"): (is_dns1123_subdomain, _validate_runtime_class),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): (is_dns1123_subdomain, _validate_vap),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"): (is_dns1123_subdomain,
                                                                           _validate_vap_binding),
    ("events.k8s.io", "Event"): (is_dns1123_subdomain, None),
    ("coordination.k8s.io", "Lease"): (is_dns1123_subdomain, None),
    ("scheduling.k8s.io", "PriorityClass"): (is_dns1123_subdomain, _validate_priority_class),
    ("storage.k8s.io", "StorageClass"): (is_dns1123_subdomain, None),
    ("apps", "Deployment"): (is_dns1123_subdomain, _validate_deployment),
    ("apps", "ReplicaSet"): (is_dns1123_subdomain, _validate_replica_set),
    ("apps", "StatefulSet"): (is_dns1123_subdomain, _validate_stateful_set),
    ("apps", "DaemonSet"): (is_dns1123_subdomain, _validate_daemon_set),
    ("apps", "ControllerRevision"): (is_dns1123_subdomain, None),
    ("batch", "Job"): (is_dns1123_subdomain, _validate_job),
    ("batch", "CronJob"): (is_dns1123_subdomain, _validate_cron_job),
    ("autoscaling", "HorizontalPodAutoscaler"): (is_dns1123_subdomain, _validate_hpa),
    ("policy", "PodDisruptionBudget"): (is_dns1123_subdomain, _validate_pdb),
    ("networking.k8s.io", "NetworkPolicy"): (is_dns1123_subdomain, _validate_network_policy),
    ("networking.k8s.io", "Ingress"): (is_dns1123_subdomain, _validate_ingress),
    ("networking.k8s.io", "IngressClass"): (is_dns1123_subdomain, None),
    ("discovery.k8s.io", "EndpointSlice"): (is_dns1123_subdomain, _validate_endpoint_slice),
    ("certificates.k8s.io", "CertificateSigningRequest"): (lambda name: [], _validate_csr),
    (_RBAC_GROUP, "Role"): (is_path_segment_name, _validate_role),
    (_RBAC_GROUP, "ClusterRole"): (is_path_segment_name, _validate_cluster_role),
    (_RBAC_GROUP, "RoleBinding"): (
        is_path_segment_name, lambda e, o, old: _validate_binding(e, o, old, cluster=False)),
    (_RBAC_GROUP, "ClusterRoleBinding"): (
        is_path_segment_name, lambda e, o, old: _validate_binding(e, o, old, cluster=True)),
}


def _group(obj: dict) -> str:
    av = obj.get("apiVersion") or ""
    return av.split("/", 1)[0] if "/" in av else ""


def _is_namespaced(group: str, kind: str) -> bool:
    from k8semu.api.resources import RESOURCES

    for r in RESOURCES:
        if r.group == group and r.kind == kind:
            return r.namespaced
    return True


def validate(obj: dict, old: dict | None = None) -> list[FieldError]:
    """Validate a defaulted object on create (``old`` None) or update (``old`` = stored object).

    Returns the upstream ``field.ErrorList`` as :class:`FieldError` objects, in
    upstream order; an empty list means valid. Covers ObjectMeta (name rules per
    kind, labels, annotations, finalizers, namespace presence: the registry is
    expected to fill ``metadata.namespace`` from the request before calling),
    plus the per-kind rules of pkg/apis/*/validation listed in the module
    docstring. Unknown kinds get the ObjectMeta checks only. The object must be
    well-typed JSON (maps where the schema has objects, lists where it has
    arrays): type mismatches are the decoder's 400, not validation's business,
    and may raise ``TypeError``/``AttributeError`` here.
    """
    group, kind = _group(obj), obj.get("kind") or ""
    name_fn, fn = _KINDS.get((group, kind), (is_dns1123_subdomain, None))
    errs: list[FieldError] = []
    _validate_meta(errs, obj, name_fn, _is_namespaced(group, kind))
    if old is not None:
        _validate_meta_update(errs, obj, old)
    if fn is not None:
        fn(errs, obj, old)
    return errs


def validate_or_raise(obj: dict, old: dict | None = None, *, request_namespace: str | None = None) -> None:
    """Raise the error kube-apiserver would return for ``obj``, or return None if valid.

    Raises:
        BadRequest: ``request_namespace`` is given and differs from
            ``metadata.namespace`` ("the namespace of the provided object does not
            match the namespace sent on the request"), or a quantity does not parse
            (upstream fails while decoding: ``Pod in version "v1" cannot be handled
            as a Pod: quantities must match the regular expression …``).
        Invalid: 422 with every :class:`FieldError` from :func:`validate`, named
            ``<Kind>.<group> "<name>"``.
    """
    meta = obj.get("metadata") or {}
    if request_namespace is not None and meta.get("namespace") and meta["namespace"] != request_namespace:
        raise BadRequest("the namespace of the provided object does not match the namespace sent on the request")
    errs = validate(obj, old)
    kind = obj.get("kind") or ""
    decode = [e for e in errs if isinstance(e, _DecodeError)]
    if decode:
        raise BadRequest(
            f'{kind} in version "{_version(obj)}" cannot be handled as a {kind}: {decode[0].detail}')
    if errs:
        raise Invalid(kind, _group(obj), meta.get("name") or "", errs)


def _version(obj: dict) -> str:
    av = obj.get("apiVersion") or ""
    return av.split("/", 1)[1] if "/" in av else av
