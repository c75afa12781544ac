"""Which objects a write command acts on, resolved as kubectl's resource builder does.

kubectl's commands that change the cluster (``delete``, ``label``, ``scale``,
``rollout``, …) name their objects the same ways, all handled here:

- ``TYPE NAME…`` — one type (or a comma-separated list, ``deploy,svc``) and
  names; kubectl does not read the objects first, so a missing one surfaces
  as the server's NotFound when the verb is sent;
- ``TYPE/NAME…`` — every argument in that form (mixing the two forms is
  kubectl's error ``there is no need to specify a resource type as a
  separate argument …``);
- ``-f FILE`` — the objects of manifests (type, namespace and name from each
  document; the namespace must agree with ``-n`` when both are given), read
  without client-side validation as kubectl's commands do, unless the
  command has ``--validate`` (``replace``; :mod:`k8semu.cli.validate`);
- ``TYPE -l SELECTOR`` / ``TYPE --all`` — a LIST of each type (in
  ``-n NS``, or every namespace with ``-A``), in the server's order.

:func:`resolve` returns :class:`Target` triples and raises
:class:`TargetError` carrying kubectl's client-side message (printed as
``error: <message>``). :func:`run_write` opens the cluster and runs one
command's API calls inside a session of running components, then lets the
cluster settle (or run ``--for``), as every write command does.
"""

from __future__ import annotations

import argparse
from typing import Any, Awaitable, Callable, Iterable, TypeVar

import attrs

from ..api.errors import StatusError
from ..api.manifest import ManifestError, resource_for
from ..api.resources import ResourceInfo, lookup
from ..sim.runtime import Runtime
from .durations import parse_duration
from .output import list_error, server_error
from .session import open_cluster, run_session
from .validate import field_validation, load

__all__ = [
    "Target", "TargetError", "resolve", "resource_type", "split_type_name", "add_target_flags",
    "add_run_flags", "run_write", "namespace_of", "resolve_args", "intermixed", "file_targets",
    "single_item_implied", "add_filename_flags", "run_local_or_write", "LOCAL_SERVER_DRY_RUN", "current_object", "local_targets",
]

T = TypeVar("T")

_NO_RESOURCES = (
    "You must provide one or more resources by argument or filename.\n"
    "Example resource specifications include:\n"
    "   '-f rsrc.yaml'\n"
    "   '--filename=rsrc.json'\n"
    "   '<resource> <name>'\n"
    "   '<resource>'"
)
_COMBINED = (
    "there is no need to specify a resource type as a separate argument when passing arguments in "
    "resource/name form (e.g. 'kubectl get resource/<resource_name>' instead of "
    "'kubectl get resource resource/<resource_name>'"
)


class TargetError(ValueError):
    """A client-side refusal; ``str()`` is kubectl's message without ``error: ``."""


@attrs.frozen
class Target:
    """One object a command acts on.

    Attributes:
        info: its resource.
        namespace: its namespace (None for cluster-scoped kinds).
        name: its name.
        source: the manifest file it came from (``-f``), else None.
        obj: the manifest's object (``-f``) or the listed object (``-l`` / ``--all``), else None.
        problem: why kubectl's builder refuses it (a ``-f`` document in another namespace than
            ``-n``), when :func:`file_targets` collects errors instead of raising.
    """

    info: ResourceInfo
    namespace: str | None
    name: str
    source: str | None = None
    obj: dict[str, Any] | None = None
    problem: str | None = None


def resource_type(text: str, api: Any = None) -> ResourceInfo:
    """What a user typed as a type (``deploy``, ``deployments.apps``, ``no``; with ``api``, an
    APIServer, also its custom resources: ``ct``, ``crontabs.stable.example.com``).

    Raises:
        TargetError: ``the server doesn't have a resource type "foo"``.
    """
    found = lookup(text) or (api.custom.lookup(text) if api is not None and hasattr(api, "custom") else [])
    if not found:
        raise TargetError(f'the server doesn\'t have a resource type "{text}"')
    return found[0]


def split_type_name(text: str, api: Any = None) -> tuple[ResourceInfo, str]:
    """``deployment/web`` -> (deployments, ``web``).

    Raises:
        TargetError: an unknown type, or an empty name (``arguments in resource/name
            form must have a single resource and name``).
    """
    kind, _, name = text.partition("/")
    if not kind or not name or "/" in name:
        raise TargetError("arguments in resource/name form must have a single resource and name")
    return resource_type(kind, api), name


