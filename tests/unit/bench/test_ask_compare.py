"""Correctness of a ten-question answer: key facts for answerable questions, abstention otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.answers.ask_compare import KEY_FACTS, markdown, summary, verdict

GOUT = "What serum urate target should urate-lowering therapy aim for in gout?"
LICE = "What is the recommended treatment for head lice in children?"


def _answer(question: str, mode: str, text: str, supported: tuple[bool, ...] = ()) -> dict:
    return {
        "question": question,
        "mode": mode,
        "answer": text,
        "total_seconds": 1.0,
        "sentences": [{"supported": s} for s in supported],
    }


def test_key_facts_decide_correct_wrong_and_missed() -> None:
    assert verdict(_answer(GOUT, "rag", "Aim for serum urate < 6 mg/dL [1].")) == "correct"
    assert verdict(_answer(GOUT, "rag", "Aim for serum urate below 5 mg/dL [1].")) == "wrong"
    assert verdict(_answer(GOUT, "abstained", "The indexed sources do not answer this question")) == "missed"
    # the corpus does not answer it: only an abstention is right
    assert verdict(_answer(LICE, "abstained", "")) == "correct"
    assert verdict(_answer(LICE, "rag", "Fluoxetine + CBT [1]")) == "wrong"


def test_the_ten_questions_are_the_bench_questions() -> None:
    from bench.answers.ask_questions import QUESTIONS

    assert list(KEY_FACTS) == QUESTIONS


def test_summary_counts_and_runs_must_ask_the_same_questions() -> None:
    run = {
        "answers": [_answer(GOUT, "rag", "< 6 mg/dL", (True, False)), _answer(LICE, "rag", "x", (True,))],
        "summary": {"median_seconds": {"rerank": 0.5, "generate": 9.0}},
    }
    s = summary(run)
    assert (s["presented"], s["correct"], s["wrong"], s["missed"]) == (2, 1, 1, 0)
    assert (s["sentences_shown"], s["shown_and_supported"], s["shown_unsupported"]) == (3, 2, 1)
    assert s["supported_of_generated"] == "2/3"
    removed = {**run["answers"][0], "sentences": [{"supported": True, "status": "removed"}]}
    assert summary({**run, "answers": [removed]})["sentences_shown"] == 0  # removed by the gate
    other = {**run, "answers": run["answers"][:1]}
    with pytest.raises(SystemExit, match="different questions"):
        markdown(("a", "b"), (run, other))


def test_committed_side_by_side_matches_its_runs() -> None:
    results = Path(__file__).parents[3] / "docs" / "results"
    runs = tuple(
        json.loads((results / f).read_text(encoding="utf-8"))
        for f in ("ask_10_questions.json", "ask_10_questions_trained_gate.json")
    )
    expected = markdown(("ask_10_questions", "ask_10_questions_trained_gate"), runs)  # type: ignore[arg-type]
    assert (results / "ask_10_side_by_side.md").read_text(encoding="utf-8") == expected
