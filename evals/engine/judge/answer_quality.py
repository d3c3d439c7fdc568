"""Answer quality of free-text answers: the four RAGAS metrics with a local judge, and the chain's
own citation precision/recall. Per item, every score in [0, 1]:

- ``faithfulness`` = |answer statements the contexts support| / |answer statements|. The judge
  splits the answer into standalone statements (one generation), then judges each against the
  contexts (one yes/no each).
- ``answer_relevancy`` = mean_i cos(E(question), E(q_i)) over ``n_questions`` questions the judge
  writes from the answer alone, times 0 when the judge calls the answer noncommittal.
- ``context_precision`` = sum_k precision@k * v_k / (sum_k v_k + 1e-10), v_k = 1 when context k
  (in retrieval order) is judged useful for reaching the reference answer (the answer itself when
  the item has no reference: RAGAS's "without reference" variant).
- ``context_recall`` = |reference sentences attributable to the contexts| / |reference sentences|.
  Faithfulness and recall read the first ``CONTEXTS_MAX`` contexts, each cut to
  ``CONTEXT_MAX_CHARS``, so one prompt fits a 4k-token window.
- ``citation_precision``, ``citation_recall``, ``reference_item_precision``: see their functions.

These follow ragas 0.4's definitions with our own short prompts; ragas itself cannot share this
environment, so ``make ragas`` runs it apart (why, and its scores beside these:
docs/results/module_history.md, docs/results/eval/ragas-vs-medcite/). Yes/no verdicts are read
from the judge's next-token probabilities (P(yes) >= P(no)); ``[n]`` markers are stripped first.
A metric that cannot be computed for an item is NaN with a reason; the report gives per metric
the mean over valid items, ``n_valid``, ``n_nan`` and the reasons. Judge calls go through
:class:`evals.engine.judge.cache.CachedJudge`, so a rerun asks only what is missing.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from core.errors import ConfigError, GeneratorError, GeneratorTimeout
from core.types import Answer, Message
from evals.engine.judge.cache import CachedJudge, JudgeCache
from rag.gate.support_signals import list_items
from rag.generate.sentences import marker_free, sentence_spans
from rag.generate.yes_no import CANDIDATES, yes_probability
from rag.protocols import Embedder, Generator

JUDGE_METRICS = ("faithfulness", "answer_relevancy", "context_precision", "context_recall")
CITATION_METRICS = ("citation_precision", "citation_recall")
REFERENCE_METRICS = ("reference_item_precision",)
KNOWN_METRICS = JUDGE_METRICS + CITATION_METRICS + REFERENCE_METRICS
CONTEXT_MAX_CHARS = 1200  # per context: five passages and a statement stay inside a 4k-token window
CONTEXTS_MAX = 5

YES_NO_SYSTEM = "You check text against passages. Answer with one word: yes or no."
SPLIT_SYSTEM = "You split an answer into short standalone statements, one fact each, without pronouns."
SPLIT_USER = (
    "Example:\nQuestion: Who discovered penicillin?\nAnswer: Fleming discovered penicillin in 1928. "
    "He won a Nobel Prize.\nStatements:\n- Fleming discovered penicillin.\n- Penicillin was discovered "
    "in 1928.\n- Fleming won a Nobel Prize.\n\nQuestion: {question}\nAnswer: {answer}\nStatements:\n"
)
NLI_USER = "Passages:\n{contexts}\n\nStatement: {claim}\n\nCan the statement be inferred from the passages?"
USEFUL_USER = (
    "Question: {question}\nAnswer: {answer}\n\nPassage: {context}\n\n"
    "Was the passage useful to reach the answer?"
)
ATTRIBUTED_USER = (
    "Passages:\n{contexts}\n\nSentence: {claim}\n\nCan the sentence be attributed to the passages?"
)
QUESTIONS_SYSTEM = "You write the questions that a given answer responds to."
QUESTIONS_USER = (
    "Answer: {answer}\n\nWrite {n} different questions that this answer responds to, one per line, each "
    'starting with "Q: ". Then one last line "Noncommittal: yes" if the answer is evasive, vague or says '
    'it does not know, otherwise "Noncommittal: no".'
)
_BULLET = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+(.+?)\s*$", re.MULTILINE)
_QUESTION = re.compile(
    r"^\s*(?:\d{1,2}[.)]\s*)?(?:Q|Question)\s*\d*\s*:\s*(.+?)\s*$", re.MULTILINE | re.IGNORECASE
)
_NONCOMMITTAL = re.compile(r"noncommittal\s*:\s*\**\s*(yes|no|1|0)", re.IGNORECASE)
_FLAG_TAIL = re.compile(r"\s*\bnoncommittal\b.*$", re.IGNORECASE)


class UndefinedMetric(ValueError):
    """A metric has no value for this item; ``reason`` is the short label the report tallies."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class AnswerItem:
    """One answer to evaluate. ``chain_answer`` (the pipeline's Answer) feeds the citation metrics."""

    question: str
    answer: str
    contexts: tuple[str, ...] = ()
    reference: str | None = None
    chain_answer: Answer | None = None
    qid: str = ""


