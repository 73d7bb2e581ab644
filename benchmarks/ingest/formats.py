"""How much of a document survives each format (issue 22): the same SciFact abstracts as TXT, DOCX,
PPTX, XLSX, EPUB, a typeset two-column PDF with a table, and a scanned PDF, one file per abstract.

Each format is ingested into its own index, in a fresh process (its peak RSS is that process's
VmHWM), and the SciFact test queries are run against it; a file is a document, so nDCG@10 is
file-level and is compared with the TXT copy's. Every file also holds a generated table (3 columns,
4 rows of unique cell values): "cells" is the share of those cells found in the stored chunk text.
"read/s" is the loader alone (files, or pages for PDFs, per second); "ingest s" is the whole ingest
(read, chunk, embed, write). For the scanned PDF, the pages are the typeset PDF's pages rendered at
--dpi with noise and a slight skew, and CER is the OCR's character error rate against the typeset
page's own text layer.

    python -m benchmarks formats --data ../shared/datasets/scifact            # all formats
    python -m benchmarks formats --data ../shared/datasets/scifact --scan-limit 120 --formats txt,pdf,scan
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .. import harness

FORMATS = ("txt", "docx", "pptx", "xlsx", "epub", "pdf", "scan")
EXTENSION = {"txt": ".txt", "docx": ".docx", "pptx": ".pptx", "xlsx": ".xlsx", "epub": ".epub", "pdf": ".pdf",
             "scan": ".pdf"}


def table_for(doc_id: str) -> list[list[str]]:
    return [["marker", "value", "unit"]] + [[f"m{doc_id}r{r}", f"{r}.{doc_id[-2:]}5", f"u{r}x{doc_id}"] for r in range(1, 4)]


def cells_of(doc_id: str) -> list[str]:
    return [cell for row in table_for(doc_id)[1:] for cell in row]


def sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z])", text.strip())
    return [p for p in parts if p]


def write_corpus(fmt: str, docs: list[dict], folder: Path) -> None:
    from ragloom.testing import documents as make
    from ragloom.testing.documents import Section

    folder.mkdir(parents=True, exist_ok=True)
    for doc in docs:
        doc_id, title, text = doc["_id"], doc["title"], doc["text"]
        table = table_for(doc_id)
        path = folder / f"{doc_id}{EXTENSION[fmt]}"
        if fmt == "txt":
            rows = "\n".join("\t".join(row) for row in table)
            path.write_text(f"{title}\n\n{text}\n\n{rows}\n", encoding="utf-8")
        elif fmt == "docx":
            make.write_docx(path, [Section(title, [text], table=table)])
        elif fmt == "pptx":
            make.write_pptx(path, [Section(title, [text]), Section("Measurements", table=table)])
        elif fmt == "xlsx":
            groups = sentences(text)
            rows = [["title", "sentence"]] + [[title, s] for s in groups]
            make.write_xlsx(path, {"Abstract": rows, "Measurements": table})
        elif fmt == "epub":
            make.write_epub(path, [Section(title, [text], table=table)], title=title)
        elif fmt in ("pdf", "scan"):
            # A scan's typeset original is kept beside the folder (never ingested with it), for the CER.
            make.write_two_column_pdf(typeset_of(path) if fmt == "scan" else path, [title, text], table=table)


def typeset_of(scan: Path) -> Path:
    folder = scan.parent.with_name(scan.parent.name + "-typeset")
    folder.mkdir(parents=True, exist_ok=True)
    return folder / scan.name


def make_scans(folder: Path, dpi: int) -> None:
    from ragloom.testing.documents import write_scanned_pdf

    for typeset in sorted(folder.with_name(folder.name + "-typeset").glob("*.pdf")):
        write_scanned_pdf(typeset, folder / typeset.name, dpi=dpi, noise=10.0,
                          seed=int(typeset.stem) % 1000)


def cer(reference: str, hypothesis: str) -> tuple[int, int]:
    """Edit distance and reference length, on whitespace-normalised text."""
    ref, hyp = " ".join(reference.split()), " ".join(hypothesis.split())
    previous = list(range(len(hyp) + 1))
    for i, a in enumerate(ref, 1):
        current = [i] + [0] * len(hyp)
        for j, b in enumerate(hyp, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b))
        previous = current
    return previous[-1], len(ref)


def run_one(fmt: str, folder: Path, index_path: Path, data: Path, doc_ids: list[str]) -> dict:
    """In a fresh process: read every file (loader alone), ingest, search, score."""
    from ragloom import Index
    from ragloom.config import Config
    from ragloom.eval.beir import load_beir
    from ragloom.eval.metrics import mean, per_query_metrics
    from ragloom.ingest.loaders import load_file

    files = sorted(p for p in folder.iterdir() if p.suffix == EXTENSION[fmt])
    started = time.perf_counter()
    pages = 0
    read_text: dict[Path, str] = {}
    for file in files:
        result = load_file(file, str(file))
        pages += max((int(d.metadata.get("pages", 1)) for d in result.documents), default=1)
        read_text[file] = "\n".join(d.text for d in result.documents)
    read_seconds = time.perf_counter() - started
    result: dict = {"format": fmt, "files": len(files), "pages": pages, "read_s": read_seconds}

    started = time.perf_counter()
    with Index.open(index_path, Config.from_dict({})) as index:
        report = index.ingest([folder])
        result["ingest_s"] = time.perf_counter() - started
        result["failed"] = len(report.failed)
        result["ocr_pages"] = report.ocr_pages
        dataset = load_beir(data, "test")
        wanted = set(doc_ids)
        qrels = {q: {d: g for d, g in docs.items() if d in wanted} for q, docs in dataset.qrels.items()}
        qrels = {q: docs for q, docs in qrels.items() if docs}
        run: dict[str, dict[str, float]] = {}
        for qid in qrels:
            hits = index.search(dataset.queries[qid], k=50)
            ranked: dict[str, float] = {}
            for hit in hits:
                doc = Path(hit.source).name.split(".")[0]
                if doc not in ranked:
                    ranked[doc] = float(len(hits) - len(ranked))
            run[qid] = dict(list(ranked.items())[:10])
        result["ndcg10"] = mean(per_query_metrics(qrels, run)["nDCG@10"])
        result["queries"] = len(qrels)
        stored: dict[str, list[str]] = {}
        for chunk in index.store.iter_chunks():
            stored.setdefault(Path(chunk.source).name.split(".")[0], []).append(chunk.text)
        found = total = 0
        for file in files:
            doc_id = file.name.split(".")[0]
            text = " ".join(stored.get(doc_id, []))
            cells = cells_of(doc_id)
            found += sum(cell in text for cell in cells)
            total += len(cells)
        result["cells"] = found / total if total else 0.0
    if fmt == "scan":
        # The OCR'd text against the typeset original's text layer, both read by the same loader.
        errors = length = 0
        for file in files:
            reference = "\n".join(d.text for d in load_file(typeset_of(file), str(file)).documents)
            e, n = cer(reference, read_text[file])
            errors, length = errors + e, length + n
        result["cer"] = errors / length if length else 0.0
    result["peak_rss_mb"] = harness.peak_rss_mb()
    return result


def choose_docs(data: Path, extra_seed: int = 13) -> list[dict]:
    from ragloom.eval.beir import iter_jsonl, load_beir

    dataset = load_beir(data, "test")
    judged = {d for docs in dataset.qrels.values() for d in docs}
    corpus = [doc for _, doc in iter_jsonl(dataset.corpus_path)]
    chosen = [doc for doc in corpus if doc["_id"] in judged]
    others = [doc for doc in corpus if doc["_id"] not in judged]
    random.Random(extra_seed).shuffle(others)
    return chosen + others[: len(chosen)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=harness.SCIFACT)
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--scan-limit", type=int, default=120, help="abstracts in the scanned-PDF corpus (OCR is slow)")
    parser.add_argument("--dpi", type=int, default=200)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=harness.RESULTS / "formats.json")
    parser.add_argument("--one", nargs=3, metavar=("FORMAT", "FOLDER", "INDEX"), help=argparse.SUPPRESS)
    parser.add_argument("--ids", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        fmt, folder, index = args.one
        ids = json.loads(args.ids.read_text())
        print(json.dumps(run_one(fmt, Path(folder), Path(index), args.data, ids)))
        return

    docs = choose_docs(args.data)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="ragloom-formats-"))
    results = []
    scan_docs = _scan_subset(docs, args.scan_limit)
    for fmt in args.formats.split(","):
        subset = scan_docs if fmt == "scan" else docs
        folder = work / fmt
        if not folder.exists():
            write_corpus(fmt, subset, folder)
            if fmt == "scan":
                make_scans(folder, args.dpi)
        ids_file = work / f"{fmt}.ids.json"
        ids_file.write_text(json.dumps([d["_id"] for d in subset]))
        out = subprocess.run(
            harness.command("formats", "--data", str(args.data), "--ids", str(ids_file),
                            "--one", fmt, str(folder), str(work / f"{fmt}.index")),
            capture_output=True, text=True, check=True, env={**os.environ},
        )
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(json.dumps(results[-1]), file=sys.stderr)
    if "scan" in args.formats.split(",") and "txt" in args.formats.split(","):
        # The scanned corpus is a subset: its reference is TXT on the same subset.
        folder = work / "txt-scan-subset"
        if not folder.exists():
            write_corpus("txt", scan_docs, folder)
        ids_file = work / "txt-scan.ids.json"
        ids_file.write_text(json.dumps([d["_id"] for d in scan_docs]))
        out = subprocess.run(
            harness.command("formats", "--data", str(args.data), "--ids", str(ids_file),
                            "--one", "txt", str(folder), str(work / "txt-scan.index")),
            capture_output=True, text=True, check=True,
        )
        reference = json.loads(out.stdout.strip().splitlines()[-1])
        reference["format"] = "txt (scan subset)"
        results.append(reference)
    print_table(results)
    harness.record(results=results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))


def _scan_subset(docs: list[dict], limit: int) -> list[dict]:
    half = limit // 2
    judged, others = docs[: len(docs) // 2], docs[len(docs) // 2 :]
    return judged[:half] + others[: limit - half]


def print_table(results: list[dict]) -> None:
    print(table(results))


def tables(saved: list) -> str:
    """The tables of saved results (``python -m benchmarks report``): a run's record or an --out file."""
    return "\n\n".join(table(item["results"] if isinstance(item, dict) else item) for item in saved)


def table(results: list[dict]) -> str:
    txt = next((r for r in results if r["format"] == "txt"), None)
    txt_scan = next((r for r in results if r["format"] == "txt (scan subset)"), None)
    lines = ["| format | files | pages | nDCG@10 | of TXT | cells | read/s | ingest s | peak RSS MB | OCR pages | CER |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        base = {"scan": txt_scan, "txt (scan subset)": txt_scan}.get(r["format"], txt)
        ratio = f"{r['ndcg10'] / base['ndcg10']:.3f}" if base and base["ndcg10"] else "–"
        unit = r["pages"] if r["format"] in ("pdf", "scan") else r["files"]
        error = f"{r['cer']:.4f}" if "cer" in r else "–"
        lines.append(f"| {r['format']} | {r['files']} | {r['pages']} | {r['ndcg10']:.4f} | {ratio} | {r['cells']:.3f} | "
                     f"{unit / r['read_s']:.1f} | {r['ingest_s']:.1f} | {r['peak_rss_mb']:.0f} | {r.get('ocr_pages', 0)} | "
                     f"{error} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
