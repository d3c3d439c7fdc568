"""DiseaseOntologySource on the real JSONL and OBO files and on a tiny hand-made OBO."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from core.errors import ConfigError, SourceError
from core.types import Document
from corpora.sources.disease_ontology import DiseaseOntologySource, iter_obo_terms
from tests.helpers import source_error


def _bodies(doc: Document) -> dict[str, str]:
    end = 0
    bodies = {}
    for section in doc.sections:
        assert section.start >= end
        bodies[section.path[0]] = doc.text[section.start : section.end]
        assert bodies[section.path[0]].strip()
        end = section.end
    return bodies


@pytest.fixture(scope="module")
def real(source_data: Path) -> tuple[DiseaseOntologySource, dict[str, Document]]:
    source = DiseaseOntologySource(source_data / "disease_ontology")
    docs = {d.doc_id: d for d in source.documents()}
    return source, docs


def test_real_jsonl_counts(real: tuple[DiseaseOntologySource, dict[str, Document]]) -> None:
    source, docs = real
    # 9,177 terms: 6,367 defined + 1,693 with synonyms only; 1,117 have neither (or only the name).
    assert len(docs) == 8060
    assert source.skipped == 1117
    assert sum(1 for d in docs.values() if d.sections[0].path == ("Definition",)) == 6367
    assert sum(len(d.sections) for d in docs.values()) == 27227
    for doc in docs.values():
        _bodies(doc)


def test_real_jsonl_term(real: tuple[DiseaseOntologySource, dict[str, Document]]) -> None:
    doc = real[1]["disease-ontology:DOID:0050052"]
    assert doc.title == "Rocky Mountain spotted fever"
    assert doc.url == "https://disease-ontology.org/?id=DOID:0050052"
    assert doc.source == "disease-ontology"
    assert doc.license.startswith("CC0") and "Human Disease Ontology" in doc.license
    body = _bodies(doc)
    assert list(body) == ["Definition", "Synonyms", "Parent terms", "Cross-references"]
    assert body["Definition"].startswith("A spotted fever that has material basis in Rickettsia rickettsii")
    assert "Tobia fever" in body["Synonyms"]
    assert (
        body["Parent terms"]
        == "Parent terms of Rocky Mountain spotted fever in the Disease Ontology: spotted fever."
    )
    assert "MeSH: D012373" in body["Cross-references"]


def test_real_synonym_tails_are_cleaned(real: tuple[DiseaseOntologySource, dict[str, Document]]) -> None:
    docs = real[1]
    body = _bodies(docs["disease-ontology:DOID:0070669"])  # JSONL synonym 'DFNB122" EXACT [] {...'
    assert body["Synonyms"] == "Other names for autosomal recessive nonsyndromic deafness 122: DFNB122."
    assert not any("EXACT" in d.text for d in docs.values())
    pterygium = _bodies(docs["disease-ontology:DOID:0002116"])  # synonyms but no definition
    assert "Definition" not in pterygium
    assert "ICD-10-CM: H11.0, H11.00, H11.009" in pterygium["Cross-references"]


def test_real_obo_file(source_data: Path) -> None:
    source = DiseaseOntologySource(source_data / "disease_ontology" / "doid_full_2016-09-01.obo")
    docs = {d.doc_id: d for d in source.documents()}
    assert (len(docs), source.obsolete, source.skipped) == (5441, 2373, 1530)
    angiosarcoma = _bodies(docs["disease-ontology:DOID:0001816"])
    assert angiosarcoma["Parent terms"].endswith(": sarcoma.")  # is_a DOID:1115 resolved to a name
    assert "disease-ontology:DOID:0050001" not in docs  # obsolete


OBO = """format-version: 1.2
data-version: releases/test
ontology: doid

