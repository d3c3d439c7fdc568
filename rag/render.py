"""Answers as JSON-ready dicts and as terminal text (shared by the CLI, the API and adapters).

Neither form is HTML or markdown, and nothing here renders markup: passage and answer text come
out literally ("<b>" from a Markdown or JSONL user document stays the four characters "<b>"), so
a UI that shows them must escape them as text. JSON keeps every string verbatim (a citation's
quote is the exact document text); the terminal form drops control characters, which a document
could use to rewrite what the terminal shows (ANSI escapes, OSC 8 links, bidi overrides).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import asdict
from typing import Any

from core.types import Answer, Citation, Hit, SentenceSupport

# C0/C1 controls except tab and newline, and the bidirectional embeddings, overrides and isolates
_TERMINAL_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def hit_to_dict(hit: Hit) -> dict[str, Any]:
    return {**hit.chunk.to_json(), "score": hit.score, "rank": hit.rank, "retriever": hit.retriever}


def citation_to_dict(citation: Citation) -> dict[str, Any]:
    # the marker first, then the provenance, the quote and the support: the order the API always sent
    return {"marker": citation.marker, **asdict(citation), "section": list(citation.section)}


def sentence_to_dict(sentence: SentenceSupport) -> dict[str, Any]:
    """One generated sentence's record: its claim, markers, support and what the gate did with it."""
    return {**asdict(sentence), "markers": list(sentence.markers), "reasons": list(sentence.reasons)}


def answer_to_dict(answer: Answer) -> dict[str, Any]:
    return {
        "question": answer.question,
        "answer": answer.text,
        "mode": answer.mode,
        "outcome": answer.outcome,
        "citations": [citation_to_dict(c) for c in answer.citations],
        "sentences": [sentence_to_dict(s) for s in answer.sentences],
        "evidence": [hit_to_dict(h) for h in answer.evidence],
        "choice": answer.choice,
        "option_probs": dict(answer.option_probs) if answer.option_probs is not None else None,
        "timings": dict(answer.timings),
        "usage": dict(answer.usage),
        "notes": list(answer.notes),
        "read": [hit_to_dict(h) for h in answer.read],  # every passage scored, kept or not
        "lines_read": [asdict(line) for line in answer.lines_read],  # the best lines and their P
        "carried": list(answer.carried),  # what earlier turns of a conversation contributed
    }


def _quote(text: str, width: int = 92, limit: int = 300) -> str:
    flat = " ".join(text.split())
    flat = flat[:limit] + ("…" if len(flat) > limit else "")
    return textwrap.indent(textwrap.fill(flat, width), "    | ")


def _hanging(line: str) -> str:
    """The indent a wrapped list row continues at: under its text, past "- " (and an item's
    two spaces under its lead-in)."""
    bare = line.lstrip(" ")
    return " " * (len(line) - len(bare) + 2) if bare.startswith("- ") else ""


def answer_to_text(answer: Answer) -> str:
    """The answer for a terminal: header, text, sources (or the evidence when it is not an
    answer), what the support gate did, notes and timings.

    A sentence the gate removed is never printed, not even labelled (a wrong dose on screen is the
    worst output); its reasons are, and ``--json`` has the full record.
    """
    lines: list[str] = [_header(answer)]
    body = "\n".join(
        textwrap.fill(line, 96, subsequent_indent=_hanging(line)) for line in answer.text.splitlines()
    )
    lines += [body, ""]
    if answer.citations:
        lines.append(
            "Where the closest lines stand (not an answer):"
            if answer.outcome == "closest_lines"
            else "Sources:"
        )
        for c in answer.citations:
            lines += _citation_lines(c)
        lines.append("")
    elif (shown := answer.evidence or answer.read[:3]) and answer.mode in {"degraded", "abstained"}:
        kept = "" if answer.evidence else ", none kept as evidence"
        lines.append(f"Passages read (not an answer{kept}):")
        for h in shown:
            lines.append(
                f"  {h.rank}. {h.chunk.title} ({h.chunk.chunk_id}; score {h.score:.2f}) {h.chunk.url}"
            )
            lines.append(_quote(h.chunk.text))
        lines.append("")
    for n, s in enumerate(answer.sentences, start=1):
        if s.status == "flagged":
            lines.append(f"! flagged (sentence {n}): {'; '.join(s.reasons)}")
        elif s.status == "removed":
            lines.append(f"! removed (sentence {n}, not shown): {'; '.join(s.reasons)}")
    for note in answer.notes:
        lines.append(f"note: {note}")
    if answer.timings:
        lines.append("time: " + ", ".join(f"{k} {v:.2f}s" for k, v in answer.timings.items()))
    return _TERMINAL_UNSAFE.sub("", "\n".join(lines)).rstrip() + "\n"


HEADERS = {
    "closest_lines": "Not confirmed: medcite found no line that answers; the closest lines follow",
    "nothing_relevant": "Nothing relevant in the indexed sources",
    "closed_book": "Answer (closed-book: from the model's memory, not verified)",
    "degraded": "Not an answer (generation failed)",
}


def _header(answer: Answer) -> str:
    """The first line: which of the outcomes this is, and for an answer how it was verified."""
    if answer.outcome in HEADERS:
        return HEADERS[answer.outcome]
    quoted = [s.probability for s in answer.sentences if s.probability is not None]
    if answer.outcome == "answer" and quoted:
        return f"Answer (quoted word for word; the best line {max(quoted):.0%} likely to answer)"
    if answer.sentences:
        shown = sum(1 for s in answer.sentences if s.status == "shown")
        total = len(answer.sentences)
        extra = "".join(
            f", {n} {status}"
            for status in ("flagged", "removed")
            if (n := sum(1 for s in answer.sentences if s.status == status))
        )
        return f"Answer ({answer.mode}; {shown}/{total} sentences supported by their sources{extra})"
    if answer.mode == "rag" and not answer.citations:
        return "Answer (rag; no valid citation: unverified)"
    return f"Answer ({answer.mode})"


def _citation_lines(c: Citation) -> list[str]:
    section = " > ".join(c.section[-2:])
    support = f"; support {c.support:.2f}" if c.support is not None else ""
    return [
        f"[{c.marker}] {c.title}" + (f" — {section}" if section else "") + f" ({c.source}{support})",
        f"    {c.chunk_id} | chars {c.start}-{c.end} | {c.url or 'no url'}",
        f"    licence: {c.license}",
        _quote(c.quote),
    ]
