"""What the chat page shows besides a plain answer: abstention, sentences the support gate removed
or flagged, every kind of failure, hostile text in passages and answers, and its own guards (CSP,
the SSE parser on events split across reads)."""

from __future__ import annotations

import pytest

from bench.serving.live_chat import REPLY, SECOND, UNSUPPORTED, ask, serve, wait_for_answer
from core.errors import GeneratorError
from rag.answer.outcomes import NOTHING_RELEVANT


def test_passages_the_model_finds_insufficient_are_the_closest_lines_marked_not_confirmed(chat, page):
    chat.generator.reply = "INSUFFICIENT the passages do not say"
    page.goto(chat.url)
    ask(page)
    answer = wait_for_answer(page)
    badge = answer.locator(".mode")
    assert badge.text_content() == "Not confirmed" and badge.get_attribute("data-mode") == "abstained"
    assert "not an answer" in answer.locator(".mode-text").text_content()
    assert answer.locator(".not-confirmed").is_visible()  # a banner, not an answer heading
    assert "INSUFFICIENT" not in answer.text_content()
    assert answer.locator(".sources-box h3").text_content() == "Where the closest lines stand"
    lines = answer.locator(".answer-text").text_content().splitlines()[1:]
    assert lines and len(lines) == len(set(lines))  # no line twice
    answer.locator("button.cite").first.click()  # each line opens its span
    assert page.locator("dialog#passage mark").text_content()
    assert ".py" not in answer.locator(".notes").text_content()  # words for people


def test_a_question_nothing_indexed_is_about_says_so_and_cites_nothing(chat, page):
    page.goto(chat.url)
    ask(page, "How do I true a bicycle wheel?")
    answer = wait_for_answer(page)
    assert answer.locator(".mode").text_content() == "Nothing relevant"
    assert answer.locator(".answer-text").text_content() == NOTHING_RELEVANT
    assert answer.locator("button.cite").count() == 0 and answer.locator(".sources").count() == 0
    assert answer.locator(".not-confirmed").count() == 0


def test_a_removed_sentence_is_listed_struck_through_with_its_reason_never_as_fact(chat, page):
    chat.generator.reply = f"{REPLY} {UNSUPPORTED}"
    page.goto(chat.url)
    ask(page)
    answer = wait_for_answer(page)
    assert answer.locator(".answer-text").text_content() == REPLY
    removed = answer.locator(".not-shown li")
    assert removed.count() == 1
    assert "200 mg" in removed.locator("s").text_content()  # struck through
    assert "support 0.10" in removed.locator(".reason").text_content()
    assert answer.locator(".not-shown h3").text_content() == "Not shown: unsupported"


def test_a_flagged_sentence_is_marked_in_the_text(chat, page):
    holder = chat.pipeline_holder
    holder.pipeline = holder.pipeline.with_changes({"verify": {"policy": "flag"}})
    chat.generator.reply = f"{REPLY} {UNSUPPORTED}"
    page.goto(chat.url)
    ask(page)
    answer = wait_for_answer(page)
    flagged = answer.locator(".answer-text .flagged")
    assert flagged.count() == 1
    assert "200 mg" in flagged.text_content() and "CHA2DS2-VASc" not in flagged.text_content()
    assert flagged.locator(".flag").text_content() == "unsupported"
    assert "200 mg" in answer.locator(".flagged-box").text_content()


@pytest.mark.parametrize(
    ("failure", "expected"),
    [("timeout", "took too long to answer (504)"), ("down", "not available (503)")],
)
def test_a_model_failure_before_the_answer_shows_a_readable_message(chat, page, failure, expected):
    if failure == "timeout":
        chat.generator.timeout_after = 0
    else:

        def down(*args, **kwargs):
            raise GeneratorError("the model server is not reachable; start it and try again")
            yield  # a generator, like the real stream

        chat.generator.stream = down
    page.goto(chat.url)
    ask(page)
    error = wait_for_answer(page).locator(".error")
    assert error.is_visible() and expected in error.text_content()
    assert page.locator("#send").is_enabled()  # the page is usable again


