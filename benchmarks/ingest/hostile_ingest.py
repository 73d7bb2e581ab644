"""Every file within a budget, nothing finished lost (issue 42): one CLI ingest per case, with the
whole process tree's memory sampled while it runs (the ingest and its worker processes).

    python -m benchmarks hostile_ingest pathology [--set held-out]   # hostile files + 30 notes
    python -m benchmarks hostile_ingest layout                        # 2 MB of words four ways, 5 MB repeated
    python -m benchmarks hostile_ingest size [--mb 20] [--seconds 600]
    python -m benchmarks hostile_ingest ctrl-c [--notes 2000] [--after 12]
    python -m benchmarks hostile_ingest splitter                      # chunking speed vs LangChain

Each prints a Markdown table and writes one JSON file under benchmarks/results/. The tree's peak
is the largest sum, over the ingest and every process under it, of RSS (pages a forked worker
shares with the ingest count twice) and of PSS (shared pages split between them: what the tree
really holds), sampled every 0.1 s. The ``held-out`` set has the same kinds of file made with
other sizes, names and seeds, to check that nothing was tuned to the first set.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import signal
import subprocess
import tempfile
import time
import zipfile
from pathlib import Path

from .. import harness

RESULTS = harness.RESULTS
SCIFACT = harness.SCIFACT / "corpus.jsonl"
ragloom = harness.ragloom_command


def machine() -> dict:
    return {**harness.machine(), "load_before": round(harness.load_average(), 2),
            "date": time.strftime("%Y-%m-%d %H:%M")}


def run_ingest(folder: Path, index: Path, *extra: str, stop_after: float | None = None) -> dict:
    """One ``ragloom ingest --json`` with the tree sampled; ``stop_after`` seconds: SIGINT then."""
    started = time.perf_counter()
    process = subprocess.Popen(ragloom("--index", str(index), "ingest", str(folder), "--json", *extra),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with harness.TreeMemory(process.pid) as tree:
        if stop_after is not None:
            try:
                process.wait(timeout=stop_after)
            except subprocess.TimeoutExpired:
                process.send_signal(signal.SIGINT)
        out, err = process.communicate()
    seconds = time.perf_counter() - started
    try:
        report = json.loads(out)
    except json.JSONDecodeError:
        report = {"error": (err or out)[-2000:]}
    return {"seconds": round(seconds, 1), "tree_peak_rss_mb": round(tree.peak_rss), "tree_peak_pss_mb": round(tree.peak_pss),
            "processes": tree.most_processes, "returncode": process.returncode, "report": report,
            "stderr_tail": err[-600:]}


def words_of_scifact(limit: int = 400_000) -> list[str]:
    words: list[str] = []
    with open(SCIFACT) as corpus:
        for line in corpus:
            words += json.loads(line)["text"].replace(".", " ").split()
            if len(words) > limit:
                break
    return words


# -- the hostile files ---------------------------------------------------------------------------------
SETS = {
    # name: (seed, alias levels, nesting depth, CSV cell MB, notebook output MB, zip member MB)
    "main": (1, 7, 100_000, 10, 40, 100),
    "held-out": (2, 8, 120_000, 12, 45, 120),
}


def make_hostile(folder: Path, which: str) -> dict[str, str]:
    """The hostile files of one set; returns each file's kind."""
    seed, levels, depth, cell_mb, output_mb, member_mb = SETS[which]
    rng = random.Random(seed)
    tag = "" if which == "main" else "-h"
    folder.mkdir(parents=True, exist_ok=True)
    kinds: dict[str, str] = {}

    def put(name: str, data: bytes | str, kind: str) -> None:
        path = folder / name
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        kinds[name] = kind

    lines = [f"a0: &a0 [{', '.join(['lol'] * 10)}]"]
    lines += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 10)}]" for n in range(1, levels + 1)]
    put(f"aliases{tag}.yaml", "\n".join(lines) + "\n", f"YAML aliases, {levels} levels (10^{levels + 1} values)")
    entities = ['<!ENTITY e0 "lol">'] + [f'<!ENTITY e{n} "{f"&e{n - 1};" * 10}">' for n in range(1, levels + 2)]
    put(f"entities{tag}.xml", f'<?xml version="1.0"?><!DOCTYPE r [{"".join(entities)}]><r>&e{levels + 1};</r>\n',
        "XML entity expansion")
    put(f"nested{tag}.json", "[" * depth + '"core"' + "]" * depth, f"JSON nested {depth:,} deep")
    put(f"nested{tag}.html", "<html><body>" + "<div>" * depth + "deep words" + "</div>" * depth + "</body></html>",
        f"HTML nested {depth:,} deep")
    put(f"nested{tag}.py", "value = " + "(" * depth + "1" + ")" * depth + "\n", f"Python nested {depth:,} deep")
    cell = "".join(rng.choice("abcdefghij ") for _ in range(cell_mb * 1_000_000))
    put(f"cell{tag}.csv", f"name,notes\nrow one,\"{cell}\"\nrow two,short\n", f"CSV with a {cell_mb} MB cell")
    import base64

    blob = base64.b64encode(rng.randbytes(output_mb * 750_000)).decode()
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Plot of the survey\n"]},
        {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": ["plot()"],
         "outputs": [{"output_type": "display_data", "metadata": {}, "data": {"image/png": blob, "text/plain": ["<Figure>"]}}]},
    ]}
    put(f"plot{tag}.ipynb", json.dumps(notebook), f"notebook with a {output_mb} MB binary output")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("zeros.txt", "w", force_zip64=True) as member:
            chunk = bytes(1_000_000)
            for _ in range(member_mb):
                member.write(chunk)
        archive.writestr("readme.txt", "the archive's readme about the survey")
    put(f"zeros{tag}.zip", buffer.getvalue(), f"zip with a zero-filled {member_mb} MB member")
    return kinds


