"""Screenshots of the chat page's states for the README, taken in headless Chromium.

Uses the browser tests' live server (a real BM25 index, a scripted model: bench/serving/live_chat.py),
so the pictures show the page as the tests check it, not a mock-up.

    .venv/bin/python scripts/screenshots.py            # writes docs/screenshots/*.png
    medcite serve &  # the real chain (default profile, local model), then:
    .venv/bin/python scripts/screenshots.py --real-url http://127.0.0.1:8000   # real-*.png, one per outcome

With ``--real-url`` the pictures are of a real answer from that server: the models' own text,
support scores and passages, nothing scripted.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.serving.live_chat import (
    INSTALL,
    KEY,
    REPLY,
    SECOND,
    UNSUPPORTED,
    ask,
    build_index,
    find_chromium,
    launch_chromium,
    serve,
    wait_for_answer,
)


@contextmanager
def shot(browser: Any, url: str, path: Path, *, width: int = 1000, full: bool = True) -> Iterator[Any]:
    """A fresh tab at ``url`` with its settings loaded; once the caller has acted, saved to ``path``."""
    context = browser.new_context(viewport={"width": width, "height": 760}, device_scale_factor=1)
    try:
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.goto(url)
        page.locator("#profile option, #key-form:visible").first.wait_for(state="attached")
        yield page
        page.screenshot(path=str(path), full_page=full)
        print(f"wrote {path}")
    finally:
        context.close()


# One question per outcome for the real chain (default profile, default index)
CLOSEST_QUESTION = "When should the second high-sensitivity troponin be drawn?"
NOTHING_QUESTION = "How do I true a bicycle wheel?"


def real_shots(browser: Any, url: str, out: Path, question: str) -> None:
    """``real-answer.png``, ``real-passage.png``, ``real-closest.png`` and ``real-nothing.png``:
    one question per outcome to a real server (seconds each when quoted; minutes if generated)."""
    context = browser.new_context(viewport={"width": 1000, "height": 900}, device_scale_factor=1)
    try:
        page = context.new_page()
        page.set_default_timeout(600_000)
        for name, asked in (
            ("answer", question),
            ("closest", CLOSEST_QUESTION),
            ("nothing", NOTHING_QUESTION),
        ):
            page.goto(url)
            page.locator("#profile option").first.wait_for(state="attached")
            ask(page, asked)
            answer = wait_for_answer(page)
            page.screenshot(path=str(out / f"real-{name}.png"), full_page=True)
            print(f"wrote {out / f'real-{name}.png'} ({answer.locator('.mode').text_content()})")
            if name == "answer" and answer.locator("button.cite").count():
                answer.locator("button.cite").first.click()
                page.screenshot(path=str(out / "real-passage.png"))
                print(f"wrote {out / 'real-passage.png'}")
    finally:
        context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    parser.add_argument("--real-url", help="a running `medcite serve` to photograph a real answer from")
    parser.add_argument(
        "--question", default="Which score is used to decide on anticoagulation in atrial fibrillation?"
    )
    args = parser.parse_args()
    executable = find_chromium()
    if executable is None:
        sys.exit(f"chromium not found: {INSTALL}")
    from playwright.sync_api import sync_playwright

    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    if args.real_url:
        with sync_playwright() as p:
            browser = launch_chromium(p, executable)
            real_shots(browser, args.real_url, out, args.question)
            browser.close()
        return
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        paths = build_index(Path(tmp))
        browser = launch_chromium(p, executable)
        with serve(paths, f"{REPLY} {SECOND} {UNSUPPORTED}") as served:
            with shot(browser, served.url, out / "answer.png") as page:
                ask(page)
                wait_for_answer(page)
            with shot(browser, served.url, out / "passage-panel.png", full=False) as page:
                ask(page)
                wait_for_answer(page).locator("button.cite").first.click()
            with shot(browser, served.url, out / "phone.png", width=390) as page:
                ask(page)
                wait_for_answer(page)
            served.generator.reply = "INSUFFICIENT the passages do not say"
            with shot(browser, served.url, out / "closest.png") as page:
                ask(page)  # the scripted model finds the passages insufficient: the closest passages
                wait_for_answer(page)
            with shot(browser, served.url, out / "nothing.png") as page:
                ask(page, NOTHING_QUESTION)
                wait_for_answer(page).locator(".evidence summary, .mode").first.wait_for()
            served.generator.reply, served.generator.timeout_after = REPLY, 0
            with shot(browser, served.url, out / "error.png") as page:
                ask(page)
                wait_for_answer(page)
        with (
            serve(paths, env="production", api_keys=[KEY]) as keyed,
            shot(browser, keyed.url, out / "key-form.png") as page,
        ):
            page.locator("#key-form").wait_for()
        browser.close()


if __name__ == "__main__":
    main()
