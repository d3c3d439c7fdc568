"""The support gate in the pipeline: each policy, the streaming hold-back, the passage-aboutness rule.

A fake generator replies with a scripted text (streamed word by word) and a scripted verifier
scores chosen sentences below the threshold, so each test states exactly what must be presented.
"""

from __future__ import annotations

import pytest

from core.types import Answer
from rag.answer.outcomes import CLOSEST_LEAD
from rag.gate.gate import SupportGate
from rag.gate.notes import FLAG_UNSUPPORTED, FLAG_UNVERIFIED
from rag.generate.citations import parse_answer
from rag.generate.prompts import abstain_token
from rag.pipeline import Pipeline
from rag.reading.question import ReadQuestion
from rag.render import answer_to_dict, answer_to_text
from rag.rerank.identity import IdentityReranker
from tests.helpers import ListRetriever, ScriptedVerifier, WordGenerator, fake_profile, make_hit, passage_hits

PASSAGES = {  # chunk id -> (title, section, text)
    "af#0": (
        "Management of Atrial Fibrillation",
        "Anticoagulation",
        "The CHA2DS2-VASc score guides anticoagulation in atrial fibrillation.",
    ),
    "af#1": (
        "Management of Atrial Fibrillation",
        "Anticoagulation",
        "Men with a CHA2DS2-VASc score of 2 or more should receive oral anticoagulation.",
    ),
    "mel#0": ("Familial melanoma", "Phenotypes > Very frequent (80-99%)", "Melanoma\nNevus"),
}
QUESTION = "Which score guides anticoagulation in atrial fibrillation?"
GOOD = "The CHA2DS2-VASc score guides anticoagulation [1]."
GOOD_2 = "Men scoring 2 or more should receive anticoagulation [2]."
BAD = "The recommended dose is 200 mg every 2 weeks [2]."  # the scripted verifier scores it 0.1


HITS = passage_hits(PASSAGES, "https://x/")


def make(
    reply: str, policy: str = "drop", verifier=..., fail_after: int | None = None, **verify: object
) -> tuple[Pipeline, WordGenerator]:
    """A pipeline over HITS replying ``reply``; ``verify``: more ``[verify]`` settings."""
    generator = WordGenerator(reply, fail_after=fail_after)
    if verifier is ...:
        verifier = ScriptedVerifier(unsupported=["200 mg"])
    profile = fake_profile({"rerank": {"keep": 3}, "verify": {"policy": policy, **verify}})
    return Pipeline(
        ListRetriever(HITS), IdentityReranker(), generator, verifier=verifier, profile=profile
    ), generator


def verify_config(policy: str = "drop", **changes: object):
    return fake_profile({"verify": {"policy": policy, **changes}}).verify


def streamed(pipe: Pipeline, question: str = QUESTION, **kw) -> tuple[list[str], Answer]:
    *pieces, final = pipe.stream(question, **kw)
    assert isinstance(final, Answer) and all(isinstance(p, str) for p in pieces)
    return pieces, final


# -- policies -----------------------------------------------------------------------------------
def test_drop_removes_the_unsupported_sentence_its_citation_and_says_so():
    answer = make(f"{GOOD} {BAD}")[0].answer(QUESTION)
    assert answer.mode == "rag" and answer.text == GOOD
    assert [c.marker for c in answer.citations] == [1]  # [2] was cited only by the removed sentence
    assert answer.citations[0].support == pytest.approx(0.9)
    assert [(s.status, s.supported) for s in answer.sentences] == [("shown", True), ("removed", False)]
    assert "200 mg" in answer.sentences[1].text  # the record keeps what was removed
    assert answer.sentences[1].reasons == ("support 0.10 is below the threshold 0.50",)
    assert any(
        "removed from the answer: 1 of 2 sentences" in n and "below the support threshold" in n
        for n in answer.notes
    )


def test_a_sentence_that_only_repeats_a_source_label_is_not_an_answer():
    # the 1.5B generator sometimes answers with the label the prompt gives a source
    label = "Management of Atrial Fibrillation (Anticoagulation; test) [1]."
    answer = make(f"{label} {GOOD}")[0].answer(QUESTION)
    assert answer.mode == "rag" and answer.text == GOOD
    assert answer.sentences[0].status == "removed"
    assert answer.sentences[0].reasons == ("repeats a source's label, not an answer",)
    only = make(label)[0].answer(QUESTION)
    assert only.mode == "abstained"