def make_notes(folder: Path, count: int, seed: int = 7) -> dict[str, str]:
    """Ordinary notes, each with a few words of its own (its marker)."""
    rng = random.Random(seed)
    topics = ["lidar calibration", "ROS launch files", "battery thermal limits", "wheel odometry drift",
              "loop closure", "motor driver wiring", "camera exposure", "path planning costs", "IMU bias",
              "gripper torque"]
    folder.mkdir(parents=True, exist_ok=True)
    markers = {}
    for n in range(count):
        topic = topics[n % len(topics)]
        marker = " ".join(_word(rng) for _ in range(2))  # words of its own, found in no other file
        text = (f"# {topic.title()} note {n}\n\nThe {marker} procedure for {topic}: check the {topic} twice, "
                f"log the result, and compare it with the previous run of {topic}.\n")
        (folder / f"note{n:02d}.md").write_text(text)
        markers[f"note{n:02d}.md"] = marker
    return markers


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(["ka", "lo", "vi", "dre", "mun", "tas", "quo", "ren", "zel", "pho"]) for _ in range(4))


def pathology(args: argparse.Namespace) -> dict:
    work = Path(tempfile.mkdtemp(prefix="ragloom-hostile-"))
    folder = work / "folder"
    kinds = make_hostile(folder, args.set)
    markers = make_notes(folder / "notes", 30, seed=SETS[args.set][0] + 6)
    result = run_ingest(folder, work / "index")
    report = result["report"]
    failures = {Path(f["path"]).name: f["error"] for f in report.get("failures", [])}
    skipped = {Path(f["path"]).name: f["reason"] for f in report.get("skipped_files", [])}
    warnings = report.get("warnings", [])
    outcomes = {}
    for name, kind in kinds.items():
        said = failures.get(name) or skipped.get(name) or next((w for w in warnings if name in w), "indexed whole")
        outcomes[name] = {"kind": kind, "outcome": said.replace(str(folder), "")[:220]}
    found = 0
    for name, marker in markers.items():
        hits = subprocess.run(ragloom("--index", str(work / "index"), "search", marker, "-k", "1", "--json"),
                              capture_output=True, text=True)
        try:
            first = json.loads(hits.stdout)[0]["source"]
        except (json.JSONDecodeError, KeyError, IndexError):
            first = ""
        found += first.endswith(name)
    result.update(set=args.set, notes_found_first=f"{found}/{len(markers)}", outcomes=outcomes)
    print(f"| set | seconds | tree peak RSS MB | tree peak PSS MB | notes found first |\n|---|---|---|---|---|\n"
          f"| {args.set} | {result['seconds']} | {result['tree_peak_rss_mb']} | {result['tree_peak_pss_mb']} | "
          f"{result['notes_found_first']} |\n")
    print("| file | kind | outcome |\n|---|---|---|")
    for name, row in outcomes.items():
        print(f"| {name} | {row['kind']} | {row['outcome']} |")
    return result


