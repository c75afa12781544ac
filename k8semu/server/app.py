"""The kube-apiserver's HTTP front: a plain ASGI app over :class:`~k8semu.api.apiserver.APIServer`.

One :class:`APIApp` serves one cluster. A request goes through:

1. **authentication** — ``Authorization: Bearer <token>`` looked up in the
   token table (the admin token plus a ``--token-auth-file``); an unknown token
   is a 401 ``Unauthorized`` Status; no header is ``system:anonymous``;
2. **routing** — non-resource paths (``/version``, ``/healthz``, ``/livez``,
   ``/readyz``, discovery, ``/openapi/v3``) and resource paths
   ``/api/v1/...`` / ``/apis/<group>/<version>/...`` with an optional
   ``namespaces/<ns>/`` segment, a name and a subresource;
3. **the verb** on the API server (RBAC applies there, through the request's
   :class:`~k8semu.api.apiserver.RequestContext`), with query parameters and
   ``DeleteOptions`` bodies decoded as kube-apiserver does (booleans as
   ``true``/``True``, unknown parameters ignored);
4. **the response** — JSON; a ``meta.k8s.io/v1`` Table when the ``Accept``
   header asks for ``as=Table``; errors as ``Status`` with HTTP code ``code``.

Streams (watch, ``log?follow=true``) are chunked responses, one JSON line per
watch event, flushed per event; each ends at ``timeoutSeconds`` (wall seconds,
converted to virtual ones with the clock's speed), when the server stops, or
as soon as the client disconnects (a task waits for ``http.disconnect``).

Times: the cluster clock runs at ``speed`` virtual seconds per wall second;
everything the client sees (ages, timestamps) is virtual, timeouts the client
gives are wall-clock.
"""

from __future__ import annotations

import sys
import traceback
from collections import OrderedDict
from datetime import timedelta
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qs, unquote

import attrs
import orjson
import trio

from ..api import errors
from ..api.apiserver import APPLY_PATCH, JSON_PATCH, PATCH_TYPES, RequestContext, WatchEvent
from ..api.auth import SYSTEM_MASTERS, UserInfo, anonymous, user
from ..api import tokens as sa_tokens
from ..api.resources import OBJECT_SUBRESOURCES, ResourceInfo, by_resource
from . import discovery, metrics, openapi, prom, protobuf, reviews
from .watchcache import SharedWatch

__all__ = ["APIApp", "VERSION_INFO"]

#: What ``GET /version`` reports (kubectl's dispatcher picks ``kubectl.1.33`` by ``minor``).
VERSION_INFO = {
    "major": "1",
    "minor": "33",
    "emulationMajor": "1",
    "emulationMinor": "33",
    "minCompatibilityMajor": "1",
    "minCompatibilityMinor": "32",
    "gitVersion": "v1.33.1",
    "gitCommit": "8adc0f041b8e7ad1d30e29cc59c6ae7a15e19828",
    "gitTreeState": "clean",
    "buildDate": "2025-05-15T08:19:08Z",
    "goVersion": "go1.24.2",
    "compiler": "gc",
    "platform": "linux/amd64",
}

_PUBLIC_PATHS = ("/version", "/healthz", "/livez", "/readyz")
#: kube-apiserver v1.33's health checks (a kubeadm/kind control plane: etcd, RBAC, the
#: aggregator), in the order ``/readyz?verbose`` lists them; ``/healthz`` and ``/livez`` list
#: the same but the readyz-only ones (:data:`_READYZ_ONLY`).
_HEALTH_CHECKS = (
    "ping", "log", "etcd", "etcd-readiness", "informer-sync",
    "poststarthook/start-apiserver-admission-initializer",
    "poststarthook/generic-apiserver-start-informers",
    "poststarthook/priority-and-fairness-config-consumer",
    "poststarthook/priority-and-fairness-filter",
    "poststarthook/storage-object-count-tracker-hook",
    "poststarthook/start-apiextensions-informers",
    "poststarthook/start-apiextensions-controllers",
    "poststarthook/crd-informer-synced",
    "poststarthook/start-system-namespaces-controller",
    "poststarthook/start-cluster-authentication-info-controller",
    "poststarthook/start-kube-apiserver-identity-lease-controller",
    "poststarthook/start-kube-apiserver-identity-lease-garbage-collector",
    "poststarthook/start-legacy-token-tracking-controller",
    "poststarthook/start-service-ip-repair-controllers",
    "poststarthook/rbac/bootstrap-roles",
    "poststarthook/scheduling/bootstrap-system-priority-classes",
    "poststarthook/priority-and-fairness-config-producer",
    "poststarthook/bootstrap-controller",
    "poststarthook/start-kubernetes-service-cidr-controller",
    "poststarthook/aggregator-reload-proxy-client-cert",
    "poststarthook/start-kube-aggregator-informers",
    "poststarthook/apiservice-status-local-available-controller",
    "poststarthook/apiservice-status-remote-available-controller",
    "poststarthook/apiservice-registration-controller",
    "poststarthook/apiservice-discovery-controller",
    "poststarthook/kube-apiserver-autoregistration",
    "autoregister-completion",
    "poststarthook/apiservice-openapi-controller",
    "poststarthook/apiservice-openapiv3-controller",
    "shutdown",
)
_READYZ_ONLY = frozenset({"etcd-readiness", "informer-sync", "shutdown"})
_HEALTH_ENDPOINTS = ("healthz", "livez", "readyz")
_DEFAULT_WATCH_TIMEOUT = 1800.0  # wall seconds (kube-apiserver's --min-request-timeout)
_WATCH_BUFFER = 1024  # encoded events a watch holds for its client before its reader waits
_WATCH_FLUSH = 0.1  # wall seconds a watch stream waits after a write before the next one
_ENCODED_EVENTS = 4096  # watch events kept encoded for the other watches that send them
_LOG_POLL = 0.25  # wall seconds between looks for new lines of a followed log

