"""Ten real clinical questions through the full chain on the default index, with timings.

Writes the answers, their citations, how many cited sentences the verifier marked supported,
which questions abstained, the prompt size, and latency split into retrieve / rerank / select /
generate / verify.

    medcite bench ask-questions --profile default --out docs/results/ask_10_questions.json
    medcite bench ask-questions --sentence-budget 160 --out docs/results/ask_10_questions_sentences.json
    medcite bench ask-questions --questions bench/questions/population_heldout.txt \
        --out docs/results/population_heldout.json

``--questions`` reads one question a line instead of the ten below (``bench/questions/``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from core.paths import Paths
from rag.assemble import assemble, describe
from rag.pipeline import Pipeline
from rag.profile import load_profile
from rag.render import answer_to_dict

QUESTIONS = [
    "Which score is used to estimate stroke risk and decide on anticoagulation in atrial fibrillation?",
    "What are the qSOFA criteria used to screen for sepsis?",
    "What is the recommended antibiotic for low-severity community-acquired pneumonia in adults?",
    "Which eGFR range defines CKD stage G3a?",
    "What A1C goal is appropriate for most nonpregnant adults with diabetes?",
    "What serum urate target should urate-lowering therapy aim for in gout?",
    "Which phenotypes are very frequent in Marfan syndrome?",
    "What are frequent clinical features of Rett syndrome?",
    "What is the recommended treatment for head lice in children?",
    "Which vaccine schedule is recommended for travellers to yellow fever areas?",
]


def read_questions(path: Path) -> list[str]:
    """The non-empty lines of ``path``; a clear error when it holds none."""
    questions = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not questions:
        raise SystemExit(f"{path} holds no question (one question a line)")
    return questions


def ask_all(pipeline: Pipeline, questions: list[str]) -> list[dict[str, Any]]:
    """Each question's answer as JSON with its total seconds; a line or two printed per question."""
    records = []
    for question in questions:
        start = time.perf_counter()
        answer = pipeline.answer(question)
        total = time.perf_counter() - start
        row = answer_to_dict(answer)
        row["total_seconds"] = round(total, 2)
        records.append(row)
        supported = sum(1 for s in answer.sentences if s.supported)
        print(f"[{answer.mode:>9}] {total:6.1f}s  {supported}/{len(answer.sentences)} supported  {question}")
        print(f"            {answer.text[:200]}")
    return records


def summary_of(records: list[dict[str, Any]], load_seconds: float) -> dict[str, Any]:
    """Counts of answers, abstentions and supported sentences; median stage and total seconds."""
    stages = ("retrieve", "rerank", "select", "generate", "verify")  # select: with rerank.sentence_budget
    answered = [r for r in records if r["mode"] == "rag"]
    return {
        "questions": len(records),
        "answered_with_citations": sum(1 for r in answered if r["citations"]),
        "abstained": sum(1 for r in records if r["mode"] == "abstained"),
        "degraded": sum(1 for r in records if r["mode"] == "degraded"),
        "cited_sentences": sum(len(r["sentences"]) for r in answered),
        "supported_sentences": sum(sum(1 for s in r["sentences"] if s["supported"]) for r in answered),
        "median_seconds": {
            stage: round(statistics.median(r["timings"].get(stage, 0.0) for r in records), 2)
            for stage in stages
        },
        "median_total_seconds": round(statistics.median(r["total_seconds"] for r in records), 2),
        # what sentence selection shrinks: the prompt of the questions that reached the generator
        "median_prompt_tokens": statistics.median(
            [r["usage"]["prompt_tokens"] for r in records if r["usage"].get("prompt_tokens")] or [0]
        ),
        "pipeline_load_seconds": round(load_seconds, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="default")
    parser.add_argument("--out", type=Path, default=Path("docs/results/ask_10_questions.json"))
    parser.add_argument(
        "--questions",
        type=Path,
        default=None,
        help="a text file with one question a line, instead of the ten built in",
    )
    parser.add_argument(
        "--sentence-budget", type=int, default=None, help="override the profile's [rerank] sentence_budget"
    )
    args = parser.parse_args()
    questions = QUESTIONS if args.questions is None else read_questions(args.questions)

    paths = Paths.from_env()
    profile = load_profile(args.profile)
    if args.sentence_budget is not None:
        rerank = profile.rerank.model_copy(update={"sentence_budget": args.sentence_budget})
        profile = profile.model_validate({**profile.model_dump(), "rerank": rerank.model_dump()})  # validated
    t0 = time.perf_counter()
    assembled = assemble(profile, paths)
    load_seconds = time.perf_counter() - t0
    records = ask_all(assembled.pipeline, questions)
    summary = summary_of(records, load_seconds)
    print(json.dumps(summary, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {"pipeline": describe(assembled), "summary": summary, "answers": records},
            indent=1,
            ensure_ascii=False,
        )
        + "\n"
    )
    assembled.close()


if __name__ == "__main__":
    main()
