"""The support gate: which generated sentences an answer may present, decided one sentence at a time.

The product's clinical-safety rule: never present a sentence its cited passage does not support,
or that cites a passage not about the question, as an answer; when the sources do not answer,
say so. Each sentence (after ``rag.generate.citations.parse_answer``) is checked twice:
*supported* (it cites a passage and the verifier's best support, ``rag.gate.verify``, reaches
the threshold) and *on topic* (every cited passage is about the question, ``rag.reading.aboutness``).

Before failing a sentence the gate repairs what it safely can: markers of passages not about the
question are dropped, a sentence no cited passage supports is re-cited to the one about the
question that supports it best (``_recite``), an unmarked whole entry of a passage is cited to it
(``_cite_quotations``; any unmarked sentence under ``[verify] uncited = "supported"``), and a
failing list keeps the items passages list word for word if two remain (``_trim_lists``); notes
name every move. A question the model repeats is no answer. A failing sentence follows
``[verify] policy``: ``drop`` (default) leaves it out (its record stays, ``status="removed"``;
no sentence left: abstain), ``flag`` prefixes ``[UNSUPPORTED] `` (``[UNVERIFIED] `` when nothing
could verify it), ``abstain`` withholds the whole answer. Without a verifier (no embeddings)
nothing counts as supported.

Streaming (``feed``): a sentence is decided once the next has begun or generation has ended
(``finish``), and ``feed`` returns only text that may be sent: nothing while it could still be
the abstention token, nothing before the end under ``abstain``, and for a dose, treatment,
missed-dose or storage question nothing until a sentence gives it (``_present``). The pieces
joined are the final text; ``[n]`` markers keep the prompt's numbering.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from core.types import Citation, Hit, SentenceSupport
from rag.gate.notes import FLAG_UNSUPPORTED, FLAG_UNVERIFIED, UNVERIFIED, reasons, repair_notes, summary
from rag.gate.support_signals import listed_entries, quoted_from_passage
from rag.generate.citations import ParsedAnswer, ParsedSentence, parse_answer, strip_markers
from rag.generate.prompts import source_label
from rag.profile import VerifyConfig
from rag.reading.aboutness import missing
from rag.reading.question import ReadQuestion

# A bracketed group, closed or still open at the end of the text: markers arriving, "[Table 1]".
_BRACKETED = re.compile(r"[\[【［][^\]】］]*(?:[\]】］]|$)")
_WORD = re.compile(r"\w")


Scored = tuple[SentenceSupport, dict[int, float]]  # a sentence's support and each cited passage's


class SupportChecker(Protocol):
    """What the gate needs of a verifier (``rag.gate.verify.SupportVerifier`` is one)."""

    threshold: float

    @property
    def uses_generator(self) -> bool:
        """True when scoring asks the generator (an LLM judge): the generator is busy until the
        answer is complete, so nothing is decided, and nothing sent, while it streams."""

    def score_sentences(
        self, sentences: Sequence[ParsedSentence], sources: Sequence[Hit], question: str | None = None
    ) -> list[tuple[SentenceSupport, dict[int, float]]]: ...


@dataclass(frozen=True)
class GateResult:
    """The gate's verdict on a whole answer once generation has ended."""

    tail: str  # text not yet returned by ``feed``: send it, then the answer
    text: str  # the answer text: everything ``feed`` and ``finish`` returned, joined
    sentences: tuple[SentenceSupport, ...]
    citations: tuple[Citation, ...]  # of the sentences in the text only, by first use
    abstain: bool  # no sentence may be presented (drop) or one may not (abstain)
    notes: tuple[str, ...]


