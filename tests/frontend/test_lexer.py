"""Tests of the P4 lexer: token kinds, integer literals, locations, line markers."""

from __future__ import annotations

import pytest

from softswitch.errors import Loc, P4SourceError
from softswitch.frontend.lexer import IntValue, string_value, tokenize


def kinds(text: str) -> list[str]:
    return [token.kind for token in tokenize(text)][:-1]


def located(text: str, filename: str) -> list[tuple[str, Loc]]:
    """The text and location of each token of ``text`` (read from ``filename``)."""
    return [(token.text, token.loc) for token in tokenize(text, filename)][:-1]


@pytest.mark.parametrize(
    ("spelling", "value"),
    [
        ("0", IntValue(0, None, False)),
        ("1_000", IntValue(1000, None, False)),
        ("010", IntValue(10, None, False)),
        ("0x1F", IntValue(31, None, False)),
        ("0XfF", IntValue(255, None, False)),
        ("0b1010", IntValue(10, None, False)),
        ("0o17", IntValue(15, None, False)),
        ("0d99", IntValue(99, None, False)),
        ("8w5", IntValue(5, 8, False)),
        ("8w0xFF", IntValue(255, 8, False)),
        ("16w0b1111_0000", IntValue(0xF0, 16, False)),
        ("4s3", IntValue(3, 4, True)),
        ("32s0d100", IntValue(100, 32, True)),
        ("9w0o777", IntValue(511, 9, False)),
        ("0w0", IntValue(0, 0, False)),
    ],
)
def test_integer_literals(spelling: str, value: IntValue) -> None:
    tokens = tokenize(spelling)
    assert [t.kind for t in tokens] == ["INTEGER", "EOF"]
    assert tokens[0].int_value == value
    assert tokens[0].text == spelling


def test_sign_is_not_part_of_a_literal() -> None:
    assert kinds("-8s1") == ["-", "INTEGER"]
    # "4s-1" is no literal in P4 (nor in p4c): it is 4, s, -, 1.
    assert kinds("4s-1") == ["INTEGER", "IDENT", "-", "INTEGER"]


def test_literal_followed_by_identifier_characters() -> None:
    assert kinds("0xZ") == ["INTEGER", "IDENT"]
    assert kinds("5w") == ["INTEGER", "IDENT"]


def test_literal_without_digits_is_an_error() -> None:
    with pytest.raises(P4SourceError, match="has no digits") as info:
        tokenize("\n  0x__", "f.p4")
    assert info.value.loc == Loc("f.p4", 2, 3)


def test_keywords_identifiers_and_punctuation() -> None:
    assert kinds("control Ctl_1 _ apply") == ["control", "IDENT", "_", "apply"]
    assert kinds("a &&& b .. c ... d") == ["IDENT", "&&&", "IDENT", "..", "IDENT", "...", "IDENT"]
    assert kinds("a |+| b |-| c ++ d") == ["IDENT", "|+|", "IDENT", "|-|", "IDENT", "++", "IDENT"]
    assert kinds("h = {#};") == ["IDENT", "=", "{#}", ";"]
    assert kinds("a += 1; b |+|= 2; c <<= 3") == [
        "IDENT", "+=", "INTEGER", ";", "IDENT", "|+|=", "INTEGER", ";", "IDENT", "<<=", "INTEGER",
    ]  # fmt: skip


def test_right_shift_is_two_tokens_with_adjacency() -> None:
    tokens = tokenize("a >> b > > c >>= d")
    shift, second = tokens[1], tokens[2]
    assert (shift.kind, second.kind, second.space_before) == (">", ">", False)
    spaced = tokens[5]
    assert (tokens[4].kind, spaced.kind, spaced.space_before) == (">", ">", True)
    assert [t.kind for t in tokens[7:9]] == [">", ">="]
    assert not tokens[8].space_before


def test_locations_are_one_based_lines_and_columns() -> None:
    assert located("a\n  bb /* x\n y */ c\n\td", "p.p4") == [
        ("a", Loc("p.p4", 1, 1)),
        ("bb", Loc("p.p4", 2, 3)),
        ("c", Loc("p.p4", 3, 7)),
        ("d", Loc("p.p4", 4, 2)),
    ]


def test_line_markers_redirect_locations() -> None:
    text = '# 1 "main.p4"\nx\n# 10 "inc.p4" 1\ny\n  z\n#line 3 "main.p4"\nw\n'
    assert located(text, "<cpp>") == [
        ("x", Loc("main.p4", 1, 1)),
        ("y", Loc("inc.p4", 10, 1)),
        ("z", Loc("inc.p4", 11, 3)),
        ("w", Loc("main.p4", 3, 1)),
    ]


def test_pragma_lines_are_ignored_and_other_directives_rejected() -> None:
    assert kinds("#pragma once\nx") == ["IDENT"]
    with pytest.raises(P4SourceError, match="'#include' in unpreprocessed text") as info:
        tokenize('x\n  #include "a.p4"\n', "f.p4")
    assert info.value.loc == Loc("f.p4", 2, 3)


def test_strings_keep_escapes_and_may_span_lines() -> None:
    tokens = tokenize('"a\\"b\\\\" "two\nlines" x')
    assert [t.kind for t in tokens[:-1]] == ["STRING", "STRING", "IDENT"]
    assert string_value(tokens[0]) == 'a\\"b\\\\'
    assert string_value(tokens[1]) == "two\nlines"
    assert tokens[2].loc.line == 2


def test_unterminated_comment_and_string() -> None:
    with pytest.raises(P4SourceError, match="unterminated comment") as info:
        tokenize("a\n /* no end", "f.p4")
    assert info.value.loc == Loc("f.p4", 2, 2)
    with pytest.raises(P4SourceError, match="unterminated string") as info:
        tokenize('x = "abc', "f.p4")
    assert info.value.loc == Loc("f.p4", 1, 5)


def test_unknown_characters_become_unexpected_tokens() -> None:
    tokens = tokenize("a $ `")
    assert [(t.kind, t.text) for t in tokens[:-1]] == [
        ("IDENT", "a"),
        ("UNEXPECTED", "$"),
        ("UNEXPECTED", "`"),
    ]


def test_first_on_line_marks_line_starts() -> None:
    tokens = tokenize("a b\n c // d\ne")
    assert [t.first_on_line for t in tokens[:-1]] == [True, False, True, True]
