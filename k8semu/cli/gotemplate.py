"""Go's ``text/template``, the part kubectl users use: ``-o go-template=…`` / ``go-template-file=…``.

No well-kept Python library implements Go templates (the one on PyPI wraps Go
through CGo), so this module is a small evaluator written after Go's
``text/template`` (lexer, parser, executor), with its error messages:

* **Syntax**: text and ``{{ }}`` actions, trim markers ``{{- `` / `` -}}``,
  comments ``{{/* */}}``; pipelines ``a | b``, parenthesised pipelines and
  field chains on them (``(index .items 0).metadata.name``); fields
  ``.a.b``, ``$``, ``$x.a``, ``.``; literals (``"…"``, `` `…` ``, numbers,
  ``'c'``, ``true``/``false``, ``nil``); variables ``$x := …`` and ``$x = …``;
  ``if``/``else if``/``else``/``end``, ``with``/``else``/``end``,
  ``range``/``else``/``end`` (``range $i, $x := …``, ``break``, ``continue``),
  ``define``/``template``/``block``.
* **Functions**: Go's builtins (``and or not len index slice print printf
  println eq ne lt le gt ge html js urlquery``) and kubectl's own
  ``exists`` and ``base64decode``.
* **Data** is the object as kubectl gives it to the template: its unstructured
  content, whole numbers int64 (``{{printf "%d" .spec.replicas}}`` is ``2``,
  ``eq .spec.replicas 2`` is true, ``eq .spec.replicas 2.0`` is ``incompatible
  types for comparison``), maps printed ``map[k:v]``; a missing key (or a null)
  prints ``<no value>`` (with ``missingkey=error``: ``map has no entry for key
  "x"``).

Errors carry Go's wording: :class:`TemplateParseError` ``template: output:1:
unclosed action``; :class:`TemplateExecError` ``template: output:1:2:
executing "output" at <index .items 5>: error calling index: index out of
range: 5``.
"""

from __future__ import annotations

import base64
import html as _html
import math
import re
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..api.gofmt import go_float, go_quote, go_sharp_v, go_v

__all__ = ["TemplateError", "TemplateParseError", "TemplateExecError", "Template", "parse_template",
           "go_sprintf"]


class TemplateError(ValueError):
    """A template Go's ``text/template`` refuses or fails on (the message is Go's)."""


class TemplateParseError(TemplateError):
    """``template: output:LINE: MSG``."""


class TemplateExecError(TemplateError):
    """``template: output:LINE:COL: executing "output" at <NODE>: MSG``."""


# ----------------------------------------------------------------------------- lexer

@dataclass
class _Item:
    typ: str      # text, left, right, space, identifier, field, variable, dot, string, raw, number,
    #               char, bool, nil, pipe, lparen, rparen, declare, assign, comma, keyword, eof, error
    val: str
    pos: int
    line: int


_KEYWORDS = {"if", "else", "end", "range", "with", "define", "template", "block", "break", "continue"}
_SPACE = " \t\r\n"


