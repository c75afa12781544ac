"""DefaultBinder: the ``Binding`` to post for a pod (upstream ``plugins/defaultbinder``).

The API call itself (``APIServer.bind``) is the caller's job; this plugin only
builds the ``v1.Binding`` object.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..framework import Status

__all__ = ["NAME", "DefaultBinder"]

NAME = "DefaultBinder"


class DefaultBinder:
    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Any = None) -> None:
        pass

    def bind(self, state: Any, pod: Mapping[str, Any], node_name: str) -> tuple[dict[str, Any], Status | None]:
        """Returns ``{"apiVersion": "v1", "kind": "Binding", "metadata": {namespace, name, uid},
        "target": {"kind": "Node", "name": node_name}}``."""
        meta = pod.get("metadata") or {}
        md = {"namespace": meta.get("namespace", ""), "name": meta.get("name", "")}
        if meta.get("uid"):
            md["uid"] = meta["uid"]
        return ({"apiVersion": "v1", "kind": "Binding", "metadata": md,
                 "target": {"kind": "Node", "name": node_name}}, None)
