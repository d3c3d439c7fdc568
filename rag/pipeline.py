"""``Pipeline(retriever, reranker, generator).answer(question) -> Answer``: plain composition.

One question goes through: optional reformulation -> retrieval (filters before ranking) ->
reranking with an evidence threshold -> optionally, only the best sentences of the kept passages
(``sentence_budget``) -> generation from numbered sources -> citation parsing -> the support
gate (each sentence verified against its cited passages, each cited passage checked to be
about the question; ``rag/check/gate.py``). When no passage clears the threshold, when no
kept passage is about the question (so no cited sentence could be shown; checked before
generating, except under the ``flag`` policy), or no generated sentence passes the gate, the
pipeline abstains instead of letting the model answer
from memory; when generation fails it returns the evidence, labelled as degraded. Closed-book
answers happen only on request and say so.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from collections.abc import Generator as Coroutine
from dataclasses import dataclass, field
from typing import Any

from core.errors import ConfigError, GeneratorError, ModelError
from core.types import Answer, Filters, Generation, Hit, Message, SentenceSupport, SupportPolicy
from rag.check.gate import SupportChecker, SupportGate
from rag.check.quotes import Quote, QuoteModel, Sentences, best_quotes, closest_lines, sentences
from rag.check.rules import GateRules
from rag.check.terms import Vocabulary
from rag.choice import choose_option
from rag.generate import prompts
from rag.generate.citations import parse_answer, strip_markers
from rag.outcomes import closest_answer, nothing_relevant, quoted_answer
from rag.profile import Profile
from rag.protocols import Generator, Reranker, Retriever
from rag.rerank.evidence import rerank_and_filter
from rag.rerank.injection import set_aside_instructions
from rag.rerank.sentences import SentenceModel, select_sentences
from rag.retrieve.query import clean_query

_PROFILE = Profile()  # the profile model's defaults: the one home of every setting below


@dataclass(frozen=True)
class PipelineSettings:
    """What the pipeline needs of a profile (``from_profile``); a field left out takes the profile
    model's default, so a Pipeline built by hand and one built from an empty profile agree."""

    candidates: int = _PROFILE.retrieval.candidates  # fused hits fetched
    rerank_candidates: int = _PROFILE.rerank.candidates  # of those, how many the reranker scores
    threshold: float | None = _PROFILE.rerank.threshold  # on the reranker's scale; None keeps all
    keep: int = _PROFILE.rerank.keep  # evidence passages given to the generator
    # "relevance": evidence in the reranker's order; "retrieval": the reranker only gates
    evidence_order: str = _PROFILE.rerank.order
    # None: the generator reads whole passages; an int: only their best sentences, up to that many
    # wordpieces, scored by the reranker's relevance model (rag/rerank/sentences.py)
    sentence_budget: int | None = _PROFILE.rerank.sentence_budget
    max_tokens: int = _PROFILE.generator.max_tokens
    temperature: float = _PROFILE.generator.temperature
    # The answer's generation ends before the first of these (an API client's ``stop``); the
    # support gate and citation parser then see only the text before it, as a client does.
    stop: tuple[str, ...] = ()
    reformulation: str = _PROFILE.reformulation.kind  # "none" | "rewrite" | "hyde"
    reformulation_tokens: int = _PROFILE.reformulation.max_tokens
    filters: Filters = field(default_factory=Filters)
    # True: a failed generation returns the evidence labelled "degraded" (the CLI's choice).
    # False: the GeneratorError propagates (the API maps it to 503/504).
    degrade_on_generator_error: bool = True
    # Passages that address instructions to the model are set aside before reranking (noted).
    screen_instructions: bool = True
    # What happens to a generated sentence its cited passage does not support, or that cites a
    # passage not about the question (rag/check/gate.py): "drop" | "flag" | "abstain".
    support_policy: SupportPolicy = _PROFILE.verify.policy
    # Which rules make a passage "about" the question (rag/check/aboutness.py)
    gate_rules: GateRules = field(default_factory=lambda: _rules(_PROFILE))
    # None: always generate; a probability: answer with the kept passages' sentences, word for
    # word, when the quote model gives the best one at least this (rag/check/quotes.py)
    quote_threshold: float | None = _PROFILE.quote.threshold
    quote_sentences: int = _PROFILE.quote.sentences
    # None: quotes come from the kept passages; (floor, n): from the n most relevant candidates
    # scored at least floor, kept or not
    quote_pool: tuple[float, int] | None = _PROFILE.quote.pool()
    # no confirmed answer: the closest lines when the best reaches this P(answers), else "nothing
    # relevant" (rag/outcomes.py)
    closest_floor: float = _PROFILE.quote.closest_floor
    # None: closest lines come from the quote pool; (floor, n): from a wider pool, scored once no
    # line is confirmed
    closest_pool: tuple[float, int] | None = _PROFILE.quote.closest_pool()

    @classmethod
    def from_profile(cls, profile: Profile) -> PipelineSettings:
        r, rerank, gen = profile.retrieval, profile.rerank, profile.generator
        return cls(
            candidates=r.candidates,
            rerank_candidates=rerank.candidates,
            threshold=rerank.threshold,
            keep=rerank.keep,
            evidence_order=rerank.order,
            sentence_budget=rerank.sentence_budget,
            max_tokens=gen.max_tokens,
            temperature=gen.temperature,
            reformulation=profile.reformulation.kind,
            reformulation_tokens=profile.reformulation.max_tokens,
            filters=Filters(sources=frozenset(r.sources), sections=frozenset(r.sections)),
            support_policy=profile.verify.policy,
            gate_rules=_rules(profile),
            quote_threshold=profile.quote.threshold,
            quote_sentences=profile.quote.sentences,
            quote_pool=profile.quote.pool(),
            closest_floor=profile.quote.closest_floor,
            closest_pool=profile.quote.closest_pool(),
        )