@dataclass(frozen=True)
class ItemScores:
    qid: str
    scores: Mapping[str, float]  # NaN where undefined
    reasons: Mapping[str, str] = field(default_factory=dict)  # metric -> why it is NaN


@dataclass(frozen=True)
class MetricSummary:
    name: str
    mean: float  # over valid items; NaN when none is valid
    n_valid: int
    n_nan: int
    reasons: Mapping[str, int]


@dataclass(frozen=True)
class AnswerQualityReport:
    metrics: Mapping[str, MetricSummary]
    rows: tuple[ItemScores, ...]
    judge_calls: int = 0  # calls that reached the judge; the rest came from the cache
    cache_hits: int = 0

    def to_json(self) -> dict[str, Any]:
        """Plain JSON (NaN written as null)."""

        def num(x: float) -> float | None:
            return x if math.isfinite(x) else None

        return {
            "metrics": {
                n: {"mean": num(m.mean), "n_valid": m.n_valid, "n_nan": m.n_nan, "reasons": dict(m.reasons)}
                for n, m in self.metrics.items()
            },
            "rows": [
                {"qid": r.qid, "scores": {k: num(v) for k, v in r.scores.items()}, "reasons": dict(r.reasons)}
                for r in self.rows
            ],
            "judge_calls": self.judge_calls,
            "cache_hits": self.cache_hits,
        }


def citation_precision(answer: Answer, threshold: float = 0.5) -> float:
    """Share of the answer's cited passages that support what cites them (ALCE's citation precision).

    ``|{c in C : support(c) >= threshold}| / |C|`` over the distinct citations C, where support(c)
    is the verifier's score of passage c, the mean over the sentences citing it. ALCE judges each
    citation by NLI entailment; here the chain's verifier stands in for the NLI model.
    """
    _check_rag(answer)
    if not answer.citations:
        raise UndefinedMetric("no citations")
    if any(c.support is None for c in answer.citations):
        raise UndefinedMetric("not verified")
    supporting = sum(c.support is not None and c.support >= threshold for c in answer.citations)
    return supporting / len(answer.citations)


def citation_recall(answer: Answer, threshold: float = 0.5) -> float:
    """Share of answer sentences that carry at least one supporting citation (ALCE's citation recall).

    ``|{s in S : s cites >= 1 passage and support(s) >= threshold}| / |S|`` over all sentences S,
    support(s) being the best verifier score over the passages s cites: an uncited sentence counts
    against recall, as in ALCE.
    """
    _check_rag(answer)
    if not answer.sentences:
        raise UndefinedMetric("no sentences")
    return sum(bool(s.markers) and s.support >= threshold for s in answer.sentences) / len(answer.sentences)


def reference_item_precision(answer: Answer, reference: str | None) -> float:
    """Share of the items the answer presents that its reference answer names, word for word.

    ``|{i in I : key(i) in key(reference)}| / |I|``, I being the list items of every sentence
    shown (``support_signals.list_items``: "Symptoms of X include A, B and C" gives A, B, C; a
    sentence listing nothing is one item), key() case- and space-folded. Made for questions whose
    reference is a list (MedQuAD's symptom answers: the HPO phenotypes of the disease): it asks
    whether what medcite presents is in the reference, not whether the reference is covered, and
    a paraphrased item counts as not found, so it is a lower bound on correctness.
    """
    _check_rag(answer)
    if not reference or not reference.strip():
        raise UndefinedMetric("no reference")
    shown = [s.text for s in answer.sentences if s.status == "shown"]
    items = [item for text in shown for item in list_items(text)]
    if not items:
        raise UndefinedMetric("no items shown")
    have = _fold(reference)
    return sum(_fold(item) in have for item in items) / len(items)


def _fold(text: str) -> str:
    return " " + " ".join(re.findall(r"\w+", text.casefold())) + " "


