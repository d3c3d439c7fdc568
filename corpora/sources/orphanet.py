"""Orphanet rare-disease ORPHApackets (Orphadata, CC BY 4.0): one document per ORPHAcode.

Reads ``orphapackets_full.jsonl.gz`` (one original packet per line, as published in the
Orphanet/orphapacket repository). Each packet becomes a document chunked by property, the way
the ReCOP rare-disease corpus is: Definition, Synonyms, Clinical signs and symptoms (HPO terms
grouped by frequency), Genes, Inheritance, Age of onset, Prevalence, Classification, Subtypes.
Property sections name the disease, so each chunk reads on its own as cited evidence.

Packets with only classification (a group's parents and subtypes, no clinical property) are
skipped and counted in ``skipped``; option ``require_definition=True`` also skips packets
without a definition.
"""

from __future__ import annotations

import gzip
import json
import tarfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar

from core.errors import SourceError
from core.paths import Paths
from core.types import Document
from corpora.sources.base import DocumentBuilder, check_options, download, iter_jsonl, require_file

PACKETS_FILE = "orphapackets_full.jsonl.gz"
UPSTREAM_COMMIT = "cbae63b4b85679ff3d745d48b8575e0854c254fd"
UPSTREAM_ARCHIVE = f"https://codeload.github.com/Orphanet/orphapacket/tar.gz/{UPSTREAM_COMMIT}"
LICENSE = "Orphadata CC BY 4.0"
# HPO frequency classes in clinical order; labels not listed here follow in order of appearance.
FREQUENCIES = (
    "Obligate (100%)",
    "Very frequent (99-80%)",
    "Frequent (79-30%)",
    "Occasional (29-5%)",
    "Very rare (<4-1%)",
    "Excluded (0%)",
)
PLACEHOLDERS = {"", "no data", "no data available", "not yet documented"}
ITEM_KEYS = {"Children": "Child", "TextSection": "TextSection"}  # else the field name less its "s"
NAVIGATION = {"Classification", "Subtypes"}  # sections that alone do not make a document


def _entries(value: Any, key: str) -> Iterator[Any]:
    """Flatten one packet list whatever nesting the XML-to-JSON export chose.

    The same property comes as ``[{"K": {...}}]``, ``[{"K": [...]}]`` or ``{"K": [...]}``
    across packets; this yields the records (dicts) and bare values (strings) inside.
    """
    if isinstance(value, dict) and key in value:
        yield from _entries(value[key], key)
    elif isinstance(value, list):
        for item in value:
            yield from _entries(item, key)
    elif value is not None:
        yield value


def _items(record: dict[str, Any], field: str) -> list[Any]:
    """The entries of a list field: ``Genes`` holds ``Gene`` items, ``Children`` ``Child`` items."""
    return list(_entries(record.get(field), ITEM_KEYS.get(field, field[:-1])))


def _records(record: dict[str, Any], field: str) -> list[dict[str, Any]]:
    return [v for v in _items(record, field) if isinstance(v, dict)]


def _text(value: Any) -> str:
    """A whitespace-normalised string field; "" when missing or an Orphanet placeholder."""
    text = " ".join(str(value).split()) if isinstance(value, str | int | float) else ""
    return "" if text.casefold() in PLACEHOLDERS else text


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))


def _values(packet: dict[str, Any], field: str, attr: str = "value") -> list[str]:
    return _unique(_text(r.get(attr)) for r in _records(packet, field))


def _disorder_type(packet: dict[str, Any]) -> str:
    kind = packet.get("DisorderType")
    return _text(kind.get("value")) if isinstance(kind, dict) else ""


def _listed(lead: str, items: list[str], sep: str = ", ") -> str:
    """``"<lead>: a, b."``, or ``"<lead>:"`` then one item a line when ``sep`` is a newline."""
    if not items:
        return ""
    return f"{lead}:\n" + "\n".join(items) if sep == "\n" else f"{lead}: {sep.join(items)}."


