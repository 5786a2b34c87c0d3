"""The token cursor, scopes and name rules under the P4_16 parser (see :mod:`.parser`).

:class:`ParserBase` moves over the token list, keeps the stack of scopes that
tells type names from other identifiers, parses the several kinds of names,
and owns the single error exit :meth:`ParserBase._error`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NoReturn, TypeVar

from softswitch.errors import Loc, P4SourceError
from softswitch.frontend import ast
from softswitch.frontend.lexer import KEYWORDS, Token

T = TypeVar("T")

# Binary operators from loosest to tightest binding (spec section "Operator precedence").
BINARY_PRECEDENCE: dict[str, int] = {
    "||": 1,
    "&&": 2,
    "==": 3,
    "!=": 3,
    "<": 4,
    ">": 4,
    "<=": 4,
    ">=": 4,
    "|": 5,
    "^": 6,
    "&": 7,
    "<<": 8,
    ">>": 8,
    "++": 9,
    "+": 9,
    "-": 9,
    "|+|": 9,
    "|-|": 9,
    "*": 10,
    "/": 10,
    "%": 10,
}
PREFIX_OPERATORS = frozenset(["!", "~", "-", "+"])

# Keywords that may nevertheless be used as names (the grammar's nonTypeName / name).
NON_TYPE_NAME_KEYWORDS = frozenset(
    ["apply", "key", "actions", "state", "entries", "type", "priority"]
)
NAME_KEYWORDS = NON_TYPE_NAME_KEYWORDS | {"list"}
# Keywords that begin a typeRef.
BASE_TYPE_KEYWORDS = frozenset(
    ["bool", "error", "match_kind", "string", "int", "bit", "varbit", "tuple", "list"]
)
DIRECTIONS = frozenset(["in", "out", "inout"])
# Keywords that start a top-level declaration (for "did you mean" hints).
DECLARATION_KEYWORDS = (
    "action", "const", "control", "enum", "error", "extern", "header", "header_union",
    "match_kind", "package", "parser", "struct", "type", "typedef",
)  # fmt: skip


class ParserBase:
    """Token cursor, scopes and names: what every grammar rule uses."""

    def __init__(self, tokens: Sequence[Token], scopes: list[dict[str, bool]] | None = None):
        self.tokens = tokens
        self.pos = 0
        # name -> True for a type, False for an object; innermost scope last.
        self.scopes: list[dict[str, bool]] = scopes if scopes is not None else [{}]

    # -----------------------------------------------------------------------
    # Token access and errors

    @property
    def tok(self) -> Token:
        """The current token."""
        return self.tokens[self.pos]

    def peek(self, ahead: int = 1) -> Token:
        """The token ``ahead`` positions after the current one (EOF past the end)."""
        index = min(self.pos + ahead, len(self.tokens) - 1)
        return self.tokens[index]

    def advance(self) -> Token:
        """Consume and return the current token (EOF is never consumed)."""
        token = self.tokens[self.pos]
        if token.kind != "EOF":
            self.pos += 1
        return token

    def at(self, *kinds: str) -> bool:
        """Whether the current token is of one of ``kinds``."""
        return self.tok.kind in kinds

    def accept(self, kind: str) -> Token | None:
        """Consume the current token if it is of ``kind``."""
        if self.tok.kind == kind:
            return self.advance()
        return None

    def comma_list(self, end: str, item: Callable[[], T]) -> list[T]:
        """``item {',' item} [',']``, or nothing, up to the token ``end`` (not consumed)."""
        items: list[T] = []
        while not self.at(end):
            items.append(item())
            if not self.accept(","):
                break
        return items

    def expect(self, kind: str, context: str) -> Token:
        """Consume a token of ``kind`` or fail with "expected 'kind' <context>"."""
        if self.tok.kind == kind:
            return self.advance()
        self._error_expected(f"'{kind}'", context)

    @staticmethod
    def describe(token: Token) -> str:
        """How an error message quotes ``token``."""
        if token.kind == "EOF":
            return "end of file"
        if token.kind == "UNEXPECTED":
            return f"unexpected character '{token.text}'"
        return f"'{token.text}'"

    def _error(self, loc: Loc, message: str) -> NoReturn:
        """The single exit for syntax errors."""
        raise P4SourceError(loc, message)

    def _error_expected(self, what: str, context: str) -> NoReturn:
        self._error(self.tok.loc, f"expected {what} {context}, found {self.describe(self.tok)}")

    def speculate(self, parse: Callable[[], T]) -> T | None:
        """Run ``parse``; on a syntax error restore the position and return None."""
        saved = self.pos
        try:
            return parse()
        except P4SourceError:
            self.pos = saved
            return None

    # -----------------------------------------------------------------------
    # Scopes

    def push_scope(self) -> None:
        """Open a nested scope."""
        self.scopes.append({})

    def pop_scope(self) -> None:
        """Close the innermost scope."""
        self.scopes.pop()

    def declare_type(self, name: str) -> None:
        """Declare ``name`` as a type in the innermost scope."""
        self.scopes[-1][name] = True

    def declare_object(self, name: str) -> None:
        """Declare ``name`` as a value in the innermost scope (hiding outer types)."""
        self.scopes[-1][name] = False

    def is_type_name(self, name: str, absolute: bool = False) -> bool:
        """Whether ``name`` denotes a type here (``absolute``: at top level, for ``.name``)."""
        if absolute:
            return self.scopes[0].get(name, False)
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return False

    def type_names(self) -> list[str]:
        """Every type name visible in the current scope."""
        visible: dict[str, bool] = {}
        for scope in self.scopes:
            visible.update(scope)
        return [name for name, is_type in visible.items() if is_type]

    def _is_type_ident(self, token: Token) -> bool:
        return token.kind == "IDENT" and self.is_type_name(token.text)

    def _at_type_start(self, offset: int = 0) -> bool:
        """Whether the token at ``offset`` begins a typeRef."""
        token = self.peek(offset)
        if token.kind in BASE_TYPE_KEYWORDS:
            return True
        if token.kind == ".":
            after = self.peek(offset + 1)
            return after.kind == "IDENT" and self.is_type_name(after.text, absolute=True)
        return self._is_type_ident(token)

    # -----------------------------------------------------------------------
    # Names

    def _at_non_type_name(self, offset: int = 0) -> bool:
        token = self.peek(offset)
        if token.kind == "IDENT":
            return not self.is_type_name(token.text)
        return token.kind in NON_TYPE_NAME_KEYWORDS

    def _at_name(self, offset: int = 0) -> bool:
        token = self.peek(offset)
        return token.kind == "IDENT" or token.kind in NAME_KEYWORDS

    def _at_word(self) -> bool:
        """Whether the current token is an identifier or any keyword."""
        return self.tok.kind == "IDENT" or self.tok.kind in KEYWORDS

    def _parse_name(self, context: str) -> Token:
        """name : nonTypeName | LIST | TYPE_IDENTIFIER ;"""
        if self._at_name():
            return self.advance()
        self._error_expected("a name", context)

    def _parse_non_type_name(self, context: str) -> Token:
        """nonTypeName : IDENTIFIER | APPLY | KEY | ACTIONS | STATE | ENTRIES | TYPE | PRIORITY ;"""
        if self._at_non_type_name():
            return self.advance()
        if self._is_type_ident(self.tok):
            self._error(
                self.tok.loc, f"expected a name {context}, found type name '{self.tok.text}'"
            )
        self._error_expected("a name", context)

    def _parse_member_name(self, context: str) -> Token:
        """member : name ;  (any identifier or keyword is accepted after '.')"""
        if self._at_word():
            return self.advance()
        self._error_expected("a member name", context)

    def _parse_prefixed_non_type_name(self, context: str) -> ast.Path:
        """prefixedNonTypeName : nonTypeName | dotPrefix nonTypeName ;"""
        dot = self.accept(".")
        name = self._parse_non_type_name(context)
        return ast.Path(dot.loc if dot else name.loc, name.text, absolute=dot is not None)
