"""The Deployment controller, split as upstream's ``pkg/controller/deployment``:

- :mod:`.controller` — informers, handlers, ``syncDeployment`` (the wiring);
- :mod:`.sync` — new ReplicaSet, scaling events, history cleanup, status;
- :mod:`.rolling` / :mod:`.recreate` — the two strategies;
- :mod:`.progress` — the Progressing condition and the deadline requeue;
- :mod:`.rollback` — what ``kubectl rollout undo`` / ``restart`` send;
- :mod:`.util` — pure arithmetic (fenceposts, proportions, annotations).
"""

from .controller import ApiClient, DeploymentController
from .rollback import RollbackError, restart_patch, rollback_patch

__all__ = ["DeploymentController", "ApiClient", "RollbackError", "rollback_patch", "restart_patch"]
