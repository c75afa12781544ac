"""The ``k8semu`` command line: one parser class, the global flags, kubectl's usage errors.

Every parser of the command tree (the root, each command, each nested
command such as ``rollout status``) is a :class:`CommandParser`, so:

- the **global flags** (:data:`GLOBAL_FLAGS`, added by :func:`add_global_flags`)
  are accepted anywhere on the line, before or after the command, as kubectl
  accepts ``--kubeconfig``/``--context`` anywhere (``k8semu get pods --cluster
  x.log`` = ``k8semu --cluster x.log get pods``; the last one given wins);
- a **usage error** prints as kubectl's (cobra's flag-error function): one
  ``error: <what>`` line in pflag's words where there is one (``unknown flag:
  --foo``, ``unknown shorthand flag: 'z' in -z``, ``flag needs an argument:
  --output``, ``unknown command "x" for "k8semu"``), then ``See 'k8semu get
  --help' for usage.`` naming the command's own path; exit code 1 (argparse's
  default is a usage block and 2). ``--help`` still prints help and exits 0;
- a word that starts with ``-`` and a digit (``-5``, ``-5s``) is a value, not a
  flag, as pflag takes the word after a flag that needs one: ``advance -5s``
  and ``--for -1m`` reach the command, which refuses a negative duration in
  one line of its own;
- a command that lets flags sit between its positionals (``label pods --all
  app=web``) sets :attr:`CommandParser.intermixed` (see
  :func:`k8semu.cli.targets.intermixed`);
- the **root flags** (:data:`ROOT_FLAGS`: ``-n``/``--namespace``), kubectl's
  global flags that k8semu's commands define themselves, are accepted before
  the command too and apply to it as if given after it (``k8semu -n
  kube-system get cm`` = ``k8semu get cm -n kube-system``; given in both
  places, the one after the command wins, as pflag's last value does).
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any, NoReturn, Sequence

__all__ = ["CommandParser", "GLOBAL_FLAGS", "ROOT_FLAGS", "GoBool", "GoDuration", "add_global_flags", "go_bool",
           "go_parse_duration", "usage_message"]

#: The global flags: (flags, keyword arguments of ``add_argument``). Their one home.
GLOBAL_FLAGS: tuple[tuple[tuple[str, ...], dict[str, Any]], ...] = (
    (("--cluster",), {"metavar": "PATH",
                      "help": "the cluster's event-log file (default $K8SEMU_CLUSTER or ./.k8semu/cluster.log)"}),
)

#: kubectl's global flags that the commands define themselves (each its own ``-n``), so only the
#: root parser has them: given before the command, they are the command's starting values
#: (:class:`CommandParser`). Their one home.
ROOT_FLAGS: tuple[tuple[tuple[str, ...], dict[str, Any]], ...] = (
    (("-n", "--namespace"), {"metavar": "NS", "help": "the namespace of the command (as its own -n)"}),
)
_ROOT_DESTS = tuple(flags[-1].lstrip("-").replace("-", "_") for flags, _ in ROOT_FLAGS)


def add_global_flags(parser: argparse.ArgumentParser, *, root: bool = False) -> None:
    """Add :data:`GLOBAL_FLAGS` to ``parser`` (every :class:`CommandParser` does so itself),
    and :data:`ROOT_FLAGS` to the ``root`` parser.

    Their default is ``argparse.SUPPRESS``: a parser sets the attribute only
    when the flag is given there, so a nested command's parser never
    overwrites a value given before the command; readers use ``getattr(args,
    "cluster", None)`` (:func:`k8semu.cli.session.cluster_path`).
    """
    group = parser.add_argument_group("global options")
    for flags, kwargs in GLOBAL_FLAGS + (ROOT_FLAGS if root else ()):
        group.add_argument(*flags, default=argparse.SUPPRESS, **kwargs)


_UNRECOGNIZED = re.compile(r"unrecognized arguments: (.*)", re.S)
_NEEDS_VALUE = re.compile(r"argument (\S+): expected one argument")
_BAD_INT = re.compile(r"argument (\S+): invalid int value: '(.*)'", re.S)
_BAD_CHOICE = re.compile(r"argument (\S+): invalid choice: '(.*?)' \(choose from")
#: What :class:`CommandParser` takes for a (negative) value rather than a flag: ``-5``, ``-1.5``, ``-5s``, ``-.5m``.
_NEGATIVE_VALUE = re.compile(r"^-\.?\d")


def _pflag_name(option_strings: str) -> tuple[str, str | None]:
    """``-o/--output`` -> (``--output``, ``o``); ``--for`` -> (``--for``, None)."""
    names = option_strings.split("/")
    long = next((n for n in names if n.startswith("--")), names[-1])
    short = next((n[1:] for n in names if len(n) == 2 and n.startswith("-") and n[1] != "-"), None)
    return long, short


def usage_message(parser: argparse.ArgumentParser, message: str) -> str:
    """argparse's error ``message`` in kubectl's (pflag's / cobra's) words, where they differ.

    ``unrecognized arguments: --foo x`` -> ``unknown flag: --foo`` (the first
    unknown flag; ``-z`` -> ``unknown shorthand flag: 'z' in -z``); ``argument
    -o/--output: expected one argument`` -> ``flag needs an argument:
    --output``; an invalid int -> ``invalid argument "x" for "-r, --replicas"
    flag: strconv.ParseInt: parsing "x": invalid syntax``; an unknown command
    -> ``unknown command "x" for "k8semu rollout"``. Anything else unchanged.
    """
    m = _UNRECOGNIZED.fullmatch(message)
    if m:
        for word in m.group(1).split():
            if word.startswith("--") and len(word) > 2:
                return f"unknown flag: {word.split('=', 1)[0]}"
            if word.startswith("-") and len(word) > 1 and not word[1:2].isdigit():
                return f"unknown shorthand flag: '{word[1]}' in {word}"
        return message
    m = _NEEDS_VALUE.fullmatch(message)
    if m:
        long, _ = _pflag_name(m.group(1))
        return f"flag needs an argument: {long}"
    m = _BAD_INT.fullmatch(message)
    if m:
        long, short = _pflag_name(m.group(1))
        name = f"-{short}, {long}" if short else long
        value = m.group(2)
        return f'invalid argument "{value}" for "{name}" flag: strconv.ParseInt: parsing "{value}": invalid syntax'
    m = _BAD_CHOICE.match(message)
    if m:
        commands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if any(m.group(1) in (a.metavar, a.dest) for a in commands):
            return f'unknown command "{m.group(2)}" for "{parser.prog}"'
    return message


#: What Go's ``strconv.ParseBool`` reads as true / false.
_GO_BOOLS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
             "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}


def go_bool(text: str) -> bool | None:
    """Go's ``strconv.ParseBool``: True, False, or None for what it refuses."""
    return _GO_BOOLS.get(text)


