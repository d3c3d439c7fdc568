"""Answer-quality metrics with a scripted judge: formulas, cache, NaN accounting, no outside calls."""

from __future__ import annotations

import json
import logging
import math
import os
import socket
import sqlite3
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from core.errors import ConfigError, GeneratorError, GeneratorTimeout
from core.paths import Paths
from core.types import Answer, Citation, Generation, Message, SentenceSupport
from evals.engine.judge.answer_quality import (
    KNOWN_METRICS,
    AnswerItem,
    UndefinedMetric,
    citation_precision,
    citation_recall,
    evaluate_answers,
    reference_item_precision,
)
from evals.engine.judge.cache import JudgeCache, default_judge_cache_path
from tests.helpers import HashEmbedder

CONTEXTS = (
    "Metformin is the first-line drug for type 2 diabetes.",
    "Asthma is treated with inhaled corticosteroids.",
    "Metformin is avoided when eGFR is below 30.",
)
SPLIT = (
    "- Metformin is first-line for type 2 diabetes.\n- Metformin cures asthma.\n- Metformin is taken orally."
)
QUESTIONS_LIST = ["What is the first-line drug for type 2 diabetes?", "Which drug starts diabetes care?"]
# the flag on the last question's line, as the 1.5B judge wrote it once: it must not reach the embedder
QUESTIONS = f"Q: {QUESTIONS_LIST[0]}\nQ: {QUESTIONS_LIST[1]} Noncommittal: no\nQ: What is insulin?"
# Texts the scripted judge says "yes" to (a statement, a reference sentence or a passage).
TRUE = {
    "Metformin is first-line for type 2 diabetes.",
    "Metformin is taken orally.",
    "Metformin is first-line.",
    "Avoid it below eGFR 30.",
    CONTEXTS[0],
    CONTEXTS[2],
}


class ScriptedJudge:
    """Replies by prompt kind; says yes to the texts in ``true``. Counts every call it answers."""

    name = "scripted-judge"

    def __init__(self, *, split: str = SPLIT, questions: str = QUESTIONS, fail: Exception | None = None):
        self.split, self.questions, self.fail = split, questions, fail
        self.calls = 0
        self.prompts: list[str] = []

    def _enter(self, messages: Sequence[Message]) -> str:
        self.calls += 1
        self.prompts.append(messages[-1].content)
        if self.fail is not None:
            raise self.fail
        return messages[-1].content

    def generate(self, messages: Sequence[Message], *, max_tokens: int, temperature: float = 0.0, stop=()):
        user = self._enter(messages)
        text = self.split if "Statements:" in user else self.questions
        return Generation(text=text, prompt_tokens=10, completion_tokens=10, seconds=0.01)

    def stream(self, messages, *, max_tokens: int, temperature: float = 0.0, stop=()) -> Iterator[str]:
        yield self.generate(messages, max_tokens=max_tokens).text

    def next_token_logprobs(self, messages: Sequence[Message], candidates: Sequence[str]) -> dict[str, float]:
        user = self._enter(messages)
        label = max(("Statement: ", "Sentence: ", "Passage: "), key=user.rfind)
        text = user[user.rfind(label) + len(label) :].split("\n\n")[0]
        yes = math.log(0.9 if text in TRUE else 0.1)
        return {"yes": yes, "Yes": -math.inf, "no": math.log1p(-math.exp(yes)), "No": -math.inf}

    def fingerprint(self) -> dict[str, Any]:
        return {"name": self.name, "version": 1}


class GarbageJudge(ScriptedJudge):
    """Writes no statement or question, and gives neither yes nor no any probability."""

    def __init__(self) -> None:
        super().__init__(split="I cannot help {{{ ???", questions="<|endoftext|> ### 42")

    def next_token_logprobs(self, messages: Sequence[Message], candidates: Sequence[str]) -> dict[str, float]:
        self._enter(messages)
        return dict.fromkeys(candidates, -math.inf)


