"""MedciteChatModel (rag/langchain.py) against a live medcite server: the citations, evidence and
medcite fields reach LangChain's messages and resolve to the exact indexed passage.

The server is the real app under uvicorn with a real BM25 index (tests/api/support.py); only the
model is scripted, since the LangChain adapter and the server's output shape are the subject.
"""

from __future__ import annotations

import asyncio
import sys
from functools import reduce
from operator import add

import openai
import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from api.settings import ApiSettings
from core.errors import MissingExtraError
from indexes.store import load_index
from rag.langchain import MedciteChatModel
from tests.api.support import KEY, ScriptedGenerator, live_server, scripted_assembler

QUESTION = "Which score is used to decide on anticoagulation in atrial fibrillation?"
REPLY = "The CHA2DS2-VASc score guides anticoagulation in atrial fibrillation [1]."


@pytest.fixture(scope="module")
def server(bm25_paths):
    settings = ApiSettings(env="production", api_keys=[KEY], profiles=["fast"], rate_limit_per_minute=0)
    generator = ScriptedGenerator(REPLY)
    with live_server(settings, scripted_assembler(bm25_paths, generator)) as (url, _):
        yield url


def chat_model(url: str, **options) -> MedciteChatModel:
    return MedciteChatModel(base_url=f"{url}/v1", api_key=KEY, model="fast", max_retries=0, **options)


def assert_resolves(citation: dict, index_folder) -> None:
    """The citation's quote is exactly the indexed chunk's text, at the chunk's span."""
    index = load_index(index_folder)
    try:
        chunks = [index.chunks.get(i) for i in range(len(index.chunks))]
    finally:
        index.close()
    (chunk,) = [c for c in chunks if c.chunk_id == citation["chunk_id"]]
    assert chunk.text == citation["quote"]
    assert (chunk.doc_id, chunk.start, chunk.end) == (citation["doc_id"], citation["start"], citation["end"])
    assert citation["end"] - citation["start"] == len(citation["quote"])


def assert_cited_answer(metadata: dict, index_folder) -> None:
    assert [c["marker"] for c in metadata["citations"]] == [1]
    assert metadata["citations"][0]["chunk_id"] == metadata["evidence"][0]["chunk_id"]
    assert_resolves(metadata["citations"][0], index_folder)
    medcite = metadata["medcite"]
    assert medcite["mode"] == "rag" and medcite["text"] == REPLY and isinstance(medcite["notes"], list)
    (sentence,) = medcite["sentences"]  # the one generated sentence, shown with its marker
    assert (sentence["status"], sentence["markers"], sentence["supported"]) == ("shown", [1], True)
    assert metadata["finish_reason"] == "stop" and metadata["model_name"] == "fast"


def test_invoke_keeps_citations_that_resolve(server, bm25_paths):
    message = chat_model(server).invoke([SystemMessage("Answer briefly."), HumanMessage(QUESTION)])
    assert message.content == REPLY
    assert_cited_answer(message.response_metadata, bm25_paths.indexes_dir / "default")
    assert message.usage_metadata["output_tokens"] == len(REPLY.split(" "))


def test_stream_adds_up_to_the_answer_with_its_citations(server, bm25_paths):
    chunks = list(chat_model(server).stream(QUESTION))
    assert "".join(c.content for c in chunks) == REPLY
    assert sum("citations" in c.response_metadata for c in chunks) == 1  # the final chunk only
    whole = reduce(add, chunks)
    assert whole.content == REPLY
    assert_cited_answer(whole.response_metadata, bm25_paths.indexes_dir / "default")
    assert whole.usage_metadata["output_tokens"] == len(REPLY.split(" "))


def test_ainvoke_and_astream_keep_them_too(server, bm25_paths):
    async def both():
        model = chat_model(server)
        message = await model.ainvoke(QUESTION)
        chunks = [chunk async for chunk in model.astream(QUESTION)]
        return message, reduce(add, chunks)

    message, streamed = asyncio.run(both())
    for result in (message, streamed):
        assert result.content == REPLY
        assert_cited_answer(result.response_metadata, bm25_paths.indexes_dir / "default")


def test_a_follow_up_is_read_with_the_earlier_turns_and_says_what_it_carried(server):
    """Issue 60: the history LangChain sends is the conversation the server reads the follow-up with."""
    history = [HumanMessage("Dabigatran for AF, CrCl 24 mL/min - what dose?"), AIMessage(REPLY)]
    message = chat_model(server).invoke(
        [*history, HumanMessage("and how long before surgery do we stop it?")]
    )
    medcite = message.response_metadata["medcite"]
    assert medcite["carried"] == ["CrCl 24 mL/min", "dabigatran"]
    assert message.content.startswith("Read with: CrCl 24 mL/min, dabigatran (from your earlier messages).")
    alone = chat_model(server).invoke("and how long before surgery do we stop it?")
    assert alone.response_metadata["medcite"]["carried"] == [] and not alone.content.startswith("Read with:")


def test_a_source_filter_that_excludes_every_passage_abstains(server):
    message = chat_model(server, filters={"sources": ["no-such-source"]}).invoke(QUESTION)
    assert message.response_metadata["medcite"]["mode"] == "abstained"
    assert message.response_metadata["medcite"]["outcome"] == "nothing_relevant"
    assert message.response_metadata["citations"] == [] and message.response_metadata["evidence"] == []


def test_a_wrong_key_is_the_clients_authentication_error(server):
    with pytest.raises(openai.AuthenticationError):
        MedciteChatModel(base_url=f"{server}/v1", api_key="wrong-key-0123456789abcdef", max_retries=0).invoke(
            QUESTION
        )


def test_tool_messages_are_refused_before_any_request(server):
    with pytest.raises(ValueError, match="not 'tool' messages"):
        chat_model(server).invoke([HumanMessage(QUESTION), ToolMessage("42", tool_call_id="t1")])


def test_without_openai_the_error_names_the_langchain_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "openai", None)  # import now raises ImportError
    with pytest.raises(MissingExtraError, match=r"medcite\[langchain\]"):
        MedciteChatModel(base_url="http://127.0.0.1:9/v1").invoke(QUESTION)
