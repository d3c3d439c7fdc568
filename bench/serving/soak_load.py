"""The soak benchmark's traffic: the question mix, one request of each kind, the clients, the sampler.

Kinds of request (``EXPECTED`` gives each one's status): questions the index answers
(``answerable``), far off-topic ones (``unanswerable``), a follow-up in a conversation
(``multi_turn``), a closed-book question the local model generates (``closed_book``: the kind
that runs the generator), malformed bodies, bodies over the server's size limit and a wrong
API key. Chat requests are streamed or not at random. An answer (text and citations; a stream's
pieces joined) is compared with the single-client reference of the same request body. Every
request is bounded by ``timeout_s`` in all, every client by ``max_requests``, the load by its
end time. The sampler reads the server's RSS, open file descriptors and threads (psutil).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.serving.soak_stats import Request

EXPECTED = {
    "answerable": 200,
    "unanswerable": 200,
    "multi_turn": 200,
    "closed_book": 200,
    "malformed": 400,
    "oversized": 413,
    "wrong_key": 401,
}
MALFORMED = (
    b"{not json",
    b'{"messages": "hello"}',
    b'{"messages": []}',
    b'{"messages": [{"role": "assistant", "content": "hi"}]}',
    b"[]",
    b'{"messages": [{"role": "user", "content": 5}]}',
)
OVERSIZED_BYTES = 128 * 1024  # twice the server's default body limit (MEDCITE_MAX_BODY_BYTES)
WRONG_KEY = "soak-wrong-key-0123456789abcdef"
CHAT = "/v1/chat/completions"
# most requests end quickly (quoted, abstained or refused); a few run the generator
WEIGHTS = {
    "answerable": 0.40,
    "unanswerable": 0.18,
    "multi_turn": 0.12,
    "closed_book": 0.04,
    "malformed": 0.10,
    "oversized": 0.08,
    "wrong_key": 0.08,
}


@dataclass(frozen=True)
class Mix:
    """The questions and how often each kind is sent; ``--mix FILE`` reads one from JSON."""

    answerable: list[str]
    unanswerable: list[str]
    conversations: list[list[dict[str, str]]]  # each ends with the user's follow-up question
    closed_book: list[str]
    kill: str  # the closed-book question streamed when the server is killed
    weights: dict[str, float] = field(default_factory=lambda: dict(WEIGHTS))
    stream_share: float = 0.5
    max_tokens: int = 64

    @classmethod
    def load(cls, path: Path) -> Mix:
        try:
            mix = cls(**json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError) as exc:
            raise SystemExit(
                f"cannot read the question mix {path}: {exc}; see DEFAULT_MIX in {__file__}"
            ) from exc
        unknown = set(mix.weights) - set(EXPECTED)
        if unknown or min(mix.weights.values(), default=0) < 0 or not any(mix.weights.values()):
            raise SystemExit(
                f"mix weights must be shares (>= 0, not all 0) of kinds among {sorted(EXPECTED)}; "
                f"got {mix.weights}"
            )
        return mix

    def bodies(self) -> dict[str, list[dict[str, Any]]]:
        """The chat request bodies of each answered kind (without ``stream``)."""

        def body(messages: list[dict[str, str]], **more: Any) -> dict[str, Any]:
            return {"messages": messages, "max_tokens": self.max_tokens, **more}

        return {
            "answerable": [body([{"role": "user", "content": q}]) for q in self.answerable],
            "unanswerable": [body([{"role": "user", "content": q}]) for q in self.unanswerable],
            "multi_turn": [body(list(c)) for c in self.conversations],
            "closed_book": [
                body([{"role": "user", "content": q}], closed_book=True) for q in self.closed_book
            ],
        }


# For the default index (bench/questions/, the README): each answerable one is quoted or gets
# the closest lines in 1-4 s warm, each unanswerable one is "nothing relevant" or closest lines.
DEFAULT_MIX = Mix(
    answerable=[
        "What INR should be targeted on warfarin for atrial fibrillation?",
        "What are the qSOFA criteria?",
        "How much aspirin should be chewed right away for suspected ACS chest pain?",
        "What oral antibiotic does the BTS guideline recommend first for low-severity CAP?",
        "What is the dose of apixaban for stroke prevention in atrial fibrillation?",
        "When should the second high-sensitivity troponin be drawn?",
    ],
    unanswerable=[
        "How do I true a bicycle wheel?",
        "What is the best way to season a cast iron pan?",
        "Who won the football world cup in 1998?",
    ],
    conversations=[
        [
            {
                "role": "user",
                "content": "What is the dose of apixaban for stroke prevention in atrial fibrillation?",
            },
            {"role": "assistant", "content": "Apixaban 5 mg twice daily."},
            {"role": "user", "content": "When should it be reduced?"},
        ]
    ],
    closed_book=["What does the abbreviation ECG stand for?"],
    kill="List the common causes of chest pain.",
)


def body_key(body: dict[str, Any]) -> str:
    """The reference's key of a request: its body without ``stream``, in one spelling."""
    return json.dumps({k: v for k, v in body.items() if k != "stream"}, sort_keys=True)


