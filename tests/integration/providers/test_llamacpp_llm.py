"""The llamacpp provider generates real tokens with the packaged SmolLM2-135M-Instruct."""

from __future__ import annotations

import pytest

from ragloom.config import LLMConfig
from ragloom.errors import ModelNotFoundError, ProviderError
from ragloom.generate import create_llm

pytest.importorskip("llama_cpp", reason="install the llamacpp extra (DESIGN.md: build flags)")


@pytest.fixture(scope="module")
def smollm():
    # One thread: on a busy 2-core machine a second llama.cpp thread mostly waits.
    llm = create_llm(LLMConfig(model="smollm2", threads=1, context_size=1024, max_tokens=12))
    yield llm
    llm.close()


def test_generates_real_tokens(smollm) -> None:
    answer = smollm.complete("What is the capital of France? Answer in one word.")
    assert smollm.model_id == "llamacpp:SmolLM2-135M-Instruct.Q4_1"
    assert answer.strip() and len(answer) < 200  # 12 tokens at most


def test_stream_matches_complete_at_temperature_zero(smollm) -> None:
    messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name a colour."}]
    pieces = list(smollm.stream(messages, max_tokens=8))
    assert len(pieces) > 1
    assert "".join(pieces) == smollm.complete(messages, max_tokens=8)


def test_json_mode_returns_json(smollm) -> None:
    value = smollm.complete_json("Give a JSON object with the key city set to Paris.", max_tokens=24)
    assert isinstance(value, dict)


def test_prompt_longer_than_the_context_is_explained(smollm) -> None:
    with pytest.raises(ProviderError, match="raise llm.context_size"):
        smollm.complete("word " * 3000, max_tokens=4)


def test_missing_gguf_file(tmp_path) -> None:
    with pytest.raises(ModelNotFoundError, match="no GGUF model at .*missing.gguf"):
        create_llm(LLMConfig(model=str(tmp_path / "missing.gguf")))
