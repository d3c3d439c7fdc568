"""A bounded loopback load of mixed traffic: /v1/retrieve and streamed chat completions.

Each of ``clients`` concurrent clients (its own API key when several are given) loops until
``seconds`` have passed, sending a streamed chat completion with probability ``chat_share`` and
a retrieval otherwise. A streamed answer counts as completed only when it ends in ``data: [DONE]``
with no error event before it. 429 (queue full or rate limit) is the server refusing on purpose:
counted apart from errors, and the client backs off briefly as a polite client would. Anything
else — another status, a broken stream, a transport error — is an error. Loopback only: the
caller passes a 127.0.0.1 URL of a server it started.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from bench.common import percentile

BACKOFF_S = 0.5  # after a 429: long enough not to spin, short enough to keep the load on


@dataclass
class Tally:
    """What one kind of request got: latencies of successes, refusals, errors by cause."""

    latencies_s: list[float] = field(default_factory=list)
    first_byte_s: list[float] = field(default_factory=list)
    refused: int = 0
    errors: dict[str, int] = field(default_factory=dict)

    def error(self, cause: str) -> None:
        self.errors[cause] = self.errors.get(cause, 0) + 1

    def summary(self, wall_s: float) -> dict[str, Any]:
        ok = len(self.latencies_s)
        out: dict[str, Any] = {
            "completed": ok,
            "refused_429": self.refused,
            "errors": dict(self.errors),
            "throughput_per_s": round(ok / wall_s, 2),
        }
        for name, values in (("latency_ms", self.latencies_s), ("first_byte_ms", self.first_byte_s)):
            if values:
                out[name] = {f"p{q}": round(percentile(values, q) * 1000, 1) for q in (50, 90, 95, 99)} | {
                    "max": round(max(values) * 1000, 1)
                }
        return out


async def _retrieve(http: httpx.AsyncClient, headers: dict[str, str], query: str, tally: Tally) -> None:
    start = time.perf_counter()
    response = await http.post("/v1/retrieve", json={"query": query, "k": 10}, headers=headers)
    if response.status_code == 200 and isinstance(response.json().get("data"), list):
        tally.latencies_s.append(time.perf_counter() - start)
    elif response.status_code == 429:
        tally.refused += 1
        await asyncio.sleep(BACKOFF_S)
    else:
        tally.error(f"retrieve {response.status_code}")


async def _chat(
    http: httpx.AsyncClient, headers: dict[str, str], question: str, max_tokens: int, tally: Tally
) -> None:
    body = {
        "messages": [{"role": "user", "content": question}],
        "stream": True,
        "max_tokens": max_tokens,
    }
    start = time.perf_counter()
    async with http.stream("POST", "/v1/chat/completions", json=body, headers=headers) as response:
        if response.status_code == 429:
            await response.aread()
            tally.refused += 1
            await asyncio.sleep(BACKOFF_S)
            return
        if response.status_code != 200:
            await response.aread()
            tally.error(f"chat {response.status_code}")
            return
        first: float | None = None
        done = failed = False
        async for line in response.aiter_lines():
            if not line.startswith("data: "):
                continue
            first = first if first is not None else time.perf_counter() - start
            data = line.removeprefix("data: ")
            if data == "[DONE]":
                done = True
            elif "error" in json.loads(data):
                failed = True
    if failed or not done:
        tally.error("chat stream error event" if failed else "chat stream ended without [DONE]")
        return
    tally.latencies_s.append(time.perf_counter() - start)
    if first is not None:
        tally.first_byte_s.append(first)


async def mixed_load(
    url: str,
    keys: Sequence[str],
    questions: Sequence[str],
    *,
    clients: int = 32,
    seconds: float = 60.0,
    chat_share: float = 0.25,
    max_tokens: int = 32,
    timeout_s: float = 600.0,
    seed: int = 0,
) -> dict[str, Any]:
    """Run the load and return per-kind throughput, latency percentiles, refusals and errors."""
    if not url.startswith(("http://127.", "http://localhost", "http://[::1]")):
        raise ValueError(f"load tests target loopback servers only, not {url}")
    tallies = {"retrieve": Tally(), "chat": Tally()}
    end = time.monotonic() + seconds

    async def client(n: int) -> None:
        rng = random.Random(seed * 1000 + n)
        headers = {"Authorization": f"Bearer {keys[n % len(keys)]}"}
        async with httpx.AsyncClient(base_url=url, timeout=timeout_s) as http:
            while time.monotonic() < end:
                question = questions[rng.randrange(len(questions))]
                kind = "chat" if rng.random() < chat_share else "retrieve"
                try:
                    if kind == "chat":
                        await _chat(http, headers, question, max_tokens, tallies[kind])
                    else:
                        await _retrieve(http, headers, question, tallies[kind])
                except httpx.HTTPError as exc:
                    tallies[kind].error(f"{kind} {type(exc).__name__}")

    started = time.monotonic()
    await asyncio.gather(*(client(n) for n in range(clients)))
    wall = time.monotonic() - started  # past `seconds` by the requests still running at the end
    return {
        "clients": clients,
        "seconds": seconds,
        "wall_s": round(wall, 1),
        "chat_share": chat_share,
        "max_tokens": max_tokens,
        **{kind: t.summary(wall) for kind, t in tallies.items()},
        "errors_total": sum(sum(t.errors.values()) for t in tallies.values()),
    }
