"""ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, GA in v1.30): defaulting, validation
and enforcement, as kube-apiserver's ``ValidatingAdmissionPolicy`` admission plugin.

* :func:`default_policy` / :func:`default_binding` — ``SetDefaults_*`` of
  k8s.io/api/admissionregistration/v1: ``failurePolicy: Fail``; a ``matchConstraints`` /
  ``matchResources`` gets ``matchPolicy: Equivalent`` and empty ``namespaceSelector`` /
  ``objectSelector``; every rule gets ``scope: "*"``.
* :func:`validate_policy` / :func:`validate_binding` — the main checks of upstream's
  ``ValidateValidatingAdmissionPolicy`` / ``…Binding`` (pkg/apis/admissionregistration/validation),
  including the CEL compilation of every expression: ``spec.validations[0].expression: Invalid
  value: "…": compilation failed: ERROR: <input>:1:…`` (the text :mod:`.celrules` builds for CRD
  rules).
* :class:`ValidatingAdmissionPolicyAdmission` — the validating admission plugin. For every binding
  (key order) whose policy exists and matches the request (``matchConstraints`` then the binding's
  ``matchResources``: namespace and object selectors, ``resourceRules`` / ``excludeResourceRules``
  by operation, group, version, ``resource/subresource``, scope and resource names), the
  ``matchConditions`` are evaluated, then each validation with ``object``, ``oldObject``,
  ``request``, ``namespaceObject``, ``variables`` and ``params`` — null without a ``paramKind``,
  else each object the binding's ``paramRef`` selects in turn (by ``name`` or ``selector``, in
  ``paramRef.namespace`` or the request's namespace; none found: admitted under
  ``parameterNotFoundAction: Allow``, else ``failed to configure binding: no params found for
  policy binding with `Deny` parameterNotFoundAction``, under ``failurePolicy: Fail``). A failed
  validation's message is the ``messageExpression`` result, else ``message``, else ``failed
  expression: EXPR``; an evaluation error is ``expression 'EXPR' resulted in error: ERR`` and
  counts as a failure under ``failurePolicy: Fail`` (ignored under ``Ignore``). The binding's
  ``validationActions`` decide: ``Deny`` refuses the request (422, reason ``Invalid`` unless the
  validation sets ``reason``: ``deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'p'
  with binding 'b' denied request: MESSAGE``), ``Warn`` adds the warning ``Validation failed for
  ValidatingAdmissionPolicy 'p' with binding 'b': MESSAGE``, ``Audit`` records nothing (no audit
  log here). Writes of the admission configuration kinds themselves are exempt, as upstream.

Not modelled: a binding without ``paramRef`` for a policy with ``paramKind`` runs with null
``params``; ``authorizer`` (an expression using it is not evaluated), ``auditAnnotations``
evaluation, ``status.typeChecking``, ``matchPolicy: Equivalent`` across versions (only the served
version matches), cost budgets. The wording of a failed ``matchCondition``'s error
(``failed to evaluate matchCondition 'NAME': …``) is k8semu's.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any

from . import errors
from .errors import FieldError, StatusError

if TYPE_CHECKING:
    from .apiserver import RequestContext
    from .resources import ResourceInfo

__all__ = ["default_policy", "default_binding", "validate_policy", "validate_binding",
           "ValidatingAdmissionPolicyAdmission", "PolicyDenied"]

GROUP = "admissionregistration.k8s.io"
POLICIES = f"/registry/validatingadmissionpolicies.{GROUP}/"
BINDINGS = f"/registry/validatingadmissionpolicybindings.{GROUP}/"

#: upstream's ``IsExemptAdmissionConfigurationResource``: never subject to policies
_EXEMPT = frozenset({"validatingwebhookconfigurations", "mutatingwebhookconfigurations",
                     "validatingadmissionpolicies", "validatingadmissionpolicybindings",
                     "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"})
_OPERATIONS = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"]
_SCOPES = ["*", "Cluster", "Namespaced"]
_REASONS = ["Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized"]
_REASON_CODES = {"Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413, "Invalid": 422}
_ACTIONS = ["Audit", "Deny", "Warn"]
_CEL_IDENT = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*$")
#: the variables an expression may name (``authorizer`` is declared, but not implemented)
_DECLARED = ("object", "oldObject", "request", "params", "namespaceObject", "variables", "authorizer")


# ---------------------------------------------------------------------------- defaulting
def _default_match(m: Any) -> None:
    if not isinstance(m, dict):
        return
    m.setdefault("namespaceSelector", {})
    if m.get("namespaceSelector") is None:
        m["namespaceSelector"] = {}
    if m.get("objectSelector") is None:
        m["objectSelector"] = {}
    if not m.get("matchPolicy"):
        m["matchPolicy"] = "Equivalent"
    for key in ("resourceRules", "excludeResourceRules"):
        for rule in m.get(key) or ():
            if isinstance(rule, dict) and rule.get("scope") is None:
                rule["scope"] = "*"


def default_policy(obj: dict[str, Any]) -> None:
    """``SetDefaults_ValidatingAdmissionPolicySpec`` and ``SetDefaults_MatchResources`` on a
    policy dict, in place: ``spec.failurePolicy: Fail``, and in ``spec.matchConstraints``
    ``matchPolicy: Equivalent``, ``namespaceSelector: {}``, ``objectSelector: {}``, each rule's
    ``scope: "*"``."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if not spec.get("failurePolicy"):
        spec["failurePolicy"] = "Fail"
    _default_match(spec.get("matchConstraints"))


