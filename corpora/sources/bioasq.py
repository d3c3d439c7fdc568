"""BioASQ Task B gold snippets (2019-2023, via MIRAGE): one document per snippet.

Reads ``snippet_corpus.jsonl`` (``{"_id": "S000001", "pmid", "section": "title"|"abstract",
"text"}``). The snippet ids are the ``corpus-id`` column of ``qrels_snippets.tsv``, so a
document's id is ``qrels_doc_id(snippet_id)`` and retrieval hits map back to the qrels with
``snippet_id(doc_id)``.

The title is the PubMed title when the corpus holds a title snippet for that PMID (the longest
one; BioASQ title snippets may be partial), else "PubMed <PMID>"; the titles are collected in a
first pass over the file. Abstract snippets get the section ("Abstract snippet",), title snippets
("Title snippet",).

There is no ``fetch``: the file is derived data (built from the BioASQ Task B golden sets in
MIRAGE's ``rawdata/bioasq``, under the BioASQ terms of use); no upstream publishes it in this
shape. Point ``--path`` at a local copy.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from core.errors import ConfigError, SourceError
from core.paths import Paths
from core.types import Document
from corpora.sources.base import DocumentBuilder, iter_jsonl, require_file

SNIPPETS_FILE = "snippet_corpus.jsonl"
LICENSE = "BioASQ terms of use; PubMed abstract text (NLM)"
PREFIX = "bioasq:"
SECTIONS = {"abstract": "Abstract snippet", "title": "Title snippet"}


def qrels_doc_id(snippet_id: str) -> str:
    """The document id of a snippet id as written in ``qrels_snippets.tsv`` (``S000001``).

    Evaluation uses it to turn qrels into document ids: ``qrels_doc_id("S000001")`` is
    ``"bioasq:S000001"``, the ``doc_id`` this source gives that snippet.
    """
    return f"{PREFIX}{snippet_id.strip()}"


def snippet_id(doc_id: str) -> str:
    """Inverse of ``qrels_doc_id``: the qrels ``corpus-id`` of a bioasq document id."""
    if not doc_id.startswith(PREFIX):
        raise ValueError(f"{doc_id!r} is not a bioasq document id")
    return doc_id[len(PREFIX) :]


def _field(row: dict[str, Any], key: str) -> str:
    value = row.get(key)
    return " ".join(str(value).split()) if isinstance(value, str | int) else ""


class BioasqSnippetSource:
    name: ClassVar[str] = "bioasq-snippets"
    default_subdir: ClassVar[str | None] = "bioasq_from_mirage"

    def __init__(self, path: Path | None = None, **options: Any) -> None:
        if options:
            raise ConfigError(f"source bioasq-snippets takes no options (got {', '.join(sorted(options))})")
        self.root = Path(path) if path else Paths.from_env().source_data / "bioasq_from_mirage"
        self.skipped = 0

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "path": str(self.root)}

    def _file(self) -> Path:
        path = self.root if self.root.is_file() else self.root / SNIPPETS_FILE
        return require_file(
            path,
            f"BioASQ snippet corpus ({SNIPPETS_FILE})",
            "It is derived data with no public download: pass --path to the folder holding it "
            "(e.g. the shared data's bioasq_from_mirage/).",
        )

    def titles(self) -> dict[str, str]:
        """PMID -> PubMed title, from the corpus's title snippets (the longest per PMID)."""
        titles: dict[str, str] = {}
        for _, row in iter_jsonl(self._file()):
            pmid, text = _field(row, "pmid"), _field(row, "text")
            if row.get("section") == "title" and pmid and text:
                titles[pmid] = max(titles.get(pmid, ""), text, key=lambda t: (len(t), t))
        return titles

    def documents(self) -> Iterator[Document]:
        """Yield one document per snippet with text, in file order (ids ascend there)."""
        path = self._file()
        titles = self.titles()
        self.skipped = 0
        seen: set[str] = set()
        for line, row in iter_jsonl(path):
            sid, pmid = _field(row, "_id"), _field(row, "pmid")
            text = row.get("text")
            text = text if isinstance(text, str) else ""
            if not sid:
                raise SourceError(f"{path}:{line}: snippet has no _id")
            if sid in seen:
                raise SourceError(f"{path}:{line}: duplicate snippet id {sid}")
            seen.add(sid)
            if not text.strip():
                self.skipped += 1
                continue
            section = _field(row, "section").lower()
            builder = DocumentBuilder()
            builder.add((SECTIONS.get(section, "Abstract snippet"),), text)
            yield builder.build(
                doc_id=qrels_doc_id(sid),
                title=titles.get(pmid) or (f"PubMed {pmid}" if pmid else f"BioASQ snippet {sid}"),
                source=self.name,
                url=f"https://pubmed.ncbi.nlm.nih.gov/{pmid}/" if pmid else "",
                license=LICENSE,
                metadata={"pmid": pmid, "snippet_id": sid, "section": section},
            )