def test_a_sentence_that_asks_a_question_is_not_an_answer():
    # the 1.5B generator sometimes repeats the question, with a marker, as its answer
    asked = f"{QUESTION} [1]"
    answer = make(f"{asked} {GOOD}")[0].answer(QUESTION)
    assert answer.mode == "rag" and answer.text == GOOD
    assert answer.sentences[0].reasons == ("asks a question, not an answer",)
    assert make(asked)[0].answer(QUESTION).mode == "abstained"


def test_drop_keeps_remaining_markers_pointing_at_their_passages():
    answer = make(f"{BAD} {GOOD_2}")[0].answer(QUESTION)
    assert answer.text == GOOD_2  # marker [2] is not renumbered: it still means passage 2
    assert [(c.marker, c.chunk_id) for c in answer.citations] == [(2, "af#1")]


def test_drop_of_every_sentence_abstains_and_lists_the_evidence():
    answer = make(BAD)[0].answer(QUESTION)
    assert answer.outcome == "closest_lines" and answer.text.startswith(CLOSEST_LEAD)  # no line confirmed
    assert all(c.support is None for c in answer.citations)  # closest passages: cited, not verified
    assert [h.chunk.chunk_id for h in answer.evidence] == list(PASSAGES)
    assert [s.status for s in answer.sentences] == ["removed", "closest", "closest", "closest"]
    assert any("none of the 1 generated sentences may be presented" in n for n in answer.notes)


def test_an_uncited_sentence_is_dropped_too():
    answer = make(f"{GOOD} Aspirin is an alternative.")[0].answer(QUESTION)
    assert answer.text == GOOD
    assert answer.sentences[1].reasons == ("cites no source",)


def test_flag_keeps_the_sentence_behind_a_visible_label():
    answer = make(f"{GOOD} {BAD}", "flag")[0].answer(QUESTION)
    assert answer.mode == "rag" and answer.text == f"{GOOD} {FLAG_UNSUPPORTED}{BAD}"
    assert [c.marker for c in answer.citations] == [1, 2]  # both markers are in the text
    assert [s.status for s in answer.sentences] == ["shown", "flagged"]
    assert any("[UNSUPPORTED]" in n and "do not rely on them" in n for n in answer.notes)
    shown = answer_to_text(answer)
    assert "[UNSUPPORTED] The recommended dose" in shown and "! flagged (sentence 2)" in shown


def test_abstain_withholds_the_whole_answer_for_one_unsupported_sentence():
    answer = make(f"{GOOD} {BAD}", "abstain")[0].answer(QUESTION)
    assert answer.outcome == "closest_lines" and answer.text.startswith(CLOSEST_LEAD)
    assert GOOD not in answer.text and all(c.support is None for c in answer.citations)
    assert [s.status for s in answer.sentences if s.status != "closest"] == ["removed", "removed"]
    assert "withheld" in answer.sentences[0].reasons[0]
    assert any("withheld (policy abstain)" in n for n in answer.notes)


def test_abstain_presents_an_answer_whose_every_sentence_is_supported():
    pieces, answer = streamed(make(f"{GOOD} {GOOD_2}", "abstain")[0])
    assert answer.mode == "rag" and answer.text == f"{GOOD} {GOOD_2}" == "".join(pieces)
    assert pieces == [answer.text]  # nothing streams before the end under abstain


# -- citing the passage that supports a sentence ------------------------------------------------
def test_a_sentence_citing_the_wrong_passage_is_cited_to_the_one_that_supports_it():
    verifier = ScriptedVerifier(only_from={"Men scoring": [2]})
    reply = f"{GOOD} Men scoring 2 or more should receive anticoagulation [1]."
    pieces, answer = streamed(make(reply, verifier=verifier)[0])
    assert answer.mode == "rag" and answer.text == f"{GOOD} {GOOD_2}" == "".join(pieces)
    assert [c.marker for c in answer.citations] == [1, 2]
    assert [s.status for s in answer.sentences] == ["shown", "shown"] and answer.sentences[1].markers == (2,)
    assert any("now cites the passage that does ([1] -> [2])" in n for n in answer.notes)


def test_a_sentence_no_passage_supports_is_still_removed_and_never_cited_to_an_off_topic_one():
    verifier = ScriptedVerifier(only_from={"Men scoring": [3]})  # only the melanoma list "supports" it
    reply = f"{GOOD} Men scoring 2 or more should receive anticoagulation [1]."
    answer = make(reply, verifier=verifier)[0].answer(QUESTION)
    assert answer.text == GOOD and answer.sentences[1].status == "removed"
    assert not any("now cites" in n for n in answer.notes)