def default_binding(obj: dict[str, Any]) -> None:
    """``SetDefaults_MatchResources`` on a binding's ``spec.matchResources`` (when set), in place."""
    spec = obj.get("spec")
    if isinstance(spec, dict):
        _default_match(spec.get("matchResources"))


# ---------------------------------------------------------------------------- compilation
def _checker_class() -> type:
    from .celrules import _DYN, _Checker

    class _PolicyChecker(_Checker):
        """celrules' checker with the admission variables declared (all ``dyn``)."""

        def _ident(self, token: Any) -> tuple[str, Any]:
            if token.value in _DECLARED and not any(token.value in s for s in self.scopes):
                if token.value == "authorizer":
                    self.unsupported.append("authorizer")
                return _DYN
            return super()._ident(token)

    return _PolicyChecker


class _Program:
    """One compiled expression: ``program`` (None when it could not compile), ``error`` (the
    ``compilation failed: …`` text), ``result`` (the checker's type), ``unsupported``."""

    __slots__ = ("program", "error", "result", "unsupported")

    def __init__(self) -> None:
        self.program: Any = None
        self.error = ""
        self.result = "dyn"
        self.unsupported: list[str] = []


@functools.lru_cache(maxsize=4096)
def compile_expression(text: str) -> _Program:
    """Compile a policy expression (cached by text). Never raises: ``error`` holds cel-go's
    ``compilation failed: ERROR: <input>:L:C: …`` text with the caret excerpt."""
    from .celrules import _celpy, _function_table, _issues_text, _parse, _syntax_issue, _uses_optional_syntax

    p = _Program()
    tree = _parse(text)
    if isinstance(tree, Exception):
        if _uses_optional_syntax(text):
            p.unsupported.append("optional syntax")
            return p
        p.error = "compilation failed: " + _issues_text(text, [_syntax_issue(text, tree)])
        return p
    checker = _checker_class()(text, ("dyn", None))
    result = checker.check(tree)
    p.unsupported = checker.unsupported
    if checker.issues:
        p.error = "compilation failed: " + _issues_text(text, checker.issues)
        return p
    p.result = result[0]
    p.program = _celpy().env.program(tree, functions=_function_table())
    return p


def _compile_errors(errs: list[FieldError], path: str, text: str, want: str) -> None:
    p = compile_expression(text)
    if p.error:
        errs.append(FieldError.invalid(path, text, p.error))
    elif want != "dyn" and p.result not in (want, "dyn"):
        errs.append(FieldError.invalid(path, text, f"must evaluate to {want}"))


