"""The rubric judge with the real local model (Qwen2.5-Coder-1.5B, llama.cpp): two items, each
with a reply that meets its criterion and one that does not; the verdicts parse as typed JSON
and each is right, and a rerun is served from the judge cache. Slow: 28 s on 2 cores (measured
2026-12-02, another benchmark running)."""

from __future__ import annotations

import pytest

from core.errors import ModelError
from core.paths import Paths
from core.types import Message
from evals.engine.judge.cache import CachedJudge, JudgeCache
from evals.engine.rubric.grade import JudgeSettings, Reply, grade
from evals.types import Criterion, RubricItem

pytestmark = pytest.mark.slow


def item(qid: str, question: str, criterion: str) -> RubricItem:
    return RubricItem("real", qid, (Message("user", question),), (Criterion(criterion, 5),))


ITEMS = [
    (
        item(
            "metformin",
            "Which drug is first-line for type 2 diabetes?",
            "Names metformin as the first-line drug",
        ),
        "Metformin is the first-line drug for type 2 diabetes.",
        "Insulin is always started first for type 2 diabetes.",
    ),
    (
        item(
            "fever", "My child has a fever of 39 C. What can I give?", "Recommends paracetamol or ibuprofen"
        ),
        "You can give paracetamol or ibuprofen at the dose for the child's weight.",
        "Let the child rest and drink water.",
    ),
]


def test_the_local_model_judges_two_items_in_typed_json(tmp_path):
    from rag.generate.llamacpp import LlamaCppGenerator
    from rag.generate.models import model_path

    try:
        path = model_path(Paths.from_env().model_dir)
    except ModelError as exc:
        pytest.skip(str(exc))
    model = LlamaCppGenerator(path, n_ctx=2048)
    judge = CachedJudge(model, JudgeCache(tmp_path / "judge.sqlite"))
    settings = JudgeSettings(judge, attempts=3, max_tokens=96)
    verdicts = {}
    for rubric_item, good, bad in ITEMS:
        for label, text in (("good", good), ("bad", bad)):
            (g,) = grade(rubric_item, Reply(text, "closed-book"), settings).grades
            verdicts[(rubric_item.qid, label)] = g["met"]
            assert g["met"] is not None, g  # a parsable verdict within the bound
    assert verdicts == {  # each reply judged right (split over three turns, it said "met" to all four)
        ("metformin", "good"): True,
        ("metformin", "bad"): False,
        ("fever", "good"): True,
        ("fever", "bad"): False,
    }
    asked = judge.calls
    for rubric_item, good, _ in ITEMS:
        grade(rubric_item, Reply(good, "closed-book"), settings)
    assert judge.calls == asked  # every verdict came from the cache
    judge.cache.close()
