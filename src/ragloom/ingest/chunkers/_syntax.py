"""Source code as tree-sitter sees it: the grammars, and the definitions a file holds.

Each grammar is a PyPI wheel that ships it compiled (``tree-sitter-python`` …), so nothing is
fetched at run time; they are dependencies. R has no grammar wheel of its own: its grammar is
taken from ``tree-sitter-language-pack`` (the ``r`` extra). A language whose grammar is not
installed is cut into line-based chunks by the chunker; SQL is cut by statement without one
(``_sql``).
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

#: language -> (module, function returning the grammar).
GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"), "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"), "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"), "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"), "kotlin": ("tree_sitter_kotlin", "language"),
    "c": ("tree_sitter_c", "language"), "cpp": ("tree_sitter_cpp", "language"),
    "csharp": ("tree_sitter_c_sharp", "language"), "ruby": ("tree_sitter_ruby", "language"),
    "php": ("tree_sitter_php", "language_php"), "swift": ("tree_sitter_swift", "language"),
    "scala": ("tree_sitter_scala", "language"), "bash": ("tree_sitter_bash", "language"),
    "sql": ("tree_sitter_sql", "language"), "lua": ("tree_sitter_lua", "language"),
    # No tree-sitter-r wheel exists; the language pack's R grammar (the ``r`` extra) is loaded alone.
    "r": ("tree_sitter_language_pack.bindings.r", "language"),
}


_FUNCTIONS = {
    "function_definition", "function_declaration", "generator_function_declaration", "method_definition",
    "method_declaration", "constructor_declaration", "function_item", "method", "singleton_method",
    "init_declaration", "decorated_definition",
}
_TYPES = {
    "class_definition", "class_declaration", "abstract_class_declaration", "interface_declaration",
    "enum_declaration", "record_declaration", "annotation_type_declaration", "struct_declaration",
    "object_declaration", "object_definition", "trait_definition", "trait_declaration", "protocol_declaration",
    "impl_item", "struct_item", "enum_item", "trait_item", "mod_item", "type_declaration", "class", "module",
    "class_specifier", "struct_specifier", "namespace_definition", "namespace_declaration", "internal_module",
}
#: Definitions per language: a node of one of these types is a unit of its own.
DEFINITIONS: dict[str, frozenset[str]] = {
    language: frozenset(_FUNCTIONS | _TYPES) for language in GRAMMARS
}
DEFINITIONS["c"] = frozenset({"function_definition"})
DEFINITIONS["sql"] = frozenset()  # statements, found without the grammar (``_sql``): dialects it cannot parse
# Lua's ``function_definition`` is an anonymous function (``function(x) ... end``); an assigned one is
# found through its assignment (``ASSIGNED``).
DEFINITIONS["lua"] = frozenset({"function_declaration"})
DEFINITIONS["r"] = frozenset()  # R names every function by assignment: ``f <- function(x) …``
#: Scopes that only name their members (a namespace, a module): always opened, never one chunk, and
#: their own lines (``namespace N {``, ``using``) are module code.
CONTAINERS = frozenset({
    "namespace_definition", "namespace_declaration", "file_scoped_namespace_declaration", "internal_module",
    "module", "mod_item",
})
#: A function given a name by an assignment (``app.init = function () {}``, ``const f = () => {}``,
#: ``local g = function () end``): statement -> (the node naming it, the function) per language.
_FUNCTION_VALUES = frozenset({"function_expression", "arrow_function", "function", "generator_function",
                              "function_definition", "class", "class_expression"})
_ASSIGNING = frozenset({"javascript", "typescript", "tsx", "lua", "r"})
#: A file whose syntax errors cover more than this share of its bytes does not parse.
MAX_ERROR_SHARE = 0.2


@functools.cache
def parser_for(language: str) -> Any | None:
    """A tree-sitter parser for ``language``, or None when no grammar for it is installed."""
    spec = GRAMMARS.get(language)
    if spec is None:
        return None
    try:
        import tree_sitter

        grammar = getattr(importlib.import_module(spec[0]), spec[1])()
        return tree_sitter.Parser(tree_sitter.Language(grammar))
    except (ImportError, AttributeError, ValueError):
        return None


@dataclass(frozen=True)
class Definition:
    """A definition's node, with the byte range it owns (its leading comments included)."""

    node: Any
    start: int
    end: int
    name: str
    is_type: bool


def error_share(root: Any) -> float:
    """The share of the file's bytes inside syntax errors (0 when it parses cleanly)."""
    if not root.has_error:
        return 0.0
    covered = 0
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            covered += max(node.end_byte - node.start_byte, 1)
        elif node.has_error:
            stack.extend(node.children)
    return covered / max(root.end_byte - root.start_byte, 1)


def definitions_in(node: Any, language: str) -> Iterator[Definition]:
    """The outermost definitions under ``node`` (not ``node`` itself), in order; a definition's
    own inner definitions are found by calling this on it."""
    kinds = DEFINITIONS.get(language, frozenset())
    for child in node.named_children:
        if _is_definition(child, kinds) and not _nameless_type(child):
            core = child.child_by_field_name("definition") or child  # a decorated Python definition
            yield Definition(child, _leading_comments_start(child), child.end_byte, name_of(child),
                             core.type in _TYPES and child.type not in CONTAINERS)
        elif language in _ASSIGNING and (assigned := assigned_function(child)) is not None:
            name, value = assigned
            yield Definition(child, _leading_comments_start(child), child.end_byte, name,
                             value.type in ("class", "class_expression"))
        elif child.type != "ERROR" and child.named_child_count:
            yield from definitions_in(child, language)


