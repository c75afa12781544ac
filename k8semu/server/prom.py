"""``GET /metrics``: kube-apiserver's own Prometheus metrics (a subset), in the text format 0.0.4.

``kubectl get --raw /metrics`` (and Prometheus scraping the API server) read it; RBAC: the
non-resource URL ``/metrics`` (``system:monitoring``; cluster-admin has it). Served:

- ``kubernetes_build_info`` (the version ``/version`` reports);
- ``apiserver_storage_objects{resource}``: objects stored per resource (``pods``,
  ``deployments.apps`` …), counted from the store now;
- ``apiserver_request_total{code,component,dry_run,group,resource,scope,subresource,verb,version}``:
  the requests this server answered since it started, with upstream's labels (verbs ``GET``,
  ``LIST``, ``WATCH``, ``POST``, ``PUT``, ``PATCH``, ``APPLY``, ``DELETE``; scopes ``resource``,
  ``namespace``, ``cluster``; non-resource requests have empty group/resource/version).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping

__all__ = ["RequestCounter", "render"]


class RequestCounter:
    """``apiserver_request_total``'s counts, by label set."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[tuple[str, str], ...]] = Counter()

    def observe(self, method: str, path: str, query: Mapping[str, str], content_type: str, code: int) -> None:
        parts = [p for p in path.split("/") if p]
        group = version = resource = sub = scope = ""
        verb = method
        if parts and parts[0] in ("api", "apis") and len(parts) >= (3 if parts[0] == "api" else 4):
            if parts[0] == "api":
                group, version, rest = "", parts[1], parts[2:]
            else:
                group, version, rest = parts[1], parts[2], parts[3:]
            scope = "cluster"
            if len(rest) >= 3 and rest[0] == "namespaces":
                scope, rest = "namespace", rest[2:]
            elif len(rest) in (1, 2) and rest[0] == "namespaces":
                scope = "resource" if len(rest) == 2 else "cluster"
            resource = rest[0]
            named = len(rest) > 1
            sub = rest[2] if len(rest) > 2 else ""
            if named:
                scope = "resource"
            if method == "GET":
                verb = "WATCH" if query.get("watch") in ("true", "1", "True") else "GET" if named else "LIST"
            elif method == "PATCH" and content_type.startswith("application/apply-patch"):
                verb = "APPLY"
        labels = (("code", str(code)), ("component", "apiserver"),
                  ("dry_run", "All" if query.get("dryRun") == "All" else ""), ("group", group),
                  ("resource", resource), ("scope", scope), ("subresource", sub), ("verb", verb),
                  ("version", version))
        self.counts[labels] += 1


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _line(name: str, labels: tuple[tuple[str, str], ...], value: int | float) -> str:
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
    return f"{name}{{{inner}}} {value}\n"


def render(api: Any, version_info: Mapping[str, str], requests: RequestCounter) -> bytes:
    """The metrics page."""
    out = ["# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, "
           "dry run value, group, version, resource, scope, component, and HTTP response code.\n",
           "# TYPE apiserver_request_total counter\n"]
    out += [_line("apiserver_request_total", labels, n) for labels, n in sorted(requests.counts.items())]
    counts: Counter[str] = Counter()
    for rec in api.log.range("/registry/"):
        parts = rec.key.split("/")
        if len(parts) > 2:
            counts[parts[2]] += 1
    out += ["# HELP apiserver_storage_objects [STABLE] Number of stored objects at the time of last check "
            "split by kind. In case of a fetching error, the value will be -1.\n",
            "# TYPE apiserver_storage_objects gauge\n"]
    out += [_line("apiserver_storage_objects", (("resource", r),), n) for r, n in sorted(counts.items())]
    info = (("build_date", version_info.get("buildDate", "")), ("compiler", version_info.get("compiler", "")),
            ("git_commit", version_info.get("gitCommit", "")),
            ("git_tree_state", version_info.get("gitTreeState", "")),
            ("git_version", version_info.get("gitVersion", "")), ("go_version", version_info.get("goVersion", "")),
            ("major", version_info.get("major", "")), ("minor", version_info.get("minor", "")),
            ("platform", version_info.get("platform", "")))
    out += ["# HELP kubernetes_build_info [ALPHA] A metric with a constant '1' value labeled by major, minor, "
            "git version, git commit, git tree state, build date, Go version, and compiler from which "
            "Kubernetes was built, and platform on which it is running.\n",
            "# TYPE kubernetes_build_info gauge\n", _line("kubernetes_build_info", info, 1)]
    return "".join(out).encode()
