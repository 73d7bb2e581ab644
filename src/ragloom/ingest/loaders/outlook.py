"""Outlook messages (``.msg``, an OLE compound file) through python-oxmsg, read as ``.eml`` is.

The same headers become the same ``email_*`` metadata, the plain-text body is preferred to the HTML
one, and each attachment ragloom reads becomes a document named ``message.msg/attachment.pdf``
(``loaders/email.py``). A message attached to a message (Outlook's "embedded item") is read too, to
the same depth as an ``.eml`` attached to an ``.eml``.

python-oxmsg (MIT, by python-docx's author) is the reader rather than extract-msg, which is GPL-3.0
and pulls oletools' macro tools along.
"""

from __future__ import annotations

import email.parser
import email.policy
import email.utils
from pathlib import Path

from ...errors import CorruptDocumentError
from ...types import Document
from ._archive import library_error
from .base import LoadResult, Loader
from .decode import empty_result
from .email import MAX_DEPTH, attachment_documents, attachment_wanted, body_document

_TRANSPORT_HEADERS = 0x007D  # PidTagTransportMessageHeaders
_RECIPIENT_TYPE = 0x0C15  # PidTagRecipientType: 1 To, 2 Cc, 3 Bcc
_ATTACH_METHOD = 0x3705
_ATTACH_FILENAME = 0x3704  # the 8.3 name, when the long one is missing
_BY_VALUE = 1  # afByValue: the file's bytes are in the attachment
_EMBEDDED_MESSAGE = 5  # afEmbeddedMessage: the attachment is a message in a sub-storage
_EMBEDDED_STORAGE = "__substg1.0_3701000D"
#: The property stream's header is 24 bytes in an embedded message, 32 in the top-level one (MS-OXMSG 2.4.1).
_EMBEDDED_HEADER = 24


class MsgLoader(Loader):
    name = "msg"
    extensions = (".msg",)

    def load(self, path: Path, source: str) -> LoadResult:
        from oxmsg import Message

        try:
            message = Message.load(str(path))
            documents, notes = _message_documents(message, path.name, source, 0)
        except CorruptDocumentError:
            raise
        except MemoryError:
            raise  # over the file's memory budget: never a damaged file (ingest/sandbox.py)
        except Exception as exc:  # olefile, struct and KeyError on damaged storages
            raise library_error(source, "an Outlook message (.msg)", exc) from exc
        if not documents:
            result = empty_result(source)
            result.warnings[:0] = notes
            return result
        return LoadResult(documents, notes)


def _message_documents(message, doc_id: str, source: str, depth: int) -> tuple[list[Document], list[str]]:
    headers = _headers(message)
    plain = (message.body or "").strip()
    html = "" if plain else (message.html_body or "")
    documents, metadata = body_document(headers, plain or html, bool(html), doc_id, source)
    notes: list[str] = []
    for attachment in message.attachments:
        found, said = _attachment(attachment, doc_id, source, depth, metadata)
        documents.extend(found)
        notes.extend(said)
    return documents, notes


def _headers(message) -> dict[str, str]:
    """From, to, cc, date and subject as ``.eml`` gives them: the transport headers a received
    message keeps, else the message's own properties (a draft or a sent item has no headers)."""
    transport = _transport_headers(message)
    recipients = {"to": [], "cc": []}
    for recipient in message.recipients:
        kind = {1: "to", 2: "cc"}.get(recipient.properties.int_prop_value(_RECIPIENT_TYPE) or 1)
        if kind:
            recipients[kind].append(_address(recipient.name, recipient.email_address))
    sent = message.sent_date
    own = {
        "from": _address(*email.utils.parseaddr(message.sender or "")) or (message.sender or ""),
        "to": ", ".join(a for a in recipients["to"] if a),
        "cc": ", ".join(a for a in recipients["cc"] if a),
        "date": email.utils.format_datetime(sent) if sent else "",
    }
    values = {name: transport.get(name) or own[name] for name in own}
    values["subject"] = message.subject or transport.get("subject", "")  # the property is already decoded
    return {name: " ".join(str(value).split()) for name, value in values.items()}


def _transport_headers(message) -> dict[str, str]:
    """The headers a received message kept, decoded (RFC 2047) as ``.eml``'s are."""
    raw = message.properties.str_prop_value(_TRANSPORT_HEADERS) or ""
    parsed = email.parser.HeaderParser(policy=email.policy.default).parsestr(raw)
    headers: dict[str, str] = {}
    for name in ("from", "to", "cc", "date", "subject"):
        try:
            value = parsed.get(name)
        except MemoryError:
            raise  # over the file's memory budget: never a damaged file (ingest/sandbox.py)
        except Exception:  # a malformed header must not lose the message
            value = None
        if value is not None:
            headers[name] = str(value)
    return headers


def _address(name: str, address: str) -> str:
    if name and address and name != address:
        return email.utils.formataddr((name, address))
    return address or name


def _attachment(attachment, parent: str, source: str, depth: int, metadata: dict) -> tuple[list[Document], list[str]]:
    props = attachment.properties
    name = Path(attachment.file_name or props.str_prop_value(_ATTACH_FILENAME) or "").name
    method = props.int_prop_value(_ATTACH_METHOD)
    if method == _EMBEDDED_MESSAGE:
        inner = _embedded_message(attachment)
        if inner is None or depth >= MAX_DEPTH:
            return [], []
        label = name or inner.subject or "attached message"
        return _message_documents(inner, f"{parent}/{label}", source, depth + 1)
    data = attachment.file_bytes
    # By value (or unsaid, when the bytes are there); a link to a file or a web page holds nothing to read.
    if method not in (None, _BY_VALUE) or data is None or not attachment_wanted(name, depth):
        return [], []
    return attachment_documents(name, data, parent, source, metadata)


def _embedded_message(attachment):
    """The message an attachment holds, or None. python-oxmsg reads only top-level messages, whose
    property header is longer: the embedded storage is read with its own (pinned version)."""
    from oxmsg import Message
    from oxmsg.properties import Properties
    from oxmsg.util import lazyproperty

    class EmbeddedMessage(Message):
        @lazyproperty
        def _properties(self) -> Properties:
            return Properties(self._storage, properties_header_offset=_EMBEDDED_HEADER)

    storage = next((s for s in attachment._storage.storages if s.name == _EMBEDDED_STORAGE), None)
    return EmbeddedMessage(storage) if storage is not None else None
