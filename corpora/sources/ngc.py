"""AHRQ National Guideline Clearinghouse summaries (2018 archive): EVALUATION USE ONLY.

Each NGC summary is subject to its guideline developer's copyright (only 43 of 1,416 say
unrestricted), so this source is for local evaluation and experiments: never ship an index built
from it or make it part of a default corpus (``NgcSource.evaluation_only``; the build code
refuses it by default).

Reads ``ngc_summaries.jsonl.gz`` (``{ngc_id, title, fields}``, all fields) or, failing that,
``ngc_guidelines_compact.jsonl`` (key fields, no rating schemes). One document per summary,
``ngc:<NGC id>``; sections: major recommendations (split at their subheadings), clinical
condition, target population, interventions, developer(s), date released and the evidence and
recommendation rating schemes. Text that was UTF-8 read as Latin-1 upstream ("â\\x80\\x93") is
repaired. The data has no per-item URL; ``url`` is the archived XML in the upstream repository,
``metadata["original_url"]`` the guideline.gov address it was scraped from (offline since 2018).

No ``fetch``: upstream (cyberwitch/national-guideline-clearinghouse) is ~10,000 XML files, not
one file; pass ``--path`` to a local copy of the flattened files.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from core.errors import SourceError
from core.types import Document
from corpora.sources.base import DocumentBuilder, iter_jsonl

LICENSE = (
    "Each summary is subject to its guideline developer's copyright; AHRQ National Guideline "
    "Clearinghouse archive — evaluation use only"
)
UPSTREAM = "https://github.com/cyberwitch/national-guideline-clearinghouse/blob/34288d4f"
ORIGINAL = "https://www.guideline.gov/summaries/downloadcontent/{}?contentType=xml"
FILES = ("ngc_summaries.jsonl.gz", "ngc_guidelines_compact.jsonl")
MAJOR = "Major recommendations"
# (section path, field in ngc_summaries, key in ngc_guidelines_compact), in document order
FIELDS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    ((MAJOR,), "Major Recommendations", "major_recommendations"),
    (("Clinical condition / disease",), "Disease/Condition(s)", "disease_conditions"),
    (("Target population",), "Target Population", "target_population"),
    (
        ("Interventions and practices considered",),
        "Interventions and Practices Considered",
        "interventions_and_practices_considered",
    ),
    (("Guideline developer(s)",), "Guideline Developer(s)", "guideline_developers"),
    (("Date released",), "Date Released", "date_released"),
    (
        ("Evidence rating scheme", "Strength of the evidence"),
        "Rating Scheme for the Strength of the Evidence",
        "",
    ),
    (
        ("Evidence rating scheme", "Strength of the recommendations"),
        "Rating Scheme for the Strength of the Recommendations",
        "",
    ),
)
PLACEHOLDERS = {"", "not applicable", "not stated", "none provided", "none available", "none"}
MIN_SUBSECTION = 80  # characters below which a subheading's text stays in the previous section
_MOJIBAKE = re.compile(
    "[\u00c2-\u00df][\u0080-\u00bf]|[\u00e0-\u00ef][\u0080-\u00bf]{2}|[\u00f0-\u00f4][\u0080-\u00bf]{3}"
)


def fix_mojibake(text: str) -> str:
    """Repair runs of UTF-8 bytes that were decoded as Latin-1 (``â\\x80\\x93`` -> ``–``)."""

    def repair(m: re.Match[str]) -> str:
        try:
            return m.group().encode("latin-1").decode("utf-8")
        except UnicodeError:
            return m.group()

    return _MOJIBAKE.sub(repair, text)


def _as_text(value: Any) -> str:
    if isinstance(value, list):
        value = "; ".join(str(v).strip() for v in value if str(v).strip())
    text = fix_mojibake(str(value or "")).strip()
    return "" if text.lower().rstrip(".") in PLACEHOLDERS else text


def _is_heading(line: str) -> bool:
    """A subheading: a short, unindented line that is not a bullet and not a sentence."""
    s = line.rstrip()
    if not (3 <= len(s) <= 100) or s != s.lstrip() or not (s[0].isupper() or s[0].isdigit()):
        return False
    if s[-1] in ".;,:" or ". " in s or len(s.split()) > 14:
        return False
    # "... (Grade 1B)" / "(2|+OOO)" end recommendations, not headings like "Foo (FOO)"
    return not (re.search(r"\([^)]*[\d|][^)]*\)$", s) and len(s.split()) > 6)


def _text_after(lines: list[str], i: int) -> str:
    """The text under heading ``lines[i]``: up to 8 lines, stopping at the next heading."""
    out: list[str] = []
    for line in lines[i + 1 : i + 9]:
        if _is_heading(line):
            break
        out.append(line)
    return "\n".join(out).strip()


def split_recommendations(text: str) -> list[tuple[tuple[str, ...], str]]:
    """Split major recommendations at subheadings into ``(path, body)``.

    The heading stays the body's first line, so a misread heading loses no text. Consecutive
    headings nest (the path keeps the last two); a heading over less than MIN_SUBSECTION
    characters of text starts no section.
    """
    parts: list[tuple[tuple[str, ...], list[str]]] = [((MAJOR,), [])]
    lines = text.split("\n")
    for i, line in enumerate(lines):
        path, body = parts[-1]
        if _is_heading(line) and i + 1 < len(lines):
            if body and all(_is_heading(b) for b in body):  # nest under the last heading
                parts[-1] = ((MAJOR, *path[1:][-1:], line.strip()), [*body, line])
                continue
            if _is_heading(lines[i + 1]) or len(_text_after(lines, i)) >= MIN_SUBSECTION:
                parts.append(((MAJOR, line.strip()), [line]))
                continue
        body.append(line)
    return [(path, "\n".join(body)) for path, body in parts if "\n".join(body).strip()]


class NgcSource:
    name: ClassVar[str] = "ngc"
    default_subdir: ClassVar[str | None] = "ngc_guideline_summaries"
    evaluation_only: ClassVar[bool] = True

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path else None
        self.skipped = 0  # summaries without any text

    def _file(self) -> Path:
        if self.path is not None and self.path.is_file():
            return self.path
        for name in FILES:
            if self.path is not None and (self.path / name).is_file():
                return self.path / name
        raise SourceError(
            f"NGC summaries not found at {self.path}: expected {' or '.join(FILES)}. This source "
            "has no download (evaluation use only); pass --path to a local copy of the files."
        )

    def describe(self) -> dict[str, Any]:
        try:
            data: str | None = self._file().name
        except SourceError:
            data = None
        return {
            "name": self.name,
            "path": str(self.path),
            "file": data,
            "evaluation_only": True,
            "terms": "each summary is subject to its guideline developer's copyright; "
            "local evaluation only, never ship or make it a default corpus",
        }

    def documents(self) -> Iterator[Document]:
        self.skipped = 0
        path = self._file()
        compact = "compact" in path.name
        for n, row in iter_jsonl(path):
            ngc_id = str(row.get("ngc_id") or "").strip()
            fields = row if compact else row.get("fields")
            if not ngc_id or not isinstance(fields, dict):
                raise SourceError(f"{path}:{n}: expected an ngc_id and a fields object")
            doc = self._document(ngc_id, row, fields, compact)
            if doc is None:
                self.skipped += 1
            else:
                yield doc

    def _document(
        self, ngc_id: str, row: dict[str, Any], fields: dict[str, Any], compact: bool
    ) -> Document | None:
        """Build one summary's document; None when it has no text at all."""

        def get(full_name: str, compact_key: str) -> str:
            return _as_text(fields.get(compact_key if compact else full_name))

        builder = DocumentBuilder()
        for section, name, key in FIELDS:
            if section == (MAJOR,):
                for sub_path, body in split_recommendations(get(name, key)):
                    builder.add(sub_path, body)
            else:
                builder.add(section, get(name, key))
        if builder.empty:
            return None
        title = _as_text(row.get("title")) or get("Guideline Title", "guideline_title")
        return builder.build(
            doc_id=f"ngc:{ngc_id}",
            title=title or ngc_id,
            source=self.name,
            url=f"{UPSTREAM}/summaries/{ngc_id}.xml",
            license=LICENSE,
            metadata={
                "original_url": ORIGINAL.format(ngc_id),
                "developer": get("Guideline Developer(s)", "guideline_developers"),
                "date_released": get("Date Released", "date_released"),
                "status": get("Guideline Status", "guideline_status"),
                "bibliographic_source": get("Bibliographic Source(s)", "bibliographic_sources"),
                "copyright": get("Copyright Statement", "copyright_statement"),
                "clinical_specialty": get("Clinical Specialty", "clinical_specialty"),
                "evaluation_only": "true",
            },
        )
