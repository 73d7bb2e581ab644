"""The ``quality`` preset was measured over an EmbeddingGemma index; over another embedder it
searches as hybrid does and says so (the EmbeddingGemma side: tests/unit/test_embeddinggemma.py)."""

from __future__ import annotations

import pytest

from ragloom import Index
from ragloom.errors import RagloomWarning


def test_the_quality_preset_over_the_default_embedder_searches_as_hybrid_and_says_so(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ros.md").write_text("# Nodes\n\nROS 2 nodes talk over topics with publishers and subscribers.\n")
    (docs / "cells.md").write_text("# Cells\n\nMitochondria turn sugar into energy for the cell.\n")
    with Index.open(tmp_path / "index") as index:
        index.ingest([docs])
        with pytest.warns(RagloomWarning, match="embeds with onnx:bge-small-en-v1.5, so it searches as hybrid"):
            quality = index.retrieve("how do nodes communicate", k=2, mode="quality")
        hybrid = index.retrieve("how do nodes communicate", k=2, mode="hybrid")
    assert [h.chunk_id for h in quality.hits] == [h.chunk_id for h in hybrid.hits]
    assert [round(h.score, 6) for h in quality.hits] == [round(h.score, 6) for h in hybrid.hits]
    assert any("EmbeddingGemma" in w for w in quality.warnings) and not hybrid.warnings