def assigned_function(node: Any) -> tuple[str, Any] | None:
    """``(name, function)`` when ``node`` is a statement that names one function or class by an
    assignment or a declaration (``app.init = function () {}``, ``const f = () => {}``,
    ``local g = function () end``), else None."""
    if node.type == "expression_statement" and node.named_child_count == 1:
        node = node.named_children[0]
    if node.type in ("lexical_declaration", "variable_declaration"):
        declared = [c for c in node.named_children if c.type in ("variable_declarator", "assignment_statement")]
        if len(declared) != 1:
            return None
        node = declared[0]
    if node.type == "variable_declarator":
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
    elif node.type == "binary_operator":  # R: ``f <- function(x) …``, ``f = …``, ``function(x) … -> f``
        operator = node.child_by_field_name("operator")
        arrow = _text(operator) if operator is not None else ""
        name, value = node.child_by_field_name("lhs"), node.child_by_field_name("rhs")
        if arrow in ("->", "->>"):
            name, value = value, name
        elif arrow not in ("<-", "<<-", "="):
            return None
    elif node.type == "assignment_expression":
        name, value = node.child_by_field_name("left"), node.child_by_field_name("right")
    elif node.type == "assignment_statement":  # Lua: ``a, b = f, g`` names nothing alone
        names = next((c for c in node.named_children if c.type == "variable_list"), None)
        values = next((c for c in node.named_children if c.type == "expression_list"), None)
        if names is None or values is None or names.named_child_count != 1 or values.named_child_count != 1:
            return None
        name, value = names.named_children[0], values.named_children[0]
    else:
        return None
    if name is None or value is None or value.type not in _FUNCTION_VALUES:
        return None
    return _text(name).strip("`"), value


def _nameless_type(node: Any) -> bool:
    """An anonymous struct, class or namespace: its members are looked for inside it instead."""
    core = node.child_by_field_name("definition") or node
    return core.type in _TYPES and not name_of(node)


def _is_definition(node: Any, kinds: frozenset[str]) -> bool:
    if node.type not in kinds:
        return False
    if node.type in ("struct_specifier", "class_specifier"):  # a type named in a declaration has no body
        return node.child_by_field_name("body") is not None
    return node.end_point[0] > node.start_point[0] or node.type in _FUNCTIONS


def _leading_comments_start(node: Any) -> int:
    """Where ``node`` starts with the comments written right above it (doc comments, JSDoc)."""
    start = node.start_byte
    previous = node.prev_sibling
    row = node.start_point[0]
    while previous is not None and "comment" in previous.type and previous.end_point[0] >= row - 1:
        start, row = previous.start_byte, previous.start_point[0]
        previous = previous.prev_sibling
    return start


def name_of(node: Any) -> str:
    """A definition's name as written (``f``, ``Foo``, ``C::f``), or "" when it has none."""
    inner = node.child_by_field_name("definition")  # a decorated Python definition
    if inner is not None:
        return name_of(inner)
    if node.type == "impl_item":  # ``impl<'k> ToKey for Key<'k>`` -> Key
        named = node.child_by_field_name("type")
        return _bare_type(_text(named)) if named is not None else ""
    named = node.child_by_field_name("name")
    if named is not None:
        return _text(named)
    declarator = node.child_by_field_name("declarator")  # C and C++ functions
    while declarator is not None:
        if declarator.type in ("identifier", "field_identifier", "qualified_identifier", "destructor_name",
                               "operator_name"):
            return _text(declarator)
        declarator = declarator.child_by_field_name("declarator") or next(
            (c for c in declarator.named_children if "identifier" in c.type), None)
    for child in node.named_children:  # Go ``type_declaration`` -> ``type_spec``; Ruby ``constant``
        if child.type in ("type_spec", "type_alias"):
            return name_of(child)
        if child.type in ("identifier", "type_identifier", "constant", "simple_identifier", "word"):
            return _text(child)
    return ""


def _bare_type(text: str) -> str:
    """A type as a name: references, lifetimes and type arguments dropped (``&'a Key<'a>`` -> ``Key``)."""
    text = re.sub(r"^(?:&\s*(?:'\w+\s+)?(?:mut\s+)?|\*(?:const|mut)\s+|dyn\s+)+", "", text.strip())
    while True:
        shorter = re.sub(r"<[^<>]*>", "", text)
        if shorter == text:
            return " ".join(text.split())
        text = shorter


def receiver_of(node: Any) -> str:
    """The type a Go method is declared on (``func (r *T) M()`` -> ``T``), or ""."""
    receiver = node.child_by_field_name("receiver") if node.type == "method_declaration" else None
    if receiver is None:
        return ""
    stack = [receiver]
    while stack:
        current = stack.pop(0)
        if current.type == "type_identifier":
            return _text(current)
        stack.extend(current.named_children)
    return ""


def body_of(node: Any) -> Any | None:
    """The block of statements of a function (its ``body`` field, or the definition a decorator wraps)."""
    inner = node.child_by_field_name("definition")
    if inner is not None:
        return body_of(inner)
    assigned = assigned_function(node)
    if assigned is not None:
        return body_of(assigned[1])
    body = node.child_by_field_name("body")
    # Kotlin/Swift wrap the block once more (``function_body``), Go its statements (``statement_list``).
    while body is not None and body.named_child_count == 1 and body.named_children[0].type in _WRAPPERS:
        body = body.named_children[0]
    return body


_WRAPPERS = frozenset({"block", "statement_list", "statements", "function_body", "compound_statement"})


def _text(node: Any) -> str:
    return node.text.decode("utf-8", errors="replace")
