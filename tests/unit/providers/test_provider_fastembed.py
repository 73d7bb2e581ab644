"""fastembed on the packaged bge-small files, offline, against ragloom's own ONNX path."""

from __future__ import annotations

import numpy as np
import pytest

from ragloom.config import EmbedderConfig
from ragloom.embed import create_embedder
from ragloom.embed.prefixes import BGE_QUERY_INSTRUCTION
from ragloom.errors import ModelNotFoundError
from ragloom.models import packaged_model_dir

pytest.importorskip("fastembed", reason="the fastembed extra is not installed")

TEXTS = [
    "Aspirin irreversibly inhibits cyclooxygenase.",
    "Mitochondria are the powerhouse of the cell, producing ATP through oxidative phosphorylation.",
    "short",
]


@pytest.fixture(scope="module")
def fastembed_bge():
    folder = str(packaged_model_dir("bge_small_en"))
    return create_embedder(EmbedderConfig(provider="fastembed", model=folder, threads=1))


def test_fastembed_loads_a_local_folder_and_agrees_with_the_onnx_path(fastembed_bge, embedder) -> None:
    assert fastembed_bge.model_id == "fastembed:bge_small_en" and fastembed_bge.dimension == 384
    assert fastembed_bge.prefixes == {"query": BGE_QUERY_INSTRUCTION, "document": ""}
    ours, theirs = embedder.embed_documents(TEXTS), fastembed_bge.embed_documents(TEXTS)
    assert np.min(np.sum(ours * theirs, axis=1)) > 0.99
    query = "what inhibits cyclooxygenase?"
    assert float(embedder.embed_query(query) @ fastembed_bge.embed_query(query)) > 0.99


def test_fastembed_counts_tokens_beyond_the_model_limit(fastembed_bge) -> None:
    assert fastembed_bge.count_tokens("protein " * 1000) == 1000


def test_fastembed_unknown_model_offline() -> None:
    with pytest.raises(ModelNotFoundError, match="fastembed could not load the model 'no/such-model'"):
        create_embedder(EmbedderConfig(provider="fastembed", model="no/such-model"))
