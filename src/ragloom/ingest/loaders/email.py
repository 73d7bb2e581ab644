"""E-mail: ``.eml`` (one message) and ``.mbox`` (many), through the standard library's ``email``.

Each message is a document whose metadata holds its headers (from, to, cc, date, subject); its
body is the plain-text part, or the HTML part read as text. An attachment whose type ragloom
reads becomes a document of its own in the same source (``doc_id`` = message/attachment name),
so it is found, cited and removed with its message. Nothing in a message is run or fetched.
"""

from __future__ import annotations

import email
import email.policy
import mailbox
import tempfile
from email.message import EmailMessage
from pathlib import Path

from ...errors import LoaderError
from ...types import Document
from ._html_markdown import write_html
from ._markdown import MarkdownWriter
from .base import LoadResult, Loader
from .decode import empty_result

#: Attachments larger than this are reported and left out.
MAX_ATTACHMENT_BYTES = 25 * 2**20
#: Attachments inside attached messages are not followed deeper than this.
MAX_DEPTH = 2
_HEADERS = ("from", "to", "cc", "date", "subject")


class EmlLoader(Loader):
    name = "eml"
    extensions = (".eml",)

    def load(self, path: Path, source: str) -> LoadResult:
        with open(path, "rb") as handle:
            message = email.message_from_binary_file(handle, policy=email.policy.default)
        documents, notes = message_documents(message, path.name, source, 0)
        if not documents:
            result = empty_result(source)
            result.warnings[:0] = notes
            return result
        return LoadResult(documents, notes)


class MboxLoader(Loader):
    name = "mbox"
    extensions = (".mbox",)

    def load(self, path: Path, source: str) -> LoadResult:
        box = mailbox.mbox(str(path), factory=_parse, create=False)
        documents: list[Document] = []
        notes: list[str] = []
        try:
            for number, message in enumerate(box, start=1):
                if message is None:
                    notes.append(f"{source}: message {number} could not be parsed and was skipped")
                    continue
                found, said = message_documents(message, f"message {number}", source, 0)
                documents.extend(found)
                notes.extend(said)
        finally:
            box.close()
        if not documents:
            result = empty_result(source)
            result.warnings[:0] = notes
            return result
        return LoadResult(documents, notes)


def _parse(handle) -> EmailMessage | None:
    try:
        return email.message_from_binary_file(handle, policy=email.policy.default)
    except MemoryError:
        raise  # over the file's memory budget: never a damaged file (ingest/sandbox.py)
    except Exception:  # a damaged message is reported by the caller; the rest of the box is read
        return None


def message_documents(message: EmailMessage, doc_id: str, source: str, depth: int) -> tuple[list[Document], list[str]]:
    """The message's body as a document, then one per readable attachment."""
    headers = {name: _header(message, name) for name in _HEADERS}
    body = _body(message)
    if body is None:
        documents, metadata = body_document(headers, "", False, doc_id, source)
    else:
        part, is_html = body
        documents, metadata = body_document(headers, _text_of(part), is_html, doc_id, source)
    notes: list[str] = []
    for attachment in message.iter_attachments():
        found, said = _attachment(attachment, doc_id, source, depth, metadata)
        documents.extend(found)
        notes.extend(said)
    return documents, notes


def body_document(headers: dict[str, str], body: str, is_html: bool, doc_id: str,
                  source: str) -> tuple[list[Document], dict]:
    """The message itself as a document (its headers, then its body), unless it has neither subject
    nor text; and the ``email_*`` metadata its attachments carry too. ``headers``: by _HEADERS name."""
    metadata = {f"email_{name}": value for name, value in headers.items() if value}
    writer = MarkdownWriter()
    if is_html:
        write_html(writer, body)
    elif body:
        writer.paragraph(body)
    if not (writer.text.strip() or headers.get("subject")):
        return [], metadata
    head = "\n".join(f"{name.title()}: {value}" for name, value in headers.items() if value)
    text = (head + "\n\n" + writer.text).strip()
    return [Document(text=text, source=source, doc_id=doc_id, title=headers.get("subject") or doc_id,
                     metadata=metadata)], metadata


def _header(message: EmailMessage, name: str) -> str:
    try:
        value = message.get(name)
    except MemoryError:
        raise  # over the file's memory budget: never a damaged file (ingest/sandbox.py)
    except Exception:  # a malformed header must not lose the message
        return ""
    return " ".join(str(value).split()) if value is not None else ""


def _body(message: EmailMessage):
    try:
        part = message.get_body(preferencelist=("plain", "html"))
    except MemoryError:
        raise  # over the file's memory budget: never a damaged file (ingest/sandbox.py)
    except Exception:
        return None
    if part is None:
        return None
    return part, part.get_content_subtype() == "html"


def _text_of(part) -> str:
    try:
        return part.get_content()
    except MemoryError:
        raise  # over the file's memory budget: never a damaged file (ingest/sandbox.py)
    except Exception:  # an unknown charset: read the bytes as UTF-8 with replacements
        payload = part.get_payload(decode=True) or b""
        return payload.decode("utf-8", errors="replace")


def _attachment(part, parent: str, source: str, depth: int, metadata: dict) -> tuple[list[Document], list[str]]:
    name = Path(part.get_filename() or "").name
    if part.get_content_type() == "message/rfc822" and depth < MAX_DEPTH:
        inner = part.get_content()
        return message_documents(inner, f"{parent}/{name or 'attached message'}", source, depth + 1)
    if not attachment_wanted(name, depth):
        return [], []
    return attachment_documents(name, part.get_payload(decode=True) or b"", parent, source, metadata)


def attachment_wanted(name: str, depth: int) -> bool:
    """An attachment is read when ragloom reads its type; a mailbox never, a message only so deep."""
    from . import is_supported

    suffix = Path(name).suffix.lower()
    if not name or not is_supported(name) or suffix == ".mbox":
        return False
    return not (suffix in (".eml", ".msg") and depth >= MAX_DEPTH)


def attachment_documents(name: str, payload: bytes, parent: str, source: str,
                         metadata: dict) -> tuple[list[Document], list[str]]:
    """The documents of one attached file, named ``parent/name`` in the message's source."""
    from . import load_file

    label = f"{source}: attachment {name}"
    if len(payload) > MAX_ATTACHMENT_BYTES:
        return [], [f"{label} is {len(payload) / 2**20:.0f} MB (at most {MAX_ATTACHMENT_BYTES // 2**20} MB "
                    "are read); left out"]
    with tempfile.TemporaryDirectory(prefix="ragloom-attachment-") as folder:
        file = Path(folder) / name
        file.write_bytes(payload)
        try:
            result = load_file(file, source)
        except LoaderError as exc:
            return [], [f"{label}: {exc}".replace(str(file), name)]
    documents = [
        Document(text=d.text, source=source, doc_id=f"{parent}/{name}" + (f"/{d.doc_id}" if d.doc_id != name else ""),
                 title=d.title if d.title != file.stem else name,
                 metadata={**d.metadata, **metadata, "attachment": name}, page_starts=d.page_starts,
                 page_label=d.page_label)
        for d in result.documents
    ]
    return documents, [w.replace(str(file), f"{source}#{name}") for w in result.warnings]
