"""Files read incompletely for a reason that may go away: a missing OCR engine, a missing optional library.

Such a file's source record carries the reason in its policy (``…+incomplete=tesseract``). An
unchanged file is read again at the first ingest after the reason is gone (Tesseract installed,
the library importable), and the report says why; until then it is left as it is.
"""

from __future__ import annotations

import importlib.util

from . import ocr

MARK = "+incomplete="


def policy_with(policy: str, missing: str | None) -> str:
    """The policy recorded for a source read without ``missing`` (None: read completely)."""
    return f"{policy}{MARK}{missing}" if missing else policy


def lacked(recorded: str, policy: str) -> str | None:
    """What a source recorded under ``recorded`` lacked when it was read under ``policy``, or None."""
    if not recorded.startswith(policy + MARK):
        return None
    return recorded[len(policy + MARK):]


def available(missing: str) -> bool:
    """Whether what a read lacked is there now."""
    if missing == "tesseract":
        return ocr.available()
    if missing.startswith("module:"):
        return importlib.util.find_spec(missing.removeprefix("module:")) is not None
    return False


def read_again_note(source: str, missing: str) -> str:
    what = "Tesseract" if missing == "tesseract" else missing.removeprefix("module:")
    return f"{source}: read again, as its last read was incomplete without {what}, which is available now"