Send = Callable[[dict[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]


#: What impersonation is authorized against (``impersonate`` on these, by name).
_IMPERSONATED = {
    "users": ResourceInfo("", "v1", "User", "users", False),
    "groups": ResourceInfo("", "v1", "Group", "groups", False),
    "uids": ResourceInfo("authentication.k8s.io", "v1", "UID", "uids", False),
    "serviceaccounts": ResourceInfo("", "v1", "ServiceAccount", "serviceaccounts", True),
}


#: kube-apiserver's default ``--max-request-bytes`` (3 MiB): a longer request body is refused
#: with 413 before it is decoded
MAX_REQUEST_BYTES = 3 * 1024 * 1024


class _Request:
    """The parsed parts of one ASGI HTTP request."""

    def __init__(self, scope: dict[str, Any]) -> None:
        self.method: str = scope["method"]
        self.path: str = unquote(scope["path"])
        self.query: dict[str, str] = {
            k: v[0] for k, v in parse_qs(scope.get("query_string", b"").decode("latin-1"),
                                         keep_blank_values=True).items()
        }
        self.raw_query: str = scope.get("query_string", b"").decode("latin-1")
        #: the connection's verified client certificate: (user, groups), or None
        self.client_cert: tuple[str, tuple[str, ...]] | None = scope.get("client_cert")
        self.headers: dict[str, str] = {}
        self.impersonate_groups: list[str] = []  # Impersonate-Group may repeat
        for k, v in scope.get("headers") or ():
            name = k.decode("latin-1").lower()
            self.headers[name] = v.decode("latin-1")
            if name == "impersonate-group":
                self.impersonate_groups.append(v.decode("latin-1"))
        self.body = b""

    def flag(self, name: str) -> bool:
        return self.query.get(name, "").lower() in ("true", "1")

    def int_param(self, name: str) -> int | None:
        v = self.query.get(name)
        if v in (None, ""):
            return None
        try:
            return int(v)
        except ValueError:
            raise errors.BadRequest(f'{name}: Invalid value: "{v}": must be an integer') from None

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "application/json").split(";")[0].strip().lower()

    @property
    def wants_table(self) -> bool:
        accept = self.headers.get("accept", "")
        return any("as=Table" in part and "g=meta.k8s.io" in part for part in accept.split(","))

    def json_body(self) -> Any:
        if not self.body.strip():
            return None
        try:
            return orjson.loads(self.body)
        except orjson.JSONDecodeError:
            if self.content_type == APPLY_PATCH or "yaml" in self.content_type:
                from ruamel.yaml import YAML

                try:
                    return _plain(YAML(typ="safe").load(self.body.decode()))
                except Exception:
                    pass
            raise errors.BadRequest("the body of the request was in an unknown format") from None


def _plain(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


def _not_found() -> errors.StatusError:
    e = errors.NotFound("the server could not find the requested resource")
    e.details = {}
    return e


class APIApp:
    """ASGI application serving one cluster's API server.

    Args:
        api: the :class:`~k8semu.api.apiserver.APIServer`.
        tokens: bearer token -> user (the admin token maps to ``kubernetes-admin``
            in ``system:masters``).
        speed: virtual seconds per wall second (for wall-clock timeouts).
        server_address: ``host:port`` reported in ``/api``.
    """

    def __init__(self, api: Any, tokens: dict[str, UserInfo], *, speed: float = 1.0,
                 server_address: str = "127.0.0.1:6443", unauthenticated: UserInfo | None = None) -> None:
        self.api = api
        self.tokens = dict(tokens)
        # plain-HTTP serving on loopback: kubectl sends no token over http://, so requests
        # without one act as this user, as kube-apiserver's old insecure port did (no authn/authz)
        self.unauthenticated = unauthenticated
        self.speed = speed
        self.server_address = server_address
        self.shutting_down = trio.Event()
        #: ``apiserver_request_total`` for ``/metrics`` (:mod:`.prom`).
        self.requests = prom.RequestCounter()
        self._encoded: OrderedDict[tuple[int, str], bytes] = OrderedDict()  # see _event_bytes
        #: where shared watches run (see .watchcache); without one, every watch is its own
        self.background: trio.Nursery | None = None
        self._shared: dict[tuple[Any, ...], SharedWatch] = {}

    # ------------------------------------------------------------------ ASGI entry
    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    self.shutting_down.set()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] == "websocket":
            return await self._websocket(scope, receive, send)
        if scope["type"] != "http":
            return
        req = _Request(scope)
        more = True
        chunks = []
        while more:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return
            chunks.append(msg.get("body", b""))
            more = msg.get("more_body", False)
        req.body = b"".join(chunks)
        if len(req.body) > MAX_REQUEST_BYTES:
            err = errors.RequestEntityTooLarge(MAX_REQUEST_BYTES)
            return await _send_json(send, err.code, err.status())
        status = [0]

        async def counted(msg: dict[str, Any]) -> None:
            if msg.get("type") == "http.response.start":
                status[0] = msg.get("status", 0)
            await send(msg)

        try:
            await self._handle(req, receive, counted)
        except errors.StatusError as e:
            await _send_json(counted, e.code, e.status())
        except Exception as e:  # a bug: report it as kube-apiserver does an internal error
            traceback.print_exc(file=sys.stderr)
            err = errors.InternalError(f"an error on the server ({type(e).__name__}: {e}) has prevented the request from succeeding")
            await _send_json(counted, 500, err.status())
        finally:
            if status[0]:
                self.requests.observe(req.method, req.path, req.query, req.content_type, status[0])

    # ------------------------------------------------------------------ auth
    def authenticate(self, req: _Request) -> UserInfo:
        """The request's user: its verified client certificate's (common name, organizations as
        groups), else its bearer token's, else ``system:anonymous`` (with ``--insecure-http``, the
        admin, as the old insecure port).

        A token not in the table may be a service account token (a TokenRequest's, a legacy
        token Secret's, a pod's mounted one), checked by :func:`k8semu.api.tokens.authenticate`
        (signature, expiry on the virtual clock, the account and bound objects still there).

        Raises:
            Unauthorized: a token (or another scheme) that is not known.
        """
        if req.client_cert is not None:  # x509 comes first in kube-apiserver's authenticator chain
            name, groups = req.client_cert
            return user(name, *groups)
        auth = req.headers.get("authorization")
        if not auth:
            return self.unauthenticated or anonymous()
        scheme, _, token = auth.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise errors.Unauthorized()
        if token in self.tokens:
            return self.tokens[token]
        who = sa_tokens.authenticate(self.api, token)
        if who is None:
            raise errors.Unauthorized()
        return who

    def impersonate(self, who: UserInfo, req: _Request) -> UserInfo:
        """The user a request acts as: ``who``, or the one its ``Impersonate-User`` /
        ``Impersonate-Group`` / ``Impersonate-Uid`` headers name (``kubectl --as`` /
        ``--as-group`` / ``--as-uid``), as kube-apiserver's impersonation filter: ``who``
        needs the ``impersonate`` verb on ``users`` (``serviceaccounts`` in the account's
        namespace for ``system:serviceaccount:NS:NAME``), ``groups`` and ``uids`` by name;
        the impersonated user is also in ``system:authenticated`` (and a service account in
        ``system:serviceaccounts`` and ``system:serviceaccounts:NS``).

        Raises:
            Forbidden: ``users "jane" is forbidden: User "bob" cannot impersonate resource
                "users" in API group "" at the cluster scope``.
            BadRequest: groups or a uid without a user.
        """
        name = req.headers.get("impersonate-user")
        groups, uid = req.impersonate_groups, req.headers.get("impersonate-uid", "")
        if name is None:
            if groups or uid:
                raise errors.BadRequest("requested impersonation of groups or a uid without impersonating a user")
            return who
        ctx = RequestContext(user=who)
        sa = name.split(":")
        if len(sa) == 4 and sa[:2] == ["system", "serviceaccount"]:
            self.api._authz(ctx, "impersonate", _IMPERSONATED["serviceaccounts"], sa[2], sa[3])
            groups = [*groups, "system:serviceaccounts", f"system:serviceaccounts:{sa[2]}"]
        else:
            self.api._authz(ctx, "impersonate", _IMPERSONATED["users"], None, name)
        for g in req.impersonate_groups:
            self.api._authz(ctx, "impersonate", _IMPERSONATED["groups"], None, g)
        if uid:
            self.api._authz(ctx, "impersonate", _IMPERSONATED["uids"], None, uid)
        if name != "system:anonymous":
            groups = [*groups, "system:authenticated"]
        return UserInfo(name, tuple(dict.fromkeys(groups)), uid)

    def _nonresource_authz(self, who: UserInfo, path: str) -> None:
        if path in _PUBLIC_PATHS or SYSTEM_MASTERS in who.groups:
            return
        if "system:authenticated" not in who.groups:
            raise errors.Forbidden(f'forbidden: User "{who.name}" cannot get path "{path}"',
                                   details={})

    # ------------------------------------------------------------------ routing
    async def _handle(self, req: _Request, receive: Receive, send: Send) -> None:
        who = self.impersonate(self.authenticate(req), req)
        ctx = RequestContext(user=who, warnings=[])
        path = req.path.rstrip("/") or "/"
        parts = [p for p in path.split("/") if p]
        if not parts or parts[0] not in ("api", "apis") or (
            parts[0] == "api" and len(parts) <= 2) or (parts[0] == "apis" and len(parts) <= 3):
            self._nonresource_authz(who, path)
            return await self._nonresource(req, path, parts, send)
        if parts[0] == "api":
            group, version, rest = "", parts[1], parts[2:]
        else:
            group, version, rest = parts[1], parts[2], parts[3:]
        if group == metrics.GROUP:  # metrics-server's API, served from the emulated usage
            return await _send_json(send, 200, metrics.handle(self.api, ctx, req.method, version, rest, req.query,
                                                              req.wants_table))
        if group in (reviews.GROUP, reviews.AUTHN_GROUP):  # access / self reviews: answered, never stored
            body = _request_body(req) if req.method == "POST" else None
            return await _send_json(send, 201, reviews.handle(self.api, ctx, req.method, group, version, rest, body))
        if group == "" and version == "v1" and len(rest) >= 5 and rest[0] == "namespaces" and \
                rest[2] in ("pods", "services") and rest[4] == "proxy":
            return await self._proxy(req, ctx, rest[1], rest[2], rest[3], send)
        if len(rest) >= 3 and rest[0] == "namespaces":
            info = self._served(group, version, rest[2])
            if info is not None and info.namespaced:
                ns, rest = rest[1], rest[2:]
            else:
                ns = None
        else:
            ns = None
        info = self._served(group, version, rest[0])
        if info is None or info.version != version or len(rest) > 3:
            raise _not_found()
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else ""
        if sub == "portforward" and info.plural == "pods" and not group and ns:
            return self._portforward_http(req, ctx, ns, name)
        if sub in ("exec", "attach") and info.plural == "pods" and not group and ns and name:
            return self._exec_http(req, ctx, ns, name, attach=sub == "attach")
        if sub and sub not in info.subresources:
            raise _not_found()
        await self._resource(req, ctx, info, ns, name, sub, receive, send)

    def _served(self, group: str, version: str, plural: str) -> ResourceInfo | None:
        """The resource a REST path names: the static table's, else one of the server's
        custom resources in that version."""
        info = by_resource(group, plural)
        if info is not None and info.version == version:
            return info
        custom = self._custom_infos()
        found = next((r for r in custom if (r.group, r.plural, r.version) == (group, plural, version)), None)
        return found or info

    def _custom_infos(self) -> list[ResourceInfo]:
        registry = getattr(self.api, "custom", None)
        return list(registry.infos()) if registry is not None else []

    async def _nonresource(self, req: _Request, path: str, parts: list[str], send: Send) -> None:
        if req.method not in ("GET", "HEAD"):
            raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")
        if path == "/version":
            return await _send_json(send, 200, VERSION_INFO)
        if path == "/":
            return await _send(send, 200, self._root_paths(), "application/json")
        if path == "/metrics":
            return await _send(send, 200, prom.render(self.api, VERSION_INFO, self.requests),
                               "text/plain; version=0.0.4; charset=utf-8")
        if parts[0] in _HEALTH_ENDPOINTS:
            code, body = self._health(parts[0], "/".join(parts[1:]), req.raw_query)
            return await _send(send, code, body, "text/plain; charset=utf-8",
                               [(b"x-content-type-options", b"nosniff")])
        if path in ("/api", "/apis"):
            ver = _aggregated_version(req.headers.get("accept", ""))
            if ver:
                return await _send_json(
                    send, 200, discovery.aggregated_with(path == "/api", ver, self._custom_infos()),
                    content_type=f"application/json;g=apidiscovery.k8s.io;v={ver};as=APIGroupDiscoveryList")
            if path == "/api":
                return await _send_json(send, 200, discovery.api_versions(self.server_address))
            return await _send_json(send, 200, discovery.api_group_list_with(self._custom_infos()))
        if parts[0] == "api" and len(parts) == 2:
            doc = discovery.resource_list("", parts[1])
        elif parts[0] == "apis" and len(parts) == 2:
            doc = discovery.api_group_with(parts[1], self._custom_infos())
        elif parts[0] == "apis" and len(parts) == 3:
            doc = discovery.resource_list_with(parts[1], parts[2], self._custom_infos())
        elif path == "/openapi/v2":
            protobuf = "protobuf" in req.headers.get("accept", "")
            return await _send(send, 200, openapi.v2_document(protobuf, VERSION_INFO["gitVersion"]),
                               openapi.OPENAPI_V2_PROTOBUF if protobuf else "application/json")
        elif path == "/openapi/v3":
            doc = openapi.index_with(self._custom_infos())
        elif parts[:2] == ["openapi", "v3"] and len(parts) >= 4:
            gv = parts[2:]
            if gv[0] == "api" and len(gv) == 2:
                got = openapi.document_bytes("", gv[1])
            elif gv[0] == "apis" and len(gv) == 3:
                got = openapi.document_bytes(gv[1], gv[2]) or \
                    openapi.custom_document_bytes(gv[1], gv[2], self._custom_infos())
            else:
                got = None
            if got is None:
                raise _not_found()
            headers = [(b"etag", f'"{got[1]}"'.encode())]
            if req.query.get("hash") == got[1]:
                headers.append((b"cache-control", b"public, immutable"))
            return await _send(send, 200, got[0], "application/json", headers)
        else:
            doc = None
        if doc is None:
            raise _not_found()
        await _send_json(send, 200, doc)

    def _health_checks(self, endpoint: str) -> list[tuple[str, str | None]]:
        """``endpoint``'s checks, each (name, error or None): all pass but ``shutdown``,
        which fails once the server is stopping (``/readyz`` then answers 500, so load
        balancers stop sending requests, as upstream's ``--shutdown-delay-duration``)."""
        out = []
        for name in _HEALTH_CHECKS:
            if endpoint != "readyz" and name in _READYZ_ONLY:
                continue
            failed = name == "shutdown" and self.shutting_down.is_set()
            out.append((name, "process is shutting down" if failed else None))
        return out

    def _health(self, endpoint: str, check: str, raw_query: str) -> tuple[int, bytes]:
        """``/healthz``, ``/livez``, ``/readyz`` (and ``/<endpoint>/<check>``), as kube-apiserver's
        healthz handlers (``k8s.io/apiserver/pkg/server/healthz``): ``ok``; with ``?verbose``, one
        line per check (``[+]ping ok``…) then ``readyz check passed``; ``?exclude=NAME`` (repeatable)
        skips a check (``[+]etcd excluded: ok``; a name that matches none adds ``warn: some health
        checks cannot be excluded: no matches for "x"``); a failing check makes the answer 500 and
        verbose (``[-]shutdown failed: reason withheld`` … ``readyz check failed``). A single check,
        ``/readyz/etcd``, answers ``ok`` or 500 ``internal server error: <its error>``; a name that
        is not one of the endpoint's checks is 404.
        """
        checks = self._health_checks(endpoint)
        if check:
            found = next((c for c in checks if c[0] == check), None)
            if found is None:
                raise _not_found()
            if found[1] is not None:
                return 500, f"internal server error: {found[1]}\n".encode()
            return 200, b"ok"
        query = parse_qs(raw_query, keep_blank_values=True)
        excluded = set(query.get("exclude", []))
        lines, failed = [], False
        for name, error in checks:
            if name in excluded:
                excluded.discard(name)
                lines.append(f"[+]{name} excluded: ok")
            elif error is not None:
                failed = True
                lines.append(f"[-]{name} failed: reason withheld")
            else:
                lines.append(f"[+]{name} ok")
        if excluded:
            quoted = ",".join('"' + n.replace("\\", "\\\\").replace('"', '\\"') + '"' for n in sorted(excluded))
            lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}")
        if failed:
            return 500, ("\n".join(lines) + f"\n{endpoint} check failed\n").encode()
        if "verbose" not in query:
            return 200, b"ok"
        return 200, ("\n".join(lines) + f"\n{endpoint} check passed\n").encode()

    def _root_paths(self) -> bytes:
        """``GET /``: kube-apiserver's index, ``{"paths": [...]}`` (sorted, indented as Go's
        ``json.MarshalIndent``) — the paths this server serves: discovery, every group and
        group-version, the health endpoints and each of their checks, ``/metrics``, OpenAPI,
        ``/version``."""
        import json

        paths = {"/api", "/api/v1", "/apis", "/apis/", "/metrics", "/openapi/v2", "/openapi/v3",
                 "/openapi/v3/", "/version"}
        for g in discovery.api_group_list()["groups"]:
            paths.add(f"/apis/{g['name']}")
            paths.update(f"/apis/{v['groupVersion']}" for v in g["versions"])
        for endpoint in _HEALTH_ENDPOINTS:
            paths.add(f"/{endpoint}")
            paths.update(f"/{endpoint}/{name}" for name, _ in self._health_checks(endpoint))
        return json.dumps({"paths": sorted(paths)}, indent=2).encode()

    # ------------------------------------------------------------------ port-forward
    async def _websocket(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        """WebSockets: only ``/api/v1/namespaces/NS/pods/NAME/portforward`` (see :mod:`.portforward`)
        and ``…/exec`` (:mod:`.remotecommand`); anything else is refused with a ``Status`` (404, or
        401 for an unknown token)."""
        from . import portforward, remotecommand

        parts = [p for p in unquote(scope.get("path", "")).split("/") if p]
        try:
            who = self.authenticate(_Request({**scope, "method": "GET"}))
            if len(parts) != 7 or parts[:3] != ["api", "v1", "namespaces"] or parts[4] != "pods" or \
                    parts[6] not in ("portforward", "exec", "attach"):
                raise _not_found()
        except errors.StatusError as e:
            await receive()  # websocket.connect
            return await portforward._reject(scope, send, e)
        if parts[6] == "portforward":
            return await portforward.serve_websocket(self.api, RequestContext(user=who), parts[3], parts[5], scope,
                                                     receive, send, shutting_down=self.shutting_down)
        await remotecommand.serve_websocket(self.api, RequestContext(user=who), parts[3], parts[5], scope, receive,
                                            send, shutting_down=self.shutting_down, attach=parts[6] == "attach",
                                            speed=self.speed)

    def raw_upgrade(self, request: Any) -> Callable[[], Awaitable[None]] | None:
        """The handler of an HTTP/1.1 upgrade Hypercorn cannot give an ASGI app (see :mod:`.upgrade`):
        ``Upgrade: SPDY/3.1`` to ``/api/v1/namespaces/NS/pods/NAME/exec`` or ``…/portforward``
        (kubectl ≤ 1.29 / ≤ 1.30, and newer ones falling back from WebSocket;
        :func:`.remotecommand.serve_spdy`, :func:`.portforward.serve_spdy`). None for anything
        else, which Hypercorn then serves as before."""
        from . import remotecommand

        target = request.target
        parts = [p for p in unquote(target.split("?", 1)[0]).split("/") if p]
        if [v.lower() for v in request.values("upgrade")] != ["spdy/3.1"] or len(parts) != 7 or \
                parts[:3] != ["api", "v1", "namespaces"] or parts[4] != "pods" or \
                parts[6] not in ("exec", "attach", "portforward"):
            return None

        async def handler() -> None:
            scope = {"method": request.method, "path": target.split("?", 1)[0],
                     "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in request.headers],
                     "client_cert": getattr(request, "client_cert", None)}
            try:
                who = self.authenticate(_Request(scope))
            except errors.StatusError as e:
                return await request.respond(e.code, orjson.dumps(e.status()), "application/json")
            if parts[6] == "portforward":
                from . import portforward

                return await portforward.serve_spdy(self.api, RequestContext(user=who), parts[3], parts[5],
                                                    request, shutting_down=self.shutting_down)
            await remotecommand.serve_spdy(self.api, RequestContext(user=who), parts[3], parts[5], request,
                                           speed=self.speed, shutting_down=self.shutting_down,
                                           attach=parts[6] == "attach")

        return handler

    async def _proxy(self, req: _Request, ctx: RequestContext, ns: str, resource: str, id_: str,
                     send: Send) -> None:
        """``pods/NAME/proxy/…`` and ``services/NAME/proxy/…`` (see :mod:`.proxy`)."""
        from . import proxy

        marker = f"/{resource}/{id_}/proxy"
        target = req.path[req.path.index(marker) + len(marker):] or "/"
        if req.raw_query:
            target += "?" + req.raw_query
        pod, port = proxy.locate(self.api, ctx, req.method, ns, resource, id_)
        code, headers, body = proxy.answer(self.api, pod, port, req.method, target)
        ctype = next((v for k, v in headers if k.lower() == "content-type"), "text/plain")
        extra = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers
                 if k.lower() != "content-type"]
        await _send(send, code, body, ctype, extra)

    def _exec_http(self, req: _Request, ctx: RequestContext, ns: str, name: str, attach: bool = False) -> None:
        """``pods/NAME/exec`` reached as plain HTTP: the checks, then 400 (upstream's ``Upgrade request
        required``); SPDY upgrades are taken before the ASGI app by :mod:`.upgrade`."""
        from . import remotecommand

        options = remotecommand.ExecOptions.from_query({k: [v] for k, v in req.query.items()})
        options = attrs.evolve(options, attach=attach)
        remotecommand.check_exec(self.api, ctx, ns, name, options)
        if "upgrade" in req.headers.get("connection", "").lower():
            raise errors.BadRequest("unable to upgrade: SPDY/3.1 upgrades are served on k8semu serve's own "
                                    "connections, not through the ASGI app")
        raise errors.BadRequest("Upgrade request required")

    def _portforward_http(self, req: _Request, ctx: RequestContext, ns: str, name: str | None) -> None:
        """Port-forward reached as plain HTTP: the checks, then 400 (SPDY upgrades are taken before
        the ASGI app by :mod:`.upgrade`)."""
        from . import portforward

        if name is None:
            raise _not_found()
        portforward.check_pod(self.api, ctx, ns, name)
        if "upgrade" in req.headers.get("connection", "").lower():
            raise errors.BadRequest(portforward.SPDY_UNSUPPORTED)
        raise errors.BadRequest("Upgrade request required")

    # ------------------------------------------------------------------ resources
    async def _resource(self, req: _Request, ctx: RequestContext, info: ResourceInfo, ns: str | None,
                        name: str | None, sub: str, receive: Receive, send: Send) -> None:
        api = self.api
        m = req.method
        q = req.query
        dry_run = q.get("dryRun") == "All"
        fv = q.get("fieldValidation") or "Warn"
        if fv not in ("Strict", "Warn", "Ignore"):
            raise errors.BadRequest(f'fieldValidation: Unsupported value: "{fv}": supported values: "Ignore", "Strict", "Warn"')
        manager = q.get("fieldManager") or None
        if info.deprecated and ctx.warnings is not None:  # the deprecation filter's Warning header
            ctx.warnings.append(info.deprecated)
        if m in ("GET", "HEAD") and name is None:
            if req.flag("watch"):
                return await self._watch(req, ctx, info, ns, receive, send)
            lst = api.list(info, namespace=ns, ctx=ctx, label_selector=q.get("labelSelector") or None,
                           field_selector=q.get("fieldSelector") or None, limit=req.int_param("limit"),
                           continue_=q.get("continue") or None, resource_version=q.get("resourceVersion"))
            if req.wants_table:
                return await _send_json(send, 200, self._table(lst["items"], info, req, lst["metadata"]),
                                        warnings=ctx.warnings)
            return await _send_json(send, 200, lst, warnings=ctx.warnings)
        if m in ("GET", "HEAD"):
            if sub == "log":
                return await self._log(req, ctx, info, ns, name, receive, send)
            if sub == "scale":
                scale = api.get_scale(info, name, namespace=ns, ctx=ctx)
                if req.wants_table:  # upstream's Scale columns: NAME DESIRED AVAILABLE AGE
                    from ..api.tables import table_for

                    scale = table_for([scale], "Scale", self._now(), include_object=req.query.get("includeObject", ""),
                                      list_meta={"resourceVersion": (scale.get("metadata") or {}).get("resourceVersion")})
                return await _send_json(send, 200, scale, warnings=ctx.warnings)
            if sub not in OBJECT_SUBRESOURCES:
                raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")
            obj = api.get(info, name, namespace=ns, ctx=ctx, resource_version=q.get("resourceVersion"))
            if req.wants_table:
                rv = (obj.get("metadata") or {}).get("resourceVersion")
                return await _send_json(send, 200, self._table([obj], info, req, {"resourceVersion": rv}),
                                        warnings=ctx.warnings)
            return await _send_json(send, 200, obj, warnings=ctx.warnings)
        body = _request_body(req)
        if m == "POST":
            if name is None:
                if not isinstance(body, dict):
                    raise errors.BadRequest("the body of the request was in an unknown format")
                out = api.create(info, body, namespace=ns, ctx=ctx, dry_run=dry_run, field_validation=fv,
                                 field_manager=manager)
                return await _send_json(send, 201, out, warnings=ctx.warnings)
            if sub == "binding":
                api.bind(name, body or {}, namespace=ns, ctx=ctx)
                return await _send_json(send, 201, _success(201))
            if sub == "eviction":
                out = api.evict(name, body or {}, namespace=ns, ctx=ctx, dry_run=dry_run or _dry(body))
                return await _send_json(send, 201, out)
            if sub == "token" and info.plural == "serviceaccounts" and not info.group:  # TokenRequest
                return await _send_json(send, 201, sa_tokens.create_token(api, ctx, ns, name, body))
            raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")
        if name is None and m != "DELETE":
            raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")
        if m == "PUT":
            if not isinstance(body, dict):
                raise errors.BadRequest("the body of the request was in an unknown format")
            if sub == "scale":
                replicas = (body.get("spec") or {}).get("replicas", 0)
                return await _send_json(send, 200, api.update_scale(
                    info, name, replicas, namespace=ns, ctx=ctx, dry_run=dry_run, field_manager=manager),
                    warnings=ctx.warnings)
            if sub == "finalize":
                fins = (body.get("spec") or {}).get("finalizers") or []
                return await _send_json(send, 200, api.finalize_namespace(name, fins, ctx=ctx))
            body_name = (body.get("metadata") or {}).get("name")
            if body_name and body_name != name:
                raise errors.BadRequest(f"the name of the object ({body_name}) does not match the name on the URL ({name})")
            if not body_name:
                body = {**body, "metadata": {**(body.get("metadata") or {}), "name": name}}
            out = api.update(info, body, namespace=ns, subresource=sub, ctx=ctx, dry_run=dry_run,
                             field_validation=fv, field_manager=manager)
            return await _send_json(send, 200, out, warnings=ctx.warnings)
        if m == "PATCH":
            ptype = req.content_type
            if ptype not in PATCH_TYPES:
                raise errors.UnsupportedMediaType(
                    f"the body of the request was in an unknown format - accepted media types include: "
                    f"{', '.join(PATCH_TYPES)}")
            if sub == "scale":
                return await _send_json(send, 200, self._patch_scale(info, ns, name, body, ptype, ctx, dry_run, manager),
                                        warnings=ctx.warnings)
            code = 200
            if ptype == APPLY_PATCH:
                if not manager:
                    raise errors.BadRequest("PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: "
                                            "is required for apply patch")
                try:
                    api.get(info, name, namespace=ns, ctx=ctx)
                except errors.NotFound:
                    code = 201
            out = api.patch(info, name, body, ptype, namespace=ns, subresource=sub, ctx=ctx, dry_run=dry_run,
                            field_manager=manager, force=req.flag("force"), field_validation=fv)
            return await _send_json(send, code, out, warnings=ctx.warnings)
        if m == "DELETE":
            opts = body if isinstance(body, dict) else {}
            grace = opts.get("gracePeriodSeconds", req.int_param("gracePeriodSeconds"))
            policy = opts.get("propagationPolicy") or q.get("propagationPolicy") or None
            if policy is None and opts.get("orphanDependents") is True:
                policy = "Orphan"
            dry = dry_run or _dry(opts)
            if name is None:
                out = api.delete_collection(info, namespace=ns, ctx=ctx, label_selector=q.get("labelSelector") or None,
                                            field_selector=q.get("fieldSelector") or None,
                                            grace_period_seconds=grace, propagation_policy=policy, dry_run=dry)
                return await _send_json(send, 200, out)
            out = api.delete(info, name, namespace=ns, ctx=ctx, grace_period_seconds=grace,
                             propagation_policy=policy, preconditions=opts.get("preconditions"), dry_run=dry)
            still = not dry and api.log.get(info.key(ns, name)) is not None
            if not still and not dry and info.qualified not in _RETURN_DELETED_OBJECT:
                out = _deleted_status(info, name, out)
            return await _send_json(send, 202 if still else 200, out)
        raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")

    def _patch_scale(self, info: ResourceInfo, ns: str | None, name: str, body: Any, ptype: str,
                     ctx: RequestContext, dry_run: bool, manager: str | None) -> dict[str, Any]:
        from ..api import patch as patching

        scale = self.api.get_scale(info, name, namespace=ns, ctx=ctx)
        if ptype == JSON_PATCH:
            new = patching.apply_json_patch(scale, body)
        elif isinstance(body, dict):
            new = patching.apply_merge_patch(scale, body)
        else:
            raise errors.BadRequest("the body of the request was in an unknown format")
        replicas = (new.get("spec") or {}).get("replicas", 0)
        if not isinstance(replicas, int) or isinstance(replicas, bool):
            raise errors.BadRequest("json: cannot unmarshal into Go struct field ScaleSpec.spec.replicas of type int32")
        return self.api.update_scale(info, name, replicas, namespace=ns, ctx=ctx, dry_run=dry_run,
                                     field_manager=manager)

    # ------------------------------------------------------------------ tables
    def _now(self):
        return self.api.epoch + timedelta(seconds=self.api.now)

    def _table(self, items: list[dict[str, Any]], info: ResourceInfo, req: _Request,
               list_meta: dict[str, Any] | None, *, columns: bool = True) -> dict[str, Any]:
        from ..api.tables import table_for

        t = table_for(items, info.qualified, self._now(), include_object=req.query.get("includeObject", ""),
                      list_meta=list_meta, info=info)
        if not columns:
            t = {k: v for k, v in t.items() if k != "columnDefinitions"}
        return t

    # ------------------------------------------------------------------ streams
    async def _stream(self, send: Send, receive: Receive, content_type: str,
                      body: Callable[[Callable[[bytes], Awaitable[None]]], Awaitable[None]]) -> None:
        """A chunked 200 response; ``body(write)`` runs until done, the client goes, or shutdown."""
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", content_type.encode()), (b"cache-control", b"no-cache, private")]})

        async def write(data: bytes) -> None:
            await send({"type": "http.response.body", "body": data, "more_body": True})

        await write(b"")  # the head goes out now: a client's watch is established before any event

        gone = False
        async with trio.open_nursery() as nursery:
            async def watch_client() -> None:
                nonlocal gone
                while True:
                    msg = await receive()
                    if msg["type"] == "http.disconnect":
                        gone = True
                        nursery.cancel_scope.cancel()
                        return

            async def watch_shutdown() -> None:
                await self.shutting_down.wait()
                nursery.cancel_scope.cancel()

            nursery.start_soon(watch_client)
            nursery.start_soon(watch_shutdown)
            try:
                await body(write)
            finally:
                nursery.cancel_scope.cancel()
        if not gone:
            try:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            except Exception:
                pass

    async def _watch(self, req: _Request, ctx: RequestContext, info: ResourceInfo, ns: str | None,
                     receive: Receive, send: Send) -> None:
        q = req.query
        api = self.api
        timeout = req.int_param("timeoutSeconds")
        timeout = _DEFAULT_WATCH_TIMEOUT if timeout is None else float(timeout)
        table = req.wants_table
        initial_events = req.flag("sendInitialEvents")
        selectors = dict(label_selector=q.get("labelSelector") or None, field_selector=q.get("fieldSelector") or None)
        rv = q.get("resourceVersion")
        first: list[dict[str, Any]] = []
        if initial_events:
            # WatchList: the current state as ADDED events, then a bookmark marking their end
            lst = api.list(info, namespace=ns, ctx=ctx, **selectors)
            first = [{"type": "ADDED", "object": o} for o in lst["items"]]
            rv = lst["metadata"]["resourceVersion"]
            first.append({"type": "BOOKMARK", "object": {
                "kind": info.kind, "apiVersion": info.api_version,
                "metadata": {"resourceVersion": rv, "annotations": {"k8s.io/initial-events-end": "true"}}}})
        if (self.background is not None and not table and not initial_events and rv and rv.isdigit()
                and int(rv) > 0):
            shared = await self._shared_watch(ctx, info, ns, int(rv), selectors, req.flag("allowWatchBookmarks"))
            if shared is not None:
                return await self._stream(send, receive, "application/json",
                                          self._shared_body(shared, int(rv), timeout))
        try:
            events = await api.watch(info, namespace=ns, ctx=ctx, resource_version=rv,
                                     allow_bookmarks=req.flag("allowWatchBookmarks"), **selectors)
        except errors.Expired as e:
            events = None
            first = [{"type": "ERROR", "object": e.status()}]
        sent_columns = False

        def encode(ev: dict[str, Any]) -> bytes:
            nonlocal sent_columns
            obj = ev["object"]
            if table and ev["type"] in ("ADDED", "MODIFIED", "DELETED"):
                obj = self._table([obj], info, req, {"resourceVersion": (obj.get("metadata") or {}).get("resourceVersion")},
                                  columns=not sent_columns)
                sent_columns = True
            elif table and ev["type"] == "BOOKMARK":
                obj = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": dict(obj["metadata"]),
                       "columnDefinitions": None, "rows": None}
            return orjson.dumps({"type": ev["type"], "object": obj}) + b"\n"

        def encode_event(ev: WatchEvent) -> bytes:
            return encode(ev.wire()) if table else self._plain_event_bytes(ev)

        # One task reads the watch and encodes; the writer sends whatever has piled up as
        # one chunk, so a client that falls behind costs one socket write per batch, not per
        # event (kube-apiserver's watch cache likewise serialises an event once per encoding
        # and buffers it per watcher).
        out_send, out_recv = trio.open_memory_channel[bytes](_WATCH_BUFFER)

        async def produce() -> None:
            async with out_send:
                for ev in first:
                    await out_send.send(encode(ev))
                if events is None:
                    return
                try:
                    async for item in events:
                        await out_send.send(encode_event(item))
                finally:
                    await events.aclose()

        async def body(write: Callable[[bytes], Awaitable[None]]) -> None:
            with trio.move_on_after(timeout * self.speed):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(produce)
                    async for chunk in out_recv:
                        batch = [chunk]
                        while len(batch) < _WATCH_BUFFER:
                            try:
                                batch.append(out_recv.receive_nowait())
                            except (trio.WouldBlock, trio.EndOfChannel):
                                break
                        await write(b"".join(batch))
                        # let a busy stream gather events for a moment: one socket write per
                        # flush period at most, instead of one per event per watch
                        await trio.sleep(_WATCH_FLUSH * self.speed)

        await self._stream(send, receive, "application/json", body)

    async def _shared_watch(self, ctx: RequestContext, info: ResourceInfo, ns: str | None, rv: int,
                            selectors: dict[str, str | None], bookmarks: bool) -> SharedWatch | None:
        """The shared watch a JSON watch from ``rv`` can read (see :mod:`.watchcache`), started
        if there is none yet; None when this client needs a watch of its own (its
        resourceVersion is older than what the shared one holds, or not valid)."""
        api = self.api
        key = (info.qualified, ns, selectors["label_selector"], selectors["field_selector"], bookmarks)
        shared = self._shared.get(key)
        if shared is not None and shared.done:
            del self._shared[key]
            shared = None
        if shared is not None:
            api._authz(ctx, "watch", info, ns)  # as the API server's watch would for this client
            return shared if shared.covers(rv) and rv <= api.log.revision else None
        if rv > api.log.revision:
            return None  # the watch of its own reports "Too large resource version"
        try:
            events = await api.watch(info, namespace=ns, ctx=ctx, resource_version=str(rv),
                                     allow_bookmarks=bookmarks, **selectors)
        except errors.Expired:
            return None  # ... and this as an ERROR event
        shared = self._shared[key] = SharedWatch(key, rv)
        assert self.background is not None
        self.background.start_soon(shared.pump, events, self._plain_event_bytes)
        return shared

    def _shared_body(self, shared: SharedWatch, rv: int, timeout: float):
        client = shared.join(rv)

        async def body(write: Callable[[bytes], Awaitable[None]]) -> None:
            try:
                with trio.move_on_after(timeout * self.speed):
                    while (chunk := await shared.next_chunk(client)) is not None:
                        await write(chunk)
                        await trio.sleep(self._flush_period() * self.speed)  # let the next chunk gather
            finally:
                shared.leave(client)
                if not shared.clients:
                    shared.cancel_scope.cancel()
                    if self._shared.get(shared.key) is shared:
                        del self._shared[shared.key]

        return body

    def _flush_period(self) -> float:
        """Wall seconds a shared-watch client waits after a write: :data:`_WATCH_FLUSH`, longer
        with many clients (1 s at 2,000), so that sending costs at most ~2,000 socket writes
        a second whatever their number and the API's own requests keep their share of the CPU."""
        clients = sum(len(s.clients) for s in self._shared.values())
        return _WATCH_FLUSH * min(10.0, max(1.0, clients / 200))

    def _plain_event_bytes(self, ev: WatchEvent) -> bytes:
        """The JSON line of a (non-Table) watch event."""
        if not ev.revision or ev.type not in ("ADDED", "MODIFIED", "DELETED"):
            return orjson.dumps(ev.wire()) + b"\n"
        return self._event_bytes(ev)

    def _event_bytes(self, ev: WatchEvent) -> bytes:
        """The JSON line of a watch event, encoded once for every watch that sends it
        (keyed by revision and event type: a revision is one version of one object)."""
        key = (ev.revision, ev.type)
        data = self._encoded.get(key)
        if data is None:
            data = orjson.dumps({"type": ev.type, "object": ev.object}) + b"\n"
            self._encoded[key] = data
            if len(self._encoded) > _ENCODED_EVENTS:
                self._encoded.popitem(last=False)
        return data

    async def _log(self, req: _Request, ctx: RequestContext, info: ResourceInfo, ns: str | None, name: str,
                   receive: Receive, send: Send) -> None:
        api = self.api
        api._authz(ctx, "get", info, ns, name, "log")  # RBAC on pods/log, as upstream
        from ..node.containerlogs import LimitedWriter, kubelet_log_url, log_options, log_run

        q = req.query
        # PodLogOptions decoded and validated before the pod is read (upstream's REST.Get)
        opts = log_options(q, name, api.now, api.epoch)
        pod = api.get(info, name, namespace=ns, ctx=ctx)
        spec = pod.get("spec") or {}
        containers = list(spec.get("containers") or [])
        specs = {c["name"]: c for c in list(spec.get("initContainers") or []) + containers
                 + list(spec.get("ephemeralContainers") or [])}
        cname = q.get("container")
        if not cname:
            if len(containers) != 1:
                names = " ".join(c["name"] for c in containers)
                raise errors.BadRequest(f"a container name must be specified for pod {name}, choose one of: [{names}]")
            cname = containers[0]["name"]
        if cname not in specs:
            raise errors.BadRequest(f"container {cname} is not valid for pod {name}")
        from ..sim.components import kubelet_unreachable

        if (dial := kubelet_unreachable(api, pod)) is not None:
            params = {k: v for k, v in q.items()
                      if k in ("follow", "previous", "timestamps", "tailLines", "sinceSeconds", "sinceTime",
                               "limitBytes")}
            raise errors.UnknownError(f'Get "{kubelet_log_url(pod, cname, params)}": {dial}')
        window = log_run(pod, cname, req.flag("previous"), api.epoch)
        if window is None:  # no node yet: upstream's LogLocation is empty, the body too
            return await _send(send, 200, b"", "text/plain")
        start, end, cid = window
        stamps = req.flag("timestamps")
        follow = req.flag("follow") and not req.flag("previous")
        from ..node import inputs
        from ..node.runtime import container_stdin

        epoch = api.epoch
        try:
            program = inputs.replay_program(api, pod, specs[cname], start)  # with the env and files it had
            # with what attached clients wrote to its stdin (kept by this process's runtime)
            feed = container_stdin(cid) if specs[cname].get("stdin") else None
            run = program.start(start, wall_clock=lambda t: epoch + timedelta(seconds=t), stdin=feed)
        except ValueError:
            run = None
        else:
            from ..node.podnetwork import PastNetwork

            run.network = PastNetwork(api, pod, run)  # its wget/curl/nslookup as the kubelet's run had them

        def lines(until: float) -> list[tuple[float, bytes]]:
            if run is None:
                return []
            out = []
            for eff in run.advance(until):
                if type(eff).__name__ == "LogLine":
                    text = eff.text
                    if stamps:
                        st = (epoch + timedelta(seconds=eff.t)).strftime("%Y-%m-%dT%H:%M:%S.")
                        text = f"{st}{round((eff.t % 1) * 1e9):09d}Z {text}"
                    out.append((eff.t, text.encode() + b"\n"))
            return out

        # the kubelet's ReadLogs: the last tailLines lines, those stamped at/after since (now -
        # sinceSeconds, or sinceTime, in the cluster's virtual time), cut at limitBytes
        limited = LimitedWriter(opts.limit)
        def until(e: float | None) -> float:
            if e is None:
                return api.now
            if run is not None and run.stdin_feed is not None:
                # finishedAt has whole seconds: the run read its stdin until it exited, within that second
                return min(e + 1.0 - 1e-6, api.now)
            return e

        first = limited.cut(opts.select(lines(until(end))))
        if not follow or end is not None or limited.done:
            return await _send(send, 200, first, "text/plain")
        uid = (pod.get("metadata") or {}).get("uid")
        since = opts.since

        async def body(write: Callable[[bytes], Awaitable[None]]) -> None:
            if first:
                await write(first)
            while True:
                await trio.sleep(_LOG_POLL * self.speed)
                try:
                    cur = api.get(info, name, namespace=ns, ctx=ctx)
                except errors.NotFound:
                    return
                if (cur.get("metadata") or {}).get("uid") != uid:
                    return
                try:
                    s2, e2 = _log_window(api, cur, cname, False)
                except errors.StatusError:
                    return
                new = limited.cut([b for t, b in lines(until(e2))
                                   if since is None or t >= since])
                if new:
                    await write(new)
                if e2 is not None or s2 != start or limited.done:
                    return

        await self._stream(send, receive, "text/plain", body)


