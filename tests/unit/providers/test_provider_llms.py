"""Ollama, OpenAI and Cohere chat against fakes of their APIs (incl. streaming formats)."""

from __future__ import annotations

import json

import pytest
from provider_helpers import llm_config

from ragloom.config import LLMConfig
from ragloom.errors import (
    ModelNotFoundError,
    ProviderError,
    QueryError,
    ServiceUnavailableError,
)
from ragloom.generate import create_llm
from ragloom.testing.fakes import FakeOllama, FakeOpenAI, Fault, Reply

PATHS = {"ollama": "/api/chat", "openai": "/v1/chat/completions", "cohere": "/v2/chat"}
CHAT = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "where is Paris?"}]


def test_complete_sends_the_messages_and_options(provider) -> None:
    name, server = provider
    llm = create_llm(llm_config(name, server, max_tokens=64, temperature=0.3))
    assert llm.complete(CHAT, stop=["\n\n"]) == "Echo: where is Paris?"
    request = server.requests_to(PATHS[name])[0].json
    assert request["messages"] == CHAT and request["stream"] is False
    sent = {
        "ollama": ("options",),
        "openai": ("max_tokens", "temperature", "stop"),
        "cohere": ("max_tokens", "temperature", "stop_sequences"),
    }[name]
    assert {k: request[k] for k in sent} == {
        "ollama": {"options": {"temperature": 0.3, "num_predict": 64, "stop": ["\n\n"]}},
        "openai": {"max_tokens": 64, "temperature": 0.3, "stop": ["\n\n"]},
        "cohere": {"max_tokens": 64, "temperature": 0.3, "stop_sequences": ["\n\n"]},
    }[name]


def test_stream_yields_the_pieces_of_the_same_answer(provider) -> None:
    name, server = provider
    llm = create_llm(llm_config(name, server))
    pieces = list(llm.stream("tell me about streaming"))
    assert pieces == ["Echo: ", "tell ", "me ", "about ", "streaming"]
    assert server.requests_to(PATHS[name])[0].json["stream"] is True


def test_json_mode_is_requested_and_parsed(provider) -> None:
    name, server = provider
    llm = create_llm(llm_config(name, server))
    assert llm.complete_json("a city") == {"answer": "Echo: a city"}
    request = server.requests_to(PATHS[name])[0].json
    if name == "ollama":
        assert request["format"] == "json"
    else:
        assert request["response_format"] == {"type": "json_object"}


def test_json_mode_reports_text_that_is_not_json(ollama: FakeOllama) -> None:
    ollama.reply = lambda messages, json_mode: "Sure! Here is the JSON you asked for"
    with pytest.raises(ProviderError, match="was asked for JSON but answered 'Sure!"):
        create_llm(llm_config("ollama", ollama)).complete_json("a city")


def test_defaults_come_from_the_config(openai: FakeOpenAI) -> None:
    llm = create_llm(llm_config("openai", openai, max_tokens=7))
    llm.complete("hi")
    llm.complete("hi", max_tokens=99, temperature=1.0)
    first, second = (r.json for r in openai.requests_to("/v1/chat/completions"))
    assert (first["max_tokens"], first["temperature"]) == (7, 0.0)
    assert (second["max_tokens"], second["temperature"]) == (99, 1.0)
    assert llm.model_id == "openai:gpt-4o-mini"


def test_unknown_chat_model(provider) -> None:
    name, server = provider
    llm = create_llm(llm_config(name, server, model="no-such-model"))
    with pytest.raises(ModelNotFoundError, match="has no model 'no-such-model'; it has: "):
        llm.complete("hi")
    with pytest.raises(ModelNotFoundError):
        list(llm.stream("hi"))


def test_stream_is_retried_before_the_first_byte(provider) -> None:
    name, server = provider
    server.fail(Fault(503, "loading model"))
    assert "".join(create_llm(llm_config(name, server)).stream("again")) == "Echo: again"
    assert len(server.requests_to(PATHS[name])) == 2


def test_an_error_in_the_middle_of_a_stream(ollama: FakeOllama, openai: FakeOpenAI) -> None:
    ollama.routes[("POST", "/api/chat")] = lambda request: Reply(chunks=[
        b'{"message": {"role": "assistant", "content": "Hel"}, "done": false}\n',
        b'{"error": "an error was encountered while running the model: out of memory"}\n',
    ])
    stream = create_llm(llm_config("ollama", ollama)).stream("hi")
    assert next(stream) == "Hel"
    with pytest.raises(ProviderError, match="Ollama stopped generating: an error was encountered"):
        next(stream)
    openai.routes[("POST", "/v1/chat/completions")] = lambda request: Reply(chunks=[
        b'data: {"error": {"message": "context length exceeded", "type": "invalid_request_error"}}\n\n',
    ])
    with pytest.raises(ProviderError, match="stopped generating: context length exceeded"):
        list(create_llm(llm_config("openai", openai)).stream("hi"))


def test_slow_generation_times_out_with_advice(ollama: FakeOllama) -> None:
    ollama.fail(Fault.slow(2.0))
    llm = create_llm(llm_config("ollama", ollama, timeout=0.2, max_retries=0))
    with pytest.raises(ServiceUnavailableError, match="raise `timeout` in ragloom.yaml"):
        llm.complete("hi")


def test_messages_are_checked() -> None:
    from ragloom.models.llm import as_messages

    assert as_messages("hello") == [{"role": "user", "content": "hello"}]
    with pytest.raises(QueryError, match="message 1 must be"):
        as_messages([{"role": "robot", "content": "beep"}])
    with pytest.raises(QueryError, match="no messages"):
        as_messages([])


def test_default_llm_is_the_packaged_llamacpp_model() -> None:
    assert LLMConfig().provider == "llamacpp" and LLMConfig().model is None
    assert json.loads(json.dumps(LLMConfig().model_dump()))["temperature"] == 0.0


def test_a_stream_cut_off_before_it_finished_is_an_error(openai: FakeOpenAI) -> None:
    # The server dies midway: the connection closes after a few pieces, with no finish_reason and no [DONE].
    openai.fail(Fault.cut(3))
    stream = create_llm(llm_config("openai", openai)).stream("a question that gets a long echo")
    pieces = []
    with pytest.raises(ProviderError, match="closed the stream before the answer was finished"):
        for piece in stream:
            pieces.append(piece)
    assert pieces  # what arrived before the cut was handed on
    assert "".join(create_llm(llm_config("openai", openai)).stream("again")) == "Echo: again"
