"""The review APIs: ``authorization.k8s.io/v1`` access reviews and ``authentication.k8s.io/v1``
``SelfSubjectReview``, as kube-apiserver serves them.

``kubectl auth can-i VERB RESOURCE`` creates a ``SelfSubjectAccessReview`` and
prints ``yes`` or ``no`` from its status; ``kubectl auth can-i --list`` creates a
``SelfSubjectRulesReview``; webhooks and controllers ask about other users with
a ``SubjectAccessReview`` (cluster-wide) or ``LocalSubjectAccessReview`` (in one
namespace); ``kubectl auth whoami`` creates a ``SelfSubjectReview``. None of them
is stored: the answer is the request with its ``status`` filled, ``201 Created``.

Served, as upstream's ``pkg/registry/authorization`` and ``authentication``:

- discovery (:mod:`.discovery`): both groups in ``/apis`` (legacy and aggregated),
  ``/apis/<group>`` and their ``APIResourceList`` (verb ``create`` only);
- the decision is the API server's own RBAC authorizer's
  (:meth:`~k8semu.api.rbac.RBACAuthorizer.decide`): ``status.allowed`` and, when
  a binding allowed it, ``status.reason`` (``RBAC: allowed by ClusterRoleBinding
  "…" of ClusterRole "…" to User "…"``); members of ``system:masters`` are allowed
  everything with no reason;
- a ``SubjectAccessReview`` names the user in ``spec.user`` / ``spec.groups``
  (``spec.user`` or ``spec.groups`` is required); a ``LocalSubjectAccessReview``'s
  ``spec.resourceAttributes.namespace`` must be the request's namespace;
- a ``SelfSubjectRulesReview`` lists the rules of every binding that applies in
  ``spec.namespace`` (required);
- a ``SelfSubjectReview``'s ``status.userInfo`` is the requester (after
  impersonation): ``username``, ``uid``, ``groups``;
- creating a review is itself authorized (``create`` on the review resource;
  every authenticated user may create the ``Self`` ones, through
  ``system:basic-user``); other verbs are 405.
"""

from __future__ import annotations

from typing import Any

from ..api import errors
from ..api.auth import SYSTEM_MASTERS, Attributes, UserInfo
from ..api.resources import ResourceInfo

__all__ = ["GROUP", "AUTHN_GROUP", "VERSION", "RESOURCES", "AUTHN_RESOURCES", "handle"]

GROUP = "authorization.k8s.io"
AUTHN_GROUP = "authentication.k8s.io"
VERSION = "v1"
_CREATE = ("create",)
SSAR = ResourceInfo(GROUP, VERSION, "SelfSubjectAccessReview", "selfsubjectaccessreviews", False, verbs=_CREATE)
SAR = ResourceInfo(GROUP, VERSION, "SubjectAccessReview", "subjectaccessreviews", False, verbs=_CREATE)
LSAR = ResourceInfo(GROUP, VERSION, "LocalSubjectAccessReview", "localsubjectaccessreviews", True, verbs=_CREATE)
SSRR = ResourceInfo(GROUP, VERSION, "SelfSubjectRulesReview", "selfsubjectrulesreviews", False, verbs=_CREATE)
#: The group's resources, in upstream's discovery order.
RESOURCES = (LSAR, SSAR, SSRR, SAR)
SSR = ResourceInfo(AUTHN_GROUP, VERSION, "SelfSubjectReview", "selfsubjectreviews", False, verbs=_CREATE)
#: ``authentication.k8s.io/v1``'s resources served here (not TokenReview).
AUTHN_RESOURCES = (SSR,)