def _log_window(api: Any, pod: dict[str, Any], cname: str, previous: bool) -> tuple[float, float | None] | None:
    """(start, end or None while running) in virtual seconds of the run the kubelet serves the log of.

    The kubelet's choice (:func:`k8semu.node.containerlogs.log_window`): a container waiting
    to restart serves its last terminated run; ``None`` for a pod not bound to a node yet.

    Raises:
        BadRequest: the kubelet's refusals (waiting to start, no previous terminated container, …).
    """
    from ..node.containerlogs import log_window

    return log_window(pod, cname, previous, api.epoch)


# the registries whose store sets ReturnDeletedObject: an immediate delete answers with the
# object; every other kind answers with a Success Status naming what was deleted
_RETURN_DELETED_OBJECT = frozenset({"pods", "services", "serviceaccounts", "persistentvolumes",
                                    "persistentvolumeclaims"})


def _deleted_status(info: ResourceInfo, name: str, obj: dict[str, Any]) -> dict[str, Any]:
    """kube-apiserver's answer to an immediate delete of ``obj`` (a kind without ReturnDeletedObject)."""
    details: dict[str, Any] = {"name": name, "kind": info.plural,
                               "uid": (obj.get("metadata") or {}).get("uid")}
    if info.group:
        details["group"] = info.group
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


