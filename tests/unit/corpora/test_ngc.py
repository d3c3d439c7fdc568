"""NGC guideline summaries (evaluation use only): real data, recommendation splitting, bad input."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from core.errors import SourceError
from core.types import Document
from corpora.sources.ngc import LICENSE, NgcSource, fix_mojibake, split_recommendations
from tests.helpers import docs_by_id, source_error


@pytest.fixture(scope="module")
def ngc_dir(source_data: Path) -> Path:
    return source_data / "ngc_guideline_summaries"


@pytest.fixture(scope="module")
def docs(ngc_dir: Path) -> dict[str, Document]:
    return docs_by_id(NgcSource(ngc_dir), skipped=0)


def _section(doc: Document, path: tuple[str, ...]) -> str:
    return next(doc.text[s.start : s.end] for s in doc.sections if s.path == path)


def test_evaluation_only_is_declared(ngc_dir: Path) -> None:
    assert NgcSource.evaluation_only is True
    described = NgcSource(ngc_dir).describe()
    assert described["evaluation_only"] is True and "evaluation only" in described["terms"]
    assert described["file"] == "ngc_summaries.jsonl.gz"
    assert LICENSE.endswith("National Guideline Clearinghouse archive — evaluation use only")
    assert not hasattr(NgcSource, "fetch")


def test_counts_and_spans(docs: dict[str, Document]) -> None:
    assert len(docs) == 1416
    for doc in docs.values():
        assert doc.doc_id.startswith("ngc:ngc-") and doc.title and doc.license == LICENSE
        assert doc.url.endswith(f"/summaries/{doc.doc_id[4:]}.xml")
        starts = [s.start for s in doc.sections]
        assert starts == sorted(starts)
        assert all(doc.text[s.start : s.end].strip() for s in doc.sections)
        assert all(a.end <= b.start for a, b in zip(doc.sections, doc.sections[1:], strict=False))
        assert doc.sections[0].path[0] == "Major recommendations"
    assert sum(len(d.sections) for d in docs.values()) > 20000  # recommendations split at headings


def test_known_summary(docs: dict[str, Document]) -> None:
    doc = docs["ngc:ngc-10000"]
    assert doc.title.startswith("Guidelines for the management of mature T-cell and NK-cell neoplasms")
    assert doc.url == (
        "https://github.com/cyberwitch/national-guideline-clearinghouse/blob/34288d4f/summaries/ngc-10000.xml"
    )
    paths = [s.path for s in doc.sections]
    assert ("Major recommendations", "Diagnosis and Staging") in paths
    assert (
        "Major recommendations",
        "Mature T-cell Leukaemias",
        "T-prolymphocytic Leukaemia (T-PLL)",
    ) in paths
    diagnosis = _section(doc, ("Major recommendations", "Diagnosis and Staging"))
    assert diagnosis.startswith("Diagnosis and Staging\n- Diagnosis requires expert examination")
    assert _section(doc, ("Clinical condition / disease",)).startswith("Mature T-cell and natural killer")
    assert _section(doc, ("Date released",)) == "2011 May (revised 2013 Aug)"
    assert _section(doc, ("Guideline developer(s)",)).startswith("British Society for Haematology")
    assert "(A) High" in _section(doc, ("Evidence rating scheme", "Strength of the evidence"))
    assert paths[-1] == ("Evidence rating scheme", "Strength of the recommendations")
    assert doc.metadata["original_url"].startswith("https://www.guideline.gov/summaries/downloadcontent/")
    assert "Hematology" in doc.metadata["clinical_specialty"]


def test_placeholder_and_mojibake(docs: dict[str, Document]) -> None:
    doc = docs["ngc:ngc-10063"]  # upstream "(1aâ\x80\x925b)"
    assert "(1a\u20125b)" in doc.text and "\u00e2\u0080" not in doc.text
    # "Not applicable" rating schemes are left out rather than indexed
    no_scheme = [
        d for d in docs.values() if not any(s.path[0] == "Evidence rating scheme" for s in d.sections)
    ]
    assert 100 < len(no_scheme) < 300


def test_compact_file(ngc_dir: Path, docs: dict[str, Document]) -> None:
    compact = list(NgcSource(ngc_dir / "ngc_guidelines_compact.jsonl").documents())
    assert [d.doc_id for d in compact] == list(docs)
    one = compact[0]
    assert one.title == docs[one.doc_id].title
    assert not any(s.path[0] == "Evidence rating scheme" for s in one.sections)
    assert _section(one, ("Date released",)) == "2011 May (revised 2013 Aug)"


def test_split_recommendations_keeps_every_line() -> None:
    text = (
        "Definitions are given at the end.\n"
        "Diagnosis\n"
        "- Measure serum cortisol at 8-9 AM as the first-line test for adrenal insufficiency.\n"
        "Treatment\n"
        "Adults\n"
        "The Task Force recommends hydrocortisone in divided doses over other glucocorticoids. (1|++OO)\n"
        "Short Heading\n"
        "Too short.\n"
        "Last Part\n"
        " Table cell \n"
        "A line long enough to give the heading above its own section, unlike the one before it."
    )
    parts = split_recommendations(text)
    assert [p for p, _ in parts] == [
        ("Major recommendations",),
        ("Major recommendations", "Diagnosis"),
        ("Major recommendations", "Treatment", "Adults"),
        ("Major recommendations", "Last Part"),
    ]
    assert parts[2][1].endswith("(1|++OO)\nShort Heading\nToo short.")
    assert parts[2][1].startswith("Treatment\nAdults\nThe Task Force")
    assert "\n".join(body for _, body in parts) == text  # nothing dropped or reordered


def test_fix_mojibake() -> None:
    assert fix_mojibake("Clearinghouse\u00e2\u0084\u00a2 (NGC)") == "Clearinghouse\u2122 (NGC)"
    assert fix_mojibake("caf\u00e9 \u03b2-blockers \u2013 ok") == "caf\u00e9 \u03b2-blockers \u2013 ok"


def _write(path: Path, rows: list[str]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write("\n".join(rows) + "\n")
    return path


def _row(ngc_id: str, major: str) -> str:
    fields = {"Guideline Title": "T", "Major Recommendations": major, "Date Released": "Not stated"}
    return json.dumps({"ngc_id": ngc_id, "title": "T", "fields": fields})


def test_missing_file(tmp_path: Path) -> None:
    source_error(NgcSource(tmp_path), r"NGC summaries not found at .*pass --path")
    assert NgcSource(tmp_path).describe()["file"] is None


def test_edge_cases(tmp_path: Path) -> None:
    path = _write(tmp_path / "ngc_summaries.jsonl.gz", [_row("ngc-1", "Use X."), _row("ngc-2", "  ")])
    raw = gzip.decompress(path.read_bytes()).replace(b"Use X.", b"Use \xff X.")  # non-UTF-8 byte
    path.write_bytes(gzip.compress(raw))
    source = NgcSource(tmp_path)
    docs = list(source.documents())
    assert [d.doc_id for d in docs] == ["ngc:ngc-1"] and source.skipped == 1
    assert docs[0].text == "Use \ufffd X." and [s.path for s in docs[0].sections] == [
        ("Major recommendations",)
    ]
    _write(tmp_path / "ngc_summaries.jsonl.gz", [_row("ngc-1", "Use X."), '{"ngc_id": "ngc-2", "fields": 3}'])
    with pytest.raises(
        SourceError, match=r"ngc_summaries.jsonl.gz:2: expected an ngc_id and a fields object"
    ):
        list(NgcSource(tmp_path).documents())
    _write(tmp_path / "ngc_summaries.jsonl.gz", [_row("ngc-1", "Use X."), "{broken"])
    source_error(NgcSource(tmp_path), r"ngc_summaries.jsonl.gz:2: not valid JSON")
