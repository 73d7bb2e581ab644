"""``python -m benchmarks NAME [ARGS]``, ``--list``, and ``report`` (see ``benchmarks/__init__.py``)."""

from __future__ import annotations

import os
import sys

from . import AREAS, benchmarks, find, harness
from .report import main as report

USAGE = """usage: python -m benchmarks NAME [ARGS]     run a benchmark (NAME --help for its options)
       python -m benchmarks --list            every benchmark, by area
       python -m benchmarks report --help     Markdown tables from result files"""


def list_benchmarks() -> None:
    every = benchmarks()
    for area in AREAS:
        print(f"{area}/")
        for bench in (b for b in every.values() if b.area == area):
            print(f"  {bench.name:<20} {bench.summary}")


def run(name: str, args: list[str]) -> int:
    try:
        bench = find(name)
    except KeyError as error:
        print(error.args[0], file=sys.stderr)
        return 2
    module = bench.load()
    sys.argv = [f"python -m benchmarks {bench.name}", *args]
    if os.environ.get(harness.PARENT_RUN) or any(a in ("-h", "--help") for a in args):
        return module.main() or 0  # a worker process of a run, or no run at all
    # A worker process that the run starts (``harness.command``) finds this package and records nothing.
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    os.environ["PYTHONPATH"] = os.pathsep.join([str(harness.REPO), *(p for p in paths if p)])
    os.environ[harness.PARENT_RUN] = bench.name
    with harness.Run(bench.name, args):
        code = module.main()
    return code or 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    if argv[0] == "--list":
        list_benchmarks()
        return 0
    if argv[0] == "report":
        return report(argv[1:])
    return run(argv[0], argv[1:])


if __name__ == "__main__":
    sys.exit(main())
