"""The mixed loopback load against the real server: real embedder, index and local model.

Starts ``medcite serve`` (production mode, 32 API keys, default queue and rate limits, profile
``fast`` on the default index), warms it, reads its memory, runs ``bench/serving/load_mix.py``'s load
(32 clients, 60 s, a quarter of requests streamed chat) twice back to back, reading its memory
after each phase: growth that stops after the first phase is warm-up (thread arenas, buffers),
growth that goes on would be a leak. Server and clients share the
machine's cores, so the numbers are a lower bound on what the server alone could do.

    medcite bench load-test --out docs/results/load_test.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.common import machine_info
from bench.retrieval.query_latency import sample_questions
from bench.serving.api_latency import free_port, rss_mb, start_server
from bench.serving.load_mix import mixed_load
from core.paths import Paths

KEYS = [f"bench-client-{n:02d}-0123456789abcdef" for n in range(32)]


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--chat-share", type=float, default=0.25)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--profile", default="fast")
    parser.add_argument("--phases", type=int, default=2, help="load phases back to back; memory after each")
    parser.add_argument("--out", type=Path, required=True)
    return parser


def _measure(args: argparse.Namespace, url: str, pid: int) -> dict[str, Any]:
    """Warm the server, answer once, run the load phases; memory after each step and the queue."""
    questions = sample_questions(Paths.from_env(), "medquad", 300, seed=2)
    headers = {"Authorization": f"Bearer {KEYS[0]}"}
    for q in questions[:5]:  # warm the embedder and the index pages
        httpx.post(f"{url}/v1/retrieve", json={"query": q, "k": 10}, headers=headers, timeout=60)
    rss_retrieval_warm = rss_mb(pid)
    # One answer first: llama.cpp allocates its working buffers at the first generation
    # (measured: +319 MB), which is start-up, not growth under load.
    chat = {"messages": [{"role": "user", "content": questions[0]}], "max_tokens": args.max_tokens}
    httpx.post(f"{url}/v1/chat/completions", json=chat, headers=headers, timeout=600)
    rss_ready = rss_mb(pid)
    loads, rss_after_phase = [], []
    for phase in range(args.phases):  # memory that keeps growing phase after phase would be a leak
        loads.append(
            asyncio.run(
                mixed_load(
                    url,
                    KEYS,
                    questions,
                    clients=args.clients,
                    seconds=args.seconds,
                    chat_share=args.chat_share,
                    max_tokens=args.max_tokens,
                    seed=phase,
                )
            )
        )
        rss_after_phase.append(round(rss_mb(pid)))
    rss_after = rss_after_phase[-1]
    ready = httpx.get(f"{url}/ready", timeout=30).json()
    return {
        "rss_retrieval_warm": rss_retrieval_warm,
        "rss_ready": rss_ready,
        "rss_after_phase": rss_after_phase,
        "rss_after": rss_after,
        "loads": loads,
        "ready": ready,
    }


def _result(args: argparse.Namespace, measured: dict[str, Any]) -> dict[str, Any]:
    rss_ready = measured["rss_ready"]
    return {
        "machine": machine_info(),
        "loadavg_1min_at_end": round(os.getloadavg()[0], 2),
        "server": {
            "profile": args.profile,
            "index": "default",
            "queue_at_end": measured["ready"]["queue"],
            "rss_mb": {
                "after_retrieval_warmup": round(measured["rss_retrieval_warm"]),
                "after_first_answer": round(rss_ready),
                "after_each_phase": measured["rss_after_phase"],
                "growth_under_load": round(measured["rss_after"] - rss_ready),
            },
        },
        "load": measured["loads"],
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }


def main() -> None:
    args = parser().parse_args()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {"MEDCITE_ENV": "production", "MEDCITE_API_KEYS": ",".join(KEYS)}
    server = start_server(args.profile, port, env)
    try:
        measured = _measure(args, url, server.pid)
    finally:
        server.terminate()
        server.wait(timeout=120)
    result = _result(args, measured)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
