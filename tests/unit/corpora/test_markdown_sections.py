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


def test_a_setext_heading_over_two_lines_is_one_title():
    text = "Dosing in\nrenal failure\n=============\n\n5 mg.\n"
    assert _sections(text) == [(("Dosing in renal failure",), "5 mg.")]


def test_headings_indented_by_up_to_three_spaces():
    text = "   # Asthma\n\nIntro.\n\n  ## Triggers\n\nDust.\n"
    assert _sections(text) == [(("Asthma",), "Intro."), (("Asthma", "Triggers"), "Dust.")]


def test_lines_indented_by_four_spaces_are_code_not_headings():
    text = "# Script\n\nRun:\n\n    # not a heading\n    make demo\n\nDone.\n"
    assert _sections(text) == [(("Script",), "Run:\n\n    # not a heading\n    make demo\n\nDone.")]


def test_a_hash_line_inside_a_fenced_code_block_is_code():
    text = "# Setup\n\n```bash\n# install\npip install medcite\n```\n\n## Use\n\nAsk.\n"
    assert _sections(text) == [
        (("Setup",), "```bash\n# install\npip install medcite\n```"),
        (("Setup", "Use"), "Ask."),
    ]


def test_a_backtick_fence_inside_a_tilde_fence_does_not_close_it():
    text = "# Doc\n\n~~~markdown\n```\n# still code\n```\n~~~\n\n## After\n\nText.\n"
    assert _sections(text) == [
        (("Doc",), "~~~markdown\n```\n# still code\n```\n~~~"),
        (("Doc", "After"), "Text."),
    ]


def test_an_unclosed_fence_runs_to_the_end():
    text = "# Doc\n\n```\n# code to the end\n"
    assert _sections(text) == [(("Doc",), "```\n# code to the end")]


def test_front_matter_is_body_text_not_a_setext_heading():
    text = "---\ntitle: Asthma plan\ntags: [asthma]\n---\n# Asthma\n\nIntro.\n"
    assert _sections(text) == [
        ((), "---\ntitle: Asthma plan\ntags: [asthma]\n---"),
        (("Asthma",), "Intro."),
    ]
    assert first_heading(text) == "Asthma"


def test_a_thematic_break_after_a_blank_line_is_not_a_heading():
    text = "# Doc\n\nOne.\n\n---\n\nTwo.\n"
    assert _sections(text) == [(("Doc",), "One.\n\n---\n\nTwo.")]


def test_headings_in_quotes_and_lists_and_hashtags_do_not_open_sections():
    text = "# Doc\n\n> # quoted\n\n- # in a list\n\n#hashtag\n"
    assert _sections(text) == [(("Doc",), "> # quoted\n\n- # in a list\n\n#hashtag")]


def test_title_marks_are_dropped_and_empty_sections_skipped():
    text = "# **Bold** and `code` #\n\n## Empty\n\n## _Real_\n\nBody.\n"
    assert _sections(text) == [(("Bold and code", "Real"), "Body.")]


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
