"""ragloom: a local-first retrieval and RAG engine.

    from ragloom import Index
    with Index.open("my-index") as index:
        index.ingest(["./docs"])
        for hit in index.search("how do ROS 2 nodes communicate?", k=5):
            print(hit.rank, hit.score, hit.source, hit.section, hit.page)
"""

from .config import Config
from .errors import (
    ConfigError,
    ModelMismatchError,
    QueryError,
    RagloomError,
    FilterWarning,
    RagloomWarning,
    UnknownComponentError,
    UnknownConfigKeyError,
    UnsupportedFormatError,
)
from .generate.conversation import Conversation
from .index import Index, IngestProgress
from .types import Answer, Chunk, Citation, Citations, Document, Hit, IndexStats, IngestReport, SourceRecord

__version__ = "0.1.0"

__all__ = [
    "Answer",
    "Chunk",
    "Citation",
    "Citations",
    "Config",
    "ConfigError",
    "Conversation",
    "Document",
    "Hit",
    "Index",
    "IndexStats",
    "IngestProgress",
    "IngestReport",
    "ModelMismatchError",
    "QueryError",
    "RagloomError",
    "FilterWarning",
    "RagloomWarning",
    "SourceRecord",
    "UnknownComponentError",
    "UnknownConfigKeyError",
    "UnsupportedFormatError",
    "__version__",
]
