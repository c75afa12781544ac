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

This module is also the home of what the mutating commands share about
``--dry-run`` and ``-o`` (:func:`add_dry_run_flag`, :func:`dry_run_strategy`,
:func:`add_output_flag`, :class:`ObjectPrinter`, :func:`typed`), used by
``replace``, ``taint``, ``drain`` and ``rollout undo``.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
from typing import Any, get_args, get_origin

import attrs
from ruamel.yaml.comments import TaggedScalar

from ...api import errors
from ...api.manifest import ManifestError, resource_for
from ...api.meta import random_suffix
from ...api.quantity import parse_quantity
from ...api.resources import by_kind
from ...api.schema import kind_class
from ...api.schema.fields import Quantity, wire_name
from ...api.schema.meta import ObjectMeta
from ..output import die, display_name, dry_run_suffix, server_error
from ..printing import (JSONPathError, jsonpath_text, name_of, parse_jsonpath, strip_managed_fields, to_json,
                        to_yaml)
from ..parser import CommandParser
from ..targets import add_run_flags, run_write
from ..validate import add_validate_flag, field_validation, load, unknown_field_warnings

FIELD_MANAGER = "kubectl-create"


# --------------------------------------------------------------------------- --dry-run and -o (shared)

#: pflag's ``NoOptDefVal`` of kubectl's ``--dry-run``: the value of the bare flag.
DRY_RUN_BARE = "unchanged"
#: What Go's ``strconv.ParseBool`` reads as true / false.
_GO_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_GO_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def add_dry_run_flag(p: argparse.ArgumentParser, default: Any = "none") -> None:
    """kubectl's ``--dry-run[=none|server|client]`` (``cmdutil.AddDryRunFlag``), read with
    :func:`dry_run_strategy`; the bare flag stands for :data:`DRY_RUN_BARE`.

    As argparse's optional values go, the bare flag takes the next word when it is not a
    flag (``--dry-run node-1``), where pflag would leave it a positional.
    """
    p.add_argument("--dry-run", nargs="?", const=DRY_RUN_BARE, default=default, metavar="none|server|client",
                   help="client: print what would be sent; server: have the server check it; nothing is kept")


def _deprecation(message: str) -> None:
    """kubectl's deprecation warning of ``--dry-run`` on stderr, as ``Warning: …`` (kubectl's
    klog line also carries the wall-clock time and its pid, which k8semu's output does not)."""
    print(f"Warning: {message}", file=sys.stderr)


def dry_run_strategy(value: str | None) -> str:
    """kubectl's ``GetDryRunStrategy``: ``"none"``, ``"client"`` or ``"server"`` from the flag's value.

    A boolean as Go's ``strconv.ParseBool`` reads one (``true``, ``1``, ``F``, …) is the old
    form: true means client, false none, with klog's warning ``--dry-run=true is deprecated
    (boolean value) and can be replaced with --dry-run=client.``; the bare flag means client,
    warning ``--dry-run is deprecated and can be replaced with --dry-run=client.``.

    Raises:
        ValueError: ``Invalid dry-run value (bogus). Must be "none", "server", or "client".``
    """
    value = "none" if value is None else value
    if value in _GO_TRUE or value in _GO_FALSE:
        mode = "client" if value in _GO_TRUE else "none"
        _deprecation(f"--dry-run={value} is deprecated (boolean value) and can be replaced with --dry-run={mode}.")
        return mode
    if value == DRY_RUN_BARE:
        _deprecation("--dry-run is deprecated and can be replaced with --dry-run=client.")
        return "client"
    if value in ("none", "client", "server"):
        return value
    raise ValueError(f'Invalid dry-run value ({value}). Must be "none", "server", or "client".')


def add_output_flag(p: argparse.ArgumentParser, default: Any = "") -> None:
    """``-o/--output`` of a mutating command, printed by :class:`ObjectPrinter`."""
    p.add_argument("-o", "--output", default=default, metavar="FORMAT",
                   help="json|yaml|name|jsonpath=TEMPLATE: print the object instead of the line")


def _go_ordered(value: Any, tp: Any) -> Any:
    """``value`` (of schema type ``tp``) as ``encoding/json`` renders the Go struct: keys in
    field order (a map's sorted), every ObjectMeta with ``creationTimestamp`` (``null`` when
    unset), quantities in their canonical form (``8388608Ki`` -> ``8Gi``)."""
    if get_origin(tp) is not None and type(None) in get_args(tp):  # X | None
        tp = next(a for a in get_args(tp) if a is not type(None))
    if tp is Quantity:
        try:
            return str(parse_quantity(value))
        except ValueError:
            return value
    if attrs.has(tp) and isinstance(value, dict):
        attrs.resolve_types(tp)
        out: dict[str, Any] = {}
        for a in attrs.fields(tp):
            name = wire_name(a)
            if name in value:
                out[name] = _go_ordered(value[name], a.type)
            elif tp is ObjectMeta and name == "creationTimestamp":
                out[name] = None
        return {**out, **{k: v for k, v in value.items() if k not in out}}
    if get_origin(tp) is tuple and isinstance(value, list):
        return [_go_ordered(v, get_args(tp)[0]) for v in value]
    if isinstance(value, dict):  # a Go map (map[string]T, or free-form JSON): keys sorted
        item = get_args(tp)[1] if get_origin(tp) is dict else Any
        return {k: _go_ordered(value[k], item) for k in sorted(value)}
    if isinstance(value, list):
        return [_go_ordered(v, Any) for v in value]
    return value