class SupportGate:
    """Decides, sentence by sentence, what of one generated answer is presented (module docstring)."""

    def __init__(
        self,
        read: ReadQuestion,
        sources: Sequence[Hit],
        verifier: SupportChecker | None,
        verify: VerifyConfig,
        *,
        abstain_token: str,
        relevance: bool = False,
    ) -> None:
        """``verify``: the profile's ``[verify]`` section (the policy, the aboutness rule, the
        checks on); ``relevance``: the sources' scores are the relevance model's probabilities,
        which the aboutness model reads beside the question's concepts (``AboutnessModel``)."""
        self._relevance = relevance
        self.read = read
        self._question_text = read.text
        self.sources = list(sources)
        self._labels = {_bare(source_label(h.chunk)) for h in self.sources}
        self.verifier = verifier
        self.verify = verify
        self.policy = verify.policy
        self.abstain_token = abstain_token.upper()
        self.seconds = 0.0  # spent verifying (the pipeline reports it as the "verify" stage)
        self._records: list[SentenceSupport] = []
        self._pieces: list[str] = []
        self._end = 0  # offset in the parsed text up to which sentences are decided
        self._carry: str | None = None  # the separator before a run of removed sentences
        self._pair_scores: dict[int, list[float]] = {}
        self._cited: list[int] = []  # markers of the sentences in the text, by first use
        self._missing: dict[int, tuple[str, ...]] = {}
        self._trimmed: list[int] = []  # markers taken out of sentences (_without_off_topic)
        self._moved: list[tuple[tuple[int, ...], int]] = []  # (markers, the one now cited) (_recite)
        self._lists_cut: list[int] = []  # items left out of each list rewritten (_trim_lists)
        self._quoted: list[int] = []  # the passage each uncited quotation now cites (_cite_quotations)
        self._sourced: list[int] = []  # the passage each other uncited sentence now cites (_recite)
        # What the question asks for (a dose, a treatment, ...) that no presented sentence has given
        # yet; while any is missing, sentences that pass are held back, not sent (_present).
        self._wanted = [] if self.policy == "flag" or not verify.checks("asked_for") else list(read.kinds)
        self._held: list[str] = []
        self._held_records: list[int] = []

    # -- streaming ------------------------------------------------------------------------------
    def feed(self, raw: str) -> str:
        """The text that may be sent now, given the raw generation so far ("" while undecided)."""
        if self.policy == "abstain" or self._could_be_abstention(raw):
            return ""
        if self.verifier is not None and self.verifier.uses_generator:
            return ""  # the judge needs the model, which is still writing: decide at the end
        parsed = parse_answer(raw, self.sources)
        pending = [s for s in parsed.sentences if s.start >= self._end]
        # The text after an earlier sentence contains the text after a later one, so the ready
        # sentences are always a run from the first pending one: decisions stay in text order.
        ready = [s for s in pending[:-1] if _begun(parsed.text[s.end :])]
        return self._decide(parsed, ready)

    def finish(self, parsed: ParsedAnswer) -> GateResult:
        """Decide the sentences ``feed`` has not, and the answer as a whole."""
        tail = self._decide(parsed, [s for s in parsed.sentences if s.start >= self._end])
        if self._held:
            return self._withheld()
        records = self._records
        failed = [r for r in records if r.reasons]
        text = "".join(self._pieces)
        if self.policy == "abstain" and failed:
            withheld = "withheld: another sentence of the answer failed the support gate (policy abstain)"
            records = [_removed(r, r.reasons or (withheld,)) for r in records]
            note = f"the answer was withheld (policy abstain): {summary(failed, len(records))}"
            return GateResult("", "", tuple(records), (), True, (note,))
        if not text.strip():
            note = (
                f"none of the {len(records)} generated sentences may be presented "
                f"({reasons(failed)}); the passages found are listed instead"
            )
            return GateResult("", "", tuple(records), (), True, (note,))
        titles = {k: self.sources[k - 1].chunk.title for k in self._trimmed}
        notes = repair_notes(titles, self._trimmed, self._moved, self._quoted, self._sourced, self._lists_cut)
        if failed and self.policy == "flag":
            notes.append(
                f"{summary(failed, len(records))}; they are marked {FLAG_UNSUPPORTED.strip()} "
                f"or {FLAG_UNVERIFIED.strip()} in the text: do not rely on them"
            )
        elif failed:
            notes.append(f"removed from the answer: {summary(failed, len(records))}")
        return GateResult(tail, text, tuple(records), self._citations(), False, tuple(notes))

    def so_far(self) -> GateResult:
        """What has been let out so far, for a stream whose generation failed part-way."""
        text = "".join(self._pieces)
        return GateResult("", text, tuple(self._records), self._citations(), False, ())

    # -- deciding -------------------------------------------------------------------------------
    def _decide(self, parsed: ParsedAnswer, batch: Sequence[ParsedSentence]) -> str:
        if not batch:
            return ""
        start = time.perf_counter()
        batch = [self._without_off_topic(s) for s in batch]
        scored = self._score(batch)
        self._cite_quotations(batch, scored)
        self._recite(batch, scored)
        self._trim_lists(batch, scored)
        out: list[str] = []
        for sentence, (record, by_marker) in zip(batch, scored, strict=True):
            reasons = self._reasons(sentence, record)
            on_topic = not any(self._missing_for(k) for k in sentence.markers)
            gap = parsed.text[self._end : sentence.start]
            self._end = sentence.end
            if reasons and self.policy != "flag":  # drop; under abstain nothing is sent anyway
                self._records.append(_with(record, "removed", reasons, on_topic))
                self._carry = gap if self._carry is None else self._carry
                continue
            if self._carry is not None and "\n" not in gap:  # keep the separator of the removed run
                gap = self._carry
            self._carry = None
            if not self._pieces and not self._held:
                gap = gap.lstrip()
            label = ""
            if reasons:
                label = FLAG_UNVERIFIED if reasons == [UNVERIFIED] else FLAG_UNSUPPORTED
            self._records.append(_with(record, "flagged" if reasons else "shown", reasons, on_topic))
            for k in sentence.markers:
                if k not in self._cited:
                    self._cited.append(k)
                if k in by_marker:
                    self._pair_scores.setdefault(k, []).append(by_marker[k])
            out.extend(self._present(gap + label + sentence.text))
        self.seconds += time.perf_counter() - start
        return "".join(out)

    def _present(self, piece: str) -> list[str]:
        """The pieces that may be sent now that ``piece`` (whose record was just added) passed.

        A question that asks for a dose, a treatment, a missed dose or storage is answered only
        by an answer that gives it (``AskedFor.given_in``: a dose is an amount with a unit). Until
        a presented sentence does, the ones that pass are held back: asked "What is the dose of
        epinephrine in neonatal resuscitation?", the model's dose was uncited (and wrong) and
        was removed, and what passed was a line on how weak the evidence for dosing is, which
        medcite then presented as the answer. Held sentences are sent with the one that gives
        what was asked, or withheld at the end (``_withheld``)."""
        if not self._wanted:
            self._pieces.append(piece)
            return [piece]
        self._held.append(piece)
        self._held_records.append(len(self._records) - 1)
        self._wanted = [kind for kind in self._wanted if not kind.given_in(piece)]
        if self._wanted:
            return []
        released, self._held, self._held_records = self._held, [], []
        self._pieces.extend(released)
        return released

    def _withheld(self) -> GateResult:
        """Abstain: the sentences that passed never gave what the question asks for."""
        wanted = " or ".join(kind.name for kind in self._wanted)
        reason = f"withheld: no sentence of the answer gives {wanted}"
        records = list(self._records)
        for i in self._held_records:
            records[i] = _removed(records[i], (reason,))
        note = (
            f"the sentences that passed the support gate give no {wanted.removeprefix('a ')}, which the "
            "question asks for; the passages found are listed instead"
        )
        return GateResult("", "", tuple(records), (), True, (note,))

    def _without_off_topic(self, sentence: ParsedSentence) -> ParsedSentence:
        """The sentence without its markers of passages not about the question, when at least
        one of its passages is: it is then verified against those alone (a list the off-topic
        passage contributed to fails), and a reader never follows a marker to another disease."""
        off = [k for k in sentence.markers if self._missing_for(k)]
        if not off or len(off) == len(sentence.markers):
            return sentence
        text = sentence.text
        for k in off:  # with the spaces before it when punctuation or a marker follows: "disability [1]."
            text = re.sub(rf"[ \t]*\[{k}\](?=[ \t]*(?:[.;:,!?[]|$))|\[{k}\]", "", text)
            self._trimmed.append(k)
        kept = tuple(k for k in sentence.markers if k not in off)
        return replace(sentence, text=text, markers=kept)

    def _cite_quotations(self, batch: list[ParsedSentence], scored: list[Scored]) -> None:
        """Cite an uncited sentence to the passage about the question that it quotes word for word.

        A model listing a passage's entries often puts one marker after the last ("criteria: 1.
        A; 2. B; 3. C [1]."), so the items before it arrive uncited and were removed: asked "What
        are the qSOFA criteria?", medcite showed one criterion of three. An uncited sentence that
        is one whole entry of a passage about the question (``quoted_from_passage``: a sentence,
        list item or table row of it, as written) is cited to that passage and verified as so
        cited. Nothing else an uncited sentence says is given a source."""
        if self.verifier is None:
            return
        tries: list[tuple[int, ParsedSentence]] = []
        for i, sentence in enumerate(batch):
            if sentence.markers or not any(ch.isalpha() for ch in sentence.claim):
                continue
            quoted = [
                k
                for k in range(1, len(self.sources) + 1)
                if not self._missing_for(k) and quoted_from_passage(sentence.claim, self.sources[k - 1].chunk)
            ]
            if quoted:
                tries.append((i, _cited_to(sentence, quoted[0])))
        if not tries:
            return
        variants = [variant for _, variant in tries]
        results = self.verifier.score_sentences(variants, self.sources, self._question_text)
        for (i, variant), result in zip(tries, results, strict=True):
            if result[0].supported:
                batch[i], scored[i] = variant, result
                self._quoted.append(variant.markers[0])

    def _recite(self, batch: list[ParsedSentence], scored: list[Scored]) -> None:
        """Cite the passage that supports a sentence when the one it cites does not.

        A sentence that cites passages of which none supports it, or only passages not about the
        question, is verified against each other passage about the question; if one supports it,
        its markers are replaced by that passage's (the best supporting one) and it is judged as
        so cited. The model often copies a line from [1] and cites [2]; the sentence is then
        shown, cited to a passage that supports it, and a note says so. Under ``uncited =
        "supported"`` a sentence without a marker is treated the same way (the model often
        leaves the sentence that answers uncited and cites the next). A sentence no passage
        supports is left to the gate as before."""
        if self.verifier is None:
            return
        tries: list[tuple[int, int, ParsedSentence]] = []
        for i, (sentence, (record, _)) in enumerate(zip(batch, scored, strict=True)):
            cited_on_topic = any(not self._missing_for(k) for k in sentence.markers)
            if not sentence.markers and not self._sources_uncited(sentence):
                continue
            if sentence.markers and record.supported and cited_on_topic:
                continue
            tries += [
                (i, k, _cited_to(sentence, k))
                for k in range(1, len(self.sources) + 1)
                if k not in sentence.markers and not self._missing_for(k)
            ]
        if not tries:
            return
        results = self.verifier.score_sentences([t[2] for t in tries], self.sources, self._question_text)
        best: dict[int, tuple[ParsedSentence, Scored]] = {}
        for (i, _k, variant), result in zip(tries, results, strict=True):
            if result[0].supported and (i not in best or result[0].support > best[i][1][0].support):
                best[i] = (variant, result)
        for i, (variant, result) in best.items():
            if batch[i].markers:
                self._moved.append((batch[i].markers, variant.markers[0]))
            else:
                self._sourced.append(variant.markers[0])
            batch[i], scored[i] = variant, result

    def _sources_uncited(self, sentence: ParsedSentence) -> bool:
        """Whether an uncited sentence may be given the passage that supports it (``[verify] uncited``)."""
        return self.verify.uncited == "supported" and any(ch.isalpha() for ch in sentence.claim)

    def _trim_lists(self, batch: list[ParsedSentence], scored: list[Scored]) -> None:
        """Present the part of a list that the passages list.

        A sentence that still fails and is a plain list ("The symptoms of X include A, B, C and
        D") keeps the items that are, word for word, entries of passages about the question (A
        and C), cited to those passages, and loses the rest (B, a paraphrase; D, misspelt or
        from memory); the note counts the items left out. It needs at least two items kept and
        is verified again as rewritten (every item an entry of a passage it cites). Items with a
        number, or a lead-in with a negation, are never rewritten (``listed_entries``)."""
        if self.verifier is None:
            return
        on_topic = [k for k in range(1, len(self.sources) + 1) if not self._missing_for(k)]
        chunks = [self.sources[k - 1].chunk for k in on_topic]
        tries: list[tuple[int, ParsedSentence, int]] = []
        for i, (sentence, (record, _)) in enumerate(zip(batch, scored, strict=True)):
            off_topic = any(self._missing_for(k) for k in sentence.markers)
            listing = None
            if sentence.markers and (not record.supported or off_topic):
                listing = listed_entries(sentence.claim, chunks)
            if listing is None:
                continue
            lead_in, items = listing
            kept = [(item, on_topic[held[0]]) for item, held in items if held]
            if len(kept) < 2:
                continue
            markers = tuple(sorted({k for _, k in kept}))
            body = f"{lead_in}{', '.join(item for item, _ in kept[:-1])} and {kept[-1][0]}"
            text = body + " " + "".join(f"[{k}]" for k in markers) + "."
            variant = replace(sentence, text=text, claim=f"{body}.", markers=markers)
            tries.append((i, variant, len(items) - len(kept)))
        if not tries:
            return
        results = self.verifier.score_sentences([t[1] for t in tries], self.sources, self._question_text)
        for (i, variant, dropped), result in zip(tries, results, strict=True):
            if result[0].supported:
                batch[i], scored[i] = variant, result
                self._lists_cut.append(dropped)

    def _score(self, batch: Sequence[ParsedSentence]) -> list[tuple[SentenceSupport, dict[int, float]]]:
        if self.verifier is None:
            return [(SentenceSupport(s.claim, s.markers, 0.0, False), {}) for s in batch]
        return self.verifier.score_sentences(batch, self.sources, self._question_text)

    def _reasons(self, sentence: ParsedSentence, record: SentenceSupport) -> list[str]:
        reasons: list[str] = []
        if not any(ch.isalpha() for ch in sentence.claim):
            reasons.append("no answer text")
        elif (
            self.verify.checks("labels") and _bare(sentence.claim) in self._labels
        ):  # "Marfan syndrome (...) [1]"
            reasons.append("repeats a source's label, not an answer")
        elif self.verify.checks("labels") and strip_markers(sentence.claim).rstrip(" .").endswith("?"):
            reasons.append("asks a question, not an answer")  # the model sometimes repeats the question
        elif not sentence.markers:  # known unsupported, verifier or not
            reasons.append("cites no source")
        elif self.verifier is None:
            reasons.append(UNVERIFIED)
        elif not record.supported:
            reasons.append(
                f"support {record.support:.2f} is below the threshold {self.verifier.threshold:.2f}"
            )
        for k in sentence.markers:
            missing = self._missing_for(k)
            if missing:
                title = self.sources[k - 1].chunk.title
                reasons.append(f"cites [{k}] ({title}), which does not mention {', '.join(missing)}")
        return reasons

    def off_topic_everywhere(self) -> str | None:
        """Why no passage can be cited on topic, or None when one can: every source lacks a key
        term or what the question asks for. Then every cited sentence would be left out under
        ``drop`` and ``abstain``, so the pipeline abstains without generating."""
        missing = [self._missing_for(k) for k in range(1, len(self.sources) + 1)]
        if not missing or not all(missing):
            return None
        counts = Counter(name for names in missing for name in names)
        lacking = ", ".join(f"{name} ({n})" for name, n in counts.most_common())
        n = len(missing)
        return f"nothing was generated: each of the {n} passages found lacks a word asked ({lacking})"

    def _missing_for(self, marker: int) -> tuple[str, ...]:
        if marker not in self._missing:
            hit = self.sources[marker - 1]
            relevance = hit.score if self._relevance else None
            self._missing[marker] = missing(self.read, hit.chunk, self.verify, relevance)
        return self._missing[marker]

    def _citations(self) -> tuple[Citation, ...]:
        out = []
        for k in self._cited:
            scores = self._pair_scores.get(k)
            support = float(np.mean(scores)) if scores else None
            out.append(Citation.from_chunk(k, self.sources[k - 1].chunk, support=support))
        return tuple(out)

    def _could_be_abstention(self, raw: str) -> bool:
        probe = raw.lstrip().upper()
        return probe.startswith(self.abstain_token) or self.abstain_token.startswith(probe)


