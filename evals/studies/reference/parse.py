"""Reading a model's multiple-choice answer out of MIRAGE-style JSON output, strictly, and MIRAGE's
own scoring rule beside it (only to reproduce its published numbers).

MIRAGE prompts ask for ``{"step_by_step_thinking": ..., "answer_choice": ...}``. The strict
reader accepts one option letter ("B", "B. no", "(B)", "Option B") and otherwise returns no
answer with a reason that tallies: several letters ("A/B"), no letter ("Cannot be determined",
"None of the above"), a letter that is not an option ("E"), no ``answer_choice`` at all, a
provider error (content filter, timeout) or an empty output.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# Why an output has no answer, in the order the reader checks.
REASONS = (
    "empty output",
    "provider error",
    "no answer_choice",
    "several options",
    "no option letter",
    "not an option",
)
_FIELD = re.compile(r'"answer_choice"\s*:\s*"((?:[^"\\]|\\.)*)"')
_PROVIDER = (
    "Error communicating with OpenAI",
    "Request timed out",
    "content management policy",
    "content filter",
)
_OPT = r"[(\[]?[A-Z][)\]]?"
_PICK = r"[(\[]?([A-Z])[)\]]?"
_SEVERAL = re.compile(rf"^{_PICK}\s*(?:/|,|&|\bor\b|\band\b)\s*{_PICK}(?:$|[\s.,:;/)])")
_LABEL = re.compile(
    r"^(?:(?i:the\s+)?(?i:option|answer|choice)\s*:?\s*)?[(\[]?([A-Z])[)\]]?(?=$|[\s.,:;/\"&)\]-])"
)


def choice_text(raw: str) -> str | None:
    """The ``answer_choice`` the model wrote: from its JSON, or the last such field in broken JSON."""
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError:
        parsed = None
    if isinstance(parsed, dict) and "answer_choice" in parsed:
        return str(parsed["answer_choice"])
    found = _FIELD.findall(raw)
    if not found:
        return None
    try:
        return str(json.loads(f'"{found[-1]}"'))
    except json.JSONDecodeError:
        return str(found[-1])


def parse_answer(raw: str | None, letters: Iterable[str]) -> tuple[str | None, str | None]:
    """(letter, None) for one clear option, else (None, reason). Reasons are categories, so they tally:
    empty output, provider error, no answer_choice, several options, no option letter, not an option.
    """
    if raw is None or not raw.strip():
        return None, "empty output"
    text = choice_text(raw)
    if text is None:
        provider = raw.strip() == "'content'" or any(marker in raw for marker in _PROVIDER)
        return None, "provider error" if provider else "no answer_choice"
    text = text.strip()
    letters = set(letters)
    several = _SEVERAL.match(text)
    if several and {several.group(1), several.group(2)} <= letters:
        return None, "several options"
    label = _LABEL.match(text)
    if label is None:
        return None, "no option letter"
    if label.group(1) not in letters:
        looks_like_label = re.fullmatch(rf"{_OPT}\.?|{_OPT}[.:)]\s.*", text) is not None
        return None, "not an option" if looks_like_label else "no option letter"
    return label.group(1), None


def mirage_letter(raw: str) -> str:
    """The letter MIRAGE's ``src/evaluate.py`` credits, to reproduce its published table only.

    It reads the text after the last ``"answer_choice": "`` (the whole output if absent) and takes
    a leading A-D followed by the end, " or", " and", "/" or ","; else "Option X" anywhere; else
    ": X" anywhere; else a leading A-D followed by '.', '"' or ':'; and otherwise answers "A".
    That default is why strict and published accuracies differ (see docs/results).
    """
    text = raw.split('"answer_choice": "')[-1].strip()
    for pattern in (
        r"^\s*([A-D])(?:$| or| and|/|,)",
        r"[Oo]ption ([A-D])",
        r":\s*([A-D])",
        r'^\s*([A-D])[.":]',
    ):
        found = re.search(pattern, text)
        if found:
            return found.group(1)
    return "A"


def mirage_letters(rows: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """MIRAGE's credited letter per qid of one (llm, setting, dataset): it walks qids in sorted order
    and, for an empty output, re-scores the previous item's output (its loop variable leaks)."""
    letters: dict[str, str] = {}
    previous: str | None = None
    for row in sorted(rows, key=lambda r: str(r["qid"])):
        raw = row["raw"][0] if row["raw"] else previous
        letters[str(row["qid"])] = mirage_letter(raw) if raw is not None else "A"
        previous = raw
    return letters
