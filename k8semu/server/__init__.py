"""``k8semu serve``: the emulated kube-apiserver over HTTP(S) for unmodified clients.

Modules:

* :mod:`.app` — the ASGI app: authentication, routing, every verb and
  subresource at its REST path, Tables, watch and log streams;
* :mod:`.discovery` — aggregated (``apidiscovery.k8s.io/v2``) and legacy discovery;
* :mod:`.openapi` — OpenAPI v3 documents generated from :mod:`k8semu.api.schema`;
* :mod:`.pki` — CA, serving certificate, tokens and the kubeconfig;
* :mod:`.run` — Hypercorn's Trio worker around the app, inside the cluster's ``trio.run``.
"""

from .app import VERSION_INFO, APIApp
from .run import serve_api

__all__ = ["APIApp", "VERSION_INFO", "serve_api"]
