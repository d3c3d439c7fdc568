"""PNG plots for a run's report, drawn from metrics.json alone (matplotlib, no display)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from core.errors import require


def _pyplot() -> Any:
    matplotlib: Any = require("matplotlib", package="matplotlib", extra="eval")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def accuracy_by_dataset(mcq: dict[str, dict[str, Any]], path: Path) -> Path | None:
    """Grouped bars: accuracy per dataset, one bar per condition, 95% CI whiskers."""
    if not mcq:
        return None
    plt = _pyplot()
    conditions = list(mcq)
    datasets = sorted({d for per in mcq.values() for d in per})
    width = 0.8 / len(conditions)
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(datasets) + 2), 4))
    for i, cond in enumerate(conditions):
        xs, ys, lo, hi = [], [], [], []
        for j, ds in enumerate(datasets):
            row = mcq[cond].get(ds)
            if row is None:
                continue
            xs.append(j + (i - (len(conditions) - 1) / 2) * width)
            ys.append(row["accuracy"])
            lo.append(row["accuracy"] - row["ci"][0])
            hi.append(row["ci"][1] - row["accuracy"])
        ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=cond)
    ax.set_xticks(range(len(datasets)), datasets)
    ax.set_ylabel("accuracy (95% CI)")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7)
    ax.set_title("Multiple-choice accuracy: closed-book vs RAG")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def accuracy_vs_k(mcq: dict[str, dict[str, Any]], path: Path) -> Path | None:
    """Accuracy against k for RAG conditions that differ only in k (one line per setting and dataset)."""
    series: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for cond, per in mcq.items():
        match = re.fullmatch(r"(rag/.+)/k=(\d+)", cond)
        if not match:
            continue
        for ds, row in per.items():
            series.setdefault((match.group(1), ds), []).append((int(match.group(2)), row["accuracy"]))
    series = {key: sorted(points) for key, points in series.items() if len(points) > 1}
    if not series:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    baseline = {ds: row["accuracy"] for ds, row in mcq.get("closed-book", {}).items()}
    for (setting, ds), points in series.items():
        line = ax.plot([k for k, _ in points], [a for _, a in points], marker="o", label=f"{ds} {setting}")[0]
        if ds in baseline:
            ax.axhline(baseline[ds], linestyle="--", color=line.get_color(), linewidth=0.8)
    ax.set_xlabel("k (passages given to the model)")
    ax.set_ylabel("accuracy (dashed: closed-book)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def retrieval_ablation(
    retrieval: dict[str, dict[str, Any]], metrics: tuple[str, ...], path: Path
) -> Path | None:
    """One panel per metric: bars per condition, grouped by dataset."""
    if not retrieval:
        return None
    plt = _pyplot()
    conditions = list(retrieval)
    datasets = sorted({d for per in retrieval.values() for d in per})
    fig, axes = plt.subplots(1, len(metrics), figsize=(5 * len(metrics), 4), squeeze=False)
    width = 0.8 / len(conditions)
    for ax, metric in zip(axes[0], metrics, strict=True):
        for i, cond in enumerate(conditions):
            xs = [j + (i - (len(conditions) - 1) / 2) * width for j in range(len(datasets))]
            ys = [retrieval[cond].get(ds, {}).get(metric, 0.0) for ds in datasets]
            ax.bar(xs, ys, width, label=cond.removeprefix("retrieval/"))
        ax.set_xticks(range(len(datasets)), datasets)
        ax.set_title(metric)
        ax.set_ylim(0, 1)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
