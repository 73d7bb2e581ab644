"""Source code as tree-sitter sees it: the grammars, and the definitions a file holds.

Each grammar is a PyPI wheel that ships it compiled (``tree-sitter-python`` …), so nothing is
fetched at run time; they are the ``code`` extra. A language whose grammar is not installed
(or has none packaged, like R) is cut into line-based chunks by the chunker.
"""

from __future__ import annotations

import functools
import importlib
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
DEFINITIONS["sql"] = frozenset()
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
        if _is_definition(child, kinds):
            core = child.child_by_field_name("definition") or child  # a decorated Python definition
            yield Definition(child, _leading_comments_start(child), child.end_byte, name_of(child),
                             core.type in _TYPES)
        elif child.type != "ERROR" and child.named_child_count:
            yield from definitions_in(child, language)


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
    named = node.child_by_field_name("name") or (node.child_by_field_name("type") if node.type == "impl_item" else None)
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
    body = node.child_by_field_name("body")
    if body is not None and body.type in ("function_body",) and body.named_child_count == 1:
        body = body.named_children[0]  # Kotlin/Swift wrap the block once more
    return body


def _text(node: Any) -> str:
    return node.text.decode("utf-8", errors="replace")
