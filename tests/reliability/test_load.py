"""32 concurrent clients for 30 s on loopback, mixing /v1/retrieve and streamed chat completions.

The server runs in its own process (real BM25 index, scripted model that streams like llama.cpp
but faster, default queue and per-key rate limits), so its memory is read alone. Guarantees:
no error of any kind (a 429 from a full generation queue is the server refusing on purpose),
every streamed answer ends in [DONE], and the server's resident memory grows by less than
MEMORY_BOUND_MB over the run. The same load against the real models is bench/serving/load_test.py
(docs/reliability.md has both sets of numbers).
"""

from __future__ import annotations

import asyncio

import httpx
import psutil
import pytest

from bench.serving.load_mix import mixed_load
from tests.helpers import guideline_bm25
from tests.reliability.serve_load import KEYS
from tests.reliability.server_process import server_process

MEMORY_BOUND_MB = 64
QUESTIONS = [
    "Which score is used to decide on anticoagulation in atrial fibrillation?",
    "How is community-acquired pneumonia treated?",
    "What is the first-line treatment of hypertension?",
    "When should a patient with a urinary tract infection get antibiotics?",
]


@pytest.fixture
def server(tmp_path):
    data = tmp_path / "data"
    guideline_bm25(data, 6)
    with server_process("tests.reliability.serve_load", str(data)) as (url, proc):
        yield url, proc


def rss_mb(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / 2**20


def test_32_clients_mixing_retrieval_and_streamed_chat_get_no_errors_and_memory_stays_bounded(server):
    url, proc = server
    warm = asyncio.run(mixed_load(url, KEYS, QUESTIONS, clients=4, seconds=3, chat_share=0.5))
    assert warm["errors_total"] == 0, str(warm)
    before = rss_mb(proc.pid)

    result = asyncio.run(mixed_load(url, KEYS, QUESTIONS, clients=32, seconds=30, chat_share=0.25))
    after = rss_mb(proc.pid)
    print(f"\nload: {result}\nserver RSS {before:.0f} -> {after:.0f} MiB")

    assert result["errors_total"] == 0, result
    assert result["retrieve"]["completed"] > 100
    assert result["chat"]["completed"] > 0 and result["chat"]["refused_429"] > 0  # the queue filled
    assert after - before < MEMORY_BOUND_MB
    ready = httpx.get(f"{url}/ready", timeout=10).json()
    assert ready["status"] == "ready"
    assert ready["queue"]["waiting"] == ready["queue"]["running"] == 0  # no request left behind