LIST_QUESTION = "What are the symptoms of familial melanoma?"


def test_uncited_list_items_that_quote_a_passage_about_the_question_are_cited_to_it():
    # the model cited only the last item; the first is the passage's own entry, word for word
    reply = "Familial melanoma has two features: 1. Melanoma; 2. Nevus [3]."
    pieces, answer = streamed(make(reply)[0], LIST_QUESTION)
    assert answer.mode == "rag" and answer.text == "1. Melanoma [3]; 2. Nevus [3]." == "".join(pieces)
    assert [s.status for s in answer.sentences] == ["removed", "shown", "shown"]  # the lead-in quotes nothing
    assert answer.sentences[1].markers == (3,)
    assert any("1 sentences without a marker quote a passage" in n and "([3])" in n for n in answer.notes)


def test_an_uncited_quotation_of_a_passage_not_about_the_question_stays_removed():
    answer = make(f"{GOOD} Melanoma.")[0].answer(QUESTION)  # the melanoma list is not about AF
    assert answer.text == GOOD and answer.sentences[1].reasons == ("cites no source",)


SOURCED = {"uncited": "supported"}
MEN = "Men with a score of 2 or more should receive oral anticoagulation."


def test_under_uncited_supported_an_uncited_sentence_is_cited_to_the_passage_that_supports_it():
    verifier = ScriptedVerifier(only_from={"Men with": [2]})  # only passage 2 supports it
    pieces, answer = streamed(make(f"{MEN} {GOOD}", verifier=verifier, **SOURCED)[0])
    assert answer.mode == "rag" and answer.text == "".join(pieces)
    assert answer.text == f"{MEN.removesuffix('.')} [2]. {GOOD}"
    assert [(s.status, s.markers) for s in answer.sentences] == [("shown", (2,)), ("shown", (1,))]
    assert any(
        "1 sentences without a marker are cited to the passage about the question that supports "
        "them best ([2])" in n
        for n in answer.notes
    )


@pytest.mark.parametrize(
    "verifier",
    [
        ScriptedVerifier(unsupported=["Men with"]),  # no passage supports it
        ScriptedVerifier(only_from={"Men with": [3]}),  # only the melanoma list, not about AF
    ],
)
def test_under_uncited_supported_an_uncited_sentence_no_passage_about_the_question_supports_stays_out(
    verifier,
):
    answer = make(f"{MEN} {GOOD}", verifier=verifier, **SOURCED)[0].answer(QUESTION)
    assert answer.text == GOOD
    assert answer.sentences[0].status == "removed" and answer.sentences[0].reasons == ("cites no source",)


def test_by_default_an_uncited_sentence_a_passage_supports_is_still_dropped():
    verifier = ScriptedVerifier(only_from={"Men with": [2]})
    answer = make(f"{MEN} {GOOD}", verifier=verifier)[0].answer(QUESTION)
    assert answer.text == GOOD and answer.sentences[0].reasons == ("cites no source",)


@pytest.mark.parametrize(
    ("sentence", "shown"),
    [  # the scripted verifier rejects any claim naming freckles (no passage lists them)
        (
            "The symptoms of familial melanoma include melanoma, freckles and nevus [3].",
            "The symptoms of familial melanoma include melanoma and nevus [3].",
        ),
        (
            # wrong passage too
            "The symptoms of familial melanoma include melanoma, nevus and freckles [1].",
            "The symptoms of familial melanoma include melanoma and nevus [3].",
        ),
        ("The symptoms of familial melanoma include melanoma and freckles [3].", None),  # one item left
        ("Familial melanoma never causes melanoma, nevus or freckles [3].", None),  # no plain lead-in
    ],
)
def test_a_list_is_cut_to_the_items_its_passages_list(sentence, shown):
    pieces, answer = streamed(
        make(sentence, verifier=ScriptedVerifier(unsupported=["freckles"]))[0], LIST_QUESTION
    )
    if shown is None:
        assert answer.mode == "abstained" and answer.sentences[0].status == "removed"
        return
    assert answer.mode == "rag" and answer.text == shown == "".join(pieces)
    assert [c.marker for c in answer.citations] == [3]
    assert any(
        "1 list sentences were cited" in n and "1 items no such passage lists left out" in n
        for n in answer.notes
    )


