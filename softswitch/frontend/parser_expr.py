"""Parameters, arguments, annotations, types and expressions of P4_16 (see :mod:`.parser`).

These rules call one another (a type's width is an expression, an expression
may be a cast to a type, annotations hold expressions), so they share one
module; :class:`ExprParser` is the base of the declaration and statement
parser.  Binary operators are parsed by precedence climbing driven by
:data:`~.parser_base.BINARY_PRECEDENCE`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kvfabric.suggest import did_you_mean
from softswitch.errors import Loc, P4SourceError
from softswitch.frontend import ast
from softswitch.frontend.lexer import Token, string_value
from softswitch.frontend.parser_base import (
    BASE_TYPE_KEYWORDS,
    BINARY_PRECEDENCE,
    DIRECTIONS,
    PREFIX_OPERATORS,
    ParserBase,
)


class ExprParser(ParserBase):
    """Parameters, arguments, annotations, type references and expressions."""

    # -----------------------------------------------------------------------
    # Parameters, type parameters, arguments

    def _parse_parameter_list(self, context: str) -> list[ast.Parameter]:
        """parameterList : /* empty */ | nonEmptyParameterList ;  (after '(', through ')')"""
        params: list[ast.Parameter] = []
        if self.accept(")"):
            return params
        while True:
            params.append(self._parse_parameter(context))
            if self.accept(")"):
                return params
            self.expect(",", f"or ')' after a parameter {context}")

    def _parse_parameter(self, context: str) -> ast.Parameter:
        """parameter : optAnnotations direction typeRef name
        | optAnnotations direction typeRef name '=' expression ;"""
        annotations = self._parse_opt_annotations()
        direction: ast.Direction | None = None
        if self.tok.kind in DIRECTIONS:
            kind = self.advance().kind
            direction = "in" if kind == "in" else "out" if kind == "out" else "inout"
        type_ref = self._parse_type_ref(f"for a parameter {context}")
        name = self._parse_name(f"for a parameter {context}")
        default = None
        if self.accept("="):
            default = self._parse_expression()
        self.declare_object(name.text)
        return ast.Parameter(name.loc, type_ref, name.text, direction, default, annotations)

    def _parse_opt_type_parameters(self) -> list[ast.Ident]:
        """optTypeParameters : /* empty */ | '<' typeParameterList '>' ;
        Declares each type parameter as a type in the current scope."""
        params: list[ast.Ident] = []
        if not self.accept("<"):
            return params
        while True:
            name = self._parse_name("in a type parameter list")
            self.declare_type(name.text)
            params.append(ast.Ident(name.loc, name.text))
            if self.accept(">"):
                return params
            self.expect(",", "or '>' in a type parameter list")

    def _parse_argument_list(self, context: str) -> list[ast.Argument]:
        """argumentList : /* empty */ | nonEmptyArgList ;  (after '(', through ')')"""
        args: list[ast.Argument] = []
        if self.accept(")"):
            return args
        while True:
            args.append(self._parse_argument())
            if self.accept(")"):
                return args
            self.expect(",", f"or ')' after an argument {context}")

    def _parse_argument(self) -> ast.Argument:
        """argument : expression | name '=' expression | '_' | name '=' '_' ;"""
        start = self.tok.loc
        name: str | None = None
        if self._at_name() and self.peek().kind == "=":
            name = self.advance().text
            self.advance()
        if self.at("_"):
            value: ast.Expression = ast.DontCareExpression(self.advance().loc)
        else:
            value = self._parse_expression()
        return ast.Argument(start, value, name)

    # -----------------------------------------------------------------------
    # Annotations

    def _parse_opt_annotations(self) -> list[ast.Annotation]:
        """optAnnotations : /* empty */ | annotations ;  annotations : annotation+ ;"""
        annotations: list[ast.Annotation] = []
        while self.at("@"):
            annotations.append(self._parse_annotation())
        return annotations

    def _parse_annotation(self) -> ast.Annotation:
        """annotation : '@' name | '@' name '(' annotationBody ')'
        | '@' name '[' structuredAnnotationBody ']' | PRAGMA name annotationBody END_PRAGMA ;"""
        at = self.expect("@", "")
        if not self._at_word():
            self._error_expected("an annotation name", "after '@'")
        name = self.advance()
        if name.text == "pragma":
            return self._parse_pragma(at)
        if self.at("("):
            body = self._parse_annotation_body(name.text)
            annotation = ast.Annotation(at.loc, name.text, _join_tokens(body))
            sub = type(self)([*body, _eof_after(body, self.tok)], self.scopes)
            annotation.pairs = sub.speculate(sub._parse_kv_list_to_end)
            if annotation.pairs is None:
                annotation.expressions = sub.speculate(sub._parse_expression_list_to_end)
            return annotation
        if self.at("["):
            return self._parse_structured_annotation(at.loc, name.text)
        return ast.Annotation(at.loc, name.text)

    def _parse_pragma(self, at: Token) -> ast.Annotation:
        """``@pragma name tokens...`` up to the end of the line (P4-14 compatibility)."""
        name = self._parse_name("after '@pragma'")
        body: list[Token] = []
        while not self.at("EOF") and not self.tok.first_on_line:
            body.append(self.advance())
        annotation = ast.Annotation(at.loc, name.text, _join_tokens(body))
        sub = type(self)([*body, _eof_after(body, self.tok)], self.scopes)
        annotation.expressions = sub.speculate(sub._parse_expression_list_to_end)
        return annotation

    def _parse_annotation_body(self, name: str) -> list[Token]:
        """annotationBody : /* empty */ | annotationBody '(' annotationBody ')'
        | annotationBody annotationToken ;  (between the outer parentheses)"""
        opening = self.expect("(", "")
        depth = 1
        body: list[Token] = []
        while True:
            token = self.tok
            if token.kind == "EOF":
                self._error(opening.loc, f"unbalanced '(' in the body of annotation '@{name}'")
            self.advance()
            if token.kind == "(":
                depth += 1
            elif token.kind == ")":
                depth -= 1
                if depth == 0:
                    return body
            body.append(token)

    def _parse_structured_annotation(self, loc: Loc, name: str) -> ast.Annotation:
        """structuredAnnotationBody : expressionList optTrailingComma
        | kvList optTrailingComma ;  (between '[' and ']')"""
        opening = self.expect("[", "")
        start = self.pos
        annotation = ast.Annotation(loc, name, structured=True)
        if self._at_name() and self.peek().kind == "=":
            annotation.pairs = self.comma_list("]", self._parse_kv_pair)
        else:
            annotation.expressions = self.comma_list("]", self._parse_expression)
        if not self.at("]"):
            self._error_expected(
                "']'", f"to close structured annotation '@{name}' opened at {opening.loc}"
            )
        annotation.raw = _join_tokens(self.tokens[start : self.pos])
        self.advance()
        return annotation

    def _parse_kv_list_to_end(self) -> list[ast.KeyValue]:
        """kvList : kvPair | kvList ',' kvPair ;  (the whole token list)"""
        pairs = [self._parse_kv_pair()]
        while self.accept(","):
            pairs.append(self._parse_kv_pair())
        self.expect("EOF", "after a key-value list")
        return pairs

    def _parse_expression_list_to_end(self) -> list[ast.Expression]:
        """expressionList : /* empty */ | expression | expressionList ',' expression ;"""
        expressions = self.comma_list("EOF", self._parse_expression)
        self.expect("EOF", "after an expression list")
        return expressions

    def _parse_kv_pair(self) -> ast.KeyValue:
        """kvPair : name '=' expression ;"""
        key = self._parse_name("as a key")
        self.expect("=", f"after key '{key.text}'")
        return ast.KeyValue(key.loc, key.text, self._parse_expression())

    # -----------------------------------------------------------------------
    # Types

    def _parse_type_ref(self, context: str) -> ast.Type:
        """typeRef : baseType | typeName | specializedType | headerStackType
        | p4listType | tupleType ;"""
        token = self.tok
        if token.kind in ("tuple", "list"):
            self.advance()
            self.expect("<", f"after '{token.kind}'")
            args = self._parse_type_argument_list(f"of '{token.kind}'")
            if token.kind == "tuple":
                return ast.TupleType(token.loc, args)
            if len(args) != 1:
                self._error(token.loc, "'list' takes exactly one type argument")
            return ast.ListType(token.loc, args[0])
        if token.kind in BASE_TYPE_KEYWORDS:
            return self._parse_base_type()
        if self._at_type_start():
            named = self._parse_named_type()
            if self.at("["):
                self.advance()
                size = self._parse_expression()
                self.expect("]", "after the size of a header stack")
                return ast.HeaderStackType(named.loc, named, size)
            return named
        if token.kind == "IDENT":
            self._error(
                token.loc,
                f"expected a type {context}, found '{token.text}', which is not a type name"
                + did_you_mean(token.text, self.type_names()),
            )
        self._error_expected("a type", context)

    def _parse_named_type(self) -> ast.TypeName | ast.SpecializedType:
        """namedType : typeName | specializedType ;
        typeName : prefixedType ;  prefixedType : TYPE_IDENTIFIER | dotPrefix TYPE_IDENTIFIER ;
        specializedType : typeName '<' typeArgumentList '>' ;"""
        dot = self.accept(".")
        name = self.advance()
        path = ast.Path(dot.loc if dot else name.loc, name.text, absolute=dot is not None)
        type_name = ast.TypeName(path.loc, path)
        if self.accept("<"):
            args = self._parse_type_argument_list(f"of '{name.text}'")
            return ast.SpecializedType(path.loc, type_name, args)
        return type_name

    def _parse_base_type(self) -> ast.Type:
        """baseType : BOOL | MATCH_KIND | ERROR | BIT | STRING | INT
        | BIT '<' INTEGER '>' | INT '<' INTEGER '>' | VARBIT '<' INTEGER '>'
        | BIT '<' '(' expression ')' '>' | INT '<' '(' expression ')' '>'
        | VARBIT '<' '(' expression ')' '>' ;
        (a width may also be a plain name, which p4c accepts too)"""
        token = self.advance()
        loc = token.loc
        simple: dict[str, Callable[[Loc], ast.Type]] = {
            "bool": ast.BoolType,
            "error": ast.ErrorType,
            "match_kind": ast.MatchKindType,
            "string": ast.StringType,
        }
        if token.kind in simple:
            return simple[token.kind](loc)
        if not self.at("<"):
            if token.kind == "bit":
                return ast.BitsType(loc, None)
            if token.kind == "int":
                return ast.IntType(loc)
            self._error_expected("'<'", "after 'varbit'")
        self.advance()
        if self.at("INTEGER"):
            width: ast.Expression = self._parse_integer_literal()
        elif self.at("("):
            self.advance()
            width = self._parse_expression()
            self.expect(")", f"after the width of '{token.kind}'")
        elif self._at_non_type_name():
            name = self.advance()
            width = ast.NameExpression(name.loc, ast.Path(name.loc, name.text))
        else:
            self._error_expected(
                "an integer or '(' expression ')'", f"as the width of '{token.kind}'"
            )
        self.expect(">", f"after the width of '{token.kind}'")
        if token.kind == "varbit":
            return ast.VarbitType(loc, width)
        return ast.BitsType(loc, width, signed=token.kind == "int")

    def _parse_type_or_void(self, context: str) -> ast.Type:
        """typeOrVoid : typeRef | VOID | IDENTIFIER ;  (an identifier may be a type
        variable declared by the type parameters that follow)"""
        token = self.tok
        if token.kind == "void":
            return ast.VoidType(self.advance().loc)
        if token.kind == "IDENT" and not self.is_type_name(token.text):
            self.advance()
            return ast.TypeName(token.loc, ast.Path(token.loc, token.text))
        return self._parse_type_ref(context)

    def _parse_type_arg(self, real: bool = False) -> ast.Type:
        """typeArg : typeRef | nonTypeName | VOID | '_' ;
        realTypeArg : typeRef | VOID | '_' ;  (when ``real``)"""
        token = self.tok
        if token.kind == "void":
            return ast.VoidType(self.advance().loc)
        if token.kind == "_":
            return ast.DontCareType(self.advance().loc)
        if not real and self._at_non_type_name() and not self._at_type_start():
            self.advance()
            return ast.TypeName(token.loc, ast.Path(token.loc, token.text))
        return self._parse_type_ref("as a type argument")

    def _parse_type_argument_list(self, context: str, real: bool = False) -> list[ast.Type]:
        """typeArgumentList : /* empty */ | typeArg | typeArgumentList ',' typeArg ;
        realTypeArgumentList : realTypeArg | realTypeArgumentList ',' typeArg ;
        (after '<', through '>')"""
        args: list[ast.Type] = []
        if not real and self.accept(">"):
            return args
        args.append(self._parse_type_arg(real))
        while self.accept(","):
            args.append(self._parse_type_arg())
        self.expect(">", f"to close the type arguments {context}")
        return args

    # -----------------------------------------------------------------------
    # Expressions

    def _parse_expression(self) -> ast.Expression:
        """expression : ... | expression '?' expression ':' expression | ... ;
        Ternaries nest to the left, as p4c's bison precedences make them."""
        expr = self._parse_binary(1)
        while self.at("?"):
            self.advance()
            then = self._parse_expression()
            self.expect(":", "in a conditional expression '?:'")
            else_ = self._parse_binary(1)
            expr = ast.Ternary(expr.loc, expr, then, else_)
        return expr

    def _binary_operator(self) -> tuple[str, int] | None:
        """The binary operator at the current token and its token count, or None."""
        kind = self.tok.kind
        if kind == "+" and self.peek().kind == ":":
            return None  # the '+:' of an indexed part select `[base +: width]`
        if kind == ">":
            after = self.peek()
            if after.kind == ">" and not after.space_before:
                return ">>", 2
            if after.kind == ">=" and not after.space_before:
                return None  # '>>=' is an assignment operator
        if kind in BINARY_PRECEDENCE:
            return kind, 1
        return None

    def _parse_binary(self, min_precedence: int) -> ast.Expression:
        """expression : expression BINOP expression ;  by precedence climbing over
        :data:`BINARY_PRECEDENCE`; every binary operator is left-associative."""
        left = self._parse_prefix()
        while True:
            operator = self._binary_operator()
            if operator is None:
                return left
            op, width = operator
            precedence = BINARY_PRECEDENCE[op]
            if precedence < min_precedence:
                return left
            for _ in range(width):
                self.advance()
            right = self._parse_binary(precedence + 1)
            left = ast.Binary(left.loc, op, left, right)

    def _parse_prefix(self) -> ast.Expression:
        """expression : '!' expression %prec PREFIX | '~' expression %prec PREFIX
        | '-' expression %prec PREFIX | '+' expression %prec PREFIX
        | '(' typeRef ')' expression %prec PREFIX ;"""
        token = self.tok
        if token.kind in PREFIX_OPERATORS:
            self.advance()
            return ast.Unary(token.loc, token.kind, self._parse_prefix())
        if token.kind == "(" and self._at_cast():
            self.advance()
            target = self._parse_type_ref("in a cast")
            self.expect(")", "after the type of a cast")
            return ast.Cast(token.loc, target, self._parse_prefix())
        return self._parse_postfix_expression(self._parse_primary())

    def _at_cast(self) -> bool:
        """Whether '(' opens a cast: a typeRef directly followed by ')'."""
        return self._at_type_start(1) and self._type_ref_then(")", skip=1)

    def _type_ref_then(self, kind: str, skip: int = 0) -> bool:
        """Whether, ``skip`` tokens on, a typeRef parses and is directly followed by
        a ``kind`` token; the position is left where it was."""
        saved = self.pos
        try:
            for _ in range(skip):
                self.advance()
            self._parse_type_ref("")
            return self.at(kind)
        except P4SourceError:
            return False
        finally:
            self.pos = saved

    def _parse_postfix_expression(self, expr: ast.Expression) -> ast.Expression:
        """expression : expression '.' member | expression '[' expression ']'
        | expression '[' expression ':' expression ']'
        | expression '[' expression '+' ':' expression ']'
        | expression '(' argumentList ')'
        | expression '<' realTypeArgumentList '>' '(' argumentList ')' ;"""
        while True:
            kind = self.tok.kind
            if kind == ".":
                self.advance()
                member = self._parse_member_name("after '.'")
                expr = ast.Member(expr.loc, expr, member.text)
            elif kind == "[":
                expr = self._parse_index_or_slice(expr)
            elif kind == "(":
                self.advance()
                args = self._parse_argument_list("of a call")
                expr = ast.Call(expr.loc, expr, [], args)
            elif kind == "<" and isinstance(expr, ast.NameExpression | ast.Member):
                type_args = self.speculate(self._parse_call_type_arguments)
                if type_args is None:
                    return expr
                self.advance()  # '(' checked by the speculation
                args = self._parse_argument_list("of a call")
                expr = ast.Call(expr.loc, expr, type_args, args)
            else:
                return expr

    def _parse_call_type_arguments(self) -> list[ast.Type]:
        """'<' realTypeArgumentList '>' followed by '('."""
        self.expect("<", "")
        args = self._parse_type_argument_list("of a call", real=True)
        if not self.at("("):
            self._error_expected("'('", "after type arguments")
        return args

    def _parse_index_or_slice(self, expr: ast.Expression) -> ast.Expression:
        """'[' expression ']' | '[' expression ':' expression ']'
        | '[' expression '+' ':' expression ']' ;"""
        self.advance()
        first = self._parse_expression()
        if self.at("+") and self.peek().kind == ":":
            self.advance()
            self.advance()
            width = self._parse_expression()
            self.expect("]", "after an indexed part select")
            return ast.PlusSlice(expr.loc, expr, first, width)
        if self.accept(":"):
            lo = self._parse_expression()
            self.expect("]", "after a bit slice")
            return ast.Slice(expr.loc, expr, first, lo)
        self.expect("]", "after an index")
        return ast.Index(expr.loc, expr, first)

    def _parse_primary(self) -> ast.Expression:
        """expression : INTEGER | DOTS | STRING_LITERAL | TRUE | FALSE | THIS
        | prefixedNonTypeName | '{' expressionList optTrailingComma '}' | '{#}'
        | '{' kvList optTrailingComma '}' | '{' kvList ',' DOTS optTrailingComma '}'
        | '(' expression ')' | typeName '.' member | ERROR '.' member
        | namedType '(' argumentList ')' ;"""
        token = self.tok
        kind = token.kind
        if kind == "INTEGER":
            return self._parse_integer_literal()
        if kind == "STRING":
            self.advance()
            return ast.StringLiteral(token.loc, string_value(token))
        if kind in ("true", "false"):
            self.advance()
            return ast.BoolLiteral(token.loc, kind == "true")
        if kind == "this":
            return ast.ThisExpression(self.advance().loc)
        if kind == "...":
            return ast.DotsExpression(self.advance().loc)
        if kind == "{#}":
            return ast.InvalidHeaderExpression(self.advance().loc)
        if kind == "{":
            return self._parse_brace_expression()
        if kind == "(":
            self.advance()
            expr = self._parse_expression()
            self.expect(")", "to close '('")
            return expr
        if kind == "error" and self.peek().kind == ".":
            self.advance()
            self.advance()
            member = self._parse_member_name("after 'error.'")
            type_expr = ast.TypeNameExpression(token.loc, ast.ErrorType(token.loc))
            return ast.Member(token.loc, type_expr, member.text)
        if self._at_type_start():
            return self._parse_type_expression()
        if self._at_non_type_name() or (kind == "." and self._at_non_type_name(1)):
            path = self._parse_prefixed_non_type_name("")
            return ast.NameExpression(path.loc, path)
        if kind == "_":
            self._error(token.loc, "'_' (don't care) is only allowed as an argument or keyset")
        self._error_expected("an expression", "here")

    def _parse_type_expression(self) -> ast.Expression:
        """typeName '.' member | namedType '(' argumentList ')' | typeName '{' kvList '}'."""
        type_ref = self._parse_type_ref("")
        if self.at("("):
            if not isinstance(type_ref, ast.TypeName | ast.SpecializedType):
                self._error(type_ref.loc, "only a named type can be constructed")
            self.advance()
            args = self._parse_argument_list("of a constructor call")
            return ast.ConstructorCall(type_ref.loc, type_ref, args)
        if self.at("."):
            self.advance()
            member = self._parse_member_name("after a type name")
            type_expr = ast.TypeNameExpression(type_ref.loc, type_ref)
            return ast.Member(type_ref.loc, type_expr, member.text)
        if self.at("{") and isinstance(type_ref, ast.TypeName):
            expr = self._parse_brace_expression()
            if isinstance(expr, ast.StructExpression):
                expr.type_name = type_ref
                return expr
        self._error(
            type_ref.loc,
            f"a type cannot be used as a value here; expected '.' or '(' "
            f"after the type, found {self.describe(self.tok)}",
        )

    def _parse_integer_literal(self) -> ast.IntLiteral:
        token = self.expect("INTEGER", "")
        value = token.int_value
        assert value is not None  # the lexer sets it on every INTEGER token
        return ast.IntLiteral(token.loc, value.value, value.width, value.signed, token.text)

    def _parse_brace_expression(self) -> ast.Expression:
        """'{' expressionList optTrailingComma '}' | '{' kvList optTrailingComma '}'
        | '{' kvList ',' DOTS optTrailingComma '}' ;"""
        opening = self.expect("{", "")
        if self._at_name() and self.peek().kind == "=":
            fields: list[ast.KeyValue] = []
            dots = False
            while not self.at("}"):
                if self.accept("..."):
                    dots = True
                    self.accept(",")
                    break
                fields.append(self._parse_kv_pair())
                if not self.accept(","):
                    break
            self.expect("}", "to close a structure-valued expression")
            return ast.StructExpression(opening.loc, fields, None, dots)
        elements = self.comma_list("}", self._parse_expression)
        self.expect("}", "to close a list expression")
        return ast.ListExpression(opening.loc, elements)


def _join_tokens(tokens: Sequence[Token]) -> str:
    return " ".join(token.text for token in tokens)


def _eof_after(body: Sequence[Token], following: Token) -> Token:
    loc = body[-1].loc if body else following.loc
    return Token("EOF", "", loc)
