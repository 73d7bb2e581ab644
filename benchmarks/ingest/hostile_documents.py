"""Peak memory and time of reading hostile documents (issue 22, "Bad input"), each in a fresh process.

    python -m benchmarks hostile_documents            # each file read alone, in its own process
    python -m benchmarks hostile_documents --ingest   # all of them, plus flate-bomb PDFs, as one ingest

``--ingest`` ingests the folder of every case plus two flate-bomb PDFs (a 764 KB-class file
whose content stream inflates to 500 MB, and three pages of 200 MB each) into a fresh index,
once with documents parsed in a worker process (the default, ``ingest.parse_in_worker``) and
once in the ingest's own process, and prints the ingest's peak RSS and its workers'.

Cases: an .xlsx with a million empty styled rows after a few real ones, an e-mail with a 50 MB
attachment, a .docx zip bomb (1 GB of zeros compressed to ~1 MB), a damaged .pptx, a
password-protected (OLE) .docx. Each row says what the loader reported, its seconds and the
process's peak RSS (VmHWM, which includes the ~55 MB of Python and the libraries).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import tempfile
import time
import zipfile
import zlib
from pathlib import Path

from .. import harness


def make_cases(folder: Path) -> dict[str, Path]:
    from ragloom.testing import documents as make

    cases: dict[str, Path] = {}
    sheet = folder / "million-empty-rows.xlsx"
    # Styled empty rows, as a spreadsheet that once had a format applied to whole columns keeps them.
    import openpyxl
    from openpyxl.styles import Font

    workbook = openpyxl.Workbook(write_only=True)
    ws = workbook.create_sheet("Data")
    from openpyxl.cell import WriteOnlyCell

    ws.append(["name", "value"])
    ws.append(["alpha", 1])
    bold = Font(bold=True)
    for _ in range(1_000_000):
        cell = WriteOnlyCell(ws, value=None)
        cell.font = bold
        ws.append([cell])
    workbook.save(str(sheet))
    cases["xlsx, 1M empty styled rows"] = sheet

    attachment = bytes(range(256)) * (50 * 2**20 // 256)
    message = make.email_message("Big file", "See the attachment.", attachments=[("data.txt", attachment)])
    cases["eml, 50 MB attachment"] = make.write_eml(folder / "big.eml", message)

    bomb = folder / "bomb.docx"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        with archive.open("word/document.xml", "w", force_zip64=True) as handle:
            block = b"\x00" * 2**20
            for _ in range(1024):
                handle.write(block)
    cases["docx, zip bomb (1 GB)"] = bomb

    damaged = folder / "damaged.pptx"
    make.write_pptx(damaged, [make.Section("Title", ["Body"])])
    data = damaged.read_bytes()
    damaged.write_bytes(data[: len(data) // 2])
    cases["pptx, cut in half"] = damaged

    locked = folder / "locked.docx"
    locked.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 4096)
    cases["docx, password-protected"] = locked
    return cases


def flate_bomb_pdf(path: Path, pages_mb: list[int]) -> Path:
    """A PDF whose pages' content streams are spaces, deflated: each inflates to its size in MB."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
                   b" ".join(b"%d 0 R" % (3 + 2 * i) for i in range(len(pages_mb))), len(pages_mb))]
    block = b" " * 2**20
    for number, megabytes in enumerate(pages_mb):
        packer = zlib.compressobj(9)
        stream = b"".join(packer.compress(block) for _ in range(megabytes)) + packer.flush()
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R >>" % (4 + 2 * number))
        objects.append(b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out, offsets = bytearray(b"%PDF-1.7\n"), []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))
    return path


def run_ingest(folder: Path, in_worker: bool, memory_mb: int) -> dict:
    from ragloom import Config, Index

    with tempfile.TemporaryDirectory(prefix="ragloom-hostile-index-") as index_folder:
        config = Config.from_dict({"ingest": {"parse_in_worker": in_worker, "parse_memory_mb": memory_mb}})
        started = time.perf_counter()
        with Index.open(Path(index_folder), config) as index:
            report = index.ingest([folder])
        seconds = time.perf_counter() - started
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"seconds": seconds, "peak_rss_mb": harness.peak_rss_mb(), "workers_peak_rss_mb": workers,
            "added": len(report.added), "failed": [f"{Path(f.path).name}: {f.error}" for f in report.failed]}


def ingest_table() -> None:
    with tempfile.TemporaryDirectory(prefix="ragloom-hostile-") as folder:
        cases = make_cases(Path(folder))
        flate_bomb_pdf(Path(folder) / "flate-bomb-500mb.pdf", [500])
        flate_bomb_pdf(Path(folder) / "flate-bomb-3x200mb.pdf", [200, 200, 200])
        sizes = ", ".join(f"{p.name} {p.stat().st_size / 2**10:,.0f} KB" for p in sorted(Path(folder).glob("flate-*")))
        print(f"{len(cases) + 2} hostile files ({sizes})\n")
        print("| parsing | seconds | ingest peak RSS MB | worker peak RSS MB | files added | reported |")
        print("|---|---|---|---|---|---|")
        for in_worker, memory_mb in ((True, 1024), (True, 512), (False, 1024)):
            label = f"worker, parse_memory_mb {memory_mb}" if in_worker else "in-process"
            command = harness.command("hostile_documents", "--ingest-one", folder, str(in_worker), str(memory_mb))
            out = subprocess.run(command, capture_output=True, text=True)
            if out.returncode != 0:
                print(f"| {label} | died ({out.returncode}) | | | | "
                      f"{out.stderr.strip().splitlines()[-1][:120] if out.stderr.strip() else ''} |")
                continue
            row = json.loads(out.stdout.strip().splitlines()[-1])
            said = "<br>".join(f.replace(folder + "/", "")[:110] for f in row["failed"])
            print(f"| {label} | {row['seconds']:.1f} | {row['peak_rss_mb']:.0f} | "
                  f"{row['workers_peak_rss_mb']:.0f} | {row['added']} | {said} |")


def run_one(path: Path) -> dict:
    from ragloom.errors import LoaderError
    from ragloom.ingest.loaders import load_file

    started = time.perf_counter()
    try:
        result = load_file(path, path.name)
        said = "; ".join(result.warnings) or f"{len(result.documents)} document(s)"
    except LoaderError as exc:
        said = f"error: {exc}"
    return {"seconds": time.perf_counter() - started, "said": said,
            "peak_rss_mb": harness.peak_rss_mb()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ingest", action="store_true", help="every case plus flate-bomb PDFs as one ingest")
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--ingest-one", nargs=3, metavar=("FOLDER", "IN_WORKER", "MB"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one)))
        return
    if args.ingest_one:
        folder, in_worker, memory_mb = args.ingest_one
        print(json.dumps(run_ingest(Path(folder), in_worker == "True", int(memory_mb))))
        return
    if args.ingest:
        ingest_table()
        return
    with tempfile.TemporaryDirectory(prefix="ragloom-hostile-") as folder:
        cases = make_cases(Path(folder))
        print("| file | seconds | peak RSS MB | what the loader said |")
        print("|---|---|---|---|")
        for name, path in cases.items():
            out = subprocess.run(harness.command("hostile_documents", "--one", str(path)), capture_output=True,
                                 text=True, check=True)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"| {name} ({path.stat().st_size / 2**20:.1f} MB on disk) | {row['seconds']:.2f} | "
                  f"{row['peak_rss_mb']:.0f} | {row['said'].replace(str(path), path.name)[:140]} |")


if __name__ == "__main__":
    main()
