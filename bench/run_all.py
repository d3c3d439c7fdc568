"""Run every benchmark, write JSON under docs/results/bench/ and regenerate docs/benchmarks.md.

    medcite bench run-all [--sizes 10k,100k,1M] [--skip-llm] [--quick] [--rebuild]

Per size: the corpus folder (built once and reused while its settings are unchanged, unless
``--rebuild``), then lexical, dense and hybrid. Then embedding throughput, generation (one
short run of the local model unless ``--skip-llm``) and the report. ``--quick`` runs fewer
queries and a smaller embedding sample (for trying the scripts; its numbers are not for the docs
unless written elsewhere with ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import report
from bench.answers import generation
from bench.common import RESULTS_DIR, memory_bandwidth_gbps, write_result
from bench.retrieval import corpus, dense, embedding, hybrid, lexical, materialize
from core.paths import Paths

STEPS = ("lexical", "dense", "hybrid", "embedding", "generation")


def query_counts(size: str, quick: bool) -> dict[str, int]:
    """Queries per benchmark: rank-bm25 and LangChain take ~0.1-0.3 s per query at 100k, and an
    exact scan of 1M vectors ~0.1 s, so those runs use a prefix of the same question sample."""
    n = corpus.chunk_count(size)
    if quick:
        return {"all": 40, "slow": 20, "dense": 40, "hybrid": 40}
    return {
        "all": corpus.QUESTIONS,
        "slow": corpus.QUESTIONS if n <= 20_000 else 50,
        "dense": corpus.QUESTIONS if n <= 200_000 else 100,
        "hybrid": corpus.QUESTIONS if n <= 200_000 else 100,
    }


def attempt(name: str, out: Path, step: Callable[[], dict[str, Any]]) -> bool:
    """Run one benchmark and write ``<name>.json``; a failure is written as ``error_<name>.json``
    and the suite goes on, so one broken step does not lose a long run's other results."""
    t0 = time.perf_counter()
    try:
        result = step()
    except Exception as exc:  # noqa: BLE001 - recorded and reported, then the next step runs
        tail = traceback.format_exc().splitlines()[-12:]
        write_result(f"error_{name}", {"error": repr(exc), "traceback_tail": tail}, out)
        print(f"{name} FAILED: {exc!r}", flush=True)
        return False
    (out / f"error_{name}.json").unlink(missing_ok=True)
    write_result(name, {**result, "wall_s": round(time.perf_counter() - t0, 1)}, out)
    print(f"{name}: {time.perf_counter() - t0:.0f} s", flush=True)
    return True


def run_size(size: str, args: argparse.Namespace, bandwidth: float, out: Path) -> None:
    counts = query_counts(size, args.quick)
    params = materialize.dense_params(size)
    if not attempt(f"build_{size}", out, lambda: materialize.ensure(size, params, rebuild=args.rebuild)):
        return
    pool = corpus.load_pool(Paths.from_env().indexes_dir, materialize.bench_dir())
    synthetic = corpus.chunk_count(size) > pool.size
    steps: dict[str, Callable[[], dict[str, Any]]] = {
        "lexical": lambda: lexical.run(
            size, n_queries=counts["all"], n_slow=counts["slow"], bandwidth_gbps=bandwidth
        ),
        "dense": lambda: dense.run(
            size, n_queries=counts["dense"], bandwidth_gbps=bandwidth, ivfpq=synthetic
        ),
        "hybrid": lambda: hybrid.run(size, n_queries=counts["hybrid"]),
    }
    for name, step in steps.items():
        if name in args.steps:
            attempt(f"{name}_{size}", out, step)


def generation_result(args: argparse.Namespace, bandwidth: float) -> dict[str, Any]:
    result = generation.run(skip_llm=args.skip_llm, bandwidth_gbps=bandwidth)
    previous = args.out / "generation.json"
    if result["new_measurement"] is None and previous.is_file():  # --skip-llm keeps the last real run
        earlier = json.loads(previous.read_text())
        result["new_measurement"] = earlier.get("new_measurement")
        result["new_measurement_from"] = earlier.get("new_measurement_from") or earlier.get("created")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(corpus.SIZES))
    parser.add_argument("--skip-llm", action="store_true", help="no new run of the local generator")
    parser.add_argument("--quick", action="store_true", help="fewer queries, smaller embedding sample")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the corpus folders")
    parser.add_argument("--steps", default=",".join(STEPS), help=f"subset of {','.join(STEPS)}")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = parser.parse_args()
    args.steps = set(args.steps.split(","))
    started, load_start = time.perf_counter(), round(os.getloadavg()[0], 2)
    bandwidth = memory_bandwidth_gbps()
    write_result("machine", {"memory_bandwidth": bandwidth}, args.out)
    dense.query_vectors()  # embedded once, before any child needs them
    sizes = [s for s in args.sizes.split(",") if s]
    for size in sizes:
        run_size(size, args, bandwidth["copy_gbps"], args.out)
    if "embedding" in args.steps:
        attempt("embedding", args.out, lambda: embedding.run(200 if args.quick else embedding.SAMPLE))
    if "generation" in args.steps:
        attempt("generation", args.out, lambda: generation_result(args, bandwidth["copy_gbps"]))
    wall = time.perf_counter() - started
    argv = vars(args) | {"steps": sorted(args.steps), "out": str(args.out)}
    full = set(sizes) >= set(corpus.SIZES) and args.steps >= set(STEPS) and not args.quick
    # a partial run (one size, one step) keeps the record of the last full run's wall time
    record = {"argv": argv, "wall_s": round(wall, 1), "load_average_start": load_start}
    write_result("run" if full else "run_partial", record, args.out)
    report.write(args.out)
    print(f"all benchmarks: {wall / 60:.1f} min; report: {report.PAGE}", flush=True)


if __name__ == "__main__":
    main()