def _rules(profile: Profile) -> GateRules:
    v = profile.verify
    return GateRules(terms=v.about, min_about=v.min_about, min_answer=v.min_answer, uncited=v.uncited)


def contextual_query(question: str, history: Sequence[Message]) -> str:
    """The text to search with: the question, after the previous user turn when there is one.

    Follow-ups ("and in children?") name nothing to retrieve on; the turn before usually does.
    Only the last earlier user turn is used, so an old topic does not keep steering retrieval.
    """
    earlier = [m.content.strip() for m in history if m.role == "user" and m.content.strip()]
    return f"{earlier[-1]}\n{question}" if earlier else question


@dataclass
class Evidence:
    """What retrieval and reranking produced for one question, with their cost and caveats."""

    kept: list[Hit]
    dropped: list[Hit]
    usage: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # once scored: the passages quotes come from (the kept ones unless ``quote_pool``) and their lines
    pool: list[Hit] = field(default_factory=list)
    lines: Sentences | None = None


def quote_pool(found: Evidence, pool: tuple[float, int] | None) -> list[Hit]:
    """The passages quotes may come from: the kept ones, or (``pool`` = (floor, n)) the ``n``
    most relevant of every scored candidate from ``floor`` up, ranked 1..n."""
    if pool is None:
        return found.kept
    floor, n = pool
    scored = sorted(found.kept + found.dropped, key=lambda h: -h.score)
    return [
        dataclasses.replace(h, rank=r) for r, h in enumerate([h for h in scored if h.score >= floor][:n], 1)
    ]


