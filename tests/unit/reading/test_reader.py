"""The line reader in the chain (rag/reading/reader.py): lines read once, the condition reader's
veto, and what the pipeline says at the reader's thresholds. A keyword stand-in plays the model
here; the trained reader is measured on the clinician benchmark (docs/results/clinician/reader.md)."""

from __future__ import annotations

import numpy as np
import pytest

from core.errors import ModelError
from core.types import Hit
from rag.answer.outcomes import NOTHING_RELEVANT
from rag.pipeline import Pipeline
from rag.reading.question import ReadQuestion
from rag.reading.reader import ReaderJudge, TrainedReader, read_lines
from rag.rerank.identity import IdentityReranker
from tests.helpers import ListRetriever, ScriptedVerifier, WordGenerator, fake_profile, make_hit

BANDS = (
    "Before insulin:\n"
    "- K+ < 3.5 mmol/L: replace at 10 mmol/hour IV before insulin.\n"
    "- K+ 3.5-5.0 mmol/L: add 20-30 mmol potassium per liter of fluid.\n"
    "- Recheck potassium every 2 hours.\n"
)
QUESTION = "Potassium of 3.1 in DKA: how fast do I replace it?"


class KeywordReader:
    """P(answers) 0.95 for a line holding a keyword, else 0.1; its own thresholds."""

    answer_threshold, floor = 0.9, 0.05

    def __init__(self, *keywords: str) -> None:
        self.keywords = keywords
        self.calls: list[list[str]] = []

    def probabilities(self, question: str, lines):
        self.calls.append(list(lines))
        return np.array([0.95 if any(k in line for k in self.keywords) else 0.1 for line in lines])


def hits(*texts: str) -> list[Hit]:
    return [
        make_hit(f"d{n}#0", t, score=0.5, rank=n + 1, doc_id=f"d{n}", title="DKA")
        for n, t in enumerate(texts)
    ]


def verify():
    return fake_profile().verify


def test_each_line_is_read_once_with_its_context_and_a_line_for_another_band_is_set_apart():
    reader = KeywordReader("add 20-30")
    overlapping = [
        make_hit(f"d0#{n}", BANDS, score=0.5, rank=n + 1, doc_id="d0", title="DKA") for n in (0, 1)
    ]
    found = read_lines(ReadQuestion.read(QUESTION), overlapping, reader, verify())
    assert len(reader.calls) == 1 and len(reader.calls[0]) == len(set(reader.calls[0])) == 4
    assert all(text.startswith("DKA > Overview") for text in reader.calls[0])
    assert [line.hit.chunk.text[:8] for line in found.conflicting] == ["K+ 3.5-5"]  # 3.1 is not in 3.5-5.0
    assert found.conflicting_features is not None and found.conflicting_features[0, 0] == pytest.approx(0.95)
    merged = read_lines(ReadQuestion.read(QUESTION), hits(BANDS), reader, verify(), conflicts=False)
    assert merged.conflicting == () and len(merged.lines) == 4


class CountingGenerator(WordGenerator):
    def __init__(self, reply: str) -> None:
        super().__init__(reply)
        self.calls = 0

    def generate(self, messages, **kwargs):
        self.calls += 1
        return super().generate(messages, **kwargs)


def pipeline(
    reader, *texts: str, floor: float | str = "model", answers: bool = True
) -> tuple[Pipeline, CountingGenerator]:
    generator = CountingGenerator("The dose is 10 mmol/hour [1].")
    quote = {"judge": "reader", "threshold": "model", "closest_floor": floor}
    profile = fake_profile({"quote": quote, "generator": {"answers": answers}})
    judge = ReaderJudge(reader, profile.verify)  # type: ignore[arg-type]
    retriever = ListRetriever(hits(*texts))
    return Pipeline(
        retriever, IdentityReranker(), generator, verifier=ScriptedVerifier(), profile=profile, judge=judge
    ), generator


def test_a_line_over_the_readers_answer_threshold_is_the_answer_and_nothing_is_generated():
    pipe, generator = pipeline(KeywordReader("10 mmol/hour"), BANDS)
    answer = pipe.answer(QUESTION)
    assert answer.outcome == "answer" and generator.calls == 0
    assert answer.citations[0].quote == "K+ < 3.5 mmol/L: replace at 10 mmol/hour IV before insulin."
    assert "Before insulin: K+ < 3.5 mmol/L: replace at 10 mmol/hour IV" in answer.text


def test_without_a_confident_line_the_closest_lines_or_nothing_relevant_and_generation_can_be_off():
    pipe, generator = pipeline(KeywordReader("zzz"), BANDS, answers=False)
    closest = pipe.answer(QUESTION)
    assert closest.outcome == "closest_lines" and "10% likely to answer" in closest.text
    assert generator.calls == 0
    nothing = pipeline(KeywordReader("zzz"), BANDS, floor=0.5, answers=False)[0].answer(QUESTION)
    assert nothing.outcome == "nothing_relevant" and nothing.text == NOTHING_RELEVANT


def test_a_missing_reader_says_how_to_get_one(tmp_path):
    with pytest.raises(ModelError, match="medcite train reader"):
        TrainedReader(tmp_path)


def test_the_models_own_threshold_is_refused_for_a_judge_that_has_none():
    from core.errors import ConfigError
    from tests.unit.rag.test_pipeline import SentenceReranker

    profile = fake_profile({"quote": {"threshold": "model"}})
    with pytest.raises(ConfigError, match=r'quote\.threshold = "model" needs a line judge'):
        Pipeline(ListRetriever(hits(BANDS)), SentenceReranker("x"), WordGenerator("x"), profile=profile)


def test_the_reader_judge_without_a_path_says_none_ships_yet():
    from core.errors import ConfigError
    from rag.reading.reader import SHIPPED_READER

    assert not SHIPPED_READER.exists()  # shipping one changes this test and the message
    profile = fake_profile({"quote": {"judge": "reader"}})
    with pytest.raises(ConfigError, match="no line reader ships with medcite yet"):
        Pipeline(ListRetriever(hits(BANDS)), IdentityReranker(), WordGenerator("x"), profile=profile)