def _bare(text: str) -> str:
    """Case, spacing and the closing punctuation set aside, to compare a sentence with a label."""
    return " ".join(text.split()).casefold().rstrip(" .:;")


def _cited_to(sentence: ParsedSentence, marker: int) -> ParsedSentence:
    """``sentence`` with its markers replaced by ``[marker]``, placed before its final stop
    (``.``, ``!``, ``?``, or the ``;``, ``:`` or ``,`` that ends a list item)."""
    text = sentence.text
    for k in sentence.markers:
        text = re.sub(rf"[ \t]*\[{k}\](?=[ \t]*(?:[.;:,!?[]|$))|\[{k}\]", "", text)
    body = text.rstrip()
    stop = body[-1] if body and body[-1] in ".!?;:," else ""
    body = body[: len(body) - len(stop)].rstrip()
    trailing = text[len(text.rstrip()) :]
    return replace(sentence, text=f"{body} [{marker}]{stop}{trailing}", markers=(marker,))


def _begun(after: str) -> bool:
    """Whether the text after a sentence holds a word outside brackets: the next sentence has
    begun, so nothing still to come (markers on the next line, a closing bracket) can join it."""
    return bool(_WORD.search(_BRACKETED.sub("", after)))


def _with(record: SentenceSupport, status: str, reasons: Sequence[str], on_topic: bool) -> SentenceSupport:
    return SentenceSupport(
        record.text, record.markers, record.support, record.supported, status, tuple(reasons), on_topic
    )


def _removed(record: SentenceSupport, reasons: Sequence[str]) -> SentenceSupport:
    return _with(record, "removed", reasons, record.on_topic)
