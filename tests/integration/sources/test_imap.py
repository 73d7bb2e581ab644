"""imaps:// mailboxes against a real IMAP server (Debian's Dovecot on 127.0.0.1, started by the test):
messages and their attachments read, new ones added, expunged ones removed, a renumbered mailbox
(UIDVALIDITY) read again, and a refused login one line."""

from __future__ import annotations

import imaplib
import ssl
from email.message import EmailMessage

import pytest


def message(subject: str, text: str, attachment: tuple[str, str] | None = None) -> bytes:
    mail = EmailMessage()
    mail["From"], mail["To"], mail["Subject"] = "ops@example.org", "team@example.org", subject
    mail.set_content(text)
    if attachment is not None:
        mail.add_attachment(attachment[1].encode(), maintype="text", subtype="markdown", filename=attachment[0])
    return bytes(mail)


def mailbox(dovecot) -> imaplib.IMAP4_SSL:
    client = imaplib.IMAP4_SSL(dovecot.host, dovecot.port, ssl_context=ssl.create_default_context())
    client.login(dovecot.user, dovecot.password)
    return client


def test_a_mailbox_is_synced_by_uid(dovecot, index_at, monkeypatch: pytest.MonkeyPatch) -> None:
    client = mailbox(dovecot)
    client.append("INBOX", None, None, message("Boiler", "The boiler is serviced every October."))
    client.append("INBOX", None, None, message("Rota", "See the attached rota.",
                                               ("rota.md", "# Rota\n\nMira closes the office on Thursdays.\n")))
    monkeypatch.setenv("MAIL_PASSWORD", dovecot.password)
    uri = f"imaps://alice@127.0.0.1:{dovecot.port}/INBOX"
    index = index_at(remote={"ops": {"uri": uri, "token_env": "MAIL_PASSWORD"}})
    first = index.sync("ops")
    assert first.status == "ok" and len(first.added) == 2
    validity = index.store.sync_state().remote_source("ops").cursor["uidvalidity"]
    assert sorted(first.added) == [f"{uri};UIDVALIDITY={validity}/;UID={uid}" for uid in (1, 2)]
    hit = index.search("when is the boiler serviced", k=1)[0]
    assert hit.source.endswith(";UID=1") and hit.metadata["email_subject"] == "Boiler"
    assert "Thursdays" in index.search("who closes the office on Thursdays", k=1)[0].text  # the attachment

    again = index.sync("ops")
    assert len(again.unchanged) == 2 and again.bytes_downloaded == 0

    client.select("INBOX")
    client.uid("STORE", "1", "+FLAGS", r"(\Deleted)")
    client.expunge()
    client.append("INBOX", None, None, message("Keys", "Spare keys hang in the post room."))
    changed = index.sync("ops")
    assert changed.removed == [f"{uri};UIDVALIDITY={validity}/;UID=1"]
    assert changed.added == [f"{uri};UIDVALIDITY={validity}/;UID=3"] and len(changed.unchanged) == 1
    client.logout()

    monkeypatch.setenv("MAIL_PASSWORD", "not-the-password")
    refused = index.sync("ops")
    assert refused.status == "failed" and "refused the login" in refused.error
    assert "not-the-password" not in refused.error
    assert {r.path for r in index.store.list_sources()} == {
        f"{uri};UIDVALIDITY={validity}/;UID=2", f"{uri};UIDVALIDITY={validity}/;UID=3"}


def test_a_renumbered_mailbox_is_read_again(dovecot, index_at, monkeypatch: pytest.MonkeyPatch) -> None:
    client = mailbox(dovecot)
    client.create("Archive")
    client.append("Archive", None, None, message("Old", "The old printer was recycled."))
    monkeypatch.setenv("MAIL_PASSWORD", dovecot.password)
    uri = f"imaps://alice@127.0.0.1:{dovecot.port}/Archive"
    index = index_at(remote={"archive": {"uri": uri, "token_env": "MAIL_PASSWORD"}})
    [before] = index.sync("archive").added
    client.delete("Archive")  # made again: a new UIDVALIDITY, UIDs from 1 again
    client.create("Archive")
    client.append("Archive", None, None, message("New", "The new printer is on the second floor."))
    client.logout()
    again = index.sync("archive")
    assert again.removed == [before] and len(again.added) == 1 and again.added[0] != before
    assert "second floor" in index.search("where is the printer", k=1)[0].text


def test_without_a_password_or_with_private_hosts_refused_it_is_one_line(dovecot, tmp_path, embedder) -> None:
    from ragloom import Index
    from ragloom.config import Config

    uri = f"imaps://alice@127.0.0.1:{dovecot.port}/INBOX"
    config = Config.from_dict({"index": str(tmp_path / "strict"), "sources": {"remote": {
        "mail": {"uri": uri, "token_env": "NO_SUCH_PASSWORD_VARIABLE"}, "open": {"uri": uri, "token_file": str(
            tmp_path / "password")}}}})
    (tmp_path / "password").write_text(dovecot.password)
    with Index.open(tmp_path / "strict", config, embedder=embedder) as index:
        unset = index.sync("mail")
        assert unset.status == "failed" and "NO_SUCH_PASSWORD_VARIABLE" in unset.error
        private = index.sync("open")
        assert private.status == "failed" and "loopback address: refused" in private.error
