"""Citation markers in a generated answer, mapped back to the numbered sources of the prompt.

The prompt numbers its passages ``[1]..[n]`` and asks the model to end each sentence with the
markers of the passages that support it. A 1.5B model is sloppy about the form, so the parser
accepts ``[1]``, ``[1, 2]``, ``[1;2]``, ``[1][2]``, ``[1-3]``, ``【1】``, ``[Source 1]``, ``[^1]``
and rewrites each as ``[1][2]...``. It never invents a citation:

- a number outside ``1..n`` is removed from the text and reported in ``rejected`` as ``"[999]"``;
  a range with an end outside ``1..n`` (or reversed) is rejected whole, because a model that
  lost track of the numbering should not be trusted for the part that happens to fit;
- a marker-like fragment that is malformed (unclosed ``[1,2`` as at a cut-off answer, nested
  ``[[1]]``, ``[1,]``) is removed and reported as written;
- bracketed text that is not marker-like (``[a]``, ``[2.5 mg]``, ``[Table 1]``) and markdown
  links (``[1](url)``, single brackets only: ``[0]](`` is a malformed marker) are left alone.

Everything here is pure and deterministic.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

from core.types import Citation, Hit
from rag.generate.sentences import marker_free, sentence_spans

__all__ = ["ParsedAnswer", "ParsedSentence", "parse_answer", "split_sentences", "strip_markers"]

_LABEL = r"(?:(?:sources?|passages?|refs?|references?|docs?|documents?)\.?[ \t]*:?[ \t]*#?|#|\^)"
_NUM = r"[0-9０-９]+"
_ITEM = rf"{_LABEL}?[ \t]*({_NUM})(?:[ \t]*[-–—][ \t]*{_LABEL}?[ \t]*({_NUM}))?"
_SEP = r"[ \t]*(?:[,;][ \t]*(?:and[ \t]+)?|[ \t]and[ \t]+)"
_STRICT = re.compile(rf"[ \t]*{_ITEM}(?:{_SEP}{_ITEM})*[ \t]*", re.IGNORECASE)
_ITEMS = re.compile(_ITEM, re.IGNORECASE)
_LABEL_WORDS = re.compile(rf"{_LABEL}|\band\b", re.IGNORECASE)
_LOOSE = re.compile(r"[0-9０-９ \t,;\-–—]*[0-9０-９][0-9０-９ \t,;\-–—]*")
_CANDIDATE = re.compile(r"(?P<open>[\[【［]+)(?P<body>[^\[\]【】［］\n]{0,80})(?P<close>[\]】］]*)")
_FULLWIDTH = str.maketrans("０１２３４５６７８９", "0123456789")
_MAX_DIGITS = 9  # longer numbers are out of range anyway; int() of huge digit runs is refused


@dataclass(frozen=True)
class ParsedSentence:
    """One answer sentence: as shown (normalised markers), the claim alone, and its markers."""

    text: str
    claim: str  # the sentence with its markers stripped: what a verifier checks
    markers: tuple[int, ...]  # source numbers, in order of appearance, no repeats
    start: int = 0  # where ``text`` lies in ``ParsedAnswer.text``: text == answer.text[start:end]
    end: int = 0


@dataclass(frozen=True)
class ParsedAnswer:
    """A generated answer with its markers resolved: what the pipeline shows and the verifier checks."""

    text: str  # the answer with markers normalised to [n] and invalid ones removed
    sentences: tuple[ParsedSentence, ...]
    citations: tuple[Citation, ...]  # one per source used, numbered as in the prompt, by first use
    rejected: tuple[str, ...]  # removed markers, "[999]" for a number, the raw text when malformed

    @property
    def markers(self) -> tuple[tuple[int, ...], ...]:
        return tuple(s.markers for s in self.sentences)


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``; bullets and headings are cut off, trailing markers stay attached."""
    return [text[start:end] for start, end in sentence_spans(text)]


def strip_markers(text: str) -> str:
    """``text`` without ``[n]`` markers, whitespace tidied (the claim a sentence makes)."""
    return marker_free(text)


