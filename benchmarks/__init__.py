"""ragloom's benchmarks: one package, one harness (``harness.py``), grouped by area.

    python -m benchmarks --list               # every benchmark, by area
    python -m benchmarks NAME [ARGS]          # run one; its result goes to benchmarks/results/runs/
    python -m benchmarks report FILE...       # Markdown tables from result files

A benchmark is a module ``benchmarks/AREA/NAME.py`` with a docstring and a ``main()`` that parses
``sys.argv[1:]``; modules whose name starts with ``_`` (workers run by another Python) and modules
without ``main`` (shared code) are not benchmarks. Nothing is imported to list them.
"""

from __future__ import annotations

import ast
import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

PACKAGE = Path(__file__).resolve().parent
#: Areas, in the order ``--list`` shows them.
AREAS = ("quality", "ingest", "models", "store", "serve", "code", "languages", "peers")


@dataclass(frozen=True)
class Benchmark:
    name: str
    area: str
    path: Path

    @property
    def module_name(self) -> str:
        return f"benchmarks.{self.area}.{self.name}"

    @property
    def summary(self) -> str:
        """The docstring's first paragraph, cut to a line."""
        doc = ast.get_docstring(ast.parse(self.path.read_text(encoding="utf-8"))) or ""
        text = " ".join(doc.strip().split("\n\n")[0].split())
        return text if len(text) <= 100 else text[:100].rsplit(" ", 1)[0] + " …"

    def load(self) -> ModuleType:
        return importlib.import_module(self.module_name)


def _has_main(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(node, ast.FunctionDef) and node.name == "main" for node in tree.body)


def benchmarks() -> dict[str, Benchmark]:
    """Every benchmark by name (a name is unique across areas)."""
    found: dict[str, Benchmark] = {}
    for area in AREAS:
        for path in sorted((PACKAGE / area).glob("*.py")):
            if path.name.startswith("_") or not _has_main(path):
                continue
            if path.stem in found:
                raise RuntimeError(f"two benchmarks are named {path.stem}: {found[path.stem].path} and {path}")
            found[path.stem] = Benchmark(path.stem, area, path)
    return found


def find(name: str) -> Benchmark:
    """``NAME`` or ``AREA/NAME`` (``AREA.NAME``); an unknown name is an error listing the valid ones."""
    every = benchmarks()
    stem = name.removesuffix(".py").replace(".", "/").split("/")[-1]
    if stem in every:
        return every[stem]
    raise KeyError(f"no benchmark named {name!r}; valid names: {', '.join(sorted(every))}")
