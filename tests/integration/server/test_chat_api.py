"""The OpenAI-compatible chat endpoint, driven by the official openai SDK against the real server."""

from __future__ import annotations


import openai  # the test extra installs it: the endpoint is tested with the official SDK
import pytest
from server_helpers import API_KEY, running_server, server_config

from ragloom import Config

DOCS = {
    "opera.md": "# The Sydney Opera House\n\nThe Sydney Opera House was designed by the Danish architect Jørn Utzon, "
    "who won the design competition in 1957. It opened in 1973.\n",
    "utzon.md": "# Jørn Utzon\n\nJørn Utzon was born in Copenhagen in 1918. The architect died in Helsingør on "
    "29 November 2008, aged 90.\n",
    "wright.md": "# Frank Lloyd Wright\n\nThe American architect Frank Lloyd Wright died in Phoenix in 1959.\n",
    "gaudi.md": "# Antoni Gaudí\n\nThe Catalan architect Antoni Gaudí died in Barcelona in 1926.\n",
}
CONVERSATION = [
    {"role": "user", "content": "Who designed the Sydney Opera House?"},
    {"role": "assistant", "content": "The Danish architect Jørn Utzon [1]."},
    {"role": "user", "content": "When did he die?"},
]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("chat")
    docs = root / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    settings = server_config(root, docs).model_dump(mode="json")
    settings["llm"] = {"model": str(root / "no-model.gguf")}  # no LLM: extractive answers
    settings["answer"] = {"strategy": "extractive", "k": 2}
    with running_server(Config.from_dict(settings), root, docs) as server, server.client() as client:
        job = client.post("/v1/ingest", json={"paths": [str(docs)]}).json()
        assert server.wait_job(client, job["id"])["state"] == "done"
        yield server


def sdk(served) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{served.url}/v1", api_key=API_KEY, max_retries=0)


def test_models_lists_what_the_server_can_run(served) -> None:
    ids = [m.id for m in sdk(served).models.list()]
    assert ids[0] == "ragloom" and "extractive" in ids
    assert "attributed" not in ids  # no LLM on this server


def test_a_follow_up_is_answered_with_citations(served) -> None:
    completion = sdk(served).chat.completions.create(model="ragloom", messages=CONVERSATION)
    text = completion.choices[0].message.content
    assert completion.object == "chat.completion" and completion.choices[0].finish_reason == "stop"
    citations = completion.model_extra["citations"]
    [cited] = [c for c in citations if c["source"].endswith("utzon.md")]
    assert "2008" in text and f"[{cited['number']}]" in text and "2008" in cited["text"]
    assert {"number", "chunk_id", "section", "page", "text"} <= set(cited)


def test_streaming_gives_openai_chunks_then_done(served) -> None:
    stream = sdk(served).chat.completions.create(model="extractive", messages=CONVERSATION, stream=True)
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert "2008" in text
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert any(c["source"].endswith("utzon.md") for c in chunks[-1].model_extra["citations"])
    with served.client() as client:  # the raw stream ends with OpenAI's [DONE]
        raw = client.post("/v1/chat/completions", json={"messages": CONVERSATION, "stream": True}).text
    assert raw.rstrip().endswith("data: [DONE]")


def test_messages_after_the_question_such_as_a_tool_result_are_left_out(served) -> None:
    """A conversation may end with a tool's result (what OpenAI clients send while a tool call is
    under way): the question is the last user message with text, in a message of its parts too."""
    client = sdk(served)
    asked = [{"role": "user", "content": [{"type": "text", "text": CONVERSATION[-1]["content"]}]},
             {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
                 "name": "lookup", "arguments": "{}"}}]},
             {"role": "tool", "tool_call_id": "c1", "content": "nothing found"}]
    reply = client.chat.completions.create(model="extractive", messages=CONVERSATION[:-1] + asked)
    alone = client.chat.completions.create(model="extractive", messages=CONVERSATION)
    assert reply.choices[0].message.content == alone.choices[0].message.content
    assert reply.model_extra["citations"] == alone.model_extra["citations"]


def test_bad_conversations_are_clear_errors(served) -> None:
    client = sdk(served)
    with pytest.raises(openai.UnprocessableEntityError, match="no user message has text"):
        client.chat.completions.create(model="ragloom", messages=[{"role": "assistant", "content": "Hi"}])
    with pytest.raises(openai.UnprocessableEntityError, match="no user message has text"):
        client.chat.completions.create(model="ragloom", messages=[{"role": "user", "content": [{"type": "image_url"}]}])
    with pytest.raises(openai.UnprocessableEntityError, match="no answer strategy named 'gpt-4o'"):
        client.chat.completions.create(model="gpt-4o", messages=CONVERSATION)
    with pytest.raises(openai.APIStatusError) as info:
        client.chat.completions.create(model="attributed", messages=CONVERSATION)
    assert info.value.status_code == 503
    with served.client() as raw:
        assert raw.post("/v1/chat/completions", json={"messages": []}).status_code == 422
        assert raw.post("/v1/chat/completions", json={"messages": [{"role": "robot", "content": "x"}]}).status_code == 422


def test_the_key_rules_are_the_rest_of_the_apis(tmp_path, served) -> None:
    served.state.config.server.require_key_for_reads = True
    try:
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=f"{served.url}/v1", api_key="wrong", max_retries=0).chat.completions.create(
                model="ragloom", messages=CONVERSATION)
        assert sdk(served).chat.completions.create(model="ragloom", messages=CONVERSATION).choices
    finally:
        served.state.config.server.require_key_for_reads = False


def test_an_llm_that_dies_midway_ends_the_stream_with_an_error(tmp_path) -> None:
    """The server's LLM (an OpenAI-compatible server, faked: it cannot run here) closes its stream early."""
    from ragloom.testing.fakes import Fault, FakeOpenAI

    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    with FakeOpenAI() as llm_server:
        settings = server_config(tmp_path, docs).model_dump(mode="json")
        settings["llm"] = {"provider": "openai", "model": "gpt-4o-mini", "base_url": llm_server.url,
                           "max_retries": 0, "timeout": 10.0}
        settings["answer"] = {"k": 2, "unanswerable_below": 0.0}
        with running_server(Config.from_dict(settings), tmp_path, docs) as server, server.client() as client:
            job = client.post("/v1/ingest", json={"paths": [str(docs)]}).json()
            assert server.wait_job(client, job["id"])["state"] == "done"
            llm_server.fail(Fault.cut(3))
            stream = sdk(server).chat.completions.create(model="standard", messages=CONVERSATION, stream=True)
            arrived = []
            # The SDK raises the error chunk the endpoint sends, as it does for OpenAI's own.
            with pytest.raises(openai.APIError, match="closed the stream before the answer was finished"):
                for chunk in stream:
                    arrived.append(chunk)
            assert any(c.choices and c.choices[0].delta.content for c in arrived)  # text came first
            assert not any(c.choices and c.choices[0].finish_reason == "stop" for c in arrived)
            llm_server.fail(Fault.cut(3))
            with pytest.raises(openai.APIStatusError) as info:
                sdk(server).chat.completions.create(model="standard", messages=CONVERSATION)
            assert info.value.status_code == 502 and "closed the stream" in str(info.value)
