"""A hand-written recursive-descent parser for P4_16, from tokens to :mod:`.ast`.

Each grammar rule of the P4_16 specification (v1.2.x, appendix "P4 grammar")
has one ``_parse_<rule>`` method with the production quoted in its docstring;
where the method accepts more or less than the production says, the docstring
says so.  Binary operators are parsed by precedence climbing driven by
:data:`BINARY_PRECEDENCE`, which copies the specification's precedence table
(note that comparisons bind *looser* than the bitwise operators, unlike C).

Type names versus identifiers
    P4's grammar is ambiguous unless the parser knows which identifiers name
    types: ``T(x) y;`` is an instantiation when ``T`` is a type, ``a < b > (c)``
    is a generic call when ``b`` is a type, ``(T) x`` is a cast.  Like p4c's
    ``ProgramStructure``, the parser keeps a stack of scopes mapping each
    declared name to "type" or "object".  Headers, structs, unions, enums,
    typedefs, newtypes, externs, parser/control/package types and type
    parameters are types; variables, constants, instances, parameters, actions,
    tables and functions are objects, and an object declared in an inner scope
    hides a type of the same name.  ``.name`` is looked up in the outermost scope.

Angle brackets
    After an expression, ``<`` opens a type-argument list only when what
    follows parses as ``realTypeArg {, typeArg} > (`` (the first argument must
    be a type, as in p4c's ``realTypeArgumentList``); otherwise it is a
    comparison.  At statement level ``f<T>(x);`` cannot be a comparison, so any
    type argument is accepted there.  ``>>`` is two adjacent ``>`` tokens.

Errors
    Every syntax error goes through :meth:`ParserBase._error`, which raises
    :class:`~softswitch.errors.P4SourceError` at the offending token with a
    message of the form "expected X <context>, found 'y'".  Backtracking (for
    casts, tuple keysets and type arguments) is done by saving and restoring
    the token position around a speculative parse that raises the same error.

Modules
    :mod:`.parser_base` holds the token cursor, scopes and names;
    :mod:`.parser_expr` parameters, arguments, annotations, types and
    expressions; this module the declarations and statements.
"""

from __future__ import annotations

from collections.abc import Sequence

from kvfabric.suggest import did_you_mean
from softswitch.errors import Loc
from softswitch.frontend import ast
from softswitch.frontend.lexer import ASSIGN_OPS, Token, tokenize
from softswitch.frontend.parser_base import (
    DECLARATION_KEYWORDS,
    NAME_KEYWORDS,
)
from softswitch.frontend.parser_expr import ExprParser