def chain_answer(mode: str = "rag", supports: Sequence[float | None] = (0.9, 0.3)) -> Answer:
    cites = tuple(
        Citation(f"d#{m}", "d", "T", ("S",), "test", "u", "CC0", 0, 1, marker=m, quote="q", support=s)
        for m, s in enumerate(supports, 1)
    )
    sentences = (
        SentenceSupport("Metformin is first-line [1].", (1,), 0.9, True),
        SentenceSupport("It cures asthma [2].", (2,), 0.3, False),
        SentenceSupport("Ask your doctor.", (), 0.0, False),
    )
    return Answer("q", "text", mode, citations=cites, sentences=sentences)


def item(**kw: Any) -> AnswerItem:
    base: dict[str, Any] = {
        "question": "What is the first-line drug for type 2 diabetes?",
        "answer": "Metformin is first-line for type 2 diabetes [1]. It also cures asthma [2].",
        "contexts": CONTEXTS,
        "reference": "Metformin is first-line. It is renally cleared. Avoid it below eGFR 30.",
        "chain_answer": chain_answer(),
        "qid": "q1",
    }
    return AnswerItem(**{**base, **kw})


def run(items, judge, tmp_path, metrics=KNOWN_METRICS, **kw):
    return evaluate_answers(items, judge, HashEmbedder(), tmp_path / "judge.sqlite", metrics, **kw)


def test_judge_metrics_follow_the_ragas_formulas(tmp_path):
    judge = ScriptedJudge()
    report = run([item()], judge, tmp_path, n_questions=2)
    scores = report.rows[0].scores
    assert scores["faithfulness"] == pytest.approx(2 / 3)  # 2 of 3 statements supported
    # contexts judged useful: 1, 0, 1 -> average precision (1/1 + 2/3) / 2
    assert scores["context_precision"] == pytest.approx((1 / 1 + 2 / 3) / 2)
    assert scores["context_recall"] == pytest.approx(2 / 3)  # 2 of 3 reference sentences attributed
    vectors = HashEmbedder().embed([item().question, *QUESTIONS_LIST])
    assert scores["answer_relevancy"] == pytest.approx(
        (vectors[1] @ vectors[0] + vectors[2] @ vectors[0]) / 2
    )
    assert scores["answer_relevancy"] < 1.0
    assert not any("diabetes [1]" in p for p in judge.prompts)  # answer markers are stripped before judging
    assert any("type 2 diabetes. It also cures asthma." in p for p in judge.prompts)
    assert any("renally cleared" in p for p in judge.prompts)  # context precision reads the reference


def test_noncommittal_answer_scores_zero_relevancy_and_precision_falls_back_to_the_answer(tmp_path):
    judge = ScriptedJudge(questions="Q: What treats diabetes?\nNoncommittal: yes")
    report = run(
        [item(reference=None)], judge, tmp_path, ["answer_relevancy", "context_precision", "context_recall"]
    )
    row = report.rows[0]
    assert row.scores["answer_relevancy"] == 0.0
    assert any("It also cures asthma." in p for p in judge.prompts)  # the answer stands in for the reference
    assert math.isnan(row.scores["context_recall"]) and row.reasons == {"context_recall": "no reference"}


def test_citation_precision_and_recall_follow_alce():
    answer = chain_answer()
    assert citation_precision(answer) == 1 / 2  # supports 0.9, 0.3 against 0.5
    assert citation_recall(answer) == 1 / 3  # one of three sentences carries a supporting citation
    assert citation_precision(answer, threshold=0.25) == 2 / 2
    assert citation_recall(answer, threshold=0.25) == 2 / 3  # the uncited sentence still counts against
    for bad, reason in [
        (chain_answer(mode="abstained"), "answer mode abstained"),
        (chain_answer(supports=()), "no citations"),
        (chain_answer(supports=(0.9, None)), "not verified"),
    ]:
        with pytest.raises(UndefinedMetric, match=reason):
            citation_precision(bad)


