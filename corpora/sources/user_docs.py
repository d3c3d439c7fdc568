"""A user's own folder of documents: Markdown, plain text, HTML, JSONL and (with pypdf) PDF.

Files are read recursively in sorted path order; hidden files and folders (``.git``) are ignored
and other extensions are counted in ``skipped_files``. Every document keeps plain text only: HTML
is reduced to its visible text, with ``h1``..``h6`` as section paths, so no markup a page carries
(a ``<script>``, an injected ``<b>``) reaches an index, a prompt or an answer, nor text a reader
would not see (``hidden``, ``display: none``, embedded frames and objects). Markdown, text and JSONL
keep their text as written, any "<b>" in it included: it is literal text everywhere downstream.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from core.errors import MissingExtraError, SourceError
from core.types import Document, Section
from corpora.sources.base import DocumentBuilder, iter_jsonl, read_text
from corpora.sources.markdown import first_heading, markdown_sections

SUFFIXES = (".md", ".markdown", ".txt", ".html", ".htm", ".jsonl", ".pdf")
DROPPED_TAGS = {
    "script",
    "style",
    "nav",
    "noscript",
    "template",
    "head",
    "title",
    "iframe",
    "svg",
    "math",
    "object",
    "embed",
    "applet",
    "frame",
    "frameset",
    "noembed",
    "noframes",
    "canvas",
}
# Text a browser does not show is where an injection aimed at the model hides from the reader.
_INVISIBLE_STYLE = re.compile(r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\b", re.IGNORECASE)
BLOCK_TAGS = {
    "p",
    "div",
    "li",
    "ul",
    "ol",
    "tr",
    "table",
    "section",
    "article",
    "main",
    "header",
    "footer",
    "aside",
    "blockquote",
    "pre",
    "dd",
    "dt",
    "dl",
    "hr",
    "figure",
    "figcaption",
    "td",
    "th",
    "body",
}
_UNDERLINE = re.compile(r"^(={3,}|-{3,})$")
_TAG_LIKE = re.compile(r"</?[A-Za-z][\w:-]*(?:\s[^<>]*)?/?>|<!--.*?-->", re.DOTALL)
_SPACES = re.compile(r"[ \t\f\v\r\xa0]+")


class UserDocsSource:
    name: ClassVar[str] = "user-docs"
    default_subdir: ClassVar[str | None] = None  # always a folder the user names

    def __init__(self, path: Path | None = None, license: str = "user-provided") -> None:
        if path is None:
            raise SourceError("the user-docs source needs a folder: pass --path DIR")
        self.root = Path(path).expanduser().resolve()
        if not self.root.is_dir():
            raise SourceError(f"user-docs folder not found at {self.root}; pass --path to a folder")
        self.license = license
        self.skipped = 0
        self.skipped_files = 0

    def files(self) -> list[Path]:
        """Every non-hidden file under the folder, sorted by relative path."""
        found: list[Path] = []
        for folder, dirs, names in os.walk(self.root):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            found += [Path(folder, n) for n in names if not n.startswith(".")]
        return sorted(found, key=lambda p: p.relative_to(self.root).as_posix())

    def describe(self) -> dict[str, Any]:
        """Folder, licence, and a fingerprint of names, sizes and times that changes with any file."""
        digest = hashlib.sha256()
        files = [p for p in self.files() if p.suffix.lower() in SUFFIXES]
        for p in files:
            stat = p.stat()
            digest.update(
                f"{p.relative_to(self.root).as_posix()}\t{stat.st_size}\t{stat.st_mtime_ns}\n".encode()
            )
        return {
            "name": self.name,
            "path": str(self.root),
            "license": self.license,
            "files": len(files),
            "fingerprint": digest.hexdigest(),
        }

    def documents(self) -> Iterator[Document]:
        """One document per file (per line for JSONL), in sorted path order for stable chunk ids."""
        self.skipped = self.skipped_files = 0
        for path in self.files():
            suffix = path.suffix.lower()
            if suffix not in SUFFIXES:
                self.skipped_files += 1
                continue
            if suffix == ".jsonl":
                yield from self._jsonl(path)
                continue
            reader = {".txt": _text, ".html": _html, ".htm": _html, ".pdf": _pdf}.get(suffix, _markdown)
            title, text, sections = reader(path)
            if not sections:
                self.skipped += 1
                continue
            yield self._document(path, "", title or path.stem, text, sections, path.as_uri())

    def _document(
        self, path: Path, key: str, title: str, text: str, sections: tuple[Section, ...], url: str
    ) -> Document:
        relative = path.relative_to(self.root).as_posix()
        doc_id = f"{self.name}:{relative}" + (f":{key}" if key else "")
        return Document(
            doc_id=doc_id.replace("#", "%23"),  # chunk ids are "<doc_id>#<n>"
            title=title,
            text=text,
            source=self.name,
            url=url,
            license=self.license,
            sections=sections,
            metadata={"path": relative, **({"key": key} if key else {})},
        )

    def _jsonl(self, path: Path) -> Iterator[Document]:
        seen: set[str] = set()
        for n, row in iter_jsonl(path):
            text = row.get("text")
            if not isinstance(text, str):
                raise SourceError(f'{path}:{n}: each line needs a "text" string')
            key = str(row["id"]) if row.get("id") not in (None, "") else str(n)
            if key in seen:
                raise SourceError(f"{path}:{n}: duplicate id {key!r}")
            seen.add(key)
            section = row.get("section") or []
            if not isinstance(section, str | list):
                raise SourceError(f'{path}:{n}: "section" must be a string or a list of strings')
            section_path = (section,) if isinstance(section, str) else tuple(str(s) for s in section)
            body = _trimmed(text, 0, len(text), section_path)
            if body is None:
                self.skipped += 1
                continue
            title = str(row.get("title") or path.stem)
            yield self._document(path, key, title, text, (body,), str(row.get("url") or path.as_uri()))


def _trimmed(text: str, start: int, end: int, path: tuple[str, ...]) -> Section | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return Section(path=path, start=start, end=end) if end > start else None


def _markdown(path: Path) -> tuple[str | None, str, tuple[Section, ...]]:
    text = read_text(path)
    return first_heading(text), text, markdown_sections(text)


def _text(path: Path) -> tuple[str | None, str, tuple[Section, ...]]:
    """Plain text; a short line underlined with ===/--- or a short ALL CAPS line is a heading."""
    text = read_text(path)
    lines = text.splitlines(keepends=True)
    offsets = list(itertools.accumulate((len(line) for line in lines), initial=0))
    headings: list[tuple[int, int, int, str]] = []  # (heading start, body start, level, title)
    i = 0
    while i < len(lines):
        line, following = lines[i].strip(), lines[i + 1].strip() if i + 1 < len(lines) else ""
        starts_block = i == 0 or not lines[i - 1].strip()
        if starts_block and 0 < len(line) <= 80 and not _UNDERLINE.match(line):
            if _UNDERLINE.match(following):
                headings.append((offsets[i], offsets[i + 2], 1 if following[0] == "=" else 2, line))
                i += 1
            elif line.isupper() and sum(map(str.isalpha, line)) >= 3 and line[-1] not in ".,;":
                headings.append((offsets[i], offsets[i + 1], 2, line))
        i += 1
    return (headings[0][3] if headings else None), text, _nest(text, headings)


def _nest(text: str, headings: list[tuple[int, int, int, str]]) -> tuple[Section, ...]:
    """Body spans between headings, each under the path of its enclosing headings."""
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    body_start = 0
    for start, body, level, title in [*headings, (len(text), len(text), 0, "")]:
        if section := _trimmed(text, body_start, start, tuple(t for _, t in stack)):
            sections.append(section)
        stack = [s for s in stack if s[0] < level] + [(level, title)]
        body_start = body
    return tuple(sections)


def _html(path: Path) -> tuple[str | None, str, tuple[Section, ...]]:
    """Visible text of a page; each ``h1``..``h6`` opens a section nested by level."""
    try:
        from bs4 import BeautifulSoup, ParserRejectedMarkup
        from bs4.element import NavigableString, PreformattedString, Tag
    except ImportError as exc:
        raise MissingExtraError("beautifulsoup4", "corpora") from exc
    try:
        soup = BeautifulSoup(read_text(path), "html.parser")
    except ParserRejectedMarkup as exc:
        raise SourceError(f"{path}: not parseable as HTML ({exc})") from exc
    page_title = _line(_visible(soup.title)) if soup.title else ""
    builder = DocumentBuilder()
    stack: list[tuple[int, str]] = []
    buffer: list[str] = []
    headings: list[str] = []

    def walk(node: Tag, pre: bool) -> None:
        nonlocal stack, buffer
        for child in node.children:
            if isinstance(child, NavigableString) and not isinstance(child, PreformattedString):
                buffer.append(str(child) if pre else re.sub(r"\s+", " ", str(child)))
            elif not isinstance(child, Tag) or child.name in DROPPED_TAGS or _hidden(child):
                continue
            elif child.name == "br":
                buffer.append("\n")
            elif re.fullmatch(r"h[1-6]", child.name):
                builder.add(tuple(t for _, t in stack), _plain("".join(buffer)))
                level, title = int(child.name[1]), _line(_visible(child)) or child.name
                stack, buffer = [s for s in stack if s[0] < level] + [(level, title)], []
                headings.append(title)
            else:
                block = "\n" if child.name in BLOCK_TAGS else ""
                buffer.append(block)
                walk(child, pre or child.name == "pre")
                buffer.append(block)

    walk(soup, False)
    builder.add(tuple(t for _, t in stack), _plain("".join(buffer)))
    doc = builder.build(doc_id="", title="", source="", url="", license="")
    return page_title or next(iter(headings), None), doc.text, doc.sections


def _visible(node: Any) -> str:
    """The text of ``node`` a reader sees: no dropped or hidden elements, comments or CDATA."""
    from bs4.element import NavigableString, PreformattedString, Tag

    parts: list[str] = []
    for child in node.children:
        if isinstance(child, NavigableString) and not isinstance(child, PreformattedString):
            parts.append(str(child))
        elif isinstance(child, Tag) and child.name not in DROPPED_TAGS and not _hidden(child):
            parts.append(_visible(child))
    return " ".join(parts)


def _line(text: str) -> str:
    """A title or heading: plain text on one line."""
    return " ".join(_plain(text).split())


def _hidden(tag: Any) -> bool:
    """Hidden from a reader: the ``hidden`` attribute or an inline ``display: none`` style."""
    style = tag.get("style")
    return tag.has_attr("hidden") or (isinstance(style, str) and bool(_INVISIBLE_STYLE.search(style)))


def _plain(text: str) -> str:
    """Collapse whitespace per line, keep paragraph breaks, and drop anything shaped like a tag."""
    lines = [_SPACES.sub(" ", line).strip() for line in _TAG_LIKE.sub("", text).split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _pdf(path: Path) -> tuple[str | None, str, tuple[Section, ...]]:
    """One section per page (``Page N``); needs the optional pypdf package."""
    try:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError
    except ImportError as exc:
        raise MissingExtraError("pypdf", "pdf") from exc
    builder = DocumentBuilder()
    try:
        reader = PdfReader(path)
        if reader.is_encrypted and not reader.decrypt(""):
            raise SourceError(f"{path}: the PDF is encrypted; save a decrypted copy")
        for number, page in enumerate(reader.pages, start=1):
            builder.add((f"Page {number}",), (page.extract_text() or "").replace("\x00", ""))
        title = str(reader.metadata.title or "") if reader.metadata else ""
    except (PyPdfError, OSError, ValueError) as exc:
        raise SourceError(f"{path}: cannot read the PDF ({exc})") from exc
    doc = builder.build(doc_id="", title="", source="", url="", license="")
    return title.strip() or None, doc.text, doc.sections
