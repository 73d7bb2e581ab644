"""PDFs read by PDFium: typeset two-column pages, ruled tables, running headers, scans read by OCR."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom.errors import CorruptDocumentError, LoaderError
from ragloom.ingest import ocr
from ragloom.ingest.loaders import LoaderOptions, load_file
from ragloom.ingest.loaders.pdf import clean_pages
from ragloom.testing.documents import write_scanned_pdf, write_two_column_pdf
from ragloom.testing.pdf import write_pdf

PARAGRAPHS = [
    "Lidar odometry estimates the motion of a robot from consecutive laser scans. " * 3,
    "Loop closure detects that the robot returned to a place it has seen before. " * 3,
    "Pose graph optimisation spreads the loop closure error over the whole trajectory. " * 3,
]
TABLE = [["sensor", "rate", "range"], ["lidar", "10 Hz", "120 m"], ["camera", "30 Hz", "40 m"], ["radar", "20 Hz", "250 m"]]
needs_tesseract = pytest.mark.skipif(not ocr.available(), reason="Tesseract is not installed (scripts/setup.sh --test installs it)")


def load(path: Path, **options):
    return load_file(path, str(path), options=LoaderOptions(**options) if options else None)


def test_two_column_pdf_keeps_reading_order_and_drops_running_lines(tmp_path: Path) -> None:
    paragraphs = [f"Section {n} says: " + PARAGRAPHS[n % 3] for n in range(30)]
    path = write_two_column_pdf(tmp_path / "paper.pdf", paragraphs, running_header="Journal of Robot Mapping")
    [doc] = load(path).documents
    assert doc.metadata["pages"] >= 2
    assert "Journal of Robot Mapping" not in doc.text and "Page 1" not in doc.text
    flat = " ".join(doc.text.split())
    # Every paragraph is whole (no line mixes the two columns) and they come in reading order.
    positions = [flat.index(" ".join(p.split())) for p in paragraphs]
    assert positions == sorted(positions)


def test_ruled_table_becomes_a_markdown_table_in_its_place(tmp_path: Path) -> None:
    path = write_two_column_pdf(tmp_path / "paper.pdf", PARAGRAPHS, table=TABLE)
    result = load(path)
    [doc] = result.documents
    assert result.stats["tables"] == 1
    assert "| sensor | rate | range |\n|---|---|---|\n| lidar | 10 Hz | 120 m |" in doc.text
    assert "| radar | 20 Hz | 250 m |" in doc.text
    assert doc.text.count("120 m") == 1  # the table's flattened text is replaced, not duplicated
    assert doc.text.index("Pose graph") < doc.text.index("| sensor |")


def test_table_without_ruling_lines_keeps_its_cells_apart(tmp_path: Path) -> None:
    table = [*TABLE, ["sonar", "", "5 m"]]  # an empty cell keeps its column
    path = write_two_column_pdf(tmp_path / "paper.pdf", PARAGRAPHS, table=table, borders="NONE")
    result = load(path)
    [doc] = result.documents
    assert result.stats["tables"] == 1
    assert "| sensor | rate | range |\n|---|---|---|\n| lidar | 10 Hz | 120 m |" in doc.text
    assert "| radar | 20 Hz | 250 m |\n| sonar |  | 5 m |" in doc.text
    assert "lidar 10 Hz" not in doc.text and doc.text.count("120 m") == 1
    assert doc.text.index("Pose graph") < doc.text.index("| sensor |")


@pytest.mark.parametrize("borders", ["NO_HORIZONTAL_LINES", "INTERNAL"])
def test_partly_ruled_table_is_read_by_its_columns(tmp_path: Path, borders: str) -> None:
    """Lines between columns only, or inside the table only: pdfplumber's grid runs rows together
    ("lidar camera radar") or keeps one column; the cells' alignment gives the table whole."""
    path = write_two_column_pdf(tmp_path / "paper.pdf", PARAGRAPHS, table=TABLE, borders=borders)
    result = load(path)
    [doc] = result.documents
    assert result.stats["tables"] == 1
    assert "| sensor | rate | range |\n|---|---|---|\n| lidar | 10 Hz | 120 m |" in doc.text
    assert "| camera | 30 Hz | 40 m |\n| radar | 20 Hz | 250 m |" in doc.text and doc.text.count("120 m") == 1


