"""MedQuAD source: real jsonl and XML, LiveQA qrels id mapping, and hand-made bad input."""

from __future__ import annotations

import gzip
import io
import itertools
import json
import tarfile
from pathlib import Path

import pytest

from core.errors import ConfigError
from core.types import Document
from corpora.sources.medquad import ANSWERLESS_PREFIXES, MedQuADSource, liveqa_answer_doc_id
from corpora.sources.medquad_xml import iter_tar_xml, parse_xml
from tests.helpers import docs_by_id, source_error

QRELS = (
    "liveqa_qrels/QA-TestSet-LiveQA-Med-Qrels-2479-Answers/"
    "All-qrels_LiveQAMed2017-TestQuestions_2479_Judged-Answers.txt"
)
# a few real files: two with the usual schema, a CancerGov file that reuses its parent's id,
# the NINDS file in the other schema (absent from the jsonl) and the CDC file without an id
SAMPLE_MEMBERS = {
    "3_GHR_QA/0000001.xml",
    "8_NHLBI_QA_XML/0000051.xml",
    "1_CancerGov_QA/0000013_2_1.xml",
    "6_NINDS_QA/0000007.xml",
    "9_CDC_QA/0000397.xml",
}


@pytest.fixture(scope="module")
def medquad_dir(source_data: Path) -> Path:
    return source_data / "medquad"


@pytest.fixture(scope="module")
def jsonl_docs(medquad_dir: Path) -> dict[str, Document]:
    return docs_by_id(MedQuADSource(medquad_dir), skipped=31034)  # 47,441 pairs, 16,407 answered


@pytest.fixture(scope="module")
def sample_xml(medquad_dir: Path) -> dict[str, bytes]:
    """The first 20 members of the real tarball plus SAMPLE_MEMBERS, by 'collection/file' name."""
    found: dict[str, bytes] = {}
    for n, (name, data) in enumerate(iter_tar_xml(medquad_dir / "raw_xml.tar.gz")):
        short = "/".join(name.split("/")[-2:])
        if n < 20 or short in SAMPLE_MEMBERS:
            found[short] = data
        if n >= 20 and found.keys() >= SAMPLE_MEMBERS:
            break
    return found


def test_jsonl_counts_and_spans(jsonl_docs: dict[str, Document]) -> None:
    assert len(jsonl_docs) == 16407
    for doc in jsonl_docs.values():
        assert doc.source == "medquad" and doc.url.startswith("http")
        assert doc.license.startswith("CC BY 4.0 (MedQuAD, Ben Abacha & Demner-Fushman 2019)")
        assert len(doc.sections) == 1 and doc.text[doc.sections[0].start : doc.sections[0].end].strip()
        assert doc.text == doc.text.strip() and "\n\n\n" not in doc.text


def test_known_pair(jsonl_docs: dict[str, Document]) -> None:
    doc = jsonl_docs["medquad:GHR_0000001_Sec1"]
    assert doc.title == "Aarskog-Scott syndrome"
    assert doc.sections[0].path == ("information", "What is (are) Aarskog-Scott syndrome ?")
    assert doc.text.startswith("Aarskog-Scott syndrome is a genetic disorder")
    assert doc.url == "https://ghr.nlm.nih.gov/condition/aarskog-scott-syndrome"
    assert doc.license.endswith("original text from Genetics Home Reference (GHR)")
    assert doc.metadata["question"] == "What is (are) Aarskog-Scott syndrome ?"
    assert doc.metadata["cuis"] == "C0175701"
    # CancerGov answers lose their XML indentation
    assert jsonl_docs["medquad:CancerGov_0000001_1_Sec1"].text.startswith("Key Points\n- Adult acute")


def test_upstream_id_quirks_are_repaired(jsonl_docs: dict[str, Document]) -> None:
    assert jsonl_docs["medquad:CancerGov_0000013_2_Sec1"].title == "Chronic Myeloproliferative Neoplasms"
    assert jsonl_docs["medquad:CancerGov_0000013_2_1_Sec1"].title == "Polycythemia Vera"
    assert jsonl_docs["medquad:CancerGov_0000013_3_4_Sec1"].title.startswith("Myelodysplastic/ Myelo")
    assert jsonl_docs["medquad:CDC_0000397_Sec1"].title == "Parasites - Taeniasis"
    assert not any("None" in doc_id for doc_id in jsonl_docs)
    # NHLBI 0000051 has pids 1,3,4,...: ids count pairs, so Sec4 is the 4th pair (pid 5)
    doc = jsonl_docs["medquad:NHLBI_0000051_Sec4"]
    assert doc.metadata["pid"] == "5" and doc.sections[0].path[0] == "symptoms"


