"""Turn preprocessed P4_16 text into a list of tokens, each with its original location.

The lexer is deliberately context-free: every identifier comes out as an
``IDENT`` token and it is the parser, which knows the scopes, that decides
whether a name denotes a type (what p4c's lexer calls ``TYPE_IDENTIFIER``).
Keywords and punctuation come out with ``kind`` equal to their spelling
(``"control"``, ``"{"``, ``"&&&"``), so the parser can write ``tok.kind == "{"``.
The remaining kinds are ``IDENT``, ``INTEGER``, ``STRING``, ``UNEXPECTED`` (a
character that is no P4 token; the parser rejects it except inside annotation
bodies, where P4 allows any token) and ``EOF``.

Two details follow p4c:

* ``>>`` is never one token.  ``>`` is always lexed alone and the parser joins
  two adjacent ``>`` into a shift (see :attr:`Token.space_before`), so that
  ``bit<bit<8>>`` closes two type-argument lists.  ``>>=`` is likewise ``>`` + ``>=``.
* Integer literals follow p4c's patterns exactly: ``0x``/``0d``/``0o``/``0b``
  prefixes, ``_`` separators, and width prefixes ``8w`` (unsigned) and
  ``8s`` (signed).  A sign is never part of a literal: ``-8s1`` is a negation.

Lines starting with ``#`` are preprocessor output: ``# 12 "file.p4"`` and
``#line 12 "file.p4"`` markers move the location of the following lines back to
the user's file; ``#pragma`` lines are ignored; any other directive means the
text was not preprocessed and is reported as an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NoReturn

from softswitch.errors import Loc, P4SourceError

KEYWORDS = frozenset(
    [
        "abstract",
        "action",
        "actions",
        "apply",
        "bool",
        "bit",
        "break",
        "const",
        "continue",
        "control",
        "default",
        "else",
        "entries",
        "enum",
        "error",
        "exit",
        "extern",
        "false",
        "for",
        "header",
        "header_union",
        "if",
        "in",
        "inout",
        "int",
        "key",
        "list",
        "match_kind",
        "type",
        "out",
        "parser",
        "package",
        "priority",
        "return",
        "select",
        "state",
        "string",
        "struct",
        "switch",
        "table",
        "this",
        "transition",
        "true",
        "tuple",
        "typedef",
        "varbit",
        "value_set",
        "void",
        "_",
    ]
)

ASSIGN_OPS = frozenset(["=", "+=", "-=", "*=", "/=", "%=", "|+|=", "|-|=", "<<=", "&=", "|=", "^="])

# Longest spellings first: the regex alternation takes the first that matches.
_PUNCTUATION = sorted(
    [
        "...",
        "..",
        "&&&",
        "|+|=",
        "|-|=",
        "|+|",
        "|-|",
        "<<=",
        "{#}",
        "<<",
        "&&",
        "||",
        "==",
        "!=",
        ">=",
        "<=",
        "++",
        "+=",
        "-=",
        "*=",
        "/=",
        "%=",
        "&=",
        "|=",
        "^=",
        "-",
        "+",
        "*",
        "/",
        "%",
        "|",
        "&",
        "^",
        "~",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        "<",
        ">",
        "!",
        ":",
        ",",
        "?",
        ".",
        "=",
        ";",
        "@",
    ],
    key=len,
    reverse=True,
)

_NUMBER = r"""
    (?P<width>[0-9]+)(?P<sign>[ws])
        (?P<wbody>0[xX][0-9a-fA-F_]+|0[dD][0-9_]+|0[oO][0-7_]+|0[bB][01_]+|[0-9_]+)
  | (?P<body>0[xX][0-9a-fA-F_]+|0[dD][0-9_]+|0[oO][0-7_]+|0[bB][01_]+|[0-9][0-9_]*)
