"""Languages: which language a text is in (``detect``) and how BM25 reads it (``analysis``).

Both sit below the stores, the ingest runner and the search pipeline, which all ask them.
"""

from .detect import UNDETERMINED, detect_language, language_shares, mostly_non_english

__all__ = ["UNDETERMINED", "detect_language", "language_shares", "mostly_non_english"]