def typed(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as kubectl prints an object it decoded into its Go type (a generator's, or
    what a typed client got back): in the struct's field order with ``kind`` before
    ``apiVersion`` (Go's ``TypeMeta``), ``creationTimestamp: null`` in every ObjectMeta
    without one, canonical quantities. A kind the schema does not know is left as it is."""
    try:
        cls = kind_class(f"{obj.get('apiVersion')}/{obj.get('kind')}")
    except KeyError:
        return obj
    out = _go_ordered(obj, cls)
    return {k: out[k] for k in ("kind", "apiVersion") if k in out} | out


def _yaml_nulls(value: Any) -> Any:
    """``value`` with each ``None`` as a YAML scalar that prints ``null``, as go-yaml writes it
    (:func:`~k8semu.cli.printing.to_yaml` would leave the value empty: ``creationTimestamp:``)."""
    if value is None:
        return TaggedScalar("null", tag="tag:yaml.org,2002:null")
    if isinstance(value, dict):
        return {k: _yaml_nulls(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_yaml_nulls(v) for v in value]
    return value


class ObjectPrinter:
    """kubectl's printer of a mutating command (``PrintFlags.ToPrinter``), for one ``-o``:

    - none: the command's line (``deployment.apps/web created (dry run)``);
    - ``name``: ``deployment.apps/web``;
    - ``yaml``: the object, ``---`` before each one after the first (one printer's count);
    - ``json``: the object as Go's ``json.MarshalIndent`` writes it — keys sorted for an
      object kubectl holds unstructured (``-f`` manifests, what such a request returns),
      in Go struct order (:func:`typed`) for one it holds typed;
    - ``jsonpath=TEMPLATE``.

    ``metadata.managedFields`` is left out (kubectl's ``--show-managed-fields=false``).

    Raises:
        ValueError: kubectl's ``unable to match a printer suitable for the output format "wide",
            allowed formats are: …``, or a template that does not parse.
    """

    def __init__(self, fmt: str | None) -> None:
        self.fmt = fmt or ""
        self.count = 0
        if self.fmt.startswith("jsonpath="):
            try:
                parse_jsonpath(self.fmt.split("=", 1)[1])
            except JSONPathError as e:
                raise ValueError(f"error parsing jsonpath {self.fmt.split('=', 1)[1]}, {e}") from None
        elif self.fmt not in ("", "yaml", "json", "name"):
            raise ValueError(f'unable to match a printer suitable for the output format "{self.fmt}", allowed '
                             "formats are: go-template,go-template-file,json,jsonpath,jsonpath-as-json,"
                             "jsonpath-file,name,template,templatefile,yaml")

    def print(self, obj: dict[str, Any], line: str, *, go_struct: bool = False) -> None:
        """Print ``obj`` in the format (``line`` when there is none); ``go_struct``: kubectl
        holds the object typed (:func:`typed`)."""
        self.count += 1
        if not self.fmt:
            print(line)
            return
        if self.fmt == "name":
            print(name_of(obj))
            return
        obj = strip_managed_fields(typed(obj) if go_struct else obj)
        if self.fmt == "yaml":
            sys.stdout.write(("---\n" if self.count > 1 else "") + to_yaml(_yaml_nulls(obj)))
        elif self.fmt == "json" and not go_struct:
            sys.stdout.write(to_json(obj))
        elif self.fmt == "json":  # printing.to_json, in the struct's order instead of sorted
            text = json.dumps(obj, indent=4, ensure_ascii=False)
            sys.stdout.write(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") + "\n")
        else:
            sys.stdout.write(jsonpath_text(self.fmt.split("=", 1)[1], obj))


def register(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("create", help="create objects from manifests or kubectl's generators")
    c.add_argument("-f", "--filename", action="append", default=[], help="manifest file, directory or -")
    c.add_argument("-R", "--recursive", action="store_true")
    c.add_argument("-n", "--namespace", help="namespace (default: default)")
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


def _generator_flags(p: argparse.ArgumentParser) -> None:
    """The flags every generator takes after NAME too: ``-n`` (kept apart: ``create -n x``
    before the generator must stand), ``--dry-run`` and ``-o`` (set only when given there)."""
    p.add_argument("-n", "--namespace", dest="gen_namespace", default=argparse.SUPPRESS)
    add_dry_run_flag(p, default=argparse.SUPPRESS)
    add_output_flag(p, default=argparse.SUPPRESS)


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


def run(args: argparse.Namespace) -> int:
    if args.generator and args.filename:
        return die("when paths, URLs, or stdin is provided as input, you may not specify resource arguments as well")
    if not args.generator and not args.filename:
        return die("must specify one of -f and -k")
    if getattr(args, "gen_flags", None):
        _split_command(args)  # (flags after NAME, --dry-run and -o among them)
    dry_run = dry_run_strategy(args.dry_run)
    printer = ObjectPrinter(args.output)
    validation = field_validation(args.validate)
    docs = []
    try:
        for f in args.filename:
            docs.extend(load(f, recursive=args.recursive, directive=validation))
    except ManifestError as e:
        return die(str(e))
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
                items.append((resource_for(doc), doc.obj, doc.source))
            except ManifestError as e:
                failures.append(f"error: {e}")
        for info, obj, source in items:
            name = (obj.get("metadata") or {}).get("name", "")
            ns = None
            if info.namespaced:
                ns = (obj.get("metadata") or {}).get("namespace") or args.namespace or "default"
            if source is not None and validation == "Warn":
                for warning in unknown_field_warnings(obj):
                    print(f"Warning: {warning}", file=sys.stderr)
            try:
                if dry_run == "client":  # what would be sent (kubectl's builder sets a manifest's namespace)
                    out = obj if source is None or ns is None else {
                        **obj, "metadata": {**obj.get("metadata", {}), "namespace": ns}}
                else:
                    out = api.create(info, obj, namespace=ns, dry_run=dry_run == "server", field_manager=FIELD_MANAGER,
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
