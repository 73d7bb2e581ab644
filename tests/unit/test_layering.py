"""The import graph of ragloom: no circles between modules or packages, and the facade on top.

Every import counts, also those inside functions and under ``TYPE_CHECKING``: a lazy
import is still a dependency, and a circle hidden in a function is still a circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import ragloom

PACKAGE = Path(ragloom.__file__).resolve().parent
#: The only places that may use ``Index``: the public API and what sits above the facade.
ABOVE_THE_FACADE = ("ragloom", "ragloom.cli", "ragloom.server", "ragloom.eval", "ragloom.integrations")


def module_names() -> dict[str, Path]:
    names = {}
    for file in PACKAGE.rglob("*.py"):
        parts = list(file.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = file
    return names


def imports_of(name: str, file: Path, known: set[str]) -> set[str]:
    """The ragloom modules ``name`` imports (``from pkg import sub`` names the submodule)."""
    found = set()
    for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name in known}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = name.split(".") if file.name == "__init__.py" else name.split(".")[:-1]
                here = here[: len(here) - node.level + 1]
                base = ".".join([*here, *([node.module] if node.module else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    return (found & known) - {name}


def import_graph() -> dict[str, set[str]]:
    modules = module_names()
    return {name: imports_of(name, file, set(modules)) for name, file in modules.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one member (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph between ``ragloom.X`` (top-level modules and packages)."""
    def top(name: str) -> str:
        return ".".join(name.split(".")[:2])

    packages: dict[str, set[str]] = {}
    for name, targets in graph.items():
        packages.setdefault(top(name), set()).update(top(t) for t in targets if top(t) != top(name))
    return packages


def test_the_circle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_relative_imports_resolve_to_modules() -> None:
    graph = import_graph()
    assert "ragloom.retrieve.base" in graph["ragloom.retrieve.pipeline"]  # from .base import ...
    assert "ragloom.models.llm" in graph["ragloom.generate"]  # from ..models.llm import ...
    assert "ragloom.cli.shared" in graph["ragloom.cli.search"]


def test_no_module_imports_itself_back_in_a_circle() -> None:
    assert circles(import_graph()) == []


def test_no_two_packages_import_each_other() -> None:
    """ingest, retrieve, generate, knowledge, stores ... each depend downward only."""
    assert circles(package_graph(import_graph())) == []


def test_nothing_below_the_facade_imports_the_index() -> None:
    graph = import_graph()
    importers = sorted(name for name, targets in graph.items() if "ragloom.index" in targets)
    assert "ragloom.cli.shared" in importers  # the check sees the CLI's lazy import

    def above(name: str) -> bool:
        return name == "ragloom" or any(name == top or name.startswith(top + ".") for top in ABOVE_THE_FACADE[1:])

    assert [name for name in importers if not above(name)] == []
