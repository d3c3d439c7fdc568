"""MedQuAD (CC BY 4.0): NIH consumer-health question-answer pairs, one document per answered pair.

Reads the flattened ``medquad_qa.jsonl.gz`` or, when it is absent, the original XML: a
``raw_xml.tar.gz`` (or GitHub archive), or a checkout with one folder per collection such as
``2_GARD_QA/`` (see :mod:`corpora.sources.medquad_xml`). Each answered pair becomes a document
whose single section ``(question type, question)`` spans the answer, so the question is visible
to retrieval; the topic ("focus") is the title.

doc_ids are MedQuAD's answer ids as the TREC LiveQA-Med qrels write them,
``medquad:<prefix>_<file>_Sec<N>`` where N is the pair's 1-based place in its XML file (not its
pid: upstream dropped some pairs, so pids have gaps, and the jsonl's own ``answer_id`` uses the
pid, which names another answer in 279 of the 1,935 judged ids); see :func:`liveqa_answer_doc_id`.
Upstream quirks get the same repair on both inputs: ten CancerGov files
``0000013_{2,3}_<n>.xml`` declare their parent's id (the jsonl repeats it; the file name is
used), and CDC file 0000397 has no id (the jsonl says ``None``; its qids give 0000397). The jsonl
lacks four NINDS files written in another XML schema; the XML inputs include them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from core.errors import ConfigError, SourceError
from core.types import Document
from corpora.sources.base import DocumentBuilder, download, iter_jsonl
from corpora.sources.medquad_xml import QAPair, read_xml_dir, read_xml_tar, xml_files

LICENSE = "CC BY 4.0 (MedQuAD, Ben Abacha & Demner-Fushman 2019); original text from {}"
UPSTREAM_COMMIT = "577bd37b"  # abachaa/MedQuAD, as pinned in the data README
UPSTREAM_ARCHIVE = f"https://github.com/abachaa/MedQuAD/archive/{UPSTREAM_COMMIT}.tar.gz"
HINT = "Pass --path to the MedQuAD folder or run `medcite index build --source medquad --fetch`."

# upstream collection folder -> (answer-id prefix, who wrote the original text)
COLLECTIONS: dict[str, tuple[str, str]] = {
    "1_CancerGov_QA": ("CancerGov", "cancer.gov (National Cancer Institute)"),
    "2_GARD_QA": ("GARD", "the Genetic and Rare Diseases Information Center (GARD)"),
    "3_GHR_QA": ("GHR", "Genetics Home Reference (GHR)"),
    "4_MPlus_Health_Topics_QA": ("MPlusHealthTopics", "MedlinePlus Health Topics"),
    "5_NIDDK_QA": ("NIDDK", "NIDDK (niddk.nih.gov)"),
    "6_NINDS_QA": ("NINDS", "NINDS (ninds.nih.gov)"),
    "7_SeniorHealth_QA": ("NIHSeniorHealth", "NIHSeniorHealth"),
    "8_NHLBI_QA_XML": ("NHLBI", "NHLBI (nhlbi.nih.gov)"),
    "9_CDC_QA": ("CDC", "CDC (cdc.gov)"),
    "10_MPlus_ADAM_QA": ("ADAM", "the A.D.A.M. Medical Encyclopedia (MedlinePlus)"),
    "11_MPlusDrugs_QA": ("MPlusDrugs", "MedlinePlus Drug information"),
    "12_MPlusHerbsSupplements_QA": ("MPlusHerbsSuppls", "MedlinePlus Herbs and Supplements"),
}
ALIASES = {"medlineplus": ("MPlusHealthTopics", "ADAM", "MPlusDrugs", "MPlusHerbsSuppls")}
# Upstream removed these answers (MedlinePlus copyright): their LiveQA judgments have no document.
ANSWERLESS_PREFIXES = ("ADAM", "MPlusDrugs", "MPlusHerbsSuppls")
_ANSWER_ID = re.compile(r"^([A-Za-z]+)_(\w+?)_Sec(\d+)(?:\.txt)?$")


def liveqa_answer_doc_id(answer_id: str) -> str:
    """Map a LiveQA-Med qrels answer id (``GHR_0000393_Sec3.txt``) to this source's doc_id.

    The qrels (``liveqa_qrels/.../All-qrels_*.txt``, lines ``<question> <grade> <answer id>``)
    name answers ``<prefix>_<file>_Sec<N>``, N counting the file's pairs in order; our doc_ids
    use the same N, so the mapping only drops ``.txt``. 1,914 of the 2,479 judgments are of
    ADAM/MPlusDrugs/MPlusHerbsSuppls answers that MedQuAD does not distribute
    (``ANSWERLESS_PREFIXES``): their ids match no document. Raises ValueError for a string that
    is not a MedQuAD answer id.
    """
    m = _ANSWER_ID.match(answer_id.strip())
    if not m:
        raise ValueError(f"not a MedQuAD answer id: {answer_id!r} (e.g. GHR_0000001_Sec1.txt)")
    return f"medquad:{m.group(1)}_{m.group(2)}_Sec{m.group(3)}"


def collection_prefix(doc_id: str) -> str:
    """The collection of one of this source's documents: ``medquad:GARD_0000001_Sec2`` -> ``GARD``."""
    return doc_id.removeprefix("medquad:").split("_", 1)[0]


