"""Readers for MedQuAD's original XML, used by :mod:`corpora.sources.medquad`.

Upstream keeps one XML file per topic in one folder per collection (``2_GARD_QA/0000004.xml``).
Most files use the ``<Document><Focus/><QAPairs><QAPair pid><Question qid qtype/><Answer/>``
schema; four NINDS files use ``<doc><doctitle-focus/><qaPairs><pair pid><question/><answer/>``
and one CDC file ``<DiseaseFile>``. Tags are matched case-insensitively to cover all three.
The file name (not the root's id attribute, wrong in ten CancerGov files) identifies a file.
"""

from __future__ import annotations

import re
import tarfile
import xml.etree.ElementTree as ET
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from core.errors import SourceError
from corpora.sources.base import read_text

COLLECTION_DIR = re.compile(r"^\d+_\w+_QA")


class QAPair(NamedTuple):
    """One question-answer pair as found upstream (answer may be empty)."""

    collection: str  # upstream folder, e.g. "3_GHR_QA"
    file_id: str  # file name without .xml, e.g. "0000001" or "0000013_2_1"
    position: int  # 1-based place among the file's pairs: the N of MedQuAD's answer id "_SecN"
    pid: str  # upstream pid; differs from position where upstream dropped pairs
    qid: str
    qtype: str
    question: str
    answer: str
    focus: str
    url: str
    cuis: str  # ";"-joined
    semantic_types: str  # ";"-joined


def _flat(elem: ET.Element) -> str:
    return " ".join("".join(elem.itertext()).split())


def parse_xml(data: bytes, collection: str, file_id: str, origin: str) -> Iterator[QAPair]:
    """Yield the QA pairs of one MedQuAD XML file; malformed XML raises a SourceError."""
    try:
        root = ET.fromstring(data.decode("utf-8", errors="replace"))
    except ET.ParseError as exc:
        raise SourceError(f"{origin}:{exc.position[0]}: malformed XML ({exc})") from exc
    focus = next((_flat(e) for e in root.iter() if e.tag.lower() in ("focus", "doctitle-focus")), "")
    cuis = ";".join(t for e in root.iter() if e.tag.lower() == "cui" and (t := _flat(e)))
    types = ";".join(t for e in root.iter() if e.tag.lower() == "semantictype" and (t := _flat(e)))
    pairs = (e for e in root.iter() if e.tag.lower() in ("qapair", "pair"))
    for position, pair in enumerate(pairs, start=1):
        question = next((e for e in pair if e.tag.lower() == "question"), None)
        answer = next((e for e in pair if e.tag.lower() == "answer"), None)
        if question is None:
            raise SourceError(f"{origin}: QA pair {position} has no Question element")
        yield QAPair(
            collection=collection,
            file_id=file_id,
            position=position,
            pid=pair.get("pid", ""),
            qid=question.get("qid", ""),
            qtype=question.get("qtype", ""),
            question=_flat(question),
            answer="" if answer is None else "".join(answer.itertext()),
            focus=focus,
            url=root.get("url", ""),
            cuis=cuis,
            semantic_types=types,
        )


def xml_files(root: Path) -> list[Path]:
    """MedQuAD XML files under ``root`` (a checkout, or a folder holding ``raw/``), sorted."""
    found = [
        f
        for pattern in ("*/*.xml", "*/*/*.xml")
        for f in root.glob(pattern)
        if COLLECTION_DIR.match(f.parent.name)
    ]
    return sorted(found, key=lambda f: (f.parent.name, f.name))


def read_xml_dir(root: Path, wanted: Callable[[str], bool]) -> Iterator[QAPair]:
    """Stream the pairs of a folder of XML files in (collection, file) order."""
    for f in xml_files(root):
        if wanted(f.parent.name):
            yield from parse_xml(read_text(f).encode("utf-8"), f.parent.name, f.stem, str(f))


def iter_tar_xml(path: Path) -> Iterator[tuple[str, bytes]]:
    """Yield ``(member name, bytes)`` of the MedQuAD XML files in a tarball, in archive order."""
    try:
        with tarfile.open(path, "r:*") as tar:
            for member in tar:
                parts = member.name.split("/")
                if not (member.isfile() and parts[-1].endswith(".xml") and len(parts) > 1):
                    continue
                if COLLECTION_DIR.match(parts[-2]) and (fh := tar.extractfile(member)):
                    yield member.name, fh.read()
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise SourceError(f"cannot read MedQuAD XML archive {path}: {exc}") from exc


def read_xml_tar(path: Path, wanted: Callable[[str], bool]) -> Iterator[QAPair]:
    """Parse a tarball in one pass (archive order is arbitrary), then yield in sorted order.

    Only the parsed pairs of the wanted collections are held, never the raw XML.
    """
    parsed: dict[tuple[str, str], list[QAPair]] = {}
    for name, data in iter_tar_xml(path):
        collection, file_id = name.split("/")[-2], name.rsplit("/", 1)[-1][: -len(".xml")]
        if wanted(collection):
            origin = f"{path}[{name}]"
            parsed[(collection, file_id)] = list(parse_xml(data, collection, file_id, origin))
    for key in sorted(parsed):
        yield from parsed.pop(key)