# -- aboutness ----------------------------------------------------------------------------------
def test_a_supported_sentence_citing_a_passage_not_about_the_question_is_not_presented():
    supported_by_its_passage = ScriptedVerifier(only_from={"Melanoma": [3]})
    reply = f"{GOOD} Melanoma is very frequent [3]."
    answer = make(reply, verifier=supported_by_its_passage)[0].answer(QUESTION)
    assert answer.mode == "rag" and answer.text == GOOD
    off = answer.sentences[1]
    assert off.supported and not off.on_topic and off.status == "removed"
    assert off.reasons == (
        "cites [3] (Familial melanoma), which does not mention anticoagulation, atrial, fibrillation",
    )
    assert any("does not mention anticoagulation, atrial, fibrillation" in n for n in answer.notes)


def test_a_citation_of_another_disease_is_taken_out_when_the_sentence_also_cites_one_about_the_question():
    # [1] and [2] are about atrial fibrillation, [3] is a melanoma phenotype list
    reply = "The CHA2DS2-VASc score guides anticoagulation [1][3]. Men scoring 2 or more need it [3] [2]."
    pipe, _ = make(reply, verifier=ScriptedVerifier())
    *pieces, answer = pipe.stream(QUESTION)
    assert answer.mode == "rag"
    assert answer.text == (
        "The CHA2DS2-VASc score guides anticoagulation [1]. Men scoring 2 or more need it [2]."
    )
    assert "".join(pieces) == answer.text  # the stream sent the trimmed sentences, nothing else
    assert [c.marker for c in answer.citations] == [1, 2]
    assert [s.markers for s in answer.sentences] == [(1,), (2,)] and all(s.on_topic for s in answer.sentences)
    assert any(n.startswith("2 citations taken out") and "[3] Familial melanoma" in n for n in answer.notes)


def test_a_trimmed_sentence_is_verified_against_its_remaining_citations_and_removed_if_they_fail():
    verifier = ScriptedVerifier(unsupported=["Nevus"])
    answer = make("Nevus guides anticoagulation [1][3].", verifier=verifier)[0].answer(QUESTION)
    assert answer.mode == "abstained"
    (sentence,) = [s for s in answer.sentences if s.status != "closest"]
    assert sentence.markers == (1,) and sentence.status == "removed" and not sentence.supported


def test_when_no_passage_is_about_the_question_it_abstains_without_generating():
    # pembrolizumab is in none of the three passages, and a dose in none either
    pipe, generator = make("Melanoma is very frequent [3].", verifier=ScriptedVerifier())
    answer = pipe.answer("What is the recommended dose of pembrolizumab for metastatic melanoma?")
    assert answer.mode == "abstained" and answer.sentences == () and generator.produced == 0
    assert answer.notes[-1] == (
        "nothing was generated: each of the 3 passages found lacks a word asked ("
        "pembrolizumab (3), metastatic (3), a dose (3), melanoma (2))"
    )
    assert len(answer.evidence) == 3  # the passages found are still listed


def test_under_flag_it_generates_and_labels_a_phenotype_line_given_for_a_treatment():
    # The passage names the disease and supports the line, but says nothing of treatment.
    question = "What are the treatments for familial melanoma?"
    answer = make("Melanoma [3].", "flag", verifier=ScriptedVerifier())[0].answer(question)
    assert answer.text == f"{FLAG_UNSUPPORTED}Melanoma [3]."
    (sentence,) = answer.sentences
    assert sentence.supported and not sentence.on_topic
    assert sentence.reasons == ("cites [3] (Familial melanoma), which does not mention a treatment",)


def test_notes_count_sentences_not_reasons():
    # the second sentence cites two passages that lack the drug: it still counts once
    reply = "Melanoma is very frequent [3]. Nevus too [1][3]."
    answer = make(reply, "flag", verifier=ScriptedVerifier())[0].answer("What about pembrolizumab?")
    assert [len(s.reasons) for s in answer.sentences] == [1, 2]
    assert any("(2 citing a passage that does not mention pembrolizumab)" in n for n in answer.notes)


# -- without a verifier -------------------------------------------------------------------------
def test_without_a_verifier_drop_abstains_and_flag_labels_every_sentence_unverified():
    dropped = make(GOOD, verifier=None)[0].answer(QUESTION)
    assert dropped.mode == "abstained"
    assert any("not verifiable (no support verifier)" in n for n in dropped.notes)
    flagged = make(f"{GOOD} {GOOD_2}", "flag", verifier=None)[0].answer(QUESTION)
    assert flagged.text == f"{FLAG_UNVERIFIED}{GOOD} {FLAG_UNVERIFIED}{GOOD_2}"
    assert [c.support for c in flagged.citations] == [None, None]  # nothing was scored


