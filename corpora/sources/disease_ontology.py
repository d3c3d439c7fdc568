"""Human Disease Ontology (CC0): one document per disease term with a definition or synonyms.

Reads ``doid_terms.jsonl`` (derived from the DO release: id, name, definition, synonyms, parent
names, xrefs) or, when that is absent, an OBO file (``doid.obo`` as ``fetch`` downloads it, else
the first ``doid*.obo`` in the folder) through a small ``[Term]`` stanza parser; ``path`` may
also name either file. Sections: Definition, Synonyms, Parent terms, Cross-references.

Terms with neither a definition nor a synonym are skipped and counted in ``skipped`` (their
text would be a parent name and codes only); obsolete terms are dropped and counted in
``obsolete``. DO's relation names in definitions (``has_material_basis_in``) are written with
spaces so the evidence reads as prose.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar

from core.errors import SourceError
from core.paths import Paths
from core.types import Document
from corpora.sources.base import DocumentBuilder, check_options, download, iter_jsonl

TERMS_FILE = "doid_terms.jsonl"
OBO_FILE = "doid.obo"
UPSTREAM_COMMIT = "9fbefd6651b79526165453395d06c8fd4bfe4247"
UPSTREAM_OBO = (
    "https://raw.githubusercontent.com/DiseaseOntology/HumanDiseaseOntology/"
    f"{UPSTREAM_COMMIT}/src/ontology/doid.obo"
)
LICENSE = "CC0 1.0; Human Disease Ontology (disease-ontology.org)"
# Cross-reference prefixes shown in the text, in this order; all xrefs go to metadata.
XREF_LABELS = {
    "ICD10CM": "ICD-10-CM",
    "ICD11": "ICD-11",
    "ICD9CM": "ICD-9-CM",
    "ICDO": "ICD-O",
    "MESH": "MeSH",
    "UMLS_CUI": "UMLS",
    "SNOMEDCT": "SNOMED CT",
    "NCI": "NCI Thesaurus",
    "OMIM": "OMIM",
    "MIM": "OMIM",
    "ORDO": "Orphanet",
    "GARD": "GARD",
}
_DOID = re.compile(r"^DOID:\d+$")
_RELATION = re.compile(r"(?<=[a-z])_(?=[a-z])")
# The derived JSONL keeps a few OBO synonym tails: 'DFNB122" EXACT [] {synonymtypedef='.
_SYNONYM_TAIL = re.compile(r'"\s*(EXACT|RELATED|NARROW|BROAD)\b.*$')
_ESCAPES = {"n": "\n", "t": "\t", "W": " "}


def _quoted(value: str) -> tuple[str, str]:
    """Split an OBO ``"text" rest`` value into the unescaped text and the rest."""
    if not value.startswith('"'):
        raise ValueError("expected a quoted string")
    out: list[str] = []
    i = 1
    while i < len(value):
        ch = value[i]
        if ch == "\\" and i + 1 < len(value):
            out.append(_ESCAPES.get(value[i + 1], value[i + 1]))
            i += 2
        elif ch == '"':
            return "".join(out), value[i + 1 :].strip()
        else:
            out.append(ch)
            i += 1
    raise ValueError("unterminated quoted string")


def _apply(term: dict[str, Any], tag: str, value: str) -> None:
    """Record one ``tag: value`` line of a [Term] stanza in the JSONL row shape."""
    if tag in ("id", "name"):
        term[tag] = value
    elif tag == "def":
        term["definition"], refs = _quoted(value)
        term["def_refs"] = refs.strip("[]")
    elif tag == "synonym":
        term["synonyms"].append(_quoted(value)[0])
    elif tag == "is_a":
        parent, _, comment = value.partition("!")
        term["parents"].append(parent.strip())
        term["parent_comments"][parent.strip()] = comment.strip()
    elif tag == "xref":
        term["xrefs"].append(value.split()[0])
    elif tag == "is_obsolete":
        term["obsolete"] = value.lower() == "true"


def iter_obo_terms(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line, term)`` for each [Term] stanza of an OBO file, shaped like a JSONL row.

    Other stanzas ([Typedef]) and the header are ignored; a malformed line raises a
    SourceError naming file and line.
    """
    term: dict[str, Any] | None = None
    start = 0
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            for n, raw in enumerate(fh, start=1):
                line = raw.strip()
                if line.startswith("["):
                    if term is not None:
                        yield start, term
                    term, start = None, n
                    if line == "[Term]":
                        term = {
                            "synonyms": [],
                            "parents": [],
                            "parent_comments": {},
                            "xrefs": [],
                            "obsolete": False,
                        }
                elif term is not None and line and not line.startswith("!"):
                    tag, sep, value = line.partition(":")
                    try:
                        if not sep:
                            raise ValueError("expected 'tag: value'")
                        _apply(term, tag.strip(), value.strip())
                    except ValueError as exc:
                        raise SourceError(f"{path}:{n}: {exc}") from exc
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc}") from exc
    if term is not None:
        yield start, term


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value] if value else []


