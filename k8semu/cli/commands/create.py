"""``k8semu create``: kubectl create — from manifests, or from kubectl's generators.

``create -f FILE`` POSTs each document (field manager ``kubectl-create``) and
prints ``deployment.apps/web created``; a document that fails does not stop
its siblings, and the server's refusal is printed as kubectl does
(``Error from server (AlreadyExists): error when creating "web.yaml":
deployments.apps "web" already exists``). ``--validate=strict|warn|ignore``
as ``apply``'s (:mod:`k8semu.cli.validate`).

The generators build exactly the objects kubectl 1.3x sends (including the
``creationTimestamp: null`` and empty ``resources: {}`` / ``strategy: {}`` /
``status: {}`` its Go structs serialise):

- ``create deployment NAME --image=IMG… [--replicas N] [--port P] [-- CMD…]``:
  labels and selector ``app: NAME``; one container per image (the first
  one gets the ``--port`` and the command), named after
  the image's last path segment without tag or digest (``_`` and ``.``
  replaced by ``-``, then a 5-character random suffix, as kubectl);
- ``create namespace NAME``; ``create configmap NAME --from-literal=k=v
  --from-file=[key=]PATH``; ``create secret generic NAME --from-literal=k=v
  [--type T]``;
- ``create service clusterip|nodeport|loadbalancer NAME --tcp=PORT[:TARGET]``:
  ports named ``80-8080``, label and selector ``app: NAME``;
- ``create job NAME --image=IMG [-- CMD…]`` (restartPolicy Never, container
  named NAME); ``create cronjob NAME --image=IMG --schedule=S [-- CMD…]``
  (restartPolicy OnFailure).

``--dry-run=client|server`` and ``-o yaml|json|name|jsonpath=…`` as kubectl's
(every generator takes them, after NAME too): client dry run sends nothing
and prints the object it would send — a generator's as kubectl's Go structs
serialise it (``creationTimestamp: null``, no server fields), a manifest's as
written plus its namespace; server dry run prints what the server answers
(defaults applied, nothing stored); without ``-o`` the line is
``deployment.apps/web created (dry run)`` / ``(server dry run)``. Either way
the log is left byte for byte as it was. Then the cluster settles (or runs
``--for``).

"""

from __future__ import annotations

import argparse
import base64
import os
import sys
from typing import Any

from ...api import errors
from ...api.manifest import ManifestError, resource_for
from ...api.meta import random_suffix
from ...api.resources import by_kind
from ..output import (add_dry_run_flag, add_output_flag, die, display_name, dry_run_strategy, dry_run_suffix,
                      print_warning, server_error)
from ..printing import ObjectPrinter, typed
from ..parser import CommandParser, GoBool
from ..targets import add_run_flags, run_write
from ..validate import add_validate_flag, field_validation, load, unknown_field_warnings

FIELD_MANAGER = "kubectl-create"


