"""Two conditions of an abstention run, paired on the same questions: who answered what.

    medcite bench abstention-paired data/runs/abstention-default \
        --out docs/results/eval/abstention-default/paired.json

For each pair of conditions in the run's ``records.jsonl``: on the answerable questions, how
many each answered, how many only one of them answered, and the exact McNemar p; on the
unanswerable ones, the same for abstaining. With ``--before OTHER_RUN`` (the same config run
before a change) each condition is compared with itself across the two runs instead:

    medcite bench abstention-paired data/runs/near-miss-after --before data/runs/near-miss-before
"""

from __future__ import annotations

import argparse
import ast
import itertools
import json
from pathlib import Path
from typing import Any

from evals.metrics.stats import mcnemar_exact


def _modes(run: Path) -> dict[str, dict[str, tuple[bool, str]]]:
    """condition -> qid -> (answerable, mode)."""
    out: dict[str, dict[str, tuple[bool, str]]] = {}
    with (run / "records.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            extra = row["extra"] if isinstance(row["extra"], dict) else ast.literal_eval(row["extra"])
            out.setdefault(row["condition"], {})[row["qid"]] = (bool(extra["answerable"]), extra["mode"])
    return out


Modes = dict[str, tuple[bool, str]]  # qid -> (answerable, mode)


def _compare(a: Modes, b: Modes, entry: dict[str, Any]) -> dict[str, Any]:
    shared = sorted(set(a) & set(b))
    entry["questions"] = len(shared)
    for half, answerable, wanted in (("answerable", True, "rag"), ("unanswerable", False, "abstained")):
        qids = [q for q in shared if a[q][0] is answerable]
        hit_a = {q for q in qids if a[q][1] == wanted}
        hit_b = {q for q in qids if b[q][1] == wanted}
        only_a, only_b = len(hit_a - hit_b), len(hit_b - hit_a)
        entry[half] = {
            "outcome": wanted,
            "n": len(qids),
            "a": len(hit_a),
            "b": len(hit_b),
            "only_a": only_a,
            "only_b": only_b,
            "mcnemar_p": mcnemar_exact(only_a, only_b),
        }
    return entry


def paired(run: Path) -> list[dict[str, Any]]:
    """Every two conditions of one run, on the questions both answered."""
    modes = _modes(run)
    pairs = itertools.combinations(sorted(modes), 2)
    return [_compare(modes[a], modes[b], {"a": a, "b": b}) for a, b in pairs]


def paired_runs(before: Path, after: Path) -> list[dict[str, Any]]:
    """Each condition of two runs of one config (code or settings changed between them): ``a``
    is the run before, ``b`` the run after, on the questions both answered."""
    old, new = _modes(before), _modes(after)
    return [
        _compare(old[c], new[c], {"condition": c, "a": str(before), "b": str(after)})
        for c in sorted(set(old) & set(new))
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument(
        "--before",
        type=Path,
        default=None,
        help="the same config run before a change: each condition across both",
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    result = paired_runs(args.before, args.run) if args.before else paired(args.run)
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