class GoBool(argparse.Action):
    """A pflag boolean flag: ``--flag`` is true, ``--flag=false`` (any spelling Go's
    ``strconv.ParseBool`` reads) sets it, and the word after a bare ``--flag`` is never its
    value (``get --server-print pods``: ``pods`` stays a positional) — :class:`CommandParser`
    writes a bare one as ``--flag=true`` before parsing. A value Go refuses is pflag's usage
    error: ``invalid argument "x" for "--flag" flag: strconv.ParseBool: parsing "x": invalid
    syntax`` (``"-A, --all-namespaces"`` for a flag with a shorthand).

    Add it with ``action=GoBool`` (and a ``default``); the attribute is a ``bool``.
    """

    def __init__(self, option_strings: Sequence[str], dest: str, default: Any = False, **kwargs: Any) -> None:
        kwargs.setdefault("metavar", "BOOL")
        super().__init__(option_strings, dest, nargs="?", const="true", default=default, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        value = go_bool(str(values))
        if value is None:
            long, short = _pflag_name("/".join(self.option_strings))
            name = f"-{short}, {long}" if short else long
            parser.error(f'invalid argument "{values}" for "{name}" flag: strconv.ParseBool: parsing '
                         f'"{values}": invalid syntax')
        setattr(namespace, self.dest, value)


_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_GO_NUMBER = re.compile(r"(\d*)(\.\d*)?")


def go_parse_duration(text: str) -> float:
    """Go's ``time.ParseDuration`` (what pflag's duration flags read), in seconds: ``90s``,
    ``1h30m``, ``1.5h``, ``-5m``, ``0``; no days, no bare numbers.

    Raises:
        ValueError: Go's words: ``time: invalid duration "x"``, ``time: missing unit in duration
            "5"``, ``time: unknown unit "d" in duration "5d"``.
    """
    quoted = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    s, sign = text, 1.0
    if s[:1] in ("-", "+"):
        sign, s = (-1.0 if s[0] == "-" else 1.0), s[1:]
    if s == "0":
        return 0.0
    if not s:
        raise ValueError(f"time: invalid duration {quoted}")
    total = 0.0
    while s:
        m = _GO_NUMBER.match(s)
        whole, frac = m.group(1), m.group(2) or ""
        if not whole and frac in ("", "."):
            raise ValueError(f"time: invalid duration {quoted}")
        s = s[m.end():]
        unit = re.match(r"[^\d.]*", s).group(0)
        if not unit:
            raise ValueError(f"time: missing unit in duration {quoted}")
        if unit not in _GO_UNITS:
            raise ValueError(f'time: unknown unit "{unit}" in duration {quoted}')
        s = s[len(unit):]
        total += float((whole or "0") + (frac if frac != "." else "")) * _GO_UNITS[unit]
    return sign * total


class GoDuration(argparse.Action):
    """A pflag duration flag (``--since=5m``): the value in seconds, read by
    :func:`go_parse_duration`; one Go refuses is pflag's usage error ``invalid argument "x" for
    "--since" flag: time: invalid duration "x"``."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        try:
            seconds = go_parse_duration(str(values))
        except ValueError as e:
            long, short = _pflag_name("/".join(self.option_strings))
            name = f"-{short}, {long}" if short else long
            parser.error(f'invalid argument "{values}" for "{name}" flag: {e}')
        setattr(namespace, self.dest, seconds)


class _Commands(argparse._SubParsersAction):
    """argparse's action of a command word, handing the :data:`ROOT_FLAGS` given so far to the
    command's parser (:attr:`CommandParser.inherited`), which parses into a namespace of its own."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        chosen = self._name_parser_map.get(values[0])
        if isinstance(chosen, CommandParser):
            chosen.inherited = {d: getattr(namespace, d) for d in _ROOT_DESTS if hasattr(namespace, d)}
        super().__call__(parser, namespace, values, option_string)


class CommandParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` for ``k8semu`` and each of its (nested) commands.

    Adds the global flags itself (and :data:`ROOT_FLAGS` when ``root``);
    nested parsers made by ``add_subparsers`` are of the same class
    (argparse's default ``parser_class``). Unknown arguments are an error of
    the innermost command that saw them.

    Attributes:
        intermixed: parse with ``parse_known_intermixed_args`` (flags between positionals).
        inherited: the :data:`ROOT_FLAGS` values given before this command: its namespace
            starts with them, so they stand unless the command's own flag is given.
    """

    intermixed = False

    def __init__(self, *args: Any, root: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.inherited: dict[str, Any] = {}
        self.register("action", "parsers", _Commands)
        self._parsing = 0
        # a word that starts with "-" and a digit is a value, not a flag: negative numbers and
        # Go durations (`advance -5s`, `--for -1m`) reach the command, which says what is wrong
        # with them (argparse's own rule knows only plain numbers such as -5 or -1.5)
        self._negative_number_matcher = _NEGATIVE_VALUE
        add_global_flags(self, root=root)

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        """argparse's ``parse_known_args``, but leftover arguments are a usage error here.

        ``parse_known_intermixed_args`` calls back into this method; those inner
        calls are argparse's own.
        """
        if self._parsing:
            return super().parse_known_args(args, namespace)
        if namespace is None and self.inherited:
            namespace = argparse.Namespace(**self.inherited)
        if args is not None:
            args = self._bare_bools(list(args))
        self._parsing += 1
        try:
            if self.intermixed:
                ns, extras = self.parse_known_intermixed_args(args, namespace)
            else:
                ns, extras = super().parse_known_args(args, namespace)
        finally:
            self._parsing -= 1
        if extras:
            self.error("unrecognized arguments: " + " ".join(extras))
        return ns, extras

    def _bare_bools(self, args: list[str]) -> list[str]:
        """``args`` with each bare :class:`GoBool` flag written ``--flag=true`` (so it takes no
        word after it), up to a ``--`` (what follows is not flags)."""
        out = []
        for i, word in enumerate(args):
            if word == "--":
                return out + args[i:]
            action = self._option_string_actions.get(word)
            if isinstance(action, GoBool):
                long = next((o for o in action.option_strings if o.startswith("--")), word)
                word = f"{long}=true"
            out.append(word)
        return out

    def error(self, message: str) -> NoReturn:
        """Print kubectl's usage error (``error: …`` + ``See '<prog> --help' for usage.``); exit 1."""
        sys.stderr.write(f"error: {usage_message(self, message)}\nSee '{self.prog} --help' for usage.\n")
        self.exit(1)