def test_reference_item_precision_counts_the_shown_items_the_reference_names():
    reference = "Signs and Symptoms: Pigmentary retinopathy 2/16 Hypotonia - Lactic acidosis - Seizures -"
    sentences = (
        SentenceSupport("Symptoms of X include hypotonia, lactic acidosis and ataxia [1].", (1,), 0.9, True),
        SentenceSupport("Pigmentary retinopathy [1].", (1,), 0.9, True),
        SentenceSupport("It is caused by a virus [2].", (2,), 0.1, False, status="removed"),  # not shown
    )
    answer = Answer("q", "...", "rag", sentences=sentences)
    assert reference_item_precision(answer, reference) == 3 / 4  # ataxia is not in the reference
    assert reference_item_precision(answer, reference.replace("Hypotonia", "Hypertonia")) == 2 / 4
    for bad, ref, reason in [
        (Answer("q", "...", "abstained"), reference, "answer mode abstained"),
        (answer, None, "no reference"),
        (Answer("q", "", "rag"), reference, "no items shown"),
    ]:
        with pytest.raises(UndefinedMetric, match=reason):
            reference_item_precision(bad, ref)


def test_a_rerun_makes_no_judge_call_and_gives_the_same_scores(tmp_path, monkeypatch):
    monkeypatch.setenv("MEDCITE_DATA_DIR", str(tmp_path / "data"))
    cache = default_judge_cache_path(Paths.from_env())
    assert cache == tmp_path / "data" / "cache" / "judge.sqlite"
    items = [item(), item(qid="q2", answer="Insulin is first-line [1].")]
    judge = ScriptedJudge()
    first = evaluate_answers(items, judge, HashEmbedder(), cache)
    asked = judge.calls
    # item 2 repeats item 1's statement verdicts: asked once, then read back within the same run
    assert first.judge_calls == asked > 0 and first.cache_hits == 9
    second = evaluate_answers(items, judge, HashEmbedder(), cache)
    assert judge.calls == asked and second.judge_calls == 0 and second.cache_hits == asked + 9
    assert second.to_json()["rows"] == first.to_json()["rows"]
    with sqlite3.connect(cache) as conn:  # JSON values, readable without medcite
        values = [json.loads(v) for (v,) in conn.execute("SELECT value FROM calls")]
    assert {"text": SPLIT, "prompt_tokens": 10, "completion_tokens": 10, "finish_reason": "stop"} in values
    other = ScriptedJudge()
    other.fingerprint = lambda: {"name": "another model"}  # type: ignore[method-assign]
    evaluate_answers(items, other, HashEmbedder(), cache)
    assert other.calls == asked  # another judge never reads this judge's verdicts


@pytest.mark.parametrize(
    ("error", "reason"), [(GeneratorTimeout("slow"), "timeout"), (GeneratorError("down"), "judge error")]
)
def test_a_failing_judge_gives_counted_nans_and_keeps_the_other_items(tmp_path, error, reason):
    rows: list[Any] = []
    report = run(
        [item(), item(qid="q2", chain_answer=None)], ScriptedJudge(fail=error), tmp_path, on_row=rows.append
    )
    assert [r.qid for r in rows] == ["q1", "q2"] == [r.qid for r in report.rows]
    for name in ("faithfulness", "answer_relevancy", "context_precision", "context_recall"):
        m = report.metrics[name]
        assert (m.n_valid, m.n_nan, dict(m.reasons)) == (0, 2, {reason: 2})
        assert math.isnan(m.mean)
    recall = report.metrics["citation_recall"]
    assert (recall.mean, recall.n_valid, recall.n_nan, dict(recall.reasons)) == (
        1 / 3,
        1,
        1,
        {"no chain answer": 1},
    )
    out = report.to_json()
    json.dumps(out, allow_nan=False)  # NaN is written as null
    assert out["rows"][0]["scores"]["faithfulness"] is None
    # failures are not cached: a working judge asks again
    again = ScriptedJudge()
    assert run([item()], again, tmp_path, ["faithfulness"]).rows[0].scores["faithfulness"] == pytest.approx(
        2 / 3
    )
    assert again.calls == 4


