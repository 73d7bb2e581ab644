"""Regressions for content loaders used to lose (issue: everything a folder holds, read completely)."""

from __future__ import annotations

from pathlib import Path

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
