"""Tests of the P4_16 parser: tree shapes, ambiguities, locations, errors, fuzzing."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from softswitch.errors import Loc, P4SourceError
from softswitch.frontend import ast, parse_file, parse_text
from softswitch.frontend.lexer import tokenize

PROGRAMS = Path(__file__).parent / "programs"
TOUR = PROGRAMS / "syntax_tour.p4"


def sexpr(node: object) -> str:  # noqa: C901 - one case per node kind of the parse tree
    """A compact, location-free rendering of an expression or type."""
    if isinstance(node, ast.Binary):
        return f"({node.op} {sexpr(node.left)} {sexpr(node.right)})"
    if isinstance(node, ast.Unary):
        return f"({node.op} {sexpr(node.operand)})"
    if isinstance(node, ast.Ternary):
        return f"(? {sexpr(node.cond)} {sexpr(node.then)} {sexpr(node.else_)})"
    if isinstance(node, ast.NameExpression):
        return str(node.path)
    if isinstance(node, ast.IntLiteral):
        return node.text
    if isinstance(node, ast.BoolLiteral):
        return str(node.value).lower()
    if isinstance(node, ast.Member):
        return f"{sexpr(node.expr)}.{node.member}"
    if isinstance(node, ast.Index):
        return f"{sexpr(node.expr)}[{sexpr(node.index)}]"
    if isinstance(node, ast.Slice):
        return f"{sexpr(node.expr)}[{sexpr(node.hi)}:{sexpr(node.lo)}]"
    if isinstance(node, ast.PlusSlice):
        return f"{sexpr(node.expr)}[{sexpr(node.base)}+:{sexpr(node.width)}]"
    if isinstance(node, ast.Call):
        targs = f"<{','.join(sexpr(t) for t in node.type_args)}>" if node.type_args else ""
        return f"{sexpr(node.method)}{targs}({','.join(sexpr(a.value) for a in node.args)})"
    if isinstance(node, ast.ConstructorCall):
        return f"new {sexpr(node.type_ref)}({','.join(sexpr(a.value) for a in node.args)})"
    if isinstance(node, ast.Cast):
        return f"(cast {sexpr(node.target)} {sexpr(node.expr)})"
    if isinstance(node, ast.TypeNameExpression):
        return f"type:{sexpr(node.type_ref)}"
    if isinstance(node, ast.ListExpression):
        return "{" + ",".join(sexpr(e) for e in node.elements) + "}"
    if isinstance(node, ast.StructExpression):
        fields = ",".join(f"{kv.key}={sexpr(kv.value)}" for kv in node.fields)
        return "{" + fields + (",..." if node.dots else "") + "}"
    if isinstance(node, ast.BitsType):
        base = "int" if node.signed else "bit"
        return base if node.width is None else f"{base}<{sexpr(node.width)}>"
    if isinstance(node, ast.TypeName):
        return str(node.path)
    if isinstance(node, ast.SpecializedType):
        return f"{sexpr(node.base)}<{','.join(sexpr(t) for t in node.args)}>"
    if isinstance(node, ast.TupleType):
        return f"tuple<{','.join(sexpr(t) for t in node.elements)}>"
    if isinstance(node, ast.HeaderStackType):
        return f"{sexpr(node.element)}[{sexpr(node.size)}]"
    if isinstance(node, ast.DefaultExpression):
        return "default"
    if isinstance(node, ast.DontCareExpression):
        return "_"
    if isinstance(node, ast.ErrorType):
        return "error"
    if isinstance(node, ast.InvalidHeaderExpression):
        return "{#}"
    return type(node).__name__


PRELUDE = "header H { bit<8> f; } struct S<T> { T a; } extern E<T> { E(); T get(); }\n"


def expr(text: str) -> str:
    """Parse ``text`` as the value of a constant and render it."""
    program = parse_text(f"{PRELUDE}const bit<8> c = {text};")
    declaration = program.declarations[-1]
    assert isinstance(declaration, ast.ConstantDeclaration)
    return sexpr(declaration.value)


def body(statements: str) -> list[ast.StatOrDecl]:
    """Parse ``statements`` as the apply block of a control and return its items."""
    program = parse_text(f"{PRELUDE}control C(inout H h) {{ apply {{ {statements} }} }}")
    control = program.declarations[-1]
    assert isinstance(control, ast.ControlDeclaration)
    return control.body.items


def error_of(text: str, filename: str = "t.p4") -> P4SourceError:
    with pytest.raises(P4SourceError) as info:
        parse_text(text, filename)
    return info.value


# ---------------------------------------------------------------------------
# Expressions


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ("a + b * c", "(+ a (* b c))"),
        ("a - b - c", "(- (- a b) c)"),
        ("a & b == c", "(== (& a b) c)"),  # comparisons bind looser than '&' in P4
        ("a | b ^ c & d", "(| a (^ b (& c d)))"),
        ("a < b && c > d || e", "(|| (&& (< a b) (> c d)) e)"),
        ("a << 2 + 1", "(<< a (+ 2 1))"),
        ("a >> 1 >> 2", "(>> (>> a 1) 2)"),
        ("a ++ b |+| c |-| d", "(|-| (|+| (++ a b) c) d)"),
        ("-a.b[1]", "(- a.b[1])"),
        ("!a && ~b == +c", "(&& (! a) (== (~ b) (+ c)))"),
        ("a ? b : c", "(? a b c)"),
        ("a ? b ? 1 : 2 : c + 1", "(? a (? b 1 2) (+ c 1))"),
        ("a ? 1 : b ? 2 : 3", "(? (? a 1 b) 2 3)"),  # p4c's bison nests to the left
        ("(bit<4>) a + b", "(+ (cast bit<4> a) b)"),
        ("(bit<4>)(a + b)", "(cast bit<4> (+ a b))"),
        ("(H) a", "(cast H a)"),
        ("(a) + b", "(+ a b)"),
        ("x[7:0] ++ x[8 +: 4]", "(++ x[7:0] x[8+:4])"),
        ("x[a+b+:c]", "x[(+ a b)+:c]"),
        ("x[c ? 1 : 2]", "x[(? c 1 2)]"),
        ("f(a, b).g()", "f(a,b).g()"),
        ("f<H>(a)", "f<H>(a)"),
        ("f<bit<8>, H>(a)", "f<bit<8>,H>(a)"),
        ("a < b > (c)", "(> (< a b) c)"),  # b is not a type: comparisons
        ("x.y<S<H>>()", "x.y<S<H>>()"),
        ("E<H>().get()", "new E<H>().get()"),
        ("H.minSizeInBits()", "type:H.minSizeInBits()"),
        ("error.NoError", "type:error.NoError"),
        (".top + 1", "(+ .top 1)"),
        ("{a, b, {c}}", "{a,b,{c}}"),
        ("{f = 1, g = a}", "{f=1,g=a}"),
        ("{f = 1, ...}", "{f=1,...}"),
        ("(S<bit<8>>){ a = 1 }", "(cast S<bit<8>> {a=1})"),
        ("{#}", "{#}"),
        ("true && false", "(&& true false)"),
    ],
)
def test_expression_trees(text: str, tree: str) -> None:
    assert expr(text) == tree


def test_integer_literal_nodes() -> None:
    program = parse_text("const bit<8> c = 8w0x1F;")
    declaration = program.declarations[0]
    assert isinstance(declaration, ast.ConstantDeclaration)
    literal = declaration.value
    assert isinstance(literal, ast.IntLiteral)
    assert (literal.value, literal.width, literal.signed, literal.text) == (31, 8, False, "8w0x1F")
    assert literal.loc == Loc("<string>", 1, 18)


def test_expression_type_slot_starts_empty() -> None:
    program = parse_text("const bit<8> c = 1 + 2;")
    value = program.declarations[0]
    assert isinstance(value, ast.ConstantDeclaration)
    assert value.value.type is None


# ---------------------------------------------------------------------------
# Statements and the type-name / identifier ambiguity


def test_statement_kinds() -> None:
    items = body(
        """
        H x; bit<8> y = 1; const bit<8> z = 2;
        x.f = y; x.f += 1; y >>= 2; x.setValid(); E<H>() e;
        if (y == 1) { exit; } else return;
        switch (y) { 1: 2: { } default: { } }
        { ; }
        C.apply(h);
        """
    )
    shapes = [type(item).__name__ for item in items]
    assert shapes == [
        "VariableDeclaration", "VariableDeclaration", "ConstantDeclaration",
        "AssignmentStatement", "AssignmentStatement", "AssignmentStatement",
        "MethodCallStatement", "Instantiation", "IfStatement", "SwitchStatement",
        "BlockStatement", "MethodCallStatement",
    ]  # fmt: skip
    compound = items[4]
    shift = items[5]
    assert isinstance(compound, ast.AssignmentStatement)
    assert isinstance(shift, ast.AssignmentStatement)
    assert (compound.op, shift.op) == ("+=", ">>=")
    switch = items[9]
    assert isinstance(switch, ast.SwitchStatement)
    assert [c.body is None for c in switch.cases] == [True, False, False]
    direct = items[11]
    assert isinstance(direct, ast.MethodCallStatement)
    assert sexpr(direct.call) == "type:C.apply(h)"


def test_object_declaration_hides_a_type_of_the_same_name() -> None:
    # Inside the block, 'H' is a variable, so 'H(1);' is a call, not an instantiation.
    items = body("{ bit<8> H = 1; H(1); }")
    inner = items[0]
    assert isinstance(inner, ast.BlockStatement)
    assert isinstance(inner.items[1], ast.MethodCallStatement)
    # Outside the block 'H' is the header type again: 'H();' needs a name after it.
    error = error_of(f"{PRELUDE}control C() {{ apply {{ H(); }} }}")
    assert "expected a name after the constructor arguments" in error.message


def test_type_parameters_are_types_only_in_their_scope() -> None:
    program = parse_text(
        "extern void f<T>(in T x);\n"
        "T g<T>(in T x) { T y = x; return y; }\n"
        "control C() { apply { T(1); } }\n"
    )
    function = program.declarations[1]
    assert isinstance(function, ast.FunctionDeclaration)
    assert sexpr(function.return_type) == "T"
    assert [p.name for p in function.type_params] == ["T"]
    assert isinstance(function.body.items[0], ast.VariableDeclaration)
    control = program.declarations[2]
    assert isinstance(control, ast.ControlDeclaration)
    assert isinstance(control.body.items[0], ast.MethodCallStatement)


def test_statement_level_type_arguments_may_be_any_name() -> None:
    items = body("f<T>(x);")
    call = items[0]
    assert isinstance(call, ast.MethodCallStatement)
    assert sexpr(call.call) == "f<T>(x)"


def test_for_loops() -> None:
    items = body("for (bit<8> i = 0; i < 4; i = i + 1) { } for (bit<8> j in 1 .. 3) { }")
    loop, for_in = items
    assert isinstance(loop, ast.ForStatement)
    assert isinstance(loop.init[0], ast.VariableDeclaration)
    assert sexpr(loop.cond) == "(< i 4)"
    assert isinstance(for_in, ast.ForInStatement)
    assert (for_in.var_name, sexpr(for_in.collection)) == ("j", "(.. 1 3)")


# ---------------------------------------------------------------------------
# Declarations: the syntax tour program


@pytest.fixture(scope="module")
def tour() -> dict[str, ast.Declaration]:
    program = parse_text(TOUR.read_text(), "syntax_tour.p4")
    named: dict[str, ast.Declaration] = {}
    for declaration in program.declarations:
        name = getattr(declaration, "name", type(declaration).__name__)
        named[name] = declaration
    return named


def test_tour_type_declarations(tour: dict[str, ast.Declaration]) -> None:
    assert isinstance(tour["mac_t"], ast.TypedefDeclaration)
    assert isinstance(tour["port_t"], ast.NewTypeDeclaration)
    color = tour["Color"]
    assert isinstance(color, ast.EnumDeclaration)
    assert color.underlying is None
    assert [m.name for m in color.members] == ["Red", "Green", "Blue"]
    proto = tour["Proto"]
    assert isinstance(proto, ast.EnumDeclaration)
    assert proto.underlying is not None and sexpr(proto.underlying) == "bit<8>"
    assert [(m.name, sexpr(m.value)) for m in proto.members] == [("TCP", "6"), ("UDP", "0x11")]
    errors = tour["ErrorDeclaration"]
    assert isinstance(errors, ast.ErrorDeclaration)
    assert [m.name for m in errors.members] == ["NoError", "PacketTooShort"]
    assert isinstance(tour["ip_u"], ast.HeaderUnionDeclaration)
    pair = tour["pair"]
    assert isinstance(pair, ast.StructDeclaration)
    assert [p.name for p in pair.type_params] == ["T"]
    hdrs = tour["hdrs"]
    assert isinstance(hdrs, ast.StructDeclaration)
    assert [sexpr(f.type) for f in hdrs.fields] == ["eth_h", "vlan_h[2]", "VarbitType"]
    assert tour["hdrs"].loc == Loc("syntax_tour.p4", 15, 8)


def test_tour_externs(tour: dict[str, ast.Declaration]) -> None:
    checksum = tour["Checksum"]
    assert isinstance(checksum, ast.ExternDeclaration)
    assert [(m.name, m.is_constructor, m.abstract) for m in checksum.methods] == [
        ("Checksum", True, False),
        ("add", False, False),
        ("get", False, False),
        ("combine", False, True),
    ]
    assert checksum.methods[3].annotations[0].name == "noSideEffects"
    assert "E" not in tour  # a forward declaration adds no node
    crc = tour["crc"]
    assert isinstance(crc, ast.ExternFunctionDeclaration)
    assert [a.name for a in crc.annotations] == ["pure"]
    assert [t.name for t in crc.type_params] == ["D"]
    packet_in = tour["packet_in"]
    assert isinstance(packet_in, ast.ExternDeclaration)
    lookahead = packet_in.methods[1]
    assert lookahead.return_type is not None and sexpr(lookahead.return_type) == "T"


def test_tour_parser(tour: dict[str, ast.Declaration]) -> None:
    parser = tour["MyPrs"]
    assert isinstance(parser, ast.ParserDeclaration)
    assert [p.name for p in parser.ctor_params] == ["depth"]
    assert [type(d).__name__ for d in parser.locals] == [
        "ValueSetDeclaration",
        "VariableDeclaration",
    ]
    start = parser.states[0]
    assert start.transition is not None
    select = start.transition.target
    assert isinstance(select, ast.SelectExpression)
    assert [sexpr(e) for e in select.exprs] == ["h.eth.type", "n"]
    assert [(sexpr(c.keyset), str(c.state)) for c in select.cases] == [
        ("{ETH_IPV4,(&&& 8w0 8w0xF0)}", "parse_vlan"),
        ("{(.. 16w1 16w5),_}", "accept"),
        ("{vs,default}", "reject"),
        ("default", "accept"),
    ]
    vlan = parser.states[1]
    assert vlan.transition is not None
    assert isinstance(vlan.transition.target, ast.SelectExpression)
    assert sexpr(vlan.transition.target.exprs[0]) == "p.lookahead<bit<16>>()"


def test_tour_control_and_table(tour: dict[str, ast.Declaration]) -> None:
    control = tour["MyCtl"]
    assert isinstance(control, ast.ControlDeclaration)
    checksum = control.locals[0]
    assert isinstance(checksum, ast.Instantiation)
    assert checksum.initializer is not None
    assert isinstance(checksum.initializer[0], ast.FunctionDeclaration)
    table = control.locals[3]
    assert isinstance(table, ast.TableDeclaration)
    assert [p.name for p in table.properties] == [
        "key", "actions", "default_action", "entries", "size", "largest_priority_wins",
        "implementation",
    ]  # fmt: skip
    key = table.property("key")
    assert isinstance(key, ast.KeyProperty)
    assert [(sexpr(k.expr), str(k.match_kind)) for k in key.elements] == [
        ("h.eth.dst", "exact"),
        ("(& h.eth.type 0xFF00)", "ternary"),
    ]
    assert key.elements[0].annotations[0].expressions is not None
    actions = table.property("actions")
    assert isinstance(actions, ast.ActionsProperty)
    assert [(str(a.name), [x.name for x in a.annotations]) for a in actions.actions] == [
        ("set", []),
        ("nop", ["defaultonly"]),
        (".nop", []),
    ]
    default = table.property("default_action")
    assert isinstance(default, ast.ExpressionProperty)
    assert default.const and sexpr(default.value) == "nop()"
    entries = table.property("entries")
    assert isinstance(entries, ast.EntriesProperty)
    assert entries.const
    rendered = [
        (e.const, sexpr(e.priority) if e.priority else None, sexpr(e.keyset), str(e.action.name))
        for e in entries.entries
    ]
    assert rendered == [
        (False, None, "{0x1,(&&& 0x0800 0xFF00)}", "set"),
        (False, "10", "{_,_}", "nop"),
        (True, "(+ 5 5)", "{0x2,default}", "set"),
    ]
    assert entries.entries[1].annotations[0].name == "name"
    implementation = table.property("implementation")
    assert implementation is not None
    assert [a.name for a in implementation.annotations] == ["name"]


def test_tour_instantiation_of_package(tour: dict[str, ast.Declaration]) -> None:
    main = tour["main"]
    assert isinstance(main, ast.Instantiation)
    assert [sexpr(a.value) for a in main.args] == ["new MyPrs(3)", "new MyCtl()"]


def test_parser_type_control_type_package(tour: dict[str, ast.Declaration]) -> None:
    prs = tour["Prs"]
    assert isinstance(prs, ast.ParserTypeDeclaration)
    assert [(p.direction, p.name) for p in prs.params] == [(None, "p"), ("out", "h")]
    assert isinstance(tour["Ctl"], ast.ControlTypeDeclaration)
    assert isinstance(tour["Pkg"], ast.PackageTypeDeclaration)


# ---------------------------------------------------------------------------
# Annotations


def test_annotations_keep_raw_text_and_parsed_expressions() -> None:
    program = parse_text(
        '@name("x.y") @id(0x10) @hidden @weird(a b (c d)) @kv(k = 1, j = "s")\n'
        '@structured[a = 1, b = "two"] @list[1, 2,] @pragma my_pragma 1 2\n'
        "header H { @field_list(1, 2) bit<8> f; }"
    )
    header = program.declarations[0]
    assert isinstance(header, ast.HeaderDeclaration)
    notes = {a.name: a for a in header.annotations}
    name = notes["name"]
    assert name.raw == '"x.y"'
    assert name.expressions is not None
    assert isinstance(name.expressions[0], ast.StringLiteral)
    assert name.expressions[0].value == "x.y"
    identifier = notes["id"].expressions
    assert identifier is not None and sexpr(identifier[0]) == "0x10"
    assert notes["hidden"].raw == "" and notes["hidden"].expressions is None
    weird = notes["weird"]
    assert weird.raw == "a b ( c d )" and weird.expressions is None
    pairs = notes["kv"].pairs
    assert pairs is not None and [p.key for p in pairs] == ["k", "j"]
    structured = notes["structured"]
    assert structured.structured and structured.pairs is not None
    rendered = [(p.key, sexpr(p.value)) for p in structured.pairs]
    assert rendered == [("a", "1"), ("b", "StringLiteral")]
    listed = notes["list"].expressions
    assert listed is not None and [sexpr(e) for e in listed] == ["1", "2"]
    pragma = notes["my_pragma"]
    assert pragma.raw == "1 2"
    assert header.fields[0].annotations[0].name == "field_list"


# ---------------------------------------------------------------------------
# Files, preprocessing and locations


def test_parse_file_with_v1model_include() -> None:
    program = parse_file(str(PROGRAMS / "v1model_basic.p4"))
    names = [getattr(d, "name", None) for d in program.declarations]
    assert "V1Switch" in names  # from softswitch/p4include/v1model.p4
    ingress = next(d for d in program.declarations if getattr(d, "name", "") == "MyIngress")
    assert ingress.loc == Loc(str(PROGRAMS / "v1model_basic.p4"), 19, 9)
    core = next(d for d in program.declarations if getattr(d, "name", "") == "packet_in")
    assert core.loc.file.endswith("p4include/core.p4")


def test_parse_file_locations_and_defines(tmp_path: Path) -> None:
    includer = str(PROGRAMS / "includer.p4")
    with pytest.raises(P4SourceError) as info:
        parse_file(includer)
    assert info.value.loc == Loc(includer, 7, 18)
    assert info.value.message == "expected an expression here, found ';'"
    with pytest.raises(P4SourceError) as info:
        parse_file(includer, (), {"EXTRA": ""})
    assert info.value.loc == Loc(includer, 7, 18)

    good = tmp_path / "good.p4"
    good.write_text(f'#include "{PROGRAMS / "included.p4"}"\nstruct s {{ bit<W> a; }}\n')
    program = parse_file(str(good), defines={"W": "12"})
    included, struct = program.declarations
    assert included.loc == Loc(str(PROGRAMS / "included.p4"), 1, 8)
    assert struct.loc == Loc(str(good), 2, 8)
    assert isinstance(struct, ast.StructDeclaration)
    assert sexpr(struct.fields[0].type) == "bit<12>"


def test_include_dirs_are_searched(tmp_path: Path) -> None:
    main = tmp_path / "main.p4"
    main.write_text("#include <included.p4>\n")
    program = parse_file(str(main), include_dirs=[str(PROGRAMS)])
    assert isinstance(program.declarations[0], ast.HeaderDeclaration)


def test_preprocessor_failures_are_located(tmp_path: Path) -> None:
    main = tmp_path / "main.p4"
    main.write_text('header h { bit<8> f; }\n#include "missing.p4"\n')
    with pytest.raises(P4SourceError) as info:
        parse_file(str(main))
    assert info.value.loc == Loc(str(main), 2, 10)
    assert "missing.p4: No such file or directory" in info.value.message
    main.write_text("#error stop here\n")
    with pytest.raises(P4SourceError) as info:
        parse_file(str(main))
    assert info.value.loc.line == 1 and "stop here" in info.value.message
    with pytest.raises(P4SourceError, match="no such file"):
        parse_file(str(tmp_path / "nope.p4"))


# ---------------------------------------------------------------------------
# Error messages


ERROR_CASES = [
    (
        "struct headers {} control C(inout heders h) { apply {} }",
        (1, 35),
        "expected a type for a parameter of control 'C', found 'heders', which is not a "
        "type name; did you mean 'headers'?",
    ),
    (
        "struct headers {} control C() { apply { heders h; } }",
        (1, 41),
        "unknown type 'heders' in the declaration of 'h'; did you mean 'headers'?",
    ),
    (
        "headr H { bit<8> f; }",
        (1, 1),
        "unknown type 'headr'; expected a declaration; did you mean 'header'?",
    ),
    (
        '@name("x") 42',
        (1, 12),
        "expected a declaration at top level, found '42'",
    ),
    (
        "header H { bit<8> f }",
        (1, 21),
        "expected ';' after field 'f' of 'H', found '}'",
    ),
    (
        "const bit<8> x = 1",
        (1, 19),
        "expected ';' after the value of constant 'x', found end of file",
    ),
    (
        "struct S { foo x; }",
        (1, 12),
        "expected a type for a field of 'S', found 'foo', which is not a type name",
    ),
    (
        "control C() { apply { x = ; } }",
        (1, 27),
        "expected an expression here, found ';'",
    ),
    (
        "control C() { apply { x + 1; } }",
        (1, 25),
        "expected '=' or '(' after the target of a statement, found '+'",
    ),
    (
        "control C() { apply { } ",
        (1, 25),
        "expected '}' after the apply block of control 'C', found end of file",
    ),
    (
        "parser P() { state s { transition select(x) { 1: } } }",
        (1, 50),
        "expected a name as the next state of a select case, found '}'",
    ),
    (
        "control C() { table t { key = { x; } } apply {} }",
        (1, 34),
        "expected ':' after a key field of table 't', found ';'",
    ),
    (
        "bit<8> x;",
        (1, 8),
        "variable 'x' cannot be declared at the top level; expected '(' for a function declaration",
    ),
    (
        "Foo(1) f;",
        (1, 1),
        "unknown type 'Foo'; expected a declaration",
    ),
    (
        "control C() { apply { x = $; } }",
        (1, 27),
        "expected an expression here, found unexpected character '$'",
    ),
    (
        '@name("x" header H {}',
        (1, 6),
        "unbalanced '(' in the body of annotation '@name'",
    ),
    (
        "control C() { apply { x = _; } }",
        (1, 27),
        "'_' (don't care) is only allowed as an argument or keyset",
    ),
    (
        "parser P() { }",
        (1, 8),
        "parser 'P' has no states",
    ),
    (
        "control C() { apply { if (x { } } }",
        (1, 29),
        "expected ')' after the condition of 'if', found '{'",
    ),
]


@pytest.mark.parametrize(("text", "loc", "message"), ERROR_CASES)
def test_error_messages(text: str, loc: tuple[int, int], message: str) -> None:
    error = error_of(text)
    assert (error.loc.line, error.loc.col) == loc
    assert error.message == message
    assert str(error) == f"t.p4:{loc[0]}:{loc[1]}: error: {message}"


def test_deep_nesting_is_a_source_error() -> None:
    error = error_of("const bit<8> x = " + "(" * 2000 + "1" + ")" * 2000 + ";")
    assert "nested too deeply" in error.message


# ---------------------------------------------------------------------------
# Fuzzing: any input gives a tree or a P4SourceError, nothing else


TOUR_TOKENS = [t.text for t in tokenize(TOUR.read_text())][:-1]
VOCABULARY = sorted(set(TOUR_TOKENS) | {"$", "#", "'", "{#}", "...", "\\"})


def _parse_or_source_error(text: str) -> None:
    try:
        program = parse_text(text, "fuzz.p4")
    except P4SourceError as error:
        assert error.loc.file == "fuzz.p4"
        return
    assert all(dataclasses.is_dataclass(d) for d in program.declarations)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=len(TOUR_TOKENS) - 1),
            st.sampled_from(["delete", "insert", "swap"]),
            st.sampled_from(VOCABULARY),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_fuzz_mutated_program(edits: list[tuple[int, str, str]]) -> None:
    tokens = list(TOUR_TOKENS)
    for position, action, word in edits:
        index = position % len(tokens)
        if action == "delete":
            del tokens[index]
        elif action == "insert":
            tokens.insert(index, word)
        else:
            tokens[index] = word
    _parse_or_source_error(" ".join(tokens))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(VOCABULARY), max_size=40))
def test_fuzz_random_token_soup(words: list[str]) -> None:
    _parse_or_source_error(" ".join(words))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_fuzz_random_text(text: str) -> None:
    _parse_or_source_error(text)
