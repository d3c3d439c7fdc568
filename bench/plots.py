"""The PNG plots of docs/benchmarks.md, drawn from the result JSON (matplotlib, no display)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

Results = dict[str, dict[str, Any]]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    _pyplot().close(fig)
    return path


def grouped_bars(ax: Any, groups: list[str], series: dict[str, list[float | None]], log: bool = True) -> None:
    width = 0.8 / max(len(series), 1)
    for i, (name, values) in enumerate(series.items()):
        xs = [g + i * width for g, v in enumerate(values) if v is not None]
        ax.bar(xs, [v for v in values if v is not None], width, label=name)
    ax.set_xticks([g + 0.4 - width / 2 for g in range(len(groups))], groups)
    if log:
        ax.set_yscale("log")
    ax.legend(fontsize=8)


def lexical(results: Results, sizes: list[str], out: Path) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    names = ["medcite-bm25s", "rank-bm25", "langchain-bm25"]
    series = {
        n: [results[f"lexical_{s}"]["latency_paired"].get(n, {}).get("median_ms") for s in sizes]
        for n in names
    }
    grouped_bars(ax, sizes, series)
    ax.set_ylabel("median query latency (ms, log)")
    ax.set_title("BM25 query latency, same tokens, 1 thread")
    return _save(fig, out / "lexical_latency.png")


def dense(results: Results, sizes: list[str], out: Path) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for s in sizes:
        r = results[f"dense_{s}"]
        sweep = r["sweeps"]["hnsw_ef_search"]
        ax.plot([p["median_ms"] for p in sweep], [p["recall_at_10"] for p in sweep], "o-", label=f"HNSW {s}")
        ax.plot([r["exact_search_only"]["median_ms"]], [1.0], "s", label=f"exact (flat) {s}")
        for p in r["sweeps"].get("ivfpq_nprobe", []):
            ax.plot([p["median_ms"]], [p["recall_at_10"]], "^", color="grey")
    if any("ivfpq_nprobe" in results[f"dense_{s}"]["sweeps"] for s in sizes):
        ax.plot([], [], "^", color="grey", label="IVF-PQ (nprobe sweep)")
    ax.set_xscale("log")
    ax.set_xlabel("median search latency, vector given (ms, log)")
    ax.set_ylabel("recall@10 vs exact")
    ax.set_title("Dense: recall vs latency (efSearch 32-256), 1 thread")
    ax.legend(fontsize=7, ncol=2)
    return _save(fig, out / "dense_recall_latency.png")


def hybrid(results: Results, sizes: list[str], out: Path) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    stages = list(results[f"hybrid_{sizes[0]}"]["stages"])
    bottom = np.zeros(len(sizes))
    for stage in stages:
        if stage.startswith("flat"):
            continue
        values = np.array([results[f"hybrid_{s}"]["stages"][stage]["median_ms"] for s in sizes])
        ax.bar(sizes, values, bottom=bottom, label=stage)
        bottom += values
    totals = [results[f"hybrid_{s}"]["latency"]["hybrid-hnsw"]["median_ms"] for s in sizes]
    ax.plot(sizes, totals, "kD", label="hybrid (HNSW) end to end")
    ax.set_ylabel("median ms")
    ax.set_title("Hybrid retrieval by stage (HNSW), 1 thread")
    ax.legend(fontsize=7)
    return _save(fig, out / "hybrid_stages.png")


def memory(results: Results, sizes: list[str], out: Path) -> Path:
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, kind in zip(axes, ("lexical", "dense"), strict=True):
        names = sorted({n for s in sizes for n in results[f"{kind}_{s}"]["memory"]})
        series = {
            n: [results[f"{kind}_{s}"]["memory"].get(n, {}).get("index_mb") for s in sizes] for n in names
        }
        grouped_bars(ax, sizes, series)
        ax.set_ylabel("serving RSS over a bare process (MB, log)")
        ax.set_title(f"{kind}: memory per contender (own process)")
    return _save(fig, out / "memory.png")
