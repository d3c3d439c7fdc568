"""The answer judge (the local model, asked with the question) and how the verifier uses it."""

from __future__ import annotations

import math

import pytest

from core.errors import ConfigError, GeneratorTimeout
from rag.gate.answer_judge import PASSAGE_CHARS, AnswerJudge, judge_messages
from rag.gate.verify import SupportVerifier
from tests.helpers import HashEmbedder
from tests.unit.gate.test_verify import DOAC, chunk

QUESTION = "What apixaban dose for an older patient?"


class ClaimJudge:
    """P(yes) by the sentence asked about (the last turn); raises for a sentence in ``fail``."""

    name = "claim-judge"

    def __init__(self, p_yes: dict[str, float], fail: tuple[str, ...] = ()) -> None:
        self.p_yes = p_yes
        self.fail = fail
        self.asked: list[list] = []

    def next_token_logprobs(self, messages, candidates):
        self.asked.append(list(messages))
        claim = messages[-1].content.split("Proposed answer: ")[1].split("\n")[0]
        if claim in self.fail:
            raise GeneratorTimeout("judge timed out")
        p = self.p_yes[claim]
        return {"yes": math.log(p), "no": math.log(1 - p)}


def test_one_turn_shows_the_passage_then_the_question_then_the_sentence():
    first = judge_messages(QUESTION, "Reduce to 2.5 mg BID.", chunk(DOAC))
    second = judge_messages(QUESTION, "Apixaban 5 mg BID.", chunk(DOAC))
    assert [m.role for m in first] == ["system", "user"]
    assert first[0] == second[0] and first[1] != second[1]  # only the system turn is shared
    text = first[1].content
    passage, question, claim = (
        text.index(s) for s in (DOAC.split(".")[0], QUESTION, "Reduce to 2.5 mg BID.")
    )
    assert passage < question < claim and text.rstrip().endswith("with the same numbers?")


def test_a_long_passage_is_cut_at_a_word_boundary_never_inside_a_number():
    text = "word " * (PASSAGE_CHARS // 5 - 1) + "12345 mg and more text after the cut"
    shown = judge_messages(QUESTION, "claim", chunk(text))[1].content.split("\n\nQuestion:")[0]
    assert "1234" not in shown and shown.endswith("word")


def test_each_pair_is_asked_in_order_and_a_failure_counts_as_no():
    judge = ClaimJudge({"a": 0.9, "b": 0.2, "c": 0.7}, fail=("c",))
    one, two = chunk(DOAC, n=1), chunk("Heparin.", n=2)
    p = AnswerJudge(judge, 0.5).probabilities(QUESTION, [("a", one), ("b", two), ("c", one)])
    assert p == pytest.approx([0.9, 0.2, 0.0])
    assert ["Heparin." in m[1].content for m in judge.asked] == [False, True, False]


@pytest.mark.parametrize("threshold", [-0.1, 1.5])
def test_threshold_outside_unit_interval_is_a_config_error(threshold):
    with pytest.raises(ConfigError, match="answer judge"):
        AnswerJudge(ClaimJudge({}), threshold)


def test_with_the_question_the_judge_decides_and_a_wrong_number_is_never_asked():
    claims = {"Reduce to 2.5 mg BID in older patients.": 0.7, "Apixaban is reduced in older patients.": 0.3}
    judge = ClaimJudge(claims)
    verifier = SupportVerifier(HashEmbedder(), answer_judge=AnswerJudge(judge, 0.6))
    assert verifier.threshold == 0.6  # the judge's threshold, not the heuristic's
    pairs = [(claim, chunk(DOAC)) for claim in claims] + [("Reduce to 7.5 mg BID.", chunk(DOAC))]
    scores = verifier.score_pairs(pairs, QUESTION)
    assert [s.answer for s in scores] == pytest.approx([0.7, 0.3, None])
    assert [s.support for s in scores] == pytest.approx([0.7, 0.3, 0.0])  # 7.5 mg is not in the passage
    assert len(judge.asked) == 2


def test_a_quoted_entry_is_judged_too_and_without_a_question_the_judge_is_not_asked():
    quote = "Reduce to 2.5 mg BID in older patients."  # word for word: support 1 without a judge
    judge = ClaimJudge({quote: 0.1})
    verifier = SupportVerifier(HashEmbedder(), answer_judge=AnswerJudge(judge, 0.6))
    [judged] = verifier.score_pairs([(quote, chunk(DOAC))], QUESTION)
    assert judged.support == pytest.approx(0.1) and judged.listed
    [unjudged] = verifier.score_pairs([(quote, chunk(DOAC))])
    assert unjudged.answer is None and unjudged.support == 1.0 and len(judge.asked) == 1


def test_a_pair_whose_support_is_below_the_floor_is_not_asked():
    claims = {"Reduce to 2.5 mg BID in older patients.": 0.9, "Apixaban is reduced in older patients.": 0.9}
    pairs = [(claim, chunk(DOAC)) for claim in claims]
    plain = SupportVerifier(HashEmbedder()).score_pairs(pairs)
    floor = (plain[0].support + plain[1].support) / 2  # the quotation scores 1, the paraphrase less
    assert plain[0].support > floor > plain[1].support
    judge = ClaimJudge(claims)
    verifier = SupportVerifier(HashEmbedder(), answer_judge=AnswerJudge(judge, 0.6, floor=floor))
    scores = verifier.score_pairs(pairs, QUESTION)
    assert [s.support for s in scores] == pytest.approx([0.9, 0.0]) and len(judge.asked) == 1


def test_a_floor_outside_unit_interval_is_a_config_error():
    with pytest.raises(ConfigError, match="floor"):
        AnswerJudge(ClaimJudge({}), 0.6, floor=2.0)
