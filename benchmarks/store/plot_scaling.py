"""The embedded store's cost curve: latency and memory against corpus size, exact vs approximate.

Reads the JSON files ``benchmarks/store/synthetic.py --json`` writes (one per corpus size) and
draws p95 latency (dense and hybrid, unfiltered and 10%-filtered) and peak RSS of the search
processes against the number of chunks, on log scales. Needs matplotlib (``pip install
ragloom[plot]``).

    for n in 10000 100000 1000000; do
      python -m benchmarks synthetic --chunks $n --json benchmarks/results/synthetic-$n.json
    done
    python -m benchmarks plot_scaling benchmarks/results/synthetic-*.json --out scaling.png
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+", type=Path, help="JSON files from synthetic.py --json")
    parser.add_argument("--out", type=Path, default=Path("scaling.png"))
    parser.add_argument("--title", default="ragloom embedded store, 384-d synthetic chunks, 2 vCPUs")
    args = parser.parse_args()

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = sorted((json.loads(p.read_text()) for p in args.results), key=lambda r: r["chunks"])
    sizes = [r["chunks"] for r in runs]
    figure, (latency, memory) = plt.subplots(1, 2, figsize=(12, 4.8))
    lines = [
        ("exact", "dense", "exact dense", "tab:blue", "-"),
        ("ann", "dense", "ANN dense (IVF, rescored)", "tab:orange", "-"),
        ("exact", "hybrid", "exact hybrid", "tab:blue", "--"),
        ("ann", "hybrid", "ANN hybrid", "tab:orange", "--"),
        ("exact", "hybrid_filtered", "exact hybrid, 10% filter", "tab:blue", ":"),
        ("ann", "hybrid_filtered", "ANN hybrid, 10% filter", "tab:orange", ":"),
    ]
    for engine, kind, label, color, style in lines:
        points = [(r["chunks"], r[engine][kind][1]) for r in runs if engine in r]
        if points:
            latency.plot(*zip(*points), marker="o", color=color, linestyle=style, label=label)
    latency.set(xscale="log", yscale="log", xlabel="chunks", ylabel="p95 latency, ms (top 10)",
                title="search latency")
    latency.set_xticks(sizes, [f"{n:,}" for n in sizes])
    latency.grid(True, which="both", alpha=0.3)
    latency.legend(fontsize=8)

    for key, label, color in (("exact_search_peak_rss_mb", "exact search process", "tab:blue"),
                              ("peak_rss_mb", "ANN search process", "tab:orange"),
                              ("build_peak_rss_mb", "build (ingest without embedding)", "tab:gray")):
        points = [(r["chunks"], r[key]) for r in runs if key in r]
        memory.plot(*zip(*points), marker="o", color=color, label=label)
    memory.set(xscale="log", yscale="log", xlabel="chunks", ylabel="peak RSS, MB", title="memory")
    memory.set_xticks(sizes, [f"{n:,}" for n in sizes])
    memory.grid(True, which="both", alpha=0.3)
    memory.legend(fontsize=8)
    for run in runs:
        if "ann_recall_at_10" in run:
            latency.annotate(f"recall {run['ann_recall_at_10']:.3f}", (run["chunks"], run["ann"]["dense"][1]),
                             textcoords="offset points", xytext=(4, -12), fontsize=7, color="tab:orange")
    figure.suptitle(args.title)
    figure.tight_layout()
    figure.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
