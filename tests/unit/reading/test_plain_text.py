"""What the support model reads of a Markdown passage."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rag.reading.plain_text import plain, plain_text

KDIGO = """| Stage | GFR (mL/min/1.73m²) | Description |
|-------|---------------------|-------------|
| G1 | ≥ 90 | Normal or high |
| G3a | 45–59 | Mildly to moderately decreased |"""


def test_table_rows_become_column_cell_lines() -> None:
    assert plain_text(KDIGO) == (
        "Stage: G1; GFR (mL/min/1.73m²): ≥ 90; Description: Normal or high.\n"
        "Stage: G3a; GFR (mL/min/1.73m²): 45–59; Description: Mildly to moderately decreased."
    )


def test_text_around_a_table_stays_in_place_and_empty_cells_are_skipped() -> None:
    text = "Doses:\n| Drug | Dose |\n|:---|---:|\n| Febuxostat | |\n| Allopurinol | 100 mg |\nEnd."
    assert plain_text(text) == "Doses:\nDrug: Febuxostat.\nDrug: Allopurinol; Dose: 100 mg.\nEnd."


def test_pipes_without_a_separator_row_are_not_a_table() -> None:
    assert plain_text("| a | b |") == "a b"


def test_emphasis_code_heading_and_quote_markers_go_words_and_symbols_stay() -> None:
    text = "## Target\n- **Target: SU < 6 mg/dL** for __all__ patients\n> `qsofa` is **two** of three"
    assert plain_text(text) == "Target\n- Target: SU < 6 mg/dL for all patients\nqsofa is two of three"


def test_a_lone_marker_goes_too_and_plain_is_the_same_stripping_on_one_line() -> None:
    # a bold run the summary broke ("*Action:** Initiate") and a code fence around a flowchart
    assert plain_text("*Action:** Initiate **statin**") == "*Action: Initiate statin"
    assert plain_text("```\nECG within 10 min\n```") == "\nECG within 10 min\n"
    # a comparator opening a table cell is no quote mark
    assert plain_text("| > 140 | High |") == "> 140 High"
    assert plain("| > 140 | **High** |\n## Risk\n> quoted") == "> 140 High Risk quoted"


@given(st.text(alphabet=st.characters(blacklist_characters="*_`|#>\r"), max_size=200))
def test_text_without_markdown_is_unchanged(text: str) -> None:
    assert plain_text(text) == text