class _Lexer:
    """Go's ``text/template/parse`` lexer (delimiters ``{{``/``}}``)."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.pos = 0
        self.start = 0
        self.line = 1
        self.start_line = 1
        self.items: list[_Item] = []
        self.paren = 0

    def run(self) -> list[_Item]:
        state: Callable[[], Any] | None = self._text
        while state is not None:
            state = state()
        return self.items

    def _emit(self, typ: str) -> None:
        self.items.append(_Item(typ, self.s[self.start:self.pos], self.start, self.start_line))
        self.start = self.pos
        self.start_line = self.line

    def _ignore(self) -> None:
        self.line += self.s.count("\n", self.start, self.pos)
        self.start = self.pos
        self.start_line = self.line

    def _next(self) -> str:
        if self.pos >= len(self.s):
            self.pos += 1  # so that backup() works at EOF
            return ""
        r = self.s[self.pos]
        self.pos += 1
        if r == "\n":
            self.line += 1
        return r

    def _backup(self) -> None:
        self.pos -= 1
        if self.pos < len(self.s) and self.s[self.pos] == "\n":
            self.line -= 1

    def _peek(self) -> str:
        return self.s[self.pos] if self.pos < len(self.s) else ""

    def _error(self, msg: str) -> None:
        self.items.append(_Item("error", msg, self.start, self.start_line))
        return None

    def _text(self) -> Any:
        i = self.s.find("{{", self.pos)
        if i < 0:
            self.pos = len(self.s)
            if self.pos > self.start:
                self.line += self.s.count("\n", self.start, self.pos)
                self._emit("text")
            self.items.append(_Item("eof", "", self.pos, self.line))
            return None
        self.pos = i
        trim = 0
        if self.s.startswith("{{- ", i) or (self.s.startswith("{{-", i) and len(self.s) > i + 3
                                              and self.s[i + 3] in _SPACE):
            trim = len(self.s[self.start:i]) - len(self.s[self.start:i].rstrip(_SPACE))
        self.pos -= trim
        self.line += self.s.count("\n", self.start, self.pos)
        if self.pos > self.start:
            self._emit("text")
        self.pos += trim
        self._ignore()
        return self._left_delim

    def _left_delim(self) -> Any:
        self.pos += 2
        trim = self.s.startswith("- ", self.pos) or (self.s.startswith("-", self.pos)
                                                    and self.pos + 1 < len(self.s)
                                                    and self.s[self.pos + 1] in _SPACE)
        after = 2 if trim else 0
        if self.s.startswith("/*", self.pos + after):
            self.pos += after
            self._ignore()
            return self._comment
        self._emit("left")
        self.pos += after
        self._ignore()
        self.paren = 0
        return self._inside

    def _comment(self) -> Any:
        self.pos += 2
        i = self.s.find("*/", self.pos)
        if i < 0:
            return self._error("unclosed comment")
        self.pos = i + 2
        right, trim = self._at_right()
        if not right:
            return self._error("comment ends before closing delimiter")
        self.pos += len(" -}}") if trim else len("}}")
        self._ignore()
        if trim:
            self._trim_following()
        return self._text

    def _at_right(self) -> tuple[bool, bool]:
        if self.s.startswith(" -}}", self.pos) or (self.pos < len(self.s) and self.s[self.pos] in _SPACE
                                                   and self.s.startswith("-}}", self.pos + 1)):
            return True, True
        if self.s.startswith("}}", self.pos):
            return True, False
        return False, False

    def _trim_following(self) -> None:
        while self.pos < len(self.s) and self.s[self.pos] in _SPACE:
            self.pos += 1
        self._ignore()

    def _right_delim(self, trim: bool) -> Any:
        if trim:
            self.pos += 1  # the space before "-}}"
            self._ignore()
            self.pos += 1  # the "-"
            self._ignore()
        self.pos += 2
        self._emit("right")
        if trim:
            self._trim_following()
        return self._text

    def _inside(self) -> Any:
        right, trim = self._at_right()
        if right:
            if self.paren == 0:
                return self._right_delim(trim)
            return self._error("unclosed left paren")
        r = self._next()
        if r == "":
            return self._error("unclosed action")
        if r in _SPACE:
            self._backup()
            return self._space
        if r == "=":
            self._emit("assign")
        elif r == ":":
            if self._next() != "=":
                return self._error("expected :=")
            self._emit("declare")
        elif r == "|":
            self._emit("pipe")
        elif r == '"':
            return self._quote
        elif r == "`":
            return self._raw_quote
        elif r == "$":
            return self._variable
        elif r == "'":
            return self._char
        elif r == ".":
            if self.pos < len(self.s) and self.s[self.pos] < "0" or self.pos >= len(self.s) \
                    or not self.s[self.pos].isdigit():
                return self._field
            self._backup()
            return self._number
        elif r in "+-" or r.isdigit():
            self._backup()
            return self._number
        elif r == "_" or r.isalnum():
            self._backup()
            return self._identifier
        elif r == "(":
            self._emit("lparen")
            self.paren += 1
        elif r == ")":
            self.paren -= 1
            if self.paren < 0:
                return self._error("unexpected right paren")
            self._emit("rparen")
        elif r == ",":
            self._emit("comma")
        elif r.isprintable() and ord(r) < 0x80:
            self._emit("char_op")
        else:
            return self._error(f"unrecognized character in action: {_rune(r)}")
        return self._inside

    def _space(self) -> Any:
        n = 0
        while True:
            r = self._peek()
            if r == "" or r not in _SPACE:
                break
            self._next()
            n += 1
            if self.s.startswith("-}}", self.pos) and n > 0:
                self._backup()
                if self.pos == self.start:
                    return self._inside
                break
        if self.pos > self.start:
            self._emit("space")
        return self._inside

    def _identifier(self) -> Any:
        while True:
            r = self._next()
            if r == "_" or (r and r.isalnum()):
                continue
            self._backup()
            word = self.s[self.start:self.pos]
            if not self._at_terminator():
                return self._error(f"bad character {_rune(self.s[self.pos])}")
            if word in _KEYWORDS:
                self._emit("keyword")
            elif word in ("true", "false"):
                self._emit("bool")
            elif word == "nil":
                self._emit("nil")
            else:
                self._emit("identifier")
            return self._inside

    def _at_terminator(self) -> bool:
        r = self._peek()
        if r == "" or r in _SPACE or r in ".,|:)(=":
            return True
        return self.s.startswith("}}", self.pos)

    def _field(self) -> Any:
        return self._field_or_variable("field")

    def _variable(self) -> Any:
        if self._at_terminator():
            self._emit("variable")
            return self._inside
        return self._field_or_variable("variable")

    def _field_or_variable(self, typ: str) -> Any:
        if self._at_terminator():
            self._emit("dot" if typ == "field" else "variable")
            return self._inside
        while True:
            r = self._next()
            if not (r == "_" or (r and r.isalnum())):
                self._backup()
                break
        if not self._at_terminator():
            return self._error(f"bad character {_rune(self.s[self.pos])}")
        self._emit(typ)
        return self._inside

    def _char(self) -> Any:
        while True:
            r = self._next()
            if r == "\\":
                if self._next() not in ("", "\n"):
                    continue
                return self._error("unterminated character constant")
            if r in ("", "\n"):
                return self._error("unterminated character constant")
            if r == "'":
                break
        self._emit("char")
        return self._inside

    def _number(self) -> Any:
        m = re.compile(r"[+-]?(0[xX][0-9a-fA-F_]+(\.[0-9a-fA-F_]*)?([pP][+-]?\d+)?|0[bB][01_]+|0[oO][0-7_]+"
                       r"|(\d[\d_]*)?\.?\d*([eE][+-]?\d+)?)i?").match(self.s, self.pos)
        end = m.end() if m else self.pos
        self.pos = max(end, self.pos + 1)
        if self.pos < len(self.s) and (self.s[self.pos].isalnum() or self.s[self.pos] == "_"):
            self.pos += 1
            return self._error(f"bad number syntax: {self.s[self.start:self.pos]!r}".replace("'", '"'))
        self._emit("number")
        return self._inside

    def _quote(self) -> Any:
        while True:
            r = self._next()
            if r == "\\":
                if self._next() not in ("", "\n"):
                    continue
                return self._error("unterminated quoted string")
            if r in ("", "\n"):
                return self._error("unterminated quoted string")
            if r == '"':
                break
        self._emit("string")
        return self._inside

    def _raw_quote(self) -> Any:
        i = self.s.find("`", self.pos)
        if i < 0:
            return self._error("unterminated raw quoted string")
        self.line += self.s.count("\n", self.pos, i)
        self.pos = i + 1
        self._emit("raw")
        return self._inside


def _rune(r: str) -> str:
    return f"U+{ord(r):04X} '{r}'"


# ----------------------------------------------------------------------------- parse tree

@dataclass
class _Node:
    kind: str            # text, action, if, range, with, list, pipe, command, field, variable, dot,
    #                      nil, bool, number, string, identifier, chain, break, continue
    pos: int = 0
    line: int = 1
    text: str = ""       # text / string value / identifier name / original token
    ident: list[str] = field(default_factory=list)   # field / variable / chain path
    value: Any = None    # number / bool / string literal value
    decl: list[str] = field(default_factory=list)    # pipe: declared variables
    is_assign: bool = False
    cmds: list["_Node"] = field(default_factory=list)  # pipe: commands; command: args
    pipe: "_Node | None" = None
    body: "_Node | None" = None
    else_: "_Node | None" = None
    nodes: list["_Node"] = field(default_factory=list)  # list
    node: "_Node | None" = None  # chain: the operand

    def __str__(self) -> str:  # Go's Node.String(), for error contexts
        k = self.kind
        if k in ("field",):
            return "".join("." + i for i in self.ident)
        if k == "variable":
            return ".".join(self.ident)
        if k == "dot":
            return "."
        if k == "nil":
            return "nil"
        if k in ("bool", "number", "string", "identifier"):
            return self.text
        if k == "chain":
            inner = str(self.node)
            if self.node is not None and self.node.kind == "pipe":
                inner = f"({inner})"
            return inner + "".join("." + i for i in self.ident)
        if k == "command":
            parts = []
            for a in self.cmds:
                parts.append(f"({a})" if a.kind == "pipe" else str(a))
            return " ".join(parts)
        if k == "pipe":
            s = ""
            if self.decl:
                s = ", ".join(self.decl) + (" = " if self.is_assign else " := ")
            return s + " | ".join(str(c) for c in self.cmds)
        if k == "action":
            return "{{" + str(self.pipe) + "}}"
        if k == "template":
            return "{{template " + go_quote(self.text) + (f" {self.pipe}" if self.pipe else "") + "}}"
        return self.text


_BUILTINS = {"and", "or", "not", "len", "index", "slice", "print", "printf", "println", "eq", "ne",
             "lt", "le", "gt", "ge", "html", "js", "urlquery", "call"}
#: kubectl's own (``cli-runtime``'s ``GoTemplatePrinter``)
_KUBECTL_FUNCS = {"exists", "base64decode"}


class _Parser:
    """Go's ``text/template/parse`` parser for one template named ``name``."""

    def __init__(self, name: str, text: str, funcs: set[str]) -> None:
        self.name = name
        self.text = text
        self.items = _Lexer(text).run()
        self.i = 0
        self.funcs = funcs
        self.vars: list[str] = ["$"]
        self.range_depth = 0
        self.defines: dict[str, _Node] = {}
        self.action_line = 0  # the line of the action being parsed (for lexer errors)

    # items
    def _next(self) -> _Item:
        it = self._peek()
        self.i += 1
        return it

    def _peek(self) -> _Item:
        it = self.items[self.i]
        if it.typ == "error":
            self._lex_error(it)
        return it

    def _lex_error(self, it: _Item) -> None:
        """The lexer's error, with Go's `` in action started at output:N`` when the action
        began on an earlier line (`` started at …`` after a message ending in ``action``)."""
        extra = ""
        if self.action_line and self.action_line != it.line:
            extra = f" in action started at {self.name}:{self.action_line}"
            if it.val.endswith(" action"):
                extra = extra[len(" in action"):]
        self._fail(it.val + extra, it.line)

    def _next_non_space(self) -> _Item:
        while True:
            it = self._next()
            if it.typ != "space":
                return it

    def _peek_non_space(self) -> _Item:
        j = self.i
        while self.items[j].typ == "space":
            j += 1
        self.i = j
        return self._peek()

    def _fail(self, msg: str, line: int | None = None) -> None:
        if line is None:
            line = self.items[max(self.i - 1, 0)].line
        raise TemplateParseError(f"template: {self.name}:{line}: {msg}")

    def _unexpected(self, it: _Item, context: str) -> None:
        if it.typ == "error":
            self._lex_error(it)
        self._fail(f"unexpected {_describe(it)} in {context}", it.line)

    # structure
    def parse(self) -> _Node:
        root = _Node("list")
        while self._peek().typ != "eof":
            if self._peek().typ == "left":
                j = self.i + 1
                while self.items[j].typ == "space":
                    j += 1
                if self.items[j].typ == "keyword" and self.items[j].val == "define":
                    self.i = j + 1
                    self._define()
                    continue
            n = self._text_or_action()
            if n.kind in ("end", "else"):
                self._fail(f"unexpected {{{{{n.text}}}}}", n.line)
            root.nodes.append(n)
        return root

    def _item_list(self) -> tuple[_Node, _Node]:
        lst = _Node("list")
        while self._peek_non_space().typ != "eof":
            n = self._text_or_action()
            if n.kind in ("end", "else"):
                return lst, n
            lst.nodes.append(n)
        self._fail("unexpected EOF")
        raise AssertionError

    def _text_or_action(self) -> _Node:
        it = self._next_non_space()
        if it.typ == "text":
            return _Node("text", it.pos, it.line, text=it.val)
        if it.typ == "left":
            self.action_line = it.line
            try:
                return self._action()
            finally:
                self.action_line = 0
        self._unexpected(it, "input")
        raise AssertionError

    def _action(self) -> _Node:
        it = self._next_non_space()
        if it.typ == "keyword":
            w = it.val
            if w == "if":
                return self._control("if", it)
            if w == "range":
                return self._control("range", it)
            if w == "with":
                return self._control("with", it)
            if w == "else":
                return self._else(it)
            if w == "end":
                self._expect_right("end")
                return _Node("end", it.pos, it.line, text="end")
            if w in ("break", "continue"):
                if self.range_depth == 0:
                    self._fail(f"{{{{{w}}}}} outside {{{{range}}}}", it.line)
                self._expect_right(w)
                return _Node(w, it.pos, it.line, text=w)
            if w == "template":
                return self._template(it)
            if w == "block":
                return self._block(it)
            self._unexpected(it, "command")
        self.i -= 1
        pipe = self._pipeline("command", "right")
        return _Node("action", it.pos, it.line, pipe=pipe)

    def _name(self, context: str) -> _Item:
        it = self._next_non_space()
        if it.typ not in ("string", "raw"):
            self._unexpected(it, context)
        return it

    def _define(self) -> None:
        """``{{define "name"}}…{{end}}`` (top level only): a template ``template`` can run."""
        name_it = self._name("define clause")
        self._expect_right("define clause")
        saved, self.vars = self.vars, ["$"]
        body, end = self._item_list()
        self.vars = saved
        if end.kind != "end":
            self._fail("unexpected {{else}}", end.line)
        self.defines[_unquote(name_it.val, self, name_it)] = body

    def _template(self, it: _Item) -> _Node:
        """``{{template "name" [pipeline]}}``: runs a defined template with that dot."""
        name_it = self._name("template clause")
        pipe = None
        if self._peek_non_space().typ != "right":
            pipe = self._pipeline("template clause", "right")
        else:
            self._next_non_space()
        return _Node("template", name_it.pos, name_it.line, text=_unquote(name_it.val, self, name_it),
                     pipe=pipe)

    def _block(self, it: _Item) -> _Node:
        """``{{block "name" pipeline}}…{{end}}``: define the template and run it here."""
        name_it = self._name("block clause")
        pipe = self._pipeline("block clause", "right")
        body, end = self._item_list()
        if end.kind != "end":
            self._fail("unexpected {{else}}", end.line)
        name = _unquote(name_it.val, self, name_it)
        self.defines[name] = body
        return _Node("template", name_it.pos, name_it.line, text=name, pipe=pipe)

    def _expect_right(self, context: str) -> None:
        it = self._next_non_space()
        if it.typ != "right":
            self._unexpected(it, context)

    def _else(self, it: _Item) -> _Node:
        nxt = self._peek_non_space()
        if nxt.typ == "keyword" and nxt.val in ("if", "with"):
            # "{{else if …}}" is "{{else}}{{if …}}…{{end}}": the control parses it as one
            return _Node("else", it.pos, it.line, text="else", value=nxt.val)
        self._expect_right("else")
        return _Node("else", it.pos, it.line, text="else")

    def _control(self, kind: str, it: _Item, chained: bool = False) -> _Node:
        saved = len(self.vars)
        pipe = self._pipeline(kind, "right")
        if kind == "range":
            self.range_depth += 1
        body, nxt = self._item_list()
        if kind == "range":
            self.range_depth -= 1
        else_: _Node | None = None
        if nxt.kind == "else":
            if nxt.value in ("if", "with") and kind in ("if", "with"):
                kw = self._next_non_space()  # the "if" / "with" after else
                inner = self._control(kw.val, kw, chained=True)
                else_ = _Node("list", nodes=[inner])
            else:
                if nxt.value:
                    self._fail(f"unexpected {{{{{nxt.value}}}}}", nxt.line)
                else_, nxt = self._item_list()
                if nxt.kind != "end":
                    self._fail("expected end; found {{else}}", nxt.line)
        del self.vars[saved:]
        return _Node(kind, it.pos, it.line, pipe=pipe, body=body, else_=else_)

    def _pipeline(self, context: str, end: str) -> _Node:
        tok = self._peek_non_space()
        pipe = _Node("pipe", tok.pos, tok.line)
        # declarations: $x :=  |  $x =  |  $i, $x :=
        j = self.i
        if self.items[j].typ == "variable":
            k = j + 1
            while self.items[k].typ == "space":
                k += 1
            nxt = self.items[k]
            if nxt.typ in ("declare", "assign"):
                self.i = k + 1
                pipe.decl.append(self.items[j].val)
                pipe.is_assign = nxt.typ == "assign"
                if nxt.typ == "declare":
                    self.vars.append(self.items[j].val)
                elif self.items[j].val not in self.vars:
                    self._fail(f'undefined variable "{self.items[j].val}"', self.items[j].line)
            elif nxt.typ == "comma" and context == "range":
                m = k + 1
                while self.items[m].typ == "space":
                    m += 1
                if self.items[m].typ == "variable":
                    n = m + 1
                    while self.items[n].typ == "space":
                        n += 1
                    if self.items[n].typ == "comma":
                        self._fail("too many declarations in " + context, self.items[n].line)
                    if self.items[n].typ in ("declare", "assign"):
                        pipe.decl = [self.items[j].val, self.items[m].val]
                        pipe.is_assign = self.items[n].typ == "assign"
                        if not pipe.is_assign:
                            self.vars += pipe.decl
                        self.i = n + 1
                    else:
                        self._fail("range can only initialize variables", self.items[n].line)
                else:
                    self._fail("too many declarations in " + context, nxt.line)
        while True:
            it = self._next_non_space()
            if it.typ == end:
                if not pipe.cmds:
                    self._fail(f"missing value for {context}", it.line)
                for c in pipe.cmds[1:]:
                    first = c.cmds[0]
                    if first.kind in ("bool", "dot", "nil", "number", "string"):
                        self._fail(f"non executable command in pipeline stage {pipe.cmds.index(c) + 1}",
                                   it.line)
                return pipe
            if it.typ in ("bool", "char", "dot", "field", "identifier", "number", "nil", "raw",
                          "string", "variable", "lparen"):
                self.i -= 1
                pipe.cmds.append(self._command())
            else:
                self._unexpected(it, context)

    def _command(self) -> _Node:
        tok = self._peek_non_space()
        cmd = _Node("command", tok.pos, tok.line)
        while True:
            self._peek_non_space()
            op = self._operand()
            if op is not None:
                cmd.cmds.append(op)
            it = self._next()
            if it.typ == "space":
                continue
            if it.typ in ("right", "rparen"):
                self.i -= 1
            elif it.typ == "pipe":
                pass
            else:
                self._fail(f"unexpected {_describe(it)} in operand", it.line)
            break
        if not cmd.cmds:
            self._fail("empty command")
        return cmd

    def _operand(self) -> _Node | None:
        node = self._term()
        if node is None:
            return None
        if self._peek().typ == "field":
            first = self._peek()  # Go's chain (and the merged node) sits at the first extension
            chain = _Node("chain", first.pos, first.line, node=node)
            while self._peek().typ == "field":
                chain.ident += self._next().val[1:].split(".")
            if node.kind == "field":
                node = _Node("field", first.pos, first.line, ident=node.ident + chain.ident)
            elif node.kind == "variable":
                node = _Node("variable", first.pos, first.line, ident=node.ident + chain.ident)
            elif node.kind in ("bool", "string", "number", "nil", "dot"):
                self._fail(f"unexpected . after term {str(node)!r}".replace("'", '"'), node.line)
            else:
                node = chain
        return node

    def _term(self) -> _Node | None:
        it = self._next_non_space()
        t = it.typ
        if t == "identifier":
            if it.val not in self.funcs:
                self._fail(f'function "{it.val}" not defined', it.line)
            return _Node("identifier", it.pos, it.line, text=it.val)
        if t == "dot":
            return _Node("dot", it.pos, it.line)
        if t == "nil":
            return _Node("nil", it.pos, it.line)
        if t == "variable":
            name = it.val.split(".")[0]
            if name not in self.vars:
                self._fail(f'undefined variable "{name}"', it.line)
            return _Node("variable", it.pos, it.line, ident=it.val.split("."))
        if t == "field":
            return _Node("field", it.pos, it.line, ident=it.val[1:].split("."))
        if t == "bool":
            return _Node("bool", it.pos, it.line, text=it.val, value=it.val == "true")
        if t in ("char", "number"):
            return _Node("number", it.pos, it.line, text=it.val, value=_number(it.val, t == "char", self, it))
        if t == "lparen":
            pipe = self._pipeline("parenthesized pipeline", "rparen")
            return pipe
        if t in ("string", "raw"):
            return _Node("string", it.pos, it.line, text=it.val, value=_unquote(it.val, self, it))
        self.i -= 1
        return None