def namespace_of(args: argparse.Namespace) -> str:
    """``-n`` or ``default``."""
    return getattr(args, "namespace", None) or "default"


def _scoped(info: ResourceInfo, ns: str | None) -> str | None:
    return ns if info.namespaced else None


def resolve(
    api: Any,
    positional: list[str],
    *,
    filenames: Iterable[str] = (),
    recursive: bool = False,
    selector: str | None = None,
    select_all: bool = False,
    namespace: str | None = None,
    all_namespaces: bool = False,
    field_selector: str | None = None,
    validation: str = "Ignore",
) -> list[Target]:
    """Resolve a command's resource arguments into targets, as kubectl's builder.

    Args:
        api: the API server (listed for ``-l`` / ``--all``).
        positional: ``["deploy", "web", "api"]``, ``["deploy/web", "svc/web"]`` or ``["pods"]``.
        filenames: ``-f`` paths (files, directories, ``-``).
        selector: ``-l`` label selector.
        select_all: ``--all``.
        namespace: ``-n`` (None: ``default`` for names, the objects' own for files).
        all_namespaces: ``-A`` (lists span every namespace).
        validation: how ``-f`` documents are read (:func:`k8semu.cli.validate.load`):
            ``Ignore`` (no client-side validation) unless the command has ``--validate``.

    Returns:
        Targets in kubectl's order: files in document order; names as given;
        listed objects in the server's (namespace, name) order, type by type.

    Raises:
        TargetError: kubectl's client-side errors (unknown type, no name,
            mixed forms, an unreadable manifest, namespace mismatch).
        StatusError: the LIST for a selector failed (e.g. a bad selector, 400).
    """
    ns = namespace or "default"
    filenames = list(filenames)
    if select_all and (selector or field_selector):
        raise TargetError("setting 'all' parameter but found a non empty selector. ")
    if filenames:
        if positional:
            raise TargetError("when paths, URLs, or stdin is provided as input, you may not specify "
                              "resource arguments as well")
        return _from_files(filenames, recursive, namespace, validation, api)
    if not positional:
        raise TargetError(_NO_RESOURCES)
    if any("/" in a for a in positional):
        if "/" not in positional[0]:
            raise TargetError(_COMBINED)
        if selector or select_all or field_selector:
            raise TargetError("name cannot be provided when a selector is specified")
        out = []
        for a in positional:
            if "/" not in a:
                raise TargetError(_COMBINED)
            info, name = split_type_name(a, api)
            out.append(Target(info, _scoped(info, ns), name))
        return out
    infos = [resource_type(t, api) for t in positional[0].split(",") if t]
    names = positional[1:]
    if names:
        if selector or select_all or field_selector:
            raise TargetError("name cannot be provided when a selector is specified")
        return [Target(info, _scoped(info, ns), n) for info in infos for n in names]
    if not (selector is not None or select_all or field_selector):
        raise TargetError("resource(s) were provided, but no name was specified")
    out = []
    for info in infos:
        list_ns = None if all_namespaces else _scoped(info, ns)
        try:
            listed = api.list(info, namespace=list_ns, label_selector=selector or None,
                              field_selector=field_selector or None)
        except StatusError as e:
            raise list_error(e, info, selector, field_selector) from None
        for obj in listed["items"]:
            meta = obj["metadata"]
            out.append(Target(info, meta.get("namespace"), meta["name"], obj=obj))
    return out


def _from_files(filenames: list[str], recursive: bool, namespace: str | None,
                validation: str = "Ignore", api: Any = None) -> list[Target]:
    return file_targets(filenames, recursive=recursive, namespace=namespace, validation=validation, api=api)


