"""corpora/sources/markdown.py: the headings a CommonMark reader sees, with exact body spans.

Each case is a small document and the sections a reader would name in it; ``_sections`` reads
every span back out of the original text, so a wrong offset shows as wrong body text.
"""

from __future__ import annotations

import sys

import pytest

from core.errors import MissingExtraError
from corpora.sources import markdown
from corpora.sources.markdown import first_heading, markdown_sections


def _sections(text: str, root: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str]]:
    return [(s.path, text[s.start : s.end]) for s in markdown_sections(text, root=root)]


def test_atx_hierarchy_with_text_before_the_first_heading():
    text = (
        "Preamble.\n\n# Asthma\n\nIntro.\n\n## Triggers ##\n\nDust.\n\n"
        "### Pets\n\nCats.\n\n## Drugs\n\nSABA.\n"
    )
    assert _sections(text, root=("Doc",)) == [
        (("Doc",), "Preamble."),
        (("Doc", "Asthma"), "Intro."),
        (("Doc", "Asthma", "Triggers"), "Dust."),
        (("Doc", "Asthma", "Triggers", "Pets"), "Cats."),
        (("Doc", "Asthma", "Drugs"), "SABA."),
    ]


def test_setext_headings_are_headings_and_their_underline_is_not_body():
    text = "Asthma plan\n===========\n\nIntro.\n\nTriggers\n--------\nDust and\npollen.\n"
    assert _sections(text) == [
        (("Asthma plan",), "Intro."),
        (("Asthma plan", "Triggers"), "Dust and\npollen."),
    ]
    assert first_heading(text) == "Asthma plan"


@pytest.mark.parametrize(
    ("text", "sections"),
    [
        pytest.param(
            "Dosing in\nrenal failure\n=============\n\n5 mg.\n",
            [(("Dosing in renal failure",), "5 mg.")],
            id="a setext heading over two lines is one title",
        ),
        pytest.param(
            "   # Asthma\n\nIntro.\n\n  ## Triggers\n\nDust.\n",
            [(("Asthma",), "Intro."), (("Asthma", "Triggers"), "Dust.")],
            id="headings indented by up to three spaces",
        ),
        pytest.param(
            "# Script\n\nRun:\n\n    # not a heading\n    make demo\n\nDone.\n",
            [(("Script",), "Run:\n\n    # not a heading\n    make demo\n\nDone.")],
            id="lines indented by four spaces are code not headings",
        ),
        pytest.param(
            "# Setup\n\n```bash\n# install\npip install medcite\n```\n\n## Use\n\nAsk.\n",
            [
                (("Setup",), "```bash\n# install\npip install medcite\n```"),
                (("Setup", "Use"), "Ask."),
            ],
            id="a hash line inside a fenced code block is code",
        ),
        pytest.param(
            "# Doc\n\n~~~markdown\n```\n# still code\n```\n~~~\n\n## After\n\nText.\n",
            [
                (("Doc",), "~~~markdown\n```\n# still code\n```\n~~~"),
                (("Doc", "After"), "Text."),
            ],
            id="a backtick fence inside a tilde fence does not close it",
        ),
        pytest.param(
            "# Doc\n\n```\n# code to the end\n",
            [(("Doc",), "```\n# code to the end")],
            id="an unclosed fence runs to the end",
        ),
        pytest.param(
            "# Doc\n\nOne.\n\n---\n\nTwo.\n",
            [(("Doc",), "One.\n\n---\n\nTwo.")],
            id="a thematic break after a blank line is not a heading",
        ),
        pytest.param(
            "# Doc\n\n> # quoted\n\n- # in a list\n\n#hashtag\n",
            [(("Doc",), "> # quoted\n\n- # in a list\n\n#hashtag")],
            id="headings in quotes and lists and hashtags do not open sections",
        ),
        pytest.param(
            "# **Bold** and `code` #\n\n## Empty\n\n## _Real_\n\nBody.\n",
            [(("Bold and code", "Real"), "Body.")],
            id="title marks are dropped and empty sections skipped",
        ),
    ],
)
def test_sections_a_reader_sees(text, sections):
    assert _sections(text) == sections


def test_front_matter_is_body_text_not_a_setext_heading():
    text = "---\ntitle: Asthma plan\ntags: [asthma]\n---\n# Asthma\n\nIntro.\n"
    assert _sections(text) == [
        ((), "---\ntitle: Asthma plan\ntags: [asthma]\n---"),
        (("Asthma",), "Intro."),
    ]
    assert first_heading(text) == "Asthma"


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_spans_are_exact_offsets_whatever_the_line_endings(newline):
    text = newline.join(["\ufeffIntro é", "# Ünïcode 🩺", "", "Body ✓ one", "", "Title", "=====", "Two", ""])
    sections = markdown_sections(text)
    assert [(s.path, text[s.start : s.end]) for s in sections] == [
        ((), "\ufeffIntro é"),
        (("Ünïcode 🩺",), "Body ✓ one"),
        (("Title",), "Two"),
    ]


def test_without_markdown_it_the_error_names_the_corpora_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "markdown_it", None)  # import now raises ImportError
    markdown._parser.cache_clear()
    try:
        with pytest.raises(MissingExtraError, match=r"medcite\[corpora\]"):
            markdown_sections("# Title\n\nBody.\n")
    finally:
        markdown._parser.cache_clear()
