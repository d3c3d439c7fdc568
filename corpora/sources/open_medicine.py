"""open-medicine guideline summaries (MIT): 43 society guidelines, one document per section file.

The package ships Markdown summaries under ``open_medicine/guidelines/content/<guideline>/``
with ``registry.json`` listing title, organisation, year and DOI. Each section file becomes a
document titled by its guideline; its Markdown headings (starting with the file's own top
heading, which names the guideline section) become the section paths that chunks respect.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from core.errors import SourceError
from core.types import Document
from corpora.sources.base import packaged_source_dir, read_text, require_file
from corpora.sources.markdown import markdown_sections

LICENSE = "MIT (open-medicine package); summary of the cited society guideline"


def packaged_guidelines_dir() -> Path:
    """Where the installed ``open-medicine`` package keeps its guideline summaries."""
    return packaged_source_dir(
        "open_medicine", "open-medicine", "guidelines", "a copy of its guidelines/ folder"
    )


class OpenMedicineSource:
    name: ClassVar[str] = "open-medicine"
    default_subdir: ClassVar[str | None] = None  # shipped in a registry package

    def __init__(self, path: Path | None = None) -> None:
        self.root = Path(path) if path else packaged_guidelines_dir()

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "path": str(self.root)}

    def _registry(self) -> list[dict[str, Any]]:
        registry = require_file(
            self.root / "registry.json",
            "open-medicine registry.json",
            "Point --path at the package's guidelines/ folder.",
        )
        try:
            entries = json.loads(read_text(registry))
        except json.JSONDecodeError as exc:
            raise SourceError(f"{registry} is not valid JSON: {exc}") from exc
        if not isinstance(entries, list):
            raise SourceError(f"{registry}: expected a list of guidelines")
        return entries

    def documents(self) -> Iterator[Document]:
        for guideline in self._registry():
            gid = str(guideline["id"])
            doi = str(guideline.get("doi") or "")
            for section in guideline.get("sections", []):
                path = self.root / "content" / gid / f"{section}.md"
                if not path.is_file():
                    continue
                text = read_text(path)
                sections = markdown_sections(text, root=())
                if not sections:
                    continue
                yield Document(
                    doc_id=f"open-medicine:{gid}/{section}",
                    title=str(guideline.get("title", gid)),
                    text=text,
                    source=self.name,
                    url=f"https://doi.org/{doi}" if doi else "",
                    license=LICENSE,
                    sections=sections,
                    metadata={
                        "organization": str(guideline.get("organization", "")),
                        "year": str(guideline.get("year", "")),
                        "doi": doi,
                    },
                )