# -- streaming ----------------------------------------------------------------------------------
def test_streaming_never_yields_the_unsupported_sentence_and_adds_up_to_the_answer():
    pipe, generator = make(f"{GOOD} {BAD} {GOOD_2}")
    stream = pipe.stream(QUESTION)
    first = next(stream)
    assert first == GOOD
    # let out once the next sentence had begun: one word of it, not the whole reply
    assert generator.produced == len(GOOD.split(" ")) + 1
    rest = list(stream)
    pieces, final = [first, *rest[:-1]], rest[-1]
    assert not any("200 mg" in piece for piece in pieces)
    assert "".join(pieces) == final.text == f"{GOOD} {GOOD_2}"
    assert [c.marker for c in final.citations] == [1, 2]
    assert [s.status for s in final.sentences] == ["shown", "removed", "shown"]


def test_a_verifier_that_asks_the_generator_decides_only_once_the_generation_is_done():
    """An LLM judge needs the model the answer is still streaming from: nothing is scored, and
    nothing sent, until it has finished; then the same sentences pass as without streaming."""
    verifier = ScriptedVerifier(unsupported=["200 mg"])
    verifier.uses_generator = True
    pipe, generator = make(f"{GOOD} {BAD} {GOOD_2}", verifier=verifier)
    stream = pipe.stream(QUESTION)
    first = next(stream)
    assert generator.closed and verifier.calls  # the whole reply was read before any scoring
    rest = list(stream)
    assert first + "".join(rest[:-1]) == rest[-1].text == f"{GOOD} {GOOD_2}"


@pytest.mark.parametrize("policy", ["drop", "flag", "abstain"])
def test_streamed_and_whole_answers_agree(policy):
    reply = f"{GOOD} {BAD} {GOOD_2}"
    pieces, final = streamed(make(reply, policy)[0])
    whole = make(reply, policy)[0].answer(QUESTION)
    assert "".join(pieces) == final.text == whole.text
    assert (final.mode, final.citations, final.sentences) == (whole.mode, whole.citations, whole.sentences)


def test_the_abstention_token_is_held_back_and_only_the_abstention_is_streamed():
    pieces, final = streamed(make(f"{abstain_token()} the passages do not say [1].")[0])
    assert final.outcome == "closest_lines" and pieces == [final.text] and abstain_token() not in final.text


def test_a_generator_failing_mid_stream_keeps_what_was_sent_in_front_of_the_degraded_answer():
    pipe, _ = make(f"{GOOD} {GOOD_2} {GOOD}", fail_after=len(GOOD.split(" ")) + 3)
    pieces, final = streamed(pipe)
    assert pieces[0] == GOOD and final.mode == "degraded"
    assert "".join(pieces) == final.text and final.text.startswith(GOOD + "\n\nGeneration failed")
    assert [c.marker for c in final.citations] == [1]  # the marker already sent still resolves


def test_a_cancelled_stream_stops_at_the_next_token_even_while_a_sentence_is_held_back():
    pipe, generator = make(f"{GOOD} {GOOD_2}")
    asked = []

    def cancelled() -> bool:
        asked.append(True)
        return len(asked) >= 3

    items = list(pipe.stream(QUESTION, cancelled=cancelled))
    assert items == [] and generator.produced == 3 and generator.closed


# -- sentence boundaries while streaming ---------------------------------------------------------
REPLIES = [
    f"{GOOD} {BAD} {GOOD_2}",
    "The CHA2DS2-VASc score guides anticoagulation.\n[1]\nMen scoring 2 or more should receive it.\n[2]",
    "The CHA2DS2-VASc score guides anticoagulation. [1] [2] Men scoring 2 get it [2].",
    "The CHA2DS2-VASc score guides anticoagulation [Source 1, 2]. A dose of 2.5 mg is used, e.g. in AF [2].",
    "- The CHA2DS2-VASc score guides anticoagulation [1].\n- The dose is 200 mg [2].\n"
    "- Men scoring 2 get it [2].",
    "1. Score [1]\n2. qSOFA is not for AF [2]. Anticoagulate [1-2].",
    "See the guideline [1](https://example.org). The score guides anticoagulation [1].",
]


