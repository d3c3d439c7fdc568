"""Eval throughput (items/s) with the local engine and ``--engine ray`` at 1 and 2 workers.

The same small MedQA sample (default 10 items, seed 0) under two conditions, closed-book and RAG
(BM25 top 1 of a small BM25 index of Open Medicine built here), so 2n items per run, is answered:

- with the local model (profile ``fast``: the default profile's llama.cpp Qwen2.5 1.5B, without
  the reranker and verifier an MCQ run does not use; one thread per process, the default here):
  ``local`` (this process), ``ray1`` and ``ray2`` (actors, each loading the model);
- with a pool of two OpenAI-compatible servers (``python -m llama_cpp.server`` on the same GGUF, one
  thread each; extra ``llm-server``): ``pool1`` and ``pool2`` (Ray workers, one item per server).

Every run starts with an EMPTY generation cache (a fresh data folder; the index is shared), so every
item is a model call. Reported per run: wall seconds (actor start and model load included),
items/s, the median item latency, model calls, the share of predictions equal to the local run's,
and the load average before and after (other jobs share this machine). Ray starts once (timed).

    medcite bench ray-eval [--n 10] [--runs local,ray1,ray2,pool1,pool2]

Results: docs/results/bench/scale/ray_eval.json (written after each run, so a partial run is kept).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from bench.common import write_result

WORK = Path("data/bench/scale/ray_eval")
RUNS = ("local", "ray1", "ray2", "pool1", "pool2")


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def prepare(n: int) -> tuple[Any, Any]:
    """A fresh work folder with a BM25 index, and the eval config."""
    from core.paths import Paths
    from evals.engine.config import EvalConfig
    from rag.indexing import build_from_cli

    shutil.rmtree(WORK, ignore_errors=True)
    paths = Paths.from_env().model_copy(update={"data_dir": WORK / "index"})
    build_from_cli(paths, sources=["open-medicine"], limit=200, dense=None, progress=False)
    grid = {"index": ["default"], "mode": ["bm25"], "rerank": ["none"], "k": [1], "closed_book": True}
    config = EvalConfig.model_validate(
        {
            "name": "ray-eval",
            "profile": "fast",
            "seed": 0,
            "grid": grid,
            "mcq": [{"dataset": "medqa", "n": n}],
        }
    )
    return paths, config


def fresh(paths: Any, name: str) -> Any:
    """A data folder with an empty cache that shares the index."""
    folder = WORK / name
    folder.mkdir(parents=True)
    os.symlink((paths.indexes_dir).resolve(), folder / "indexes")
    return paths.model_copy(update={"data_dir": folder})


@contextmanager
def servers(model: Path, ports: tuple[int, ...]) -> Any:
    """OpenAI-compatible llama.cpp servers, one thread each; yields their base URLs once they answer."""
    with ExitStack() as stack:
        urls = []
        for port in ports:
            log = stack.enter_context((WORK / f"server-{port}.log").open("w"))
            cmd = [
                sys.executable,
                "-m",
                "llama_cpp.server",
                "--model",
                str(model),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--n_threads",
                "1",
                "--n_threads_batch",
                "1",
                "--n_ctx",
                "4096",
            ]
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
            stack.callback(proc.wait, 30)
            stack.callback(proc.terminate)
            urls.append(f"http://127.0.0.1:{port}/v1")
        for url in urls:
            deadline = time.monotonic() + 180
            while True:
                try:
                    with urllib.request.urlopen(f"{url}/models", timeout=5):
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{url} did not start; see {WORK}/server-*.log") from None
                    time.sleep(1)
        yield urls


def measure(name: str, config: Any, paths: Any, engine: Any) -> dict[str, Any]:
    from evals.engine.runner import run_eval
    from evals.records import read_records

    before = load()
    start = time.perf_counter()
    summary = run_eval(config, paths, out=WORK / name / "run", progress=False, engine=engine)
    wall = time.perf_counter() - start
    records = list(read_records(WORK / name / "run" / "records.jsonl"))
    items = sum(c.answered for c in summary.conditions.values())
    return {
        "run": name,
        "workers": getattr(engine, "workers", 0),
        "servers": len(getattr(engine, "servers", ())),
        "items": items,
        "failed": sum(c.failed for c in summary.conditions.values()),
        "model_calls": sum(c.cache_misses for c in summary.conditions.values()),
        "wall_s": round(wall, 1),
        "items_per_s": round(items / wall, 4),
        "median_item_latency_s": round(statistics.median(r.latency_s for r in records), 2),
        "load_before": before,
        "load_after": load(),
        "predictions": {f"{r.condition}|{r.qid}": r.pred for r in records},
        "option_probs": {f"{r.condition}|{r.qid}": dict(r.option_probs or {}) for r in records},
    }


def shown(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in ("predictions", "option_probs")}


def agreements(results: dict[str, Any]) -> dict[str, Any]:
    """Each run's share of predictions equal to the local run's (once there is one)."""
    reference = next((r for r in results["runs"] if r["run"] == "local"), None)
    for run in results["runs"]:
        if reference is not None:
            keys = reference["predictions"].keys() & run["predictions"].keys()
            same = sum(run["predictions"][k] == reference["predictions"][k] for k in keys)
            run["same_predictions_as_local"] = round(same / len(keys), 4)
            diffs = [
                abs(p - reference["option_probs"][k].get(letter, 0.0))
                for k in keys
                for letter, p in run["option_probs"][k].items()
            ]
            run["max_option_prob_diff_vs_local"] = round(max(diffs, default=0.0), 4)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10, help="MedQA items (each answered closed-book and RAG)")
    parser.add_argument("--runs", default=",".join(RUNS), help="in this order (reverse it to see drift)")
    parser.add_argument("--name", default="ray_eval", help="result file docs/results/bench/<name>.json")
    args = parser.parse_args()
    runs = [r for r in args.runs.split(",") if r]

    from core.paths import Paths
    from evals.engine.engine_ray import RayEngine
    from rag.generate.models import DEFAULT_GENERATOR, model_path
    from rag.profile import PROFILES_DIR

    paths, config = prepare(args.n)
    gguf = model_path(Paths.from_env().model_dir, DEFAULT_GENERATOR)
    results: dict[str, Any] = {
        "n_mcq": args.n,
        "conditions": ["closed-book", "rag/default/bm25/none/k=1"],
        "model": gguf.name,
        "runs": [],
    }
    import ray

    start = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    results["ray_init_s"] = round(time.perf_counter() - start, 1)
    try:
        for name in runs:
            if name.startswith("pool"):
                continue
            engine = None if name == "local" else RayEngine(workers=int(name[-1]))
            row = measure(name, config, fresh(paths, name), engine)
            results["runs"].append(row)
            write_result(args.name, agreements(results))
            print(shown(row), flush=True)
        pools = [r for r in runs if r.startswith("pool")]
        if pools:
            with servers(gguf, (18091, 18092)) as urls:
                profile = WORK / "pool.toml"
                openai = f'backend = "openai"\nbase_url = "{urls[0]}"\nmodel = "qwen"'
                fast = (PROFILES_DIR / "fast.toml").read_text()
                profile.write_text(fast.replace('backend = "llama-cpp"', openai))
                pool_config = config.model_copy(update={"profile": str(profile)})
                for name in pools:
                    engine = RayEngine(workers=int(name[-1]), servers=tuple(urls), per_server=1)
                    row = measure(name, pool_config, fresh(paths, name), engine)
                    results["runs"].append(row)
                    write_result(args.name, agreements(results))
                    print(shown(row), flush=True)
    finally:
        ray.shutdown()
    print(write_result(args.name, agreements(results)))


if __name__ == "__main__":
    main()
