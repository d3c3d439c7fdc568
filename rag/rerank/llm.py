"""Relevance judged by the answering LLM itself: one yes/no question per candidate passage.

Each candidate gets the prompt below and is scored from the model's next-token distribution,
never from free text: ``score = p(yes) / (p(yes) + p(no))``, where p(yes) sums the ``YES``
spellings and p(no) the ``NO`` spellings (one forward pass either way; small models often
answer "Yes" rather than "yes"). A generator that gives -inf to every spelling cannot judge
the passage: it scores 0, is counted in ``RerankStats.unscorable`` and is not cached.

Cost: one generator call per passage not yet in the cache. Scores are cached by
(hash of ``generator.fingerprint()``, hash of the exact messages), so a new model, a new
prompt or a new passage text never reuses an old score. Candidates go in batches of
``batch_size``: each batch is looked up and written back in one cache transaction, and for an
OpenAI-compatible server (generator name starting with "openai") its calls run concurrently;
llama.cpp in-process is sequential, so its batches run one call at a time.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from core.errors import ConfigError
from core.types import Chunk, Hit, Message
from rag.generate.yes_no import NO, YES, yes_probability
from rag.protocols import Generator
from rag.rerank.cache import ScoreCache, score_key
from rag.rerank.evidence import passage_text, sort_and_renumber

log = logging.getLogger(__name__)

# The prompt is data: changing it changes every cache key, so old judgements are never reused.
RELEVANCE_SYSTEM = (
    "You are a careful medical librarian. You judge whether a passage contains information that "
    "helps answer a question. Reply with one word: yes or no."
)
RELEVANCE_USER = (
    "Question: {question}\n\nPassage:\n{passage}\n\n"
    "Does this passage help answer the question? Answer yes or no."
)


@dataclass
class RerankStats:
    """The cost of reranking, for the pipeline's usage report."""

    candidates: int = 0
    generator_calls: int = 0
    cache_hits: int = 0
    unscorable: int = 0  # both yes and no at -inf: scored 0, not cached
    seconds: float = 0.0

    def add(self, other: RerankStats) -> None:
        self.candidates += other.candidates
        self.generator_calls += other.generator_calls
        self.cache_hits += other.cache_hits
        self.unscorable += other.unscorable
        self.seconds += other.seconds


def relevance_messages(question: str, chunk: Chunk, max_passage_chars: int) -> list[Message]:
    passage = passage_text(chunk, max_passage_chars)
    return [
        Message("system", RELEVANCE_SYSTEM),
        Message("user", RELEVANCE_USER.format(question=question, passage=passage)),
    ]


class LlmRelevanceReranker:
    """Scores each candidate by the generator's probability that it helps answer the question."""

    name = "llm"
    scores_are_probabilities = True

    def __init__(
        self,
        generator: Generator,
        *,
        cache: ScoreCache | None = None,
        batch_size: int = 8,
        max_passage_chars: int = 1500,
    ) -> None:
        if batch_size < 1:
            raise ConfigError(f"reranker batch_size must be >= 1, got {batch_size}")
        if max_passage_chars < 1:
            raise ConfigError(f"reranker max_passage_chars must be >= 1, got {max_passage_chars}")
        self.generator = generator
        self.cache = cache
        self.batch_size = batch_size
        self.max_passage_chars = max_passage_chars
        self.last_stats = RerankStats()  # of the latest call; use rerank_with_stats when concurrent
        self.total_stats = RerankStats()
        self._stats_lock = threading.Lock()

    def rerank(self, question: str, hits: Sequence[Hit]) -> list[Hit]:
        return self.rerank_with_stats(question, hits)[0]

    def rerank_with_stats(self, question: str, hits: Sequence[Hit]) -> tuple[list[Hit], RerankStats]:
        """Like ``rerank``, also returning what this call cost."""
        started = time.perf_counter()
        stats = RerankStats(candidates=len(hits))
        if not hits:
            return [], stats
        messages = [relevance_messages(question, h.chunk, self.max_passage_chars) for h in hits]
        fingerprint = self.generator.fingerprint()
        keys = [score_key(fingerprint, [(m.role, m.content) for m in msgs] + [YES, NO]) for msgs in messages]
        scores = [0.0] * len(hits)
        for start in range(0, len(hits), self.batch_size):
            batch = range(start, min(start + self.batch_size, len(hits)))
            cached = self.cache.get_many([keys[i] for i in batch]) if self.cache is not None else {}
            todo = [i for i in batch if keys[i] not in cached]
            for i in batch:
                if keys[i] in cached:
                    scores[i] = cached[keys[i]]
            stats.cache_hits += len(batch) - len(todo)
            judged = self._judge([messages[i] for i in todo])
            stats.generator_calls += len(todo)
            fresh: dict[str, float] = {}
            for i, probability in zip(todo, judged, strict=True):
                if probability is None:
                    stats.unscorable += 1
                else:
                    scores[i] = fresh[keys[i]] = probability
            if self.cache is not None and fresh:
                self.cache.put_many(fresh)
        if stats.unscorable:
            log.warning(
                "generator %s gave -inf to both yes and no for %d of %d passages; they score 0",
                self.generator.name,
                stats.unscorable,
                len(hits),
            )
        stats.seconds = time.perf_counter() - started
        with self._stats_lock:
            self.last_stats = stats
            self.total_stats.add(stats)
        return sort_and_renumber(hits, scores, self.name), stats

    def _judge(self, batch: list[list[Message]]) -> list[float | None]:
        candidates = [*YES, *NO]

        def one(msgs: list[Message]) -> float | None:
            return yes_probability(self.generator.next_token_logprobs(msgs, candidates))

        if len(batch) > 1 and self.generator.name.startswith("openai"):
            with ThreadPoolExecutor(max_workers=min(self.batch_size, len(batch))) as pool:
                return list(pool.map(one, batch))
        return [one(msgs) for msgs in batch]