def layouts(folder: Path) -> dict[str, Path]:
    rng = random.Random(1)
    words = words_of_scifact()
    sentences, total = [], 0
    while total < 2_000_000:
        sentence = " ".join(rng.choice(words) for _ in range(rng.randint(6, 18))).capitalize() + "."
        sentences.append(sentence)
        total += len(sentence) + 1
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "paragraphs": ("paragraphs.txt", "\n\n".join(" ".join(sentences[i:i + 5]) for i in range(0, len(sentences), 5))),
        "one line": ("oneline.txt", " ".join(sentences)),
        "one paragraph, no sentence end": ("oneparagraph.txt", " ".join(s.rstrip(".") for s in sentences)),
    }
    flat = " ".join(s.rstrip(".") for s in sentences).split()
    per = len(flat) / 100_000
    cues = []
    for i in range(100_000):
        t = i * 2
        stamp = f"{t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}"
        cues.append(f"{i + 1}\n{stamp},000 --> {stamp},900\n{' '.join(flat[int(i * per):int((i + 1) * per)]) or 'end'}\n")
    files["100,000 subtitle cues"] = ("cues.srt", "\n".join(cues))
    files["5 MB of one sentence, paragraphs"] = ("repeated.txt", "\n\n".join(
        ["The robot calibrates its lidar before every run. " * 5] * 20_000))
    files["5 MB of one sentence, one line"] = ("repeated-line.txt", "The robot calibrates its lidar before every run. " * 100_000)
    paths = {}
    for label, (name, text) in files.items():
        (folder / name).write_text(text)
        paths[label] = folder / name
    return paths


def layout(args: argparse.Namespace) -> dict:
    work = Path(tempfile.mkdtemp(prefix="ragloom-layout-"))
    rows = {}
    print("| layout | MB | seconds | × paragraphs | chunks | tokens embedded | tree peak RSS MB | tree peak PSS MB |")
    print("|---|---|---|---|---|---|---|---|")
    for label, path in layouts(work / "files").items():
        row = run_ingest(path, work / f"index-{path.stem}")
        report = row["report"]
        base = rows.get("paragraphs", {}).get("seconds") or row["seconds"]
        if "5 MB" in label:
            base = rows.get("5 MB of one sentence, paragraphs", {}).get("seconds") or row["seconds"]
        row.update(mb=round(path.stat().st_size / 1e6, 1), ratio=round(row["seconds"] / base, 2))
        rows[label] = row
        print(f"| {label} | {row['mb']} | {row['seconds']} | {row['ratio']} | {report.get('chunks_written')} | "
              f"{report.get('tokens_embedded')} | {row['tree_peak_rss_mb']} | {row['tree_peak_pss_mb']} |", flush=True)
    return rows


def size(args: argparse.Namespace) -> dict:
    work = Path(tempfile.mkdtemp(prefix="ragloom-size-"))
    rng = random.Random(3)
    words = words_of_scifact()
    path = work / f"log-{args.mb}mb.txt"
    with open(path, "w") as out:
        written = 0
        while written < args.mb * 1_000_000:
            line = f"2026-11-28 05:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d} INFO " + " ".join(
                rng.choice(words) for _ in range(rng.randint(6, 20))) + "\n"
            out.write(line)
            written += len(line)
    row = run_ingest(path, work / "index", stop_after=args.seconds)
    report = row["report"]
    print("| file | seconds | stopped | chunks written | tokens embedded | tree peak RSS MB | tree peak PSS MB |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {args.mb} MB log | {row['seconds']} | {'SIGINT at ' + str(args.seconds) + ' s' if row['returncode'] == 130 else 'no'} | "
          f"{report.get('chunks_written')} | {report.get('tokens_embedded')} | {row['tree_peak_rss_mb']} | "
          f"{row['tree_peak_pss_mb']} |")
    return row