def parse_events(lines: Iterable[str]) -> dict[str, Any]:
    """A chat stream's content joined, its final chunk's citations and outcome, an error event's
    type and whether ``[DONE]`` came."""
    text, final, error, done = "", None, None, False
    for line in lines:
        if not line.startswith("data: "):
            continue
        data = line.removeprefix("data: ")
        if data == "[DONE]":
            done = True
            continue
        event = json.loads(data)
        if "error" in event:
            error = event["error"].get("type", "error")
        for choice in event.get("choices", []):
            text += choice.get("delta", {}).get("content") or ""
        if "medcite" in event:
            final = event
    citations = final["citations"] if final else None
    outcome = final["medcite"]["outcome"] if final else None
    return {"text": text, "citations": citations, "outcome": outcome, "error": error, "done": done}


async def ask(
    http: httpx.AsyncClient, key: str, body: dict[str, Any]
) -> tuple[int, str, dict[str, Any] | None]:
    """One chat request: (status, outcome, answer as text and citations; None unless 200)."""
    headers = {"Authorization": f"Bearer {key}"}
    if not body.get("stream"):
        response = await http.post(CHAT, json=body, headers=headers)
        if response.status_code != 200:
            return response.status_code, f"http_{response.status_code}", None
        reply = response.json()
        answer = {"text": reply["choices"][0]["message"]["content"], "citations": reply["citations"]}
        return 200, reply["medcite"]["outcome"], answer
    async with http.stream("POST", CHAT, json=body, headers=headers) as response:
        if response.status_code != 200:
            await response.aread()
            return response.status_code, f"http_{response.status_code}", None
        got = parse_events([line async for line in response.aiter_lines()])
    if got["error"] or not got["done"] or got["outcome"] is None:
        return 200, f"stream_{got['error'] or 'cut'}", None
    return 200, got["outcome"], {"text": got["text"], "citations": got["citations"]}


async def refused(http: httpx.AsyncClient, key: str, kind: str, rng: random.Random) -> tuple[int, str]:
    """One request the server must refuse: a malformed body, an oversized one, a wrong key."""
    headers = {"Authorization": f"Bearer {WRONG_KEY if kind == 'wrong_key' else key}"}
    headers["Content-Type"] = "application/json"
    if kind == "malformed":
        content = rng.choice(MALFORMED)
    elif kind == "oversized":
        content = json.dumps({"messages": [{"role": "user", "content": "x" * OVERSIZED_BYTES}]}).encode()
    else:
        content = b'{"messages": [{"role": "user", "content": "What are the qSOFA criteria?"}]}'
    response = await http.post(CHAT, content=content, headers=headers)
    return response.status_code, f"http_{response.status_code}"


async def reference_answers(url: str, key: str, mix: Mix, timeout_s: float) -> dict[str, dict[str, Any]]:
    """Every answered request of the mix once, one at a time, not streamed: key -> the reply."""
    found: dict[str, dict[str, Any]] = {}
    async with httpx.AsyncClient(base_url=url, timeout=timeout_s) as http:
        for bodies in mix.bodies().values():
            for body in bodies:
                start = time.monotonic()
                status, outcome, answer = await asyncio.wait_for(ask(http, key, body), timeout_s)
                seconds = round(time.monotonic() - start, 2)
                found[body_key(body)] = {"status": status, "outcome": outcome, "answer": answer, "s": seconds}
    return found


@dataclass
class Load:
    """What the load produced: every request, the server samples, mismatch examples."""

    requests: list[Request] = field(default_factory=list)
    samples: list[dict[str, float]] = field(default_factory=list)
    mismatches: list[dict[str, Any]] = field(default_factory=list)
    wall_s: float = 0.0


@dataclass(frozen=True)
class LoadPlan:
    clients: int
    seconds: float
    sample_s: float
    timeout_s: float
    max_requests: int
    seed: int


