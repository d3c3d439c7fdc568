"""The second answerer: a generated answer, let out sentence by sentence by the support gate.

Before generating, the gate is asked whether any kept passage is about the question
(``SupportGate.off_topic_everywhere``): if none is, every cited sentence would be left out, so
the turn passes to the non-answer without generating (not under ``[verify] policy = "flag"``,
which shows everything). Otherwise the model answers from the numbered passages and each
sentence reaches the client once the gate has verified it (``rag/gate/gate.py``); an answer
none of whose sentences may be shown is a non-answer, and a failed generation returns the
evidence labelled "degraded" (or raises, for the API to map to 503/504).
"""

from __future__ import annotations

import time
from collections.abc import Generator as Coroutine
from collections.abc import Iterator, Sequence

from core.errors import GeneratorError
from core.types import Answer, Generation, Message
from rag.answer.closest import NonAnswer
from rag.gate.gate import SupportChecker, SupportGate
from rag.generate import prompts
from rag.generate.citations import parse_answer, strip_markers
from rag.profile import GeneratorConfig, VerifyConfig
from rag.protocols import Generator
from rag.turn import Clock, Turn


def generate(
    generator: Generator,
    messages: Sequence[Message],
    config: GeneratorConfig,
    stop: Sequence[str],
    clock: Clock,
    stream_tokens: bool,
) -> Coroutine[str, None, tuple[str, dict[str, int]]]:
    """Yield text pieces (none when not streaming); return the full text and token usage.

    Only the time spent waiting on the generator counts as "generate": while a piece is out, the
    consumer may be verifying a sentence, which is the "verify" stage.
    """
    tokens, temperature, stop = config.max_tokens, config.temperature, tuple(stop)
    start = time.perf_counter()
    if not stream_tokens:
        try:
            generation: Generation = generator.generate(
                messages, max_tokens=tokens, temperature=temperature, stop=stop
            )
        finally:
            clock.add("generate", time.perf_counter() - start)
        return generation.text, {
            "prompt_tokens": generation.prompt_tokens,
            "completion_tokens": generation.completion_tokens,
        }
    pieces: list[str] = []
    stream = generator.stream(messages, max_tokens=tokens, temperature=temperature, stop=stop)
    # A generator's stream may return its token usage (StopIteration.value); `yield from` would
    # hide the pieces, so iterate by hand.
    try:
        while True:
            start = time.perf_counter()
            try:
                piece = next(stream)
            except StopIteration as stop_:
                usage = stop_.value if isinstance(stop_.value, dict) else {}
                return "".join(pieces), usage
            finally:
                clock.add("generate", time.perf_counter() - start)
            pieces.append(piece)
            yield piece
    finally:
        close = getattr(stream, "close", None)
        if close is not None:  # a consumer that stops early frees the model at once
            close()


class GeneratedAnswerer:
    """Generates through the support gate (module docstring)."""

    def __init__(
        self,
        generator: Generator,
        verifier: SupportChecker | None,
        non_answer: NonAnswer,
        *,
        generation: GeneratorConfig,
        verify: VerifyConfig,
        stop: Sequence[str],
        relevance: bool,
        degrade: bool,
    ) -> None:
        """``relevance``: the kept passages' scores are the relevance model's probabilities (the
        aboutness model reads them); ``degrade``: a failed generation returns the evidence
        labelled "degraded" rather than raising."""
        self.generator, self.verifier, self.non_answer = generator, verifier, non_answer
        self.generation, self.verify, self.stop = generation, verify, tuple(stop)
        self.relevance, self.degrade = relevance, degrade

    def gate(self, turn: Turn) -> SupportGate:
        return SupportGate(
            turn.read,
            turn.found.kept,
            self.verifier,
            self.verify,
            abstain_token=prompts.abstain_token(),
            relevance=self.relevance,
        )

    def reply(self, turn: Turn) -> Iterator[str | Answer] | None:
        """The generated answer's text as it may be presented, then the ``Answer``; None (the
        reason on the turn) when no kept passage is about the question."""
        gate = self.gate(turn)
        reason = None if self.verify.policy == "flag" else gate.off_topic_everywhere()
        if reason is not None:
            turn.why.append(reason)
            turn.off_topic = True
            return None
        return self._gated(turn, gate)

    def _gated(self, turn: Turn, gate: SupportGate) -> Iterator[str | Answer]:
        """Generate from the kept passages; the gate lets each sentence out once verified."""
        messages = prompts.rag_messages(turn.question, turn.found.kept)
        pieces = generate(
            self.generator, messages, self.generation, self.stop, turn.clock, turn.stream_tokens
        )
        cancelled = turn.cancelled
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
            if not self.degrade:
                raise
            degraded = degraded_answer(turn, str(exc), gate)
            yield degraded.text[len(sent) :]
            yield degraded
            return
        finally:
            pieces.close()
        turn.found.usage.update(usage)
        answer = self._finish(turn, final_raw, gate)
        # answer.text starts with what was sent: the gate sends nothing while the text could be
        # the abstention token, and only sentences with words, so an answer that abstains or
        # degrades here has sent nothing before (test_support_gate checks the invariant)
        rest = answer.text[len(sent) :]
        if rest:
            yield rest
        yield answer

    def _finish(self, turn: Turn, raw: str, gate: SupportGate) -> Answer:
        found = turn.found
        if raw.strip().upper().startswith(prompts.abstain_token()):
            turn.why.append("the model judged the retrieved evidence insufficient")
            return self.non_answer.reply(turn)
        parsed = parse_answer(raw, found.kept)
        if not any(ch.isalpha() for ch in strip_markers(parsed.text)):
            what = "citation markers but no answer text" if raw.strip() else "no text at all"
            return degraded_answer(turn, f"the model produced {what}")
        result = gate.finish(parsed)
        turn.clock.add("verify", gate.seconds)
        notes: list[str] = []
        if parsed.rejected:
            notes.append(f"removed citation markers that point at no source: {sorted(set(parsed.rejected))}")
        notes.extend(result.notes)
        if result.abstain:
            turn.why.extend(notes)
            return self.non_answer.reply(turn, result.sentences)
        if not result.citations:
            notes.append("the answer carries no valid citation; treat it as unverified")
        return Answer(
            question=turn.question,
            text=result.text,
            mode="rag",
            citations=result.citations,
            sentences=result.sentences,
            evidence=tuple(found.kept),
            timings=turn.clock.timings,
            usage=found.usage,
            notes=(*found.notes, *notes),
        )


def degraded_answer(turn: Turn, reason: str, gate: SupportGate | None = None) -> Answer:
    """The evidence, labelled as not an answer. Sentences the gate already let out (a stream that
    failed part-way) stay in front, with their citations, so the text matches the stream."""
    text = (
        "Generation failed, so this is not an answer: the passages below were retrieved "
        "for the question but not summarised."
    )
    sofar = gate.so_far() if gate is not None else None
    if sofar is not None and sofar.text:
        text = f"{sofar.text}\n\n{text}"
    return Answer(
        question=turn.question,
        text=text,
        mode="degraded",
        evidence=tuple(turn.found.kept),
        timings=turn.clock.timings,
        citations=sofar.citations if sofar else (),
        sentences=sofar.sentences if sofar else (),
        usage=turn.found.usage,
        notes=(*turn.found.notes, f"generator error: {reason}"),
    )
