from __future__ import annotations

import json

from api.completions import AbstainHoldBack, ChunkWriter, completion_body
from core.types import Answer, Chunk, Citation, Hit

CHUNK = Chunk("d#0", "d", "Doc", ("S",), "src", "https://x", "CC0", 5, 12, "passage")


def answer(mode: str = "rag", text: str = "Yes [1].", tokens: int = 3) -> Answer:
    return Answer(
        question="q",
        text=text,
        mode=mode,
        citations=(Citation.from_chunk(1, CHUNK, support=0.8),),
        evidence=(Hit(CHUNK, 0.9, 1, "bm25"),),
        usage={"prompt_tokens": 10, "completion_tokens": tokens},
    )


def feed_all(holdback: AbstainHoldBack, pieces: list[str]) -> str:
    return "".join(holdback.feed(p) for p in pieces)


def test_abstention_token_split_across_pieces_is_never_sent():
    h = AbstainHoldBack("INSUFFICIENT")
    assert feed_all(h, [" INS", "UFFI", "CIENT", " evidence"]) == ""
    assert (
        h.finish(answer("abstained", "The sources do not answer this.")) == "The sources do not answer this."
    )


def test_ordinary_text_is_held_only_until_it_cannot_be_the_token():
    h = AbstainHoldBack("INSUFFICIENT")
    assert h.feed("In") == ""  # could still become INSUFFICIENT
    assert h.feed("sulin") == "Insulin"
    assert h.feed(" is") == " is"
    assert h.finish(answer()) == ""


def test_short_answer_still_held_is_flushed_at_the_end():
    h = AbstainHoldBack("INSUFFICIENT")
    assert h.feed("IN") == ""
    assert h.finish(answer(text="IN")) == "IN"


def test_completion_body_is_openai_shaped_with_citations_and_length_finish():
    body = completion_body(answer(tokens=64), model="fast", max_tokens=64)
    assert body["object"] == "chat.completion" and body["model"] == "fast"
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"] == {"prompt_tokens": 10, "completion_tokens": 64, "total_tokens": 74}
    citation = body["citations"][0]
    assert (citation["chunk_id"], citation["start"], citation["end"], citation["quote"]) == (
        "d#0",
        5,
        12,
        "passage",
    )
    assert body["evidence"][0]["chunk_id"] == "d#0" and body["medcite"]["mode"] == "rag"


def test_stream_events_are_sse_chunks_sharing_one_id():
    writer = ChunkWriter("fast")
    events = [writer.role(), writer.content("Yes"), writer.final(answer(), 64), writer.usage(answer())]
    bodies = [json.loads(e.removeprefix("data: ")) for e in events]
    assert all(e.endswith("\n\n") for e in events)
    assert {b["id"] for b in bodies} == {writer.id}
    assert bodies[1]["choices"][0]["delta"] == {"content": "Yes"}
    assert bodies[2]["choices"][0]["finish_reason"] == "stop" and bodies[2]["citations"][0]["marker"] == 1
    assert bodies[3]["choices"] == [] and bodies[3]["usage"]["total_tokens"] == 13
    assert writer.done() == "data: [DONE]\n\n"
