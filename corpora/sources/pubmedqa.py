"""PubMedQA PQA-L abstracts (1,000 PubMed articles): one document per article, without its conclusion.

Reads ``ori_pqal.json`` (``{pmid: {QUESTION, CONTEXTS[], LABELS[], LONG_ANSWER, YEAR, ...}}``).
A document is the abstract's labelled parts (BACKGROUND, METHODS, RESULTS, ...) as sections, in
order. The conclusion (``LONG_ANSWER``) is left out: it is the reference answer of the
``pubmedqa-long`` evaluation set, so an answer must be reasoned from the rest of the abstract, as in
PubMedQA's own reasoning-required setting. The question is not in the document either (PubMedQA
questions are the article titles), so the title is ``PubMed <PMID>``.

``fetch`` downloads the file from the PubMedQA repository at the commit the shared data pins.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from core.errors import ConfigError, SourceError
from core.paths import Paths
from core.types import Document
from corpora.sources.base import DocumentBuilder, download, require_file

PQAL_FILE = "ori_pqal.json"
UPSTREAM_COMMIT = "1cbae8e9"  # pubmedqa/pubmedqa, as pinned in the data README
UPSTREAM_URL = f"https://raw.githubusercontent.com/pubmedqa/pubmedqa/{UPSTREAM_COMMIT}/data/{PQAL_FILE}"
LICENSE = "PubMedQA MIT; PubMed abstract text (NLM)"
PREFIX = "pubmedqa:"


def doc_id(pmid: str) -> str:
    """The document id of a PQA-L article: ``pubmedqa:<PMID>``."""
    return f"{PREFIX}{pmid}"


class PubmedqaAbstractSource:
    name: ClassVar[str] = "pubmedqa-abstracts"
    default_subdir: ClassVar[str | None] = "pubmedqa"

    def __init__(self, path: Path | None = None, **options: Any) -> None:
        if options:
            got = ", ".join(sorted(options))
            raise ConfigError(f"source pubmedqa-abstracts takes no options (got {got})")
        self.root = Path(path) if path else Paths.from_env().source_data / "pubmedqa"
        self.skipped = 0

    @classmethod
    def fetch(cls, dest: Path) -> Path:
        """Download ``ori_pqal.json`` at the pinned commit into ``dest``."""
        download(UPSTREAM_URL, Path(dest) / PQAL_FILE)
        return Path(dest)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "path": str(self.root)}

    def _file(self) -> Path:
        path = self.root if self.root.is_file() else self.root / PQAL_FILE
        return require_file(
            path,
            f"PubMedQA PQA-L ({PQAL_FILE})",
            "Pass --path to the folder holding it (e.g. the shared data's pubmedqa/) or add --fetch.",
        )

    def documents(self) -> Iterator[Document]:
        """Yield one document per article, in PMID order."""
        path = self._file()
        try:
            articles = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SourceError(f"{path}: not a readable PQA-L JSON file ({exc}); download it again") from exc
        if not isinstance(articles, dict):
            raise SourceError(f"{path}: expected an object of PMID -> article, got {type(articles).__name__}")
        self.skipped = 0
        for pmid in sorted(articles):
            article = articles[pmid]
            contexts = article.get("CONTEXTS") if isinstance(article, dict) else None
            if not isinstance(contexts, list) or not contexts:
                self.skipped += 1
                continue
            labels = article.get("LABELS") or []
            builder = DocumentBuilder()
            for n, text in enumerate(contexts):
                label = labels[n] if n < len(labels) and isinstance(labels[n], str) else "ABSTRACT"
                builder.add((label.strip().capitalize() or "Abstract",), " ".join(str(text).split()))
            if builder.empty:
                self.skipped += 1
                continue
            yield builder.build(
                doc_id=doc_id(str(pmid)),
                title=f"PubMed {pmid}",
                source=self.name,
                url=f"https://pubmed.ncbi.nlm.nih.gov/{pmid}/",
                license=LICENSE,
                metadata={"pmid": str(pmid), "year": str(article.get("YEAR") or "")},
            )
