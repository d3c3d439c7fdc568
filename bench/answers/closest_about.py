"""How sure the aboutness model must be of a closest line's passage, measured on dev parts.

    medcite bench closest-about --outside --lines data/cache/closest_lines_dev.json \
        --out docs/results/clinician/closest_about_dev.json

When no line is confirmed, medcite shows the closest lines (``rag/answer/closest.py``) only from
passages about the question (``[quote] closest_about``). For every dev question the quoted answerer does
not answer, this replays the non-answer of the profile with the check off, then, for each
threshold and coverage floor of a grid, keeps the closest lines whose passage the aboutness model
(``rag/reading/aboutness.py``, judged) gives at least that P(about) and that names that share of
the question's concepts, or the strict rule ("every" key term): per kind (with ``--outside``, the
dev part of the questions about nothing in the corpus, ``evals/datasets/outside.py``, too), how
many are shown closest lines, and for answerable questions
how many of those hold the key fact and how many are told "nothing relevant" although a closest
line held it. Generation is left out (on dev it answers about 2 of 404 questions): a question
the quotes do not answer goes to the non-answer here.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from core.paths import Paths
from evals.datasets.clinician import key_fact_given, load_clinician
from evals.datasets.outside import load_outside
from rag.answer.outcomes import line_text
from rag.assemble import assemble
from rag.profile import load_profile, with_changes
from rag.reading.aboutness import AboutnessModel, about_features, missing_terms
from rag.reading.quote_model import closest_lines
from rag.reading.terms import chunk_stems
from rag.turn import Clock, Turn

THRESHOLDS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.55)


class Line(NamedTuple):
    """A replayed closest line and what the aboutness judgement reads of its passage."""

    text: str
    every: bool  # every key term of the question in the passage
    share: float  # its coverage of the question's concepts
    special: float  # of the specialist ones (1: the question has none)
    relevance: float  # the relevance model's P(relevant) of the passage
    specialist_asked: bool  # the question names a specialist concept
    conflicts: bool = False  # the condition reader finds it stated for another patient


def replay(pipeline: Any, item: Any) -> list[Line] | None:
    """The closest lines with the check off, best first; None when the quotes answer the question."""
    turn = Turn(pipeline.read(item.question), pipeline.evidence(item.question), Clock())
    if not turn.found.kept or pipeline.quoted.answer(turn) is not None:
        return None if turn.found.kept else []
    non_answer = pipeline.non_answer
    pool, scored = non_answer._closest_pool(turn)
    if scored is None or not (scored.lines or scored.conflicting):
        return []
    asked = any(c.specialist for c in turn.read.concepts)
    rows = []
    for line in closest_lines(scored, non_answer.judge.model, len(scored.lines) + len(scored.conflicting)):
        if line.probability < non_answer.floor:
            break
        hit = pool[line.source - 1]
        features = about_features(turn.read.concepts, chunk_stems(hit.chunk), None)
        share, special = features["coverage"], features["specialist_coverage"]
        every = not missing_terms(turn.read.terms, hit.chunk)
        conflicts = line.fit.state == "conflicts"
        rows.append(Line(line_text(line), every, share, special, hit.score, asked, conflicts))
    return rows


COVERAGE_FLOORS = (0.0, 0.1, 0.15, 0.17, 0.2, 0.25, 0.3)


def judged(model: AboutnessModel, threshold: float, min_coverage: float, line: Line) -> bool:
    """The judged rule: ``model``'s P(about) at the threshold, and at least ``min_coverage`` of the
    question's concepts in the passage (and one at all), as ``rag/answer/closest.py`` applies it."""
    return line.share > 0 and line.share >= min_coverage and model.probability(features(line)) >= threshold


def features(line: Line) -> dict[str, float]:
    """``about_features`` of the line's passage, as replayed."""
    return {"coverage": line.share, "specialist_coverage": line.special, "relevance": line.relevance}


