"""HTTP API latency on loopback: /v1/retrieve under concurrent clients, and chat completions.

Starts ``medcite serve`` as a real process (development mode on 127.0.0.1), then
1. runs ``--clients`` concurrent clients posting /v1/retrieve (hybrid, k=10, real MedQuAD
   questions) for ``--seconds``; reports median/p95/p99 latency, throughput and every error;
2. asks ``--chat`` real questions per profile through the official openai client with
   ``stream=True``: time to first token, total time, and the server's stage timings.
The load clients share the 2 cores with the server, so the numbers are an upper bound.

    medcite bench api-latency --out docs/results/api_latency.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.retrieval.query_latency import sample_questions
from core.paths import Paths

CHAT_QUESTIONS = [
    "What is the first-line treatment for community-acquired pneumonia of low severity?",
    "How should hyperkalaemia be treated in chronic kidney disease?",
    "Which patients with heart failure should receive an SGLT2 inhibitor?",
]


def chat_questions(path: Path | None) -> list[str]:
    """The chat questions: the built-in three, or one a line from ``path``."""
    if path is None:
        return CHAT_QUESTIONS
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mb(pid: int) -> float:
    import psutil

    return float(psutil.Process(pid).memory_info().rss / 2**20)


def start_server(
    profiles: str, port: int, env: dict[str, str] | None = None, log: Path | None = None
) -> subprocess.Popen[bytes]:
    """``medcite serve`` on 127.0.0.1:port (development mode unless ``env`` says otherwise); its
    output appended to ``log``, or discarded."""
    env = {**os.environ, "MEDCITE_ENV": "development", "MEDCITE_PROFILES": profiles, **(env or {})}
    with open(log or os.devnull, "ab") as out:  # the child keeps its own copy of the descriptor
        process = subprocess.Popen(
            [sys.executable, "-m", "medcite", "serve", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if process.poll() is not None:
            where = f"see {log}" if log else "run it by hand to see why"
            raise SystemExit(f"medcite serve exited during start-up; {where}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/ready", timeout=2).status_code == 200:
                return process
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    process.kill()
    raise SystemExit("medcite serve did not become ready within 300 s")


async def retrieve_load(url: str, questions: list[str], clients: int, seconds: float) -> dict[str, Any]:
    latencies: list[float] = []
    errors: dict[str, int] = {}
    end = time.monotonic() + seconds

    async def client(n: int) -> None:
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            i = n
            while time.monotonic() < end:
                body = {"query": questions[i % len(questions)], "k": 10, "mode": "hybrid"}
                i += clients
                start = time.perf_counter()
                try:
                    response = await http.post("/v1/retrieve", json=body)
                    status = str(response.status_code)
                except httpx.HTTPError as exc:
                    status = type(exc).__name__
                latencies.append(time.perf_counter() - start)
                if status != "200":
                    errors[status] = errors.get(status, 0) + 1

    started = time.monotonic()
    await asyncio.gather(*(client(n) for n in range(clients)))
    wall = time.monotonic() - started
    ms = np.array(latencies) * 1000
    return {
        "clients": clients,
        "seconds": round(wall, 1),
        "requests": len(latencies),
        "throughput_rps": round(len(latencies) / wall, 1),
        "errors": errors,
        "median_ms": round(float(np.median(ms)), 1),
        "p95_ms": round(float(np.percentile(ms, 95)), 1),
        "p99_ms": round(float(np.percentile(ms, 99)), 1),
        "max_ms": round(float(ms.max()), 1),
    }


def chat_once(url: str, profile: str, question: str, max_tokens: int) -> dict[str, Any]:
    import openai

    client = openai.OpenAI(base_url=f"{url}/v1", api_key="development", max_retries=0, timeout=600)
    start = time.perf_counter()
    first = None
    final: dict[str, Any] = {}
    usage = None
    text = ""
    stream = client.chat.completions.create(
        model=profile,
        messages=[{"role": "user", "content": question}],
        max_tokens=max_tokens,
        stream=True,
        stream_options={"include_usage": True},
    )
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            first = first if first is not None else time.perf_counter() - start
            text += chunk.choices[0].delta.content
        if chunk.model_extra and chunk.model_extra.get("medcite"):
            final = chunk.model_extra
        if chunk.usage:
            usage = chunk.usage.model_dump()
    return {
        "profile": profile,
        "question": question,
        "ttft_s": round(first or 0.0, 2),
        "total_s": round(time.perf_counter() - start, 2),
        "mode": final["medcite"]["mode"],
        "citations": len(final["citations"]),
        "stage_s": final["medcite"]["timings"],
        "usage": usage,
        "answer": text,
    }


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="1,8", help="comma-separated: one load phase per value")
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--chat", type=int, default=len(CHAT_QUESTIONS), help="per profile; 0: none")
    parser.add_argument("--profiles", default="fast,default")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument(
        "--questions", type=Path, default=None, help="chat questions, one a line (default: three built in)"
    )
    parser.add_argument("--out", type=Path, required=True)
    return parser.parse_args()


def main() -> None:
    args = arguments()

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    t0 = time.perf_counter()
    server = start_server(args.profiles, port)
    try:
        startup_s = time.perf_counter() - t0
        rss_start = rss_mb(server.pid)
        questions = sample_questions(Paths.from_env(), "medquad", 500, seed=1)
        for q in questions[:5]:  # warm-up
            httpx.post(f"{url}/v1/retrieve", json={"query": q, "k": 10}, timeout=30)
        loads = []
        for clients in (int(c) for c in args.clients.split(",")):
            before = os.getloadavg()[0]
            load = asyncio.run(retrieve_load(url, questions, clients, args.seconds))
            load["loadavg_1min_before_after"] = [round(before, 2), round(os.getloadavg()[0], 2)]
            loads.append(load)
        rss_after_load = rss_mb(server.pid)
        chats = [
            chat_once(url, profile, q, args.max_tokens)
            for profile in args.profiles.split(",")
            for q in chat_questions(args.questions)[: args.chat]
        ]
        rss_end = rss_mb(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=60)
    result = {
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "server": {
            "profiles": args.profiles,
            "index": "default",
            "startup_to_ready_s": round(startup_s, 1),
            "rss_mb": {
                "ready": round(rss_start),
                "after_load": round(rss_after_load),
                "after_chat": round(rss_end),
            },
        },
        "retrieve_load": loads,
        "chat": chats,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "chat"}, indent=2))
    for c in chats:
        print(c["profile"], "ttft", c["ttft_s"], "total", c["total_s"], c["mode"], c["stage_s"])


if __name__ == "__main__":
    main()