def file_targets(filenames: Iterable[str], *, recursive: bool = False, namespace: str | None = None,
                 validation: str = "Ignore", api: Any = None, errors: list[tuple[int, str]] | None = None,
                 default_namespace: str = "default") -> list[Target]:
    """The objects of ``-f FILE|DIR|-`` (``-R``: subdirectories too), in document order: the one
    home of kubectl's ``--filename``/``--recursive`` for every command.

    Each target's namespace is the document's own, else ``namespace`` (``-n``), else
    ``default_namespace`` (``""`` for kubectl's ``-A``, which sets none); a cluster-scoped
    kind's is None.

    Args:
        namespace: ``-n`` as given (None when not given): a document naming another namespace
            is kubectl's ``the namespace from the provided object "a" does not match the
            namespace "b". You must pass '--namespace=a' to perform this operation.``
        validation: how documents are read (:func:`k8semu.cli.validate.load`).
        api: the API server, for custom resources' kinds.
        errors: None: the first problem raises (``delete``, ``label`` …). A list: kubectl's
            ``ContinueOnError`` (``get``, ``describe``): a document that cannot be used adds
            ``(how many targets come before it, its message)`` and is left out, and one in
            another namespace is returned with
            :attr:`Target.problem` set (commands report it when kubectl's builder would, after
            fetching the object or before describing it).

    Raises:
        TargetError: a path that does not exist (``the path "x" does not exist``: nothing is
            read), or, without ``errors``, the first problem.
    """
    out = []
    for f in filenames:
        try:
            docs = load(f, recursive=recursive, directive=validation)
        except ManifestError as e:
            raise TargetError(str(e)) from None
        for doc in docs:
            try:
                info = resource_for(doc, api if hasattr(api, "custom") else None)
            except ManifestError as e:  # kubectl's second line too: "ensure CRDs are installed first"
                text = f"{e}\n{e.hint}" if e.hint else str(e)
                if errors is None:
                    raise TargetError(text) from None
                errors.append((len(out), text))
                continue
            obj = doc.obj or {}
            meta = obj.get("metadata") or {}
            own = meta.get("namespace")
            problem = None
            if info.namespaced and namespace and own and own != namespace:
                problem = (f'the namespace from the provided object "{own}" does not match the namespace '
                           f'"{namespace}". You must pass \'--namespace={own}\' to perform this operation.')
                if errors is None:
                    raise TargetError(problem)
            ns = (own or namespace or default_namespace) if info.namespaced else None
            out.append(Target(info, ns, meta.get("name", ""), source=doc.source, obj=obj, problem=problem))
    return out


def single_item_implied(filenames: Iterable[str]) -> bool:
    """kubectl's builder "implies a single item" from ``-f`` when there is one path and it is a
    file (not a directory, not ``-``): then ``-o yaml|json`` of one object prints it rather than
    a ``List``, and an error stops the printing."""
    import os

    paths = list(filenames)
    return len(paths) == 1 and paths[0] != "-" and not os.path.isdir(paths[0])


def add_filename_flags(p: argparse.ArgumentParser, what: str = "the resource") -> None:
    """kubectl's ``-f/--filename`` (repeatable) and ``-R/--recursive``, read by :func:`file_targets`."""
    p.add_argument("-f", "--filename", action="append", default=[], metavar="FILE|DIR|-",
                   help=f"manifest file, directory or - (stdin) identifying {what}")
    p.add_argument("-R", "--recursive", action="store_true", help="process the directories of -f recursively")


def intermixed(p: argparse.ArgumentParser) -> None:
    """Let ``p`` (a subcommand's parser) accept flags between its positionals
    (``label pods --all app=web``), as kubectl's flag parsing does: argparse's
    ``parse_known_intermixed_args`` (:attr:`k8semu.cli.parser.CommandParser.intermixed`)."""
    p.intermixed = True  # type: ignore[attr-defined]


def add_target_flags(p: argparse.ArgumentParser, *, files: bool = True, selector: bool = True,
                     all_: bool = True, all_namespaces: bool = False, field_selector: bool = False) -> None:
    """The resource-selection flags kubectl's write commands share (and flags
    accepted between positionals, see :func:`intermixed`)."""
    intermixed(p)
    p.add_argument("resources", nargs="*", metavar="TYPE NAME | TYPE/NAME")
    p.add_argument("-n", "--namespace", help="namespace (default: default)")
    if files:
        add_filename_flags(p)
    if selector:
        p.add_argument("-l", "--selector", help="label selector")
    if field_selector:
        p.add_argument("--field-selector", help="field selector, e.g. metadata.name=web")
    if all_:
        p.add_argument("--all", dest="select_all", action="store_true", help="every object of the types")
    if all_namespaces:
        p.add_argument("-A", "--all-namespaces", action="store_true", help="list across all namespaces")


def resolve_args(api: Any, args: argparse.Namespace, positional: list[str] | None = None) -> list[Target]:
    """:func:`resolve` with the flags :func:`add_target_flags` added."""
    return resolve(
        api, list(args.resources if positional is None else positional),
        filenames=getattr(args, "filename", None) or (),
        recursive=getattr(args, "recursive", False),
        selector=getattr(args, "selector", None),
        select_all=getattr(args, "select_all", False),
        namespace=getattr(args, "namespace", None),
        all_namespaces=getattr(args, "all_namespaces", False),
        field_selector=getattr(args, "field_selector", None),
        validation=field_validation(args.validate) if hasattr(args, "validate") else "Ignore",
    )