"""

_TOKEN_RE = re.compile(
    rf"""
      (?P<space>[ \t\r\f\v]+)
    | (?P<newline>\n)
    | (?P<line_comment>//[^\n]*)
    | (?P<block_comment>/\*)
    | (?P<string>")
    | (?P<number>{_NUMBER})
    | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<punct>{"|".join(re.escape(p) for p in _PUNCTUATION)})
    """,
    re.VERBOSE,
)
_NUMBER_RE = re.compile(_NUMBER, re.VERBOSE)
_STRING_BODY_RE = re.compile(r'(?:[^"\\]|\\.)*"', re.DOTALL)
_LINE_MARKER_RE = re.compile(r'#\s*(?:line\s+)?(\d+)(?:\s+"((?:[^"\\]|\\.)*)")?')
_RADIX = {"x": 16, "X": 16, "d": 10, "D": 10, "o": 8, "O": 8, "b": 2, "B": 2}


@dataclass(frozen=True, slots=True)
class IntValue:
    """The meaning of an integer literal: ``width`` None for an unsized one."""

    value: int
    width: int | None
    signed: bool


@dataclass(frozen=True, slots=True)
class Token:
    """One token.  ``space_before`` is False when it touches the previous token
    (which tells ``> >`` apart from ``>>``); ``first_on_line`` ends ``@pragma``."""

    kind: str
    text: str
    loc: Loc
    space_before: bool = True
    first_on_line: bool = False
    int_value: IntValue | None = None


def parse_integer(text: str, loc: Loc) -> IntValue:
    """The value of an integer literal's spelling (``8w0x1F``, ``1_000``, ``4s3``...)."""
    match = _NUMBER_RE.fullmatch(text)
    if match is None:
        _fail(loc, f"malformed integer literal '{text}'")
    width: int | None = None
    signed = False
    body = match.group("body")
    if body is None:
        width = int(match.group("width"))
        signed = match.group("sign") == "s"
        body = match.group("wbody")
    radix = 10
    digits = body
    if len(body) > 1 and body[0] == "0" and body[1] in _RADIX:
        radix = _RADIX[body[1]]
        digits = body[2:]
    digits = digits.replace("_", "")
    if not digits:
        _fail(loc, f"integer literal '{text}' has no digits")
    if width is not None and width == 0 and signed:
        _fail(loc, f"signed integer literal '{text}' must be at least 1 bit wide")
    return IntValue(int(digits, radix), width, signed)


def _fail(loc: Loc, message: str) -> NoReturn:
    raise P4SourceError(loc, message)


class _Lexer:
    """The scanning state: position, current physical line, and line-marker mapping."""

    def __init__(self, text: str, filename: str) -> None:
        self.text = text
        self.pos = 0
        self.file = filename
        self.line = 1  # logical line (after line markers) of the current physical line
        self.line_start = 0  # offset of the current physical line's first character
        self.tokens: list[Token] = []
        self.space_before = True
        self.first_on_line = True

    def loc_at(self, offset: int) -> Loc:
        """The location of ``offset``, which lies on the current line."""
        return Loc(self.file, self.line, offset - self.line_start + 1)

    def newline(self, offset: int) -> None:
        """Account for the newline character at ``offset``."""
        self.line += 1
        self.line_start = offset + 1
        self.first_on_line = True

    def skip_newlines(self, start: int, end: int) -> None:
        """Account for the newlines inside ``text[start:end]``."""
        offset = self.text.find("\n", start, end)
        while offset != -1:
            self.newline(offset)
            offset = self.text.find("\n", offset + 1, end)

    def emit(self, kind: str, text: str, start: int, value: IntValue | None = None) -> None:
        """Append a token that starts at offset ``start``."""
        self.tokens.append(
            Token(kind, text, self.loc_at(start), self.space_before, self.first_on_line, value)
        )
        self.space_before = False
        self.first_on_line = False

    def at_line_start(self, offset: int) -> bool:
        """Whether only blanks precede ``offset`` on its line."""
        return self.text[self.line_start : offset].strip(" \t\r\f\v") == ""

    def directive(self, start: int) -> None:
        """Handle a ``#`` line: a line marker, an ignored pragma, or an error."""
        end = self.text.find("\n", start)
        end = len(self.text) if end == -1 else end
        line_text = self.text[start:end]
        marker = _LINE_MARKER_RE.match(line_text)
        self.pos = end
        if marker is not None:
            if marker.group(2) is not None:
                self.file = marker.group(2).replace('\\"', '"').replace("\\\\", "\\")
            # The marker names the number of the line that follows it.
            self.line = int(marker.group(1)) - 1
            return
        word = line_text[1:].strip().split(" ")[0]
        if word in {"pragma", ""}:
            return
        _fail(
            self.loc_at(start),
            f"preprocessor directive '#{word}' in unpreprocessed text "
            "(use parse_file, which runs the C preprocessor)",
        )

    def run(self) -> list[Token]:
        """Scan the whole text."""
        text = self.text
        while self.pos < len(text):
            start = self.pos
            match = _TOKEN_RE.match(text, start)
            if match is None:
                char = text[start]
                if char == "#" and self.at_line_start(start):
                    self.directive(start)
                    continue
                self.emit("UNEXPECTED", char, start)
                self.pos = start + 1
                continue
            group = match.lastgroup
            self.pos = match.end()
            if group in {"space", "line_comment"}:
                self.space_before = True
            elif group == "newline":
                self.newline(start)
                self.space_before = True
            elif group == "block_comment":
                end = text.find("*/", self.pos)
                if end == -1:
                    _fail(self.loc_at(start), "unterminated comment: no '*/' before end of file")
                self.skip_newlines(self.pos, end)
                self.pos = end + 2
                self.space_before = True
            elif group == "string":
                body = _STRING_BODY_RE.match(text, self.pos)
                if body is None:
                    _fail(self.loc_at(start), "unterminated string literal")
                self.emit("STRING", text[start : body.end()], start)
                self.skip_newlines(self.pos, body.end())
                self.pos = body.end()
            elif group == "number":
                spelling = match.group()
                self.emit("INTEGER", spelling, start, parse_integer(spelling, self.loc_at(start)))
            elif group == "ident":
                word = match.group()
                self.emit(word if word in KEYWORDS else "IDENT", word, start)
            else:
                self.emit(match.group(), match.group(), start)
        self.emit("EOF", "", self.pos)
        return self.tokens


def tokenize(text: str, filename: str = "<string>") -> list[Token]:
    """Split ``text`` into tokens ending with an ``EOF`` token; ``#`` line markers
    redirect locations to the original files.  Raises P4SourceError."""
    return _Lexer(text, filename).run()


def string_value(token: Token) -> str:
    """The contents of a STRING token without its quotes (escapes kept, as p4c does)."""
    return token.text[1:-1]