def tally(items: Sequence[Any], lines: dict[str, list[Line]], rule: Callable[[Line], bool]) -> dict[str, Any]:
    """Per kind: shown closest lines; answerable: the key fact among them, and lost by the rule."""
    out: dict[str, Any] = {}
    for item in items:
        if item.qid not in lines:
            continue
        kind = out.setdefault(item.kind, {"questions": 0, "closest": 0, "key_fact": 0, "key_fact_lost": 0})
        every = lines[item.qid][:3]
        kept = [line.text for line in lines[item.qid] if rule(line)][:3]
        kind["questions"] += 1
        kind["closest"] += bool(kept)
        if item.answerable:
            had, has = (
                key_fact_given(item, " ".join(line.text for line in every)),
                key_fact_given(item, " ".join(kept)),
            )
            kind["key_fact"] += has
            kind["key_fact_lost"] += had and not has
    return out


def grid(
    items: Sequence[Any], lines: dict[str, list[Line]], model: AboutnessModel, shipped: tuple[float, float]
) -> list[dict[str, Any]]:
    """Every rule's tally: off, every key term, ``model`` judged at each threshold and coverage
    floor, and the ``shipped`` (threshold, floor) without the lines stated for another patient."""
    rows = [{"about": "off", **tally(items, lines, lambda line: True)}]
    rows.append({"about": "every", **tally(items, lines, lambda line: line.every)})
    for t in THRESHOLDS:
        for floor in COVERAGE_FLOORS:
            rule = functools.partial(judged, model, t, floor)
            rows.append(
                {"about": "judged", "min_about": t, "min_coverage": floor, **tally(items, lines, rule)}
            )
    t, floor = shipped
    fits = functools.partial(judged, model, t, floor)
    row = tally(items, lines, lambda line: fits(line) and not line.conflicts)
    rows.append({"about": "judged", "min_about": t, "min_coverage": floor, "conflicting": "dropped", **row})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="default")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--lines", type=Path, default=None, help="also write every replayed line here")
    parser.add_argument(
        "--from-lines", type=Path, default=None, help="tally these replayed lines, replaying none"
    )
    parser.add_argument(
        "--model", type=Path, default=None, help="an aboutness model file (default: the shipped one)"
    )
    parser.add_argument(
        "--outside",
        action="store_true",
        help="also the outside questions' dev part (evals/datasets/outside.py)",
    )
    args = parser.parse_args()
    outside = (
        [dataclasses.replace(q, kind=f"outside {q.kind}") for q in load_outside("dev")]
        if args.outside
        else []
    )
    items: list[Any] = [*load_clinician(part="dev"), *outside]
    if args.from_lines is not None:
        stored = json.loads(args.from_lines.read_text(encoding="utf-8"))
        lines = {qid: [Line(*row) for row in rows] for qid, rows in stored.items()}
    else:
        lines = replayed(items, args.profile)
    if args.lines is not None:  # every replayed line, to try another rule or model without replaying
        args.lines.write_text(json.dumps(lines) + "\n", encoding="utf-8")
    model = AboutnessModel.read(args.model) if args.model is not None else AboutnessModel.shipped()
    quote = load_profile(args.profile).quote
    rows = grid(items, lines, model, (quote.closest_min_about or 0.0, quote.closest_min_coverage))
    for row in rows:
        print(json.dumps(row), flush=True)
    out = {
        "part": "dev",
        "profile": args.profile,
        "not_quoted": len(lines),
        "model": str(args.model),
        "grid": rows,
    }
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


def replayed(items: Sequence[Any], profile_name: str) -> dict[str, list[Line]]:
    """Every item's closest lines with the check off (``replay``), by question id."""
    profile = with_changes(load_profile(profile_name), {"quote": {"closest_about": "off"}})
    assembled = assemble(profile, Paths.from_env())
    lines: dict[str, list[Line]] = {}
    for n, item in enumerate(items, start=1):
        found = replay(assembled.pipeline, item)
        if found is not None:
            lines[item.qid] = found
        print(f"[{n}/{len(items)}] {item.qid}: {'quoted' if found is None else len(found)}", flush=True)
    assembled.close()
    return lines


if __name__ == "__main__":
    main()