def _check_rag(answer: Answer) -> None:
    if answer.mode != "rag":  # abstained, degraded and closed-book answers cite nothing by design
        raise UndefinedMetric(f"answer mode {answer.mode}")


@dataclass(frozen=True)
class JudgeEnv:
    """What the metric functions share: the (cached) judge, the embedder and two settings."""

    judge: Generator | None
    embedder: Embedder | None
    n_questions: int
    threshold: float


def _yes(judge: Generator | None, user: str) -> bool:
    """The judge's yes/no verdict, from its first-token probabilities."""
    if judge is None:
        raise ConfigError("this metric needs a judge")
    p_yes = yes_probability(
        judge.next_token_logprobs([Message("system", YES_NO_SYSTEM), Message("user", user)], CANDIDATES)
    )
    if p_yes is None:
        raise UndefinedMetric("unparsable")
    return p_yes >= 0.5


def _ask(judge: Generator | None, system: str, user: str, max_tokens: int) -> str:
    if judge is None:
        raise ConfigError("this metric needs a judge")
    return judge.generate([Message("system", system), Message("user", user)], max_tokens=max_tokens).text


def _contexts(item: AnswerItem) -> str:
    if not item.contexts:
        raise UndefinedMetric("no contexts")
    return "\n\n".join(
        f"[{i}] {c[:CONTEXT_MAX_CHARS]}" for i, c in enumerate(item.contexts[:CONTEXTS_MAX], 1)
    )


def _answer(item: AnswerItem) -> str:
    """The answer text a judge reads; undefined for an abstention or a degraded answer, whose text
    is medcite's own notice or the passages themselves, not a generated answer to judge."""
    mode = item.chain_answer.mode if item.chain_answer is not None else "rag"
    if mode in {"abstained", "degraded"}:
        raise UndefinedMetric(f"answer mode {mode}")
    text = marker_free(item.answer)
    if not text:
        raise UndefinedMetric("empty answer")
    return text


def faithfulness(item: AnswerItem, env: JudgeEnv) -> float:
    """Share of the answer's statements the contexts support (formula in the module docstring)."""
    answer, contexts = _answer(item), _contexts(item)
    reply = _ask(env.judge, SPLIT_SYSTEM, SPLIT_USER.format(question=item.question, answer=answer), 256)
    statements = list(dict.fromkeys(_BULLET.findall(reply)))
    if not statements:
        raise UndefinedMetric("unparsable")
    supported = sum(_yes(env.judge, NLI_USER.format(contexts=contexts, claim=s)) for s in statements)
    return supported / len(statements)


def answer_relevancy(item: AnswerItem, env: JudgeEnv) -> float:
    """Mean cosine between the question and questions written from the answer alone."""
    if env.embedder is None:
        raise ConfigError("answer_relevancy needs an embedder")
    prompt = QUESTIONS_USER.format(answer=_answer(item), n=env.n_questions)
    reply = _ask(env.judge, QUESTIONS_SYSTEM, prompt, 40 * env.n_questions + 40)
    # a small judge sometimes writes the flag on the last question's line: keep it out of the question
    questions = [q for q in (_FLAG_TAIL.sub("", q) for q in _QUESTION.findall(reply)) if q]
    questions = questions[: env.n_questions]
    if not questions:
        raise UndefinedMetric("unparsable")
    flag = _NONCOMMITTAL.search(reply)  # a missing flag line (small models drop it) counts as committal
    if flag is not None and flag.group(1).lower() in ("yes", "1"):
        return 0.0
    vectors = env.embedder.embed([item.question, *questions])  # L2-normalised: dot = cosine
    return float(np.mean(vectors[1:] @ vectors[0]))


def context_precision(item: AnswerItem, env: JudgeEnv) -> float:
    """Average precision of the contexts judged useful, in retrieval order."""
    _contexts(item)
    target = item.reference or _answer(item)
    prompts = [
        USEFUL_USER.format(question=item.question, answer=target, context=c[:CONTEXT_MAX_CHARS])
        for c in item.contexts
    ]
    verdicts = [int(_yes(env.judge, p)) for p in prompts]
    hits = np.cumsum(verdicts)
    return float(sum(hits[k] / (k + 1) * v for k, v in enumerate(verdicts)) / (sum(verdicts) + 1e-10))


