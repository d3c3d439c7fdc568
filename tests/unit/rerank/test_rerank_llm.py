"""The LLM yes/no reranker with a fake generator whose judgement is a keyword rule."""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from core.errors import ConfigError, GeneratorError
from core.types import Message
from rag.rerank.cache import ScoreCache
from rag.rerank.llm import NO, RELEVANCE_USER, YES, LlmRelevanceReranker, yes_probability
from tests.helpers import hits_from

QUESTION = "What is the first-line treatment for hypertension in adults?"
PASSAGES = {
    "fracture#0": "A distal radius fracture is immobilised in a cast for six weeks.",
    "htn-epi#0": "Hypertension affects one in three adults worldwide.",
    "htn-tx#0": "First-line treatment for hypertension is a thiazide, ACE inhibitor or calcium blocker.",
}


class KeywordGenerator:
    """p(yes) = n / (n + 1), n = how many question words (5+ letters) the passage contains.

    The probability is split evenly between the two spellings of each answer, so the reranker
    must sum them to recover n / (n + 1).
    """

    def __init__(self, name: str = "fake-llamacpp", sha: str = "a" * 64, delay: float = 0.0) -> None:
        self.name = name
        self.sha = sha
        self.delay = delay
        self.calls = 0
        self.fail_after: int | None = None
        self.active = 0
        self.max_active = 0
        self.seen: list[Sequence[Message]] = []
        self._lock = threading.Lock()

    def next_token_logprobs(self, messages: Sequence[Message], candidates: Sequence[str]) -> dict[str, float]:
        with self._lock:
            if self.fail_after is not None and self.calls >= self.fail_after:
                raise GeneratorError("fake generator went away")
            self.calls += 1
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            self.seen.append(messages)
        time.sleep(self.delay)
        with self._lock:
            self.active -= 1
        match = re.search(r"Question: (.*)\n\nPassage:\n(.*)\n\nDoes", messages[-1].content, re.S)
        if match is None:
            raise AssertionError("prompt does not follow RELEVANCE_USER")
        question, passage = (set(re.findall(r"\w{5,}", part.lower())) for part in match.groups())
        n = len(question & passage)
        p = n / (n + 1)
        half = {"yes": p / 2, "Yes": p / 2, "no": (1 - p) / 2, "No": (1 - p) / 2}
        return {c: math.log(half[c]) if half.get(c) else -math.inf for c in candidates}

    def fingerprint(self) -> dict[str, Any]:
        return {"name": self.name, "sha256": self.sha}


class SilentGenerator(KeywordGenerator):
    """A model that cannot produce any of the candidate tokens."""

    def next_token_logprobs(self, messages: Sequence[Message], candidates: Sequence[str]) -> dict[str, float]:
        self.calls += 1
        return dict.fromkeys(candidates, -math.inf)


class RecordingCache(ScoreCache):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lookups: list[int] = []

    def get_many(self, keys: Sequence[str]) -> dict[str, float]:
        self.lookups.append(len(keys))
        return super().get_many(keys)


def ids(hits):
    return [h.chunk.chunk_id for h in hits]


def test_yes_probability_sums_spellings_and_handles_infinities():
    lp = {"yes": math.log(0.6), "Yes": math.log(0.1), "no": math.log(0.2), "No": math.log(0.1)}
    assert yes_probability(lp) == pytest.approx((0.6 + 0.1) / (0.6 + 0.1 + 0.2 + 0.1))
    assert yes_probability({"yes": -1000.0, "no": -1001.0}) == pytest.approx(1 / (1 + math.exp(-1)))
    assert yes_probability({"yes": 0.0}) == 1.0  # a missing candidate is -inf
    assert yes_probability({"No": -3.0, "yes": -math.inf}) == 0.0
    assert yes_probability({}) is None
    assert yes_probability(dict.fromkeys((*YES, *NO), -math.inf)) is None
    with pytest.raises(GeneratorError, match="NaN"):
        yes_probability({"yes": math.nan, "no": -1.0})


def test_orders_by_the_models_yes_probability():
    generator = KeywordGenerator()
    ranked, stats = LlmRelevanceReranker(generator).rerank_with_stats(QUESTION, hits_from(PASSAGES))
    # shared 5+ letter words: htn-tx {first, treatment, hypertension}, htn-epi {hypertension, adults}
    assert ids(ranked) == ["htn-tx#0", "htn-epi#0", "fracture#0"]
    assert [h.score for h in ranked] == pytest.approx([3 / 4, 2 / 3, 0.0])
    assert [h.rank for h in ranked] == [1, 2, 3]
    assert {h.retriever for h in ranked} == {"bm25+llm"}
    assert (stats.candidates, stats.generator_calls, stats.cache_hits, stats.unscorable) == (3, 3, 0, 0)
    prompt = generator.seen[0]
    assert [m.role for m in prompt] == ["system", "user"]
    assert prompt[1].content.endswith(RELEVANCE_USER.rsplit("\n\n", 1)[1])