def _dry(opts: Any) -> bool:
    return isinstance(opts, dict) and "All" in (opts.get("dryRun") or ())


def _success(code: int) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}


def _aggregated_version(accept: str) -> str | None:
    """``v2`` / ``v2beta1`` when the first acceptable type is an aggregated discovery list."""
    for part in accept.split(","):
        if "as=APIGroupDiscoveryList" in part and "g=apidiscovery.k8s.io" in part:
            for p in part.split(";"):
                if p.strip().startswith("v="):
                    v = p.strip()[2:]
                    if v in ("v2", "v2beta1"):
                        return v
        elif part.strip():
            return None
    return None


async def _send(send: Send, code: int, body: bytes, content_type: str,
                headers: list[tuple[bytes, bytes]] | None = None) -> None:
    hs = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode()),
          (b"cache-control", b"no-cache, private")]
    await send({"type": "http.response.start", "status": code, "headers": hs + list(headers or ())})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def _request_body(req: _Request) -> Any:
    """The request body as a JSON-shaped value: JSON or YAML as sent, Kubernetes protobuf decoded.

    kubectl's typed clients (``create namespace|deployment|…``, ``create token``, ``auth can-i``)
    send protobuf; it is decoded to the same dict a JSON body gives (responses stay JSON, which
    they accept).

    Raises:
        UnsupportedMediaType: a protobuf kind k8semu has no schema for, CBOR or another type.
        BadRequest: a malformed body.
    """
    if req.body and req.content_type == protobuf.MEDIA_TYPE and req.method != "PATCH":
        try:
            return protobuf.decode_body(req.body)
        except protobuf.UnsupportedProtobufType as e:
            raise errors.UnsupportedMediaType(str(e)) from None
        except protobuf.ProtobufError as e:
            raise errors.BadRequest(str(e)) from None
    if req.body and req.content_type not in ("application/json", "application/yaml", *PATCH_TYPES):
        raise errors.UnsupportedMediaType(
            f'the body of the request was in an unknown format - accepted media types include: '
            f'application/json, application/yaml, {protobuf.MEDIA_TYPE}, {", ".join(PATCH_TYPES)}')
    return req.json_body()


async def _send_json(send: Send, code: int, obj: Any, *, content_type: str = "application/json",
                     warnings: list[str] | None = None) -> None:
    """Send ``obj`` as JSON; each of ``warnings`` becomes a ``Warning: 299 - "…"`` header (RFC 7234),
    which kubectl prints as ``Warning: …``."""
    headers = [(b"warning", f'299 - {_go_quoted(w)}'.encode("utf-8")) for w in warnings or ()]
    await _send(send, code, orjson.dumps(obj), content_type, headers)


def _go_quoted(text: str) -> str:
    """The warning text as a quoted string (``"unknown field \"spec.x\""``)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
