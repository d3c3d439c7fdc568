"""Index build throughput with the local engine and the Ray engine at 1 and 2 workers.

The same real corpus (default: orphanet, ~54k chunks) is built three times, each in a child
process of its own with an EMPTY embedding cache (a fresh cache folder per run, so every chunk is
embedded) and the same shard count: ``local``, ``ray`` with 1 embedder actor and ``ray`` with 2.
Ray starts a local instance in each Ray run (its start-up is in the wall time, not in the build
time). Reported per run: chunks/s over the whole build and over the embedding stage, stage
seconds, and peak memory of the whole process tree (the driver plus Ray's processes, sampled),
with the load average before and after (other jobs share this machine).

    medcite bench ray-build [--sources orphanet] [--shards 1] [--runs local,ray1,ray2]

Results: docs/results/bench/scale/ray_build.json, written after each run; runs already there for the
same sources and shards are kept, so ``--runs ray2`` completes an interrupted benchmark.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import RESULTS_DIR, PeakSampler, child_entry, run_child, tree_rss_mb, write_result

WORK = Path("data/bench/scale/ray_build")
RUNS = {"local": ("local", 1), "ray1": ("ray", 1), "ray2": ("ray", 2)}


def child(args: dict[str, Any]) -> dict[str, Any]:
    """One build in this process: ``args`` = run, sources, shards."""
    from core.paths import Paths
    from corpora.build import BuildConfig, build_index
    from corpora.catalog import open_source
    from corpora.chunking import WordpieceSpans
    from corpora.engine import BuildEngine, LocalEngine
    from corpora.engine_ray import RayEngine
    from indexes.dense.embedder import MiniLmEmbedder

    engine_name, workers = RUNS[args["run"]]
    folder = WORK / args["run"]
    shutil.rmtree(folder, ignore_errors=True)
    paths = Paths.from_env()
    sources = [open_source(name, paths) for name in args["sources"]]
    embedder = MiniLmEmbedder()
    spans = WordpieceSpans(embedder.model_path / "tokenizer.json")
    engine: BuildEngine = LocalEngine() if engine_name == "local" else RayEngine(workers=workers)
    load_before = os.getloadavg()
    started = time.perf_counter()
    with PeakSampler(0.5, read=tree_rss_mb) as sampler:
        report = build_index(
            sources,
            BuildConfig(name="bench", shards=args["shards"]),
            folder / "indexes",
            spans=spans,
            tokenizer_name=spans.name,
            embedder=embedder,
            cache_dir=folder / "cache",
            progress=False,
            engine=engine,
        )
    wall = time.perf_counter() - started
    manifest = report.manifest
    seconds = manifest["build"]["seconds"]
    chunks = manifest["counts"]["chunks"]
    shutil.rmtree(folder, ignore_errors=True)
    return {
        "run": args["run"],
        "engine": engine_name,
        "workers": workers,
        "chunks": chunks,
        "embedded": chunks - manifest["counts"]["embeddings_from_cache"],
        "wall_s": round(wall, 1),
        "build_s": round(seconds["total"], 1),
        "seconds": {k: round(v, 2) for k, v in seconds.items()},
        "chunks_per_s": round(chunks / seconds["total"], 2),
        "embed_chunks_per_s": round(chunks / seconds["embed"], 2),
        "peak_tree_rss_mb": round(sampler.peak_mb, 1),
        "driver_peak_rss_mb": round(manifest["build"]["peak_rss_mb"], 1),
        "load_average_1m": {"before": round(load_before[0], 2), "after": round(os.getloadavg()[0], 2)},
    }


def summary(runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Ray overhead at 1 worker vs local, and 2-worker scaling efficiency (speed-up / 2)."""
    out: dict[str, Any] = {}
    if "local" in runs and "ray1" in runs:
        out["ray1_overhead_vs_local"] = round(
            runs["local"]["chunks_per_s"] / runs["ray1"]["chunks_per_s"] - 1, 3
        )
    if "ray1" in runs and "ray2" in runs:
        speedup = runs["ray2"]["chunks_per_s"] / runs["ray1"]["chunks_per_s"]
        out["ray2_speedup_vs_ray1"] = round(speedup, 3)
        out["ray2_scaling_efficiency"] = round(speedup / 2, 3)
    return out


def _earlier_runs(sources: list[str], shards: int) -> dict[str, dict[str, Any]]:
    """Runs already in the results file for the same corpus and shards (``--runs ray2`` adds one)."""
    path = RESULTS_DIR / "ray_build.json"
    if not path.is_file():
        return {}
    earlier = json.loads(path.read_text())
    same = earlier.get("sources") == sources and earlier.get("shards") == shards
    return dict(earlier.get("runs", {})) if same else {}


def main(argv: list[str] | None = None) -> None:
    """``medcite bench NAME ARGS`` calls this with no argument: the flags are in ``sys.argv``."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", default="orphanet", help="comma-separated source names")
    parser.add_argument("--shards", type=int, default=1)
    parser.add_argument("--runs", default="local,ray1,ray2")
    args = parser.parse_args(argv)
    runs = _earlier_runs(args.sources.split(","), args.shards)
    for name in args.runs.split(","):
        wanted = {"run": name, "sources": args.sources.split(","), "shards": args.shards}
        runs[name] = run_child("bench.scale.ray_build", wanted, timeout_s=5400)
        print(runs[name], flush=True)
        payload = {
            "sources": wanted["sources"],
            "shards": args.shards,
            "runs": runs,
            "summary": summary(runs),
        }
        write_result("ray_build", payload)


if __name__ == "__main__" and not child_entry(sys.argv[1:], child):
    main(sys.argv[1:])
