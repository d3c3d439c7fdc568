"""The compose file's LLM stand-in (scripts/compose/llm_entry.py -> llama_cpp.server), for real:
an answer streamed through medcite's OpenAI-compatible generator runs to its finish reason while
another client asks /v1/models, as the compose healthcheck does every few seconds.

llama-cpp-python's server ends a running stream whenever another request arrives unless
``interrupt_requests`` is off; with it on, this test fails with "ended before its last event"
(the first compose smoke runs' 503). ~15 s: model load plus up to 160 tokens.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from core.paths import Paths
from core.types import Message
from rag.generate.models import model_path
from rag.generate.openai_compat import OpenAICompatGenerator
from tests.helpers import free_port, wait_until_ready

pytestmark = pytest.mark.e2e
ENTRY = Path(__file__).resolve().parents[2] / "scripts/compose/llm_entry.py"


@pytest.fixture
def stand_in(tmp_path):
    port = free_port()
    model = model_path(Paths.from_env().model_dir)
    command = [sys.executable, str(ENTRY), "--model", str(model), "--host", "127.0.0.1"]
    command += ["--port", str(port), "--ctx-size", "2048", "--threads", "2"]
    log = tmp_path / "llm.log"  # a file, not a pipe: llama.cpp's load log would fill a pipe and block
    server = subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_until_ready(server, f"{url}/models", 120, log.read_text)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_streamed_answer_finishes_while_the_healthcheck_asks_for_models(stand_in):
    generator = OpenAICompatGenerator(stand_in, "medcite", timeout_s=300)
    prompt = [Message("user", "Describe atrial fibrillation in ten numbered sentences.")]
    polled: list[int] = []
    healthcheck = threading.Thread(
        target=lambda: polled.append(httpx.get(f"{stand_in}/models", timeout=300).status_code)
    )
    pieces_after_the_healthcheck = 0
    try:
        for n, _ in enumerate(generator.stream(prompt, max_tokens=160)):  # raises if cut short
            if n == 0:  # the answer has begun: the healthcheck asks while it is being generated
                healthcheck.start()
            else:
                pieces_after_the_healthcheck += 1
    finally:
        generator.close()
    healthcheck.join(timeout=300)
    assert polled == [200]
    assert pieces_after_the_healthcheck >= 20  # the answer went on after the other request arrived
