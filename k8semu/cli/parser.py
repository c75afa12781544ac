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
  :func:`k8semu.cli.targets.intermixed`).
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any, NoReturn, Sequence

__all__ = ["CommandParser", "GLOBAL_FLAGS", "add_global_flags", "usage_message"]

#: The global flags: (flags, keyword arguments of ``add_argument``). Their one home.
GLOBAL_FLAGS: tuple[tuple[tuple[str, ...], dict[str, Any]], ...] = (
    (("--cluster",), {"metavar": "PATH",
                      "help": "the cluster's event-log file (default $K8SEMU_CLUSTER or ./.k8semu/cluster.log)"}),
)


def add_global_flags(parser: argparse.ArgumentParser) -> None:
    """Add :data:`GLOBAL_FLAGS` to ``parser`` (every :class:`CommandParser` does so itself).

    Their default is ``argparse.SUPPRESS``: a parser sets the attribute only
    when the flag is given there, so a nested command's parser never
    overwrites a value given before the command; readers use ``getattr(args,
    "cluster", None)`` (:func:`k8semu.cli.session.cluster_path`).
    """
    group = parser.add_argument_group("global options")
    for flags, kwargs in GLOBAL_FLAGS:
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


class CommandParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` for ``k8semu`` and each of its (nested) commands.

    Adds the global flags itself; nested parsers made by ``add_subparsers``
    are of the same class (argparse's default ``parser_class``). Unknown
    arguments are an error of the innermost command that saw them.

    Attributes:
        intermixed: parse with ``parse_known_intermixed_args`` (flags between positionals).
    """

    intermixed = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._parsing = 0
        # a word that starts with "-" and a digit is a value, not a flag: negative numbers and
        # Go durations (`advance -5s`, `--for -1m`) reach the command, which says what is wrong
        # with them (argparse's own rule knows only plain numbers such as -5 or -1.5)
        self._negative_number_matcher = _NEGATIVE_VALUE
        add_global_flags(self)

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        """argparse's ``parse_known_args``, but leftover arguments are a usage error here.

        ``parse_known_intermixed_args`` calls back into this method; those inner
        calls are argparse's own.
        """
        if self._parsing:
            return super().parse_known_args(args, namespace)
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

    def error(self, message: str) -> NoReturn:
        """Print kubectl's usage error (``error: …`` + ``See '<prog> --help' for usage.``); exit 1."""
        sys.stderr.write(f"error: {usage_message(self, message)}\nSee '{self.prog} --help' for usage.\n")
        self.exit(1)
