"""Regressions for content loaders used to lose (issue: everything a folder holds, read completely)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom.ingest.loaders import load_file


def text_of(path: Path) -> str:
    return "\n".join(d.text for d in load_file(path, str(path)).documents)


def test_a_csv_whose_title_row_is_narrower_keeps_every_cell(tmp_path):
    path = tmp_path / "report.csv"
    path.write_text("Quarterly report\nItem,Amount\nRevenue,\"$50,000\"\nCosts,\"$20,000\"\n")
    text = text_of(path)
    assert "Quarterly report" in text
    assert "| Item | Amount |" in text and "| Revenue | $50,000 |" in text and "| Costs | $20,000 |" in text


def test_an_xlsx_with_a_title_in_a1_keeps_every_cell(tmp_path):
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.append(["Sales 2024"])
    sheet.append(["Region", "Revenue", "Units"])
    sheet.append(["North", 50000, 12])
    sheet.append(["South", 42000, 9])
    path = tmp_path / "sales.xlsx"
    workbook.save(path)
    text = text_of(path)
    assert "Sales 2024" in text
    assert "| North | 50000 | 12 |" in text and "| South | 42000 | 9 |" in text


def test_a_row_wider_than_the_header_widens_the_table(tmp_path):
    path = tmp_path / "ragged.csv"
    path.write_text("a,b\n1,2\n3,4,5,6\n")
    text = text_of(path)
    assert "| 3 | 4 | 5 | 6 |" in text and "column 4" in text


def test_a_hyphen_that_is_part_of_a_word_survives_a_line_break():
    from ragloom.ingest.loaders.pdf import clean_pages

    pages = ["Llama 2-Chat is a chat-\noptimized model. We release the chat model, optimized for dialogue.\n"
             "The compu-\nter reads the computer manual. A well-\nknown well-known fact."]
    text = clean_pages(pages)[0]
    assert "chat-optimized" in text
    assert "computer reads" in text
    assert "well-known fact" in text and "well-known well-known" in text


OMML = ('<m:oMath xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math">'
        '<m:r><m:t>θ=</m:t></m:r><m:sSup><m:e><m:r><m:t>sin</m:t></m:r></m:e><m:sup><m:r><m:t>-1</m:t></m:r></m:sup>'
        '</m:sSup><m:d><m:e><m:f><m:num><m:r><m:t>λ</m:t></m:r></m:num><m:den><m:r><m:t>2d</m:t></m:r></m:den></m:f>'
        '</m:e></m:d></m:oMath>')


def test_word_equations_and_comments_are_kept(tmp_path):
    import docx
    from docx.oxml import parse_xml

    document = docx.Document()
    paragraph = document.add_paragraph("For the first order, the angle is ")
    paragraph._p.append(parse_xml(OMML))
    paragraph.add_run(" by Bragg's law.")
    document.add_comment(paragraph.runs, text="Check the units of d.", author="Ann")
    path = tmp_path / "bragg.docx"
    document.save(path)
    text = text_of(path)
    assert "the angle is $θ=sin^{-1}(\\frac{λ}{2d})$ by Bragg's law." in text
    assert "Ann: Check the units of d." in text


def test_powerpoint_chart_titles_categories_and_alt_text_are_kept(tmp_path):
    from pptx import Presentation
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE
    from pptx.util import Inches

    presentation = Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[5])
    slide.shapes.title.text = "Results"
    data = CategoryChartData()
    data.categories = ["Q1", "Q2"]
    data.add_series("Revenue", (50.5, 61.0))
    frame = slide.shapes.add_chart(XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(1), Inches(1), Inches(4), Inches(3), data)
    frame.chart.has_title = True
    frame.chart.chart_title.text_frame.text = "Quarterly revenue"
    image = tmp_path / "dot.png"
    from PIL import Image

    Image.new("RGB", (4, 4), "red").save(image)
    picture = slide.shapes.add_picture(str(image), Inches(5), Inches(1))
    picture._element.nvPicPr.cNvPr.set("descr", "A red dot marking the launch site")
    path = tmp_path / "deck.pptx"
    presentation.save(path)
    text = text_of(path)
    assert "Chart: Quarterly revenue" in text
    assert "| category | Revenue |" in text and "| Q1 | 50.5 |" in text and "| Q2 | 61 |" in text
    assert "Image: A red dot marking the launch site" in text


def test_an_epub_keeps_its_author_and_description(tmp_path):
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("id1")
    book.set_title("Field Robotics")
    book.add_author("Grace Hopper")
    book.add_metadata("DC", "description", "<p>A guide to robots that work <b>outdoors</b>.</p>")
    chapter = epub.EpubHtml(title="One", file_name="one.xhtml", content="<h1>One</h1><p>Robots plough fields.</p>")
    book.add_item(chapter)
    book.spine = [chapter]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    path = tmp_path / "book.epub"
    epub.write_epub(str(path), book)
    [document] = load_file(path, str(path)).documents
    assert "Author: Grace Hopper" in document.text
    assert "Description: A guide to robots that work outdoors ." in document.text or \
        "Description: A guide to robots that work outdoors." in document.text
    assert document.metadata["author"] == "Grace Hopper" and "Robots plough fields." in document.text


def test_a_web_page_keeps_its_main_content_with_headings_as_sections(tmp_path):
    languages = "".join(f"<li><a href='/{n}'>Language {n}</a></li>" for n in range(150))
    history = "<p>" + "The filter is named after Rudolf Kálmán, who developed its theory around 1960. " * 8 + "</p>"
    page = (
        "<html><head><title>Kalman filter - Wiki</title></head><body>"
        f"<nav><ul><li><a href='/'>Main page</a></li>{languages}</ul></nav>"
        "<div id='content'><h1>Kalman filter</h1>"
        "<p>The <a href='/wiki/Estimation'>Kalman filter</a> estimates unknown variables from noisy measurements.</p>"
        f"<h2>History</h2>{history}"
        "<h2>Overview</h2><p>It alternates a prediction phase and an update phase, weighing each measurement.</p>"
        "</div><footer><ul><li>Privacy policy</li><li>About the wiki</li></ul></footer></body></html>"
    )
    path = tmp_path / "kalman.html"
    path.write_text(page, encoding="utf-8")
    [document] = load_file(path, str(path)).documents
    assert document.text.startswith("# Kalman filter")
    assert "The Kalman filter estimates unknown variables" in document.text  # the link keeps its text
    assert "## History" in document.text and "## Overview" in document.text
    assert "Language 42" not in document.text and "Privacy policy" not in document.text


@pytest.mark.parametrize("name, text", [
    ("app.json", '{"name": "demo", "server": {"tls": {"timeout": 30}, "hosts": ["a.example", "b.example"]}}'),
    ("app.yaml", "name: demo\nserver:\n  tls:\n    timeout: 30\n  hosts:\n    - a.example\n    - b.example\n"),
    ("app.toml", 'name = "demo"\n[server]\nhosts = ["a.example", "b.example"]\n[server.tls]\ntimeout = 30\n'),
])
def test_data_files_keep_each_value_with_its_keys(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    [document] = load_file(path, str(path)).documents
    assert "name: demo" in document.text and "## server" in document.text
    assert "server.tls.timeout: 30" in document.text and "server.hosts[1]: b.example" in document.text


def test_ini_files_keep_sections_and_keys(tmp_path):
    path = tmp_path / "setup.cfg"
    path.write_text("[metadata]\nname = demo\n[tool:pytest]\naddopts = -q\n")
    text = text_of(path)
    assert "## metadata" in text and "metadata.name: demo" in text and "tool:pytest.addopts: -q" in text


def test_a_lock_file_is_skipped_and_a_broken_file_read_as_text(tmp_path):
    lock = tmp_path / "package-lock.json"
    lock.write_text('{"lockfileVersion": 3}')
    assert "lock file" in (load_file(lock, str(lock)).skip_reason or "")
    broken = tmp_path / "broken.json"
    broken.write_text('{"name": "demo",')
    result = load_file(broken, str(broken))
    assert '"name": "demo"' in result.documents[0].text and "read as plain text" in result.warnings[0]


def test_subtitles_logs_and_markup_are_read_as_text_with_lines(tmp_path):
    path = tmp_path / "talk.srt"
    path.write_text("1\n00:00:01,000 --> 00:00:03,000\nWelcome to the survey briefing.\n\n"
                    "2\n00:00:04,000 --> 00:00:06,000\nThe drone starts at dawn.\n")
    [document] = load_file(path, str(path)).documents
    # The cues' words, one line each; their times and file lines come with the chunks (marks).
    assert document.text == "Welcome to the survey briefing.\nThe drone starts at dawn."
    assert document.marks_of(0, len(document.text)) == {
        "start_time": "00:00:01.000", "start_line": 3, "end_time": "00:00:06.000", "end_line": 7}
    log = tmp_path / "run.log"
    log.write_text("first line\nsecond line\n")
    assert load_file(log, str(log)).documents[0].text == "first line\nsecond line\n"


@pytest.mark.parametrize("name, heading", [
    ("paper.tex", "\\section{Results}"), ("guide.adoc", "== Results"), ("notes.org", "** Results"),
])
def test_latex_asciidoc_and_org_headings_become_sections_on_their_lines(tmp_path, name, heading):
    from ragloom.config import ChunkingConfig
    from ragloom.ingest.chunkers.base import create_chunker

    path = tmp_path / name
    path.write_text(f"Intro text.\n\n{heading}\n\nThe drone mapped the river.\n")
    [document] = load_file(path, str(path)).documents
    chunks = create_chunker(ChunkingConfig(strategy="markdown", chunk_size=64), lambda t: len(t.split())).chunk(document)
    result = next(c for c in chunks if "drone" in c.text)
    assert result.metadata["section"] == "Results" and result.metadata["end_line"] == 5


def test_a_feed_gives_a_document_per_entry_and_xml_keeps_element_paths(tmp_path):
    feed = tmp_path / "news.rss"
    feed.write_text('<?xml version="1.0"?><rss version="2.0"><channel><title>Field news</title>'
                    '<item><title>Drone survey</title><link>https://x.example/1</link>'
                    '<description>The &lt;b&gt;drone&lt;/b&gt; mapped the river.</description></item>'
                    '<item><title>Rover test</title><link>https://x.example/2</link>'
                    '<description>The rover climbed the dune.</description></item></channel></rss>')
    documents = load_file(feed, str(feed)).documents
    assert [d.title for d in documents] == ["Drone survey", "Rover test"]
    assert "The drone mapped the river." in documents[0].text and documents[0].metadata["link"] == "https://x.example/1"
    catalog = tmp_path / "catalog.xml"
    catalog.write_text('<catalog><book id="b1"><title>Dune</title><year>1965</year></book></catalog>')
    text = text_of(catalog)
    assert "## book" in text and "catalog/book/title: Dune" in text and "catalog/book [id=b1]" in text


def test_archive_members_are_documents_named_by_their_path(tmp_path):
    import io
    import tarfile
    import zipfile

    zipped = tmp_path / "bundle.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("docs/guide.md", "# Guide\n\nCalibrate the lidar first.\n")
        archive.writestr("src/app.py", "def main():\n    return 1\n")
        archive.writestr("logo.bin", b"\x00\x01")
    result = load_file(zipped, str(zipped))
    by_id = {d.doc_id: d for d in result.documents}
    assert set(by_id) == {"docs/guide.md", "src/app.py"}
    assert by_id["docs/guide.md"].metadata["archive_member"] == "bundle.zip/docs/guide.md"
    assert by_id["src/app.py"].metadata["language"] == "python" and "logo.bin" in result.warnings[-1]
    tarred = tmp_path / "notes.tar.gz"
    with tarfile.open(tarred, "w:gz") as archive:
        data = b"The survey starts at dawn.\n"
        info = tarfile.TarInfo("notes/day1.txt")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    [document] = load_file(tarred, str(tarred)).documents
    assert document.doc_id == "notes/day1.txt" and "dawn" in document.text


def test_an_archive_bomb_is_refused(tmp_path):
    import io
    import tarfile

    from ragloom.errors import CorruptDocumentError

    bomb = tmp_path / "bomb.tar.gz"
    with tarfile.open(bomb, "w:gz") as archive:
        info = tarfile.TarInfo("zeros.txt")
        info.size = 64 * 2**20
        archive.addfile(info, io.BytesIO(b"\x00" * info.size))
    with pytest.raises(CorruptDocumentError, match="possible bomb"):
        load_file(bomb, str(bomb))


def test_a_legacy_xls_workbook_is_read_with_its_title_row(tmp_path):
    import xlwt

    workbook = xlwt.Workbook()
    sheet = workbook.add_sheet("Budget")
    sheet.write(0, 0, "Budget 2024")
    for column, value in enumerate(["Item", "Cost"]):
        sheet.write(1, column, value)
    sheet.write(2, 0, "Lidar")
    sheet.write(2, 1, 1200)
    path = tmp_path / "budget.xls"
    workbook.save(str(path))
    text = text_of(path)
    assert "## Sheet: Budget" in text and "Budget 2024" in text and "| Lidar | 1200 |" in text
