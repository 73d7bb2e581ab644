"""A ragloom index as a LangChain retriever.

>>> from ragloom import Index                                   # doctest: +SKIP
>>> from ragloom.integrations.langchain import RagloomRetriever  # doctest: +SKIP
>>> retriever = RagloomRetriever(index=Index.open("my-index"), k=4)  # doctest: +SKIP
>>> retriever.invoke("how do ROS 2 nodes communicate?")          # doctest: +SKIP
[Document(id=..., page_content=..., metadata={"source": ..., "score": ..., "section": ...})]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..optional import require

require("langchain_core", extra="langchain", feature="ragloom.integrations.langchain", package="langchain-core")

from langchain_core.callbacks import CallbackManagerForRetrieverRun  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from pydantic import ConfigDict, Field, PrivateAttr  # noqa: E402

from ..index import Index  # noqa: E402
from . import LockedSearch, hit_metadata  # noqa: E402


class RagloomRetriever(BaseRetriever):
    """Returns a ragloom search's hits as ``Document``s: the passage text, its metadata
    (source, section, page, chunk_id, ...) and its ``score`` and ``rank``."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: Index
    k: int = Field(5, ge=1, description="passages per query")
    where: dict[str, Any] | None = Field(None, description="metadata filter, as in Index.search")
    mode: str | None = Field(None, description="a search preset (registry role preset) or a configured one; None = the default")
    _search: LockedSearch = PrivateAttr()

    def model_post_init(self, context: Any) -> None:
        self._search = LockedSearch(self.index)

    @classmethod
    def from_path(cls, path: str | Path, **kwargs: Any) -> RagloomRetriever:
        """A retriever over the index at ``path`` (which must exist)."""
        return cls(index=Index.open(path, create=False), **kwargs)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None,
        where: dict[str, Any] | None = None, mode: str | None = None,
    ) -> list[Document]:
        """``k``, ``where`` and ``mode`` given to ``invoke`` (``retriever.invoke(q, k=1)``) win over the retriever's."""
        hits = self._search(query, self.k if k is None else k, self.where if where is None else where,
                            self.mode if mode is None else mode)
        return [Document(id=hit.chunk_id, page_content=hit.text, metadata=hit_metadata(hit)) for hit in hits]