def parse_answer(text: str, sources: Sequence[Hit]) -> ParsedAnswer:
    """Normalise the markers of a generated answer and resolve them to ``sources`` (numbered from 1)."""
    n = len(sources)
    rejected: list[str] = []
    cleaned, spans = _clean_once(text, n, rejected)
    # Removing a marker can, in contrived input, bring brackets together into a new one; cleaning
    # until nothing changes makes the result a fixed point (cleaning the output changes nothing).
    # The spans are always those of the last pass: removing "[2]]" from "[1][2]](" leaves "[1](",
    # which reads as a markdown link, so its "[1]" must not count as a citation either.
    for _ in range(8):
        again, spans = _clean_once(cleaned, n, rejected)
        if again == cleaned:
            break
        cleaned = again
    sentences: list[ParsedSentence] = []
    order: list[int] = []
    starts = [m_start for m_start, _, _ in spans]  # in text order, so a sentence's markers are a slice
    for start, end in sentence_spans(cleaned):
        numbers: list[int] = []
        for _, m_end, number in spans[bisect_left(starts, start) : bisect_left(starts, end)]:
            if m_end <= end and number not in numbers:
                numbers.append(number)
        order.extend(k for k in numbers if k not in order)
        body = cleaned[start:end]
        sentences.append(ParsedSentence(body, marker_free(body), tuple(numbers), start=start, end=end))
    citations = tuple(Citation.from_chunk(k, sources[k - 1].chunk) for k in order)
    return ParsedAnswer(
        text=cleaned, sentences=tuple(sentences), citations=citations, rejected=tuple(rejected)
    )


def _clean_once(text: str, n: int, rejected: list[str]) -> tuple[str, list[tuple[int, int, int]]]:
    """One pass: the rewritten text and the span of each ``[k]`` in it (start, end, k)."""
    parts: list[str] = []
    spans: list[tuple[int, int, int]] = []
    length = pos = 0
    for match in _CANDIDATE.finditer(text):
        body = match["body"]
        if not _LOOSE.fullmatch(_LABEL_WORDS.sub(" ", body)):
            continue  # ordinary bracketed text
        single = len(match["open"]) == 1 and len(match["close"]) == 1
        if single and text.startswith("(", match.end()):
            continue  # a markdown link [1](url); "[0]](" or "[[1]](" is a malformed marker, not a link
        valid: list[int] = []
        if single and _STRICT.fullmatch(body):
            valid = _resolve(body, n, rejected)
        else:
            rejected.append(match.group(0).strip())
        before = text[pos : match.start()]
        if not valid:
            before = before.rstrip(" \t")  # "risk [999]." -> "risk."
        parts.append(before)
        length += len(before)
        for k in valid:
            spans.append((length, length + len(f"[{k}]"), k))
            length += len(f"[{k}]")
        parts.append("".join(f"[{k}]" for k in valid))
        pos = match.end()
    parts.append(text[pos:])
    return "".join(parts), spans


def _resolve(body: str, n: int, rejected: list[str]) -> list[int]:
    """The source numbers a well-formed marker body names, in order; the rest go to ``rejected``."""
    numbers: list[int] = []
    for item in _ITEMS.finditer(body):
        first = _number(item[1])
        if item[2] is None:
            if 1 <= first <= n:
                numbers.append(first)
            else:
                rejected.append(f"[{_digits(item[1])}]")
            continue
        last = _number(item[2])
        if 1 <= first <= last <= n:
            numbers.extend(range(first, last + 1))
        else:
            rejected.append(f"[{_digits(item[1])}-{_digits(item[2])}]")
    return list(dict.fromkeys(numbers))


def _digits(raw: str) -> str:
    return raw.translate(_FULLWIDTH).lstrip("0") or "0"


def _number(raw: str) -> int:
    digits = _digits(raw)
    return int(digits) if len(digits) <= _MAX_DIGITS else 10**_MAX_DIGITS