def test_unparsable_judge_output_gives_counted_nans_and_is_cached(tmp_path):
    metrics = ["faithfulness", "answer_relevancy", "context_precision", "context_recall"]
    judge = GarbageJudge()
    report = run([item(), item(qid="q2")], judge, tmp_path, metrics)
    for name in metrics:
        assert report.metrics[name].reasons == {"unparsable": 2}
        assert report.metrics[name].n_valid == 0
    asked = judge.calls
    assert run([item(), item(qid="q2")], judge, tmp_path, metrics).metrics["faithfulness"].n_nan == 2
    assert judge.calls == asked  # -inf verdicts and garbage text came back from the cache


def test_unknown_metric_and_missing_judge_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="known: faithfulness, answer_relevancy, context_precision"):
        run([item()], ScriptedJudge(), tmp_path, ["faithfulness", "bleu"])
    with pytest.raises(ConfigError, match="need a judge"):
        evaluate_answers([item()], None, HashEmbedder(), tmp_path / "j.sqlite", ["context_recall"])
    with pytest.raises(ConfigError, match="needs an embedder"):
        evaluate_answers([item()], ScriptedJudge(), None, tmp_path / "j.sqlite", ["answer_relevancy"])
    with pytest.raises(ConfigError, match="threshold in"):
        run([item()], ScriptedJudge(), tmp_path, threshold=1.5)
    only_citations = evaluate_answers([item()], None, None, tmp_path / "j.sqlite", ["citation_precision"])
    assert only_citations.metrics["citation_precision"].mean == 1 / 2
    assert not (tmp_path / "j.sqlite").exists()  # no judge, no cache


def test_a_foreign_sqlite_file_is_moved_aside_with_a_warning(tmp_path, caplog):
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE calls (id INTEGER, payload BLOB)")
        conn.execute("INSERT INTO calls VALUES (1, x'00')")
    conn.close()
    with caplog.at_level(logging.WARNING):
        cache = JudgeCache(path)
    assert "not a judge cache" in caplog.text and str(path) in caplog.text
    (aside,) = cache.recovered
    with sqlite3.connect(aside) as conn:  # the foreign file is kept, whole, under another name
        assert conn.execute("SELECT id FROM calls").fetchall() == [(1,)]
    conn.close()
    cache.put("k", {"text": "yes"})
    assert cache.get("k") == {"text": "yes"}
    cache.close()


def test_ragas_telemetry_is_off_and_nothing_reaches_the_network(tmp_path, monkeypatch):
    monkeypatch.delenv("RAGAS_DO_NOT_TRACK", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    openai = pytest.importorskip("openai")
    monkeypatch.setattr(openai.OpenAI, "__init__", refuse)
    monkeypatch.setattr(openai.AsyncOpenAI, "__init__", refuse)
    start = time.perf_counter()
    report = run([item()], ScriptedJudge(), tmp_path)
    assert os.environ["RAGAS_DO_NOT_TRACK"] == "true"
    assert all(m.n_valid == 1 for m in report.metrics.values())
    assert time.perf_counter() - start < 5


@pytest.mark.parametrize("mode", ["abstained", "degraded"])
def test_an_abstention_is_not_judged_as_an_answer_but_its_contexts_still_are(tmp_path, mode):
    # medcite's notice ("the indexed sources do not answer this") is no answer: judged, its
    # faithfulness came out 0.0, 0.5 or 1.0 by chance on the first BioASQ items
    judge = ScriptedJudge()
    notice = "The indexed sources do not answer this question."
    row = run([item(answer=notice, chain_answer=chain_answer(mode=mode))], judge, tmp_path).rows[0]
    for metric in ("faithfulness", "answer_relevancy"):
        assert math.isnan(row.scores[metric]) and row.reasons[metric] == f"answer mode {mode}"
    assert row.scores["context_recall"] == pytest.approx(2 / 3)  # retrieval is still measured
    assert not any(notice in prompt for prompt in judge.prompts)