# ---------------------------------------------------------------------------- validation
def _validate_rule(errs: list[FieldError], rule: Any, path: str, policy: bool) -> None:
    """Upstream ``validateNamedRuleWithOperations``: operations, apiGroups, apiVersions and
    resources required (``*`` alone), known operations and scope."""
    if not isinstance(rule, dict):
        return
    ops = _wildcard_list(errs, rule, path, "operations", "operations")
    for i, op in enumerate(ops):
        if op not in _OPERATIONS:
            errs.append(FieldError.not_supported(f"{path}.operations[{i}]", op, _OPERATIONS))
    _wildcard_list(errs, rule, path, "apiGroups", "API groups")
    versions = _wildcard_list(errs, rule, path, "apiVersions", "API versions")
    for i, v in enumerate(versions):
        if not v:
            errs.append(FieldError.required(f"{path}.apiVersions[{i}]", "version must not be empty"))
    if not rule.get("resources"):
        errs.append(FieldError.required(f"{path}.resources"))
    scope = rule.get("scope")
    if scope is not None and scope not in _SCOPES:
        errs.append(FieldError.not_supported(f"{path}.scope", scope, _SCOPES))


def _wildcard_list(errs: list[FieldError], rule: dict[str, Any], path: str, field: str, noun: str) -> list[Any]:
    """One of a rule's lists (``operations``, ``apiGroups``, ``apiVersions``): required, and ``*``
    only alone (``if '*' is present, must not specify other API groups``); returns it."""
    values = list(rule.get(field) or [])
    if not values:
        errs.append(FieldError.required(f"{path}.{field}"))
    elif "*" in values and len(values) > 1:
        errs.append(FieldError.invalid(f"{path}.{field}", values, f"if '*' is present, must not specify other {noun}"))
    return values


def _validate_match(errs: list[FieldError], m: Any, path: str, policy: bool) -> None:
    if not isinstance(m, dict):
        return
    mp = m.get("matchPolicy")
    if mp is not None and mp not in ("Equivalent", "Exact"):
        errs.append(FieldError.not_supported(f"{path}.matchPolicy", mp, ["Equivalent", "Exact"]))
    for key in ("namespaceSelector", "objectSelector"):
        sel = m.get(key)
        if isinstance(sel, dict):
            from .selectors import selector_from_label_selector

            try:
                selector_from_label_selector(sel)
            except ValueError as e:
                errs.append(FieldError.invalid(f"{path}.{key}", sel, str(e)))
    for key in ("resourceRules", "excludeResourceRules"):
        for i, rule in enumerate(m.get(key) or ()):
            _validate_rule(errs, rule, f"{path}.{key}[{i}]", policy)