async def one(
    http: httpx.AsyncClient, key: str, kind: str, body: dict[str, Any], rng: random.Random, timeout_s: float
) -> tuple[int, str, dict[str, Any] | None]:
    """One request of ``kind`` (a chat ``body``, or a refusal when it is empty), never raising:
    a transport error is status 0, a 200 that is not a chat reply has no answer."""
    try:
        if body:
            return await asyncio.wait_for(ask(http, key, body), timeout_s)
        status, outcome = await asyncio.wait_for(refused(http, key, kind, rng), timeout_s)
        return status, outcome, None
    except (httpx.HTTPError, TimeoutError) as exc:
        return 0, f"transport_{type(exc).__name__}", None
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        return 200, f"invalid_reply_{type(exc).__name__}", None


async def client(
    n: int,
    url: str,
    key: str,
    mix: Mix,
    refs: dict[str, dict[str, Any]],
    plan: LoadPlan,
    t0: float,
    load: Load,
) -> None:
    """One client: requests of random kinds, one after the other, until the end or its cap."""
    rng = random.Random(plan.seed * 1000 + n)
    bodies = mix.bodies()
    kinds = [k for k, w in mix.weights.items() if w > 0 and (k not in bodies or bodies[k])]
    weights = [mix.weights[k] for k in kinds]
    async with httpx.AsyncClient(base_url=url, timeout=plan.timeout_s) as http:
        for _ in range(plan.max_requests):
            start = time.monotonic()
            if start - t0 >= plan.seconds:
                return
            kind = rng.choices(kinds, weights)[0]
            body: dict[str, Any] = {}
            if kind in bodies:
                body = {**rng.choice(bodies[kind]), "stream": rng.random() < mix.stream_share}
            status, outcome, answer = await one(http, key, kind, body, rng, plan.timeout_s)
            reference = refs.get(body_key(body), {}).get("answer") if body else None
            # a 200 without a whole answer (a cut stream, an error event) differs from the reference too
            mismatch = status == 200 and bool(body) and answer != reference
            load.requests.append(
                Request(kind, start - t0, time.monotonic() - start, status, outcome, mismatch)
            )
            if mismatch and len(load.mismatches) < 5:
                load.mismatches.append(
                    {"request": body, "got": answer, "reference": reference, "outcome": outcome}
                )


def anon_mb(pid: int) -> float | None:
    """The anonymous part of a process's RSS (heap, arenas; not mapped files such as the model), MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def sample(pid: int, t0: float) -> dict[str, float]:
    """The server's resident memory (MB, all and anonymous), open file descriptors and threads now,
    and the machine's load."""
    import psutil

    process = psutil.Process(pid)
    with process.oneshot():
        reading = {"rss_mb": process.memory_info().rss / 2**20, "fds": process.num_fds()}
        reading["threads"] = process.num_threads()
    anon = anon_mb(pid)
    reading |= {"rss_anon_mb": anon} if anon is not None else {}
    return {"t_min": round((time.monotonic() - t0) / 60, 4), **reading, "load_1m": os.getloadavg()[0]}


async def sampler(
    pid: int, t0: float, every_s: float, stop: asyncio.Event, out: list[dict[str, float]]
) -> None:
    """A reading now and every ``every_s`` until ``stop``, and one then; none once the server is gone."""
    import psutil

    while True:
        try:
            out.append(sample(pid, t0))
        except psutil.Error:
            return  # the server died: its exit code is checked after the load
        try:
            await asyncio.wait_for(stop.wait(), every_s)
        except TimeoutError:
            continue
        with contextlib.suppress(psutil.Error):
            out.append(sample(pid, t0))
        return


async def run_load(
    url: str, pid: int, keys: Sequence[str], mix: Mix, refs: dict[str, dict[str, Any]], plan: LoadPlan
) -> Load:
    """``plan.clients`` clients for ``plan.seconds`` while the sampler reads the server."""
    load, stop = Load(), asyncio.Event()
    t0 = time.monotonic()
    watch = asyncio.create_task(sampler(pid, t0, plan.sample_s, stop, load.samples))
    clients = (client(n, url, keys[n], mix, refs, plan, t0, load) for n in range(plan.clients))
    try:
        # each request is bounded by timeout_s, so this bound is only a backstop
        await asyncio.wait_for(asyncio.gather(*clients), plan.seconds + 2 * plan.timeout_s + 60)
    finally:
        stop.set()
        await watch
    load.wall_s = round(time.monotonic() - t0, 1)
    return load
