"""How sure the aboutness model must be of a closest line's passage, measured on the clinician dev part.

    medcite bench closest-about --out docs/results/clinician/closest_about_dev.json

When no line is confirmed, medcite shows the closest lines (``rag/answer/closest.py``) only from
passages about the question (``[quote] closest_about``). For every dev question the quoted answerer does
not answer, this replays the non-answer of the profile with the check off, then, for each
threshold of a grid, keeps the closest lines whose passage the aboutness model
(``rag/reading/aboutness.py``, judged) gives at least that P(about), or the strict rule
("every" key term): per kind, how many are shown closest lines, and for answerable questions
how many of those hold the key fact and how many are told "nothing relevant" although a closest
line held it. Generation is left out (on dev it answers about 2 of 404 questions): a question
the quotes do not answer goes to the non-answer here.
"""

from __future__ import annotations

import argparse
import functools
import json
from pathlib import Path
from typing import Any

from core.paths import Paths
from evals.datasets.clinician import ClinicianItem, key_fact_given, load_clinician
from rag.answer.outcomes import line_text
from rag.assemble import assemble
from rag.profile import load_profile, with_changes
from rag.reading.aboutness import AboutnessModel, about_features, missing_terms
from rag.reading.quote_model import closest_lines
from rag.reading.terms import chunk_stems
from rag.turn import Clock, Turn

THRESHOLDS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.55)


# text, P(about) of its passage, every key term in it, its coverage of the concepts, of the specialist ones
Line = tuple[str, float, bool, float, float]


def replay(pipeline: Any, item: ClinicianItem) -> list[Line] | None:
    """The closest lines with the check off, best first; None when the quotes answer the question."""
    turn = Turn(pipeline.read(item.question), pipeline.evidence(item.question), Clock())
    if not turn.found.kept or pipeline.quoted.answer(turn) is not None:
        return None if turn.found.kept else []
    non_answer = pipeline.non_answer
    pool, scored = non_answer._closest_pool(turn)
    if scored is None or not (scored.lines or scored.conflicting):
        return []
    model = AboutnessModel.shipped()
    rows = []
    for line in closest_lines(scored, non_answer.judge.model, len(scored.lines) + len(scored.conflicting)):
        if line.probability < non_answer.floor:
            break
        hit = pool[line.source - 1]
        features = about_features(turn.read.concepts, chunk_stems(hit.chunk), hit.score)
        every = not missing_terms(turn.read.terms, hit.chunk)
        rows.append((line_text(line), model.probability(features), every, features[0], features[1]))
    return rows


SHARED = ("", "a concept", "a specialist concept")


def judged(threshold: float, shared: str, p: float, every: bool, share: float, special: float) -> bool:
    """The judged rule: P(about) at the threshold and, as ``shared`` asks, one of the question's
    concepts in the passage, or one of its specialist concepts (a question without any: 1)."""
    common = {"": True, "a concept": share > 0, "a specialist concept": share > 0 and special > 0}
    return p >= threshold and common[shared]


def tally(items: list[ClinicianItem], lines: dict[str, list[Line]], rule: Any) -> dict[str, Any]:
    """Per kind: shown closest lines; answerable: the key fact among them, and lost by the rule."""
    out: dict[str, Any] = {}
    for item in items:
        if item.qid not in lines:
            continue
        kind = out.setdefault(item.kind, {"questions": 0, "closest": 0, "key_fact": 0, "key_fact_lost": 0})
        every = lines[item.qid][:3]
        kept = [line[0] for line in lines[item.qid] if rule(*line[1:])][:3]
        kind["questions"] += 1
        kind["closest"] += bool(kept)
        if item.answerable:
            had, has = (
                key_fact_given(item, " ".join(line[0] for line in every)),
                key_fact_given(item, " ".join(kept)),
            )
            kind["key_fact"] += has
            kind["key_fact_lost"] += had and not has
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="default")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--lines", type=Path, default=None, help="also write every replayed line here")
    args = parser.parse_args()
    profile = with_changes(load_profile(args.profile), {"quote": {"closest_about": "off"}})
    assembled = assemble(profile, Paths.from_env())
    items = load_clinician(part="dev")
    lines: dict[str, list[Line]] = {}
    for n, item in enumerate(items, start=1):
        found = replay(assembled.pipeline, item)
        if found is not None:
            lines[item.qid] = found
        print(f"[{n}/{len(items)}] {item.qid}: {'quoted' if found is None else len(found)}", flush=True)
    assembled.close()
    if args.lines is not None:  # every replayed line, to try another rule without replaying
        args.lines.write_text(json.dumps(lines) + "\n", encoding="utf-8")
    grid = [{"about": "off", **tally(items, lines, lambda p, every, share, special: True)}]
    grid.append({"about": "every", **tally(items, lines, lambda p, every, share, special: every)})
    for t in THRESHOLDS:
        for shared in SHARED:
            rule = functools.partial(judged, t, shared)
            grid.append({"about": "judged", "min_about": t, "shares": shared, **tally(items, lines, rule)})
            print(json.dumps(grid[-1]), flush=True)
    out = {"part": "dev", "profile": args.profile, "not_quoted": len(lines), "grid": grid}
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