def test_liveqa_qrels_map_to_documents(medquad_dir: Path, jsonl_docs: dict[str, Document]) -> None:
    lines = [ln.split() for ln in (medquad_dir / QRELS).read_text().splitlines() if ln.strip()]
    assert len(lines) == 2479
    assert lines[0] == ["1", "1-Incorrect", "ADAM_0003147_Sec1.txt"]
    mapped = [liveqa_answer_doc_id(answer) for _, _, answer in lines]
    judged = [
        (d, a) for d, (_, _, a) in zip(mapped, lines, strict=True) if not a.startswith(ANSWERLESS_PREFIXES)
    ]
    assert len(judged) == 565
    assert all(doc_id in jsonl_docs for doc_id, _ in judged)
    assert not any(
        d in jsonl_docs for d, (_, _, a) in zip(mapped, lines, strict=True) if a.startswith("ADAM")
    )
    # qrels line "95 3-Incomplete CancerGov_0000007_3_Sec4.txt", and a judged answer's text
    assert liveqa_answer_doc_id("CancerGov_0000007_3_Sec4.txt") == "medquad:CancerGov_0000007_3_Sec4"
    assert jsonl_docs[liveqa_answer_doc_id("NHLBI_0000051_Sec4.txt")].text.startswith(
        "The signs and symptoms of deep vein thrombosis (DVT)"
    )


def test_liveqa_answer_doc_id_rejects_garbage() -> None:
    assert liveqa_answer_doc_id(" GHR_0000804_Sec2 ") == "medquad:GHR_0000804_Sec2"
    with pytest.raises(ValueError, match="not a MedQuAD answer id"):
        liveqa_answer_doc_id("0000804-2")


def test_parse_first_real_xml_files(sample_xml: dict[str, bytes]) -> None:
    first = dict(itertools.islice(sample_xml.items(), 3))
    for name, data in first.items():
        collection, file_id = name.split("/")[0], name.split("/")[1][:-4]
        pairs = list(parse_xml(data, collection, file_id, name))
        assert pairs and [p.position for p in pairs] == list(range(1, len(pairs) + 1))
        assert all(p.question and p.qtype and p.url.startswith("http") for p in pairs)
    ninds = list(parse_xml(sample_xml["6_NINDS_QA/0000007.xml"], "6_NINDS_QA", "0000007", "x"))
    assert ninds[0].focus == "Holmes-Adie" and ninds[1].qtype == "treatment"