def test_prose_in_two_columns_is_not_taken_for_a_table(tmp_path: Path) -> None:
    paragraphs = [f"Section {n} says: " + PARAGRAPHS[n % 3] for n in range(30)]
    for size in (10, 7):  # smaller type: more words a line, as many lines side by side
        path = write_two_column_pdf(tmp_path / f"paper{size}.pdf", paragraphs, font_size=size)
        result = load(path)
        assert result.stats["tables"] == 0 and "|" not in result.documents[0].text


@pytest.mark.parametrize("numbered", [False, True])
def test_a_list_whose_markers_stand_apart_is_not_a_table(tmp_path: Path, numbered: bool) -> None:
    from fpdf import FPDF

    items = ["INTEGER;", "BOOLEAN;", "OBJECT IDENTIFIER;", "BIT STRING;", "OCTET STRING;"]
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(0, 6, "The types a definition may use are these, and no others:", new_x="LMARGIN", new_y="NEXT")
    for number, item in enumerate(items, start=1):
        pdf.cell(12, 6, f"{number}." if numbered else "-")  # the item starts a wide gap after its marker
        pdf.cell(0, 6, item, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(tmp_path / "list.pdf"))
    result = load(tmp_path / "list.pdf")
    assert result.stats["tables"] == 0 and "|" not in result.documents[0].text
    assert "OBJECT IDENTIFIER;" in result.documents[0].text


def test_table_chunks_repeat_the_header_and_never_cut_a_row(tmp_path: Path, embedder) -> None:
    from ragloom import Index
    from ragloom.config import Config

    rows = [["gene", "expression", "tissue"]] + [[f"GENE{i}", f"{i}.25", "liver"] for i in range(80)]
    write_two_column_pdf(tmp_path / "genes.pdf", PARAGRAPHS, table=rows)
    with Index.open(tmp_path / "idx", Config.from_dict({}), embedder=embedder) as index:
        index.ingest([tmp_path / "genes.pdf"])
        hits = index.search("GENE70 expression", k=20)
    table_hits = [h for h in hits if "| GENE" in h.text]
    assert any("| GENE70 |" in h.text for h in table_hits)
    for hit in table_hits:
        assert "| gene | expression | tissue |" in hit.text
        assert all(line.endswith("|") for line in hit.text.splitlines() if line.startswith("|"))


def test_running_lines_and_hyphenation() -> None:
    bodies = ["Mount the lidar on the mast and tighten the cali-\nbration screws.", "Charge the battery.",
              "Fly the survey route.", "Download the logs."]
    pages = [f"ACME Manual\n{body}\n{n}" for n, body in enumerate(bodies, start=1)]
    cleaned = clean_pages(pages)
    assert cleaned[0] == "Mount the lidar on the mast and tighten the calibration screws."
    assert all("ACME" not in page for page in cleaned)
    assert clean_pages(["Only one page\n1"]) == ["Only one page\n1"]


