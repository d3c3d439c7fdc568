"""The faithfulness-separation report's files: ``claims.json`` (one row per claim: ids, rule,
label, edit, log-probabilities, margin, verdict; no BioASQ text), ``report.json``, ``report.md``
and ``margins.png`` (the margin's histogram per class), from ``evals.studies.faithfulness.report``.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evals.studies.faithfulness.labelled import LabelledItem
from evals.studies.faithfulness.report import NEAR, Row, claim_rows, summarise


def _pct(x: float | None) -> str:
    return "n/a" if x is None or x != x else f"{100 * x:.1f}%"


def _rule_lines(report: Mapping[str, Any]) -> list[str]:
    lines = [
        "| rule | label | claims | verdict right (95% CI) | median margin | ROC-AUC vs supported "
        "| below its source |",
        "|---|---|---|---|---|---|---|",
    ]
    for rule, e in report["by_rule"].items():
        auc = e.get("roc_auc_vs_supported")
        what = "accepted" if rule == "supported" else "caught"
        label = int(rule == "supported")
        lines.append(
            f"| {rule} | {label} | {e['claims']} | {what} {_pct(e['share_right'])} "
            f"({_pct(e['ci95'][0])}-{_pct(e['ci95'][1])}) | {e['median_margin']:+.2f} | "
            f"{'' if auc is None else f'{auc:.3f}'} | "
            f"{_pct(e.get('below_its_source'))} |"
        )
    return lines


def _worst_lines(report: Mapping[str, Any]) -> list[str]:
    lines = []
    for key, title in (
        (
            "supported_lowest",
            "Supported claims with the lowest margins (wrongly rejected when the margin is < 0)",
        ),
        ("false_highest", "False claims with the highest margins (wrongly accepted when the margin is >= 0)"),
    ):
        lines += ["", f"{title}:", "", "| claim | rule | edit | margin |", "|---|---|---|---|"]
        for w in report["worst"][key]:
            edit = (w["edit"] or "").replace("|", "/")
            lines.append(f"| `{w['claim_id']}` | {w['rule']} | {edit} | {w['margin']:+.3f} |")
    return lines


def _threshold_lines(report: Mapping[str, Any]) -> list[str]:
    lines = [
        "",
        "Other thresholds on the margin (supported when margin >= t; t = 0 is the shipped rule):",
        "",
        "| t | accuracy | balanced accuracy | precision | recall | false caught |",
        "|---|---|---|---|---|---|",
    ]
    rows = [(f"{t['threshold']:+.1f}", t) for t in report["thresholds"]]
    rows += [
        (f"{t['threshold']:+.2f} (tuned on {t['tuned_on_items']} other items)", t)
        for t in report["cross_fitted_threshold"]
    ]
    for name, t in rows:
        lines.append(
            f"| {name} | {_pct(t['accuracy'])} | {_pct(t['balanced_accuracy'])} | {_pct(t['precision'])} "
            f"| {_pct(t['recall'])} | {_pct(t['false_caught'])} |"
        )
    return lines


def _summary_lines(report: Mapping[str, Any]) -> list[str]:
    """The title, what was judged and how, and the headline numbers as bullets."""
    v, m = report["verdict"], report["margin"]
    ci = report["roc_auc_ci95"]
    return [
        "# Faithfulness: separation of supported from false claims",
        "",
        f"{report['claims']} claims over {report['items']} BioASQ items (Tasks 7B-10B; 11B held out): "
        f"{report['supported']} supported, {report['false']} false, labelled by construction "
        "(`evals/studies/faithfulness/labelled.py`). Each claim is judged by the faithfulness metric's own "
        "NLI step (`evals/engine/judge/answer_quality.py`: same prompt, contexts, truncation and "
        "verdict rule; judge: the default "
        f"profile's Qwen2.5-Coder 1.5B Q4_K_M). Command: `{report['environment']['command']}`.",
        "",
        f"- ROC-AUC of the margin log P(yes) - log P(no): **{report['roc_auc']:.3f}** "
        f"(95% CI {ci[0]:.3f}-{ci[1]:.3f}, {report['bootstrap']['resamples']} bootstrap resamples of items).",
        f"- Shipped verdict rule (supported when P(yes) >= P(no)): accuracy {_pct(v['accuracy'])}, "
        f"precision {_pct(v['precision'])}, recall {_pct(v['recall'])} (supported = positive); "
        f"false claims caught {_pct(v['false_caught'])} "
        f"(TP {v['tp']}, FP {v['fp']}, FN {v['fn']}, TN {v['tn']}).",
        f"- Within {NEAR} of the threshold: {_pct(m['supported'].get('near_threshold'))} of supported and "
        f"{_pct(m['false'].get('near_threshold'))} of false claims.",
        f"- Supported claims found word for word in a context: {_pct(report['verbatim_supported'])} "
        "(BioASQ ideal answers often copy a snippet), so the supported class is easy; false claims are "
        "one edit away from it.",
        "",
    ]


def _margin_lines(report: Mapping[str, Any]) -> list[str]:
    """The margin's quantiles per class (supported claims also split by how much they copy)."""
    lines = [
        "Margin per class (nats):",
        "",
        "| class | claims | min | q10 | q25 | median | q75 | q90 | max |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    classes = {
        **report["margin"],
        **{f"supported, {k.replace('_', ' ')}": v for k, v in report["supported_margin_by_copy"].items()},
    }
    for name, s in classes.items():
        if s["claims"]:
            lines.append(
                f"| {name} | {s['claims']} | "
                + " | ".join(f"{s[k]:+.2f}" for k in ("min", "q10", "q25", "median", "q75", "q90", "max"))
                + " |"
            )
    return lines