def ctrl_c(args: argparse.Namespace) -> dict:
    work = Path(tempfile.mkdtemp(prefix="ragloom-ctrlc-"))
    rng = random.Random(5)
    words = words_of_scifact(100_000)
    folder = work / "notes"
    folder.mkdir()
    for n in range(args.notes):
        (folder / f"n{n:04d}.txt").write_text(f"Note {n}: " + " ".join(rng.choice(words) for _ in range(60)))
    first = run_ingest(folder, work / "index", stop_after=args.after)
    second = run_ingest(folder, work / "index")
    kept = first["report"].get("kept")
    unchanged = second["report"].get("unchanged")
    print("| notes | SIGINT at | exit | stopped after s | kept | second ingest: unchanged / added | equal |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {args.notes} | {args.after} s | {first['returncode']} | {round(first['seconds'] - args.after, 1)} | {kept} | "
          f"{unchanged} / {second['report'].get('added')} | {kept == unchanged} |")
    return {"first": first, "second": second}


def splitter(args: argparse.Namespace) -> dict:
    """Reading + splitting + chunking plain text on one core: ragloom's chunker against LangChain's
    RecursiveCharacterTextSplitter (its default settings, length in characters) on the same files."""
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    os.environ["RAYON_NUM_THREADS"] = "1"
    from ragloom.config import Config
    from ragloom.embed import create_embedder
    from ragloom.ingest.chunkers.base import create_chunker
    from ragloom.ingest.loaders import load_file

    work = Path(tempfile.mkdtemp(prefix="ragloom-split-"))
    config = Config()
    embedder = create_embedder(config.embedder)
    try:
        from langchain_text_splitters import RecursiveCharacterTextSplitter
    except ImportError:
        RecursiveCharacterTextSplitter = None
    rows = {}
    print("| file | MB | ragloom read+chunk s, first / again | MB/s, first / again | chunks | LangChain read+split s | MB/s | pieces |")
    print("|---|---|---|---|---|---|---|---|")
    for label, path in layouts(work / "files").items():
        mb = path.stat().st_size / 1e6
        chunker = create_chunker(config.chunking, embedder.count_tokens, embedder.token_offsets, embedder.max_input_tokens)
        timings = []
        for _ in range(2):  # first: each distinct word counted by the tokenizer; again: from the worker's cache
            started = time.process_time()
            chunks = sum(1 for d in load_file(path, str(path)).documents for _ in chunker.iter_chunks(d))
            timings.append(time.process_time() - started)
        ours, again = timings
        theirs, pieces = float("nan"), 0
        if RecursiveCharacterTextSplitter is not None:
            started = time.process_time()
            pieces = len(RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=0).split_text(path.read_text()))
            theirs = time.process_time() - started
        rows[label] = {"mb": mb, "ragloom_s": ours, "ragloom_again_s": again, "chunks": chunks, "langchain_s": theirs,
                       "pieces": pieces}
        print(f"| {label} | {mb:.1f} | {ours:.2f} / {again:.2f} | {mb / ours:.1f} / {mb / again:.1f} | {chunks} | "
              f"{theirs:.2f} | {mb / theirs:.1f} | {pieces} |", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("case", choices=["pathology", "layout", "size", "ctrl-c", "splitter"])
    parser.add_argument("--set", default="main", choices=list(SETS))
    parser.add_argument("--mb", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=600.0, help="size: SIGINT after this long")
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--after", type=float, default=12.0)
    args = parser.parse_args()
    info = machine()
    result = {"pathology": pathology, "layout": layout, "size": size, "ctrl-c": ctrl_c, "splitter": splitter}[args.case](args)
    harness.record(result=result)
    RESULTS.mkdir(exist_ok=True)
    name = f"hostile-{args.case}{'-' + args.set if args.case == 'pathology' else ''}.json"
    (RESULTS / name).write_text(json.dumps({"machine": info, "load_after": round(harness.load_average(), 2),
                                            "result": result}, indent=1, default=str))
    print(f"\nload average before {info['load_before']}, after {harness.load_average():.2f}; {info['date']}")


if __name__ == "__main__":
    main()
