"""The P4_16 front-end: source text to syntax tree (and, later, to typed IR).

    parse_file(path, include_dirs=(), defines=None) -> ast.Program   # cpp, then parse
    parse_text(text, filename="<string>") -> ast.Program             # parse only

Both raise :class:`softswitch.errors.P4SourceError` for any bad input.
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