class Clock:
    """Accumulates seconds per pipeline stage."""

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
        verifier: SupportChecker | None = None,
        settings: PipelineSettings | None = None,
        vocabulary: Callable[[], Vocabulary] | None = None,
    ) -> None:
        """``vocabulary``: the corpus's document frequencies and abbreviations, which the
        aboutness judgement weighs a question's concepts by; called on the first question (it
        may read the whole corpus once). None: every concept weighs the same, no abbreviation."""
        self.retriever = retriever
        self.reranker = reranker
        self.generator = generator
        self.settings = settings or PipelineSettings()
        with_rules = getattr(verifier, "with_rules", None)  # the verifier's share of the gate's checks
        self.verifier = with_rules(self.settings.gate_rules) if with_rules is not None else verifier
        self._sentences = _sentence_model(reranker, "sentence_budget", self.settings.sentence_budget)
        self._quoter = _sentence_model(reranker, "quote.threshold", self.settings.quote_threshold)
        self._vocabulary_source = vocabulary
        self._vocabulary: Vocabulary | None = None

    def _answer_scorer(self) -> Callable[[str, Sequence[str]], Sequence[float]] | None:
        """What the gate asks whether a sentence answers the question: the trained relevance
        model (each sentence scored as a first-ranked passage), when the check is on."""
        rules, reranker = self.settings.gate_rules, self.reranker
        if not (rules.answers and rules.min_answer > 0 and isinstance(reranker, SentenceModel)):
            return None
        scores = getattr(reranker, "scores", None)
        if scores is None:
            return None
        return lambda question, texts: scores(question, texts, [1] * len(texts))

    def vocabulary(self) -> Vocabulary | None:
        """The corpus vocabulary (read on first use, then kept)."""
        if self._vocabulary is None and self._vocabulary_source is not None:
            self._vocabulary = self._vocabulary_source()
        return self._vocabulary

    def with_settings(self, **changes: Any) -> Pipeline:
        """The same components with some settings changed (per-request max_tokens, temperature, stop)."""
        other = Pipeline(
            self.retriever,
            self.reranker,
            self.generator,
            verifier=self.verifier,
            settings=dataclasses.replace(self.settings, **changes),
            vocabulary=self._vocabulary_source,
        )
        other._vocabulary = self._vocabulary
        return other

    # -- evidence -------------------------------------------------------------------------------
    def evidence(
        self,
        question: str,
        *,
        filters: Filters | None = None,
        clock: Clock | None = None,
        history: Sequence[Message] = (),
    ) -> Evidence:
        """Retrieve, rerank and, with a ``sentence_budget``, narrow the kept passages to their best
        sentences; a failing reformulation, reranker or sentence scorer degrades, and says so.

        This is the evidence every answer path (streamed or not, free text or choice) reads, so the
        narrowed hits are what the generator, the citation parser and the support gate all see.
        ``history`` (earlier chat turns) only shapes the search text; reranking judges the
        passages against the question itself.
        """
        s, clock = self.settings, clock or Clock()
        usage: dict[str, int] = {}
        notes: list[str] = []
        query = contextual_query(question, history)
        if s.reformulation != "none":
            try:
                query, usage["reformulation_tokens"] = clock.run("reformulate", self._reformulate, query)
            except GeneratorError as exc:
                notes.append(f"query reformulation failed ({exc}); searched with the question as asked")
        hits = clock.run("retrieve", self.retriever.retrieve, query, s.candidates, filters or s.filters)
        candidates = hits[: s.rerank_candidates]
        if s.screen_instructions:
            candidates, set_aside = set_aside_instructions(candidates)
            notes.extend(set_aside)
        try:
            kept, dropped = clock.run(
                "rerank",
                rerank_and_filter,
                self.reranker,
                question,
                candidates,
                threshold=s.threshold,
                max_keep=s.keep,
                retrieval_order=s.evidence_order == "retrieval",
            )
        except (GeneratorError, ModelError) as exc:
            kept = [dataclasses.replace(h, rank=n) for n, h in enumerate(candidates[: s.keep], start=1)]
            dropped = list(candidates[s.keep :])
            notes.append(f"reranker unavailable ({exc}); evidence is in retrieval order, not filtered")
        kept = self._select(question, list(kept), clock, notes)
        stats = getattr(self.reranker, "last_stats", None)  # the LLM reranker's generator cost
        if stats is not None:
            usage["rerank_generator_calls"] = stats.generator_calls
            usage["rerank_cache_hits"] = stats.cache_hits
        return Evidence(kept=list(kept), dropped=list(dropped), usage=usage, notes=notes)

    def _select(self, question: str, kept: list[Hit], clock: Clock, notes: list[str]) -> list[Hit]:
        """The kept passages cut to their best sentences within ``sentence_budget`` (same chunk_id,
        exact character spans, so citations still resolve); unchanged when the budget is unset.

        Prompt reading dominates an answer's time on CPU, so fewer wordpieces answer sooner. A
        failing relevance model (as when reranking fell back) leaves the passages whole, noted.
        """
        model, budget = self._sentences, self.settings.sentence_budget
        if model is None or budget is None or not kept:
            return kept
        try:
            selected: list[Hit] = clock.run(
                "select", select_sentences, question, kept, model, budget, model.wordpieces
            )
        except ModelError as exc:
            notes.append(f"sentence selection unavailable ({exc}); the generator read whole passages")
            return kept
        return selected

    def _reformulate(self, question: str) -> tuple[str, int]:
        s = self.settings
        messages = prompts.reformulation_messages(s.reformulation, question)
        generation = self.generator.generate(messages, max_tokens=s.reformulation_tokens)
        text = generation.text.strip()
        used = generation.prompt_tokens + generation.completion_tokens
        if s.reformulation == "hyde":  # search with the question and the hypothetical passage
            return f"{question}\n{text}", used
        return text or question, used

    # -- free-text answers ------------------------------------------------------------------------
    def answer(
        self,
        question: str,
        *,
        closed_book: bool = False,
        filters: Filters | None = None,
        history: Sequence[Message] = (),
    ) -> Answer:
        """A cited answer, an abstention, a labelled closed-book answer, or a degraded evidence list."""
        *_, final = self.stream(
            question, closed_book=closed_book, filters=filters, history=history, stream_tokens=False
        )
        if not isinstance(final, Answer):  # the last item of stream() is always the Answer
            raise TypeError("pipeline stream ended without an answer")
        return final

    def stream(
        self,
        question: str,
        *,
        closed_book: bool = False,
        filters: Filters | None = None,
        history: Sequence[Message] = (),
        stream_tokens: bool = True,
        cancelled: Callable[[], bool] | None = None,
    ) -> Iterator[str | Answer]:
        """Yield the answer text as it may be presented, then the final ``Answer``.

        A generated answer passes the support gate (``rag.check.gate``) on its way out: it
        arrives a sentence at a time, each once the next has begun and it has been verified
        against its cited passages; sentences that fail are left out or flagged, as the
        ``support_policy`` says. The text pieces joined are the final ``Answer.text``.

        With ``stream_tokens=False`` the generator is called once without streaming (which also
        reports exact token usage) and the text comes as one piece. ``cancelled`` is asked after
        every generated token (the API's client may leave while a sentence is held back); once
        it says True the generation is closed and the stream ends without an answer.
        """
        question = clean_query(question)
        clock = Clock()
        if closed_book:
            messages = prompts.closed_book_messages(question)
            text, usage = yield from self._generate(messages, clock, stream_tokens)
            yield Answer(
                question=question,
                text=text.strip(),
                mode="closed-book",
                timings=clock.timings,
                usage=usage,
                notes=(prompts.closed_book_label(),),
            )
            return
        found = self.evidence(question, filters=filters, clock=clock, history=history)
        told = self._before_generation(question, found, clock)
        if isinstance(told, Answer):
            yield told.text
            yield told
            return
        yield from self._generate_gated(question, clock, found, told, stream_tokens, cancelled)

    def _gate(self, question: str, found: Evidence) -> SupportGate:
        return SupportGate(
            question,
            found.kept,
            self.verifier,
            self.settings.support_policy,
            abstain_token=prompts.abstain_token(),
            vocabulary=self.vocabulary(),
            rules=self.settings.gate_rules,
            relevance=bool(getattr(self.reranker, "scores_are_probabilities", False)),
            relevance_of=self._answer_scorer(),
        )

    def _before_generation(self, question: str, found: Evidence, clock: Clock) -> Answer | SupportGate:
        """What is said without generating, if anything: nothing relevant when no passage cleared
        the evidence threshold, a quoted answer, or (no kept passage about the question) the
        closest lines or nothing relevant. Otherwise the support gate to generate through (built
        only then: a quoted answer needs none)."""
        if not found.kept:
            dropped = len(found.dropped)
            return self._abstain(
                question, clock, found, f"no passage cleared the evidence threshold ({dropped} below it)"
            )
        quoted = self.quoted(question, found, clock)
        if quoted is not None:
            return quoted
        gate = self._gate(question, found)
        reason = self._no_generation_reason(found, gate)
        return gate if reason is None else self._abstain(question, clock, found, reason, off_topic=True)

    def quote(self, question: str) -> Answer | None:
        """The answer by quoting alone (evidence, then :meth:`quoted`), or None where
        :meth:`answer` would go on to generate; nothing is generated either way."""
        question = clean_query(question)
        return self.quoted(question, self.evidence(question))

    def quoted(self, question: str, found: Evidence, clock: Clock | None = None) -> Answer | None:
        """The answer as the kept passages' own sentences, when the quote model is confident that
        the best of them answers (``quote_threshold``); None sends the question on to generation.
        A failing relevance model sends it on too, noted, and so does a quote holding one of the
        client's ``stop`` sequences (a generated answer ends before it)."""
        s, model, clock = self.settings, self._quoter, clock or Clock()
        pool = quote_pool(found, s.quote_pool)
        if s.quote_threshold is None or model is None or not pool:
            return None
        try:
            scored = clock.run("quote", sentences, question, pool, model, self.vocabulary(), s.gate_rules)
        except ModelError as exc:
            found.notes.append(f"quoting unavailable ({exc}); the answer was generated instead")
            return None
        found.pool, found.lines = pool, scored
        quotes = best_quotes(scored, QuoteModel.shipped(), s.quote_sentences)
        if not quotes:
            return None
        if quotes[0].probability < s.quote_threshold:
            return None
        answer = quoted_answer(question, quotes, pool, clock.timings, found.usage, found.notes)
        if any(stop in answer.text for stop in s.stop):  # a client's stop sequence: generation honours it
            return None
        return answer

    def _no_generation_reason(self, found: Evidence, gate: SupportGate) -> str | None:
        """Why the pipeline does not generate, if it does not: no kept passage is about the
        question (nothing the model could cite would be shown; not under ``flag``, which shows
        everything)."""
        if self.settings.support_policy == "flag":
            return None
        return gate.off_topic_everywhere()

    def _generate_gated(
        self,
        question: str,
        clock: Clock,
        found: Evidence,
        gate: SupportGate,
        stream_tokens: bool,
        cancelled: Callable[[], bool] | None,
    ) -> Iterator[str | Answer]:
        """Generate from the kept passages; the gate lets each sentence out once verified."""
        pieces = self._generate(prompts.rag_messages(question, found.kept), clock, stream_tokens)
        raw, sent = "", ""
        try:
            while True:
                try:
                    raw += next(pieces)
                except StopIteration as stop:
                    final_raw, usage = stop.value
                    break
                if cancelled is not None and cancelled():
                    return  # `finally` closes the model's stream
                text = gate.feed(raw)
                if text:
                    sent += text
                    yield text
        except GeneratorError as exc:
            if not self.settings.degrade_on_generator_error:
                raise
            degraded = self._degraded(question, clock, found, str(exc), gate=gate)
            yield degraded.text[len(sent) :]
            yield degraded
            return
        finally:
            pieces.close()
        found.usage.update(usage)
        answer = self._finish(question, final_raw, clock, found, gate)
        # answer.text starts with what was sent: the gate sends nothing while the text could be
        # the abstention token, and only sentences with words, so an answer that abstains or
        # degrades here has sent nothing before (test_support_gate checks the invariant)
        rest = answer.text[len(sent) :]
        if rest:
            yield rest
        yield answer

    def _generate(
        self, messages: Sequence[Message], clock: Clock, stream_tokens: bool
    ) -> Coroutine[str, None, tuple[str, dict[str, int]]]:
        """Yield text pieces (none when not streaming); return the full text and token usage.

        Only the time spent waiting on the generator counts as "generate": while a piece is
        out, the consumer may be verifying a sentence, which is the "verify" stage.
        """
        s = self.settings
        start = time.perf_counter()
        if not stream_tokens:
            try:
                generation: Generation = self.generator.generate(
                    messages, max_tokens=s.max_tokens, temperature=s.temperature, stop=s.stop
                )
            finally:
                _add(clock, "generate", time.perf_counter() - start)
            return generation.text, _usage(generation)
        pieces: list[str] = []
        stream = self.generator.stream(
            messages, max_tokens=s.max_tokens, temperature=s.temperature, stop=s.stop
        )
        # A generator's stream may return its token usage (StopIteration.value); `yield from`
        # would hide the pieces, so iterate by hand.
        try:
            while True:
                start = time.perf_counter()
                try:
                    piece = next(stream)
                except StopIteration as stop:
                    usage = stop.value if isinstance(stop.value, dict) else {}
                    return "".join(pieces), usage
                finally:
                    _add(clock, "generate", time.perf_counter() - start)
                pieces.append(piece)
                yield piece
        finally:
            close = getattr(stream, "close", None)
            if close is not None:  # a consumer that stops early frees the model at once
                close()

    def _finish(self, question: str, raw: str, clock: Clock, found: Evidence, gate: SupportGate) -> Answer:
        if raw.strip().upper().startswith(prompts.abstain_token()):
            return self._abstain(
                question, clock, found, "the model judged the retrieved evidence insufficient"
            )
        parsed = parse_answer(raw, found.kept)
        if not any(ch.isalpha() for ch in strip_markers(parsed.text)):
            what = "citation markers but no answer text" if raw.strip() else "no text at all"
            return self._degraded(question, clock, found, f"the model produced {what}")
        result = gate.finish(parsed)
        _add(clock, "verify", gate.seconds)
        notes = list(found.notes)
        if parsed.rejected:
            notes.append(f"removed citation markers that point at no source: {sorted(set(parsed.rejected))}")
        notes.extend(result.notes)
        if result.abstain:
            return self._abstain(
                question, clock, found, *notes[len(found.notes) :], sentences=result.sentences
            )
        if not result.citations:
            notes.append("the answer carries no valid citation; treat it as unverified")
        return Answer(
            question=question,
            text=result.text,
            mode="rag",
            citations=result.citations,
            sentences=result.sentences,
            evidence=tuple(found.kept),
            timings=clock.timings,
            usage=found.usage,
            notes=tuple(notes),
        )

    def _abstain(
        self,
        question: str,
        clock: Clock,
        found: Evidence,
        *why: str,
        sentences: tuple[SentenceSupport, ...] = (),
        off_topic: bool = False,
    ) -> Answer:
        """No confirmed answer: the closest lines when the best reaches ``closest_floor``, else
        "nothing relevant" (``rag/outcomes.py``). Without scored lines the kept passages are the
        closest, whole: when the quote checks barred every line (the relevance model still kept
        the passages), or with no quote model unless none is about the question (``off_topic``).
        ``sentences``: what the gate did with a generation, kept on the record."""
        removed = tuple(s for s in sentences if s.status == "removed")
        notes = (*found.notes, *why)
        count = self.settings.quote_sentences
        pool, scored = self._closest_pool(question, found, clock)
        if scored is not None and (scored.quotes or scored.conflicting):
            lines = closest_lines(scored, QuoteModel.shipped(), count)
            if lines[0].probability >= self.settings.closest_floor:
                return self._cut(
                    closest_answer(question, lines, pool, clock.timings, found.usage, notes, removed)
                )
        elif found.kept and (found.lines is not None or not off_topic):  # unscored: passages whole
            lines = [Quote(hit, n, float("nan")) for n, hit in enumerate(found.kept[:count], start=1)]
            return self._cut(
                closest_answer(question, lines, found.kept, clock.timings, found.usage, notes, removed)
            )
        return nothing_relevant(question, found.kept, clock.timings, found.usage, notes, removed)

    def _closest_pool(
        self, question: str, found: Evidence, clock: Clock
    ) -> tuple[list[Hit], Sentences | None]:
        """The passages closest lines come from and their scored lines: the quote pool's, or
        with ``closest_pool`` the wider pool's, scored now (a failing model keeps the former)."""
        s, model = self.settings, self._quoter
        if s.closest_pool is None or model is None or found.lines is None or not found.kept:
            return found.pool, found.lines
        wide = quote_pool(found, s.closest_pool)
        try:
            scored = clock.run("closest", sentences, question, wide, model, self.vocabulary(), s.gate_rules)
        except ModelError:
            return found.pool, found.lines
        return wide, scored

    def _cut(self, answer: Answer) -> Answer:
        """``answer`` with its text cut before the first of the client's ``stop`` sequences, as a
        generated text would be (OpenAI's contract: the content never holds one)."""
        cuts = [answer.text.find(stop) for stop in self.settings.stop if stop and stop in answer.text]
        return dataclasses.replace(answer, text=answer.text[: min(cuts)].rstrip()) if cuts else answer

    def _degraded(
        self, question: str, clock: Clock, found: Evidence, reason: str, *, gate: SupportGate | None = None
    ) -> Answer:
        """The evidence, labelled as not an answer. Sentences the gate already let out (a stream
        that failed part-way) stay in front, with their citations, so the text matches the stream."""
        text = (
            "Generation failed, so this is not an answer: the passages below were retrieved "
            "for the question but not summarised."
        )
        sofar = gate.so_far() if gate is not None else None
        if sofar is not None and sofar.text:
            text = f"{sofar.text}\n\n{text}"
        return Answer(
            question=question,
            text=text,
            mode="degraded",
            evidence=tuple(found.kept),
            timings=clock.timings,
            citations=sofar.citations if sofar else (),
            sentences=sofar.sentences if sofar else (),
            usage=found.usage,
            notes=(*found.notes, f"generator error: {reason}"),
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
        clock = Clock()
        found = Evidence(kept=[], dropped=[])
        if not closed_book:
            found = self.evidence(question + "\n" + "\n".join(options.values()), filters=filters, clock=clock)
            if not found.kept:
                found.notes.append("no passage cleared the evidence threshold; answered without sources")
        return choose_option(self.generator, question, options, found.kept, clock, found.usage, found.notes)


def _sentence_model(reranker: Reranker, setting: str, value: object) -> SentenceModel | None:
    """What scores sentences for a ``setting`` that needs it (None: unset): the reranker's own
    relevance model, so no second model loads. Refused at construction when the reranker has
    none, not on the first question."""
    if value is None:
        return None
    if not isinstance(reranker, SentenceModel):
        raise ConfigError(
            f"{setting}={value} needs a reranker that scores sentences, and {reranker.name!r} does "
            f'not; use the trained reranker (rerank.backend = "trained") or leave {setting} unset'
        )
    return reranker


def _add(clock: Clock, stage: str, seconds: float) -> None:
    clock.timings[stage] = clock.timings.get(stage, 0.0) + seconds


def _usage(generation: Generation) -> dict[str, int]:
    return {"prompt_tokens": generation.prompt_tokens, "completion_tokens": generation.completion_tokens}
