"""Pipeline behaviour with fake stages: citations, abstention, degradation, closed-book, choice."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.errors import ConfigError, GeneratorError, GeneratorTimeout, ModelError, QueryError
from core.types import Chunk, Generation, Hit, Message
from rag.answer.outcomes import NOTHING_RELEVANT
from rag.pipeline import Pipeline
from rag.reading.clinical import ClinicalModel, ClinicalScope
from rag.rerank.identity import IdentityReranker
from tests.helpers import HashEmbedder, ScriptedVerifier, fake_profile

TEXTS = {
    "af#0": "The CHA2DS2-VASc score is the recommended tool for stroke risk in AF.",
    "af#1": "Men with a CHA2DS2-VASc score of 2 or more should receive oral anticoagulation.",
    "cap#0": "Amoxicillin is first line for low-severity community-acquired pneumonia.",
}


def hit(cid: str, score: float, rank: int) -> Hit:
    chunk = Chunk(
        chunk_id=cid,
        doc_id=cid.split("#")[0],
        title=cid.split("#")[0].upper(),
        section=("S",),
        source="open-medicine",
        url=f"https://doi.org/{cid}",
        license="MIT",
        start=0,
        end=len(TEXTS[cid]),
        text=TEXTS[cid],
    )
    return Hit(chunk=chunk, score=score, rank=rank, retriever="hybrid")


class FakeRetriever:
    name = "fake"

    def __init__(self) -> None:
        self.queries: list[str] = []

    def retrieve(self, query, k, filters=None):
        self.queries.append(query)
        return [hit(c, 1.0 / n, n) for n, c in enumerate(TEXTS, start=1)][:k]


class KeywordReranker:
    """Probability-scale scores: 0.9 if the passage mentions the keyword, else 0.1."""

    name = "keyword"
    scores_are_probabilities = True

    def __init__(self, keyword: str) -> None:
        self.keyword = keyword

    def rerank(self, question, hits):
        scored = [(0.9 if self.keyword in h.chunk.text else 0.1, h) for h in hits]
        scored.sort(key=lambda x: -x[0])
        return [Hit(h.chunk, s, n, h.retriever + "+kw") for n, (s, h) in enumerate(scored, start=1)]


class FakeGenerator:
    name = "fake-llm"

    def __init__(self, reply: str = "", logprobs=None, error: Exception | None = None) -> None:
        self.reply, self.logprobs, self.error = reply, logprobs or {}, error
        self.calls: list[list] = []

    def generate(self, messages, *, max_tokens, temperature=0.0, stop=()):
        self.calls.append(list(messages))
        if self.error:
            raise self.error
        return Generation(
            text=self.reply, prompt_tokens=100, completion_tokens=len(self.reply.split()), seconds=0.01
        )

    def stream(self, messages, *, max_tokens, temperature=0.0, stop=()):
        self.calls.append(list(messages))
        if self.error:
            raise self.error
        for word in self.reply.split(" "):
            yield word + " "

    def next_token_logprobs(self, messages, candidates):
        self.calls.append(list(messages))
        return {c: self.logprobs.get(c, -math.inf) for c in candidates}

    def fingerprint(self):
        return {"name": self.name}


def pipeline(generator, reranker=None, verifier=None, **sections) -> tuple[Pipeline, FakeRetriever]:
    """A pipeline over the three passages above; its verifier supports every cited sentence
    unless told otherwise (the support gate is tested in test_support_gate.py). ``sections``:
    profile settings by section (``rerank={"threshold": 0.5}``)."""
    retriever = FakeRetriever()
    profile = fake_profile({"rerank": {"keep": 3, **sections.pop("rerank", {})}, **sections})
    return Pipeline(
        retriever,
        reranker or IdentityReranker(),
        generator,
        verifier=verifier or ScriptedVerifier(),
        profile=profile,
    ), retriever


def test_a_question_read_as_no_medical_one_keeps_no_passage_unless_one_names_all_it_asks():
    embedder = HashEmbedder()
    no_question_is_medical = ClinicalModel(np.zeros(embedder.dim), -5.0, embedder.fingerprint())
    scope = ClinicalScope(embedder, no_question_is_medical)
    gen = FakeGenerator("Use the CHA2DS2-VASc score [1].")
    pipe, _ = pipeline(gen, rerank={"min_clinical": 0.5})
    pipe = Pipeline(
        pipe.retriever, pipe.reranker, gen, verifier=ScriptedVerifier(), profile=pipe.profile, scope=scope
    )
    answer = pipe.answer("What is the capital of France?")
    assert answer.outcome == "nothing_relevant" and not gen.calls
    assert any("does not read as a medical one" in note for note in answer.notes), answer.notes
    assert sorted(h.chunk.chunk_id for h in answer.read) == sorted(TEXTS)  # still listed, with scores
    assert pipe.answer("Which score is used in AF?").outcome == "answer"  # af#0 has score and AF
    unchecked = pipe.with_changes({"rerank": {"min_clinical": None}})
    assert unchecked.evidence("What is the capital of France?").kept  # the check is the setting's


def test_cited_answer_resolves_every_marker_to_its_passage():
    gen = FakeGenerator("Use the CHA2DS2-VASc score [1]. Men scoring 2 or more get anticoagulation [2].")
    answer = pipeline(gen)[0].answer("Which score is used in AF?")
    assert answer.mode == "rag"
    assert [(c.marker, c.chunk_id, c.url) for c in answer.citations] == [
        (1, "af#0", "https://doi.org/af#0"),
        (2, "af#1", "https://doi.org/af#1"),
    ]
    assert answer.citations[1].quote == TEXTS["af#1"]
    assert [h.chunk.chunk_id for h in answer.evidence] == ["af#0", "af#1", "cap#0"]
    assert set(answer.timings) >= {"retrieve", "rerank", "generate"}
    assert answer.usage["prompt_tokens"] == 100
    user_prompt = gen.calls[0][1].content
    assert "[1] AF (S; open-medicine)" in user_prompt and "[3] CAP" in user_prompt


def test_markers_pointing_at_no_source_are_removed_never_resolved():
    answer = pipeline(FakeGenerator("Anticoagulate at a score of 2 [2][7]."))[0].answer("When?")
    assert [c.chunk_id for c in answer.citations] == ["af#1"]
    assert "[7]" not in answer.text and any("[7]" in n for n in answer.notes)


def test_no_evidence_above_threshold_abstains_without_calling_the_generator():
    gen = FakeGenerator("should not be used")
    answer = pipeline(gen, KeywordReranker("otitis"), rerank={"threshold": 0.5})[0].answer(
        "Treatment of otitis media?"
    )
    assert answer.outcome == "nothing_relevant" and answer.text == NOTHING_RELEVANT and answer.citations == ()
    assert gen.calls == [] and answer.citations == ()


def test_threshold_keeps_only_relevant_evidence():
    gen = FakeGenerator("Amoxicillin is first line [1].")
    answer = pipeline(gen, KeywordReranker("Amoxicillin"), rerank={"threshold": 0.5})[0].answer(
        "CAP antibiotic?"
    )
    assert [h.chunk.chunk_id for h in answer.evidence] == ["cap#0"]
    assert answer.citations[0].chunk_id == "cap#0"


def test_model_saying_insufficient_is_an_abstention():
    answer = pipeline(FakeGenerator("INSUFFICIENT"))[0].answer("What is the dose of drug X?")
    assert answer.mode == "abstained" and answer.citations == ()


def test_generator_failure_degrades_to_labelled_evidence():
    answer = pipeline(FakeGenerator(error=GeneratorTimeout("no reply within 5 s")))[0].answer("Which score?")
    assert answer.mode == "degraded" and answer.citations == ()
    assert len(answer.evidence) == 3 and "not an answer" in answer.text
    assert any("no reply within 5 s" in n for n in answer.notes)


def test_closed_book_is_explicit_and_skips_retrieval():
    pipe, retriever = pipeline(FakeGenerator("Warfarin or a DOAC."))
    answer = pipe.answer("How is AF anticoagulated?", closed_book=True)
    assert answer.mode == "closed-book" and retriever.queries == []
    assert answer.evidence == () and "without sources" in answer.notes[0]


def test_stream_yields_text_then_the_final_answer():
    items = list(pipeline(FakeGenerator("Use CHA2DS2-VASc [1]."))[0].stream("Which score?"))
    assert "".join(i for i in items if isinstance(i, str)).strip() == "Use CHA2DS2-VASc [1]."
    assert items[-1].mode == "rag" and items[-1].citations[0].chunk_id == "af#0"


def test_choice_reads_option_letter_probabilities():
    gen = FakeGenerator(logprobs={"A": math.log(0.2), "B": math.log(0.6), "C": math.log(0.2)})
    answer = pipeline(gen)[0].choose("Which score?", {"A": "HAS-BLED", "B": "CHA2DS2-VASc", "C": "CURB-65"})
    assert answer.choice == "B" and answer.text == "B. CHA2DS2-VASc"
    assert answer.option_probs == pytest.approx({"A": 0.2, "B": 0.6, "C": 0.2})
    assert answer.mode == "rag" and len(answer.evidence) == 3


def test_choice_never_defaults_when_no_letter_has_probability():
    with pytest.raises(GeneratorError, match="no probability"):
        pipeline(FakeGenerator(logprobs={}))[0].choose("Q?", {"A": "x", "B": "y"}, closed_book=True)


def test_hyde_reformulation_searches_with_the_hypothetical_passage_and_records_cost():
    pipe, retriever = pipeline(FakeGenerator("A passage about CHA2DS2-VASc."), reformulation={"kind": "hyde"})
    answer = pipe.answer("Which score?")
    assert retriever.queries == ["Which score?\nA passage about CHA2DS2-VASc."]
    assert answer.usage["reformulation_tokens"] == 100 + 4 and "reformulate" in answer.timings


@pytest.mark.parametrize("bad", ["", "   ", "?!?"])
def test_unusable_questions_are_refused(bad):
    with pytest.raises(QueryError):
        pipeline(FakeGenerator("x"))[0].answer(bad)


class BrokenReranker:
    name = "llm"
    scores_are_probabilities = True

    def rerank(self, question, hits):
        raise GeneratorError("reranker's generator is unreachable")


def test_failing_reranker_degrades_to_unfiltered_evidence_and_says_so():
    gen = FakeGenerator("Use CHA2DS2-VASc [1].")
    answer = pipeline(gen, BrokenReranker(), rerank={"threshold": 0.5, "keep": 2})[0].answer("Which score?")
    assert answer.mode == "rag" and [h.chunk.chunk_id for h in answer.evidence] == ["af#0", "af#1"]
    assert any("reranker unavailable" in n and "not filtered" in n for n in answer.notes)


def test_failing_reformulation_falls_back_to_the_question():
    class FailsOnce(FakeGenerator):
        def generate(self, messages, **kw):
            if not self.calls:
                self.calls.append(list(messages))
                raise GeneratorError("server down")
            return super().generate(messages, **kw)

    pipe, retriever = pipeline(FailsOnce("Use CHA2DS2-VASc [1]."), reformulation={"kind": "rewrite"})
    answer = pipe.answer("Which score?")
    assert retriever.queries == ["Which score?"] and answer.mode == "rag"
    assert any("reformulation failed" in n for n in answer.notes)


def test_answer_of_only_markers_is_degraded_not_presented_as_an_answer():
    answer = pipeline(FakeGenerator("[1] [2] [3]"))[0].answer("Which phenotypes are frequent?")
    assert answer.mode == "degraded" and answer.citations == ()
    assert any("no answer text" in n for n in answer.notes) and len(answer.evidence) == 3


def test_list_passages_are_flattened_for_the_prompt():
    from rag.generate.prompts import flatten_lines

    assert flatten_lines("Arachnodactyly\nEctopia lentis\n\nTall stature") == (
        "Arachnodactyly; Ectopia lentis; Tall stature"
    )
    assert flatten_lines("First sentence.\nSecond line") == "First sentence. Second line"


class UsageReportingGenerator(FakeGenerator):
    """Streams like llama.cpp does here: pieces, then the token usage as the return value."""

    def stream(self, messages, *, max_tokens, temperature=0.0, stop=()):
        yield from super().stream(messages, max_tokens=max_tokens)
        return {"prompt_tokens": 321, "completion_tokens": 7}


def test_streamed_generation_reports_the_generators_token_usage():
    answer = list(pipeline(UsageReportingGenerator("Use CHA2DS2-VASc [1]."))[0].stream("Which score?"))[-1]
    assert answer.usage["prompt_tokens"] == 321 and answer.usage["completion_tokens"] == 7


def test_reading_search_searches_with_the_previous_user_turn_but_answers_the_question():
    gen = FakeGenerator("Use CHA2DS2-VASc [1].")
    pipe, retriever = pipeline(gen)
    history = [Message("user", "AF anticoagulation?"), Message("assistant", "Yes [1]."), Message("user", "")]
    answer = pipe.with_changes({"conversation": {"reading": "search"}}).answer(
        "And in women?", history=history
    )
    assert retriever.queries == ["AF anticoagulation?\nAnd in women?"]
    assert answer.question == "And in women?"
    assert (
        "And in women?" in gen.calls[-1][-1].content
        and "AF anticoagulation?" not in gen.calls[-1][-1].content
    )


def test_a_follow_up_is_read_with_every_earlier_user_turn_and_says_what_it_carried():
    gen = FakeGenerator("Use CHA2DS2-VASc [1].")
    pipe, retriever = pipeline(gen)
    pipe = pipe.with_changes({"conversation": {"reading": "carry"}})
    history = [
        Message("user", "AF, on dabigatran"),
        Message("assistant", "Dabigatran 150 mg twice daily [1]."),  # medcite's own reply: not read
        Message("user", "CrCl is 24 mL/min"),
    ]
    answer = pipe.answer("what dose now?", history=history)
    assert retriever.queries == ["AF, on dabigatran\nCrCl is 24 mL/min\nwhat dose now?"]
    assert answer.question == "AF, on dabigatran\nCrCl is 24 mL/min\nwhat dose now?"
    assert answer.carried == ("CrCl 24 mL/min", "dabigatran")
    assert answer.text.startswith("Read with: CrCl 24 mL/min, dabigatran (from your earlier messages).\n\n")
    assert not any("150 mg" in m.content for call in gen.calls for m in call)
    pieces = list(pipe.stream("what dose now?", history=history))
    assert "".join(p for p in pieces if isinstance(p, str)) == pieces[-1].text  # streamed as shown


def test_a_failing_rewrite_reads_the_follow_up_carried_over():
    pipe, _ = pipeline(FakeGenerator(error=GeneratorTimeout("no reply within 5 s")))
    pipe = pipe.with_changes({"conversation": {"reading": "rewrite"}})
    asked = pipe.conversation("what dose now?", [Message("user", "AF, on dabigatran, CrCl 24 mL/min")])
    assert asked.text == "AF, on dabigatran, CrCl 24 mL/min\nwhat dose now?" and not asked.rewritten


def test_reading_rewrite_answers_the_generators_standalone_question():
    gen = FakeGenerator("What dabigatran dose for AF with CrCl 24 mL/min?")
    pipe, _ = pipeline(gen)
    pipe = pipe.with_changes({"conversation": {"reading": "rewrite"}})
    asked = pipe.conversation("what dose now?", [Message("user", "AF, on dabigatran, CrCl 24 mL/min")])
    assert asked.text == "What dabigatran dose for AF with CrCl 24 mL/min?" and asked.rewritten
    assert asked.said == "Read as: What dabigatran dose for AF with CrCl 24 mL/min?\n\n"
    assert "AF, on dabigatran" in gen.calls[-1][-1].content and "what dose now?" in gen.calls[-1][-1].content


def test_without_degradation_a_generator_error_reaches_the_caller():
    pipe, _ = pipeline(FakeGenerator(error=GeneratorTimeout("no reply within 5 s")))
    with pytest.raises(GeneratorTimeout):
        pipe.with_options(degrade_on_generator_error=False).answer("Which score?")
    assert pipe.answer("Which score?").mode == "degraded"  # the original pipeline is unchanged


def test_closing_a_stream_early_closes_the_generators_stream():
    closed = []

    class Tracking(FakeGenerator):
        def stream(self, messages, *, max_tokens, temperature=0.0, stop=()):
            try:
                yield from super().stream(messages, max_tokens=max_tokens)
            finally:
                closed.append(True)

    # The first sentence is let out once the second has begun, with the model still generating.
    stream = pipeline(Tracking("Use CHA2DS2-VASc [1]. Men scoring 2 get anticoagulation [2]."))[0].stream(
        "Which score?"
    )
    assert next(stream) == "Use CHA2DS2-VASc [1]."
    assert closed == []
    stream.close()
    assert closed == [True]


# -- passages cut from their documents: citations index the document text ----------------------
# Two documents, each with one multi-sentence chunk that starts part-way into its document, so a
# citation's start/end index the document text, not the chunk text.
DOCS = {
    "af": "Atrial fibrillation\n\nAtrial fibrillation is the commonest sustained arrhythmia. "
    "The CHA2DS2-VASc score estimates stroke risk. Palpitations are a frequent symptom. "
    "Men with a CHA2DS2-VASc score of 2 or more should receive oral anticoagulation.",
    "cap": "Pneumonia\n\nPneumonia is common in winter. Amoxicillin is first line for low-severity "
    "community-acquired pneumonia. A chest X-ray confirms the diagnosis.",
}


def doc_hit(doc: str, rank: int) -> Hit:
    start = DOCS[doc].index("\n\n") + 2
    text = DOCS[doc][start:]
    chunk = Chunk(
        f"{doc}#0",
        doc,
        doc.upper(),
        ("S",),
        "open-medicine",
        f"https://doi.org/{doc}",
        "MIT",
        start,
        len(DOCS[doc]),
        text,
    )
    return Hit(chunk=chunk, score=1.0 / rank, rank=rank, retriever="hybrid")


class DocRetriever:
    name = "fake-docs"

    def retrieve(self, query, k, filters=None):
        return [doc_hit(d, n) for n, d in enumerate(DOCS, start=1)][:k]


class SentenceReranker(KeywordReranker):
    """A stand-in for the trained reranker: keyword relevance for passages and lines alike.
    Counts the line-scoring calls; can fail like a broken model file."""

    name = "trained"

    def __init__(self, *keywords: str, error: Exception | None = None) -> None:
        super().__init__(keywords[0])
        self.keywords, self.error = keywords, error
        self.logit_calls: list[list[str]] = []

    def logits(self, question, passages):
        self.logit_calls.append(list(passages))
        if self.error:
            raise self.error
        return np.array([sum(w in p for w in self.keywords) for p in passages], dtype=float)


def final(pipe: Pipeline, question: str, streamed: bool):
    if streamed:
        return list(pipe.stream(question))[-1]
    return pipe.answer(question)


# -- one home per setting (issue 18) -------------------------------------------------------------
def test_a_pipeline_built_by_hand_takes_the_default_profile():
    from rag.profile import default_profile, load_profile

    pipe = Pipeline(FakeRetriever(), SentenceReranker("x"), FakeGenerator("x"), profile=None)
    assert pipe.profile == default_profile() == load_profile("default")
    with pytest.raises(ConfigError, match=r"quote\.threshold=0\.45 needs a reranker that scores"):
        Pipeline(FakeRetriever(), IdentityReranker(), FakeGenerator("x"))  # the default quotes


def test_stop_sequences_reach_the_answers_generation_and_not_the_query_rewrite():
    class StopRecorder(FakeGenerator):
        def __init__(self, reply: str) -> None:
            super().__init__(reply)
            self.stops: list[tuple[str, tuple[str, ...]]] = []

        def generate(self, messages, *, max_tokens, temperature=0.0, stop=()):
            self.stops.append(("generate", tuple(stop)))
            return super().generate(messages, max_tokens=max_tokens, temperature=temperature)

        def stream(self, messages, *, max_tokens, temperature=0.0, stop=()):
            self.stops.append(("stream", tuple(stop)))
            yield from super().stream(messages, max_tokens=max_tokens, temperature=temperature)

    gen = StopRecorder("Use the CHA2DS2-VASc score [1].")
    rewriting = pipeline(gen, reformulation={"kind": "rewrite"})[0]
    pipe = rewriting.with_options(stop=("Men", "\n\n"))
    assert pipeline(gen)[0].options.stop == ()  # none unless asked for
    pipe.answer("Which score is used in AF?")
    list(pipe.stream("Which score is used in AF?"))
    pipe.answer("Which score is used in AF?", closed_book=True)
    wanted = ("Men", "\n\n")
    assert gen.stops == [
        ("generate", ()),
        ("generate", wanted),  # rewrite, then the answer
        ("generate", ()),
        ("stream", wanted),  # the same, streamed
        ("generate", wanted),  # closed-book: no rewrite
    ]


# -- quoted answers (quote.threshold) --------------------------------------------------------------
def quote_pipeline(threshold: float | None, **kw) -> tuple[Pipeline, FakeGenerator, SentenceReranker]:
    gen = FakeGenerator("Use the CHA2DS2-VASc score [1].")
    reranker = SentenceReranker("CHA2DS2-VASc", **kw)
    profile = fake_profile({"rerank": {"keep": 3}, "quote": {"threshold": threshold, "sentences": 2}})
    return (
        Pipeline(DocRetriever(), reranker, gen, verifier=ScriptedVerifier(), profile=profile),
        gen,
        reranker,
    )


@pytest.mark.parametrize("streamed", [False, True])
def test_a_confident_quote_answers_with_the_sources_own_sentences_without_generating(streamed):
    pipe, gen, reranker = quote_pipeline(0.0)
    answer = final(pipe, "Which score estimates stroke risk in AF?", streamed)
    assert answer.mode == "rag" and gen.calls == [] and "quote" in answer.timings
    assert len(answer.citations) == 2 and reranker.logit_calls
    for c in answer.citations:  # each citation is exactly the quoted sentence of its document
        assert DOCS[c.doc_id][c.start : c.end] == c.quote and c.quote in answer.text.replace("\n", " ")
    assert answer.citations[0].quote == "The CHA2DS2-VASc score estimates stroke risk."
    assert [s.markers for s in answer.sentences] == [(c.marker,) for c in answer.citations]
    assert [h.chunk for h in answer.evidence] == [doc_hit("af", 1).chunk, doc_hit("cap", 2).chunk]


def test_a_question_naming_no_subject_is_never_quoted_nor_shown_closest_lines():
    pipe, gen, _ = quote_pipeline(0.0)  # every line would be confident enough
    strict = pipe.with_changes({"quote": {"closest_about": "judged"}})
    question = "What is 17 times 23?"  # numbers and "times": no subject word
    assert strict.quote(question) is None
    assert strict.quote("Which score estimates stroke risk in AF?") is not None  # a subject: quoted
    gen.reply = "No citation here."  # generated, then removed by the gate: nothing confirmed
    answer = strict.answer(question)
    assert answer.outcome == "nothing_relevant" and answer.citations == ()
    assert any("names no subject" in n for n in answer.notes)


def test_quote_alone_gives_the_quoted_answer_or_none_and_never_generates():
    pipe, gen, _ = quote_pipeline(0.0)
    question = "Which score estimates stroke risk in AF?"
    assert pipe.quote(question).text == pipe.answer(question).text
    unsure, unsure_gen, _ = quote_pipeline(1.0)
    assert unsure.quote(question) is None and gen.calls == [] and unsure_gen.calls == []


def test_an_unsure_quote_sends_the_question_on_to_generation():
    pipe, gen, _ = quote_pipeline(1.0)
    answer = pipe.answer("Which score estimates stroke risk in AF?")
    assert len(gen.calls) == 1 and "quote" in answer.timings
    assert not any("quoted" in n for n in answer.notes)


def test_a_quote_holding_a_clients_stop_sequence_is_generated_instead():
    pipe, gen, _ = quote_pipeline(0.0)
    answer = pipe.with_options(stop=("stroke",)).answer("Which score estimates stroke risk in AF?")
    assert len(gen.calls) == 1 and "stroke" not in answer.text
    assert pipe.with_options(stop=("zzz",)).answer("Which score estimates stroke risk in AF?").citations


def test_a_failing_quote_scorer_generates_instead_and_says_so():
    pipe, gen, _ = quote_pipeline(0.0, error=ModelError("overlay gone"))
    answer = pipe.answer("Which score estimates stroke risk in AF?")
    assert len(gen.calls) == 1
    assert any("quoting unavailable" in n and "overlay gone" in n for n in answer.notes)


def test_quoting_without_a_sentence_scoring_reranker_is_a_config_error():
    with pytest.raises(ConfigError, match=r"quote\.threshold=0\.5 needs a reranker that scores sentences"):
        pipeline(FakeGenerator("x"), quote={"threshold": 0.5})


# -- no confirmed answer: the closest lines or nothing relevant (rag/answer/outcomes.py) -------------------
# the wide pool reads AF's passage too; its pneumonia lines are another disease's (conditions.py)
@pytest.mark.parametrize("pool, cited", [(None, {"cap"}), ((0.05, 8), {"af"})])
def test_unconfirmed_closest_lines_come_from_the_closest_pool(pool, cited):
    reranker = SentenceReranker("Amoxicillin", "CHA2DS2-VASc")  # passages: cap 0.9, af 0.1
    wide = {"closest_pool_threshold": pool[0], "closest_pool_keep": pool[1]} if pool else {}
    profile = fake_profile({"rerank": {"threshold": 0.5, "keep": 3}, "quote": {"threshold": 1.0, **wide}})
    gen = FakeGenerator("No citation here.")  # generated, then removed by the gate: nothing confirmed
    pipe = Pipeline(DocRetriever(), reranker, gen, verifier=ScriptedVerifier(), profile=profile)
    answer = pipe.answer("Which score estimates stroke risk in AF?")
    assert answer.outcome == "closest_lines" and answer.mode == "abstained"
    assert {c.doc_id for c in answer.citations} == cited
    assert all(s.status in ("closest", "removed") for s in answer.sentences)
    assert "No citation here" not in answer.text  # the generated sentence is never shown


def test_closest_lines_under_the_floor_are_nothing_relevant_and_no_kept_passage_is_too():
    reranker = SentenceReranker("Amoxicillin", "CHA2DS2-VASc")
    profile = fake_profile(
        {"rerank": {"threshold": 0.5, "keep": 3}, "quote": {"threshold": 1.0, "closest_floor": 1.0}}
    )
    pipe = Pipeline(
        DocRetriever(), reranker, FakeGenerator("x"), verifier=ScriptedVerifier(), profile=profile
    )
    answer = pipe.answer("Which score estimates stroke risk in AF?")
    assert answer.outcome == "nothing_relevant" and answer.text == NOTHING_RELEVANT
    assert answer.citations == () and answer.evidence  # the passages read are still listed
    nothing_kept = pipe.with_changes({"rerank": {"threshold": 0.99}}).answer(
        "Which score estimates stroke risk in AF?"
    )
    assert nothing_kept.outcome == "nothing_relevant" and nothing_kept.evidence == ()
    # what was read is on the record whatever the outcome: every passage scored, best first
    assert [h.chunk.doc_id for h in nothing_kept.read][:2] == ["cap", "af"]
    assert [h.score for h in nothing_kept.read] == sorted((h.score for h in nothing_kept.read), reverse=True)
    assert answer.lines_read and all(0.0 <= line.probability <= 1.0 for line in answer.lines_read)


def test_closest_lines_come_only_from_a_passage_about_the_question():
    reranker = SentenceReranker("Amoxicillin", "CHA2DS2-VASc")  # passages: cap 0.9, af 0.1
    profile = fake_profile({"rerank": {"threshold": 0.5, "keep": 3}, "quote": {"threshold": 1.0}})
    pipe = Pipeline(
        DocRetriever(), reranker, FakeGenerator("x"), verifier=ScriptedVerifier(), profile=profile
    )
    question = "Which amoxicillin dose in Narnia?"  # "narnia": in no passage
    assert pipe.answer(question).outcome == "closest_lines"  # the fakes' profile: the check off
    strict = pipe.with_changes({"quote": {"closest_about": "every"}}).answer(question)
    assert strict.outcome == "nothing_relevant" and strict.citations == ()
    assert any("no passage read is about the question (none has: narnia" in n for n in strict.notes)