def register(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("create", help="create objects from manifests or kubectl's generators")
    c.add_argument("-f", "--filename", action="append", default=[], help="manifest file, directory or -")
    c.add_argument("-R", "--recursive", action="store_true")
    c.add_argument("-n", "--namespace", help="namespace (default: default)")
    c.add_argument("-l", "--selector", default="", help="create only the -f objects whose labels match")
    c.add_argument("--raw", default="", metavar="URI",
                   help="POST the -f file as it is to this URI of the API server and print the answer")
    _save_and_manager_flags(c, None)
    add_dry_run_flag(c)
    add_output_flag(c)
    add_run_flags(c)
    add_validate_flag(c)
    gens = c.add_subparsers(dest="generator", metavar="KIND")

    def gen(name: str, *aliases: str, help: str, parent: Any = gens) -> argparse.ArgumentParser:
        g = parent.add_parser(name, aliases=list(aliases), help=help)
        g.add_argument("name", metavar="NAME")
        _generator_flags(g)
        return g

    d = gen("deployment", "deploy", help="a Deployment running the given image(s)")
    _deployment_flags(d)
    d.add_argument("command", nargs=argparse.REMAINDER, help="[-- COMMAND [ARG...]]")
    d.set_defaults(gen_flags=_deployment_flags)
    gen("namespace", "ns", help="a Namespace")
    cm = gen("configmap", "cm", help="a ConfigMap from literals and files")
    cm.add_argument("--from-literal", action="append", default=[])
    cm.add_argument("--from-file", action="append", default=[])
    s = gens.add_parser("secret", help="a Secret").add_subparsers(dest="secret_type", required=True)
    sg = gen("generic", help="a generic (Opaque) Secret", parent=s)
    sg.add_argument("--from-literal", action="append", default=[])
    sg.add_argument("--from-file", action="append", default=[])
    sg.add_argument("--type", default="")
    sv = gens.add_parser("service", aliases=["svc"], help="a Service").add_subparsers(dest="service_type", required=True)
    for kind in ("clusterip", "nodeport", "loadbalancer"):
        p = gen(kind, help=f"a {kind} Service", parent=sv)
        p.add_argument("--tcp", action="append", default=[])
        if kind == "clusterip":
            p.add_argument("--clusterip", default="")
        if kind == "nodeport":
            p.add_argument("--node-port", type=int, default=0)
    j = gen("job", help="a Job running the given image")
    _job_flags(j)
    j.add_argument("command", nargs=argparse.REMAINDER, help="[-- COMMAND [ARG...]]")
    j.set_defaults(gen_flags=_job_flags)
    cj = gen("cronjob", "cj", help="a CronJob running the given image on a schedule")
    _cronjob_flags(cj)
    cj.add_argument("command", nargs=argparse.REMAINDER, help="[-- COMMAND [ARG...]]")
    cj.set_defaults(gen_flags=_cronjob_flags)
    c.set_defaults(func=run)


def _save_and_manager_flags(p: argparse.ArgumentParser, default: Any) -> None:
    """``--save-config`` and ``--field-manager`` (``default``: SUPPRESS for a generator's copy,
    set only when given there)."""
    p.add_argument("--save-config", action=GoBool, default=False if default is None else default,
                   help="write the kubectl.kubernetes.io/last-applied-configuration annotation, as apply does")
    p.add_argument("--field-manager", default=FIELD_MANAGER if default is None else default,
                   help=f"field manager (default {FIELD_MANAGER})")


def _generator_flags(p: argparse.ArgumentParser) -> None:
    """The flags every generator takes after NAME too: ``-n`` (kept apart: ``create -n x``
    before the generator must stand), ``--dry-run``, ``-o``, ``--save-config`` and
    ``--field-manager`` (set only when given there)."""
    p.add_argument("-n", "--namespace", dest="gen_namespace", default=argparse.SUPPRESS)
    add_dry_run_flag(p, default=argparse.SUPPRESS)
    add_output_flag(p, default=argparse.SUPPRESS)
    _save_and_manager_flags(p, argparse.SUPPRESS)


# Flags of the generators that take a command after ``--``: argparse's REMAINDER
# also swallows flags written after NAME, so they are parsed again from it.
def _deployment_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--image", action="append", default=argparse.SUPPRESS)
    p.add_argument("-r", "--replicas", type=int, default=argparse.SUPPRESS)
    p.add_argument("--port", type=int, default=argparse.SUPPRESS)


def _job_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--image", default=argparse.SUPPRESS)


def _cronjob_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--image", default=argparse.SUPPRESS)
    p.add_argument("--schedule", default=argparse.SUPPRESS)
    p.add_argument("--restart", choices=["OnFailure", "Never"], default=argparse.SUPPRESS)


def _split_command(args: argparse.Namespace) -> None:
    """Parse the flags REMAINDER took, and keep what follows ``--`` as the command."""
    rest = list(getattr(args, "command", None) or [])
    flags, cmd = (rest[:rest.index("--")], rest[rest.index("--") + 1:]) if "--" in rest else (rest, [])
    if flags:
        p = CommandParser(prog=f"k8semu create {args.generator}", add_help=False)
        args.gen_flags(p)
        _generator_flags(p)
        p.parse_args(flags, namespace=args)
    args.command = cmd
    defaults = {"image": None, "replicas": 1, "port": -1, "schedule": None, "restart": "OnFailure"}
    for k, v in defaults.items():
        if not hasattr(args, k):
            setattr(args, k, v)
    if args.image is None:
        raise ValueError('required flag(s) "image" not set')
    if args.generator in ("cronjob", "cj") and args.schedule is None:
        raise ValueError('required flag(s) "schedule" not set')


# --------------------------------------------------------------------------- generators

def _meta(name: str, namespace: str | None, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"creationTimestamp": None, **extra, "name": name}
    if namespace:
        meta["namespace"] = namespace
    return meta


def container_name(image: str, rng: Any) -> str:
    """kubectl create deployment's container name for ``image``: the last path
    segment without tag or digest; with ``_`` or ``.`` in it, those become ``-``
    and a random 5-character suffix is added (kubectl's ``sanitizeAndUniquify``)."""
    name = image.rsplit("/", 1)[-1].split(":", 1)[0].split("@", 1)[0]
    if "_" in name or "." in name:
        name = f"{name.replace('_', '-').replace('.', '-')}-{random_suffix(rng)}"
    return name


def deployment(name: str, images: list[str], *, replicas: int = 1, port: int = -1,
               command: list[str] | None = None, namespace: str | None = None, rng: Any = None) -> dict[str, Any]:
    """The Deployment ``kubectl create deployment`` sends."""
    labels = {"app": name}
    containers = [{"image": img, "name": container_name(img, rng), "resources": {}} for img in images]
    if command:
        containers[0] = {**containers[0], "command": list(command)}
    if port >= 0 and images:
        containers[0] = {**containers[0], "ports": [{"containerPort": port}]}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": _meta(name, namespace, labels=dict(labels)),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(labels)},
            "strategy": {},
            "template": {"metadata": {"creationTimestamp": None, "labels": dict(labels)},
                         "spec": {"containers": containers}},
        },
        "status": {},
    }


