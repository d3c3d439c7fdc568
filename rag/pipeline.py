"""``Pipeline(retriever, reranker, generator).answer(question) -> Answer``: plain composition.

One question goes through: optional reformulation -> retrieval (filters before ranking) ->
reranking with an evidence threshold -> generation from numbered sources -> citation parsing
-> support verification. When no passage clears the threshold the pipeline abstains instead
of letting the model answer from memory; when generation fails it returns the evidence,
labelled as degraded. Closed-book answers happen only on request and say so.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag.errors import GeneratorError
from rag.generate import prompts
from rag.generate.citations import parse_answer
from rag.protocols import Generator, Reranker, Retriever
from rag.rerank.evidence import rerank_and_filter
from rag.retrieve.query import clean_query
from rag.types import Answer, Filters, Generation, Hit, Message


@dataclass(frozen=True)
class PipelineSettings:
    candidates: int = 30  # fused hits fetched
    rerank_candidates: int = 10  # of those, how many the reranker scores
    threshold: float | None = 0.5  # evidence threshold on the reranker's scale; None keeps all
    keep: int = 4  # evidence passages given to the generator
    max_tokens: int = 200
    temperature: float = 0.0
    reformulation: str = "none"  # "none" | "rewrite" | "hyde"
    reformulation_tokens: int = 96
    filters: Filters = field(default_factory=Filters)


class _Clock:
    def __init__(self) -> None:
        self.timings: dict[str, float] = {}

    def run(self, stage: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            self.timings[stage] = self.timings.get(stage, 0.0) + time.perf_counter() - start


class Pipeline:
    def __init__(
        self,
        retriever: Retriever,
        reranker: Reranker,
        generator: Generator,
        *,
        verifier: Any | None = None,
        settings: PipelineSettings | None = None,
    ) -> None:
        self.retriever = retriever
        self.reranker = reranker
        self.generator = generator
        self.verifier = verifier
        self.settings = settings or PipelineSettings()

    # -- evidence -------------------------------------------------------------------------------
    def evidence(
        self, question: str, *, filters: Filters | None = None, clock: _Clock | None = None
    ) -> tuple[list[Hit], list[Hit], dict[str, int]]:
        """Kept evidence (ranked), dropped candidates, and usage counts of this step."""
        s, clock = self.settings, clock or _Clock()
        usage: dict[str, int] = {}
        query = question
        if s.reformulation != "none":
            query, used = clock.run("reformulate", self._reformulate, question)
            usage["reformulation_tokens"] = used
        hits = clock.run("retrieve", self.retriever.retrieve, query, s.candidates, filters or s.filters)
        kept, dropped = clock.run(
            "rerank",
            rerank_and_filter,
            self.reranker,
            question,
            hits[: s.rerank_candidates],
            threshold=s.threshold,
            max_keep=s.keep,
        )
        stats = getattr(self.reranker, "last_stats", None)  # LLM reranker: its generator cost
        if stats is not None:
            usage["rerank_generator_calls"] = stats.generator_calls
            usage["rerank_cache_hits"] = stats.cache_hits
        return list(kept), list(dropped), usage

    def _reformulate(self, question: str) -> tuple[str, int]:
        s = self.settings
        generation = self.generator.generate(
            prompts.reformulation_messages(s.reformulation, question), max_tokens=s.reformulation_tokens
        )
        text = generation.text.strip()
        used = generation.prompt_tokens + generation.completion_tokens
        if s.reformulation == "hyde":  # search with the question and the hypothetical passage
            return f"{question}\n{text}", used
        return text or question, used

    # -- free-text answers ------------------------------------------------------------------------
    def answer(self, question: str, *, closed_book: bool = False, filters: Filters | None = None) -> Answer:
        """A cited answer, an abstention, a labelled closed-book answer, or a degraded evidence list."""
        question = clean_query(question)
        clock = _Clock()
        if closed_book:
            messages = prompts.closed_book_messages(question)
            generation = clock.run("generate", self._generate, messages)
            return Answer(
                question=question,
                text=generation.text.strip(),
                mode="closed-book",
                timings=clock.timings,
                usage=_usage(generation),
                notes=(prompts.closed_book_label(),),
            )
        early, kept, usage = self._prepare(question, filters, clock)
        if early is not None:
            return early
        try:
            generation = clock.run("generate", self._generate, prompts.rag_messages(question, kept))
        except GeneratorError as exc:
            return self._degraded(question, kept, clock, usage, str(exc))
        return self._finish(question, generation.text, kept, clock, {**usage, **_usage(generation)})

    def stream(
        self, question: str, *, closed_book: bool = False, filters: Filters | None = None
    ) -> Iterator[str | Answer]:
        """Yield answer text pieces as they are generated, then the final ``Answer``.

        Token counts are not available while streaming; the final answer's usage has the
        retrieval-side counts only.
        """
        question = clean_query(question)
        clock = _Clock()
        if closed_book:
            yield from self._stream_closed_book(question, clock)
            return
        early, kept, usage = self._prepare(question, filters, clock)
        if early is not None:
            yield early.text
            yield early
            return
        pieces: list[str] = []
        start = time.perf_counter()
        try:
            for piece in self.generator.stream(
                prompts.rag_messages(question, kept),
                max_tokens=self.settings.max_tokens,
                temperature=self.settings.temperature,
            ):
                pieces.append(piece)
                yield piece
        except GeneratorError as exc:
            yield self._degraded(question, kept, clock, usage, str(exc))
            return
        clock.timings["generate"] = time.perf_counter() - start
        yield self._finish(question, "".join(pieces), kept, clock, usage)

    def _prepare(
        self, question: str, filters: Filters | None, clock: _Clock
    ) -> tuple[Answer | None, list[Hit], dict[str, int]]:
        """Evidence for the question, or an abstention when none clears the threshold."""
        kept, dropped, usage = self.evidence(question, filters=filters, clock=clock)
        if kept:
            return None, kept, usage
        abstention = Answer(
            question=question,
            text=prompts.abstain_message(),
            mode="abstained",
            timings=clock.timings,
            usage=usage,
            notes=(f"no passage cleared the evidence threshold ({len(dropped)} candidates scored below it)",),
        )
        return abstention, [], usage

    def _generate(self, messages: Sequence[Message]) -> Generation:
        return self.generator.generate(
            messages, max_tokens=self.settings.max_tokens, temperature=self.settings.temperature
        )

    def _stream_closed_book(self, question: str, clock: _Clock) -> Iterator[str | Answer]:
        pieces: list[str] = []
        start = time.perf_counter()
        for piece in self.generator.stream(
            prompts.closed_book_messages(question),
            max_tokens=self.settings.max_tokens,
            temperature=self.settings.temperature,
        ):
            pieces.append(piece)
            yield piece
        clock.timings["generate"] = time.perf_counter() - start
        yield Answer(
            question=question,
            text="".join(pieces).strip(),
            mode="closed-book",
            timings=clock.timings,
            notes=(prompts.closed_book_label(),),
        )

    def _finish(
        self, question: str, raw: str, kept: list[Hit], clock: _Clock, usage: Mapping[str, int]
    ) -> Answer:
        if raw.strip().upper().startswith(prompts.abstain_token()):
            return Answer(
                question=question,
                text=prompts.abstain_message(),
                mode="abstained",
                evidence=tuple(kept),
                timings=clock.timings,
                usage=usage,
                notes=("the model judged the retrieved evidence insufficient",),
            )
        parsed = parse_answer(raw, kept)
        notes = (
            [f"removed citation markers that point at no source: {sorted(set(parsed.rejected))}"]
            if parsed.rejected
            else []
        )
        sentences: tuple[Any, ...] = ()
        citations = tuple(parsed.citations)
        if self.verifier is not None:
            verified_sentences, verified_citations = clock.run("verify", self.verifier.verify, parsed, kept)
            sentences, citations = tuple(verified_sentences), tuple(verified_citations)
            unsupported = sum(1 for s in sentences if not s.supported)
            if unsupported:
                notes.append(
                    f"{unsupported} of {len(sentences)} sentences are not supported by their cited passage"
                )
        if not citations:
            notes.append("the answer carries no valid citation; treat it as unverified")
        return Answer(
            question=question,
            text=parsed.text,
            mode="rag",
            citations=citations,
            sentences=sentences,
            evidence=tuple(kept),
            timings=clock.timings,
            usage=usage,
            notes=tuple(notes),
        )

    def _degraded(
        self, question: str, kept: list[Hit], clock: _Clock, usage: Mapping[str, int], reason: str
    ) -> Answer:
        text = (
            "Generation failed, so this is not an answer: the passages below were retrieved "
            "for the question but not summarised."
        )
        return Answer(
            question=question,
            text=text,
            mode="degraded",
            evidence=tuple(kept),
            timings=clock.timings,
            usage=usage,
            notes=(f"generator error: {reason}",),
        )

    # -- multiple choice ------------------------------------------------------------------------
    def choose(
        self,
        question: str,
        options: Mapping[str, str],
        *,
        closed_book: bool = False,
        filters: Filters | None = None,
    ) -> Answer:
        """Pick an option by the next-token probabilities of the option letters (no text parsing)."""
        question = clean_query(question)
        if len(options) < 2:
            raise ValueError("a multiple-choice question needs at least two options")
        clock = _Clock()
        kept: list[Hit] = []
        usage: dict[str, int] = {}
        notes: list[str] = []
        if not closed_book:
            query = question + "\n" + "\n".join(options.values())
            kept, _, usage = self.evidence(query, filters=filters, clock=clock)
            if not kept:
                notes.append("no passage cleared the evidence threshold; answered without sources")
        messages = prompts.choice_messages(question, options, kept)
        logprobs = clock.run("generate", self.generator.next_token_logprobs, messages, list(options))
        probs = _softmax(logprobs)
        choice = max(probs, key=lambda letter: probs[letter])
        mode = "rag" if kept else "closed-book"
        return Answer(
            question=question,
            text=f"{choice}. {options[choice]}",
            mode=mode,
            evidence=tuple(kept),
            timings=clock.timings,
            usage=usage,
            notes=tuple(notes),
            choice=choice,
            option_probs=probs,
        )


def _usage(generation: Generation) -> dict[str, int]:
    return {"prompt_tokens": generation.prompt_tokens, "completion_tokens": generation.completion_tokens}


def _softmax(logprobs: Mapping[str, float]) -> dict[str, float]:
    finite = {k: v for k, v in logprobs.items() if math.isfinite(v)}
    if not finite:
        raise GeneratorError("the model gave no probability to any option letter; cannot choose")
    top = max(finite.values())
    exp = {k: math.exp(v - top) if k in finite else 0.0 for k, v in logprobs.items()}
    total = sum(exp.values())
    return {k: v / total for k, v in exp.items()}