def validate_policy(errs: list[FieldError], obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """Upstream ``ValidateValidatingAdmissionPolicy`` (and its update variant, the same spec
    checks): ``spec.failurePolicy`` Fail/Ignore, ``spec.paramKind`` apiVersion/kind required,
    ``spec.matchConstraints`` (and its ``resourceRules``) required, ``spec.validations or
    auditAnnotations must contain at least one item``, each validation's ``expression`` required
    and compiling, ``message`` without line breaks, ``reason`` one of upstream's four,
    ``messageExpression`` compiling to a string, ``matchConditions`` and ``variables`` named and
    compiling. Appends to ``errs`` in upstream's order."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    fp = spec.get("failurePolicy")
    if fp is not None and fp not in ("Fail", "Ignore"):
        errs.append(FieldError.not_supported("spec.failurePolicy", fp, ["Fail", "Ignore"]))
    pk = spec.get("paramKind")
    if isinstance(pk, dict):
        if not pk.get("apiVersion"):
            errs.append(FieldError.required("spec.paramKind.apiVersion"))
        if not pk.get("kind"):
            errs.append(FieldError.required("spec.paramKind.kind"))
    mc = spec.get("matchConstraints")
    if not isinstance(mc, dict):
        errs.append(FieldError.required("spec.matchConstraints"))
    else:
        _validate_match(errs, mc, "spec.matchConstraints", True)
        if not mc.get("resourceRules"):
            errs.append(FieldError.required("spec.matchConstraints.resourceRules"))
    validations = spec.get("validations") or []
    if not validations and not spec.get("auditAnnotations"):
        errs.append(FieldError.required("spec.validations",
                                        "validations or auditAnnotations must contain at least one item"))
    for i, cond in enumerate(spec.get("matchConditions") or ()):
        path = f"spec.matchConditions[{i}]"
        if not isinstance(cond, dict):
            continue
        if not cond.get("name"):
            errs.append(FieldError.required(f"{path}.name"))
        expr = cond.get("expression") or ""
        if not expr.strip():
            errs.append(FieldError.required(f"{path}.expression"))
        else:
            _compile_errors(errs, f"{path}.expression", expr, "bool")
    for i, var in enumerate(spec.get("variables") or ()):
        path = f"spec.variables[{i}]"
        if not isinstance(var, dict):
            continue
        name = var.get("name") or ""
        if not name:
            errs.append(FieldError.required(f"{path}.name", "name is not specified"))
        elif not _CEL_IDENT.match(name):
            errs.append(FieldError.invalid(f"{path}.name", name, "name is not a valid CEL identifier"))
        expr = var.get("expression") or ""
        if not expr.strip():
            errs.append(FieldError.required(f"{path}.expression", "expression is not specified"))
        else:
            _compile_errors(errs, f"{path}.expression", expr, "dyn")
    for i, v in enumerate(validations):
        path = f"spec.validations[{i}]"
        if not isinstance(v, dict):
            continue
        expr = v.get("expression") or ""
        if not expr.strip():
            errs.append(FieldError.required(f"{path}.expression", "expression is not specified"))
        else:
            _compile_errors(errs, f"{path}.expression", expr, "bool")
        msg = v.get("message")
        if isinstance(msg, str) and msg:
            if not msg.strip():
                errs.append(FieldError.invalid(f"{path}.message", msg, "message must be non-empty if specified"))
            elif "\n" in msg.strip():
                errs.append(FieldError.invalid(f"{path}.message", msg, "message must not contain line breaks"))
        reason = v.get("reason")
        if reason is not None and reason not in _REASONS:
            errs.append(FieldError.not_supported(f"{path}.reason", reason, _REASONS))
        mx = v.get("messageExpression")
        if isinstance(mx, str) and mx:
            if not mx.strip():
                errs.append(FieldError.required(f"{path}.messageExpression",
                                                "messageExpression must be non-empty if specified"))
            else:
                _compile_errors(errs, f"{path}.messageExpression", mx, "string")


def validate_binding(errs: list[FieldError], obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """Upstream ``ValidateValidatingAdmissionPolicyBinding``: ``spec.policyName`` required,
    ``spec.matchResources`` as a policy's match (rules optional), ``spec.validationActions``
    required (``at least one validation action is required``), each one of Audit/Deny/Warn, no
    duplicates, not both Deny and Warn."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    if not spec.get("policyName"):
        errs.append(FieldError.required("spec.policyName"))
    _validate_match(errs, spec.get("matchResources"), "spec.matchResources", False)
    ref = spec.get("paramRef")
    if isinstance(ref, dict):
        action = ref.get("parameterNotFoundAction")
        if action is None:
            errs.append(FieldError.required("spec.paramRef.parameterNotFoundAction"))
        elif action not in ("Allow", "Deny"):
            errs.append(FieldError.not_supported("spec.paramRef.parameterNotFoundAction", action, ["Allow", "Deny"]))
    actions = list(spec.get("validationActions") or [])
    if not actions:
        errs.append(FieldError.required("spec.validationActions", "at least one validation action is required"))
    seen: set[str] = set()
    for i, a in enumerate(actions):
        if a in seen:
            errs.append(FieldError.duplicate(f"spec.validationActions[{i}]", a))
        elif a not in _ACTIONS:
            errs.append(FieldError.not_supported(f"spec.validationActions[{i}]", a, _ACTIONS))
        seen.add(a)
    if "Deny" in seen and "Warn" in seen:
        errs.append(FieldError.invalid(
            "spec.validationActions", actions,
            "must not contain both Deny and Warn (repeating the same validation failure information in the API "
            "response and headers serves no purpose)"))


# ---------------------------------------------------------------------------- matching
def _rule_matches(rule: dict[str, Any], op: str, info: "ResourceInfo", subresource: str, name: str,
                  namespaced: bool) -> bool:
    """Upstream's ``Matcher`` of one ``NamedRuleWithOperations``."""
    ops = rule.get("operations") or []
    if "*" not in ops and op not in ops:
        return False
    groups = rule.get("apiGroups") or []
    if "*" not in groups and info.group not in groups:
        return False
    versions = rule.get("apiVersions") or []
    if "*" not in versions and info.version not in versions:
        return False
    scope = rule.get("scope") or "*"
    if scope == "Cluster" and namespaced or scope == "Namespaced" and not namespaced:
        return False
    names = rule.get("resourceNames") or []
    if names and name not in names:
        return False
    # ``res[/sub]``: ``*`` matches any resource, ``/*`` any subresource or none, a bare resource
    # only requests without a subresource (``deployments`` does not see ``deployments/scale``)
    for r in rule.get("resources") or []:
        res, _, sub = r.partition("/")
        if res in ("*", info.plural) and sub in ("*", subresource):
            return True
    return False


def _labels(obj: Any) -> dict[str, str]:
    return ((obj or {}).get("metadata") or {}).get("labels") or {} if isinstance(obj, dict) else {}


def _selector_matches(sel: Any, labels: dict[str, str]) -> bool:
    from .selectors import selector_from_label_selector

    try:
        return selector_from_label_selector(sel, nil_selects_everything=True).matches(labels)
    except ValueError:
        return False


class _Request:
    """What one admission request is, as the matchers and the ``request`` variable see it."""

    def __init__(self, op: str, info: "ResourceInfo", subresource: str, obj: dict | None, old: dict | None,
                 ctx: "RequestContext", namespace_obj: dict | None) -> None:
        self.op, self.info, self.subresource = op, info, subresource
        self.obj, self.old, self.ctx, self.namespace_obj = obj, old, ctx, namespace_obj
        meta = (obj or old or {}).get("metadata") or {}
        self.name = meta.get("name") or ""
        self.namespace = (meta.get("namespace") or "") if info.namespaced else ""


def _matches(m: dict[str, Any] | None, req: _Request, server: Any) -> bool:
    """Upstream ``matching.Matcher.Matches``: namespace selector, object selector, exclusions,
    then the resource rules (none: everything)."""
    if m is None:
        return True
    sel = m.get("namespaceSelector")
    if sel:
        if req.info.plural == "namespaces" and not req.info.group:
            if not _selector_matches(sel, _labels(req.obj if req.obj is not None else req.old)):
                return False
        elif req.namespace:
            if not _selector_matches(sel, _labels(req.namespace_obj)):
                return False
    sel = m.get("objectSelector")
    if sel and not (_selector_matches(sel, _labels(req.obj)) or _selector_matches(sel, _labels(req.old))):
        return False
    args = (req.op, req.info, req.subresource, req.name, req.info.namespaced)
    if any(_rule_matches(r, *args) for r in m.get("excludeResourceRules") or () if isinstance(r, dict)):
        return False
    rules = m.get("resourceRules") or []
    return not rules or any(_rule_matches(r, *args) for r in rules if isinstance(r, dict))


# ---------------------------------------------------------------------------- evaluation
class PolicyDenied(StatusError):
    """A request a policy's ``Deny`` binding refused: upstream builds ``admission.NewForbidden``'s
    message, then sets reason (the validation's ``reason``, ``Invalid`` by default) and the code
    that goes with it, and adds the message as a cause."""

    def __init__(self, message: str, reason: str, details: dict[str, Any]) -> None:
        super().__init__(message, details=details)
        self.reason = reason
        self.code = _REASON_CODES.get(reason, 422)


class _EvalError(Exception):
    pass


class _ConfigError(Exception):
    """A binding that cannot be evaluated (its params): upstream's ``failed to configure …``."""


def _evaluate(text: str, activation: dict[str, Any]) -> Any:
    """Run one expression; raises :class:`_EvalError` with cel-go's words on an error."""
    from .celrules import _runtime_text

    p = compile_expression(text)
    if p.program is None:
        raise _EvalError(p.error or "expression could not be compiled")
    g = _cel()
    try:
        out = p.program.evaluate(activation)
    except Exception as e:
        raise _EvalError(_runtime_text(e)) from None
    if isinstance(out, g.CELEvalError):
        raise _EvalError(_runtime_text(out))
    return out


def _cel() -> Any:
    from .celrules import _celpy

    return _celpy()


def _to_cel(v: Any) -> Any:
    from celpy.adapter import json_to_cel

    return None if v is None else json_to_cel(v)


def _request_value(req: _Request) -> dict[str, Any]:
    """The ``request`` variable: upstream's ``AdmissionRequest`` fields."""
    info = req.info
    if req.subresource == "scale":
        kind = {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    else:
        kind = {"group": info.group, "version": info.version, "kind": info.kind}
    resource = {"group": info.group, "version": info.version, "resource": info.plural}
    user = req.ctx.user
    user_info: dict[str, Any] = {"username": user.name}
    if getattr(user, "groups", None):
        user_info["groups"] = list(user.groups)
    out: dict[str, Any] = {"kind": kind, "resource": resource, "requestKind": kind, "requestResource": resource,
                           "name": req.name, "namespace": req.namespace,
                           "operation": req.op, "userInfo": user_info, "dryRun": False}
    if req.subresource:
        out["subResource"] = out["requestSubResource"] = req.subresource
    return out


class ValidatingAdmissionPolicyAdmission:
    """The ``ValidatingAdmissionPolicy`` validating admission plugin (see the module docstring).

    ``validate(op, info, obj, old, ctx, subresource="")``: ``op`` is ``create``, ``update`` or
    ``delete``; on delete ``obj`` is ignored (``object`` is null, ``oldObject`` the stored
    object); on a ``scale`` update both are shown as their autoscaling/v1 ``Scale``.

    Raises:
        PolicyDenied: the first failure of a ``Deny`` binding, in binding name order, once every
            binding has run (so ``Warn`` bindings still add their warnings).
    """

    name = "ValidatingAdmissionPolicy"
    takes_subresource = True

    def __init__(self, server: Any) -> None:
        self.server = server

    def admit(self, op, info, obj, old, ctx):
        return obj

    def validate(self, op, info, obj, old, ctx, subresource: str = "") -> None:
        if info.group == GROUP and info.plural in _EXEMPT:
            return
        log = self.server.log
        bindings = [r.object for r in log.range(BINDINGS)]
        if not bindings:
            return
        operation = op.upper()
        if operation == "DELETE":
            obj = None
        if subresource == "scale":
            from .apiserver import _scale_of

            obj = _scale_of(obj) if obj is not None else None
            old = _scale_of(old) if old is not None else None
        if operation == "CREATE":
            old = None
        meta = (obj or old or {}).get("metadata") or {}
        ns_obj = None
        if info.namespaced and meta.get("namespace"):
            rec = log.get(f"/registry/namespaces/{meta['namespace']}")
            ns_obj = rec.object if rec is not None else None
        req = _Request(operation, info, subresource, obj, old, ctx, ns_obj)
        denials: list[PolicyDenied] = []
        for binding in bindings:
            spec = binding.get("spec") or {}
            rec = log.get(POLICIES + str(spec.get("policyName") or ""))
            if rec is None:
                continue
            policy = rec.object
            pspec = policy.get("spec") or {}
            if not _matches(pspec.get("matchConstraints"), req, self.server):
                continue
            if not _matches(spec.get("matchResources"), req, self.server):
                continue
            try:
                params = self._params(pspec.get("paramKind"), spec.get("paramRef"), req)
            except _ConfigError as e:
                if (pspec.get("failurePolicy") or "Fail") != "Ignore":
                    denials.append(_denial(policy["metadata"]["name"], binding["metadata"]["name"], req, str(e),
                                           "Invalid"))
                continue
            for param in params:
                self._run(policy, binding, req, ctx, param, denials)
        if denials:  # every binding ran (its warnings are in); the first denial is the answer
            raise denials[0]

    def _params(self, param_kind: Any, ref: Any, req: _Request) -> list[dict | None]:
        """The parameter objects one binding evaluates its policy with (upstream's
        ``collectParams``): ``[None]`` without a ``paramKind`` (or without a ``paramRef``); the named
        object, or every object the selector matches (key order), in ``paramRef.namespace`` or, for
        a namespaced kind without one, the request's namespace; none found: ``[]`` with
        ``parameterNotFoundAction: Allow``, else a configuration error."""
        if not isinstance(param_kind, dict) or not isinstance(ref, dict):
            return [None]
        from .resources import NoKindMatch, by_kind

        api_version, kind = param_kind.get("apiVersion") or "", param_kind.get("kind") or ""
        try:
            info = by_kind(api_version, kind)
        except NoKindMatch:
            info = self.server.custom.by_kind(api_version, kind)
        if info is None:
            raise _ConfigError(f"failed to configure policy: failed to find resource referenced by paramKind: "
                               f"'{api_version}/{kind}'")
        ns = None
        if info.namespaced:
            ns = ref.get("namespace") or req.namespace
            if not ns:
                raise _ConfigError("failed to configure binding: cannot use namespaced paramRef in policy "
                                   "binding that matches cluster-scoped resources")
        log = self.server.log
        if ref.get("name"):
            rec = log.get(info.key(ns, ref["name"]))
            found = [rec.object] if rec is not None else []
        else:
            found = [r.object for r in log.range(info.prefix(ns))
                     if _selector_matches(ref.get("selector") or {}, _labels(r.object))]
        if not found and ref.get("parameterNotFoundAction") != "Allow":
            raise _ConfigError("failed to configure binding: no params found for policy binding with `Deny` "
                               "parameterNotFoundAction")
        return found

    def _run(self, policy: dict, binding: dict, req: _Request, ctx: "RequestContext", param: dict | None,
             denials: list[PolicyDenied]) -> None:
        pspec = policy.get("spec") or {}
        fail = (pspec.get("failurePolicy") or "Fail") != "Ignore"
        pname = policy["metadata"]["name"]
        bname = binding["metadata"]["name"]
        actions = list((binding.get("spec") or {}).get("validationActions") or [])
        g = _cel()
        activation: dict[str, Any] = {
            "object": _to_cel(req.obj), "oldObject": _to_cel(req.old), "request": _to_cel(_request_value(req)),
            "namespaceObject": _to_cel(req.namespace_obj), "params": _to_cel(param),
        }
        variables = g.ct.MapType()
        for var in pspec.get("variables") or ():
            try:
                value = _evaluate(var.get("expression") or "", {**activation, "variables": variables})
            except _EvalError as e:
                value = g.CELEvalError(str(e), _EvalError, (str(e),))
            dict.__setitem__(variables, g.ct.StringType(var.get("name") or ""), value)
        activation["variables"] = variables
        for cond in pspec.get("matchConditions") or ():
            try:
                result = _evaluate(cond.get("expression") or "", activation)
            except _EvalError as e:
                if fail:
                    self._decide(pname, bname, actions, req, f"failed to evaluate matchCondition "
                                 f"'{cond.get('name')}': {e}", "Invalid", ctx, denials)
                return
            if not (isinstance(result, g.ct.BoolType) and bool(result)):
                return
        for v in pspec.get("validations") or ():
            expr = (v.get("expression") or "").strip()
            if compile_expression(v.get("expression") or "").unsupported:
                continue
            try:
                result = _evaluate(v.get("expression") or "", activation)
            except _EvalError as e:
                if fail:
                    self._decide(pname, bname, actions, req, f"expression '{expr}' resulted in error: {e}",
                                 "Invalid", ctx, denials)
                continue
            if isinstance(result, g.ct.BoolType) and bool(result):
                continue
            message = ""
            mx = v.get("messageExpression") or ""
            if mx.strip():
                try:
                    m = _evaluate(mx, activation)
                    if isinstance(m, str) and m.strip() and "\n" not in m.strip():
                        message = m.strip()
                except _EvalError:
                    pass
            if not message:
                msg = (v.get("message") or "").strip()
                message = msg if msg else f"failed expression: {expr}"
            self._decide(pname, bname, actions, req, message, v.get("reason") or "Invalid", ctx, denials)

    @staticmethod
    def _decide(pname: str, bname: str, actions: list[str], req: _Request, message: str, reason: str,
                ctx: "RequestContext", denials: list[PolicyDenied]) -> None:
        if "Warn" in actions and ctx.warnings is not None:
            ctx.warnings.append(
                f"Validation failed for ValidatingAdmissionPolicy '{pname}' with binding '{bname}': {message}")
        if "Deny" in actions:
            denials.append(_denial(pname, bname, req, message, reason))


def _denial(pname: str, bname: str, req: _Request, message: str, reason: str) -> PolicyDenied:
    """Upstream's refusal: ``admission.NewForbidden``'s message, the validation's reason (and its
    code), the message again as the one cause."""
    text = f"ValidatingAdmissionPolicy '{pname}' with binding '{bname}' denied request: {message}"
    forbidden = errors.Forbidden.for_resource(req.info.plural, req.info.group, req.name, text)
    details = dict(forbidden.details or {})
    details["causes"] = [{"message": text}]
    return PolicyDenied(forbidden.message, reason, details)