def test_an_error_inside_the_stream_keeps_the_text_and_says_it_is_incomplete(chat, page):
    chat.generator.reply = f"{REPLY} {SECOND}"
    chat.generator.timeout_after = len(REPLY.split(" ")) + 2
    page.goto(chat.url)
    ask(page)
    answer = wait_for_answer(page)
    assert answer.locator(".answer-text").text_content() == REPLY
    assert "stopped part-way (the model took too long)" in answer.locator(".error").text_content()
    assert answer.locator(".mode-line").text_content() == "Incomplete"


def test_stop_ends_the_answer_and_frees_the_model(chat, page):
    chat.generator.reply = f"{REPLY} {SECOND}"
    chat.generator.delay_s = 0.3  # the second sentence would take another 3 s
    page.goto(chat.url)
    ask(page)
    page.locator(".answer-text.streaming").filter(has_text="CHA2DS2-VASc").wait_for()
    page.locator("#stop").click()
    answer = wait_for_answer(page)
    assert "Stopped" in answer.locator(".error").text_content()
    assert answer.locator(".answer-text").text_content() == REPLY
    assert page.locator("#send").is_enabled() and page.locator("#stop").is_disabled()
    gate = chat.app.state.medcite.gate
    for _ in range(50):
        if not gate.running:
            break
        page.wait_for_timeout(100)
    assert gate.snapshot()["running"] == 0 and chat.generator.streams[-1]["closed_early"]


def test_a_network_failure_is_a_message_not_a_blank_page(chat, page):
    page.goto(chat.url)
    page.route("**/v1/chat/completions", lambda route: route.abort("connectionrefused"))
    ask(page)
    error = wait_for_answer(page).locator(".error")
    assert "Could not reach the medcite server" in error.text_content()


def test_a_rate_limit_says_when_to_try_again(browser_paths, page):
    # burst 2: loading the page takes both tokens (/v1/models, /ui/config); the question is the third
    with serve(browser_paths, rate_limit_per_minute=6, rate_limit_burst=2) as served:
        page.goto(served.url)
        page.locator("#profile option").first.wait_for(state="attached")
        ask(page)
        error = wait_for_answer(page).locator(".error").text_content()
    assert "Too many requests right now (429)" in error
    assert "Try again in " in error and " s." in error


def test_html_in_passages_and_answers_stays_text(chat, page):
    chat.generator.reply = 'Warfarin is monitored with the INR <img src=x onerror="window.__pwned=3"> [1].'
    page.goto(chat.url)
    page.locator("input[name=source][value=user-docs]").check()
    ask(page, "How is warfarin anticoagulation monitored in atrial fibrillation?")
    answer = wait_for_answer(page)
    assert "<img src=x" in answer.locator(".answer-text").text_content()
    answer.locator("button.cite").first.click()
    dialog = page.locator("dialog#passage")
    assert "<img src=x onerror=" in dialog.locator("#passage-title").text_content()
    assert "<script>" in dialog.locator("mark").text_content()
    assert page.locator("img").count() == 0 and page.locator("body script").count() == 0
    assert page.evaluate("window.pwned === undefined && window.__pwned === undefined")


def test_the_page_is_sent_with_a_strict_content_security_policy(chat, page):
    response = page.goto(chat.url)
    assert response is not None and response.status == 200
    policy = response.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    # the policy holds: an inline script added to the page does not run
    page.evaluate("""() => { const s = document.createElement('script');
        s.textContent = 'window.__inline = 1'; document.body.append(s); }""")
    assert page.evaluate("window.__inline === undefined")


def test_the_sse_parser_joins_events_split_across_reads(chat, page):
    page.goto(chat.url)
    events = page.evaluate(
        """async () => {
        const { SseParser } = await import('/static/sse.js');
        const parser = new SseParser();
        const wire = 'data: {"a":\\r\\ndata: "é"}\\r\\n\\r\\n: ping\\n\\nevent: x\\ndata: [DONE]\\n\\n';
        const bytes = new TextEncoder().encode(wire);
        const out = [];
        for (let i = 0; i < bytes.length; i += 3) out.push(...parser.feed(bytes.slice(i, i + 3)));
        out.push(...parser.end());
        return out;
    }"""
    )
    assert events == [{"event": "message", "data": '{"a":\n"é"}'}, {"event": "x", "data": "[DONE]"}]