@pytest.mark.parametrize("reply", REPLIES)
@pytest.mark.parametrize("policy", ["drop", "flag"])
def test_feeding_a_character_at_a_time_decides_each_sentence_as_the_whole_text_would(reply, policy):
    sources = HITS
    read, checks = ReadQuestion.read(QUESTION), verify_config(policy)
    whole = SupportGate(read, sources, ScriptedVerifier(["200 mg"]), checks, abstain_token=abstain_token())
    expected = whole.finish(parse_answer(reply, sources))
    gate = SupportGate(read, sources, ScriptedVerifier(["200 mg"]), checks, abstain_token=abstain_token())
    sent = "".join(gate.feed(reply[:n]) for n in range(1, len(reply) + 1))
    result = gate.finish(parse_answer(reply, sources))
    if expected.sentences[0].status != "removed":  # the first sentence goes out before the end
        assert sent.startswith(expected.text.split("\n")[0].split(". ")[0])
    assert sent + result.tail == result.text == expected.text
    assert result.sentences == expected.sentences and result.citations == expected.citations
    assert "200 mg" not in result.text or policy == "flag"


def test_removing_a_list_item_keeps_the_list_shape():
    answer = make(
        "- The CHA2DS2-VASc score guides anticoagulation [1].\n- The dose is 200 mg [2].\n"
        "- Men scoring 2 get it [2]."
    )[0].answer(QUESTION)
    assert answer.text == "- The CHA2DS2-VASc score guides anticoagulation [1].\n- Men scoring 2 get it [2]."


# -- what callers see ---------------------------------------------------------------------------
def test_terminal_output_never_prints_a_removed_sentence_but_json_keeps_its_record():
    answer = make(f"{GOOD} {BAD}")[0].answer(QUESTION)
    shown = answer_to_text(answer)
    assert "200 mg" not in shown
    assert shown.startswith("Answer (rag; 1/2 sentences supported by their sources, 1 removed)\n")
    assert "! removed (sentence 2, not shown): support 0.10 is below the threshold 0.50" in shown
    data = answer_to_dict(answer)
    assert data["answer"] == GOOD and data["sentences"][1]["status"] == "removed"
    assert data["sentences"][1]["reasons"] == ["support 0.10 is below the threshold 0.50"]


# -- what the question asks for -------------------------------------------------------------------
DOSE_QUESTION = "What is the dose of epinephrine in neonatal resuscitation?"
NEONATAL = [
    make_hit(
        f"nrp#{n}",
        text,
        score=1.0,
        rank=n + 1,
        retriever="hybrid",
        title="Neonatal Resuscitation",
        section=("Medications",),
        url=f"https://x/nrp{n}",
    )
    for n, text in enumerate(
        [
            "Evidence for epinephrine dosing in neonates comes largely from animal models.",
            "Epinephrine dose: 0.01 to 0.03 mg/kg IV.",
        ]
    )
]


def dose_pipeline(reply: str, policy: str = "drop") -> Pipeline:
    profile = fake_profile({"rerank": {"keep": 2}, "verify": {"policy": policy}})
    return Pipeline(
        ListRetriever(NEONATAL),
        IdentityReranker(),
        WordGenerator(reply),
        verifier=ScriptedVerifier(),
        profile=profile,
    )


def test_an_answer_that_never_gives_the_dose_asked_for_abstains_and_sends_nothing():
    # the model's dose was uncited (removed); what passed says nothing of a dose
    reply = "The dose is 0.05 to 0.1 mg/kg IV. Evidence for epinephrine dosing in neonates is weak [1]."
    pieces, answer = streamed(dose_pipeline(reply), DOSE_QUESTION)
    assert answer.mode == "abstained" and pieces == [answer.text] and "0.05" not in answer.text
    assert [s.status for s in answer.sentences if s.status != "closest"] == ["removed", "removed"]
    assert answer.sentences[1].reasons == ("withheld: no sentence of the answer gives a dose",)
    assert any("give no dose" in n for n in answer.notes)


def test_sentences_held_back_for_the_dose_are_sent_with_the_one_that_gives_it():
    reply = "Evidence for epinephrine dosing in neonates is weak [1]. The dose is 0.01 to 0.03 mg/kg IV [2]."
    pieces, answer = streamed(dose_pipeline(reply), DOSE_QUESTION)
    assert answer.mode == "rag" and answer.text == reply == "".join(pieces)
    assert len(pieces) == 1  # the first sentence waited for the second
    assert [s.status for s in answer.sentences] == ["shown", "shown"]


def test_under_flag_an_answer_without_the_dose_is_shown_as_it_is():
    reply = "Evidence for epinephrine dosing in neonates is weak [1]."
    answer = dose_pipeline(reply, policy="flag").answer(DOSE_QUESTION)
    assert answer.mode == "rag" and answer.text == reply
