"""The chat page on a server with API keys: the key form, a refused key, then an answer."""

from __future__ import annotations

import pytest

from bench.serving.live_chat import KEY, REPLY, ask, serve, wait_for_answer


@pytest.fixture(scope="module")
def keyed_server(browser_paths):
    with serve(browser_paths, env="production", api_keys=[KEY]) as served:
        yield served


def test_the_key_form_appears_and_a_valid_key_gets_an_answer(keyed_server, page):
    page.goto(keyed_server.url)
    form = page.locator("#key-form")
    form.wait_for()
    assert "needs an API key" in page.locator("#key-message").text_content()
    assert page.evaluate("document.activeElement.id") == "key-input"
    page.locator("#key-input").fill("wrong-key-0123456789abcdef")
    page.locator("#key-input").press("Enter")
    page.locator("#key-message").filter(has_text="refused").wait_for()
    assert form.is_visible()
    page.locator("#key-input").fill(KEY)
    page.locator("#key-form button[type=submit]").click()
    assert form.is_hidden()
    page.locator("#profile option").first.wait_for(state="attached")
    assert page.evaluate("sessionStorage.getItem('medcite.apiKey')") == KEY
    ask(page)
    answer = wait_for_answer(page)
    assert answer.locator(".answer-text").text_content() == REPLY


def test_a_question_asked_before_the_key_is_retried_after_it(keyed_server, page):
    page.goto(keyed_server.url)
    page.locator("#key-form").wait_for()
    ask(page)  # refused (401): the question waits for the key
    page.locator("#key-message").filter(has_text="needs an API key").wait_for()
    page.locator(".turn").wait_for(state="detached")  # no half answer left behind
    page.locator("#key-input").fill(KEY)
    page.locator("#key-input").press("Enter")
    assert wait_for_answer(page).locator(".mode").get_attribute("data-outcome") == "answer"
    assert page.locator("#profile option").count() == 1  # the settings were loaded too