def _describe(it: _Item) -> str:
    """Go's ``item.String()``: ``EOF``, ``<keyword>`` (also ``<.>``, ``<nil>``), else the text
    quoted (``%.10q...`` past ten characters)."""
    if it.typ == "eof":
        return "EOF"
    if it.typ in ("keyword", "dot", "nil"):
        return f"<{it.val}>"
    if len(it.val) > 10:
        return go_quote(it.val[:10]) + "..."
    return go_quote(it.val)


def _number(text: str, is_char: bool, p: _Parser, it: _Item) -> Any:
    """A number literal's value: an int (``IsInt``) or a float, as Go's ideal constants."""
    if is_char:
        return ord(_unquote('"' + text[1:-1].replace('"', '\\"') + '"', p, it))
    t = text.replace("_", "")
    try:
        v = int(t, 0)
        if -(2 ** 63) <= v < 2 ** 64:
            return v
    except ValueError:
        pass
    try:
        f = float.fromhex(t) if t.lower().lstrip("+-").startswith("0x") else float(t)
    except ValueError:
        p._fail(f"illegal number syntax: {go_quote(text)}", it.line)
        raise AssertionError
    if not any(c in text for c in ".eEpP"):  # Go: an integer that did not parse as one
        p._fail(f"integer overflow: {go_quote(text)}", it.line)
    return f


