"""Markdown tables from result files: ``python -m benchmarks report FILE... [--update BENCHMARKS.md]``.

A result file is either one run's record (``harness.Run``: its ``name`` and ``metrics``) or a JSON
file a benchmark wrote itself (``--json``/``--out``; its benchmark is the longest benchmark name its
file name starts with, or ``--benchmark``). Files of one benchmark become one table: the
benchmark's own ``tables(results)`` when it has one; else, for runs that recorded no figures,
what each printed (its tables) under a line naming the run; else a row per file of its scalar
figures.

``--update FILE.md`` regenerates every block of FILE.md written as

    <!-- report: benchmarks/results/synthetic-*.json -->
    ...the table...
    <!-- /report -->

(the arguments are those of ``report``, paths from the repository's root); ``--check`` only says
whether a block is stale.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from . import benchmarks, find
from .harness import REPO

BLOCK = re.compile(r"^(<!-- report: (?P<args>[^\n]*?) -->\n)(?P<body>.*?)^(<!-- /report -->)$",
                   re.DOTALL | re.MULTILINE)


def benchmark_of(path: Path, data: dict) -> str:
    if "name" in data and "metrics" in data:
        return data["name"]
    names = [name for name in benchmarks() if path.stem == name or path.stem.startswith(name + "-")]
    if not names:
        raise SystemExit(f"{path}: no benchmark's name starts its file name; say which with --benchmark")
    return max(names, key=len)


def figures_of(data: dict) -> dict:
    return data["metrics"] if "name" in data and "metrics" in data else data


def generic_table(results: list[dict], files: list[Path]) -> str:
    """A row per file of every number or string at the top level of its figures."""
    columns: list[str] = []
    for result in results:
        columns += [k for k, v in result.items() if isinstance(v, (int, float, str)) and k not in columns]
    lines = ["| file | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for path, result in zip(files, results):
        cells = [_cell(result.get(column)) for column in columns]
        lines.append(f"| {path.name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else str(value)


def printed(record: dict) -> str:
    """A run's record without figures of its own: what it printed, under a line saying which run."""
    caption = (f"`python -m benchmarks {' '.join([record['name'], *record['args']])}`: {record['date']}, "
               f"commit {str(record['commit'])[:12]}, {record['seconds']:.0f} s, load average "
               f"{record['load_before']} before, {record['load_after']} after")
    return caption + "\n\n" + record["output"].strip("\n")


def render(files: list[Path], benchmark: str | None = None) -> str:
    grouped: dict[str, list[tuple[Path, Any]]] = defaultdict(list)
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        grouped[benchmark or benchmark_of(path, data)].append((path, data))
    tables = []
    for name, pairs in grouped.items():
        module = find(name).load()
        results = [figures_of(data) for _, data in pairs]
        if hasattr(module, "tables"):
            tables.append(module.tables(results).rstrip("\n"))
        elif all(isinstance(data, dict) and "output" in data and not data["metrics"] for _, data in pairs):
            tables += [printed(data) for _, data in pairs]
        else:
            tables.append(generic_table(results, [path for path, _ in pairs]))
    return "\n\n".join(tables) + "\n"


def _expand(patterns: list[str], root: Path) -> list[Path]:
    files: list[Path] = []
    for pattern in patterns:
        base, rest = (Path(Path(pattern).anchor), str(Path(pattern).relative_to(Path(pattern).anchor))) \
            if Path(pattern).is_absolute() else (root, pattern)
        matched = sorted(base.glob(rest)) if any(c in pattern for c in "*?[") else [base / rest]
        if not matched:
            raise SystemExit(f"no result file matches {pattern}")
        files += matched
    return files


def update(document: Path, check: bool) -> int:
    text = document.read_text(encoding="utf-8")
    stale: list[str] = []

    def regenerate(match: re.Match) -> str:
        parser = _parser()
        args = parser.parse_args(shlex.split(match["args"]))
        body = render(_expand(args.files, REPO), args.benchmark)
        if body != match["body"]:
            stale.append(match["args"])
        return match.group(1) + body + match.group(4)

    new = BLOCK.sub(regenerate, text)
    if check:
        for args in stale:
            print(f"{document}: the table of `report {args}` is not what its results give", file=sys.stderr)
        return 1 if stale else 0
    document.write_text(new, encoding="utf-8")
    print(f"{document}: {len(BLOCK.findall(text))} tables, {len(stale)} changed")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", help="result files (globs are expanded from the repository's root)")
    parser.add_argument("--benchmark", help="the benchmark that wrote FILES (default: from each file)")
    parser.add_argument("--update", type=Path, metavar="FILE.md", help="regenerate the report blocks of FILE.md")
    parser.add_argument("--check", action="store_true", help="with --update: change nothing, exit 1 if a block is stale")
    return parser


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.update:
        return update(args.update, args.check)
    if not args.files:
        _parser().error("give result files, or --update FILE.md")
    files = _expand(args.files, Path.cwd())
    print(render(files, args.benchmark), end="")
    return 0