class Parser(ExprParser):
    """Parses one token list; :meth:`parse_program` is the entry point."""

    # -----------------------------------------------------------------------
    # Program and declarations

    def parse_program(self) -> ast.Program:
        """p4program : /* empty */ | p4program declaration | p4program ';' ;"""
        start = self.tok.loc
        declarations: list[ast.Declaration] = []
        try:
            while not self.at("EOF"):
                if self.accept(";"):
                    continue
                declaration = self._parse_declaration()
                if declaration is not None:
                    declarations.append(declaration)
        except RecursionError:
            self._error(self.tok.loc, "constructs nested too deeply to parse")
        return ast.Program(start, declarations)

    def _parse_declaration(self) -> ast.Declaration | None:
        """declaration : constantDeclaration | externDeclaration | actionDeclaration
        | parserDeclaration | typeDeclaration | controlDeclaration | instantiation
        | errorDeclaration | matchKindDeclaration | functionDeclaration ;

        Returns None for a forward extern declaration (``extern E;``).
        """
        annotations = self._parse_opt_annotations()
        kind = self.tok.kind
        if kind == "const":
            return self._parse_constant_declaration(annotations)
        if kind == "extern":
            return self._parse_extern_declaration(annotations)
        if kind == "action":
            return self._parse_action_declaration(annotations)
        if kind == "parser":
            return self._parse_parser_declaration(annotations)
        if kind == "control":
            return self._parse_control_declaration(annotations)
        if kind == "package":
            package = self._parse_package_type_declaration(annotations)
            self.expect(";", "after a package type declaration")
            return package
        if kind in ("header", "header_union", "struct", "enum"):
            return self._parse_derived_type_declaration(annotations)
        if kind in ("typedef", "type"):
            typedef = self._parse_typedef_declaration(annotations)
            self.expect(";", f"after the declaration of type '{typedef.name}'")
            return typedef
        if kind == "error" and self.peek().kind == "{":
            return self._parse_error_declaration()
        if kind == "match_kind" and self.peek().kind == "{":
            return self._parse_match_kind_declaration()
        if self._at_type_start() or kind == "void" or self._at_non_type_name():
            return self._parse_instantiation_or_function(annotations)
        hint = did_you_mean(self.tok.text, DECLARATION_KEYWORDS) if kind == "IDENT" else ""
        self._error(
            self.tok.loc,
            f"expected a declaration at top level, found {self.describe(self.tok)}{hint}",
        )

    def _parse_instantiation_or_function(
        self, annotations: list[ast.Annotation]
    ) -> ast.Declaration:
        """instantiation | functionDeclaration, told apart after the type:
        ``T(args) name;`` versus ``T name<tp>(params) { body }``."""
        if self._at_non_type_name() and not self._at_name(1):
            token = self.tok
            hint = did_you_mean(token.text, [*self.type_names(), *DECLARATION_KEYWORDS])
            self._error(token.loc, f"unknown type '{token.text}'; expected a declaration{hint}")
        if self._at_type_start() and self._type_ref_then("("):
            return self._parse_instantiation(annotations, self._parse_type_ref("here"))
        return_type = self._parse_type_or_void("as a return type")
        if self.at("("):
            self._error(return_type.loc, "only a named type can be instantiated")
        name = self._parse_name("after the return type of a function")
        if not self.at("(", "<"):
            if isinstance(return_type, ast.TypeName) and not self.is_type_name(
                return_type.path.name
            ):
                unknown = return_type.path.name
                hint = did_you_mean(unknown, [*DECLARATION_KEYWORDS, *self.type_names()])
                self._error(
                    return_type.loc, f"unknown type '{unknown}'; expected a declaration{hint}"
                )
            self._error(
                name.loc,
                f"variable '{name.text}' cannot be declared at the top level; "
                "expected '(' for a function declaration",
            )
        return self._parse_function_declaration(annotations, return_type, name)

    def _parse_constant_declaration(self, annotations: list[ast.Annotation]) -> ast.Declaration:
        """constantDeclaration : optAnnotations CONST typeRef name '=' initializer ';' ;"""
        self.expect("const", "")
        type_ref = self._parse_type_ref("after 'const'")
        name = self._parse_name("in a constant declaration")
        self.expect("=", f"after constant name '{name.text}'")
        value = self._parse_expression()
        self.expect(";", f"after the value of constant '{name.text}'")
        self.declare_object(name.text)
        return ast.ConstantDeclaration(name.loc, type_ref, name.text, value, annotations)

    def _parse_variable_declaration(
        self, annotations: list[ast.Annotation], type_ref: ast.Type, semicolon: bool = True
    ) -> ast.VariableDeclaration:
        """variableDeclaration : annotations typeRef name optInitializer ';'
        | typeRef name optInitializer ';' ;  (``type_ref`` already parsed)"""
        name = self._parse_name("in a variable declaration")
        init = None
        if self.accept("="):
            init = self._parse_expression()
        if semicolon:
            self.expect(";", f"after the declaration of '{name.text}'")
        self.declare_object(name.text)
        return ast.VariableDeclaration(name.loc, type_ref, name.text, init, annotations)

    def _parse_instantiation(
        self, annotations: list[ast.Annotation], type_ref: ast.Type
    ) -> ast.Instantiation:
        """instantiation : optAnnotations typeRef '(' argumentList ')' name ';'
        | optAnnotations typeRef '(' argumentList ')' name '=' objInitializer ';' ;"""
        if not isinstance(type_ref, ast.TypeName | ast.SpecializedType):
            self._error(type_ref.loc, "only a named type can be instantiated")
        self.expect("(", "for the constructor arguments")
        args = self._parse_argument_list("in an instantiation")
        name = self._parse_name("after the constructor arguments of an instantiation")
        initializer = None
        if self.accept("="):
            initializer = self._parse_obj_initializer()
        self.expect(";", f"after instantiation '{name.text}'")
        self.declare_object(name.text)
        return ast.Instantiation(name.loc, type_ref, args, name.text, initializer, annotations)

    def _parse_obj_initializer(self) -> list[ast.Declaration]:
        """objInitializer : '{' objDeclarations '}' ;
        objDeclaration : functionDeclaration | instantiation ;"""
        self.expect("{", "to open an instance initializer")
        self.push_scope()
        declarations: list[ast.Declaration] = []
        while not self.accept("}"):
            annotations = self._parse_opt_annotations()
            if self.at("EOF"):
                self._error_expected("'}'", "to close the instance initializer")
            declarations.append(self._parse_instantiation_or_function(annotations))
        self.pop_scope()
        return declarations

    def _parse_function_declaration(
        self, annotations: list[ast.Annotation], return_type: ast.Type, name: Token
    ) -> ast.FunctionDeclaration:
        """functionDeclaration : optAnnotations functionPrototype blockStatement ;
        (the return type and name are already parsed)"""
        self.declare_object(name.text)
        self.push_scope()
        type_params = self._parse_opt_type_parameters()
        self.expect("(", f"before the parameters of function '{name.text}'")
        params = self._parse_parameter_list(f"of function '{name.text}'")
        body = self._parse_block_statement([])
        self.pop_scope()
        return ast.FunctionDeclaration(
            name.loc, name.text, return_type, params, body, type_params, annotations
        )

    def _parse_action_declaration(self, annotations: list[ast.Annotation]) -> ast.Declaration:
        """actionDeclaration : optAnnotations ACTION name '(' parameterList ')' blockStatement ;"""
        self.expect("action", "")
        name = self._parse_name("after 'action'")
        self.declare_object(name.text)
        self.push_scope()
        self.expect("(", f"after action name '{name.text}'")
        params = self._parse_parameter_list(f"of action '{name.text}'")
        body = self._parse_block_statement([])
        self.pop_scope()
        return ast.ActionDeclaration(name.loc, name.text, params, body, annotations)

    def _parse_derived_type_declaration(self, annotations: list[ast.Annotation]) -> ast.Declaration:
        """derivedTypeDeclaration : headerTypeDeclaration | headerUnionDeclaration
        | structTypeDeclaration | enumDeclaration ;"""
        if self.at("enum"):
            return self._parse_enum_declaration(annotations)
        return self._parse_struct_like_declaration(annotations)

    def _parse_struct_like_declaration(
        self, annotations: list[ast.Annotation]
    ) -> ast.HeaderDeclaration | ast.HeaderUnionDeclaration | ast.StructDeclaration:
        """headerTypeDeclaration : optAnnotations HEADER name optTypeParameters
            '{' structFieldList '}' ;
        headerUnionDeclaration : optAnnotations HEADER_UNION name optTypeParameters '{' ... '}' ;
        structTypeDeclaration : optAnnotations STRUCT name optTypeParameters '{' ... '}' ;"""
        keyword = self.advance().kind
        name = self._parse_name(f"after '{keyword}'")
        self.declare_type(name.text)
        self.push_scope()
        type_params = self._parse_opt_type_parameters()
        self.expect("{", f"to open the fields of {keyword} '{name.text}'")
        fields: list[ast.StructField] = []
        while not self.accept("}"):
            fields.append(self._parse_struct_field(name.text))
        self.pop_scope()
        if keyword == "header":
            return ast.HeaderDeclaration(name.loc, name.text, fields, type_params, annotations)
        if keyword == "header_union":
            return ast.HeaderUnionDeclaration(name.loc, name.text, fields, type_params, annotations)
        return ast.StructDeclaration(name.loc, name.text, fields, type_params, annotations)

    def _parse_struct_field(self, owner: str) -> ast.StructField:
        """structField : optAnnotations typeRef name ';' ;"""
        annotations = self._parse_opt_annotations()
        if self.at("EOF"):
            self._error_expected("'}'", f"to close the fields of '{owner}'")
        type_ref = self._parse_type_ref(f"for a field of '{owner}'")
        name = self._parse_name(f"for a field of '{owner}'")
        self.expect(";", f"after field '{name.text}' of '{owner}'")
        return ast.StructField(name.loc, type_ref, name.text, annotations)

    def _parse_enum_declaration(self, annotations: list[ast.Annotation]) -> ast.EnumDeclaration:
        """enumDeclaration : optAnnotations ENUM name '{' identifierList optTrailingComma '}'
        | optAnnotations ENUM typeRef name '{' specifiedIdentifierList optTrailingComma '}' ;"""
        self.expect("enum", "")
        underlying = None
        if self._at_type_start() and self.peek().kind != "{":
            underlying = self._parse_type_ref("as the representation of an enum")
        name = self._parse_name("after 'enum'")
        self.declare_type(name.text)
        self.expect("{", f"to open the members of enum '{name.text}'")
        members: list[ast.EnumMember] = []
        while not self.at("}"):
            member = self._parse_name(f"as a member of enum '{name.text}'")
            value = None
            if underlying is not None:
                self.expect("=", f"after member '{member.text}' of serializable enum '{name.text}'")
                value = self._parse_expression()
            members.append(ast.EnumMember(member.loc, member.text, value))
            if not self.accept(","):
                break
        self.expect("}", f"to close the members of enum '{name.text}'")
        return ast.EnumDeclaration(name.loc, name.text, members, underlying, annotations)

    def _parse_identifier_list(self, what: str) -> list[ast.Ident]:
        """identifierList : name | identifierList ',' name ;  (between braces,
        a trailing comma accepted)"""
        self.expect("{", f"after '{what}'")

        def ident() -> ast.Ident:
            name = self._parse_name(f"in the {what} declaration")
            return ast.Ident(name.loc, name.text)

        members = self.comma_list("}", ident)
        self.expect("}", f"to close the {what} declaration")
        return members

    def _parse_error_declaration(self) -> ast.ErrorDeclaration:
        """errorDeclaration : ERROR '{' identifierList '}' ;"""
        loc = self.advance().loc
        return ast.ErrorDeclaration(loc, self._parse_identifier_list("error"))

    def _parse_match_kind_declaration(self) -> ast.MatchKindDeclaration:
        """matchKindDeclaration : MATCH_KIND '{' identifierList optTrailingComma '}' ;"""
        loc = self.advance().loc
        return ast.MatchKindDeclaration(loc, self._parse_identifier_list("match_kind"))

    def _parse_typedef_declaration(
        self, annotations: list[ast.Annotation]
    ) -> ast.TypedefDeclaration | ast.NewTypeDeclaration:
        """typedefDeclaration : optAnnotations TYPEDEF typeRef name
        | optAnnotations TYPEDEF derivedTypeDeclaration name
        | optAnnotations TYPE typeRef name | optAnnotations TYPE derivedTypeDeclaration name ;"""
        keyword = self.advance().kind
        target: ast.Type | ast.Declaration
        if self.at("header", "header_union", "struct", "enum", "@"):
            target = self._parse_derived_type_declaration(self._parse_opt_annotations())
        else:
            target = self._parse_type_ref(f"after '{keyword}'")
        name = self._parse_name(f"for the new type name in a {keyword} declaration")
        self.declare_type(name.text)
        if keyword == "typedef":
            return ast.TypedefDeclaration(name.loc, name.text, target, annotations)
        return ast.NewTypeDeclaration(name.loc, name.text, target, annotations)

    # -----------------------------------------------------------------------
    # Externs

    def _parse_extern_declaration(
        self, annotations: list[ast.Annotation]
    ) -> ast.Declaration | None:
        """externDeclaration : optAnnotations EXTERN nonTypeName optTypeParameters
            '{' methodPrototypes '}'
        | optAnnotations EXTERN functionPrototype ';'
        | optAnnotations EXTERN name ';' ;  (a forward declaration; returns None)"""
        self.expect("extern", "")
        if self._at_name() and self._is_extern_object_header():
            name = self.advance()
            self.declare_type(name.text)
            if self.accept(";"):
                return None
            self.push_scope()
            type_params = self._parse_opt_type_parameters()
            self.expect("{", f"to open the methods of extern '{name.text}'")
            methods: list[ast.MethodPrototype] = []
            while not self.accept("}"):
                methods.append(self._parse_method_prototype(name.text))
            self.pop_scope()
            return ast.ExternDeclaration(name.loc, name.text, methods, type_params, annotations)
        return_type = self._parse_type_or_void("as the return type of an extern function")
        name = self._parse_name("for an extern function")
        self.declare_object(name.text)
        self.push_scope()
        type_params = self._parse_opt_type_parameters()
        self.expect("(", f"before the parameters of extern function '{name.text}'")
        params = self._parse_parameter_list(f"of extern function '{name.text}'")
        self.pop_scope()
        self.expect(";", f"after the declaration of extern function '{name.text}'")
        return ast.ExternFunctionDeclaration(
            name.loc, name.text, return_type, params, type_params, annotations
        )

    def _is_extern_object_header(self) -> bool:
        """Whether ``extern`` is followed by ``name [<...>] {`` or ``name ;``."""
        after = self.peek()
        if after.kind in ("{", ";"):
            return True
        if after.kind != "<":
            return False
        depth = 0
        index = self.pos + 1
        while index < len(self.tokens):
            kind = self.tokens[index].kind
            if kind == "<":
                depth += 1
            elif kind == ">":
                depth -= 1
                if depth == 0:
                    return self.tokens[index + 1].kind == "{"
            elif kind in (";", "{", "(", "EOF"):
                return False
            index += 1
        return False

    def _parse_method_prototype(self, extern: str) -> ast.MethodPrototype:
        """methodPrototype : optAnnotations functionPrototype ';'
        | optAnnotations ABSTRACT functionPrototype ';'
        | optAnnotations TYPE_IDENTIFIER '(' parameterList ')' ';' ;  (a constructor)"""
        annotations = self._parse_opt_annotations()
        if self.at("EOF"):
            self._error_expected("'}'", f"to close extern '{extern}'")
        if self.tok.text == extern and self.peek().kind == "(":
            name = self.advance()
            self.advance()
            self.push_scope()
            params = self._parse_parameter_list(f"of the constructor of '{extern}'")
            self.pop_scope()
            self.expect(";", f"after a constructor of '{extern}'")
            return ast.MethodPrototype(name.loc, name.text, None, params, annotations=annotations)
        abstract = self.accept("abstract") is not None
        self.push_scope()
        # The return type may mention the method's own type parameters: `T f<T>()`.
        return_type = self._parse_type_or_void(f"as the return type of a method of '{extern}'")
        name = self._parse_name(f"for a method of extern '{extern}'")
        type_params = self._parse_opt_type_parameters()
        self.expect("(", f"before the parameters of method '{name.text}'")
        params = self._parse_parameter_list(f"of method '{name.text}'")
        self.pop_scope()
        self.expect(";", f"after the declaration of method '{name.text}'")
        return ast.MethodPrototype(
            name.loc, name.text, return_type, params, type_params, abstract, annotations
        )

    # -----------------------------------------------------------------------
    # Parsers

    def _parse_type_header(
        self, keyword: str
    ) -> tuple[Token, list[ast.Ident], list[ast.Parameter]]:
        """parserTypeDeclaration / controlTypeDeclaration / packageTypeDeclaration :
        optAnnotations KEYWORD name optTypeParameters '(' parameterList ')' ;
        Declares the name as a type and leaves a new scope open for the body."""
        self.expect(keyword, "")
        name = self._parse_name(f"after '{keyword}'")
        self.declare_type(name.text)
        self.push_scope()
        type_params = self._parse_opt_type_parameters()
        self.expect("(", f"before the parameters of {keyword} '{name.text}'")
        params = self._parse_parameter_list(f"of {keyword} '{name.text}'")
        return name, type_params, params

    def _parse_package_type_declaration(
        self, annotations: list[ast.Annotation]
    ) -> ast.PackageTypeDeclaration:
        """packageTypeDeclaration : optAnnotations PACKAGE name optTypeParameters
        '(' parameterList ')' ;"""
        name, type_params, params = self._parse_type_header("package")
        self.pop_scope()
        return ast.PackageTypeDeclaration(name.loc, name.text, params, type_params, annotations)

    def _parse_opt_constructor_parameters(self, what: str) -> list[ast.Parameter]:
        """optConstructorParameters : /* empty */ | '(' parameterList ')' ;"""
        if self.accept("("):
            return self._parse_parameter_list(f"of the constructor of {what}")
        return []

    def _parse_parser_declaration(self, annotations: list[ast.Annotation]) -> ast.Declaration:
        """parserDeclaration : parserTypeDeclaration optConstructorParameters
            '{' parserLocalElements parserStates '}' ;
        typeDeclaration : parserTypeDeclaration ';' ;"""
        name, type_params, params = self._parse_type_header("parser")
        if self.accept(";"):
            self.pop_scope()
            return ast.ParserTypeDeclaration(name.loc, name.text, params, type_params, annotations)
        ctor_params = self._parse_opt_constructor_parameters(f"parser '{name.text}'")
        self.expect("{", f"to open the body of parser '{name.text}'")
        local_elements: list[ast.Declaration] = []
        states: list[ast.ParserState] = []
        while not self.accept("}"):
            element_annotations = self._parse_opt_annotations()
            if self.at("state"):
                states.append(self._parse_parser_state(element_annotations))
            elif states:
                self._error_expected("'state' or '}'", f"in parser '{name.text}'")
            else:
                local_elements.append(
                    self._parse_parser_local_element(element_annotations, name.text)
                )
        self.pop_scope()
        if not states:
            self._error(name.loc, f"parser '{name.text}' has no states")
        return ast.ParserDeclaration(
            name.loc,
            name.text,
            params,
            ctor_params,
            local_elements,
            states,
            type_params,
            annotations,
        )

    def _parse_parser_local_element(
        self, annotations: list[ast.Annotation], parser: str
    ) -> ast.Declaration:
        """parserLocalElement : constantDeclaration | instantiation
        | variableDeclaration | valueSetDeclaration ;"""
        if self.at("const"):
            return self._parse_constant_declaration(annotations)
        if self.at("value_set"):
            return self._parse_value_set_declaration(annotations)
        if self._at_type_start():
            return self._parse_declaration_after_type(annotations)
        self._error_expected("a local declaration, 'state' or '}'", f"in parser '{parser}'")

    def _parse_declaration_after_type(self, annotations: list[ast.Annotation]) -> ast.Declaration:
        """instantiation | variableDeclaration: both start with a typeRef."""
        type_ref = self._parse_type_ref("")
        if self.at("("):
            return self._parse_instantiation(annotations, type_ref)
        return self._parse_variable_declaration(annotations, type_ref)

    def _parse_value_set_declaration(
        self, annotations: list[ast.Annotation]
    ) -> ast.ValueSetDeclaration:
        """valueSetDeclaration : optAnnotations VALUESET '<' baseType '>'
            '(' expression ')' name ';'
        | ... '<' tupleType '>' ... | ... '<' typeName '>' ... ;"""
        self.expect("value_set", "")
        self.expect("<", "after 'value_set'")
        element = self._parse_type_ref("as the element type of a value_set")
        self.expect(">", "after the element type of a value_set")
        self.expect("(", "before the size of a value_set")
        size = self._parse_expression()
        self.expect(")", "after the size of a value_set")
        name = self._parse_name("for a value_set")
        self.expect(";", f"after value_set '{name.text}'")
        self.declare_object(name.text)
        return ast.ValueSetDeclaration(name.loc, element, size, name.text, annotations)

    def _parse_parser_state(self, annotations: list[ast.Annotation]) -> ast.ParserState:
        """parserState : optAnnotations STATE name '{' parserStatements transitionStatement '}' ;
        (parserStatements accepts every statementOrDeclaration)"""
        self.expect("state", "")
        name = self._parse_name("after 'state'")
        self.declare_object(name.text)
        self.push_scope()
        self.expect("{", f"to open state '{name.text}'")
        statements: list[ast.StatOrDecl] = []
        transition = None
        while not self.accept("}"):
            if self.at("transition"):
                transition = self._parse_transition_statement()
                self.expect("}", f"after the transition of state '{name.text}'")
                break
            if self.at("EOF"):
                self._error_expected("'}'", f"to close state '{name.text}'")
            statements.append(self._parse_statement_or_declaration())
        self.pop_scope()
        return ast.ParserState(name.loc, name.text, statements, transition, annotations)

    def _parse_transition_statement(self) -> ast.Transition:
        """transitionStatement : /* empty */ | TRANSITION stateExpression ;
        stateExpression : name ';' | selectExpression ;"""
        loc = self.advance().loc
        if self.at("select"):
            return ast.Transition(loc, self._parse_select_expression())
        path = self._parse_prefixed_name("as the next state after 'transition'")
        self.expect(";", f"after 'transition {path}'")
        return ast.Transition(loc, ast.NameExpression(path.loc, path))

    def _parse_prefixed_name(self, context: str) -> ast.Path:
        """A name or ``.name`` (any name, including one that is also a type)."""
        dot = self.accept(".")
        name = self._parse_name(context)
        return ast.Path(dot.loc if dot else name.loc, name.text, absolute=dot is not None)

    def _parse_select_expression(self) -> ast.SelectExpression:
        """selectExpression : SELECT '(' expressionList ')' '{' selectCaseList '}' ;"""
        loc = self.advance().loc
        self.expect("(", "after 'select'")
        exprs = self.comma_list(")", self._parse_expression)
        self.expect(")", "to close the expressions of 'select'")
        self.expect("{", "to open the cases of 'select'")
        cases: list[ast.SelectCase] = []
        while not self.accept("}"):
            cases.append(self._parse_select_case())
        return ast.SelectExpression(loc, exprs, cases)

    def _parse_select_case(self) -> ast.SelectCase:
        """selectCase : keysetExpression ':' name ';' ;"""
        if self.at("EOF"):
            self._error_expected("'}'", "to close the cases of 'select'")
        keyset = self._parse_keyset_expression()
        self.expect(":", "after a select case's keyset")
        state = self._parse_prefixed_name("as the next state of a select case")
        self.expect(";", f"after select case target '{state}'")
        return ast.SelectCase(keyset.loc, keyset, state)

    def _parse_keyset_expression(self) -> ast.Expression:
        """keysetExpression : tupleKeysetExpression | simpleKeysetExpression ;
        tupleKeysetExpression : '(' simpleKeysetExpression ',' simpleExpressionList ')'
        | '(' reducedSimpleKeysetExpression ')' ;"""
        if self.at("("):
            elements = self.speculate(self._parse_tuple_keyset)
            if elements is not None:
                loc, items = elements
                return items[0] if len(items) == 1 else ast.ListExpression(loc, items)
        return self._parse_simple_keyset_expression()

    def _parse_tuple_keyset(self) -> tuple[Loc, list[ast.Expression]]:
        loc = self.expect("(", "").loc
        items = [self._parse_simple_keyset_expression()]
        while self.accept(","):
            items.append(self._parse_simple_keyset_expression())
        self.expect(")", "to close a tuple keyset")
        if not self.at(":"):
            self._error_expected("':'", "after a tuple keyset")
        return loc, items

    def _parse_simple_keyset_expression(self) -> ast.Expression:
        """simpleKeysetExpression : expression | expression '&&&' expression
        | expression '..' expression | DEFAULT | '_' ;"""
        if self.at("default"):
            return ast.DefaultExpression(self.advance().loc)
        if self.at("_"):
            return ast.DontCareExpression(self.advance().loc)
        expr = self._parse_expression()
        if self.at("&&&", ".."):
            op = self.advance().kind
            return ast.Binary(expr.loc, op, expr, self._parse_expression())
        return expr

    # -----------------------------------------------------------------------
    # Controls and tables

    def _parse_control_declaration(self, annotations: list[ast.Annotation]) -> ast.Declaration:
        """controlDeclaration : controlTypeDeclaration optConstructorParameters
            '{' controlLocalDeclarations APPLY controlBody '}' ;
        typeDeclaration : controlTypeDeclaration ';' ;"""
        name, type_params, params = self._parse_type_header("control")
        if self.accept(";"):
            self.pop_scope()
            return ast.ControlTypeDeclaration(name.loc, name.text, params, type_params, annotations)
        ctor_params = self._parse_opt_constructor_parameters(f"control '{name.text}'")
        self.expect("{", f"to open the body of control '{name.text}'")
        local_declarations: list[ast.Declaration] = []
        while not self.at("apply"):
            local_declarations.append(self._parse_control_local_declaration(name.text))
        self.advance()
        body = self._parse_block_statement([])
        self.expect("}", f"after the apply block of control '{name.text}'")
        self.pop_scope()
        return ast.ControlDeclaration(
            name.loc,
            name.text,
            params,
            ctor_params,
            local_declarations,
            body,
            type_params,
            annotations,
        )

    def _parse_control_local_declaration(self, control: str) -> ast.Declaration:
        """controlLocalDeclaration : constantDeclaration | actionDeclaration
        | tableDeclaration | instantiation | variableDeclaration ;"""
        annotations = self._parse_opt_annotations()
        if self.at("const"):
            return self._parse_constant_declaration(annotations)
        if self.at("action"):
            return self._parse_action_declaration(annotations)
        if self.at("table"):
            return self._parse_table_declaration(annotations)
        if self._at_type_start():
            return self._parse_declaration_after_type(annotations)
        self._error_expected("a local declaration or 'apply'", f"in control '{control}'")

    def _parse_table_declaration(self, annotations: list[ast.Annotation]) -> ast.TableDeclaration:
        """tableDeclaration : optAnnotations TABLE name '{' tablePropertyList '}' ;
        (an empty ``()`` after the name is accepted, as early P4_16 had it)"""
        self.expect("table", "")
        name = self._parse_name("after 'table'")
        self.declare_object(name.text)
        if self.accept("("):
            # Early P4_16 drafts allowed `table t() {...}`; p4c's samples still use it.
            self.expect(")", f"after '(' of table '{name.text}' (tables take no parameters)")
        self.expect("{", f"to open the properties of table '{name.text}'")
        properties: list[ast.TableProperty] = []
        while not self.accept("}"):
            properties.append(self._parse_table_property(name.text))
        return ast.TableDeclaration(name.loc, name.text, properties, annotations)

    def _parse_table_property(self, table: str) -> ast.TableProperty:
        """tableProperty : KEY '=' '{' keyElementList '}' | ACTIONS '=' '{' actionList '}'
        | optAnnotations optCONST ENTRIES '=' '{' entriesList '}'
        | optAnnotations optCONST nonTableKwName '=' initializer ';' ;"""
        annotations = self._parse_opt_annotations()
        const = self.accept("const") is not None
        token = self.tok
        if token.kind == "EOF":
            self._error_expected("'}'", f"to close table '{table}'")
        if not (token.kind == "IDENT" or token.kind in NAME_KEYWORDS):
            self._error_expected("a table property", f"in table '{table}'")
        self.advance()
        self.expect("=", f"after table property '{token.text}'")
        if token.kind == "key" and self.at("{"):
            self.advance()
            elements: list[ast.KeyElement] = []
            while not self.accept("}"):
                elements.append(self._parse_key_element(table))
            return ast.KeyProperty(token.loc, "key", const, annotations, elements)
        if token.kind == "actions" and self.at("{"):
            self.advance()
            actions: list[ast.ActionRef] = []
            while not self.accept("}"):
                actions.append(self._parse_action_ref(self._parse_opt_annotations(), table))
                self.expect(";", f"after an action in the actions of table '{table}'")
            return ast.ActionsProperty(token.loc, "actions", const, annotations, actions)
        if token.kind == "entries" and self.at("{"):
            self.advance()
            entries: list[ast.TableEntry] = []
            while not self.accept("}"):
                entries.append(self._parse_entry(table))
            return ast.EntriesProperty(token.loc, "entries", const, annotations, entries)
        value = self._parse_expression()
        self.expect(";", f"after the value of table property '{token.text}'")
        return ast.ExpressionProperty(token.loc, token.text, const, annotations, value)

    def _parse_key_element(self, table: str) -> ast.KeyElement:
        """keyElement : expression ':' name optAnnotations ';' ;"""
        if self.at("EOF"):
            self._error_expected("'}'", f"to close the key of table '{table}'")
        expr = self._parse_expression()
        self.expect(":", f"after a key field of table '{table}'")
        match_kind = self._parse_prefixed_name(
            f"as the match kind of a key field of table '{table}'"
        )
        annotations = self._parse_opt_annotations()
        self.expect(";", f"after match kind '{match_kind}' in the key of table '{table}'")
        return ast.KeyElement(expr.loc, expr, match_kind, annotations)

    def _parse_action_ref(self, annotations: list[ast.Annotation], table: str) -> ast.ActionRef:
        """actionRef : prefixedNonTypeName | prefixedNonTypeName '(' argumentList ')' ;"""
        if self.at("EOF"):
            self._error_expected("'}'", f"to close the actions of table '{table}'")
        path = self._parse_prefixed_name(f"as an action name in table '{table}'")
        args = None
        if self.accept("("):
            args = self._parse_argument_list(f"of action '{path}'")
        return ast.ActionRef(path.loc, path, args, annotations)

    def _parse_entry(self, table: str) -> ast.TableEntry:
        """entry : optCONST entryPriority keysetExpression ':' actionRef optAnnotations ';'
        | optCONST keysetExpression ':' actionRef optAnnotations ';' ;
        entryPriority : PRIORITY '=' INTEGER ':' | PRIORITY '=' '(' expression ')' ':' ;"""
        if self.at("EOF"):
            self._error_expected("'}'", f"to close the entries of table '{table}'")
        start = self.tok.loc
        const = self.accept("const") is not None
        priority = None
        if self.at("priority") and self.peek().kind == "=":
            self.advance()
            self.advance()
            priority = self._parse_expression()
            self.expect(":", "after an entry priority")
        keyset = self._parse_keyset_expression()
        self.expect(":", f"after the keyset of an entry of table '{table}'")
        action = self._parse_action_ref([], table)
        annotations = self._parse_opt_annotations()
        self.expect(";", f"after an entry of table '{table}'")
        return ast.TableEntry(start, keyset, action, priority, const, annotations)

    # -----------------------------------------------------------------------
    # Statements

    def _parse_block_statement(self, annotations: list[ast.Annotation]) -> ast.BlockStatement:
        """blockStatement : optAnnotations '{' statOrDeclList '}' ;"""
        opening = self.expect("{", "to open a block")
        self.push_scope()
        items: list[ast.StatOrDecl] = []
        while not self.accept("}"):
            if self.at("EOF"):
                self._error(opening.loc, "unclosed '{': no matching '}' before end of file")
            items.append(self._parse_statement_or_declaration())
        self.pop_scope()
        return ast.BlockStatement(opening.loc, items, annotations)

    def _parse_statement_or_declaration(self) -> ast.StatOrDecl:
        """statementOrDeclaration : variableDeclaration | constantDeclaration
        | statement | instantiation ;"""
        annotations = self._parse_opt_annotations()
        if self.at("const"):
            return self._parse_constant_declaration(annotations)
        if self.at("{"):
            return self._parse_block_statement(annotations)
        if self.at("for"):
            return self._parse_for_statement(annotations)
        if self._at_type_start() and not self._at_type_member_access():
            return self._parse_declaration_after_type(annotations)
        if annotations:
            self._error_expected("a declaration or block", "after annotations")
        return self._parse_statement()

    def _at_type_member_access(self) -> bool:
        """Whether a typeRef here is used as ``T.member`` (direct application,
        ``error.X``...) rather than to declare something."""
        if self.tok.kind == "error":
            return self.peek().kind == "."
        return self._type_ref_then(".")

    def _parse_statement(self) -> ast.Statement:
        """statement : assignmentOrMethodCallStatement | directApplication
        | conditionalStatement | emptyStatement | blockStatement | returnStatement
        | breakStatement | continueStatement | exitStatement | switchStatement
        | forStatement ;"""
        token = self.tok
        kind = token.kind
        if kind == "if":
            return self._parse_conditional_statement()
        if kind == "switch":
            return self._parse_switch_statement()
        if kind == "{":
            return self._parse_block_statement([])
        if kind == ";":
            return ast.EmptyStatement(self.advance().loc)
        if kind == "exit":
            self.advance()
            self.expect(";", "after 'exit'")
            return ast.ExitStatement(token.loc)
        if kind in ("break", "continue"):
            self.advance()
            self.expect(";", f"after '{kind}'")
            return (ast.BreakStatement if kind == "break" else ast.ContinueStatement)(token.loc)
        if kind == "return":
            self.advance()
            value = None if self.at(";") else self._parse_expression()
            self.expect(";", "after 'return'" + (" value" if value else ""))
            return ast.ReturnStatement(token.loc, value)
        if kind == "for":
            return self._parse_for_statement([])
        statement = self._parse_assignment_or_method_call()
        if isinstance(statement, ast.AssignmentStatement):
            self.expect(";", f"after the assignment to '{_spell(statement.target)}'")
        else:
            self.expect(";", f"after the call of '{_spell(statement.call.method)}'")
        return statement

    def _parse_assignment_or_method_call(
        self,
    ) -> ast.AssignmentStatement | ast.MethodCallStatement:
        """assignmentOrMethodCallStatementWithoutSemicolon : lvalue '(' argumentList ')'
        | lvalue '<' typeArgumentList '>' '(' argumentList ')' | lvalue '=' expression
        | lvalue OP= expression ;  directApplication : typeName '.' APPLY '(' argumentList ')' ;"""
        token = self.tok
        if not (
            self._at_non_type_name()
            or token.kind in ("this", "(", ".", "error")
            or self._at_type_start()
        ):
            self._error_expected("a statement", "here")
        target = self._parse_postfix_expression(self._parse_primary())
        if self.at("<"):
            # At statement level '<' can only open type arguments: `f<T>(x);`.
            self.advance()
            type_args = self._parse_type_argument_list("of a call")
            self.expect("(", "after type arguments")
            args = self._parse_argument_list("of a call")
            target = self._parse_postfix_expression(ast.Call(target.loc, target, type_args, args))
        op = self._parse_assignment_operator()
        if op is not None:
            return ast.AssignmentStatement(target.loc, target, self._parse_expression(), op)
        if isinstance(target, ast.Call):
            return ast.MethodCallStatement(target.loc, target)
        if isinstance(target, ast.NameExpression) and self._at_name():
            # `foo x;` where foo is no type: a declaration with a misspelled type.
            name = target.path.name
            hint = did_you_mean(name, self.type_names())
            self._error(
                target.loc, f"unknown type '{name}' in the declaration of '{self.tok.text}'{hint}"
            )
        self._error_expected("'=' or '('", "after the target of a statement")

    def _parse_assignment_operator(self) -> str | None:
        """One of ``=  *=  /=  %=  +=  -=  |+|=  |-|=  <<=  >>=  &=  |=  ^=``, or None."""
        if self.tok.kind in ASSIGN_OPS:
            return self.advance().kind
        if self.at(">") and self.peek().kind == ">=" and not self.peek().space_before:
            self.advance()
            self.advance()
            return ">>="
        return None

    def _parse_conditional_statement(self) -> ast.IfStatement:
        """conditionalStatement : IF '(' expression ')' statement
        | IF '(' expression ')' statement ELSE statement ;"""
        loc = self.advance().loc
        self.expect("(", "after 'if'")
        cond = self._parse_expression()
        self.expect(")", "after the condition of 'if'")
        then = self._parse_substatement()
        else_ = None
        if self.accept("else"):
            else_ = self._parse_substatement()
        return ast.IfStatement(loc, cond, then, else_)

    def _parse_substatement(self) -> ast.Statement:
        """statement, optionally an annotated block (``@likely { ... }``)."""
        annotations = self._parse_opt_annotations()
        if annotations or self.at("{"):
            return self._parse_block_statement(annotations)
        return self._parse_statement()

    def _parse_switch_statement(self) -> ast.SwitchStatement:
        """switchStatement : SWITCH '(' expression ')' '{' switchCases '}' ;
        switchCase : switchLabel ':' blockStatement | switchLabel ':' ;
        switchLabel : DEFAULT | nonBraceExpression ;"""
        loc = self.advance().loc
        self.expect("(", "after 'switch'")
        expr = self._parse_expression()
        self.expect(")", "after the switch expression")
        self.expect("{", "to open the cases of 'switch'")
        cases: list[ast.SwitchCase] = []
        while not self.accept("}"):
            if self.at("EOF"):
                self._error_expected("'}'", "to close the cases of 'switch'")
            if self.at("{"):
                self._error_expected("a switch label", "in 'switch'")
            if self.at("default"):
                label: ast.Expression = ast.DefaultExpression(self.advance().loc)
            else:
                label = self._parse_expression()
            self.expect(":", "after a switch label")
            body = None
            if self.at("{", "@"):
                body = self._parse_block_statement(self._parse_opt_annotations())
            cases.append(ast.SwitchCase(label.loc, label, body))
        return ast.SwitchStatement(loc, expr, cases)

    def _parse_for_statement(self, annotations: list[ast.Annotation]) -> ast.Statement:
        """forStatement : optAnnotations FOR '(' forInitStatements ';' expression ';'
            forUpdateStatements ')' statement
        | optAnnotations FOR '(' [annotations] typeRef name IN forCollectionExpr ')' statement ;"""
        loc = self.expect("for", "").loc
        self.expect("(", "after 'for'")
        self.push_scope()
        for_in = self.speculate(self._parse_for_in_header)
        if for_in is not None:
            var_type, var_name, collection = for_in
            body = self._parse_substatement()
            self.pop_scope()
            return ast.ForInStatement(loc, var_type, var_name, collection, body, annotations)
        init = self.comma_list(";", self._parse_for_init)
        self.expect(";", "after the initialization of 'for'")
        cond = None if self.at(";") else self._parse_expression()
        self.expect(";", "after the condition of 'for'")
        updates: list[ast.Statement] = self.comma_list(")", self._parse_assignment_or_method_call)
        self.expect(")", "after the updates of 'for'")
        body = self._parse_substatement()
        self.pop_scope()
        return ast.ForStatement(loc, init, cond, updates, body, annotations)

    def _parse_for_in_header(self) -> tuple[ast.Type | None, str, ast.Expression]:
        """[annotations] typeRef name IN forCollectionExpr ')' ;
        forCollectionExpr : expression | expression '..' expression ;"""
        self._parse_opt_annotations()
        var_type = None
        if not (self._at_name() and self.peek().kind == "in"):
            var_type = self._parse_type_ref("in 'for'")
        name = self._parse_name("as the loop variable of 'for'")
        self.expect("in", "after the loop variable of 'for'")
        collection = self._parse_expression()
        if self.at(".."):
            self.advance()
            collection = ast.Binary(collection.loc, "..", collection, self._parse_expression())
        self.expect(")", "after the collection of 'for'")
        self.declare_object(name.text)
        return var_type, name.text, collection

    def _parse_for_init(self) -> ast.StatOrDecl:
        """declOrAssignmentOrMethodCallStatement : variableDeclarationWithoutSemicolon
        | assignmentOrMethodCallStatementWithoutSemicolon ;"""
        annotations = self._parse_opt_annotations()
        if self._at_type_start() and not self._at_type_member_access():
            type_ref = self._parse_type_ref("")
            return self._parse_variable_declaration(annotations, type_ref, semicolon=False)
        return self._parse_assignment_or_method_call()


def _spell(expr: ast.Expression) -> str:
    """A short source-like spelling of an lvalue or callee, for messages."""
    if isinstance(expr, ast.NameExpression):
        return str(expr.path)
    if isinstance(expr, ast.Member):
        return f"{_spell(expr.expr)}.{expr.member}"
    if isinstance(expr, ast.Index):
        return f"{_spell(expr.expr)}[...]"
    if isinstance(expr, ast.Slice | ast.PlusSlice):
        return f"{_spell(expr.expr)}[...:...]"
    if isinstance(expr, ast.Call):
        return f"{_spell(expr.method)}(...)"
    if isinstance(expr, ast.TypeNameExpression):
        return "error" if isinstance(expr.type_ref, ast.ErrorType) else "type"
    if isinstance(expr, ast.ThisExpression):
        return "this"
    return "expression"


def parse_tokens(tokens: Sequence[Token]) -> ast.Program:
    """Parse a token list (ending with EOF) into a program.  Raises P4SourceError."""
    return Parser(tokens).parse_program()


def parse_source(text: str, filename: str = "<string>") -> ast.Program:
    """Lex and parse ``text`` (already preprocessed).  Raises P4SourceError."""
    return parse_tokens(tokenize(text, filename))
