"""Peak memory and time of reading hostile documents (issue 22, "Bad input"), each in a fresh process.

    python benchmarks/hostile_documents.py

Cases: an .xlsx with a million empty styled rows after a few real ones, an e-mail with a 50 MB
attachment, a .docx zip bomb (1 GB of zeros compressed to ~1 MB), a damaged .pptx, a
password-protected (OLE) .docx. Each row says what the loader reported, its seconds and the
process's peak RSS (VmHWM, which includes the ~55 MB of Python and the libraries).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from formats import peak_rss_mb  # benchmarks/formats.py


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
            "peak_rss_mb": peak_rss_mb()}


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(json.dumps(run_one(Path(sys.argv[2]))))
        return
    with tempfile.TemporaryDirectory(prefix="ragloom-hostile-") as folder:
        cases = make_cases(Path(folder))
        print("| file | seconds | peak RSS MB | what the loader said |")
        print("|---|---|---|---|")
        for name, path in cases.items():
            out = subprocess.run([sys.executable, __file__, "--one", str(path)], capture_output=True, text=True, check=True)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"| {name} ({path.stat().st_size / 2**20:.1f} MB on disk) | {row['seconds']:.2f} | "
                  f"{row['peak_rss_mb']:.0f} | {row['said'].replace(str(path), path.name)[:140]} |")


if __name__ == "__main__":
    main()
