"""Running the HTTP(S) server around :class:`~k8semu.server.app.APIApp` (HTTP/1.1 through
:mod:`.http1`, HTTP/2 through :mod:`.http2`, WebSocket through Hypercorn's Trio worker; see
:mod:`.upgrade`).

:func:`serve_api` runs inside the cluster's ``trio.run`` (next to every
component, see :func:`k8semu.sim.runtime.run_cluster`), so API requests and
controllers share one event loop and one clock. The clock runs in real-time
mode at ``speed`` virtual seconds per wall second; the servers' timers
(keep-alive, TLS handshake, graceful shutdown) read the same clock, so they
are scaled by ``speed`` to stay wall-clock durations.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

import trio

from ..api.auth import UserInfo
from .app import APIApp
from .pki import Credentials

__all__ = ["serve_api"]


def hypercorn_config(host: str, port: int, creds: Credentials | None, speed: float) -> Any:
    """A Hypercorn ``Config`` bound to ``host:port`` (TLS when ``creds``), timeouts scaled by ``speed``."""
    from hypercorn.config import Config

    cfg = Config()
    cfg.bind = [f"{host}:{port}"]
    if creds is not None:
        import ssl

        cfg.certfile = str(creds.server_cert)
        cfg.keyfile = str(creds.server_key)
        # client certificates signed by the cluster CA authenticate (kube-apiserver's --client-ca-file);
        # asked for, not required, as Go's tls.RequestClientCert
        cfg.ca_certs = str(creds.ca_cert)
        cfg.verify_mode = ssl.CERT_OPTIONAL
    cfg.keep_alive_timeout = 90 * speed  # Go clients keep idle connections ~90 s
    # Hypercorn closes a keep-alive connection after 1,000 requests by default; Go's net/http
    # (kube-apiserver) never does, and a client that does not expect it loses a request there
    cfg.keep_alive_max_requests = 2**31 - 1
    cfg.ssl_handshake_timeout = 60 * speed
    cfg.graceful_timeout = 2 * speed
    cfg.startup_timeout = 60 * speed
    cfg.shutdown_timeout = 60 * speed
    cfg.accesslog = None
    cfg.errorlog = "-"
    cfg.loglevel = "WARNING"
    return cfg


async def serve_api(
    api: Any,
    tokens: dict[str, UserInfo],
    *,
    host: str = "127.0.0.1",
    port: int = 6443,
    creds: Credentials | None = None,
    speed: float = 1.0,
    shutdown_trigger: Callable[[], Awaitable[None]] | None = None,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``api`` over HTTP(S) until ``shutdown_trigger`` returns.

    ``task_status.started(url)`` reports the bound URL (``https://127.0.0.1:6443``;
    port 0 picks a free one). Connections go through :func:`.upgrade.serve`, which hands SPDY
    upgrades (``kubectl exec``) to :meth:`APIApp.raw_upgrade` and everything else to Hypercorn.
    """
    from .upgrade import serve

    cfg = hypercorn_config(host, port, creds, speed)
    from ..api.auth import admin

    app = APIApp(api, tokens, speed=speed, server_address=f"{host}:{port}",
                 unauthenticated=admin() if creds is None else None)

    async def trigger() -> None:
        if shutdown_trigger is None:
            await trio.sleep_forever()
        await shutdown_trigger()
        app.shutting_down.set()  # end open watches and log follows now

    async with trio.open_nursery() as nursery:
        async def serving(task_status=trio.TASK_STATUS_IGNORED) -> None:
            await serve(app, cfg, raw_upgrade=app.raw_upgrade, shutdown_trigger=trigger, task_status=task_status)
            nursery.cancel_scope.cancel()  # the shared watches (app.background) end with the server

        app.background = nursery
        binds = await nursery.start(serving)
        url = binds[0]
        app.server_address = url.split("://", 1)[1]
        task_status.started(url)
