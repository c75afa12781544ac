"""``k8semu serve``: the emulated kube-apiserver over HTTP(S) for unmodified clients.

Modules:

* :mod:`.app` — the ASGI app: authentication, routing, every verb and
  subresource at its REST path, Tables, watch and log streams;
* :mod:`.discovery` — aggregated (``apidiscovery.k8s.io/v2``) and legacy discovery;
* :mod:`.metrics` — metrics-server's ``metrics.k8s.io/v1beta1`` (``kubectl top``);
* :mod:`.openapi` — OpenAPI v3 documents generated from :mod:`k8semu.api.schema`;
* :mod:`.pki` — CA, serving certificate, tokens and the kubeconfig;
* :mod:`.run` — the listening server around the app, inside the cluster's ``trio.run``;
* :mod:`.upgrade` — the connections' front: HTTP/1.1 upgrades Hypercorn cannot hand to ASGI
  (SPDY/3.1) go to the app's own handlers, plain HTTP/1.1 to :mod:`.http1`, HTTP/2 to
  :mod:`.http2`, WebSocket to Hypercorn;
* :mod:`.http1` — HTTP/1.1 keep-alive connections served with h11, one task each;
* :mod:`.http2` — HTTP/2 connections served with h2, a task per request stream;
* :mod:`.remotecommand` — ``pods/NAME/exec`` (``kubectl exec``) over WebSocket and SPDY.
"""

from .app import VERSION_INFO, APIApp
from .run import serve_api

__all__ = ["APIApp", "VERSION_INFO", "serve_api"]
