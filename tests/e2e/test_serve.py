"""`medcite serve` as a real process with the real embedder and the local generator, called with
the official openai client: a cited answer, streamed and not, whose citations resolve, and one cut
short by a stop sequence; every body conforms to ``openai.types``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import httpx
import openai
import pytest

from indexes.store import load_index
from tests.api.support import conforming_completion, conforming_events
from tests.helpers import free_port, wait_until_ready

pytestmark = pytest.mark.e2e
KEY = "e2e-key-0123456789abcdef"
QUESTION = "Which score is used to decide on anticoagulation in atrial fibrillation?"


@pytest.fixture(scope="module")
def served(small_index_paths):
    port = free_port()
    env = {
        **os.environ,
        "MEDCITE_DATA_DIR": str(small_index_paths.data_dir),
        "MEDCITE_API_KEYS": KEY,
        "MEDCITE_PROFILES": "fast",
        "MEDCITE_ENV": "production",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "medcite", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    wait_until_ready(process, f"{url}/ready", 180, lambda: process.stdout.read() if process.stdout else "")
    yield url
    process.send_signal(signal.SIGTERM)
    # uvicorn shuts down gracefully, then re-raises the signal it caught: -SIGTERM is a clean exit.
    assert process.wait(timeout=60) in (0, -signal.SIGTERM)
    log = process.stdout.read() if process.stdout else ""
    assert "Application shutdown complete" in log
    assert QUESTION not in log  # questions are not logged by default


def test_cited_answers_from_the_local_model_streamed_and_not(served, small_index_paths):
    client = openai.OpenAI(base_url=f"{served}/v1", api_key=KEY, max_retries=0, timeout=300)
    messages = [{"role": "user", "content": QUESTION}]
    result = client.chat.completions.create(model="fast", messages=messages, max_tokens=60)
    text = result.choices[0].message.content
    citations = result.model_extra["citations"]
    assert "CHA2DS2-VASc" in text and citations, text
    assert result.usage.prompt_tokens > 100 and 0 < result.usage.completion_tokens <= 60

    stream = client.chat.completions.create(model="fast", messages=messages, max_tokens=60, stream=True)
    chunks = list(stream)
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    final = next(c.model_extra for c in chunks if c.model_extra.get("citations") is not None)
    assert streamed == text  # greedy decoding: the same answer both ways
    assert [c["chunk_id"] for c in final["citations"]] == [c["chunk_id"] for c in citations]

    index = load_index(small_index_paths.indexes_dir / "default")
    try:
        by_id = {index.chunks.get(i).chunk_id: index.chunks.get(i) for i in range(len(index.chunks))}
    finally:
        index.close()
    for citation in citations:
        chunk = by_id[citation["chunk_id"]]
        assert f"[{citation['marker']}]" in text
        assert (chunk.text, chunk.start, chunk.end) == (citation["quote"], citation["start"], citation["end"])


def test_a_follow_up_is_read_with_the_patient_of_the_first_turn(served):
    """Issue 60: the drug and age come from the first message, the kidney function from the follow-up."""
    client = openai.OpenAI(base_url=f"{served}/v1", api_key=KEY, max_retries=0, timeout=300)
    first = "74 yo M, nonvalvular AF, CrCl 80, starting rivaroxaban - what dose?"
    messages = [
        {"role": "user", "content": first},
        {"role": "assistant", "content": "Rivaroxaban 20 mg once daily with the evening meal [1]."},
        {"role": "user", "content": "and if his CrCl drifts down to 45 next year?"},
    ]
    result = client.chat.completions.create(model="fast", messages=messages, max_tokens=60)
    carried = result.model_extra["medcite"]["carried"]
    assert {"rivaroxaban", "age 74"} <= set(carried) and "CrCl 80" not in carried, carried
    assert result.choices[0].message.content.startswith(f"Read with: {', '.join(carried)} (from your earlier")


def test_a_stop_sequence_ends_the_local_models_answer(served):
    # llama.cpp ends generation before the stop sequence (streamed or not); the support gate sees,
    # and a client gets, only what came before it.
    client = openai.OpenAI(base_url=f"{served}/v1", api_key=KEY, max_retries=0, timeout=300)
    messages = [{"role": "user", "content": QUESTION}]
    full = client.chat.completions.create(model="fast", messages=messages, max_tokens=60)
    # a word from the second half of the (greedy, so repeatable) unstopped answer, not one that
    # medcite's own abstention notice could hold
    words = [w for w in full.choices[0].message.content.split() if w.isalpha() and len(w) >= 5]
    stop = words[len(words) // 2]
    body = {"model": "fast", "messages": messages, "max_tokens": 60, "stop": ["zzzz", stop]}
    auth = {"Authorization": f"Bearer {KEY}"}
    stopped = conforming_completion(
        httpx.post(f"{served}/v1/chat/completions", json=body, headers=auth, timeout=300).json()
    )
    assert stopped["choices"][0]["finish_reason"] == "stop"
    assert stopped["usage"]["completion_tokens"] < full.usage.completion_tokens
    sentences = [s for s in stopped["medcite"]["sentences"] if s["status"] != "closest"]  # generated
    assert sentences and not any(stop in s["text"] for s in sentences)  # generated text ends before it
    assert stop not in stopped["choices"][0]["message"]["content"]
    events = conforming_events(
        httpx.post(
            f"{served}/v1/chat/completions", json={**body, "stream": True}, headers=auth, timeout=300
        ).text
    )
    chunks = [e for e in events if isinstance(e, dict) and e.get("choices")]
    streamed = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert streamed == stopped["choices"][0]["message"]["content"]  # greedy: the same both ways
    assert [c["choices"][0]["finish_reason"] for c in chunks if c.get("medcite")] == ["stop"]
