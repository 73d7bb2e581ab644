"""Loaders of the documents people have, on real files written by the formats' own libraries."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from ragloom.errors import CorruptDocumentError
from ragloom.ingest.loaders import load_file
from ragloom.testing import documents as make
from ragloom.testing.documents import Section

SECTIONS = [
    Section("Installation", ["Install the robot driver with pip before the first launch."]),
    Section("Calibration", ["Calibrate the lidar every morning."], table=[["sensor", "rate"], ["lidar", "10 Hz"], ["imu", "200 Hz"]]),
]


@pytest.fixture
def index_factory(embedder):
    from ragloom import Index
    from ragloom.config import Config

    return lambda path: Index.open(path, Config.from_dict({}), embedder=embedder)


def load(path: Path):
    return load_file(path, str(path))


def _has_table(text: str) -> None:
    assert "| sensor | rate |" in text and "| lidar | 10 Hz |" in text and "| imu | 200 Hz |" in text


def test_docx_headings_become_sections_and_tables_markdown(tmp_path: Path) -> None:
    [doc] = load(make.write_docx(tmp_path / "guide.docx", SECTIONS, title="Robot guide")).documents
    assert doc.title == "Robot guide"
    assert "# Installation\n\nInstall the robot driver" in doc.text
    assert "# Calibration" in doc.text
    _has_table(doc.text)


def test_docx_chunks_carry_the_heading_path(tmp_path: Path, index_factory) -> None:
    make.write_docx(tmp_path / "guide.docx", SECTIONS)
    with index_factory(tmp_path / "idx") as index:
        index.ingest([tmp_path / "guide.docx"])
        [hit, *_] = index.search("how often is the lidar calibrated", k=1)
    assert hit.section == "Calibration"
    assert "lidar" in hit.text


def test_pptx_gives_one_section_per_slide_with_slide_numbers_and_notes(tmp_path: Path) -> None:
    path = make.write_pptx(tmp_path / "deck.pptx", SECTIONS, notes=["Mention the pip extra."])
    [doc] = load(path).documents
    assert doc.page_label == "slide" and len(doc.page_starts) == 2
    assert "## Slide 1: Installation" in doc.text and "Notes: Mention the pip extra." in doc.text
    _has_table(doc.text)
    assert doc.page_at(doc.text.index("lidar")) == 2


def test_pptx_chunks_have_slide_metadata(tmp_path: Path, index_factory) -> None:
    make.write_pptx(tmp_path / "deck.pptx", SECTIONS)
    with index_factory(tmp_path / "idx") as index:
        index.ingest([tmp_path / "deck.pptx"])
        [hit] = index.search("lidar sensor rate", k=1)
    assert hit.metadata["slide"] == 2 and "page" not in hit.metadata


def test_xlsx_sheets_become_sections_with_the_header_on_every_block(tmp_path: Path) -> None:
    rows = [["city", "population"]] + [[f"city number {i}", i * 1000] for i in range(200)]
    [doc] = load(make.write_xlsx(tmp_path / "cities.xlsx", {"Towns": rows, "Empty": []})).documents
    assert "## Sheet: Towns" in doc.text and "Empty" not in doc.text
    blocks = [b for b in doc.text.split("\n\n") if b.startswith("|")]
    assert len(blocks) > 3
    assert all(b.startswith("| city | population |\n|---|---|\n") for b in blocks)
    assert "| city number 199 | 199000 |" in doc.text


def test_table_rows_are_never_cut_and_each_chunk_keeps_the_header(tmp_path: Path, index_factory) -> None:
    rows = [["gene", "expression level"]] + [[f"GENE{i}", f"{i}.5 units"] for i in range(300)]
    make.write_xlsx(tmp_path / "genes.xlsx", {"Genes": rows})
    with index_factory(tmp_path / "idx") as index:
        index.ingest([tmp_path / "genes.xlsx"])
        hits = index.search("GENE250 expression level", k=50)
    table_hits = [h for h in hits if "|" in h.text]
    assert table_hits and any("| GENE250 |" in h.text for h in hits)
    for hit in table_hits:
        assert "| gene | expression level |" in hit.text
        for line in hit.text.splitlines():
            if line.startswith("|"):
                assert line.endswith("|")


def test_empty_styled_rows_stop_a_sheet_with_a_note(tmp_path: Path, monkeypatch) -> None:
    from ragloom.ingest.loaders import spreadsheet

    monkeypatch.setattr(spreadsheet, "MAX_EMPTY_RUN", 50)
    rows = [["a", "b"], [1, 2]] + [[None, None]] * 60 + [[3, 4]]
    result = load(make.write_xlsx(tmp_path / "sparse.xlsx", {"S": rows}))
    assert "| 1 | 2 |" in result.documents[0].text and "| 3 | 4 |" not in result.documents[0].text
    assert any("empty rows in a row" in w for w in result.warnings)


def test_ods_and_csv_and_tsv(tmp_path: Path) -> None:
    table = [["sensor", "rate"], ["lidar", "10 Hz"], ["imu", "200 Hz"]]
    _has_table(load(make.write_ods(tmp_path / "rates.ods", {"Rates": table})).documents[0].text)
    (tmp_path / "rates.csv").write_text("sensor;rate\nlidar;10 Hz\nimu;200 Hz\n", encoding="utf-8")
    _has_table(load(tmp_path / "rates.csv").documents[0].text)
    (tmp_path / "rates.tsv").write_text("sensor\trate\nlidar\t10 Hz\nimu\t200 Hz\n", encoding="utf-8")
    _has_table(load(tmp_path / "rates.tsv").documents[0].text)


def test_odt_and_rtf(tmp_path: Path) -> None:
    [doc] = load(make.write_odt(tmp_path / "guide.odt", SECTIONS)).documents
    assert "# Installation" in doc.text and "# Calibration" in doc.text
    _has_table(doc.text)
    [rtf] = load(make.write_rtf(tmp_path / "memo.rtf", ["Café au lait {braces}.", "Second paragraph."])).documents
    assert "Café au lait {braces}." in rtf.text and "Second paragraph." in rtf.text


def test_epub_chapters_become_sections(tmp_path: Path) -> None:
    [doc] = load(make.write_epub(tmp_path / "book.epub", SECTIONS, title="Robots")).documents
    assert doc.title == "Robots"
    assert "# Installation\n\nInstall the robot driver" in doc.text
    _has_table(doc.text)


def test_eml_headers_become_metadata_and_supported_attachments_documents(tmp_path: Path) -> None:
    attachment = make.write_docx(tmp_path / "spec.docx", SECTIONS).read_bytes()
    message = make.email_message(
        "Lidar schedule", "Please calibrate the lidar before the demo.",
        attachments=[("spec.docx", attachment), ("tool.exe", b"MZ\x00\x00")],
    )
    result = load(make.write_eml(tmp_path / "mail.eml", message))
    body, spec = result.documents
    assert body.title == "Lidar schedule" and "calibrate the lidar" in body.text
    assert body.metadata["email_from"] == "ada@example.org" and body.metadata["email_subject"] == "Lidar schedule"
    assert body.metadata["email_date"].startswith("Tue, 24 Nov 2026")
    assert spec.doc_id == "mail.eml/spec.docx" and spec.metadata["attachment"] == "spec.docx"
    _has_table(spec.text)
    assert all(d.source == str(tmp_path / "mail.eml") for d in result.documents)


def test_html_email_and_oversized_attachment(tmp_path: Path, monkeypatch) -> None:
    from ragloom.ingest.loaders import email as email_loader

    monkeypatch.setattr(email_loader, "MAX_ATTACHMENT_BYTES", 1000)
    message = make.email_message(
        "Menu", "<html><body><h1>Lunch</h1><p>Soup <b>and</b> bread.</p><script>alert(1)</script></body></html>",
        html=True, attachments=[("big.txt", b"x" * 5000)],
    )
    result = load(make.write_eml(tmp_path / "menu.eml", message))
    [doc] = result.documents
    assert "# Lunch" in doc.text and "Soup and bread." in doc.text and "alert" not in doc.text
    assert any("big.txt" in w and "left out" in w for w in result.warnings)


def test_mbox_gives_one_document_per_message(tmp_path: Path) -> None:
    messages = [make.email_message(f"Note {i}", f"Body number {i}.") for i in range(3)]
    result = load(make.write_mbox(tmp_path / "box.mbox", messages))
    assert [d.title for d in result.documents] == ["Note 0", "Note 1", "Note 2"]
    assert [d.doc_id for d in result.documents] == ["message 1", "message 2", "message 3"]


def test_notebook_cells(tmp_path: Path) -> None:
    path = make.write_ipynb(tmp_path / "analysis.ipynb", [
        ("markdown", "# Analysis\n\nWe fit a **line**.", ""),
        ("code", "print(sum(range(10)))", "45\n"),
    ])
    [doc] = load(path).documents
    assert doc.title == "Analysis"
    assert "```python\nprint(sum(range(10)))\n```" in doc.text and "```text\n45\n```" in doc.text


@pytest.mark.parametrize("suffix", [".docx", ".pptx", ".xlsx", ".odt", ".ods", ".epub"])
def test_corrupt_zip_is_one_clear_error(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"broken{suffix}"
    path.write_bytes(b"PK\x03\x04 this is not really a zip")
    with pytest.raises(CorruptDocumentError, match="damaged"):
        load(path)


def test_password_protected_office_file_is_named_as_such(tmp_path: Path) -> None:
    path = tmp_path / "secret.docx"
    path.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600)
    with pytest.raises(CorruptDocumentError, match="password-protected"):
        load(path)


def test_zip_bomb_is_refused_before_it_is_expanded(tmp_path: Path) -> None:
    path = tmp_path / "bomb.docx"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", b"\x00" * (64 * 2**20))
    with pytest.raises(CorruptDocumentError, match="zip bomb"):
        load(path)


def test_a_real_zip_that_is_not_a_document(tmp_path: Path) -> None:
    path = tmp_path / "photos.docx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("a.txt", "hello")
    with pytest.raises(CorruptDocumentError, match="could not be read as a Word document"):
        load(path)

