"""The chat page in headless Chromium: its weight and how fast a streamed token reaches the screen.

1. Page weight: the bytes of every asset the page loads from the server (HTML, CSS, JS modules;
   the API calls it makes are not counted), on a fresh load with the cache empty.
2. Display delay, over ``--asks`` questions: from the moment the network read that carried the
   API's first content token resolved in the page (mark ``medcite:first-token-received``) to the
   animation frame in which that token is in the DOM (mark ``medcite:first-token-shown``). The
   server is the browser tests' (bench/serving/live_chat.py: real BM25 index, scripted model streaming
   two sentences), because what is measured is the page, not the model.
Targets: under 300 KB of assets and under 1 s of display delay.

    medcite bench chat-page [--asks 20]     # writes docs/results/bench/serving/chat_page.json
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.common import summarize, write_result
from bench.serving.live_chat import (
    INSTALL,
    QUESTION,
    REPLY,
    SECOND,
    ask,
    build_index,
    find_chromium,
    launch_chromium,
    serve,
    wait_for_answer,
)

TARGET_BYTES = 300 * 1024
TARGET_DELAY_MS = 1000.0
MARKS = ("medcite:first-token-received", "medcite:first-token-shown")


def page_weight(page: Any, url: str) -> dict[str, Any]:
    """Bytes of each asset a fresh load of the page fetches (API calls excluded)."""
    assets: dict[str, int] = {}

    def record(response: Any) -> None:
        path = response.url.removeprefix(url)
        if path == "/" or path.startswith("/static/"):
            assets[path] = len(response.body())

    page.on("response", record)
    page.goto(url)
    page.locator("#profile option").first.wait_for(state="attached")
    page.wait_for_load_state("networkidle")
    page.remove_listener("response", record)
    return {"assets": dict(sorted(assets.items())), "total_bytes": sum(assets.values())}


def display_delay_ms(page: Any) -> dict[str, float]:
    """Ask once, in a new conversation; the first token's display delay and Enter-to-screen, in ms."""
    page.locator("#new-chat").click()
    page.evaluate("performance.clearMarks()")
    started = page.evaluate("performance.now()")
    ask(page, QUESTION)
    wait_for_answer(page)
    page.wait_for_function(f"performance.getEntriesByName('{MARKS[1]}').length === 1")
    received, shown = (page.evaluate(f"performance.getEntriesByName('{m}')[0].startTime") for m in MARKS)
    return {"display_ms": shown - received, "enter_to_shown_ms": shown - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--asks", type=int, default=20)
    parser.add_argument("--delay-s", type=float, default=0.02, help="the scripted model's pause per word")
    args = parser.parse_args()
    executable = find_chromium()
    if executable is None:
        sys.exit(f"chromium not found: {INSTALL}")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = launch_chromium(p, executable)
        with serve(build_index(Path(tmp)), f"{REPLY} {SECOND}") as served:
            served.generator.delay_s = args.delay_s
            context = browser.new_context(viewport={"width": 1000, "height": 800})
            page = context.new_page()
            weight = page_weight(page, served.url)
            runs = [display_delay_ms(page) for _ in range(args.asks)]
            context.close()
        browser.close()
    display = summarize([r["display_ms"] for r in runs])
    payload = {
        "page_weight": {
            **weight,
            "target_bytes": TARGET_BYTES,
            "meets_target": weight["total_bytes"] < TARGET_BYTES,
        },
        "first_token_display": {
            "asks": args.asks,
            "model_delay_s_per_word": args.delay_s,
            "display_ms": display,
            "max_display_ms": round(max(r["display_ms"] for r in runs), 3),
            "enter_to_shown_ms": summarize([r["enter_to_shown_ms"] for r in runs]),
            "target_ms": TARGET_DELAY_MS,
            "meets_target": max(r["display_ms"] for r in runs) < TARGET_DELAY_MS,
        },
        "browser": {"executable": executable},
    }
    path = write_result("chat_page", payload)
    worst = payload["first_token_display"]["max_display_ms"]
    print(
        f"page weight {weight['total_bytes'] / 1024:.1f} KB ({len(weight['assets'])} files); first token on "
        f"screen {display['median_ms']:.1f} ms median, {worst:.1f} ms max after it arrived "
        f"({args.asks} asks); wrote {path}"
    )


if __name__ == "__main__":
    main()