def _unquote(text: str, p: _Parser, it: _Item) -> str:
    if text.startswith("`"):
        return text[1:-1]
    try:
        return text[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
    except UnicodeDecodeError:
        p._fail("invalid syntax", it.line)
        raise AssertionError


# ----------------------------------------------------------------------------- execution

class _Missing:
    """Go's invalid ``reflect.Value`` (a missing map key): prints ``<no value>``."""

    def __repr__(self) -> str:
        return "<no value>"


MISSING = _Missing()


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


def _go_kind(v: Any) -> str:
    if v is MISSING:
        return "invalid"
    if v is None:
        return "nil"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "string"
    if isinstance(v, Mapping):
        return "map"
    if isinstance(v, list):
        return "slice"
    return "other"


def _go_type(v: Any) -> str:
    if isinstance(v, _Int64):
        return "int64"
    return {"bool": "bool", "int": "int", "float": "float64", "string": "string",
            "map": "map[string]interface {}", "slice": "[]interface {}"}.get(_go_kind(v), "interface {}")


def _truth(v: Any) -> bool:
    """Go template's ``isTrue``: the zero value (and missing, nil) is false."""
    if v is MISSING or v is None:
        return False
    if isinstance(v, (bool, int, float)):
        return bool(v)
    if isinstance(v, (str, Mapping, list)):
        return len(v) > 0
    return True


def _print_value(v: Any) -> str:
    """How an action prints its value (``printValue``): ``<no value>`` for missing, else ``%v``."""
    if v is MISSING:
        return "<no value>"
    return go_v(v, floats=False)


class _Int64(int):
    """A whole number of the data: an int64 in kubectl's unstructured object (a template's own
    ``1`` and ``len``'s result are Go ``int``s; both compare as integers)."""


def _unstructured(v: Any) -> Any:
    """The data as kubectl hands it to the template: its unstructured content, whole numbers
    int64 (:class:`_Int64`), others float64."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, int):
        return _Int64(v)
    if isinstance(v, Mapping):
        return {k: _unstructured(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_unstructured(x) for x in v]
    return v


class Template:
    """A parsed template (:func:`parse_template`)."""

    def __init__(self, name: str, text: str, root: _Node, *, missing_key_error: bool = False,
                 defines: dict[str, _Node] | None = None) -> None:
        self.name = name
        self.text = text
        self.root = root
        self.missing_key_error = missing_key_error
        self.defines = defines or {}

    def execute(self, data: Any, out: list[str]) -> None:
        """Run the template on ``data`` (JSON values), appending its text to ``out`` as it goes
        (so what was written before an error is there, as Go writes to its writer).

        Raises:
            TemplateExecError: Go's execution errors.
        """
        state = _State(self, out)
        data = _unstructured(data)
        state.vars = [("$", data)]
        state.walk(data, self.root)

    def render(self, data: Any) -> str:
        out: list[str] = []
        self.execute(data, out)
        return "".join(out)


class _State:
    def __init__(self, tmpl: Template, out: list[str]) -> None:
        self.tmpl = tmpl
        self.out = out
        self.vars: list[tuple[str, Any]] = []
        self.node: _Node | None = None
        self.dot_boxed = False  # dot is a range's element (Go: an interface {} value)
        self.exec_name = tmpl.name  # the template being run ({{template "x"}} runs "x")

    def errorf(self, msg: str) -> None:
        name = self.exec_name
        if self.node is None:
            raise TemplateExecError(f"template: {name}: {msg}")
        pos = self.node.pos
        text = self.tmpl.text[:pos]
        nl = text.rfind("\n")
        col = pos if nl < 0 else pos - (nl + 1)
        line = 1 + text.count("\n")
        context = str(self.node)
        raise TemplateExecError(f'template: {self.tmpl.name}:{line}:{col}: executing "{name}" at <{context}>: '
                                f'{msg}')

    # variables
    def push(self, name: str, value: Any) -> None:
        self.vars.append((name, value))

    def set_var(self, name: str, value: Any) -> None:
        for i in range(len(self.vars) - 1, -1, -1):
            if self.vars[i][0] == name:
                self.vars[i] = (name, value)
                return
        self.errorf(f"undefined variable: {name}")

    def var_value(self, name: str) -> Any:
        for n, v in reversed(self.vars):
            if n == name:
                return v
        self.errorf(f"undefined variable: {name}")

    # walking
    def walk(self, dot: Any, node: _Node) -> None:
        self.node = node
        k = node.kind
        if k == "list":
            for n in node.nodes:
                self.walk(dot, n)
        elif k == "text":
            self.out.append(node.text)
        elif k == "action":
            mark = len(self.vars)
            val = self.eval_pipeline(dot, node.pipe)
            if not node.pipe.decl:
                self.node = node
                self.out.append(_print_value(val))
            if not node.pipe.decl or node.pipe.is_assign:
                del self.vars[mark:]
        elif k in ("if", "with"):
            mark = len(self.vars)
            val = self.eval_pipeline(dot, node.pipe)
            if _truth(val):
                boxed = self.dot_boxed
                if k == "with":
                    self.dot_boxed = False
                try:
                    self.walk(val if k == "with" else dot, node.body)
                finally:
                    self.dot_boxed = boxed
            elif node.else_ is not None:
                self.walk(dot, node.else_)
            del self.vars[mark:]
        elif k == "range":
            self.walk_range(dot, node)
        elif k == "template":
            body = self.tmpl.defines.get(node.text)
            if body is None:
                self.errorf(f'template "{node.text}" not defined')
            val = self.eval_pipeline(dot, node.pipe, declare=False) if node.pipe else None
            sub = _State(self.tmpl, self.out)
            sub.exec_name = node.text
            sub.vars = [("$", val)]
            sub.walk(val, body)
        elif k == "break":
            raise _Break()
        elif k == "continue":
            raise _Continue()
        else:
            self.errorf(f"unknown node: {node.text}")

    def walk_range(self, dot: Any, node: _Node) -> None:
        self.node = node
        mark = len(self.vars)
        val = self.eval_pipeline(dot, node.pipe, declare=False)
        decl = node.pipe.decl

        def one(key: Any, elem: Any) -> bool:
            if decl:
                if node.pipe.is_assign:
                    if len(decl) > 1:
                        self.set_var(decl[0], key)
                        self.set_var(decl[1], elem)
                    else:
                        self.set_var(decl[0], elem)
                else:
                    if len(decl) > 1:
                        self.push(decl[0], key)
                        self.push(decl[1], elem)
                    else:
                        self.push(decl[0], elem)
            inner = len(self.vars)
            boxed, self.dot_boxed = self.dot_boxed, not isinstance(elem, int) or isinstance(elem, _Int64) \
                or not isinstance(val, int)
            try:
                self.walk(elem, node.body)
            except _Continue:
                pass
            except _Break:
                return False
            finally:
                self.dot_boxed = boxed
                del self.vars[inner if not decl or node.pipe.is_assign else mark:]
            return True

        items: list[tuple[Any, Any]]
        if isinstance(val, list):
            items = list(enumerate(val))
        elif isinstance(val, Mapping):
            items = [(k, val[k]) for k in sorted(val)]
        elif isinstance(val, int) and not isinstance(val, bool):
            if len(decl) > 1:
                self.errorf("can't use " + str(val) + " to iterate over more than one variable")
            items = [(i, i) for i in range(val)]
        elif val is None or val is MISSING:
            items = []
        else:
            self.node = node.pipe
            self.errorf(f"range can't iterate over {go_v(val)}")
            items = []
        for key, elem in items:
            if not one(key, elem):
                break
        if not items and node.else_ is not None:
            self.walk(dot, node.else_)
        del self.vars[mark:]

    def eval_pipeline(self, dot: Any, pipe: _Node, declare: bool = True) -> Any:
        self.node = pipe
        val: Any = MISSING
        first = True
        for cmd in pipe.cmds:
            val = self.eval_command(dot, cmd, None if first else val)
            first = False
            if val is None:  # Go digs into interface{}: a nil one becomes the invalid value
                val = MISSING
        if declare:
            for name in pipe.decl:
                if pipe.is_assign:
                    self.set_var(name, val)
                else:
                    self.push(name, val)
        return val

    def eval_command(self, dot: Any, cmd: _Node, final: Any) -> Any:
        first = cmd.cmds[0]
        k = first.kind
        if k == "field":
            return self.eval_field_chain(dot, dot, first, first.ident, cmd.cmds[1:], final)
        if k == "chain":
            base = self.eval_arg_value(dot, first.node)
            return self.eval_field_chain(dot, base, first, first.ident, cmd.cmds[1:], final)
        if k == "identifier":
            return self.eval_function(dot, first, cmd, cmd.cmds[1:], final)
        if k == "pipe":
            self.not_function(cmd.cmds, final)
            return self.eval_pipeline(dot, first, declare=False)
        if k == "variable":
            val = self.var_value(first.ident[0])
            if len(first.ident) == 1:
                self.not_function(cmd.cmds, final)
                return val
            return self.eval_field_chain(dot, val, first, first.ident[1:], cmd.cmds[1:], final)
        self.node = first
        self.not_function(cmd.cmds, final)
        if k == "bool":
            return first.value
        if k == "dot":
            return dot
        if k == "nil":
            self.errorf("nil is not a command")
        if k in ("number", "string"):
            return first.value
        self.errorf(f"can't evaluate command {first}")

    def not_function(self, args: list[_Node], final: Any) -> None:
        if len(args) > 1 or final is not None:
            self.errorf(f"can't give argument to non-function {args[0]}")

    def eval_string_arg(self, dot: Any, n: _Node) -> str:
        """An argument of a ``string`` parameter (``printf``'s format): Go's ``evalArg`` errors."""
        self.node = n
        if n.kind == "string":
            return n.value
        if n.kind in ("number", "bool"):
            self.errorf(f"expected string; found {n}")
        if n.kind == "nil":
            self.errorf("cannot assign nil to string")
        val = self.eval_arg_value(dot, n)
        if val is MISSING:
            self.errorf("invalid value; expected string")
        if not isinstance(val, str):
            self.errorf(f"wrong type for value; expected string; got {_go_type(val)}")
        return val

    def eval_arg_value(self, dot: Any, n: _Node) -> Any:
        """An argument's value (Go's ``evalEmptyInterface``)."""
        self.node = n
        k = n.kind
        if k == "bool":
            return n.value
        if k == "dot":
            return dot
        if k == "field":
            return self.eval_field_chain(dot, dot, n, n.ident, [], None)
        if k == "identifier":
            return self.eval_function(dot, n, n, [], None)
        if k == "nil":
            return None
        if k in ("number", "string"):
            return n.value
        if k == "variable":
            val = self.var_value(n.ident[0])
            return self.eval_field_chain(dot, val, n, n.ident[1:], [], None) if len(n.ident) > 1 else val
        if k == "pipe":
            return self.eval_pipeline(dot, n, declare=False)
        if k == "chain":
            base = self.eval_arg_value(dot, n.node)
            return self.eval_field_chain(dot, base, n, n.ident, [], None)
        self.errorf(f"can't handle {n} for arg")

    def eval_field_chain(self, dot: Any, receiver: Any, node: _Node, ident: list[str], args: list[_Node],
                         final: Any) -> Any:
        self.node = node
        for i, name in enumerate(ident):
            last = i == len(ident) - 1
            # Go names the receiver's static type: a value read out of a map (or a range's
            # element as dot) is an ``interface {}``; dot under ``with``, a variable, a
            # parenthesised pipeline hold the concrete value
            boxed = i > 0 or (node.kind == "field" and self.dot_boxed)
            if (args or final is not None) and last:
                self.errorf(f"{name} is not a method but has arguments" if isinstance(receiver, Mapping)
                            else f"can't evaluate field {name} in type "
                                 f"{'interface {}' if boxed else _go_type(receiver)}")
            receiver = self.eval_field(name, receiver, boxed)
        return receiver

    def eval_field(self, name: str, receiver: Any, boxed: bool = False) -> Any:
        if receiver is MISSING:
            if self.tmpl.missing_key_error:
                self.errorf(f'nil data; no entry for key "{name}"')
            return MISSING
        if receiver is None:
            self.errorf(f"nil pointer evaluating interface {{}}.{name}")
        if isinstance(receiver, Mapping):
            if name in receiver:
                return receiver[name]
            if self.tmpl.missing_key_error:
                self.errorf(f'map has no entry for key "{name}"')
            return MISSING
        self.errorf(f"can't evaluate field {name} in type {'interface {}' if boxed else _go_type(receiver)}")

    def eval_function(self, dot: Any, ident: _Node, cmd: _Node, args: list[_Node], final: Any) -> Any:
        self.node = ident
        name = ident.text
        fixed, variadic = _ARITY[name]
        nargs = len(args) + (final is not None)
        if variadic and nargs < fixed:
            self.errorf(f"wrong number of args for {name}: want at least {fixed} got {len(args)}")
        if not variadic and nargs != fixed:
            self.errorf(f"wrong number of args for {name}: want {fixed} got {nargs}")
        if name in ("and", "or"):
            val: Any = MISSING
            for a in args:
                val = self.eval_arg_value(dot, a)
                if _truth(val) != (name == "and"):
                    return val
            if final is not None:
                val = final
            return val
        argv = []
        for i, a in enumerate(args):
            if i == 0 and name in _STRING_FIRST:
                argv.append(self.eval_string_arg(dot, a))
            else:
                argv.append(self.eval_arg_value(dot, a))
        if final is not None:
            if not args and name in _STRING_FIRST and not isinstance(final, str):
                self.errorf("invalid value; expected string" if final is MISSING
                            else f"wrong type for value; expected string; got {_go_type(final)}")
            argv.append(final)
        self.node = cmd
        fn = _FUNCS.get(name)
        if fn is None:
            self.errorf(f'"{name}" is not a defined function')
        if name == "call":  # Go names the callee in its error
            argv.insert(0, str(args[0]) if args else "")
        try:
            return fn(*argv)
        except _CallError as e:
            self.errorf(f"error calling {name}: {e}")
        except _ArgError as e:
            self.errorf(str(e))


class _CallError(Exception):
    """A function's own error (``error calling index: …``)."""


class _ArgError(Exception):
    """Wrong arguments for a function (``wrong number of args for len: want 1 got 2``)."""


def _nargs(name: str, want: int, got: list[Any]) -> None:
    if len(got) != want:
        raise _ArgError(f"wrong number of args for {name}: want {want} got {len(got)}")


def _len(*a: Any) -> int:
    _nargs("len", 1, list(a))
    v = a[0]
    if v is MISSING:  # Go's len() asks a zero reflect.Value for its type
        raise _CallError("reflect: call of reflect.Value.Type on zero Value")
    if v is None:
        raise _CallError("len of nil pointer")
    if isinstance(v, str):
        return len(v.encode("utf-8"))
    if isinstance(v, (Mapping, list)):
        return len(v)
    raise _CallError(f"len of type {_go_type(v)}")


def _to_index(v: Any, cap: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        if v is None or v is MISSING:
            raise _CallError("cannot index slice/array with nil")
        raise _CallError(f"cannot index slice/array with type {_go_type(v)}")
    if v < 0 or v >= cap:
        raise _CallError(f"index out of range: {v}")
    return v


def _index(item: Any = MISSING, *indexes: Any) -> Any:
    if item is MISSING or item is None:
        raise _CallError("index of untyped nil")
    for ix in indexes:
        if isinstance(item, list):
            item = item[_to_index(ix, len(item))]
        elif isinstance(item, str):
            item = item.encode("utf-8")[_to_index(ix, len(item.encode("utf-8")))]
        elif isinstance(item, Mapping):
            if not isinstance(ix, str):
                raise _CallError(f"value has type {_go_type(ix)}; should be string")
            item = item.get(ix)  # a missing key: the zero value, nil
        elif item is None or item is MISSING:
            raise _CallError("index of untyped nil")
        else:
            raise _CallError(f"can't index item of type {_go_type(item)}")
    return item


def _slice(item: Any = MISSING, *indexes: Any) -> Any:
    if item is MISSING or item is None:
        raise _CallError("slice of untyped nil")
    if len(indexes) > 3:
        raise _CallError(f"too many slice indexes: {len(indexes)}")
    if isinstance(item, str):
        if len(indexes) == 3:
            raise _CallError("cannot 3-index slice a string")
        n = len(item.encode("utf-8"))
    elif isinstance(item, list):
        n = len(item)
    else:
        raise _CallError(f"can't slice item of type {_go_type(item)}")
    idx = [0, n]
    for i, ix in enumerate(indexes):
        idx_v = _to_index(ix, n + 1)
        if i < 2:
            idx[i] = idx_v
    if idx[0] > idx[1]:
        raise _CallError(f"invalid slice index: {idx[0]} > {idx[1]}")
    if isinstance(item, str):
        return item.encode("utf-8")[idx[0]:idx[1]].decode("utf-8", "replace")
    return item[idx[0]:idx[1]]


def _basic_kind(v: Any) -> str:
    """Go template's ``basicKind`` after ``indirectInterface``: nil and missing are invalid."""
    k = _go_kind(v)
    if k in ("nil", "invalid"):
        return "invalid"
    return k if k in ("int", "float", "string", "bool") else "other"


def _go_s(v: Any) -> str:
    """``%s`` of a value (``%!s(int64=1)`` for what is not a string), as Go's errors print it."""
    return _format_one("s", "", None, v)


def _eq(a: Any = MISSING, *others: Any) -> bool:
    """Go template's ``eq``: true if ``a`` equals any of ``others``; scalars of different kinds
    are ``incompatible types for comparison``, maps and lists ``non-comparable type``."""
    if not others:
        raise _CallError("missing argument for comparison")
    k1 = _basic_kind(a)
    for b in others:
        k2 = _basic_kind(b)
        if k1 != k2:
            if k1 != "invalid" and k2 != "invalid":
                raise _CallError("incompatible types for comparison")
            continue
        if k1 == "invalid":
            return True  # both nil
        if k1 == "other":
            if _go_type(a) != _go_type(b):
                raise _CallError(f"non-comparable types {_go_s(a)}: {_go_type(a)}, {_go_type(b)}: {_go_s(b)}")
            raise _CallError(f"non-comparable type {_go_s(b)}: {_go_type(b)}")
        if a == b:
            return True
    return False


def _ne(a: Any = MISSING, b: Any = MISSING, *rest: Any) -> bool:
    if rest:
        raise _ArgError(f"wrong number of args for ne: want 2 got {2 + len(rest)}")
    return not _eq(a, b)


def _lt(a: Any = MISSING, b: Any = MISSING, *rest: Any) -> bool:
    if rest:
        raise _ArgError(f"wrong number of args for lt: want 2 got {2 + len(rest)}")
    ka, kb = _basic_kind(a), _basic_kind(b)
    if ka in ("invalid", "other") or kb in ("invalid", "other") or ka == "bool":
        raise _CallError("invalid type for comparison")
    if ka != kb:
        raise _CallError("incompatible types for comparison")
    return a < b


def _le(a: Any = MISSING, b: Any = MISSING) -> bool:
    return _lt(a, b) or _eq(a, b)


def _gt(a: Any = MISSING, b: Any = MISSING) -> bool:
    return not _le(a, b)


def _ge(a: Any = MISSING, b: Any = MISSING) -> bool:
    return not _lt(a, b)


def _not(*a: Any) -> bool:
    _nargs("not", 1, list(a))
    return not _truth(a[0])


def _sprint_args(args: tuple[Any, ...]) -> str:
    """Go's ``fmt.Sprint``: a space between operands when neither is a string."""
    out = []
    prev_string = True
    for i, a in enumerate(args):
        is_string = isinstance(a, str)
        if i > 0 and not is_string and not prev_string:
            out.append(" ")
        out.append(_print_value(a) if a is not MISSING else "<nil>")
        prev_string = is_string
    return "".join(out)


def _print(*args: Any) -> str:
    return _sprint_args(args)


def _println(*args: Any) -> str:
    return " ".join(_print_value(a) if a is not MISSING else "<nil>" for a in args) + "\n"


def _printf(fmt: Any = MISSING, *args: Any) -> str:
    if not isinstance(fmt, str):
        raise _ArgError(f"wrong type for value; expected string; got {_go_type(fmt)}")
    return go_sprintf(fmt, *args)


def _html_escape(*args: Any) -> str:
    s = _sprint_args(args)
    return (_html.escape(s, quote=False).replace('"', "&#34;").replace("'", "&#39;")
            .replace("\x00", "\uFFFD"))


def _js_escape(*args: Any) -> str:
    s = _sprint_args(args)
    out = []
    for ch in s:
        if ch == "\\":
            out.append("\\\\")
        elif ch == "'":
            out.append("\\'")
        elif ch == '"':
            out.append("\\\"")
        elif ch in "<>&=":
            out.append(f"\\u{ord(ch):04X}")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return "".join(out)


def _urlquery(*args: Any) -> str:
    return urllib.parse.quote_plus(_sprint_args(args), safe="")


def _exists(item: Any = MISSING, *indices: Any) -> bool:
    """kubectl's ``exists``: whether ``index item indices…`` finds something."""
    for ix in indices:
        if isinstance(item, Mapping):
            if not isinstance(ix, str) or ix not in item:
                return False
            item = item[ix]
        elif isinstance(item, list):
            if isinstance(ix, bool) or not isinstance(ix, int) or not 0 <= ix < len(item):
                return False
            item = item[ix]
        else:
            return False
    return item is not MISSING and item is not None


def _base64decode(*a: Any) -> str:
    """kubectl's ``base64decode``: ``base64decode "aGk="`` is ``hi``."""
    _nargs("base64decode", 1, list(a))
    v = a[0]
    if not isinstance(v, str):
        raise _ArgError(f"wrong type for value; expected string; got {_go_type(v)}")
    alphabet = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
    for i, ch in enumerate(v):
        if ch not in alphabet and not (ch == "=" and v[i:].strip("=") == ""):
            raise _CallError(f"base64 decode failed: illegal base64 data at input byte {i}")
    try:
        return base64.b64decode(v, validate=True).decode("utf-8", "replace")
    except (ValueError, base64.binascii.Error):
        raise _CallError("base64 decode failed: illegal base64 data at input byte "
                         f"{len(v) - len(v) % 4 if len(v) % 4 else len(v.rstrip('='))}") from None


def _call(name: str, *a: Any) -> Any:
    """Go's ``call``: there are no functions in JSON data, so always an error."""
    raise _CallError(f"non-function {name} of type {_go_type(a[0]) if a and a[0] is not MISSING else '<nil>'}")


#: Each function's parameters: (fixed count, variadic) — Go checks the count before calling.
_ARITY: dict[str, tuple[int, bool]] = {
    "and": (1, True), "or": (1, True), "not": (1, False), "len": (1, False), "index": (1, True),
    "slice": (1, True), "print": (0, True), "printf": (1, True), "println": (0, True), "eq": (1, True),
    "ne": (2, False), "lt": (2, False), "le": (2, False), "gt": (2, False), "ge": (2, False),
    "html": (0, True), "js": (0, True), "urlquery": (0, True), "call": (1, True),
    "exists": (1, True), "base64decode": (1, False),
}
#: Functions whose first parameter is a Go ``string``.
_STRING_FIRST = {"printf", "base64decode"}

_FUNCS: dict[str, Callable[..., Any]] = {
    "len": _len, "index": _index, "slice": _slice, "eq": _eq, "ne": _ne, "lt": _lt, "le": _le,
    "gt": _gt, "ge": _ge, "not": _not, "print": _print, "printf": _printf, "println": _println,
    "html": _html_escape, "js": _js_escape, "urlquery": _urlquery, "call": _call,
    "exists": _exists, "base64decode": _base64decode,
}


# ----------------------------------------------------------------------------- printf

_VERB = re.compile(r"%([-+# 0]*)(\*|\d+)?(?:\.(\*|\d*))?([a-zA-Z%])")


def go_sprintf(fmt: str, *args: Any) -> str:
    """Go's ``fmt.Sprintf`` for JSON values: verbs ``%v %s %d %f %g %e %q %t %x %X %o %b %c %%``
    with flags, width and precision; wrong types as ``%!d(string=x)``, missing operands as
    ``%!d(MISSING)``, extra ones as ``%!(EXTRA type=value)``."""
    out: list[str] = []
    i = 0
    argi = 0
    for m in _VERB.finditer(fmt):
        out.append(fmt[i:m.start()])
        i = m.end()
        flags, width, prec, verb = m.group(1), m.group(2), m.group(3), m.group(4)
        if verb == "%":
            out.append("%")
            continue
        if width == "*":
            width = str(args[argi]) if argi < len(args) else "0"
            argi += 1
        if prec == "*":
            prec = str(args[argi]) if argi < len(args) else "0"
            argi += 1
        if argi >= len(args):
            out.append(f"%!{verb}(MISSING)")
            continue
        arg = args[argi]
        argi += 1
        out.append(_pad(_format_one(verb, flags, prec, arg), flags, width))
    out.append(fmt[i:])
    if argi < len(args):
        extra = ", ".join(f"{_go_type(a)}={_print_value(a)}" for a in args[argi:])
        out.append(f"%!(EXTRA {extra})")
    return "".join(out)


def _pad(text: str, flags: str, width: str | None) -> str:
    if not width:
        return text
    w = int(width)
    if "-" in flags:
        return text.ljust(w)
    if "0" in flags and re.fullmatch(r"[+-]?[\d.eE+-]+", text):
        sign = text[0] if text[:1] in "+-" else ""
        return sign + text[len(sign):].rjust(w - len(sign), "0")
    return text.rjust(w)


def _bad(verb: str, arg: Any) -> str:
    if arg is MISSING or arg is None:
        return f"%!{verb}(<nil>)"
    return f"%!{verb}({_go_type(arg)}={_print_value(arg)})"


def _format_one(verb: str, flags: str, prec: str | None, arg: Any) -> str:
    k = _go_kind(arg)
    p = int(prec) if prec not in (None, "") else (0 if prec == "" else None)
    if verb == "v":
        if "#" in flags:
            return go_sharp_v(arg)
        return _print_value(arg) if arg is not MISSING else "<nil>"
    if verb == "T":
        return _go_type(arg) if arg is not None and arg is not MISSING else "<nil>"
    if verb in "sq":
        if k == "string":
            s = arg if p is None else arg[:p]
            return go_quote(s) if verb == "q" else s
        if k in ("map", "slice"):
            return _compound(verb, flags, prec, arg)
        if verb == "q" and k == "int":
            return "'" + chr(arg) + "'"
        return _bad(verb, arg)
    if verb in "dboxXc":
        if k == "int":
            if verb == "c":
                return chr(arg)
            base = {"d": 10, "b": 2, "o": 8, "x": 16, "X": 16}[verb]
            digits = _int_digits(abs(arg), base, verb == "X")
            if "#" in flags and verb in "xX":
                digits = ("0X" if verb == "X" else "0x") + digits
            sign = "-" if arg < 0 else ("+" if "+" in flags else (" " if " " in flags else ""))
            return sign + digits
        if verb in "xX" and k == "string":
            h = arg.encode("utf-8").hex()
            return h.upper() if verb == "X" else h
        if verb in "xX" and k == "float":
            return float.hex(arg)
        if k in ("map", "slice"):
            return _compound(verb, flags, prec, arg)
        return _bad(verb, arg)
    if verb in "feEgG":
        if k == "float":
            return _float_verb(verb, flags, p, arg)
        if k in ("map", "slice"):
            return _compound(verb, flags, prec, arg)
        return _bad(verb, arg)
    if verb == "t":
        if k == "bool":
            return "true" if arg else "false"
        return _bad(verb, arg)
    return f"%!{verb}({_go_type(arg)}={_print_value(arg)})"


def _compound(verb: str, flags: str, prec: str | None, arg: Any) -> str:
    if isinstance(arg, Mapping):
        return "map[" + " ".join(f"{_format_one(verb, flags, prec, k)}:{_format_one(verb, flags, prec, arg[k])}"
                                 for k in sorted(arg)) + "]"
    return "[" + " ".join(_format_one(verb, flags, prec, x) for x in arg) + "]"


def _int_digits(n: int, base: int, upper: bool) -> str:
    if base == 10:
        return str(n)
    s = {2: format(n, "b"), 8: format(n, "o"), 16: format(n, "x")}[base]
    return s.upper() if upper else s


def _float_verb(verb: str, flags: str, p: int | None, v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return ("+Inf" if v > 0 else "-Inf")
    sign = "+" if "+" in flags and v >= 0 else (" " if " " in flags and v >= 0 else "")
    if verb == "f":
        return sign + format(v, f".{6 if p is None else p}f")
    if verb in "eE":
        s = format(v, f".{6 if p is None else p}e")
        return sign + (s.upper() if verb == "E" else s)
    if p is None:
        s = go_float(v)
    else:
        s = format(v, f".{p or 1}g")
        s = re.sub(r"e([+-])(\d)$", r"e\g<1>0\2", s)
    return sign + (s.upper() if verb == "G" else s)


# ----------------------------------------------------------------------------- entry point

def parse_template(text: str, *, name: str = "output", missing_key_error: bool = False) -> Template:
    """Parse ``text`` as Go's ``template.New(name).Funcs(kubectl's).Parse(text)`` does.

    Args:
        missing_key_error: Go's ``Option("missingkey=error")`` (kubectl's
            ``--allow-missing-template-keys=false``).

    Raises:
        TemplateParseError: ``template: output:1: unclosed action`` and Go's other parse errors.
    """
    parser = _Parser(name, text, _BUILTINS | _KUBECTL_FUNCS)
    root = parser.parse()
    return Template(name, text, root, missing_key_error=missing_key_error, defines=parser.defines)
