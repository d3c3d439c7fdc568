"""Disease names <-> their exact synonyms from the Human Disease Ontology (CC0).

Only synonyms the ontology marks EXACT are used (RELATED, BROAD and NARROW ones can change the
question), and only those a reader would take for the same disease: at least 4 characters, not
an abbreviation in capitals, no brackets, commas or qualifiers ("NOS", "acute", "with ..."), at
most 6 words, differing from the name by more than case, hyphens or spaces, and not the name with
words added ("acute pneumonia" is narrower than "pneumonia"; a trailing "disease", "disorder" or
"syndrome" is allowed). The old ontology still marks a few related terms EXACT; those found by
reading the swaps of the sampled benchmark items are listed in ``NOT_SYNONYMS``. A name (or
synonym) that belongs to two terms is dropped, so a swap never changes which disease is meant.
A mention of the name becomes its first kept synonym; a mention of a kept synonym becomes the name.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from core.errors import SourceError
from evals.robustness.terms import TermSwap

OBO = "doid_full_2016-09-01.obo"
_SYNONYM = re.compile(r'^synonym:\s*"((?:[^"\\]|\\.)*)"\s+EXACT\b')
_PLAIN = re.compile(r"^[a-z0-9' -]+$")  # no brackets, commas, slashes or qualifiers
QUALIFIERS = frozenset(
    "acute chronic subacute with without other unspecified manifestation manifestations persistent "
    "animal primary secondary nos late early".split()
)
GENERIC_SUFFIXES = frozenset({"disease", "disorder", "syndrome"})
NOT_SYNONYMS = frozenset(
    {  # (name, synonym): broader, narrower or another disease
        ("asthma", "bronchial hyperreactivity"),
        ("urinary tract infection", "acute cystitis"),
        ("eczema", "dermatitis"),
        ("schizophrenia", "schizophrenia-1"),
        ("breast cancer", "breast tumor"),
        ("syphilis", "syphilitic chancre"),
        ("azoospermia", "spermatogenic failure"),
        ("aortic valve stenosis", "rheumatic aortic stenosis"),
        ("melanoma", "naevocarcinoma"),
        ("pancreatic cancer", "ca body of pancreas"),
        ("retinoblastoma", "neuroblastoma of retina"),
        ("benign paroxysmal positional vertigo", "benign paroxysmal positional nystagmus"),
        ("bipolar disorder", "bipolar depression"),
        ("atopic dermatitis", "allergic dermatitis"),
        ("cervical cancer", "cervical neoplasm"),
        ("varicose veins", "varices"),
        ("lyme disease", "bannworth's syndrome"),
        ("bronchitis", "chest cold"),
        ("bronchitis", "chest infection"),
        ("analgesia", "pain agnosia"),
        ("arteriovenous malformation", "cirsoid aneurysm"),
        ("chronic lymphocytic leukemia", "lymphoplasmacytic leukemia"),
        ("major depressive disorder", "recurrent major depression"),
    }
)


def exact_synonyms(path: Path) -> Iterator[tuple[str, list[str]]]:
    """``(name, [EXACT synonyms])`` of every term of an OBO file that is not obsolete."""
    name, obsolete, in_term = "", False, False
    synonyms: list[str] = []
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            for raw in fh:
                line = raw.strip()
                if line.startswith("["):
                    if in_term and name and not obsolete:
                        yield name, synonyms
                    name, synonyms, obsolete, in_term = "", [], False, line == "[Term]"
                elif in_term and line.startswith("name:"):
                    name = line[5:].strip()
                elif in_term and line.startswith("is_obsolete:"):
                    obsolete = line.endswith("true")
                elif in_term and (match := _SYNONYM.match(line)):
                    synonyms.append(match.group(1).replace('\\"', '"'))
    except OSError as exc:
        raise SourceError(f"cannot read the Disease Ontology file {path}: {exc}") from exc
    if in_term and name and not obsolete:
        yield name, synonyms


def _key(text: str) -> str:
    return re.sub(r"[\s-]+", "", text.casefold())


def _adds_words(name: str, synonym: str) -> bool:
    """True when one is the other with words added (other than a generic suffix)."""
    a, b = name.lower().split(), synonym.lower().split()
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    extra = [w for w in long if w not in short]
    return all(w in long for w in short) and any(w not in GENERIC_SUFFIXES for w in extra)


def usable(name: str, synonym: str) -> bool:
    words = synonym.lower().split()
    return (
        len(synonym) >= 4
        and not synonym.isupper()
        and len(words) <= 6
        and bool(_PLAIN.match(synonym.lower()))
        and not QUALIFIERS.intersection(words)
        and _key(synonym) != _key(name)
        and not _adds_words(name, synonym)
        and words[0] != "ca"
        and " - " not in synonym
        and not _denied(name, synonym)
    )


def _denied(name: str, synonym: str) -> bool:
    a, b = name.lower(), synonym.lower()
    return (a, b) in NOT_SYNONYMS or (b, a) in NOT_SYNONYMS


@lru_cache(maxsize=2)
def synonym_map(folder: Path) -> dict[str, str]:
    """Lower-case disease name or synonym -> what it is swapped for (both directions)."""
    path = folder / OBO
    if not path.is_file():
        raise SourceError(
            f"no Disease Ontology file at {path}; set MEDCITE_SOURCE_DATA to the folder holding "
            "disease_ontology/ (the disease-synonyms perturbation reads it)"
        )
    owners: dict[str, set[str]] = {}
    pairs: list[tuple[str, str]] = []
    for name, synonyms in exact_synonyms(path):
        kept = [s for s in synonyms if usable(name, s)]
        for term in (name, *synonyms):
            owners.setdefault(term.lower(), set()).add(name)
        if kept and len(name) >= 4:
            pairs.append((name, kept[0]))
    mapping: dict[str, str] = {}
    for name, synonym in pairs:
        if len(owners[name.lower()]) == 1 and len(owners[synonym.lower()]) == 1:
            mapping[name.lower()] = (
                synonym.lower() if synonym[0].islower() or synonym[1:2].islower() else synonym
            )
            mapping[synonym.lower()] = name
    return mapping


def disease_swapper(folder: Path) -> TermSwap:
    return TermSwap(synonym_map(folder), "disease-synonyms")
