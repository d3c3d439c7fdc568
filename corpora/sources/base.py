"""What every source module shares: the Source protocol, a document builder and safe readers."""

from __future__ import annotations

import gzip
import json
import urllib.error
import urllib.request
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

from core.errors import ConfigError, SourceError
from core.packages import package_dir
from core.types import Document, Section

SECTION_SEPARATOR = "\n\n"


class Source(Protocol):
    """A parser that turns one public source (or a user's folder) into documents."""

    name: str

    def documents(self) -> Iterator[Document]: ...

    def describe(self) -> dict[str, Any]:
        """Parameters that identify this source's content; recorded in the index manifest."""
        ...


class DocumentBuilder:
    """Assembles a document from titled section bodies and records each section's span.

    The document text is the section bodies joined by blank lines, so every section span
    points at exactly its body. Empty bodies are skipped.
    """

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._sections: list[Section] = []
        self._length = 0

    def add(self, path: tuple[str, ...] | str, body: str) -> None:
        body = body.strip()
        if not body:
            return
        if isinstance(path, str):
            path = (path,)
        if self._parts:
            self._parts.append(SECTION_SEPARATOR)
            self._length += len(SECTION_SEPARATOR)
        start = self._length
        self._parts.append(body)
        self._length += len(body)
        self._sections.append(Section(path=path, start=start, end=self._length))

    @property
    def empty(self) -> bool:
        return not self._sections

    def build(
        self,
        *,
        doc_id: str,
        title: str,
        source: str,
        url: str,
        license: str,
        metadata: Mapping[str, str] | None = None,
    ) -> Document:
        return Document(
            doc_id=doc_id,
            title=title,
            text="".join(self._parts),
            source=source,
            url=url,
            license=license,
            sections=tuple(self._sections),
            metadata=dict(metadata or {}),
        )


def check_options(source: str, options: Mapping[str, Any], known: Collection[str]) -> None:
    """Raise a ConfigError naming any option of ``source`` that is not in ``known``."""
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ConfigError(
            f"unknown option(s) for source {source}: {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )


def require_file(path: Path, what: str, hint: str) -> Path:
    """Return ``path`` if it is a readable file, else raise a SourceError saying how to get it."""
    if not path.is_file():
        raise SourceError(f"{what} not found at {path}. {hint}")
    return path


def packaged_source_dir(module: str, distribution: str, subfolder: str, instead: str) -> Path:
    """``subfolder`` of installed data package ``module``, else a SourceError saying how to get it
    (install ``distribution`` with the corpora extra, or pass ``--path`` to ``instead``)."""
    folder = package_dir(module)
    if folder is None:
        raise SourceError(
            f"the {distribution} package is not installed; pip install 'medcite[corpora]' "
            f"or pass --path to {instead}"
        )
    return folder / subfolder


def read_text(path: Path) -> str:
    """Read UTF-8 text (gzip if the name ends in .gz); undecodable bytes become U+FFFD."""
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as fh:
                raw = fh.read()
        else:
            raw = path.read_bytes()
    except (OSError, EOFError) as exc:
        raise SourceError(f"cannot read {path}: {exc}") from exc
    return raw.decode("utf-8", errors="replace")


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` from a JSONL file (gzip allowed).

    Blank lines are skipped; a malformed line raises a SourceError naming file and line.
    """
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise SourceError(f"{path}:{n}: not valid JSON ({exc.msg})") from exc
                if not isinstance(obj, dict):
                    raise SourceError(f"{path}:{n}: expected a JSON object per line")
                yield n, obj
    except (OSError, EOFError) as exc:
        raise SourceError(f"cannot read {path}: {exc}") from exc


def download(url: str, dest: Path, *, timeout: float = 60.0) -> Path:
    """Download ``url`` to ``dest`` atomically (write to a .part file, then rename).

    Used by sources whose upstream is public, when a network is available.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp, part.open("wb") as out:
            while block := resp.read(1 << 20):
                out.write(block)
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        part.unlink(missing_ok=True)
        raise SourceError(
            f"could not download {url} ({exc}); without a network, pass --path to a local copy"
        ) from exc
    part.replace(dest)
    return dest