def _prefix(collection: str) -> str:
    default = collection.split("_")[1] if "_" in collection else collection
    return COLLECTIONS.get(collection, (default, ""))[0]


def _clean(text: str) -> str:
    """Strip the XML indentation from every line; keep at most one blank line between blocks."""
    lines = "\n".join(line.strip() for line in text.splitlines())
    return re.sub(r"\n{3,}", "\n\n", lines).strip()


def _selected(collections: Sequence[str] | None) -> frozenset[str] | None:
    """Answer-id prefixes chosen by prefix ("GARD"), folder ("2_GARD_QA") or "MedlinePlus"."""
    if collections is None:
        return None
    if isinstance(collections, str):  # "GARD" means ("GARD",), not its letters
        collections = (collections,)
    known = {p.lower(): p for p, _ in COLLECTIONS.values()}
    known |= {folder.lower(): p for folder, (p, _) in COLLECTIONS.items()}
    chosen: set[str] = set()
    for name in collections:
        if name.lower() not in known and name.lower() not in ALIASES:
            choices = ", ".join(sorted({p for p, _ in COLLECTIONS.values()} | {"MedlinePlus"}))
            raise ConfigError(f"unknown MedQuAD collection {name!r}; choose from: {choices}")
        chosen.update(ALIASES.get(name.lower(), (known.get(name.lower(), ""),)))
    return frozenset(chosen)


def read_jsonl(path: Path, wanted: Callable[[str], bool]) -> Iterator[QAPair]:
    """Stream the pairs of ``medquad_qa.jsonl(.gz)``, repairing ids as the XML readers do."""
    foci: dict[tuple[str, str], list[str]] = {}  # files sharing an id differ by focus
    positions: dict[tuple[str, str], int] = {}
    for n, row in iter_jsonl(path):
        collection, qid = str(row.get("collection") or ""), str(row.get("qid") or "")
        if not collection or "-" not in qid:
            raise SourceError(f"{path}:{n}: expected a collection and a qid like 0000001-1")
        file_id = str(row.get("doc_id") or qid.rsplit("-", 1)[0])
        focus = " ".join(str(row.get("focus") or "").split())
        seen = foci.setdefault((collection, file_id), [])
        if focus not in seen:
            seen.append(focus)
        if seen.index(focus):  # the n-th distinct focus is upstream file <id>_<n>.xml
            file_id = f"{file_id}_{seen.index(focus)}"
        position = positions[(collection, file_id)] = positions.get((collection, file_id), 0) + 1
        if wanted(collection):
            yield QAPair(
                collection=collection,
                file_id=file_id,
                position=position,
                pid=qid.rsplit("-", 1)[1],
                qid=qid,
                qtype=str(row.get("qtype") or ""),
                question=" ".join(str(row.get("question") or "").split()),
                answer=str(row.get("answer") or ""),
                focus=focus,
                url=str(row.get("url") or ""),
                cuis=";".join(str(c) for c in row.get("cuis") or [] if c),
                semantic_types=";".join(str(t) for t in row.get("semantic_types") or [] if t),
            )