def test_encrypted_pdf_is_named_as_such(tmp_path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.cell(0, 10, "secret plans")
    pdf.set_encryption(owner_password="owner", user_password="user")
    pdf.output(str(tmp_path / "locked.pdf"))
    with pytest.raises(CorruptDocumentError, match="encrypted with a password"):
        load(tmp_path / "locked.pdf")


@needs_tesseract
def test_scanned_pdf_is_read_by_ocr_with_confidence_per_page(tmp_path: Path) -> None:
    digital = write_pdf(tmp_path / "digital.pdf", ["Calibrate the lidar sensor every morning before the survey."])
    scan = write_scanned_pdf(digital, tmp_path / "scan.pdf", dpi=150)
    result = load(scan)
    [doc] = result.documents
    assert result.stats["ocr_pages"] == 1 and doc.metadata["ocr_pages"] == 1
    assert "Calibrate the lidar sensor every morning" in " ".join(doc.text.split())
    assert 0.5 < doc.page_metadata[0]["ocr_confidence"] <= 1.0


@needs_tesseract
def test_mixed_pdf_is_read_page_by_page(tmp_path: Path, embedder) -> None:
    from pypdf import PdfReader, PdfWriter

    write_pdf(tmp_path / "a.pdf", ["The digital page explains the survey route."])
    write_scanned_pdf(write_pdf(tmp_path / "b.pdf", ["The scanned page lists the lidar settings."]), tmp_path / "s.pdf", dpi=150)
    merged = PdfWriter()
    for part in ("a.pdf", "s.pdf"):
        for page in PdfReader(tmp_path / part).pages:
            merged.add_page(page)
    with open(tmp_path / "docs.pdf", "wb") as handle:
        merged.write(handle)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs.pdf").rename(tmp_path / "docs" / "mixed.pdf")

    from ragloom import Index
    from ragloom.config import Config

    with Index.open(tmp_path / "idx", Config.from_dict({}), embedder=embedder) as index:
        report = index.ingest([tmp_path / "docs"])
        [hit] = index.search("lidar settings", k=1)
    assert report.ocr_pages == 1 and report.summary()["ocr_pages"] == 1
    assert hit.page == 2 and "lidar settings" in hit.text and hit.metadata["ocr_confidence"] > 0.5


@needs_tesseract
def test_images_are_read_by_ocr_and_never_skips_them(tmp_path: Path) -> None:
    import pypdfium2 as pdfium

    digital = write_pdf(tmp_path / "page.pdf", ["Replace the drone battery after forty flights."])
    image = pdfium.PdfDocument(str(digital))[0].render(scale=150 / 72).to_pil()
    image.save(tmp_path / "photo.png")
    image.save(tmp_path / "scan.tiff")
    for name in ("photo.png", "scan.tiff"):
        [doc] = load(tmp_path / name).documents
        assert "Replace the drone battery after forty flights." in " ".join(doc.text.split())
    result = load(tmp_path / "photo.png", ocr="never")
    assert result.documents == [] and "ingest.ocr is never" in result.warnings[0]


def test_without_tesseract_the_message_says_how_to_install_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(ocr.shutil, "which", lambda name: None)
    digital = write_pdf(tmp_path / "page.pdf", ["Some text."])
    write_scanned_pdf(digital, tmp_path / "scan.pdf", dpi=72)
    result = load(tmp_path / "scan.pdf")
    assert result.documents == [] and "apt-get install tesseract-ocr" in result.warnings[-1]
    import pypdfium2 as pdfium

    pdfium.PdfDocument(str(digital))[0].render(scale=1).to_pil().save(tmp_path / "photo.png")
    with pytest.raises(LoaderError, match="apt-get install tesseract-ocr"):
        load(tmp_path / "photo.png")


def test_damaged_image_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n garbage")
    with pytest.raises(CorruptDocumentError, match="could not be read as an image"):
        load(tmp_path / "broken.png")


@needs_tesseract
def test_a_scan_ingested_before_tesseract_was_installed_is_read_at_the_next_ingest(tmp_path: Path, monkeypatch,
                                                                                   embedder) -> None:
    from ragloom import Index
    from ragloom.config import Config

    (tmp_path / "docs").mkdir()
    digital = write_pdf(tmp_path / "page.pdf", ["Calibrate the lidar sensor every morning before the survey."])
    write_scanned_pdf(digital, tmp_path / "docs" / "scan.pdf", dpi=150)
    with Index.open(tmp_path / "idx", Config.from_dict({}), embedder=embedder) as index:
        with monkeypatch.context() as patched:
            patched.setattr(ocr.shutil, "which", lambda name: None)
            first = index.ingest([tmp_path / "docs"])
            again = index.ingest([tmp_path / "docs"])  # still no Tesseract: left as it is
        installed = index.ingest([tmp_path / "docs"])
        hits = index.search("lidar sensor", k=1)
    assert first.chunks_written == 0 and len(first.added) == 1
    assert len(again.unchanged) == 1 and not any("read again" in w for w in again.warnings)
    assert len(installed.updated) == 1 and installed.chunks_written >= 1
    assert any("read again" in w and "Tesseract" in w for w in installed.warnings)
    assert hits and "lidar" in hits[0].text