def _write_tar(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(f"raw/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_xml_tar_and_dir_match_jsonl(
    tmp_path: Path, sample_xml: dict[str, bytes], jsonl_docs: dict[str, Document]
) -> None:
    from_tar = list(MedQuADSource(_write_tar(tmp_path / "raw_xml.tar.gz", sample_xml)).documents())
    for name, data in sample_xml.items():
        (tmp_path / "checkout" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "checkout" / name).write_bytes(data)
    source = MedQuADSource(tmp_path / "checkout")
    from_dir = list(source.documents())
    assert source.describe()["input"] == "xml-dir"
    assert [(d.doc_id, d.text, d.sections) for d in from_tar] == [
        (d.doc_id, d.text, d.sections) for d in from_dir
    ]
    ids = [d.doc_id for d in from_tar]
    assert len(set(ids)) == len(ids)
    assert [i for i in ids if i in jsonl_docs] == [i for i in jsonl_docs if i in set(ids)]  # upstream order
    assert "medquad:NINDS_0000007_Sec1" in ids  # the jsonl lacks this file
    for doc in from_tar:
        if not doc.doc_id.startswith("medquad:NINDS_0000007"):
            twin = jsonl_docs[doc.doc_id]
            assert (doc.title, doc.text, doc.sections, doc.url) == (
                twin.title,
                twin.text,
                twin.sections,
                twin.url,
            )
            assert dict(doc.metadata) == dict(twin.metadata)


def test_collections_filter(medquad_dir: Path) -> None:
    source = MedQuADSource(medquad_dir, collections=("cdc",))
    docs = list(source.documents())
    assert len(docs) == 270 and all(d.doc_id.startswith("medquad:CDC_") for d in docs)
    assert source.describe()["collections"] == ["CDC"]
    mplus = MedQuADSource(medquad_dir, collections=("MedlinePlus", "2_GARD_QA"))
    assert mplus.describe()["collections"] == [
        "ADAM",
        "GARD",
        "MPlusDrugs",
        "MPlusHealthTopics",
        "MPlusHerbsSuppls",
    ]
    with pytest.raises(ConfigError, match="unknown MedQuAD collection 'PubMed'"):
        MedQuADSource(medquad_dir, collections=("PubMed",))


def _jsonl(path: Path, rows: list[dict[str, object] | str]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    return path


ROW: dict[str, object] = {
    "qid": "0000001-1",
    "qtype": "causes",
    "question": "What causes X ?",
    "answer": "Genes.",
    "doc_id": "0000001",
    "collection": "3_GHR_QA",
    "url": "https://example.org/x",
    "focus": "X",
    "cuis": [],
    "semantic_types": [],
}


def test_missing_input_says_how_to_get_it(tmp_path: Path) -> None:
    source_error(MedQuADSource(tmp_path), r"MedQuAD not found at .*--fetch")
    source_error(MedQuADSource(), "no MedQuAD path given")
    assert MedQuADSource(tmp_path).describe()["input"] is None


def test_jsonl_edge_cases(tmp_path: Path) -> None:
    empty = {**ROW, "qid": "0000001-2", "answer": "  \n "}
    bad_bytes = {**ROW, "qid": "0000001-3"}
    path = _jsonl(tmp_path / "medquad_qa.jsonl.gz", [ROW, empty, bad_bytes])
    raw = gzip.decompress(path.read_bytes()).replace(b"Genes.", b"Gen\xffes.", 1)  # non-UTF-8 byte
    path.write_bytes(gzip.compress(raw))
    source = MedQuADSource(tmp_path)
    docs = list(source.documents())
    assert [d.doc_id for d in docs] == ["medquad:GHR_0000001_Sec1", "medquad:GHR_0000001_Sec3"]
    assert docs[0].text == "Gen\ufffdes." and docs[0].sections[0].path == ("causes", "What causes X ?")
    assert source.skipped == 1
    _jsonl(tmp_path / "medquad_qa.jsonl.gz", [ROW, "{not json"])
    source_error(MedQuADSource(tmp_path), r"medquad_qa.jsonl.gz:2")
    _jsonl(tmp_path / "medquad_qa.jsonl.gz", [{**ROW, "qid": ""}])
    source_error(MedQuADSource(tmp_path), r"medquad_qa.jsonl.gz:1: expected a collection and a qid")


GOOD_XML = b"""<?xml version="1.0" encoding="UTF-8"?>
<Document id="0000002" source="GARD" url="https://example.org/y"><Focus>Y syndrome</Focus>
<QAPairs><QAPair pid="1"><Question qid="0000002-1" qtype="symptoms">What are the symptoms of Y ?</Question>
<Answer>Fever and caf\xe9 rash.</Answer></QAPair>
<QAPair pid="4"><Question qid="0000002-4" qtype="treatment">How to treat Y ?</Question><Answer/></QAPair>
<QAPair pid="5"><Question qid="0000002-5" qtype="outlook">What is the outlook for Y ?</Question>
<Answer>Good.</Answer></QAPair></QAPairs></Document>"""


def test_hand_made_xml(tmp_path: Path) -> None:
    (tmp_path / "2_GARD_QA").mkdir()
    (tmp_path / "2_GARD_QA" / "0000002.xml").write_bytes(GOOD_XML)  # \xe9 is not UTF-8
    source = MedQuADSource(tmp_path)
    docs = list(source.documents())
    assert [d.doc_id for d in docs] == ["medquad:GARD_0000002_Sec1", "medquad:GARD_0000002_Sec3"]
    assert docs[0].text == "Fever and caf\ufffd rash." and docs[0].title == "Y syndrome"
    assert docs[1].metadata["pid"] == "5" and source.skipped == 1
    assert "Genetic and Rare Diseases" in docs[0].license


def test_malformed_xml_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "2_GARD_QA").mkdir()
    bad = tmp_path / "2_GARD_QA" / "0000003.xml"
    bad.write_bytes(GOOD_XML.replace(b"</QAPair>\n<QAPair", b"</QAPai>\n<QAPair", 1))
    source_error(MedQuADSource(tmp_path), r"0000003.xml:4: malformed XML")
    bad.write_bytes(
        GOOD_XML.replace(b'<Question qid="0000002-1"', b'<Query qid="0000002-1"').replace(
            b"</Question>\n<Answer>Fever", b"</Query>\n<Answer>Fever"
        )
    )
    source_error(MedQuADSource(tmp_path), "QA pair 1 has no Question")


def test_corrupt_tarball(tmp_path: Path) -> None:
    (tmp_path / "raw_xml.tar.gz").write_bytes(gzip.compress(b"not a tar archive at all" * 40))
    source_error(MedQuADSource(tmp_path), "cannot read MedQuAD XML archive")