def _closing_lines(report: Mapping[str, Any]) -> list[str]:
    """Where the claim texts are, and the judge's time per claim."""
    spc = report.get("seconds_per_claim")
    return [
        "",
        "Claim texts hold BioASQ text (BioASQ terms of use) and are not in the repository: the "
        "command above rebuilds them deterministically in `$MEDCITE_DATA_DIR/faithfulness-separation/"
        "claims.jsonl`. `claims.json` here has every claim's id, rule, label, edit, log-probabilities, "
        "margin and verdict.",
        "",
        f"Judge time {'n/a' if spc is None else f'{spc:.1f}'} s per claim (measured per call, judge "
        f"cache misses and hits mixed) on {report['environment']['machine']} with "
        f"{report['environment']['cpus']} CPUs (other work may have shared them).",
        "",
    ]


def markdown(report: Mapping[str, Any]) -> str:
    """The report page."""
    lines = _summary_lines(report) + _margin_lines(report)
    lines += [
        "",
        "![margin histogram](margins.png)",
        "",
        "Per construction rule (below its source: share "
        "of the rule's claims scored below the supported claim they were made from):",
        "",
        *_rule_lines(report),
    ]
    lines += _threshold_lines(report)
    if report.get("claims_in_set", report["claims"]) != report["claims"]:
        lines += ["", f"Partial: {report['claims']} of the set's {report['claims_in_set']} claims scored."]
    lines += _worst_lines(report)
    lines += _closing_lines(report)
    return "\n".join(lines)


def histogram(rows: Sequence[Row], path: Path) -> Path:
    """Margins per class, overlaid, with the verdict threshold at 0."""
    from evals.engine.report.plots import _pyplot

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    margins = np.array([r["margin"] for r in rows], dtype=np.float64)
    labels = np.array([r["label"] for r in rows])
    bins = np.linspace(margins.min(), margins.max(), 41) if len(margins) else 10
    for label, name in ((1, "supported"), (0, "false")):
        ax.hist(
            margins[labels == label], bins=bins, alpha=0.55, label=f"{name} ({int(np.sum(labels == label))})"
        )
    ax.axvline(0.0, color="black", linewidth=1, linestyle="--", label="verdict threshold")
    ax.set_xlabel("log P(yes) - log P(no)")
    ax.set_ylabel("claims")
    ax.set_title("Faithfulness NLI step: margin per class")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_report(
    items: Sequence[LabelledItem], scores: Mapping[str, Row], out: Path, command: str
) -> dict[str, Any]:
    """``claims.json``, ``report.json``, ``report.md`` and ``margins.png`` in ``out``."""
    rows = claim_rows(items, scores)
    report = summarise(rows)
    report["environment"] = {
        "command": command,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }
    report["claims_in_set"] = sum(len(item.claims) for item in items)
    out.mkdir(parents=True, exist_ok=True)
    (out / "claims.json").write_text(json.dumps(rows, indent=0) + "\n", encoding="utf-8")
    (out / "report.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    (out / "report.md").write_text(markdown(report), encoding="utf-8")
    histogram(rows, out / "margins.png")
    return report