def namespace_obj(name: str) -> dict[str, Any]:
    """The Namespace ``kubectl create namespace`` sends."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(name, None), "spec": {}, "status": {}}


def _pairs(literals: list[str], files: list[str], kind: str, name: str) -> dict[str, str]:
    data: dict[str, str] = {}

    def add(key: str, value: str) -> None:
        if key in data:
            raise ValueError(f'cannot add key {key}, another key by that name already exists in Data for '
                             f'{kind} "{name}"')
        data[key] = value

    for spec in files:
        key, sep, path = spec.partition("=")
        if not sep:
            key, path = os.path.basename(spec), spec
        with open(path, encoding="utf-8") as fh:
            add(key, fh.read())
    for lit in literals:
        key, sep, value = lit.partition("=")
        if not sep or not key:
            raise ValueError(f"invalid literal source {lit}, expected key=value")
        add(key, value)
    return data


def configmap(name: str, literals: list[str], files: list[str] = (), namespace: str | None = None) -> dict[str, Any]:
    """The ConfigMap ``kubectl create configmap`` sends.

    Raises:
        ValueError: kubectl's ``invalid literal source x, expected key=value`` or a duplicate key.
    """
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(name, namespace)}
    data = _pairs(list(literals), list(files), "ConfigMap", name)
    if data:
        obj["data"] = data
    return obj


def secret(name: str, literals: list[str], files: list[str] = (), type_: str = "",
           namespace: str | None = None) -> dict[str, Any]:
    """The Secret ``kubectl create secret generic`` sends (values base64-encoded)."""
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Secret", "metadata": _meta(name, namespace)}
    data = _pairs(list(literals), list(files), "Secret", name)
    if data:
        obj["data"] = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
    if type_:
        obj["type"] = type_
    return obj


def service(name: str, type_: str, tcp: list[str], *, cluster_ip: str = "", node_port: int = 0,
            namespace: str | None = None) -> dict[str, Any]:
    """The Service ``kubectl create service <type>`` sends.

    Raises:
        ValueError: no ``--tcp`` for a non-headless service, or a bad port spec.
    """
    if not tcp and cluster_ip != "None":
        raise ValueError("at least one tcp port specifier must be provided")
    ports = []
    for spec in tcp:
        port_s, _, target_s = spec.partition(":")
        try:
            port = int(port_s)
        except ValueError:
            raise ValueError(f'strconv.Atoi: parsing "{port_s}": invalid syntax') from None
        target: int | str = port
        if target_s:
            target = int(target_s) if target_s.isdigit() else target_s
        p: dict[str, Any] = {"name": spec.replace(":", "-"), "port": port, "protocol": "TCP", "targetPort": target}
        if node_port:
            p["nodePort"] = node_port
        ports.append(p)
    spec_: dict[str, Any] = {"ports": ports, "selector": {"app": name}, "type": type_}
    if cluster_ip:
        spec_["clusterIP"] = cluster_ip
    return {"apiVersion": "v1", "kind": "Service", "metadata": _meta(name, namespace, labels={"app": name}),
            "spec": spec_, "status": {"loadBalancer": {}}}


def _job_spec(name: str, image: str, command: list[str] | None, restart: str) -> dict[str, Any]:
    c: dict[str, Any] = {"image": image, "name": name, "resources": {}}
    if command:
        c["command"] = list(command)
    return {"template": {"metadata": {"creationTimestamp": None},
                         "spec": {"containers": [c], "restartPolicy": restart}}}


def job(name: str, image: str, command: list[str] | None = None, namespace: str | None = None) -> dict[str, Any]:
    """The Job ``kubectl create job`` sends (restartPolicy Never)."""
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta(name, namespace),
            "spec": _job_spec(name, image, command, "Never"), "status": {}}


def cronjob(name: str, image: str, schedule: str, command: list[str] | None = None, restart: str = "OnFailure",
            namespace: str | None = None) -> dict[str, Any]:
    """The CronJob ``kubectl create cronjob`` sends."""
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": _meta(name, namespace),
            "spec": {"jobTemplate": {"metadata": {"creationTimestamp": None, "name": name},
                                     "spec": _job_spec(name, image, command, restart)},
                     "schedule": schedule},
            "status": {}}


def _generated(args: argparse.Namespace, rng: Any) -> dict[str, Any]:
    ns = getattr(args, "gen_namespace", None) or args.namespace
    g = args.generator
    if g in ("deployment", "deploy"):
        return deployment(args.name, args.image, replicas=args.replicas, port=args.port, command=args.command,
                          namespace=ns, rng=rng)
    if g in ("namespace", "ns"):
        return namespace_obj(args.name)
    if g in ("configmap", "cm"):
        return configmap(args.name, args.from_literal, args.from_file, namespace=ns)
    if g == "secret":
        return secret(args.name, args.from_literal, args.from_file, args.type, namespace=ns)
    if g in ("service", "svc"):
        type_ = {"clusterip": "ClusterIP", "nodeport": "NodePort", "loadbalancer": "LoadBalancer"}[args.service_type]
        return service(args.name, type_, args.tcp, cluster_ip=getattr(args, "clusterip", ""),
                       node_port=getattr(args, "node_port", 0), namespace=ns)
    if g == "job":
        return job(args.name, args.image, args.command, namespace=ns)
    return cronjob(args.name, args.image, args.schedule, args.command, args.restart, namespace=ns)


def _go_compact(value: Any) -> str:
    """Go's ``json.Marshal`` of a typed object: compact, fields in the order given, HTML-escaped."""
    import json

    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def saved_config(obj: dict[str, Any], typed_object: bool) -> dict[str, Any]:
    """``--save-config``: ``obj`` with kubectl's last-applied-configuration annotation — for a
    manifest's object the text ``apply`` writes (:func:`k8semu.cli.commands.apply.with_last_applied`),
    for a generator's (typed) object its Go serialisation (struct order, no empty annotations)."""
    from .apply import LAST_APPLIED, with_last_applied

    if not typed_object:
        return with_last_applied(obj)
    meta = dict(obj.get("metadata") or {})
    ann = {k: v for k, v in (meta.get("annotations") or {}).items() if k != LAST_APPLIED}
    bare = {**obj, "metadata": {**{k: v for k, v in meta.items() if k != "annotations"},
                                **({"annotations": ann} if ann else {})}}
    text = _go_compact(typed(bare)) + "\n"
    return {**obj, "metadata": {**meta, "annotations": {**ann, LAST_APPLIED: text}}}


