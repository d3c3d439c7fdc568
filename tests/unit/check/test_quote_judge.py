"""The quote judge (rag/check/quote_judge.py): what the local model reads, and when it is asked.
The model is a stand-in here; its dev curve and test run are in docs/results/clinician/."""

from __future__ import annotations

import dataclasses
import math

import pytest

from core.errors import ConfigError, GeneratorTimeout
from rag.check.quote_judge import QuoteJudge, judge_messages
from rag.check.quotes import Quote
from tests.helpers import make_hit

QUESTION = "What is the top spironolactone dose for ascites?"


def quote(text: str, p: float, title: str = "Ascites", section: tuple[str, ...] = ("Diuretics",)) -> Quote:
    hit = make_hit("doc#0", text, score=0.8, doc_id="doc")
    return Quote(
        dataclasses.replace(hit, chunk=dataclasses.replace(hit.chunk, title=title, section=section)), 1, p
    )


class Judge:
    """P(yes) by whether the lines mention ``word``; raises when told to fail."""

    def __init__(self, word: str, fail: bool = False) -> None:
        self.word, self.fail, self.asked = word, fail, 0

    def next_token_logprobs(self, messages, candidates):
        self.asked += 1
        if self.fail:
            raise GeneratorTimeout("judge timed out")
        p = 0.9 if self.word in messages[-1].content else 0.1
        return {"yes": math.log(p), "no": math.log(1 - p)}


def test_the_judge_reads_the_question_then_each_line_under_its_headings():
    lines = [quote("Titrate up to 400 mg daily.", 0.4), quote("Restrict sodium.", 0.2, section=())]
    system, user = judge_messages(QUESTION, lines)
    assert system.role == "system" and "yes or no" in system.content
    text = user.content
    assert text.index(QUESTION) < text.index("- [Ascites > Diuretics] Titrate up to 400 mg daily.")
    assert "- [Ascites] Restrict sodium." in text and text.rstrip().endswith("?")


def test_only_quotes_from_the_floor_up_are_judged_and_the_threshold_decides():
    judge = Judge("400 mg")
    quoting = QuoteJudge(judge, threshold=0.5, floor=0.3)
    assert quoting.accepts(QUESTION, [quote("Titrate up to 400 mg daily.", 0.35)])
    assert not quoting.accepts(QUESTION, [quote("Restrict sodium.", 0.35)])
    assert not quoting.accepts(QUESTION, [quote("Titrate up to 400 mg daily.", 0.25)])  # under the floor
    assert not quoting.accepts(QUESTION, [])
    assert judge.asked == 2


def test_a_failing_judge_counts_as_no():
    assert not QuoteJudge(Judge("400 mg", fail=True), 0.5, 0.3).accepts(
        QUESTION, [quote("Titrate up to 400 mg daily.", 0.4)]
    )


@pytest.mark.parametrize("threshold, floor", [(1.5, 0.3), (0.5, -0.1)])
def test_settings_outside_zero_to_one_are_refused(threshold, floor):
    with pytest.raises(ConfigError, match="quote judge"):
        QuoteJudge(Judge("x"), threshold, floor)


def test_the_prompt_id_names_the_wording_so_a_cache_of_another_is_never_read(monkeypatch) -> None:
    from rag.check import quote_judge

    before = quote_judge.prompt_id()
    assert before == quote_judge.prompt_id() and len(before) == 12
    monkeypatch.setattr(quote_judge, "ASK", quote_judge.ASK + "Be strict. ")
    assert quote_judge.prompt_id() != before
