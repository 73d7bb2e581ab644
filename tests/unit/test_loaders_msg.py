"""Outlook .msg files, read as .eml files are: real OLE compound files, written by msgforge or saved
by Outlook (tests/fixtures/msg, see its NOTICE)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ragloom.errors import CorruptDocumentError
from ragloom.ingest.loaders import load_file
from ragloom.testing import documents as make
from ragloom.testing.documents import Section

FIXTURES = Path(__file__).parent.parent / "fixtures" / "msg"
SECTIONS = [Section("Calibration", ["Calibrate the lidar every morning."], table=[["sensor", "rate"], ["lidar", "10 Hz"]])]


def load(path: Path):
    return load_file(path, str(path))


def test_msg_headers_body_and_attachments_as_eml_gives_them(tmp_path: Path) -> None:
    spec = make.write_docx(tmp_path / "spec.docx", SECTIONS).read_bytes()
    attachments = [("spec.docx", spec), ("tool.exe", b"MZ\x00\x00")]
    body = "Please calibrate the lidar before the demo."
    msg = load(make.write_msg(tmp_path / "mail.msg", "Lidar schedule", body, attachments=attachments))
    eml = load(make.write_eml(tmp_path / "mail.eml", make.email_message("Lidar schedule", body, attachments=attachments)))
    assert [d.doc_id for d in msg.documents] == ["mail.msg", "mail.msg/spec.docx"]
    assert [d.doc_id for d in eml.documents] == ["mail.eml", "mail.eml/spec.docx"]
    for ours, theirs in zip(msg.documents, eml.documents):
        assert ours.text == theirs.text and ours.title == theirs.title and ours.metadata == theirs.metadata
    assert msg.documents[0].metadata["email_date"] == "Tue, 24 Nov 2026 10:00:00 +0000"
    assert "| lidar | 10 Hz |" in msg.documents[1].text and msg.documents[1].metadata["attachment"] == "spec.docx"
    assert all(d.source == str(tmp_path / "mail.msg") for d in msg.documents)


def test_msg_recipients_by_kind_and_an_html_message(tmp_path: Path) -> None:
    html = "<html><body><h1>Lunch</h1><p>Soup <b>and</b> bread.</p></body></html>"
    path = make.write_msg(tmp_path / "menu.msg", "Menu", html, html=True, to="Team <team@example.org>",
                          cc="Bob <bob@example.org>", attachments=[("notes.txt", b"Bring spoons.")])
    body, notes = load(path).documents
    assert body.metadata["email_to"] == "Team <team@example.org>" and body.metadata["email_cc"] == "Bob <bob@example.org>"
    assert "Cc: Bob <bob@example.org>" in body.text and "Soup and bread." in body.text
    assert (notes.doc_id, notes.text) == ("menu.msg/notes.txt", "Bring spoons.")


def test_a_message_attached_to_a_message_saved_by_outlook(tmp_path: Path) -> None:
    path = shutil.copy(FIXTURES / "outer.msg", tmp_path / "outer.msg")
    result = load(Path(path))
    outer, inner = result.documents
    assert (outer.doc_id, outer.title, outer.metadata["email_to"]) == ("outer.msg", "outer subject", "outer@foo.bar")
    assert outer.text.endswith("Outer body")
    assert (inner.doc_id, inner.title, inner.metadata["email_to"]) == ("outer.msg/test", "test", "test@foobar.com")
    assert inner.text.endswith("body") and inner.source == str(tmp_path / "outer.msg")


def test_oversized_msg_attachment_is_left_out_with_a_note(tmp_path: Path, monkeypatch) -> None:
    from ragloom.ingest.loaders import email as email_loader

    monkeypatch.setattr(email_loader, "MAX_ATTACHMENT_BYTES", 1000)
    result = load(make.write_msg(tmp_path / "big.msg", "Logs", "See the log.", attachments=[("big.txt", b"x" * 5000)]))
    assert [d.doc_id for d in result.documents] == ["big.msg"]
    assert any("big.txt" in w and "left out" in w for w in result.warnings)


@pytest.mark.parametrize("damage", ["not ole", "truncated", "ole without a message"])
def test_corrupt_msg_is_one_clear_error(tmp_path: Path, damage: str) -> None:
    real = (FIXTURES / "outer.msg").read_bytes()
    data = {
        "not ole": b"From: someone\r\n\r\nthis is text saved as .msg",
        "truncated": real[: len(real) // 3],
        "ole without a message": real[:512] + b"\x00" * (len(real) - 512),  # the header, then nothing
    }[damage]
    path = tmp_path / "broken.msg"
    path.write_bytes(data)
    with pytest.raises(CorruptDocumentError, match=r"broken\.msg could not be read as an Outlook message \(\.msg\)") as info:
        load(path)
    assert "\n" not in str(info.value)


def test_ingest_goes_on_past_a_corrupt_msg(tmp_path: Path, embedder) -> None:
    from ragloom import Index
    from ragloom.config import Config

    docs = tmp_path / "docs"
    docs.mkdir()
    make.write_msg(docs / "good.msg", "Axolotl sighting", "An axolotl in the pond.")
    (docs / "broken.msg").write_bytes((FIXTURES / "outer.msg").read_bytes()[:4096])
    with Index.open(tmp_path / "idx", Config.from_dict({}), embedder=embedder) as index:
        report = index.ingest([docs])
        assert [Path(f.path).name for f in report.failed] == ["broken.msg"]
        assert "could not be read as an Outlook message" in report.failed[0].error
        assert [Path(p).name for p in report.added] == ["good.msg"]
        assert "axolotl" in index.search("axolotl pond", k=1)[0].text