def _phenotypes(packet: dict[str, Any]) -> list[str]:
    groups: dict[str, list[str]] = {f: [] for f in FREQUENCIES}
    for rec in _records(packet, "Phenotypes"):
        freq = _text(rec.get("HPOFrequency")) or "Frequency not given"
        groups.setdefault(freq, []).append(_text(rec.get("HPOTerm")))
    lines = [(freq, _unique(terms)) for freq, terms in groups.items()]
    return [f"{freq}: {'; '.join(terms)}" for freq, terms in lines if terms]  # terms hold commas


def _gene_line(rec: dict[str, Any]) -> str:
    symbol, name = _text(rec.get("Symbol")), _text(rec.get("Name") or rec.get("Label"))
    gene = f"{symbol} ({name})" if symbol and name else symbol
    kind = _text(rec.get("DisorderGeneAssociationType"))  # e.g. "Disease-causing ... in"
    return (f"{kind} {gene}." if kind else f"{gene}.") if gene else ""


def _prevalence_line(rec: dict[str, Any]) -> str:
    kind, cls = _text(rec.get("PrevalenceType")), _text(rec.get("PrevalenceClass"))
    area = _text(rec.get("PrevalenceGeographic"))
    try:
        mean = float(rec.get("ValMoy", ""))
    except (TypeError, ValueError):
        mean = 0.0
    if kind == "Cases/families":  # ValMoy counts cases or families here, else it is per 100 000
        what = _text(rec.get("PrevalenceQualification")).lower() or "case(s)"
        value = f"{mean:g} {what} reported" if mean > 0 else f"{what} reported"
    else:
        value = ", ".join(_unique([cls, f"mean {mean:g} per 100 000" if mean > 0 else ""]))
    if not (kind and value):
        return ""
    return f"{kind}: {value} ({area})" if area else f"{kind}: {value}"


def _subtype_line(rec: dict[str, Any]) -> str:
    label, code = _text(rec.get("Label")), _text(rec.get("ORPHAcode"))
    genes = _unique(_text(g.get("Symbol")) for g in _records(rec, "Genes"))
    notes = [f"ORPHA:{code}"] if code else []
    if genes:
        notes.append(("genes " if len(genes) > 1 else "gene ") + ", ".join(genes))
    return f"{label} ({'; '.join(notes)})" if label and notes else label


def packet_sections(packet: dict[str, Any]) -> list[tuple[str, str]]:
    """Return ``(property, readable text)`` pairs for one packet, in ReCOP property order."""
    name = _text(packet.get("Label")) or f"ORPHA:{_text(packet.get('ORPHAcode'))}"
    kind = _disorder_type(packet)
    texts = _records(packet, "TextSection")
    definition = _unique(_text(t.get("Contents")) for t in texts if t.get("TextSectionType") == "Definition")
    prevalence = [_prevalence_line(r) for r in _records(packet, "Prevalences")]
    parents = _values(packet, "Parents", "Label")
    classification = [f"Orphanet classifies {name} as: {kind}."] if kind else []
    if parents:
        classification.append(f"Parent groups of {name}: {'; '.join(parents)}.")
    signs = f"Clinical signs and symptoms of {name} (HPO terms by frequency)"
    lists = [
        ("Synonyms", f"Other names for {name}", _items(packet, "Synonyms"), "; "),
        ("Clinical signs and symptoms", signs, _phenotypes(packet), "\n"),
        ("Genes", f"Genes associated with {name}", [_gene_line(r) for r in _records(packet, "Genes")], "\n"),
        ("Inheritance", f"Mode of inheritance of {name}", _values(packet, "TypeOfInheritances"), ", "),
        ("Age of onset", f"Age of onset of {name}", _values(packet, "AverageAgeOfOnsets"), ", "),
        ("Prevalence", f"Epidemiology of {name}", prevalence, "\n"),
    ]
    pairs = [("Definition", "\n".join(definition))]
    pairs += [(title, _listed(lead, _unique(map(_text, items)), sep)) for title, lead, items, sep in lists]
    subtypes = _unique(_subtype_line(r) for r in _records(packet, "Children"))
    pairs += [
        ("Classification", "\n".join(classification)),
        ("Subtypes", _listed(f"Subtypes of {name}", subtypes, "\n")),
    ]
    return [(title, body) for title, body in pairs if body.strip()]


