"""Reranking, generation and ask latency: a summary of the measured ten-question runs plus ONE
short new measurement of the local generator's prompt and output token rates.

The summary reads ``docs/results/ask_10_questions*.json`` (real runs of ``bench/answers/ask_questions.py``:
the first with an empty rerank cache, the second with every judgement cached). The new
measurement builds one real RAG prompt (the first ask question, BM25 top 4 of the default
index, medcite's own prompt), times a 1-token completion (prompt processing), then the same
prompt again with 48 tokens: llama.cpp reuses the evaluated prefix, so that call is almost all
decoding. Skipped with ``--skip-llm``.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path("docs/results")
GENERATED_TOKENS = 48


def summarize_ask(path: Path) -> dict[str, Any]:
    """Per-stage medians, rerank seconds per candidate and a least-squares token-rate fit."""
    data = json.loads(path.read_text())
    answers = data["answers"]
    stages = ("retrieve", "rerank", "generate", "verify")
    out: dict[str, Any] = {
        "file": str(path),
        "questions": len(answers),
        "median_seconds": {
            s: round(statistics.median(a["timings"].get(s, 0.0) for a in answers), 3) for s in stages
        },
        "median_total_seconds": round(statistics.median(a["total_seconds"] for a in answers), 2),
    }
    calls = [(a["timings"]["rerank"], a["usage"]["rerank_generator_calls"]) for a in answers]
    hits = [(a["timings"]["rerank"], a["usage"]["rerank_cache_hits"]) for a in answers]
    if all(n > 0 for _, n in calls):
        out["rerank_seconds_per_candidate_uncached"] = round(statistics.median(t / n for t, n in calls), 2)
    if all(n > 0 for _, n in hits):
        out["rerank_ms_per_candidate_cached"] = round(1000 * statistics.median(t / n for t, n in hits), 3)
    gen = [a for a in answers if "generate" in a["timings"] and a["usage"].get("prompt_tokens")]
    if len(gen) >= 3:
        # generate seconds ~ prompt_tokens / prompt_rate + completion_tokens / output_rate
        design = np.array(
            [[a["usage"]["prompt_tokens"], a["usage"]["completion_tokens"]] for a in gen], float
        )
        seconds = np.array([a["timings"]["generate"] for a in gen])
        (per_prompt, per_output), *_ = np.linalg.lstsq(design, seconds, rcond=None)
        out["fit_from_generate_stage"] = {
            "answers": len(gen),
            "prompt_tokens_per_s": round(1 / per_prompt, 1) if per_prompt > 0 else None,
            "output_tokens_per_s": round(1 / per_output, 1) if per_output > 0 else None,
            "median_prompt_tokens": int(statistics.median(a["usage"]["prompt_tokens"] for a in gen)),
            "median_output_tokens": int(statistics.median(a["usage"]["completion_tokens"] for a in gen)),
        }
    return out


def measure(bandwidth_gbps: float) -> dict[str, Any]:
    """Prompt and output tokens/s of the default local model on one real RAG prompt (~1 minute)."""
    from bench.answers.ask_questions import QUESTIONS
    from core.paths import Paths
    from rag.generate.llamacpp import LlamaCppGenerator
    from rag.generate.models import model_path
    from rag.generate.prompts import rag_messages
    from rag.indexing import make_retriever, open_index

    paths = Paths.from_env()
    index, _ = open_index(paths, "default", with_embedder=False)
    hits = make_retriever(index, None, "bm25").retrieve(QUESTIONS[0], 4)
    messages = rag_messages(QUESTIONS[0], hits)
    index.close()
    path = model_path(paths.model_dir)
    generator = LlamaCppGenerator(path)
    t0 = time.perf_counter()
    generator.load()
    load_s = time.perf_counter() - t0
    first = generator.generate(messages, max_tokens=1)
    second = generator.generate(messages, max_tokens=GENERATED_TOKENS)
    # The second call re-evaluates only the prompt's last token; its time is the decoding.
    return {
        "model": path.name,
        "model_bytes": path.stat().st_size,
        "threads": generator.threads,
        "load_s": round(load_s, 2),
        "prompt_tokens": first.prompt_tokens,
        "prompt_s": round(first.seconds, 2),
        "prompt_tokens_per_s": round(first.prompt_tokens / first.seconds, 1),
        "output_tokens": second.completion_tokens,
        "output_s": round(second.seconds, 2),
        "output_tokens_per_s": round(second.completion_tokens / second.seconds, 2),
        "floor": {
            "copy_bandwidth_gbps": bandwidth_gbps,
            "decode_floor_s_per_token": round(path.stat().st_size / (bandwidth_gbps * 1e9), 4),
            "decode_ceiling_tokens_per_s": round(bandwidth_gbps * 1e9 / path.stat().st_size, 1),
            "note": "each output token streams every weight once: model bytes / bandwidth",
        },
    }


def run(*, skip_llm: bool, bandwidth_gbps: float) -> dict[str, Any]:
    out: dict[str, Any] = {
        "uncached_rerank_run": summarize_ask(RESULTS / "ask_10_questions_before_prompt_fix.json"),
        "cached_rerank_run": summarize_ask(RESULTS / "ask_10_questions.json"),
    }
    out["new_measurement"] = None if skip_llm else measure(bandwidth_gbps)
    return out
