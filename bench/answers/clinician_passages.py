"""Which passages the gate would let the model cite, per clinician question, without generating.

    medcite bench clinician-passages --part dev --out docs/results/clinician/passages_dev.json

For every question of one part of ``clinician-default`` (``evals/datasets/clinician.py``) the
default profile's retriever and relevance model score the candidates once (cached in
``DATA_DIR/cache/clinician-evidence.json``); then, for each evidence threshold and ``keep`` of a
grid and each aboutness judgement, it counts:

- answerable: the answering passage (or another passage of its document holding the key fact)
  is kept and judged about the question, so a cited correct answer can pass the gate
  (``reachable``); kept but judged not about (``withheld``); not kept (``not_kept``);
- unanswerable: no kept passage is judged about the question, so medcite abstains before
  generating (``stopped``).

These are upper and lower bounds of the answer rate and the abstention rate, at the cost of
retrieval alone: the model may still answer wrongly, and may still abstain, after the gate.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from core.paths import Paths
from core.types import Chunk
from evals.datasets.clinician import ClinicianItem, load_clinician
from rag.assemble import assemble
from rag.indexing import corpus_vocabulary
from rag.profile import VerifyConfig, load_profile
from rag.reading.aboutness import missing
from rag.reading.question import ReadQuestion
from training.aboutness import answering, scored_candidates

Judge = Callable[[ReadQuestion, Chunk, float], bool]
THRESHOLDS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.49, 0.6, 0.7)
KEEPS = (2, 3, 4, 6, 8)


def tally(
    items: Sequence[ClinicianItem],
    candidates: dict[str, Any],
    chunk_of: Callable[[str], Chunk],
    judge: Judge,
    read: Callable[[str], ReadQuestion],
    threshold: float,
    keep: int,
) -> dict[str, Any]:
    counts: dict[str, dict[str, int]] = {}
    for item in items:
        question = read(item.question)
        kept = [(chunk_of(cid), p) for cid, p in candidates[item.question] if p >= threshold][:keep]
        about = [judge(question, c, p) for c, p in kept]
        row = counts.setdefault(item.kind, {})
        if item.answerable:
            hits = [a for (c, _), a in zip(kept, about, strict=True) if answering(item, c)]
            key = "reachable" if any(hits) else "withheld" if hits else "not_kept"
        else:
            key = "answerable_by_gate" if any(about) else "stopped"
        row[key] = row.get(key, 0) + 1
        row["n"] = row.get("n", 0) + 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("dev", "test"), default="dev")
    parser.add_argument("--profile", default="default")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    paths = Paths.from_env()
    items = load_clinician(part=args.part)
    candidates = scored_candidates(items, args.profile, paths)
    profile = load_profile(args.profile)
    assembled = assemble(profile, paths)
    chunks = assembled.index.chunks
    vocabulary = corpus_vocabulary(paths, assembled.index)
    grid = []
    for name, verify in variants(profile.verify).items():

        def judge(q: ReadQuestion, c: Chunk, p: float, verify: VerifyConfig = verify) -> bool:
            return not missing(q, c, verify, p)

        def read(text: str) -> ReadQuestion:
            return ReadQuestion.read(text, lambda: vocabulary)

        for threshold in THRESHOLDS:
            for keep in KEEPS:
                counts = tally(items, candidates, chunks.by_id, judge, read, threshold, keep)
                grid.append({"judgement": name, "threshold": threshold, "keep": keep, "counts": counts})
                ans, near = counts.get("answerable", {}), counts.get("near", {})
                print(
                    f"{name:>16} t={threshold:.2f} keep={keep}: answerable reachable "
                    f"{ans.get('reachable', 0)}/{ans.get('n', 0)}, near stopped "
                    f"{near.get('stopped', 0)}/{near.get('n', 0)}, far stopped "
                    f"{counts.get('far', {}).get('stopped', 0)}/{counts.get('far', {}).get('n', 0)}"
                )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"part": args.part, "grid": grid}, indent=1))


def variants(verify: VerifyConfig) -> dict[str, VerifyConfig]:
    """The aboutness judgements compared: every key term, and the judged rule at five thresholds."""
    return {
        "every-term": verify.model_copy(update={"about": "every"}),
        **{
            f"judged>={t}": verify.model_copy(update={"about": "judged", "min_about": t})
            for t in (0.3, 0.45, 0.55, 0.65, 0.8)
        },
    }


if __name__ == "__main__":
    main()