def _run_raw(args: argparse.Namespace, method: str) -> int:
    """``create --raw URI -f FILE`` (POST) / ``replace --raw`` (PUT): the file sent as it is
    through the API server's HTTP front, the answer printed as it is."""
    from ..rawhttp import print_raw_async, raw_flag_error

    error = raw_flag_error(args, file_required=True)
    if error is not None:
        return die(error)
    path = args.filename[0]
    try:
        body = sys.stdin.buffer.read() if path == "-" else open(path, "rb").read()
    except OSError as e:
        from .get import _go_os_error

        return die(_go_os_error("open", path, e))
    codes: list[int] = []
    failures: list[str] = []

    async def send(cluster, rt) -> None:
        codes.append(await print_raw_async(cluster.api, method, args.raw, body))
        if codes[-1]:
            failures.append(args.raw)

    run_write(args, send, failures=failures)
    return codes[0] if codes else 1


def run(args: argparse.Namespace) -> int:
    if args.raw:
        if args.generator:
            return die("when paths, URLs, or stdin is provided as input, you may not specify resource "
                       "arguments as well")
        return _run_raw(args, "POST")
    if args.generator and args.filename:
        return die("when paths, URLs, or stdin is provided as input, you may not specify resource arguments as well")
    if not args.generator and not args.filename:
        return die("must specify one of -f and -k")
    if getattr(args, "gen_flags", None):
        _split_command(args)  # (flags after NAME, --dry-run and -o among them)
    dry_run = dry_run_strategy(args.dry_run)
    printer = ObjectPrinter.from_args(args)
    validation = field_validation(args.validate)
    docs = []
    try:
        for f in args.filename:
            docs.extend(load(f, recursive=args.recursive, directive=validation))
    except ManifestError as e:
        return die(str(e))
    if args.selector:  # kubectl's builder keeps the documents whose own labels match
        from ...api import selectors

        try:
            match = selectors.parse_label_selector(args.selector)
        except Exception as e:  # noqa: BLE001 - kubectl's words for a selector that does not parse
            return die(f'the provided selector "{args.selector}" is not valid: {getattr(e, "message", e)}')
        docs = [d for d in docs if not isinstance(d.obj, dict)
                or match.matches(((d.obj or {}).get("metadata") or {}).get("labels") or {})]
    if args.filename and not docs:
        return die("no objects passed to create")
    suffix = dry_run_suffix(dry_run)
    failures: list[str] = []

    async def body(cluster, rt) -> None:
        api = cluster.api
        items: list[tuple[Any, dict[str, Any], str | None]] = []
        if args.generator:
            obj = _generated(args, api.rng)
            items.append((by_kind(obj["apiVersion"], obj["kind"]), obj, None))
        for doc in docs:
            try:
                items.append((resource_for(doc, api), doc.obj, doc.source))
            except ManifestError as e:
                failures.append(f"error: {e}")
        for info, obj, source in items:
            name = (obj.get("metadata") or {}).get("name", "")
            ns = None
            if info.namespaced:
                ns = (obj.get("metadata") or {}).get("namespace") or args.namespace or "default"
            if source is not None and validation == "Warn":
                for warning in unknown_field_warnings(obj, api):
                    print_warning(api, warning)
            if source is not None and ns is not None:  # kubectl's builder sets a manifest's namespace
                obj = {**obj, "metadata": {**obj.get("metadata", {}), "namespace": ns}}
            if args.save_config:
                obj = saved_config(obj, typed_object=source is None)
            try:
                if dry_run == "client":  # what would be sent
                    out = obj
                else:
                    out = api.create(info, obj, namespace=ns, dry_run=dry_run == "server",
                                     field_manager=args.field_manager,
                                     field_validation=validation if source is not None else "Strict")
            except errors.StatusError as e:
                context = f'error when creating "{source}": ' if source else ""
                failures.append(server_error(e, context))
                continue
            # a generator's object is typed in kubectl (and so is what its typed client gets back)
            printer.print(out, f"{display_name(info, name)} created{suffix}", go_struct=source is None)

    run_write(args, body, create=True, dry_run=dry_run != "none", failures=failures)
    for line in failures:
        print(line, file=sys.stderr)
    return 1 if failures else 0