def handle(api: Any, ctx: Any, method: str, group: str, version: str, rest: list[str],
           body: Any) -> dict[str, Any]:
    """The answer to a request under ``/apis/<group>/<version>/`` (``rest`` is the path after it)
    for :data:`GROUP` or :data:`AUTHN_GROUP`.

    Returns:
        the review with its ``status`` (sent as ``201 Created``).
    Raises:
        NotFound: an unknown version or path. MethodNotAllowed: any verb but POST.
        BadRequest: a body that is not a review of the path's kind, or an invalid spec.
        Forbidden: RBAC on creating the review.
    """
    ns = None
    if len(rest) == 3 and rest[0] == "namespaces" and rest[2] == LSAR.plural:
        ns, rest = rest[1], rest[2:]
    served = RESOURCES if group == GROUP else AUTHN_RESOURCES
    info = next((r for r in served if [r.plural] == rest and r.namespaced == (ns is not None)), None)
    if version != VERSION or info is None:
        e = errors.NotFound("the server could not find the requested resource")
        e.details = {}
        raise e
    if method != "POST":
        raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")
    api._authz(ctx, "create", info, ns)
    if not isinstance(body, dict) or body.get("kind", info.kind) != info.kind:
        raise errors.BadRequest("the body of the request was in an unknown format")
    spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
    if info is SSR:
        user = ctx.user
        return {"kind": info.kind, "apiVersion": f"{AUTHN_GROUP}/{VERSION}",
                "metadata": {**(body.get("metadata") or {}), "creationTimestamp": None},
                "status": {"userInfo": {"username": user.name, **({"uid": user.uid} if user.uid else {}),
                                        "groups": list(user.groups),
                                        **({"extra": {k: list(v) for k, v in sorted(user.extra.items())}}
                                           if user.extra else {})}}}
    if info is SSRR:
        status = _rules_review(api, ctx.user, spec)
    else:
        user = ctx.user if info is SSAR else _subject(info, spec)
        status = _access_review(api, info, user, spec, ns)
    return {"kind": info.kind, "apiVersion": f"{GROUP}/{VERSION}",
            "metadata": {**(body.get("metadata") or {}), "creationTimestamp": None},
            "spec": spec, "status": status}


def _invalid(info: ResourceInfo, cause: errors.FieldError) -> errors.Invalid:
    return errors.Invalid(info.kind, GROUP, "", [cause])


def _subject(info: ResourceInfo, spec: dict[str, Any]) -> UserInfo:
    user, groups = spec.get("user") or "", tuple(spec.get("groups") or ())
    if not user and not groups:
        raise _invalid(info, errors.FieldError.invalid("spec.user", "", "at least one of user or group must be specified"))
    return UserInfo(user, groups, str(spec.get("uid") or ""))


def _access_review(api: Any, info: ResourceInfo, user: UserInfo, spec: dict[str, Any],
                   ns: str | None) -> dict[str, Any]:
    res, non = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if bool(res) == bool(non):
        raise _invalid(info, errors.FieldError.invalid(
            "spec.resourceAttributes", None, "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
    if res:
        if ns is not None:
            if res.get("namespace") and res["namespace"] != ns:
                raise errors.BadRequest(f"spec.resourceAttributes.namespace must match namespace: {ns}")
            res = {**res, "namespace": ns}
            spec["resourceAttributes"] = res
        attrs = Attributes(user=user, verb=str(res.get("verb") or ""), api_group=str(res.get("group") or ""),
                           resource=str(res.get("resource") or ""), subresource=str(res.get("subresource") or ""),
                           namespace=str(res.get("namespace") or ""), name=str(res.get("name") or ""))
    else:
        attrs = Attributes(user=user, verb=str(non.get("verb") or ""), path=str(non.get("path") or ""))
    authorizer = api._authorizer
    if authorizer is None or SYSTEM_MASTERS in user.groups:
        return {"allowed": True}
    allowed, reason, _rule = authorizer.decide(attrs)
    return {"allowed": allowed, **({"reason": reason} if reason else {})}


def _rules_review(api: Any, user: UserInfo, spec: dict[str, Any]) -> dict[str, Any]:
    ns = spec.get("namespace")
    if not ns:
        raise _invalid(SSRR, errors.FieldError.required("spec.namespace", "no namespace on request"))
    authorizer = api._authorizer
    if authorizer is None:
        return {"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}], "incomplete": False}
    rules, errs = authorizer.rules_for(user, ns)
    resource_rules, non_resource_rules = [], []
    for r in rules:
        if r.get("nonResourceURLs"):
            non_resource_rules.append({"verbs": list(r.get("verbs") or ()),
                                       "nonResourceURLs": list(r["nonResourceURLs"])})
        else:
            out = {"verbs": list(r.get("verbs") or ())}
            for k in ("apiGroups", "resources", "resourceNames"):
                if r.get(k):
                    out[k] = list(r[k])
            resource_rules.append(out)
    status: dict[str, Any] = {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules,
                              "incomplete": False}
    if errs:
        status["evaluationError"] = "; ".join(errs)
    return status
