"""OrphanetSource on the real ORPHApackets and on hand-made packets for the edge cases."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

import corpora.sources.orphanet as orphanet
from core.errors import ConfigError, SourceError
from core.types import Document
from corpora.sources.orphanet import OrphanetSource, pack_archive
from tests.helpers import source_error


def _check_spans(doc: Document) -> None:
    end = 0
    for section in doc.sections:
        assert section.start >= end, doc.doc_id
        assert doc.text[section.start : section.end].strip(), (doc.doc_id, section.path)
        end = section.end


@pytest.fixture(scope="module")
def real(source_data: Path) -> tuple[OrphanetSource, dict[str, Document]]:
    source = OrphanetSource(source_data / "orphanet_orphapacket")
    docs = {}
    for doc in source.documents():
        assert doc.doc_id not in docs
        docs[doc.doc_id] = doc
    return source, docs


def test_real_counts(real: tuple[OrphanetSource, dict[str, Document]]) -> None:
    source, docs = real
    # 9,960 packets; 1,344 are groups with only parents/subtypes and no clinical property.
    assert len(docs) == 8616
    assert source.skipped == 1344
    assert sum(len(d.sections) for d in docs.values()) == 50621
    assert list(docs)[:2] == ["orphanet:10", "orphanet:100"]  # file order


def test_real_marfan(real: tuple[OrphanetSource, dict[str, Document]]) -> None:
    doc = real[1]["orphanet:558"]
    assert doc.title == "Marfan syndrome"
    assert doc.source == "orphanet"
    assert doc.url == "https://www.orpha.net/en/disease/detail/558"
    assert doc.license.startswith("Orphadata CC BY 4.0") and "Orphanet (c)" in doc.license
    assert [s.path for s in doc.sections] == [
        ("Definition",),
        ("Synonyms",),
        ("Clinical signs and symptoms",),
        ("Inheritance",),
        ("Age of onset",),
        ("Prevalence",),
        ("Classification",),
        ("Subtypes",),
    ]
    body = {s.path[0]: doc.text[s.start : s.end] for s in doc.sections}
    assert body["Definition"].startswith("Marfan syndrome is a systemic disease of connective tissue")
    assert body["Synonyms"] == "Other names for Marfan syndrome: MFS."
    signs = body["Clinical signs and symptoms"].splitlines()
    assert signs[0] == "Clinical signs and symptoms of Marfan syndrome (HPO terms by frequency):"
    assert signs[1].startswith("Very frequent (99-80%): ") and "Arachnodactyly" in signs[1]
    assert "High, narrow palate" in signs[2]  # HPO terms with commas stay whole ("; " separates)
    assert body["Inheritance"] == "Mode of inheritance of Marfan syndrome: Autosomal dominant."
    assert "Point prevalence: 1-5 / 10 000 (Worldwide)" in body["Prevalence"]
    assert "Marfan syndrome type 1 (ORPHA:284963; gene FBN1)" in body["Subtypes"]
    assert doc.metadata["omim"] == "610168,154700"


def test_real_genes_and_spans(real: tuple[OrphanetSource, dict[str, Document]]) -> None:
    docs = real[1]
    doc = docs["orphanet:100"]
    assert doc.title == "Ataxia-telangiectasia"
    genes = next(doc.text[s.start : s.end] for s in doc.sections if s.path == ("Genes",))
    assert "Disease-causing germline mutation(s) in ATM (ATM serine/threonine kinase)." in genes
    for d in docs.values():
        _check_spans(d)


def test_real_require_definition(source_data: Path) -> None:
    source = OrphanetSource(source_data / "orphanet_orphapacket", require_definition=True)
    assert sum(1 for _ in source.documents()) == 6891  # the README's "6,891 with definitions"
    assert source.skipped == 9960 - 6891


PACKET: dict[str, Any] = {
    "ORPHAcode": "999",
    "Label": "Test syndrome",
    "copyright": "Orphanet (c) 2025",
    "DisorderType": {"value": "Disease"},
    "TextSection": {"TextSectionType": "Definition", "Contents": "A  test disease."},
    "Phenotypes": [
        {"Phenotype": {"HPOTerm": "Absent thumb", "HPOFrequency": "Excluded (0%)"}},
        {"Phenotype": {"HPOTerm": "Seizure", "HPOFrequency": "Very frequent (99-80%)"}},
        {"Phenotype": {"HPOTerm": "Ataxia", "HPOFrequency": "Very frequent (99-80%)"}},
    ],
    "Prevalences": {
        "Prevalence": [
            {
                "PrevalenceType": "Cases/families",
                "PrevalenceQualification": "Case(s)",
                "PrevalenceClass": "no data",
                "ValMoy": "2.0",
                "PrevalenceGeographic": "Worldwide",
            },
            {
                "PrevalenceType": "Point prevalence",
                "PrevalenceClass": "1-9 / 100 000",
                "ValMoy": "2.5",
                "PrevalenceGeographic": "Europe",
            },
        ]
    },
    "TypeOfInheritances": {"TypeOfInheritance": [{"value": "Autosomal recessive"}]},
    "AverageAgeOfOnsets": [{"AverageAgeOfOnset": {"value": "No data available"}}],
    "Children": [{"Child": {"Label": "Test syndrome type 1", "ORPHAcode": "1000", "Genes": "no data"}}],
}


def _write(path: Path, rows: list[Any]) -> Path:
    lines = "".join(json.dumps(r) + "\n" for r in rows)
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(lines.encode()))
    else:
        path.write_text(lines)
    return path


def test_handmade_packet_renders_each_property(tmp_path: Path) -> None:
    _write(
        tmp_path / "orphapackets_full.jsonl.gz", [PACKET, {"ORPHAcode": "5", "Label": "Group", "Parents": []}]
    )
    source = OrphanetSource(tmp_path)
    (doc,) = source.documents()
    assert source.skipped == 1  # the classification-only group
    assert doc.license == "Orphadata CC BY 4.0; Orphanet (c) 2025 INSERM"
    body = {s.path[0]: doc.text[s.start : s.end] for s in doc.sections}
    assert list(body) == [
        "Definition",
        "Clinical signs and symptoms",
        "Inheritance",
        "Prevalence",
        "Classification",
        "Subtypes",
    ]
    assert body["Definition"] == "A test disease."
    assert body["Clinical signs and symptoms"].splitlines()[1:] == [
        "Very frequent (99-80%): Seizure; Ataxia",
        "Excluded (0%): Absent thumb",
    ]
    assert "Cases/families: 2 case(s) reported (Worldwide)" in body["Prevalence"]
    assert "Point prevalence: 1-9 / 100 000, mean 2.5 per 100 000 (Europe)" in body["Prevalence"]
    assert body["Subtypes"].endswith("Test syndrome type 1 (ORPHA:1000)")
    _check_spans(doc)


def test_plain_file_path_and_wrapped_packet(tmp_path: Path) -> None:
    path = _write(tmp_path / "one.jsonl", [{"Orphapacket": PACKET}])
    assert [d.doc_id for d in OrphanetSource(path).documents()] == ["orphanet:999"]


def test_missing_file_says_how_to_get_it(tmp_path: Path) -> None:
    error = source_error(OrphanetSource(tmp_path), r"--fetch")
    assert str(tmp_path) in str(error)


def test_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "orphapackets_full.jsonl.gz"
    path.write_bytes(gzip.compress(json.dumps(PACKET).encode() + b"\n{not json\n"))
    source_error(OrphanetSource(tmp_path), r"orphapackets_full\.jsonl\.gz:2")


def test_packet_without_code_is_an_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "p.jsonl", [{"Label": "No code"}])
    source_error(OrphanetSource(path), r"p\.jsonl:1: .*ORPHAcode")


def test_non_utf8_bytes_are_replaced(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_bytes(json.dumps(PACKET).encode().replace(b"Test syndrome", b"Test \xff syndrome", 1))
    (doc,) = OrphanetSource(path).documents()
    assert doc.title == "Test \ufffd syndrome"


def test_unknown_option_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="require_definition"):
        OrphanetSource(Path("."), min_sections=2)


def _archive(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_fetch_packs_the_upstream_archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = f"orphapacket-{orphanet.UPSTREAM_COMMIT}"
    upstream = _archive(
        tmp_path / "upstream.tar.gz",
        {
            f"{root}/README.md": b"# ORPHApackets",
            f"{root}/json/ORPHApacket_999.json": json.dumps({"Orphapacket": PACKET}).encode(),
            f"{root}/yaml/ORPHApacket_999.yaml": b"Orphapacket: {}",
        },
    )

    def fake_download(url: str, dest: Path, *, timeout: float = 60.0) -> Path:
        assert orphanet.UPSTREAM_COMMIT in url
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(upstream.read_bytes())
        return dest

    monkeypatch.setattr(orphanet, "download", fake_download)
    folder = OrphanetSource.fetch(tmp_path / "fetched")
    assert sorted(p.name for p in folder.iterdir()) == ["orphapackets_full.jsonl.gz"]
    assert [d.title for d in OrphanetSource(folder).documents()] == ["Test syndrome"]


def test_pack_archive_rejects_bad_json(tmp_path: Path) -> None:
    archive = _archive(tmp_path / "a.tar.gz", {"r/json/ORPHApacket_1.json": b"{oops"})
    out = tmp_path / "out.jsonl.gz"
    with pytest.raises(SourceError, match=r"ORPHApacket_1\.json"):
        pack_archive(archive, out)
    assert not out.exists() and not (tmp_path / "out.jsonl.gz.part").exists()
