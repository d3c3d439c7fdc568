"""Every relative link in README.md and docs/ points at a file or folder that exists.

Links are Markdown's ``[text](target)`` and ``![alt](target)``; a target is resolved against the
folder of the page it is in, its ``#fragment`` dropped. Web and mail links and links to an anchor
of the same page are not checked. Code (fenced blocks and inline spans) is skipped: a link-like
string there is an example, not a link.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]
# [text](target) or ![alt](target), with an optional "title" after the target; <target> allowed
LINK = re.compile(r"!?\[[^\]]*\]\(\s*(?:<([^>]+)>|([^)\s]+))(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`[^`]*`")
EXTERNAL = ("http://", "https://", "mailto:")


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def link_targets(text: str) -> list[tuple[int, str]]:
    """(line number, target) of every relative file link outside code."""
    found = []
    in_fence = False
    for number, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for match in LINK.finditer(INLINE_CODE.sub("", line)):
            target = match.group(1) or match.group(2)
            if target.startswith(EXTERNAL) or target.startswith("#"):
                continue
            found.append((number, target))
    return found


def broken_links(page: Path) -> list[str]:
    broken = []
    for number, target in link_targets(page.read_text(encoding="utf-8")):
        path = unquote(target.split("#", 1)[0])
        if not (page.parent / path).exists():
            broken.append(f"{page.relative_to(ROOT)}:{number}: {target}")
    return broken


def test_the_scan_finds_the_pages_and_their_links():
    assert len(pages()) > 5
    assert sum(len(link_targets(p.read_text(encoding="utf-8"))) for p in pages()) > 10


def test_link_targets_skips_web_links_anchors_and_code():
    text = (
        "[a](docs/x.md#part) ![b](img/y.png) [c](https://e.org) [d](#top) [e](mailto:a@b.c)\n"
        "`[f](inline.md)` [g](<with space.md>)\n```\n[h](fenced.md)\n```\n"
    )
    assert link_targets(text) == [(1, "docs/x.md#part"), (1, "img/y.png"), (2, "with space.md")]


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path):
    broken = broken_links(page)
    assert broken == [], "links to nothing:\n" + "\n".join(broken)
