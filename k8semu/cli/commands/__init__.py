"""One module per ``k8semu`` command (group); each exposes ``register(subparsers)``.

:data:`COMMANDS` lists the modules in the order their commands appear in ``--help``.
"""

COMMANDS = (
    "cluster", "apply", "get", "describe", "events", "logs", "exec_", "top", "wait", "explain_scheduling",
    "delete", "create", "replace", "patch", "scale", "rollout", "set_image", "label", "annotate",
    "nodes", "drain", "taint", "certificate", "advance", "node", "serve", "kubeconfig",
    "history", "diff", "timeline", "trace", "replay", "bisect", "import_",
)
