"""A ragloom index as a LlamaIndex retriever.

>>> from ragloom import Index                                     # doctest: +SKIP
>>> from ragloom.integrations.llamaindex import RagloomRetriever   # doctest: +SKIP
>>> retriever = RagloomRetriever(Index.open("my-index"), k=4)      # doctest: +SKIP
>>> retriever.retrieve("how do ROS 2 nodes communicate?")          # doctest: +SKIP
[NodeWithScore(node=TextNode(id_=..., text=..., metadata={...}), score=0.83), ...]
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..optional import require

require("llama_index.core", extra="llamaindex", feature="ragloom.integrations.llamaindex", package="llama-index-core")

from llama_index.core.callbacks import CallbackManager  # noqa: E402
from llama_index.core.retrievers import BaseRetriever  # noqa: E402
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode  # noqa: E402

from ..index import Index  # noqa: E402
from . import LockedSearch, chunk_metadata  # noqa: E402


class RagloomRetriever(BaseRetriever):
    """Returns a ragloom search's hits as ``NodeWithScore``: a ``TextNode`` (id = chunk id,
    metadata with source, section, page, ..., character offsets in its document) and the score.

    The score lives on the ``NodeWithScore`` only: a node's metadata is part of its hash and of
    the text an LLM is shown, so it holds what the chunk is, never what one query made of it.
    The same chunk found by two retrievers is then one node, and fusion
    (``QueryFusionRetriever``) merges it.
    """

    def __init__(
        self, index: Index, k: int = 5, *, where: Mapping[str, Any] | None = None, mode: str | None = None,
        callback_manager: CallbackManager | None = None, verbose: bool = False,
    ) -> None:
        self.index, self.k, self.where, self.mode = index, k, where, mode
        self._search = LockedSearch(index)
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @classmethod
    def from_path(cls, path: str | Path, **kwargs: Any) -> RagloomRetriever:
        """A retriever over the index at ``path`` (which must exist)."""
        return cls(Index.open(path, create=False), **kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = self._search(query_bundle.query_str, self.k, self.where, self.mode)
        return [
            NodeWithScore(
                node=TextNode(id_=hit.chunk_id, text=hit.text, metadata=chunk_metadata(hit),
                              start_char_idx=hit.metadata.get("start"), end_char_idx=hit.metadata.get("end")),
                score=hit.score,
            )
            for hit in hits
        ]