def test_second_call_is_served_from_the_cache(tmp_path):
    generator = KeywordGenerator()
    cache = ScoreCache(tmp_path / "scores.sqlite")
    first = LlmRelevanceReranker(generator, cache=cache).rerank(QUESTION, hits_from(PASSAGES))
    again = LlmRelevanceReranker(generator, cache=ScoreCache(tmp_path / "scores.sqlite"))
    second = again.rerank(QUESTION, hits_from(PASSAGES))
    assert generator.calls == 3
    assert (again.last_stats.generator_calls, again.last_stats.cache_hits) == (0, 3)
    assert [(h.chunk.chunk_id, h.score) for h in second] == [(h.chunk.chunk_id, h.score) for h in first]


def test_a_new_model_fingerprint_or_prompt_misses_the_cache(tmp_path):
    cache = ScoreCache(tmp_path / "scores.sqlite")
    LlmRelevanceReranker(KeywordGenerator(sha="a" * 64), cache=cache).rerank(QUESTION, hits_from(PASSAGES))
    other_model = KeywordGenerator(sha="b" * 64)
    LlmRelevanceReranker(other_model, cache=cache).rerank(QUESTION, hits_from(PASSAGES))
    assert other_model.calls == 3
    shorter = LlmRelevanceReranker(other_model, cache=cache, max_passage_chars=20)  # other passage text
    shorter.rerank(QUESTION, hits_from(PASSAGES))
    assert (shorter.last_stats.generator_calls, shorter.last_stats.cache_hits) == (3, 0)
    assert len(cache) == 9


def test_batches_bound_each_cache_round_trip_and_do_not_change_scores(tmp_path):
    texts = {f"p{i}#0": f"hypertension treatment note {i}" for i in range(5)} | PASSAGES
    cache = RecordingCache(tmp_path / "scores.sqlite")
    reranker = LlmRelevanceReranker(KeywordGenerator(), cache=cache, batch_size=3)
    batched = reranker.rerank(QUESTION, hits_from(texts))
    assert cache.lookups == [3, 3, 2]
    single = LlmRelevanceReranker(KeywordGenerator(), batch_size=100).rerank(QUESTION, hits_from(texts))
    assert [(h.chunk.chunk_id, h.score) for h in batched] == [(h.chunk.chunk_id, h.score) for h in single]


def test_openai_generators_are_called_concurrently_and_llamacpp_sequentially():
    texts = {f"p{i}#0": f"hypertension note {i}" for i in range(4)}
    server = KeywordGenerator(name="openai-compat", delay=0.05)
    LlmRelevanceReranker(server, batch_size=4).rerank(QUESTION, hits_from(texts))
    assert 1 < server.max_active <= 4
    local = KeywordGenerator(name="llamacpp", delay=0.01)
    LlmRelevanceReranker(local, batch_size=4).rerank(QUESTION, hits_from(texts))
    assert local.max_active == 1


def test_unscorable_passages_score_zero_are_counted_and_not_cached(tmp_path, caplog):
    generator = SilentGenerator()
    reranker = LlmRelevanceReranker(generator, cache=ScoreCache(tmp_path / "scores.sqlite"))
    with caplog.at_level(logging.WARNING, logger="rag.rerank.llm"):
        ranked = reranker.rerank(QUESTION, hits_from(PASSAGES))
    assert [h.score for h in ranked] == [0.0, 0.0, 0.0]
    assert ids(ranked) == list(PASSAGES)  # ties keep retrieval order
    assert reranker.last_stats.unscorable == 3
    assert "3 of 3 passages" in caplog.text
    assert "hypertension" not in caplog.text  # no question text in logs
    reranker.rerank(QUESTION, hits_from(PASSAGES))
    assert generator.calls == 6
    assert reranker.total_stats.unscorable == 6


def test_a_generator_failure_propagates_after_finished_batches_are_cached(tmp_path):
    generator = KeywordGenerator()
    generator.fail_after = 2
    cache = ScoreCache(tmp_path / "scores.sqlite")
    with pytest.raises(GeneratorError):
        LlmRelevanceReranker(generator, cache=cache, batch_size=2).rerank(QUESTION, hits_from(PASSAGES))
    assert len(cache) == 2


def test_empty_input_and_bad_settings():
    generator = KeywordGenerator()
    assert LlmRelevanceReranker(generator).rerank(QUESTION, []) == []
    assert generator.calls == 0
    with pytest.raises(ConfigError, match="batch_size"):
        LlmRelevanceReranker(generator, batch_size=0)
    with pytest.raises(ConfigError, match="max_passage_chars"):
        LlmRelevanceReranker(generator, max_passage_chars=0)