def add_run_flags(p: argparse.ArgumentParser) -> None:
    """``--for DURATION``: let that much virtual time pass instead of settling."""
    p.add_argument("--for", dest="run_for", metavar="DURATION",
                   help="let this much virtual time pass afterwards instead of waiting to settle (e.g. 5m)")


#: kubectl's refusal of ``--local`` with ``--dry-run=server`` (label, annotate, patch, set image)
LOCAL_SERVER_DRY_RUN = "cannot specify --local and --dry-run=server - did you mean --dry-run=client?"


def current_object(api: Any, t: Target, failures: list[str]) -> dict[str, Any] | None:
    """The object a ``--local``-capable command changes: with no cluster (``api`` None) the
    file's own, else the server's; None (kubectl's ``Error from server …`` added to
    ``failures``) when the server has none."""
    if api is None:
        return dict(t.obj or {})
    try:
        return api.get(t.info, t.name, namespace=t.namespace)
    except StatusError as e:
        failures.append(server_error(e))
        return None


def local_targets(args: argparse.Namespace, positional: list[str] | None = None) -> list[Target]:
    """The ``-f`` files' objects for ``--local``: their kinds are resolved against the cluster's
    served resources when a cluster file exists (its custom resources, as kubectl asks the
    server's discovery even with ``--local``), read-only; else against the built-in kinds."""
    from .session import cluster_path

    if not cluster_path(args).exists():
        return resolve_args(None, args, positional)
    cluster = open_cluster(args, read_only=True)
    try:
        return resolve_args(cluster.api, args, positional)
    finally:
        cluster.close()


def run_local_or_write(args: argparse.Namespace, positional: list[str] | None,
                       each: Callable[[Any, list[Target]], None], *, dry_run: bool,
                       failures: list[str]) -> str | None:
    """Run ``each(api, targets)`` on the command's targets: with ``--local``, on the objects of the
    ``-f`` files with no cluster (``api`` None); otherwise in a write session (:func:`run_write`).

    Returns kubectl's error text when the targets cannot be resolved locally, else None (the
    failures ``each`` records are in ``failures``).
    """
    if getattr(args, "local", False):
        try:
            each(None, local_targets(args, positional))
        except TargetError as e:
            return str(e)
        return None

    async def body(cluster: Any, rt: Runtime) -> None:
        each(cluster.api, resolve_args(cluster.api, args, positional))

    run_write(args, body, dry_run=dry_run, failures=failures)
    return None


def run_write(args: argparse.Namespace, body: Callable[[Any, Runtime], Awaitable[T]], *,
              settle: bool = True, create: bool = False, dry_run: bool = False,
              failures: list[str] | None = None) -> T:
    """Open the cluster, run ``body(cluster, runtime)`` with every component running, then
    let the cluster settle — or run ``--for`` — and close the log.

    A command that changes nothing leaves the log as it was (see
    :func:`~k8semu.cli.session.run_session`): a dry run, one whose body raised
    at once, and one whose body recorded ``failures`` at once without any
    request succeeding.

    Args:
        settle: False to end as soon as the body returns (unless ``--for`` is given).
        create: create a default cluster when none exists (as ``apply`` and ``create`` do).
        dry_run: the command is a dry run (``--dry-run=client|server``): nothing is kept.
        failures: the list the body appends its errors to (non-empty: the command failed).

    Raises:
        FileNotFoundError: no cluster (and not ``create``); ValueError: a bad ``--for``.
    """
    run_for = parse_duration(args.run_for, allow_negative=False) if getattr(args, "run_for", None) else None
    cluster = open_cluster(args, create=create)
    try:
        result, _ = run_session(cluster, lambda rt: body(cluster, rt), settle=settle, run_for=run_for,
                                discard=dry_run, failed=None if failures is None else lambda: bool(failures))
    except BaseExceptionGroup as group:
        # Trio wraps what the body raised; surface a lone error (TargetError, StatusError) as itself
        while isinstance(group, BaseExceptionGroup) and len(group.exceptions) == 1:
            group = group.exceptions[0]
        if isinstance(group, BaseExceptionGroup):
            raise
        raise group from None
    finally:
        cluster.close()
    return result