def pack_archive(archive: Path, out: Path) -> None:
    """Write the ``json/*.json`` packets of an orphapacket archive to ``out`` as JSONL.gz.

    One unwrapped packet a line, in archive (path) order, via a .part file renamed at the end.
    """
    part = out.with_name(out.name + ".part")
    try:
        with tarfile.open(archive, "r:gz") as tar, gzip.open(part, "wt", encoding="utf-8") as fh:
            for member in tar:
                folder, _, filename = member.name.rpartition("/")
                raw = tar.extractfile(member) if folder.rpartition("/")[2] == "json" else None
                if raw is None or not filename.endswith(".json"):
                    continue
                try:
                    packet = json.loads(raw.read().decode("utf-8", "replace"))
                except json.JSONDecodeError as exc:
                    raise SourceError(f"{archive}:{member.name}: invalid JSON ({exc.msg})") from exc
                if isinstance(packet, dict):
                    fh.write(json.dumps(packet.get("Orphapacket", packet), ensure_ascii=False))
                    fh.write("\n")
    except (OSError, EOFError, tarfile.TarError, SourceError) as exc:
        part.unlink(missing_ok=True)
        if isinstance(exc, SourceError):
            raise
        raise SourceError(f"cannot unpack {archive}: {exc}") from exc
    part.replace(out)


class OrphanetSource:
    name: ClassVar[str] = "orphanet"
    default_subdir: ClassVar[str | None] = "orphanet_orphapacket"

    def __init__(self, path: Path | None = None, **options: Any) -> None:
        check_options(self.name, options, {"require_definition"})
        self.root = Path(path) if path else Paths.from_env().source_data / "orphanet_orphapacket"
        self.require_definition = bool(options.get("require_definition", False))
        self.skipped = 0

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "path": str(self.root), "require_definition": self.require_definition}

    def _file(self) -> Path:
        path = self.root if self.root.is_file() else self.root / PACKETS_FILE
        return require_file(
            path,
            "Orphanet packets file (orphapackets_full.jsonl.gz)",
            "Pass --path to the folder holding it, or run `medcite index build --source orphanet --fetch`.",
        )

    def documents(self) -> Iterator[Document]:
        """Yield one document per packet with a clinical property, in file order."""
        path = self._file()
        self.skipped = 0
        for line, row in iter_jsonl(path):
            packet = row.get("Orphapacket", row)  # upstream files wrap each packet
            code = _text(packet.get("ORPHAcode")) if isinstance(packet, dict) else ""
            if not code:
                raise SourceError(f"{path}:{line}: expected an ORPHApacket with an ORPHAcode")
            sections = packet_sections(packet)
            titles = {title for title, _ in sections}
            if not titles - NAVIGATION or (self.require_definition and "Definition" not in titles):
                self.skipped += 1
                continue
            builder = DocumentBuilder()
            for title, body in sections:
                builder.add((title,), body)
            xrefs = _records(packet, "ExternalReferences")
            omim = _unique(_text(r.get("Reference")) for r in xrefs if r.get("Source") == "OMIM")
            yield builder.build(
                doc_id=f"orphanet:{code}",
                title=_text(packet.get("Label")) or f"ORPHA:{code}",
                source=self.name,
                url=f"https://www.orpha.net/en/disease/detail/{code}",
                license=f"{LICENSE}; {_text(packet.get('copyright')) or 'Orphanet (c)'} INSERM",
                metadata={
                    "orpha_code": code,
                    "disorder_type": _disorder_type(packet),
                    "omim": ",".join(omim),
                    "version": _text(packet.get("version")),
                },
            )

    @classmethod
    def fetch(cls, dest: Path) -> Path:
        """Download the pinned orphapacket commit and pack its packets into one JSONL.gz.

        Upstream keeps one ``json/ORPHApacket_<code>.json`` per disease, so one archive of the
        commit beats ten thousand raw-file requests. Returns ``dest`` (pass it as ``path``).
        """
        archive = download(UPSTREAM_ARCHIVE, dest / f"orphapacket-{UPSTREAM_COMMIT[:8]}.tar.gz", timeout=600)
        pack_archive(archive, dest / PACKETS_FILE)
        archive.unlink()
        return dest