def context_recall(item: AnswerItem, env: JudgeEnv) -> float:
    """Share of the reference's sentences the contexts account for."""
    if not item.reference or not item.reference.strip():
        raise UndefinedMetric("no reference")
    contexts = _contexts(item)
    sentences = [item.reference[a:b].strip() for a, b in sentence_spans(item.reference)]
    sentences = [s for s in sentences if s] or [item.reference.strip()]
    attributed = sum(_yes(env.judge, ATTRIBUTED_USER.format(contexts=contexts, claim=s)) for s in sentences)
    return attributed / len(sentences)


def _chain(item: AnswerItem) -> Answer:
    if item.chain_answer is None:
        raise UndefinedMetric("no chain answer")
    return item.chain_answer


def _citation(fn: Callable[[Answer, float], float]) -> Callable[[AnswerItem, JudgeEnv], float]:
    def score(item: AnswerItem, env: JudgeEnv) -> float:
        return fn(_chain(item), env.threshold)

    return score


_METRICS: dict[str, Callable[[AnswerItem, JudgeEnv], float]] = {
    "faithfulness": faithfulness,
    "answer_relevancy": answer_relevancy,
    "context_precision": context_precision,
    "context_recall": context_recall,
    "citation_precision": _citation(citation_precision),
    "citation_recall": _citation(citation_recall),
    "reference_item_precision": lambda item, env: reference_item_precision(_chain(item), item.reference),
}


def score_item(item: AnswerItem, metrics: Sequence[str], env: JudgeEnv) -> ItemScores:
    """One item's row; a judge failure makes that metric NaN and the run goes on."""
    scores: dict[str, float] = {}
    reasons: dict[str, str] = {}
    for name in metrics:
        try:
            scores[name] = float(_METRICS[name](item, env))
        except UndefinedMetric as exc:
            scores[name], reasons[name] = math.nan, exc.reason
        except GeneratorTimeout:
            scores[name], reasons[name] = math.nan, "timeout"
        except GeneratorError:
            scores[name], reasons[name] = math.nan, "judge error"
    return ItemScores(item.qid, scores, reasons)


def summarise(rows: Sequence[ItemScores], metrics: Sequence[str]) -> dict[str, MetricSummary]:
    out = {}
    for name in metrics:
        values = [r.scores[name] for r in rows if not math.isnan(r.scores[name])]
        reasons = Counter(r.reasons[name] for r in rows if name in r.reasons)
        mean = float(np.mean(values)) if values else math.nan
        out[name] = MetricSummary(name, mean, len(values), len(rows) - len(values), dict(reasons))
    return out


def evaluate_answers(
    items: Sequence[AnswerItem],
    judge: Generator | None,
    embedder: Embedder | None,
    cache_path: Path,
    metrics: Sequence[str] = KNOWN_METRICS,
    *,
    n_questions: int = 3,
    threshold: float = 0.5,
    on_row: Callable[[ItemScores], None] | None = None,
    progress: bool = False,
) -> AnswerQualityReport:
    """Score ``items`` on ``metrics``; every judge call is cached in ``cache_path`` (sqlite, JSON).

    ``on_row`` receives each item's row as soon as it is scored (append it to a records file).
    Nothing here calls an outside service: the judge and embedder are the caller's.
    """
    # Telemetry off should ragas ever be imported into this process (it reads this at import time).
    os.environ["RAGAS_DO_NOT_TRACK"] = "true"
    unknown = [m for m in metrics if m not in _METRICS]
    if unknown:
        raise ConfigError(f"unknown answer-quality metric(s) {unknown}; known: {', '.join(KNOWN_METRICS)}")
    if judge is None and any(m in JUDGE_METRICS for m in metrics):
        raise ConfigError(f"the metrics {list(JUDGE_METRICS)} need a judge; pass a Generator or drop them")
    if embedder is None and "answer_relevancy" in metrics:
        raise ConfigError("answer_relevancy needs an embedder; pass one or drop the metric")
    if n_questions < 1 or not 0.0 <= threshold <= 1.0:
        raise ConfigError(f"need n_questions >= 1 and a threshold in [0, 1], got {n_questions}, {threshold}")
    cached = CachedJudge(judge, JudgeCache(cache_path)) if judge is not None else None
    env = JudgeEnv(cached, embedder, n_questions, threshold)
    rows = []
    try:
        for item in tqdm(items, desc="answer quality", unit="item", disable=not progress):
            rows.append(score_item(item, metrics, env))
            if on_row is not None:
                on_row(rows[-1])
    finally:
        if cached is not None:
            cached.cache.close()
    return AnswerQualityReport(
        summarise(rows, metrics),
        tuple(rows),
        judge_calls=cached.calls if cached else 0,
        cache_hits=cached.hits if cached else 0,
    )
