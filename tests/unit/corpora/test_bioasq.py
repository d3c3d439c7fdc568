"""BioasqSnippetSource: ids that match the qrels, titles, and the edge cases of the JSONL."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from core.errors import ConfigError
from core.types import Document
from corpora.sources.bioasq import BioasqSnippetSource, qrels_doc_id, snippet_id
from tests.helpers import source_error


@pytest.fixture(scope="module")
def real(source_data: Path) -> tuple[BioasqSnippetSource, list[Document]]:
    source = BioasqSnippetSource(source_data / "bioasq_from_mirage")
    return source, list(source.documents())


def test_real_counts_and_spans(real: tuple[BioasqSnippetSource, list[Document]]) -> None:
    source, docs = real
    assert len(docs) == 20767 and source.skipped == 0
    assert sum(1 for d in docs if d.sections[0].path == ("Title snippet",)) == 2536
    for doc in docs:
        (section,) = doc.sections
        assert doc.text[section.start : section.end] == doc.text.strip() != ""
    assert [d.doc_id for d in docs] == sorted(d.doc_id for d in docs)


def test_every_qrels_snippet_maps_to_a_document(
    source_data: Path, real: tuple[BioasqSnippetSource, list[Document]]
) -> None:
    with (source_data / "bioasq_from_mirage" / "qrels_snippets.tsv").open(newline="") as fh:
        qrels = {qrels_doc_id(row["corpus-id"]) for row in csv.DictReader(fh, delimiter="\t")}
    ids = {d.doc_id for d in real[1]}
    assert len(qrels) == 20767
    assert qrels == ids


def test_real_titles_and_provenance(real: tuple[BioasqSnippetSource, list[Document]]) -> None:
    docs = {d.doc_id: d for d in real[1]}
    abstract = docs["bioasq:S000001"]
    assert abstract.title.startswith("Non-coding region variants upstream of MEF2C")  # from S000000
    assert abstract.url == "https://pubmed.ncbi.nlm.nih.gov/34022131/"
    assert abstract.license == "BioASQ terms of use; PubMed abstract text (NLM)"
    assert abstract.source == "bioasq-snippets"
    assert abstract.sections[0].path == ("Abstract snippet",)
    assert abstract.metadata == {"pmid": "34022131", "snippet_id": "S000001", "section": "abstract"}
    untitled = [d for d in docs.values() if d.title == f"PubMed {d.metadata['pmid']}"]
    assert len(untitled) == 14534  # PMIDs with no title snippet in the corpus


def test_qrels_doc_id_round_trip() -> None:
    assert qrels_doc_id("S000001") == "bioasq:S000001"
    assert snippet_id(qrels_doc_id("S020766")) == "S020766"
    with pytest.raises(ValueError, match="not a bioasq"):
        snippet_id("orphanet:558")


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_handmade_titles_empty_text_and_file_path(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "snips.jsonl",
        [
            {"_id": "S1", "pmid": "11", "section": "title", "text": "Short title"},
            {"_id": "S2", "pmid": "11", "section": "title", "text": "Short title, the full one."},
            {"_id": "S3", "pmid": "11", "section": "abstract", "text": "  Body text.\n"},
            {"_id": "S4", "pmid": "22", "section": "abstract", "text": "   "},
            {"_id": "S5", "pmid": "33", "section": "abstract", "text": "Other body."},
        ],
    )
    source = BioasqSnippetSource(path)
    docs = {d.doc_id: d for d in source.documents()}
    assert list(docs) == ["bioasq:S1", "bioasq:S2", "bioasq:S3", "bioasq:S5"]
    assert source.skipped == 1
    assert docs["bioasq:S3"].title == "Short title, the full one."  # longest title snippet
    assert docs["bioasq:S3"].text == "Body text."
    assert docs["bioasq:S5"].title == "PubMed 33"


def test_missing_file_says_where(tmp_path: Path) -> None:
    error = source_error(BioasqSnippetSource(tmp_path), r"snippet_corpus\.jsonl.*--path")
    assert str(tmp_path) in str(error)


def test_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "snippet_corpus.jsonl"
    path.write_text('{"_id": "S1", "pmid": "1", "section": "abstract", "text": "a"}\n[1, 2]\n')
    source_error(BioasqSnippetSource(tmp_path), r"snippet_corpus\.jsonl:2")


def test_duplicate_or_missing_ids_are_errors(tmp_path: Path) -> None:
    row = {"_id": "S1", "pmid": "1", "section": "abstract", "text": "a"}
    _write(tmp_path / "snippet_corpus.jsonl", [row, row])
    source_error(BioasqSnippetSource(tmp_path), r":2: duplicate snippet id S1")
    _write(tmp_path / "snippet_corpus.jsonl", [{"pmid": "1", "text": "a"}])
    source_error(BioasqSnippetSource(tmp_path), r":1: snippet has no _id")


def test_non_utf8_bytes_are_replaced(tmp_path: Path) -> None:
    line = json.dumps({"_id": "S1", "pmid": "1", "section": "abstract", "text": "caf\u00e9"}).encode()
    (tmp_path / "snippet_corpus.jsonl").write_bytes(line.replace(b"caf\\u00e9", b"caf\xe9") + b"\n")
    (doc,) = BioasqSnippetSource(tmp_path).documents()
    assert doc.text == "caf\ufffd"


def test_no_options_and_no_fetch() -> None:
    with pytest.raises(ConfigError):
        BioasqSnippetSource(Path("."), fetch=True)
    assert not hasattr(BioasqSnippetSource, "fetch")
