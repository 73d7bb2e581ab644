"""Loaders on real files: real pypdf on PDFs written by ragloom.testing.pdf, real bs4."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from ragloom import registry
from ragloom.config import CODE_LANGUAGES, ChunkingConfig
from ragloom.errors import CorruptDocumentError, LoaderError, SourceNotFoundError, UnsupportedFormatError
from ragloom.ingest.chunkers.base import create_chunker
from ragloom.ingest.loaders import is_supported, load_file, loader_for, supported_extensions
from ragloom.ingest.loaders.base import LoadResult, Loader
from ragloom.ingest.loaders.decode import decode_bytes
from ragloom.models import packaged_model_dir
from ragloom.testing.pdf import write_corrupt_pdf, write_pdf



def load(path: Path) -> LoadResult:
    return load_file(path, str(path))


# --- plain text and Markdown -------------------------------------------------------------


def test_text_file_is_one_document_named_after_the_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("Kalman filters fuse odometry and IMU.\n", encoding="utf-8")
    result = load(path)
    assert result.warnings == []
    [doc] = result.documents
    assert doc.text == "Kalman filters fuse odometry and IMU.\n"
    assert (doc.doc_id, doc.title, doc.source) == ("notes.txt", "notes", str(path))


def test_utf8_bom_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbfhello")
    assert load(path).documents[0].text == "hello"


def test_markdown_keeps_raw_text_and_takes_title_from_first_h1_outside_code(tmp_path: Path) -> None:
    text = "```\n# not the title\n```\n\n## Preface\n\n# Real Title\n\nBody.\n"
    path = tmp_path / "guide.md"
    path.write_text(text, encoding="utf-8")
    [doc] = load(path).documents
    assert doc.text == text
    assert doc.title == "Real Title"
    assert doc.doc_id == "guide.md"


def test_markdown_without_h1_is_titled_by_file_stem(tmp_path: Path) -> None:
    path = tmp_path / "install-notes.markdown"
    path.write_text("## Only a subsection\n\nText.\n", encoding="utf-8")
    assert load(path).documents[0].title == "install-notes"


# --- encodings, empty and binary files ---------------------------------------------------


@pytest.mark.parametrize("encoding", ["cp1252", "latin-1"])
def test_non_utf8_text_is_decoded_with_a_warning(tmp_path: Path, encoding: str) -> None:
    text = "Café au lait, naïve résumé, über straße.\nSecond line: déjà vu.\n"
    path = tmp_path / "notes.txt"
    path.write_bytes(text.encode(encoding))
    result = load(path)
    assert result.documents[0].text == text
    [warning] = result.warnings
    assert "notes.txt is not UTF-8; decoded as cp1252" in warning


def test_cp1252_only_characters_survive(tmp_path: Path) -> None:
    text = "Smart quotes “like these” – and an en dash, € too."
    data = text.encode("cp1252")
    decoded, warnings = decode_bytes(data, "q.txt")
    assert decoded == text
    assert warnings and "cp1252" in warnings[0]


def test_utf16_with_bom_is_text_not_binary(tmp_path: Path) -> None:
    path = tmp_path / "wide.txt"
    path.write_bytes("ROS 2 nodes".encode("utf-16"))
    assert load(path).documents[0].text == "ROS 2 nodes"


@pytest.mark.parametrize("name", ["empty.txt", "empty.md", "empty.pdf", "empty.html", "empty.jsonl"])
def test_zero_byte_file_gives_warning_and_no_documents(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(b"")
    result = load(path)
    assert result.documents == []
    assert result.warnings == [f"{path} is empty; nothing to index"]


def test_whitespace_only_file_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "blank.md"
    path.write_text(" \n\n\t\n", encoding="utf-8")
    result = load(path)
    assert result.documents == []
    assert "is empty; nothing to index" in result.warnings[0]


def test_binary_content_in_text_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "image.txt"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    with pytest.raises(CorruptDocumentError, match="image.txt looks like a binary file"):
        load(path)


# --- PDF ---------------------------------------------------------------------------------


PAGES = [
    "Configuration space maps obstacles into forbidden regions.\n\nA* search uses an admissible heuristic.",
    "Rapidly-exploring random trees grow toward unexplored regions.",
    "Trajectory optimization smooths the path with CHOMP.",
]


def test_pdf_pages_are_joined_and_page_starts_point_at_each_page(tmp_path: Path) -> None:
    path = write_pdf(tmp_path / "planning.pdf", PAGES, title="Planning Primer")
    [doc] = load(path).documents
    assert doc.title == "Planning Primer"
    assert doc.doc_id == "planning.pdf"
    assert doc.metadata["pages"] == 3
    assert len(doc.page_starts) == 3 and doc.page_starts[0] == 0
    for number, (start, marker) in enumerate(zip(doc.page_starts, ["Configuration", "Rapidly", "Trajectory"]), 1):
        assert doc.text[start:].startswith(marker)
        assert doc.page_at(doc.text.index(marker)) == number
    assert doc.text[doc.page_starts[1] - 2 : doc.page_starts[1]] == "\n\n"


def test_pdf_chunks_carry_the_page_they_start_on(tmp_path: Path) -> None:
    path = write_pdf(tmp_path / "planning.pdf", PAGES)
    [doc] = load(path).documents
    assert doc.title == "planning"
    tokenizer = Tokenizer.from_file(str(packaged_model_dir("bge_small_en") / "tokenizer.json"))
    chunker = create_chunker(
        ChunkingConfig(chunk_size=16, chunk_overlap=0),
        lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids),
        lambda text: tokenizer.encode(text, add_special_tokens=False).offsets,
    )
    chunks = chunker.chunk(doc)
    pages = {chunk.text.split()[0]: chunk.metadata["page"] for chunk in chunks}
    assert pages["Configuration"] == 1
    assert pages["Rapidly-exploring"] == 2
    assert pages["Trajectory"] == 3
    assert [c.metadata["page"] for c in chunks] == sorted(c.metadata["page"] for c in chunks)
    assert all(c.metadata["page_end"] == c.metadata["page"] for c in chunks)


def test_corrupt_pdf_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = write_corrupt_pdf(tmp_path / "broken.pdf")
    with pytest.raises(CorruptDocumentError, match=r"broken\.pdf could not be parsed"):
        load(path)


def test_pdf_of_blank_pages_warns_that_it_has_no_text(tmp_path: Path) -> None:
    # Scanned pages (images) are read by OCR: tests/unit/test_loaders_scans.py.
    path = write_pdf(tmp_path / "scan.pdf", ["", ""])
    result = load(path)
    assert result.documents == []
    assert "scan.pdf" in result.warnings[0] and "no extractable text" in result.warnings[0]


# --- HTML --------------------------------------------------------------------------------


HTML = """<!DOCTYPE html>
<html><head><title> tf2 Frames </title><style>p { color: red }</style>
<script>var secret = "tracking code";</script></head>
<body><h1>Frames</h1><p>The <b>map</b> frame
does not drift.</p><!-- a comment -->
<ul><li>odom</li><li>base_link</li></ul>
<table><tr><th>Tool</th><th>Use</th></tr><tr><td>view_frames</td><td>draw the tree</td></tr></table>
<noscript>Enable JavaScript</noscript><script>track()</script>
<p>Line one<br>line two</p></body></html>
"""


def test_html_gives_title_and_visible_text_only(tmp_path: Path) -> None:
    path = tmp_path / "frames.html"
    path.write_text(HTML, encoding="utf-8")
    [doc] = load(path).documents
    assert doc.title == "tf2 Frames"
    assert doc.text == (
        "Frames\n\nThe map frame does not drift.\n\nodom\nbase_link\n\n"
        "Tool | Use\nview_frames | draw the tree\n\nLine one\nline two"
    )
    for hidden in ("secret", "tracking", "track()", "color", "comment", "JavaScript", "DOCTYPE"):
        assert hidden not in doc.text


def test_html_without_title_uses_first_heading(tmp_path: Path) -> None:
    path = tmp_path / "page.htm"
    path.write_text("<html><body><h1>Navigation</h1><p>Nav2 plans paths.</p></body></html>", encoding="utf-8")
    [doc] = load(path).documents
    assert (doc.title, doc.text) == ("Navigation", "Navigation\n\nNav2 plans paths.")


# --- BEIR jsonl --------------------------------------------------------------------------


def _write_jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_beir_jsonl_gives_one_document_per_line_with_its_id(tmp_path: Path) -> None:
    path = _write_jsonl(
        tmp_path / "corpus.jsonl",
        [
            json.dumps({"_id": "4983", "title": "White matter", "text": "Diffusion tensor imaging."}),
            json.dumps({"_id": "5836", "title": "", "text": "No title here."}),
        ],
    )
    result = load(path)
    assert result.warnings == []
    first, second = result.documents
    assert (first.doc_id, first.title) == ("4983", "White matter")
    assert first.text == "White matter\n\nDiffusion tensor imaging."
    assert (second.doc_id, second.title, second.text) == ("5836", "", "No title here.")
    assert first.source == second.source == str(path)


def test_bad_jsonl_lines_are_skipped_with_their_numbers(tmp_path: Path) -> None:
    path = _write_jsonl(
        tmp_path / "corpus.jsonl",
        [
            json.dumps({"_id": "1", "title": "t", "text": "ok"}),
            "{not json",
            "",
            json.dumps(["a", "list"]),
            json.dumps({"_id": "2", "text": "also ok"}),
        ],
    )
    result = load(path)
    assert [d.doc_id for d in result.documents] == ["1", "2"]
    [warning] = result.warnings
    assert "skipped 2 unreadable lines (lines 2, 4)" in warning


def test_jsonl_with_no_readable_line_is_corrupt(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "corpus.jsonl", ["garbage", "{\"title\": \"no id\"}"])
    with pytest.raises(CorruptDocumentError, match="first bad line: 1"):
        load(path)


# --- dispatch ----------------------------------------------------------------------------


def test_unsupported_extension_lists_supported_formats(tmp_path: Path) -> None:
    path = tmp_path / "data.xyz"
    path.write_text("x")
    with pytest.raises(UnsupportedFormatError) as info:
        load(path)
    message = str(info.value)
    assert "data.xyz" in message
    for extension in (".html", ".jsonl", ".md", ".pdf", ".txt"):
        assert extension in message
    assert isinstance(info.value, LoaderError) and isinstance(info.value, ValueError)


def test_missing_file_is_source_not_found(tmp_path: Path) -> None:
    with pytest.raises(SourceNotFoundError, match="missing.txt: no such file"):
        load(tmp_path / "missing.txt")
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "missing.pdf")


def test_supported_extensions_come_from_registered_loaders(monkeypatch: pytest.MonkeyPatch) -> None:
    assert supported_extensions() == sorted([
        ".csv", ".docx", ".eml", ".epub", ".htm", ".html", ".ipynb", ".jpeg", ".jpg", ".jsonl", ".markdown",
        ".mbox", ".md", ".ods", ".odt", ".pdf", ".png", ".pptx", ".rst", ".rtf", ".text", ".tif", ".tiff",
        ".tsv", ".txt", ".xlsm", ".xlsx", *CODE_LANGUAGES,
        ".json", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".lock",
        ".tex", ".adoc", ".asciidoc", ".org", ".srt", ".vtt", ".log", ".xml", ".rss", ".atom",
        ".zip", ".tar", ".tgz", ".gz", ".xls", ".msg",
    ])
    assert is_supported("A/B/README.MD") and not is_supported("tool.exe")
    assert type(loader_for(Path("x.htm"))).__name__ == "HtmlLoader"

    class NoteLoader(Loader):
        name = "note"
        extensions = (".note",)

        def load(self, path: Path, source: str) -> LoadResult:
            return LoadResult([])

    monkeypatch.setitem(registry._registered["loader"], "note", NoteLoader)
    assert ".note" in supported_extensions()
    assert isinstance(loader_for("today.note"), NoteLoader)


# --- sample corpus -----------------------------------------------------------------------


def test_sample_corpus_loads_cleanly_and_answers_the_readme_question(sample_docs: list[Path]) -> None:
    assert {p.suffix for p in sample_docs} == {".md", ".txt", ".pdf", ".html"}
    documents = {}
    for path in sample_docs:
        result = load(path)
        assert result.warnings == []
        [documents[path.suffix]] = result.documents
    assert len(documents[".pdf"].page_starts) == 3
    guide = documents[".md"].text
    assert "ROS 2 nodes communicate in four ways" in guide
    for word in ("topics", "services", "actions", "parameters", "DDS", "QoS"):
        assert word in guide
    assert all(len(doc.text) > 3000 for doc in documents.values()), {k: len(d.text) for k, d in documents.items()}



def test_loaders_parse_the_bytes_they_are_given_not_the_file_as_it_is_now(tmp_path: Path, monkeypatch) -> None:
    from ragloom.types import Document

    note = tmp_path / "note.md"
    note.write_text("# Now\n\nthe file as it is now")
    [document] = load_file(note, str(note), b"# Then\n\nthe bytes read and hashed").documents
    assert document.title == "Then" and "hashed" in document.text
    paper = tmp_path / "paper.pdf"
    write_pdf(paper, ["The first version of the paper."])
    data = paper.read_bytes()
    write_pdf(paper, ["A second version."])
    assert "first version" in load_file(paper, str(paper), data).documents[0].text

    class PathOnly(Loader):  # a plugin that only knows how to read a file
        name = "pathonly"
        extensions = (".po",)

        def load(self, path: Path, source: str) -> LoadResult:
            return LoadResult([Document(path.read_text(), source, path.name)])

    monkeypatch.setitem(registry._registered["loader"], "pathonly", PathOnly)
    po = tmp_path / "x.po"
    po.write_text("on disk")
    [document] = load_file(po, str(po), b"as read").documents
    assert (document.text, document.doc_id) == ("as read", "x.po")


def test_a_file_that_keeps_changing_while_read_is_rejected(tmp_path: Path, monkeypatch) -> None:
    import os

    from ragloom.ingest import files

    path = tmp_path / "busy.txt"
    path.write_text("one")
    real_stat, calls = os.stat, []

    def stat_after_a_rewrite(target, *args, **kwargs):  # another writer renames a new file over it each read
        calls.append(target)
        if len(calls) % 2 == 0:
            (tmp_path / "new").write_text(f"version {len(calls)}")
            os.replace(tmp_path / "new", path)
        return real_stat(target, *args, **kwargs)

    monkeypatch.setattr(files.os, "stat", stat_after_a_rewrite)
    with pytest.raises(files.FileRejected, match="changed while being read"):
        files.read_regular_file(path, 1000)
    monkeypatch.setattr(files.os, "stat", real_stat)
    assert files.read_regular_file(path, 1000).data.startswith(b"version")
