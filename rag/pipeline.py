"""``Pipeline(retriever, reranker, generator).answer(question) -> Answer``: the chain, in order.

1. **Read** the question once (``rag/reading/question.py``): every later stage judges against it.
2. **Evidence**: retrieve (filters before ranking), set aside passages that address the model,
   rerank, and keep what clears the evidence threshold (``[rerank]``).
3. **The answerers, in order** (``rag/answer/``), each answering or passing the turn on:
   - *quoted*: the kept passages' own lines when the quote model is confident one answers;
   - *generated*: the model answers from the kept passages, and the support gate lets each
     sentence out only once its cited passage supports it and is about the question.
4. **The non-answer** when none answers (or nothing was kept): the closest lines, or "nothing
   relevant". A failed generation returns the evidence labelled "degraded". Closed-book answers
   happen only on request and say so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.errors import ConfigError, GeneratorError, ModelError
from core.types import Answer, Filters, Hit, Message
from rag.answer.closest import NonAnswer
from rag.answer.generated import GeneratedAnswerer, generate
from rag.answer.outcomes import said, with_reading
from rag.answer.quoted import QuotedAnswerer
from rag.choice import choose_option
from rag.gate.gate import SupportChecker
from rag.generate import prompts
from rag.profile import Profile, default_profile, with_changes
from rag.protocols import Generator, Reranker, Retriever
from rag.reading.aboutness import missing_terms
from rag.reading.clinical import ClinicalScope
from rag.reading.conversation import Resolved, carry, earlier_questions
from rag.reading.question import ReadQuestion
from rag.reading.quote_model import LineJudge, QuoteJudge
from rag.reading.terms import Vocabulary
from rag.rerank.evidence import rerank_and_filter
from rag.rerank.injection import set_aside_instructions
from rag.rerank.sentences import SentenceScorer
from rag.retrieve.query import clean_query
from rag.turn import Clock, Evidence, Turn


@dataclass(frozen=True)
class Options:
    """What a caller chooses per use that is no profile setting."""

    # The answer ends before the first of these (an API client's ``stop``); the gate and the
    # citation parser then see only the text before it, as the client does.
    stop: tuple[str, ...] = ()
    # True: a failed generation returns the evidence labelled "degraded" (the CLI's choice).
    # False: the GeneratorError propagates (the API maps it to 503/504).
    degrade_on_generator_error: bool = True
    # Passages that address instructions to the model are set aside before reranking (noted).
    screen_instructions: bool = True


def contextual_query(question: str, history: Sequence[Message]) -> str:
    """The text to search with: the question, after the previous user turn when there is one.

    Follow-ups ("and in children?") name nothing to retrieve on; the turn before usually does.
    Only the last earlier user turn is used, so an old topic does not keep steering retrieval.
    """
    earlier = [m.content.strip() for m in history if m.role == "user" and m.content.strip()]
    return f"{earlier[-1]}\n{question}" if earlier else question


class Pipeline:
    def __init__(
        self,
        retriever: Retriever,
        reranker: Reranker,
        generator: Generator,
        *,
        verifier: SupportChecker | None = None,
        profile: Profile | None = None,
        options: Options = Options(),
        vocabulary: Callable[[], Vocabulary] | None = None,
        judge: LineJudge | None = None,
        scope: ClinicalScope | None = None,
    ) -> None:
        """``profile``: every setting (None: ``rag/profiles/default.toml``); ``vocabulary``: the
        corpus's document frequencies and abbreviations, which the aboutness judgement weighs a
        question's concepts by; called on the first question (it may read the whole corpus
        once). None: every concept weighs the same, no abbreviation. ``judge``: what gives lines
        their P(answers) (None: the one ``[quote] judge`` names); ``scope``: judges whether a question
        is a medical one (None: every question is)."""
        self.retriever, self.reranker, self.generator = retriever, reranker, generator
        self.profile = profile = profile or default_profile()
        self.scope, self.options = scope, options
        with_checks = getattr(verifier, "with_checks", None)  # the verifier's share of the checks
        self.verifier = with_checks(profile.verify) if with_checks is not None else verifier
        self._vocabulary_source = vocabulary
        self._vocabulary: Vocabulary | None = None
        quote, stop = profile.quote, options.stop
        self.judge = judge = judge or _line_judge(reranker, profile)
        threshold = _own(judge, "answer_threshold", quote.threshold, "quote.threshold")
        floor = _own(judge, "floor", quote.closest_floor, "quote.closest_floor")
        about = (
            None
            if quote.closest_about == "off"
            else profile.verify.model_copy(
                update={"about": quote.closest_about, "min_about": quote.closest_min_about}
            )
        )
        self.non_answer = NonAnswer(
            judge,
            floor or 0.0,
            quote.sentences,
            quote.closest_pool(),
            stop,
            about,
            quote.closest_min_coverage,
        )
        self.quoted = quoted = QuotedAnswerer(judge, threshold, quote.sentences, stop, quote.one_guideline)
        generated = GeneratedAnswerer(
            generator,
            self.verifier,
            self.non_answer,
            generation=profile.generator,
            verify=profile.verify,
            stop=stop,
            relevance=bool(getattr(reranker, "scores_are_probabilities", False)),
            degrade=options.degrade_on_generator_error,
        )
        self.answerers: tuple[QuotedAnswerer | GeneratedAnswerer, ...] = (
            (quoted, generated) if profile.generator.answers else (quoted,)
        )

    def vocabulary(self) -> Vocabulary | None:
        """The corpus vocabulary (read on first use, then kept)."""
        if self._vocabulary is None and self._vocabulary_source is not None:
            self._vocabulary = self._vocabulary_source()
        return self._vocabulary

    def with_profile(
        self, profile: Profile, *, verifier: SupportChecker | None = None, **options: Any
    ) -> Pipeline:
        """The same components with another profile (and another verifier, or, by name, other
        ``Options``)."""
        other = Pipeline(
            self.retriever,
            self.reranker,
            self.generator,
            verifier=verifier or self.verifier,
            profile=profile,
            options=dataclasses.replace(self.options, **options),
            vocabulary=self._vocabulary_source,
            judge=self.judge
            if (profile.quote, profile.verify) == (self.profile.quote, self.profile.verify)
            else None,
            scope=self.scope,
        )
        other._vocabulary = self._vocabulary
        return other

    def with_options(self, **options: Any) -> Pipeline:
        """The same components and profile with other ``Options`` (by name)."""
        return self.with_profile(self.profile, **options)

    def with_changes(self, changes: Mapping[str, Any], **options: Any) -> Pipeline:
        """The same components with some settings changed (``{"generator": {"max_tokens": 64}}``)."""
        return self.with_profile(with_changes(self.profile, dict(changes)), **options)

    def for_request(
        self,
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> Pipeline:
        """The pipeline one request asks for: its token budget, temperature and stop sequences."""
        generation = {"max_tokens": max_tokens, "temperature": temperature}
        changes = {"generator": {k: v for k, v in generation.items() if v is not None}}
        return self.with_changes(changes, **({} if stop is None else {"stop": tuple(stop)}))

    def read(self, question: str) -> ReadQuestion:
        """``question`` as every stage reads it (``rag/reading/question.py``)."""
        same_measure = self.profile.verify.checks("same_measure")
        return ReadQuestion.read(question, self.vocabulary, same_measure=same_measure)

    # -- evidence -------------------------------------------------------------------------------
    def evidence(
        self,
        question: str,
        *,
        filters: Filters | None = None,
        clock: Clock | None = None,
        history: Sequence[Message] = (),
    ) -> Evidence:
        """Retrieve and rerank; a failing reformulation or reranker degrades, and says so.

        ``history`` (earlier chat turns) only shapes the search text; reranking judges the
        passages against the question itself.
        """
        p, clock = self.profile, clock or Clock()
        usage: dict[str, int] = {}
        notes: list[str] = []
        query = searched = contextual_query(question, history)
        if p.reformulation.kind != "none":
            try:
                with clock.stage("reformulate"):
                    query, usage["reformulation_tokens"] = self._reformulate(query)
            except GeneratorError as exc:
                notes.append(f"query reformulation failed ({exc}); searched with the question as asked")
        wanted = filters or Filters(
            sources=frozenset(p.retrieval.sources), sections=frozenset(p.retrieval.sections)
        )
        with clock.stage("retrieve"):
            hits = self.retriever.retrieve(query, p.retrieval.candidates, wanted)
        candidates = hits[: p.rerank.candidates]
        if self.options.screen_instructions:
            candidates, set_aside = set_aside_instructions(candidates)
            notes.extend(set_aside)
        try:
            with clock.stage("rerank"):
                kept, dropped = rerank_and_filter(
                    self.reranker,
                    question,
                    candidates,
                    threshold=p.rerank.threshold,
                    max_keep=p.rerank.keep,
                    retrieval_order=p.rerank.order == "retrieval",
                )
        except (GeneratorError, ModelError) as exc:
            kept = [
                dataclasses.replace(h, rank=n) for n, h in enumerate(candidates[: p.rerank.keep], start=1)
            ]
            dropped = list(candidates[p.rerank.keep :])
            notes.append(f"reranker unavailable ({exc}); evidence is in retrieval order, not filtered")
        stats = getattr(self.reranker, "last_stats", None)  # the LLM reranker's generator cost
        if stats is not None:
            usage["rerank_generator_calls"] = stats.generator_calls
            usage["rerank_cache_hits"] = stats.cache_hits
        stopped = self._out_of_scope(searched, kept)
        if stopped is not None:  # every passage stays listed with its relevance
            kept, dropped = [], sorted([*kept, *dropped], key=lambda h: -h.score)
        return Evidence(kept=list(kept), dropped=list(dropped), usage=usage, notes=notes, stopped=stopped)

    def _out_of_scope(self, query: str, kept: Sequence[Hit]) -> str | None:
        """Why ``query`` is no medical question, under ``[rerank] min_clinical`` (None: it is one,
        or a kept passage names every key term it asks: "Where is the crash trolley on ward 7?"
        in a ward's own protocols, which the answer judgements then decide)."""
        threshold = self.profile.rerank.min_clinical
        if self.scope is None or threshold is None or not kept:
            return None
        why = self.scope.why_not(query, threshold)
        terms = self.read(query).terms if why is not None else ()
        if terms and any(not missing_terms(terms, hit.chunk) for hit in kept):
            return None
        return why

    def _reformulate(self, question: str) -> tuple[str, int]:
        config = self.profile.reformulation
        messages = prompts.reformulation_messages(config.kind, question)
        generation = self.generator.generate(messages, max_tokens=config.max_tokens)
        text = generation.text.strip()
        used = generation.prompt_tokens + generation.completion_tokens
        if config.kind == "hyde":  # search with the question and the hypothetical passage
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
        """A cited answer, a non-answer, a labelled closed-book answer, or a degraded evidence list."""
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
        """Yield the answer text as it may be presented, then the final ``Answer`` (the module
        docstring's chain). A generated answer arrives a sentence at a time, each once the
        support gate has verified it; the text pieces joined are the final ``Answer.text``.

        With ``stream_tokens=False`` the generator is called once without streaming (which also
        reports exact token usage) and the text comes as one piece. ``cancelled`` is asked after
        every generated token (the API's client may leave while a sentence is held back); once
        it says True the generation is closed and the stream ends without an answer.
        """
        question = clean_query(question)
        clock = Clock()
        if closed_book:
            yield from self._closed_book(question, clock, stream_tokens)
            return
        asked = self.conversation(question, history, clock)
        searched_with = history if self.profile.conversation.reading == "search" else ()
        found = self.evidence(asked.text, filters=filters, clock=clock, history=searched_with)
        turn = Turn(asked.read, found, clock, stream_tokens=stream_tokens, cancelled=cancelled)
        if found.kept:
            for answerer in self.answerers:  # quoted, then generated
                reply = answerer.reply(turn)
                if reply is not None:
                    yield from self._recorded(reply, turn, asked)
                    return
        else:
            turn.why.append(
                found.stopped or f"no passage cleared the evidence threshold ({len(found.dropped)} below it)"
            )
        yield from self._recorded(said(self.non_answer.reply(turn)), turn, asked)

    def conversation(
        self, question: str, history: Sequence[Message] = (), clock: Clock | None = None
    ) -> Resolved:
        """``question`` as every stage reads it, with the earlier user turns of ``history`` as
        ``[conversation] reading`` says (``rag/reading/conversation.py``); a failing rewrite reads
        the follow-up carried over instead, and says so."""
        earlier = earlier_questions(history)
        reading, same_measure = self.profile.conversation.reading, self.profile.verify.checks("same_measure")
        if not earlier or reading == "search":
            return Resolved(self.read(question))
        if reading == "rewrite":
            try:
                with (clock or Clock()).stage("rewrite"):
                    generation = self.generator.generate(
                        prompts.standalone_messages(question, earlier),
                        max_tokens=self.profile.conversation.max_tokens,
                    )
                text = " ".join(generation.text.split())
                if text:
                    return Resolved(self.read(text), rewritten=True)
            except GeneratorError:
                pass  # read carried over below
        return carry(question, earlier, self.vocabulary, same_measure=same_measure)

    def _recorded(
        self, reply: Iterator[str | Answer], turn: Turn, asked: Resolved | None = None
    ) -> Iterator[str | Answer]:
        """``reply`` with what was read put on its answer's record (``outcomes.with_reading``),
        after the line saying what earlier turns contributed (``Resolved.said``)."""
        model = self.non_answer.judge.model if self.non_answer.judge is not None else None
        prefix = asked.said if asked is not None else ""
        if prefix:
            yield prefix
        for piece in reply:
            if isinstance(piece, Answer):
                carried = asked.carried if asked is not None else ()
                piece = dataclasses.replace(with_reading(piece, turn, model), carried=carried)
                yield dataclasses.replace(piece, text=prefix + piece.text) if prefix else piece
            else:
                yield piece

    def quote(self, question: str) -> Answer | None:
        """The answer by quoting alone, or None where :meth:`answer` would go on to generate (or
        say it cannot answer); nothing is generated either way."""
        question = clean_query(question)
        clock = Clock()
        turn = Turn(self.read(question), self.evidence(question, clock=clock), clock)
        return self.quoted.answer(turn)

    def _closed_book(self, question: str, clock: Clock, stream_tokens: bool) -> Iterator[str | Answer]:
        messages = prompts.closed_book_messages(question)
        config, stop = self.profile.generator, self.options.stop
        text, usage = yield from generate(self.generator, messages, config, stop, clock, stream_tokens)
        yield Answer(
            question=question,
            text=text.strip(),
            mode="closed-book",
            timings=clock.timings,
            usage=usage,
            notes=(prompts.closed_book_label(),),
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


def _line_judge(reranker: Reranker, profile: Profile) -> LineJudge | None:
    """What gives lines their P(answers) (``[quote] judge``); None when nothing is quoted. The
    quote model reads the reranker's own relevance model, so no second model loads: refused at
    construction when the reranker has none, not on the first question."""
    quote = profile.quote
    if quote.judge == "reader":
        from rag.reading.reader import SHIPPED_READER, ReaderJudge, TrainedReader
        from rag.rerank.adapter import MANIFEST_FILE

        if quote.reader_path is None and not (SHIPPED_READER / MANIFEST_FILE).is_file():
            raise ConfigError(
                'quote.judge = "reader" needs quote.reader_path: no line reader ships with medcite '
                "yet (docs/results/clinician/reader.md); train one with `medcite train reader` and "
                "set reader_path to the model folder it writes"
            )
        reader = TrainedReader.shipped() if quote.reader_path is None else TrainedReader(quote.reader_path)
        return ReaderJudge(reader, profile.verify, quote.conflicts)
    if quote.threshold is None:
        return None
    if not isinstance(reranker, SentenceScorer):
        raise ConfigError(
            f"quote.threshold={quote.threshold} needs a reranker that scores sentences, and "
            f'{reranker.name!r} does not; use the trained reranker (rerank.backend = "trained") or '
            'write quote.threshold = "unset"'
        )
    return QuoteJudge(reranker, profile.verify)


def _own(judge: LineJudge | None, name: str, value: float | str | None, setting: str) -> float | None:
    """A threshold the profile gives, or with ``"model"`` the judge's own (refused when it has none)."""
    if value != "model":
        return None if value is None else float(value)
    own = getattr(judge, name, None) if judge is not None else None
    if own is None:
        raise ConfigError(
            f'{setting} = "model" needs a line judge with a {name} of its own: use judge = "reader"'
        )
    return float(own)
