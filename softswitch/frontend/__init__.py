"""The P4_16 front-end: source text to syntax tree (and, later, to typed IR).

    parse_file(path, include_dirs=(), defines=None) -> ast.Program   # cpp, then parse
    parse_text(text, filename="<string>") -> ast.Program             # parse only

Both raise :class:`softswitch.errors.P4SourceError` for any bad input.

Modules, in the order data flows through them::

    preprocess   the C preprocessor over a P4 file, as p4c runs it before parsing
    lexer        preprocessed text -> tokens, each with its original location
    parser       recursive descent, tokens -> ast (the untyped syntax tree); its
                 parser_base (the token cursor, scopes, name rules) and parser_expr
                 (parameters, arguments, annotations, types, expressions)
    scope        lexical scopes and the symbols the checker binds names to
    types        the P4_16 types the checker computes, and the operations on them
    typecheck    types and expressions, lowered to the typed ir
    stmtcheck    calls, statements, actions and functions, over typecheck
    unreached    the declarations main never reaches, type-checked all the same
    constfold    the arithmetic of P4_16 values (constant folding, and the interpreter)
    elaborate    instantiate main and build the ir.Program
    ir           the elaborated, typed program the interpreter and p4info read
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from softswitch.frontend import ast
from softswitch.frontend.parser import parse_source
from softswitch.frontend.preprocess import preprocess

__all__ = ["parse_file", "parse_text"]


def parse_file(
    path: str, include_dirs: Sequence[str] = (), defines: Mapping[str, str] | None = None
) -> ast.Program:
    """Preprocess ``path`` with cpp (include path ending with softswitch/p4include/)
    and parse it; every location names the original file and line."""
    return parse_source(preprocess(path, include_dirs, defines), path)


def parse_text(text: str, filename: str = "<string>") -> ast.Program:
    """Parse P4 text that needs no preprocessing; locations name ``filename``."""
    return parse_source(text, filename)


def load_program(
    path: str, include_dirs: Sequence[str] = (), defines: Mapping[str, str] | None = None
) -> ir.Program:
    """Parse, type-check and elaborate ``path`` into the program the interpreter
    and the P4Info extractor read (raises P4SourceError / UnsupportedError)."""
    return elaborate_program(parse_file(path, include_dirs, defines), path)


def elaborate_program(program: ast.Program, source: str = "<string>") -> ir.Program:
    """Type-check and elaborate an already parsed program."""
    from softswitch.frontend.elaborate import Elaborator

    return Elaborator(source).run(program)


from softswitch.frontend import ir  # noqa: E402

__all__ += ["elaborate_program", "load_program"]
