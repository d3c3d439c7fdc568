"""The PNG plots of docs/benchmarks.md and docs/reliability.md (the soak), drawn from the result JSON
(matplotlib, no display)."""

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


def soak(result: dict[str, Any], path: Path) -> Path:
    """The soak over time (bench/serving/soak.py): the server's RSS with the line fitted after the
    warm-up, its threads and open files, and each window's p95 per outcome."""
    plt = _pyplot()
    fig, (mem, handles, lat) = plt.subplots(
        3, 1, figsize=(7, 7.5), sharex=True, gridspec_kw={"height_ratios": [3, 1.4, 3]}
    )
    samples, settings = result["samples"], result["settings"]
    t = [s["t_min"] for s in samples]
    mem.plot(t, [s["rss_mb"] for s in samples], ".-", ms=3, label="server RSS")
    warm = settings["warmup_minutes"]
    mem.axvspan(0, warm, color="grey", alpha=0.15, label="warm-up (not fitted)")
    fit = result["memory"].get("fit")
    if fit:
        xs = [warm, t[-1]]
        low, high = fit["ci95"]
        label = f"fit {fit['slope_mb_per_min']:+.2f} MB/min (95%: {low:+.2f} to {high:+.2f})"
        mem.plot(xs, [fit["intercept_mb"] + fit["slope_mb_per_min"] * x for x in xs], "k--", label=label)
    mem.set_ylabel("RSS (MB)")
    mem.legend(fontsize=7, loc="upper left")
    if all("rss_anon_mb" in s for s in samples):  # heap and arenas, without mapped files (the model)
        anon = mem.twinx()
        anon.plot(t, [s["rss_anon_mb"] for s in samples], ":", color="tab:red", label="of it anonymous")
        anon.set_ylabel("anonymous RSS (MB)", color="tab:red")
        anon.legend(fontsize=7, loc="lower right")
    handles.plot(t, [s["threads"] for s in samples], label="threads")
    handles.plot(t, [s["fds"] for s in samples], label="open file descriptors")
    handles.legend(fontsize=7)
    windows = result["windows"]
    mids = [(w["start_min"] + w["end_min"]) / 2 for w in windows]
    for outcome in sorted({name for w in windows for name in w["latency"]}):
        p95 = [w["latency"].get(outcome, {}).get("p95_ms", np.nan) for w in windows]
        lat.plot(mids, p95, "o-", ms=4, label=outcome, lw=2.5 if outcome == "served" else 1)
    lat.set_yscale("log")
    lat.set_ylabel("p95 per window (ms, log)")
    lat.set_xlabel("minutes since the load began")
    lat.legend(fontsize=7, ncol=3)
    mem.set_title(
        f"Soak: {settings['clients']} clients, {settings['minutes']} min, profile {settings['profile']}"
    )
    return _save(fig, path)