def _clean_synonyms(name: str, synonyms: Iterable[Any]) -> list[str]:
    seen = {name.casefold()}
    out = []
    for raw in synonyms:
        text = " ".join(_SYNONYM_TAIL.sub("", str(raw)).split())
        if text and text.casefold() not in seen:
            seen.add(text.casefold())
            out.append(text)
    return out


def _xref_lines(xrefs: list[str]) -> list[str]:
    groups: dict[str, list[str]] = {label: [] for label in XREF_LABELS.values()}
    for xref in xrefs:
        prefix, _, code = xref.partition(":")
        key = "SNOMEDCT" if prefix.upper().startswith("SNOMEDCT") else prefix.upper()
        if key in XREF_LABELS and code and code not in groups[XREF_LABELS[key]]:
            groups[XREF_LABELS[key]].append(code)
    return [f"{label}: {', '.join(codes)}" for label, codes in groups.items() if codes]


class DiseaseOntologySource:
    name: ClassVar[str] = "disease-ontology"
    default_subdir: ClassVar[str | None] = "disease_ontology"

    def __init__(self, path: Path | None = None, **options: Any) -> None:
        check_options(self.name, options, {"require_definition"})
        self.root = Path(path) if path else Paths.from_env().source_data / "disease_ontology"
        self.require_definition = bool(options.get("require_definition", False))
        self.skipped = 0
        self.obsolete = 0

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "path": str(self.root), "require_definition": self.require_definition}

    def _file(self) -> Path:
        """The JSONL if present, else doid.obo, else the first doid*.obo (sorted)."""
        if self.root.is_file():
            return self.root
        for candidate in (self.root / TERMS_FILE, self.root / OBO_FILE):
            if candidate.is_file():
                return candidate
        found = sorted(self.root.glob("doid*.obo")) if self.root.is_dir() else []
        if found:
            return found[0]
        raise SourceError(
            f"Disease Ontology terms not found in {self.root} (expected {TERMS_FILE} or "
            f"{OBO_FILE}). Pass --path to a folder or file holding them, or run "
            "`medcite index build --source disease-ontology --fetch`."
        )

    def _terms(self, path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
        return iter_obo_terms(path) if path.suffix == ".obo" else iter_jsonl(path)

    def documents(self) -> Iterator[Document]:
        """Yield one document per live term with a definition or synonyms, in file order."""
        path = self._file()
        # First pass: id -> name, so parents given as ids (OBO is_a) read as names.
        names = {str(t.get("id")): str(t.get("name")) for _, t in self._terms(path) if t.get("name")}
        self.skipped = self.obsolete = 0
        for line, term in self._terms(path):
            doid, name = str(term.get("id") or ""), " ".join(str(term.get("name") or "").split())
            if not _DOID.match(doid) or not name:
                raise SourceError(f"{path}:{line}: expected a term with a DOID id and a name")
            if term.get("obsolete") or term.get("is_obsolete") or name.startswith("obsolete "):
                self.obsolete += 1
                continue
            definition = _RELATION.sub(" ", " ".join(str(term.get("definition") or "").split()))
            synonyms = _clean_synonyms(name, _as_list(term.get("synonyms")))
            if not (definition or synonyms) or (self.require_definition and not definition):
                self.skipped += 1
                continue
            comments = term.get("parent_comments") or {}
            parents = [names.get(p) or comments.get(p) or p for p in _as_list(term.get("parents"))]
            xrefs = [str(x) for x in _as_list(term.get("xrefs"))]
            builder = DocumentBuilder()
            builder.add(("Definition",), definition)
            if synonyms:
                builder.add(("Synonyms",), f"Other names for {name}: {'; '.join(synonyms)}.")
            if parents:
                builder.add(
                    ("Parent terms",),
                    f"Parent terms of {name} in the Disease Ontology: {'; '.join(dict.fromkeys(parents))}.",
                )
            if codes := _xref_lines(xrefs):
                builder.add(("Cross-references",), f"Codes for {name}:\n" + "\n".join(codes))
            yield builder.build(
                doc_id=f"disease-ontology:{doid}",
                title=name,
                source=self.name,
                url=f"https://disease-ontology.org/?id={doid}",
                license=LICENSE,
                metadata={
                    "doid": doid,
                    "xrefs": ",".join(xrefs),
                    "definition_sources": str(term.get("def_refs") or "").replace("\\:", ":"),
                    "release": str(term.get("release") or path.name),
                },
            )

    @classmethod
    def fetch(cls, dest: Path) -> Path:
        """Download doid.obo of the pinned HumanDiseaseOntology commit into ``dest``.

        The JSONL in the shared data folder is derived; the source reads the OBO directly
        when no JSONL sits beside it. Returns ``dest`` (pass it as ``path``).
        """
        download(UPSTREAM_OBO, dest / OBO_FILE, timeout=300)
        return dest