class MedQuADSource:
    name: ClassVar[str] = "medquad"
    default_subdir: ClassVar[str | None] = "medquad"

    def __init__(self, path: Path | None = None, collections: Sequence[str] | None = None) -> None:
        self.path = Path(path) if path else None
        self._prefixes = _selected(collections)
        self.skipped = 0  # pairs of the selected collections without an answer
        self.duplicates = 0  # pairs whose doc_id was already produced (none upstream)

    def describe(self) -> dict[str, Any]:
        try:
            kind: str | None = self._input()[0]
        except SourceError:
            kind = None
        chosen = sorted(self._prefixes) if self._prefixes is not None else "all"
        return {"name": self.name, "path": str(self.path), "input": kind, "collections": chosen}

    @classmethod
    def fetch(cls, dest: Path) -> Path:
        """Download the upstream XML at the pinned commit as one archive (it has 11k files)."""
        download(UPSTREAM_ARCHIVE, Path(dest) / "raw_xml.tar.gz")
        return Path(dest)

    def _input(self) -> tuple[str, Path]:
        """Pick the input: jsonl first, else the XML tarball, else a folder of XML files."""
        if self.path is None:
            raise SourceError(f"no MedQuAD path given. {HINT}")
        if self.path.is_file():
            return ("jsonl" if ".jsonl" in self.path.name else "tar"), self.path
        for name in ("medquad_qa.jsonl.gz", "medquad_qa.jsonl", "raw_xml.tar.gz"):
            if (self.path / name).is_file():
                return ("jsonl" if ".jsonl" in name else "tar"), self.path / name
        if self.path.is_dir() and xml_files(self.path):
            return "xml-dir", self.path
        raise SourceError(
            f"MedQuAD not found at {self.path}: expected medquad_qa.jsonl.gz, raw_xml.tar.gz "
            f"or MedQuAD's XML collection folders (e.g. 2_GARD_QA/). {HINT}"
        )

    def _wanted(self, collection: str) -> bool:
        return self._prefixes is None or _prefix(collection) in self._prefixes

    def documents(self) -> Iterator[Document]:
        self.skipped = self.duplicates = 0
        kind, path = self._input()
        readers = {"jsonl": read_jsonl, "tar": read_xml_tar, "xml-dir": read_xml_dir}
        seen: set[str] = set()
        for qa in readers[kind](path, self._wanted):
            answer = _clean(qa.answer)
            if not answer:
                self.skipped += 1
                continue
            prefix = _prefix(qa.collection)
            answer_id = f"{prefix}_{qa.file_id}_Sec{qa.position}"
            if answer_id in seen:
                self.duplicates += 1
                continue
            seen.add(answer_id)
            builder = DocumentBuilder()
            builder.add((qa.qtype or "information", qa.question), answer)
            yield builder.build(
                doc_id=f"medquad:{answer_id}",
                title=qa.focus or qa.question,
                source=self.name,
                url=qa.url,
                license=LICENSE.format(COLLECTIONS.get(qa.collection, ("", prefix))[1]),
                metadata={
                    "question": qa.question,
                    "qtype": qa.qtype,
                    "focus": qa.focus,
                    "qid": qa.qid,
                    "pid": qa.pid,
                    "answer_id": f"{answer_id}.txt",
                    "collection": qa.collection,
                    "cuis": qa.cuis,
                    "semantic_types": qa.semantic_types,
                },
            )
