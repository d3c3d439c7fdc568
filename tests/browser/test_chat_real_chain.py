"""The chat page showing each outcome from the real chain: the default profile (hybrid retrieval
with the real embedder, the trained relevance model, quotes and the condition reader) over a small
real index of six guideline sections. The three questions end before generation, so the local
model is loaded but never asked."""

from __future__ import annotations

import pytest

from bench.serving.live_chat import ask, live_server, server_settings, wait_for_answer
from core.paths import Paths
from rag.answer.outcomes import NOTHING_RELEVANT
from rag.indexing import build_from_cli

pytestmark = pytest.mark.e2e

ANSWERED = "What INR should be targeted on warfarin for atrial fibrillation?"
CLOSEST = "How often should eGFR be rechecked in CKD stage 3?"
NOTHING = "How do I true a bicycle wheel?"


@pytest.fixture(scope="module")
def real_server(tmp_path_factory):
    data = tmp_path_factory.mktemp("real-chat")
    paths = Paths.from_env().model_copy(update={"data_dir": data})
    build_from_cli(paths, sources=["open-medicine"], limit=6, progress=False)
    with live_server(server_settings(profiles=["default"], data_dir=data)) as (url, _):
        yield url


def answer_to(page, url, question):
    page.set_default_timeout(180_000)  # the real models load on the first question, on a busy CI machine
    page.goto(url)
    ask(page, question)
    return wait_for_answer(page)


def test_a_confirmed_answer_is_quoted_under_an_answer_badge_with_how_likely_it_is(real_server, page):
    answer = answer_to(page, real_server, ANSWERED)
    assert answer.locator(".mode").get_attribute("data-outcome") == "answer"
    assert "2.0–3.0" in answer.locator(".answer-text").text_content()
    assert "% likely to answer" in answer.locator(".confidence").text_content()
    answer.locator("button.cite").first.click()
    assert "INR" in page.locator("dialog#passage mark").text_content()  # the line's own span


def test_closest_lines_come_under_a_not_confirmed_banner_each_opening_its_line(real_server, page):
    answer = answer_to(page, real_server, CLOSEST)
    assert answer.locator(".mode").get_attribute("data-outcome") == "closest_lines"
    assert answer.locator(".not-confirmed").is_visible()
    text = answer.locator(".answer-text").text_content()
    lines = [line for line in text.splitlines() if line.startswith("- ")]
    assert 1 <= len(lines) <= 3 and len(set(lines)) == len(lines)
    assert all("likely to answer" in line for line in lines)
    buttons = answer.locator(".answer-text button.cite")
    assert buttons.count() == len(lines)
    buttons.last.click()  # the last line opens its own span, not the first line of its passage
    marked = page.locator("dialog#passage mark").text_content().replace("*", "")  # the source's Markdown
    assert marked[:40] in lines[-1]
    assert ".py" not in answer.locator(".notes").text_content()


def test_a_question_nothing_is_about_says_so_plainly(real_server, page):
    answer = answer_to(page, real_server, NOTHING)
    assert answer.locator(".mode").get_attribute("data-outcome") == "nothing_relevant"
    assert answer.locator(".answer-text").text_content() == NOTHING_RELEVANT
    assert answer.locator("button.cite").count() == 0
