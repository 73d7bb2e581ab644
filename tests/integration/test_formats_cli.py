"""`ragloom ingest` of a folder holding every format people have (issue 22), through the CLI."""

from __future__ import annotations

from pathlib import Path

from ragloom.testing import documents as make
from ragloom.testing.documents import Section


def test_ragloom_ingest_of_a_folder_holding_every_format(tmp_path: Path) -> None:
    """The CLI on a folder of every format: nothing skipped or failed, each file searchable."""
    import os
    import subprocess
    import sys

    from ragloom.ingest import ocr

    docs = tmp_path / "docs"
    docs.mkdir()
    words = {"docx": "walrus", "odt": "narwhal", "pptx": "pelican", "xlsx": "ocelot", "ods": "lemur",
             "csv": "tapir", "epub": "manatee", "eml": "axolotl", "msg": "platypus", "ipynb": "quokka",
             "rtf": "pangolin"}

    def sections(word: str) -> list[Section]:
        return [Section("Field notes", [f"The {word} was seen near the river at dawn."])]

    make.write_docx(docs / "a.docx", sections(words["docx"]))
    make.write_odt(docs / "a.odt", sections(words["odt"]))
    make.write_pptx(docs / "a.pptx", sections(words["pptx"]))
    make.write_xlsx(docs / "a.xlsx", {"S": [["animal", "place"], [words["xlsx"], "river"]]})
    make.write_ods(docs / "a.ods", {"S": [["animal", "place"], [words["ods"], "river"]]})
    (docs / "a.csv").write_text(f"animal,place\n{words['csv']},river\n", encoding="utf-8")
    make.write_epub(docs / "a.epub", sections(words["epub"]))
    make.write_eml(docs / "a.eml", make.email_message("Sighting", f"An {words['eml']} in the pond."))
    make.write_msg(docs / "a.msg", "Sighting", f"A {words['msg']} in the creek.")
    make.write_ipynb(docs / "a.ipynb", [("markdown", f"# Notes\n\nThe {words['ipynb']} count.", "")])
    make.write_rtf(docs / "a.rtf", [f"The {words['rtf']} curled up."])
    if ocr.available():
        import pypdfium2 as pdfium

        from ragloom.testing.pdf import write_pdf

        page = write_pdf(tmp_path / "page.pdf", ["The heron waited in the shallow water."])
        pdfium.PdfDocument(str(page))[0].render(scale=150 / 72).to_pil().save(docs / "a.png")
        words["png"] = "heron"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    run = [sys.executable, "-m", "ragloom", "--index", str(tmp_path / "idx")]
    done = subprocess.run([*run, "ingest", str(docs), "--json"], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    summary = __import__("json").loads(done.stdout)
    assert summary["added"] == len(words) and summary["failed"] == 0 and summary["skipped"] == 0, summary
    for extension, word in words.items():
        found = subprocess.run([*run, "search", word, "-k", "1", "--json"], capture_output=True, text=True, env=env,
                               timeout=300)
        assert found.returncode == 0, found.stderr
        assert f"a.{extension}" in found.stdout and word in found.stdout, (extension, found.stdout[:500])