[Term]
id: DOID:2
name: child disease
def: "A parent disease that has_symptom \\"fever\\" located_in skin." [url:http\\://example.org]
synonym: "kid disease" EXACT []
synonym: "KDD" EXACT [] {synonymtypedef="acronym"}
synonym: "Child Disease" RELATED []
xref: ICD10CM:A00.1
xref: UMLS_CUI:C0000001 {xref="url:https://example.org"}
xref: SNOMEDCT_US_2020_03_01:123
xref: EFO:0001
is_a: DOID:1 ! stale comment name
is_a: DOID:99 ! elsewhere disease

[Term]
id: DOID:1
name: parent disease
def: "A disease." []

[Term]
id: DOID:3
name: bare term
is_a: DOID:1 ! parent disease

[Term]
id: DOID:4
name: retired disease
def: "Gone." []
is_obsolete: true

[Typedef]
id: has_symptom
name: has symptom
"""


def test_handmade_obo_folder(tmp_path: Path) -> None:
    (tmp_path / "doid.obo").write_text(OBO)
    source = DiseaseOntologySource(tmp_path)
    docs = list(source.documents())
    assert [d.doc_id for d in docs] == ["disease-ontology:DOID:2", "disease-ontology:DOID:1"]
    assert (source.skipped, source.obsolete) == (1, 1)  # bare term; retired disease
    body = _bodies(docs[0])
    assert body["Definition"] == 'A parent disease that has symptom "fever" located in skin.'
    assert body["Synonyms"] == "Other names for child disease: kid disease; KDD."  # case-duplicate dropped
    assert body["Parent terms"] == (
        "Parent terms of child disease in the Disease Ontology: parent disease; elsewhere disease."
    )
    assert (
        body["Cross-references"]
        == "Codes for child disease:\nICD-10-CM: A00.1\nUMLS: C0000001\nSNOMED CT: 123"
    )
    assert docs[0].metadata["definition_sources"] == "url:http://example.org"
    assert "EFO:0001" in docs[0].metadata["xrefs"]


def test_jsonl_wins_over_obo_and_glob_fallback(tmp_path: Path) -> None:
    (tmp_path / "doid_2016.obo").write_text(OBO)
    assert len(list(DiseaseOntologySource(tmp_path).documents())) == 2  # doid*.obo fallback
    row = {"id": "DOID:7", "name": "json disease", "definition": "From JSON.", "synonyms": [], "parents": []}
    (tmp_path / "doid_terms.jsonl").write_text(json.dumps(row) + "\n")
    assert [d.title for d in DiseaseOntologySource(tmp_path).documents()] == ["json disease"]


def test_require_definition(tmp_path: Path) -> None:
    (tmp_path / "doid.obo").write_text(OBO.replace('def: "A disease." []\n', 'synonym: "pd" EXACT []\n'))
    source = DiseaseOntologySource(tmp_path, require_definition=True)
    assert [d.title for d in source.documents()] == ["child disease"]
    assert source.skipped == 2


def test_missing_files_say_how_to_get_them(tmp_path: Path) -> None:
    source_error(DiseaseOntologySource(tmp_path / "nowhere"), r"doid_terms\.jsonl or doid\.obo.*--fetch")


@pytest.mark.parametrize(
    ("text", "line"),
    [("[Term]\nid: DOID:1\nname x\n", 3), ('[Term]\nid: DOID:1\nname: x\ndef: "open []\n', 4)],
)
def test_malformed_obo_names_file_and_line(tmp_path: Path, text: str, line: int) -> None:
    path = tmp_path / "bad.obo"
    path.write_text(text)
    with pytest.raises(SourceError, match=rf"bad\.obo:{line}:"):
        list(iter_obo_terms(path))


def test_malformed_jsonl_names_line(tmp_path: Path) -> None:
    path = tmp_path / "doid_terms.jsonl"
    path.write_text('{"id": "DOID:1", "name": "a", "definition": "b"}\n{broken\n')
    source_error(DiseaseOntologySource(tmp_path), r"doid_terms\.jsonl:2")


def test_term_without_doid_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "doid_terms.jsonl").write_text(
        json.dumps({"id": "X:1", "name": "a", "definition": "b"}) + "\n"
    )
    source_error(DiseaseOntologySource(tmp_path), r"doid_terms\.jsonl:1: .*DOID")


def test_non_utf8_bytes_are_replaced(tmp_path: Path) -> None:
    (tmp_path / "doid.obo").write_bytes(OBO.encode().replace(b"kid disease", b"kid \xe9 disease"))
    doc = next(iter(DiseaseOntologySource(tmp_path).documents()))
    assert "kid \ufffd disease" in doc.text


def test_fetch_downloads_the_pinned_obo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import corpora.sources.disease_ontology as module

    def fake_download(url: str, dest: Path, *, timeout: float = 60.0) -> Path:
        assert url.endswith("/src/ontology/doid.obo") and module.UPSTREAM_COMMIT in url
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(OBO)
        return dest

    monkeypatch.setattr(module, "download", fake_download)
    folder = DiseaseOntologySource.fetch(tmp_path / "do")
    assert [d.title for d in DiseaseOntologySource(folder).documents()] == ["child disease", "parent disease"]
    shutil.rmtree(folder)


def test_unknown_option_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        DiseaseOntologySource(Path("."), minimum=1)
