"""The chat page answering: streaming, citations that open their passage, follow-ups, the source
filter, copy as Markdown, keyboard use and a phone-width layout, in a real Chromium."""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import expect

from bench.serving.live_chat import QUESTION, REPLY, SECOND, ask, wait_for_answer


def test_the_answer_streams_in_and_ends_with_its_mode_and_sources(chat, page):
    chat.generator.reply = f"{REPLY} {SECOND}"
    chat.generator.delay_s = 0.15  # the second sentence arrives over 1.5 s after the first
    page.goto(chat.url)
    ask(page)
    streaming = page.locator(".answer-text.streaming")
    streaming.filter(has_text="CHA2DS2-VASc").wait_for()
    partial = streaming.text_content()
    assert partial.startswith("The CHA2DS2-VASc") and "Men with a score" not in partial
    assert page.locator(".answer").get_attribute("aria-busy") == "true"
    answer = wait_for_answer(page)
    assert answer.locator(".answer-text").text_content() == f"{REPLY} {SECOND}"
    assert answer.locator(".mode").text_content() == "Answer"
    assert answer.locator(".mode").get_attribute("data-outcome") == "answer"
    assert "each [n] opens the exact line" in answer.locator(".mode-text").text_content()
    assert answer.locator(".not-confirmed").count() == 0
    assert answer.locator("button.cite").count() == 2
    assert answer.locator(".sources li").count() == 1


def test_a_citation_opens_its_passage_with_the_cited_span_marked(chat, page):
    page.goto(chat.url)
    ask(page)
    answer = wait_for_answer(page)
    final = _final_chunk(chat.url)
    citation = final["citations"][0]
    answer.locator("button.cite").first.click()
    dialog = page.locator("dialog#passage")
    assert dialog.is_visible()
    assert dialog.locator("mark").text_content() == citation["quote"]
    assert dialog.locator("#passage-title").text_content() == f"[1] {citation['title']}"
    text = dialog.text_content()
    for field in (citation["source"], citation["license"], " › ".join(citation["section"]), "support 0.90"):
        assert field in text
    link = dialog.locator("a")
    assert (
        link.get_attribute("href") == citation["url"] and link.get_attribute("rel") == "noopener noreferrer"
    )
    dialog.locator("#passage-close").click()
    assert not dialog.is_visible()


def test_keyboard_only_ask_open_a_source_and_close_it_with_escape(chat, page):
    page.goto(chat.url)
    page.locator("#profile").focus()
    for _ in range(10):  # tab from the settings to the question box
        if page.evaluate("document.activeElement.id") == "question":
            break
        page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "question"
    page.keyboard.type(QUESTION)
    page.keyboard.press("Enter")
    answer = wait_for_answer(page)
    cite = answer.locator("button.cite").first
    page.locator("#question").focus()
    for _ in range(40):  # shift-tab back up into the answer until the [1] button has focus
        if page.evaluate("document.activeElement.classList.contains('cite')"):
            break
        page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement.dataset.marker") == "1"
    page.keyboard.press("Enter")
    dialog = page.locator("dialog#passage")
    assert dialog.is_visible()
    assert page.evaluate("document.getElementById('passage').contains(document.activeElement)")
    page.keyboard.press("Escape")
    assert not dialog.is_visible()
    assert page.evaluate("document.activeElement.classList.contains('cite')")  # focus came back
    assert cite.evaluate("b => b === document.activeElement")


def test_a_follow_up_sends_the_earlier_turn(chat, page):
    retriever = chat.pipeline_holder.pipeline.retriever
    page.goto(chat.url)
    ask(page)
    wait_for_answer(page, 0)
    ask(page, "And what about bleeding risk?")
    wait_for_answer(page, 1)
    assert retriever.queries[-1] == f"{QUESTION}\nAnd what about bleeding risk?"
    page.locator("#new-chat").click()
    assert page.locator(".turn").count() == 0
    ask(page, "What about bleeding risk in atrial fibrillation?")
    wait_for_answer(page, 0)
    assert retriever.queries[-1] == "What about bleeding risk in atrial fibrillation?"


def test_the_source_filter_limits_the_passages_to_the_ticked_source(chat, page):
    chat.generator.reply = "Warfarin is monitored with the INR, aiming at 2 to 3 [1]."
    page.goto(chat.url)
    expect(page.locator("#profile-info")).to_contain_text("index: default")  # once /ui/config is read
    boxes = page.locator("input[name=source]")
    expect(boxes).to_have_count(2)
    assert sorted(boxes.evaluate_all("bs => bs.map(b => b.value)")) == ["open-medicine", "user-docs"]
    page.locator("input[name=source][value=user-docs]").check()
    with page.expect_request("**/v1/chat/completions") as sent:
        ask(page, "How is warfarin anticoagulation monitored in atrial fibrillation?")
    assert sent.value.post_data_json["filters"] == {"sources": ["user-docs"]}
    answer = wait_for_answer(page)
    answer.locator("button.cite").first.click()
    assert page.locator("dialog#passage dt:text-is('Source') + dd").text_content() == "user-docs"
    assert "INR" in page.locator("dialog#passage mark").text_content()


def test_copy_as_markdown_gives_the_answer_and_a_numbered_reference_list(chat, page):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(chat.url)
    ask(page)
    wait_for_answer(page).locator("button.copy").click()
    page.locator("#status").filter(has_text="Copied").wait_for()
    markdown = page.evaluate("navigator.clipboard.readText()")
    citation = _final_chunk(chat.url)["citations"][0]
    assert REPLY in markdown
    reference = re.search(r"^\[1\] (.+)$", markdown, re.MULTILINE)
    assert reference is not None
    assert citation["title"] in reference.group(1) and f"<{citation['url']}>" in reference.group(1)


def test_at_phone_width_nothing_overflows_sideways(chat, page):
    page.set_viewport_size({"width": 390, "height": 844})
    chat.generator.reply = f"{REPLY} {SECOND}"
    page.goto(chat.url)
    ask(page)
    wait_for_answer(page).locator("button.cite").first.click()
    page.locator("dialog#passage").wait_for()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page is {width} px wide at a 390 px viewport"
    box = page.locator("dialog#passage").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390


def _final_chunk(url: str) -> dict:
    """What the API itself sends for the question (the scripted model answers the same way)."""
    import json

    body = {"model": "fast", "messages": [{"role": "user", "content": QUESTION}], "stream": True}
    raw = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=30)
    events = [line[len("data: ") :] for line in raw.text.splitlines() if line.startswith("data: ")]
    return next(json.loads(e) for e in events if e != "[DONE]" and "citations" in json.loads(e))
