"""Is a cited passage about the question at all? A cheap, explainable check after generation.

The support verifier asks whether a passage supports the sentence that cites it, not whether it
is about what was asked (issue 14's pembrolizumab dose cited to a melanoma phenotype list).
The rules, over ``indexes.text.tokenize``:

1. The question's *key terms* are its content tokens, compounds split, minus numbers and minus
   ``GENERIC_TERMS`` (after ``stem``): words that say what kind of answer is wanted or for whom.
2. A passage (title, section path and text) is about the question when it contains *every* key
   term after ``stem`` ("infections" meets "infection"); one measure's two spellings count as
   one (``SAME_MEASURE``: eGFR/GFR, HbA1c/A1C, ECG/EKG).
3. A question with no key term left ("and in children?") cannot be checked; every passage passes.
4. *Subtypes*: a passage naming another "type X" than the question's, and not the question's, is
   not about it (numbers are not key terms, so "type 1" would otherwise pass for "type 2").
5. *What is asked for* (``ASKED_FOR``): a question asking for a treatment, a dose, a missed dose
   or storage needs a passage that speaks of that at all (a phenotype list never does).
6. *Populations* (``POPULATIONS``): a question about children, pregnancy or breastfeeding needs a
   passage that names that group, in any of its words.
7. *Drugs*: a question naming drugs (the drug dictionary's names, ``conditions.drugs``) needs a
   passage naming one of them (an antidepressant's starting dose is no levothyroxine answer).

By design it misses a passage that names every key term but is about something else, and
synonyms (and drug classes: "NSAIDs" for ibuprofen) it does not know; a correct line then goes
unshown, the safe side. Examples and measurements: docs/results/module_history.md. Pure functions.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from core.types import Chunk
from indexes.text import indexed_text, tokenize
from rag.profile import VerifyConfig
from rag.reading.condition_words import QUALIFIERS, subtypes
from rag.reading.conditions import Conditions, drugs, same_drug
from rag.reading.terms import SAME_MEASURE, Concept, chunk_stems, coverage, stem

POPULATIONS = {name: QUALIFIERS[name] for name in ("children", "pregnancy", "breastfeeding")}

# Words a question uses to ask (what kind of answer, for whom, how sure), not to name its subject.
# Kept small on purpose: every word here is one the check no longer requires of a passage.
GENERIC_TERMS = frozenset(
    # what kind of answer is wanted
    """
    dose doses dosage dosing dosed treatment treatments treat treats treated treating therapy
    therapies therapeutic regimen regimens drug drugs medication medications medicine agent agents
    antibiotic antibiotics option options choice preferred best first second line initial standard
    usual management score scores criteria criterion test tests diagnosis definition range stage
    goal goals target duration features feature phenotypes signs symptoms cause causes risk mg mcg
    kg ml
    """
    # how the question asks
    """
    recommended recommend recommends recommendation recommendations guideline guidelines aim indicated
    indication indications appropriate used use using given give should decide decides decision
    choose guide guides guided determine determines define defines defined estimate assess take
    taken get i know tell forget forgot miss missed skip store storage dispose disposal
    assessment screen screening prevent prevention manage managed required need needed consider
    considered suggested common frequent frequently typical clinical often much many long
    """
    # function words the tokenizer keeps: a passage need not say "must" to state an obligation
    """
    must may might shall ought cannot also whether per via times whose whom
    """
    # how a research question asks (chosen on BioASQ Task 7B-10B, where these were the terms most
    # often missing from every gold snippet of a question; ``bench/answers/aboutness_literature.py``)
    """
    list listed describe describes described summarize summarise explain name names named called
    known please main usually currently current following available another example examples s
    yes no effective effectiveness efficacy efficacious effect effects action actions mechanism
    mechanisms function functions role roles associated association associations involved involve
    involves implicated related relation relationship difference differences compared comparison
    versus included include includes contain contains part based basis mode purpose percentage
    proportion developed reduce reduces reduced reduction increase increases increased affect affects
    promote promotes apply applied application approach method methods tool tools stand trial
    trials study studies evidence
    """
    # for whom, how bad
    """
    patients patient adult adults child children people person pediatric paediatric women men
    acute chronic mild moderate severe severity low high disease diseases disorder disorders
    syndrome condition conditions
    """.split()
)

# The article "a" (lower case anywhere, or "A" opening the question) is no subject word, though
# the tokenizer keeps one-letter tokens for "vitamin A" and "hepatitis A" (capitalised, kept).
_ARTICLE = re.compile(r"(?<![\w-])a(?![\w-])|^\s*A(?=\s)")
_JOINERS = re.compile(r"[-/+']")
_GENERIC_STEMS = frozenset(stem(word) for word in GENERIC_TERMS)  # "decided" is as generic as "decide"


def key_terms(question: str) -> tuple[str, ...]:
    """The question's subject words, in order, without repeats (rule 1 of the module docstring)."""
    # Compounds are split so that "angle-closure" needs "angle" and "closure", not the joined
    # token "angleclosure" that only a passage hyphenating it the same way would contain.
    tokens = tokenize(_JOINERS.sub(" ", _ARTICLE.sub(" ", question)))
    terms = [
        t
        for t in tokens
        if stem(t) not in _GENERIC_STEMS and not t.replace(".", "").isdigit() and not _population_word(t)
    ]
    return tuple(dict.fromkeys(terms))


_RAW_WORD = re.compile(r"[^\W_]+")


def written_abbreviations(question: str) -> frozenset[str]:
    """The words ``question`` writes as abbreviations (two capitals, or a capital after the first
    letter: "CAP", "SpO2", "eGFR", "hs-cTn"'s "cTn"), case-folded."""
    return frozenset(
        w.casefold()
        for w in _RAW_WORD.findall(question)
        if sum(ch.isupper() for ch in w) >= 2 or any(ch.isupper() for ch in w[1:])
    )


def _population_word(token: str) -> bool:
    """Whether ``token`` names a population of rule 6 (checked as a group, not as a key term)."""
    return any(pattern.fullmatch(token) for pattern in POPULATIONS.values())


def populations(question: str) -> tuple[str, ...]:
    """The populations of rule 6 that ``question`` names ("children", "pregnancy", ...)."""
    return tuple(name for name, pattern in POPULATIONS.items() if pattern.search(question))


def unnamed_populations(names: Sequence[str], chunk: Chunk) -> tuple[str, ...]:
    """The populations of ``names`` that ``chunk`` (title, section path, text) never names (rule 6)."""
    text = indexed_text(chunk.title, chunk.section, chunk.text)
    return tuple(name for name in names if not POPULATIONS[name].search(text))


def unnamed_drugs(asked: frozenset[str], chunk: Chunk) -> tuple[str, ...]:
    """The asked drugs when ``chunk`` (title, section path, text) names none of them (rule 7)."""
    if not asked:
        return ()
    named = _passage_drugs(indexed_text(chunk.title, chunk.section, chunk.text))
    return () if any(same_drug(a, n) for a in asked for n in named) else tuple(sorted(asked))


@functools.lru_cache(maxsize=4096)
def _passage_drugs(text: str) -> frozenset[str]:
    return drugs(text)


_SAME = {term: group for group in SAME_MEASURE for term in group}


def missing_terms(terms: Sequence[str], chunk: Chunk) -> tuple[str, ...]:
    """The key terms that ``chunk`` (title, section path and text) does not contain (rule 2)."""
    have = {stem(t) for t in tokenize(indexed_text(chunk.title, chunk.section, chunk.text))}
    return tuple(t for t in terms if stem(t) not in have and not _SAME.get(t, frozenset()) & have)


@dataclass(frozen=True)
class AskedFor:
    """A kind of answer a question asks for (``asks`` finds it in the question) that a passage must
    speak of (``speaks_of`` finds it in the passage) to give; ``name`` is how a reason says it.
    ``given_by`` finds it in an answer's text (default: ``speaks_of``): a dose answer states an
    amount, where a passage about doses may only say "dosing"."""

    name: str
    asks: re.Pattern[str]
    speaks_of: re.Pattern[str]
    given_by: re.Pattern[str] | None = None

    def given_in(self, text: str) -> bool:
        """Whether ``text`` (presented answer sentences) gives this kind of answer."""
        return bool((self.given_by or self.speaks_of).search(text))


def _words(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


_DOSE_WORD = r"dos(?:e|es|age|ages|ing|ed)"
# an amount: a number and a unit of dosing ("5 mg", "70-100 U/kg", "4-10 puffs", "0.5%")
_AMOUNT = (
    r"\d\s*(?:mg|mcg|µg|μg|micrograms?|milligrams?|g|grams?|kg|ml|l|iu|u|units?|mmol|meq"
    r"|puffs?|tablets?|capsules?|drops?|%)(?![^\W\d_])"
)
_TREATMENT_WORDS = (
    r"\b(?:treat\w*|therap\w*|manag(?:e|ed|ing|ement)|regimens?|medications?|prescri\w*"
    rf"|recommend\w*|first-line|{_DOSE_WORD}|mg)\b"
)
_MISSED = r"(?:miss(?:es|ed|ing)?|forg[eo]t(?:s|ten|ting)?|skip(?:s|ped|ping)?)"
_STORED = r"stor(?:e|es|ed|ing|age)|dispos(?:e|al|ing)"
ASKED_FOR: tuple[AskedFor, ...] = (
    AskedFor(
        "a treatment",
        _words(
            r"\b(?:treat(?:s|ed|ing|ment|ments)?|therap(?:y|ies|eutic)|manag(?:e|ed|ing|ement)"
            r"|regimens?|medications?|drugs?|prescri\w*|first-line)\b"
        ),
        _words(_TREATMENT_WORDS),
        _words(f"{_TREATMENT_WORDS}|{_AMOUNT}"),  # a regimen ("salbutamol 4-10 puffs") is a treatment
    ),
    AskedFor(
        "a dose",
        _words(rf"\b(?:{_DOSE_WORD}|how much)\b"),
        _words(
            rf"\b(?:{_DOSE_WORD}|mg|mcg|µg|micrograms?|milligrams?|iu|units?|mmol|ml)\b"
            r"|\d\s?(?:mg|g|mcg|µg)\b"
        ),
        _words(_AMOUNT),
    ),
    AskedFor(
        "a missed dose",
        _words(rf"\b{_MISSED}\b[^.?]{{0,20}}\bdoses?\b"),
        _words(
            rf"\b{_MISSED}\b[^.]{{0,40}}\bdoses?\b"
            r"|\bdoses?\b[^.]{0,40}\b(?:missed|forgotten|skipped)\b"
        ),
    ),
    AskedFor(
        "storage or disposal",
        _words(rf"\b(?:{_STORED})\b"),
        _words(rf"\b(?:{_STORED}|refrigerat\w*|room temperature)\b"),
    ),
)


def asked_for(question: str) -> tuple[AskedFor, ...]:
    """The kinds of answer ``question`` asks for that have words a passage must use (rule 5)."""
    return tuple(kind for kind in ASKED_FOR if kind.asks.search(question))


def unspoken(kinds: Sequence[AskedFor], chunk: Chunk) -> tuple[str, ...]:
    """The names of the asked-for kinds that ``chunk`` (title, section path, text) never speaks of."""
    text = indexed_text(chunk.title, chunk.section, chunk.text)
    return tuple(kind.name for kind in kinds if not kind.speaks_of.search(text))


class Asked(Protocol):
    """What aboutness reads of a question (``rag.reading.question.ReadQuestion`` holds it)."""

    @property
    def terms(self) -> tuple[str, ...]: ...
    @property
    def concepts(self) -> tuple[Concept, ...]: ...
    @property
    def subtypes(self) -> tuple[str, ...]: ...
    @property
    def kinds(self) -> tuple[AskedFor, ...]: ...
    @property
    def populations(self) -> tuple[str, ...]: ...
    @property
    def patient(self) -> Conditions: ...
    @property
    def drugs(self) -> frozenset[str]: ...


def missing(
    read: Asked,
    chunk: Chunk,
    verify: VerifyConfig,
    relevance: float | None = None,
    *,
    model: AboutnessModel | None = None,
) -> tuple[str, ...]:
    """What ``chunk`` lacks to be about the question: its subject (``verify.about``: every key
    term, or the aboutness model's judgement), the subtype, asked-for kinds, the population (each
    check as ``verify.off`` leaves it). ``relevance``: the relevance model's probability for the
    passage, when there is one; ``model``: None for the shipped aboutness model."""
    terms: tuple[str, ...] = ()
    if verify.about == "every":
        terms = missing_terms(read.terms, chunk)
    elif verify.about == "judged":
        have = chunk_stems(chunk)
        model = model or AboutnessModel.shipped()
        p = model.probability(about_features(read.concepts, have, relevance))
        if p < (model.threshold if verify.min_about is None else verify.min_about):
            lacking = tuple(c.text for c in read.concepts if not c.covered_by(have))
            terms = lacking or (f"enough of the question (about {p:.2f})",)
    lacking = (
        terms
        + (missing_subtypes(read.subtypes, chunk) if verify.checks("subtypes") else ())
        + (unspoken(read.kinds, chunk) if verify.checks("asked_for") else ())
        + (unnamed_populations(read.populations, chunk) if verify.checks("populations") else ())
        + (unnamed_drugs(read.drugs, chunk) if verify.checks("drugs") else ())
    )
    return tuple(dict.fromkeys(lacking))  # a drug is often a key term too


def about_features(
    concepts: Sequence[Concept], have: frozenset[str], relevance: float | None
) -> dict[str, float]:
    """What the aboutness model reads of a passage: ``coverage``, the idf-weighted share of the
    question's concepts it covers; ``specialist_coverage``, the same over the specialist concepts
    (1 when the question has none); ``relevance``, the relevance model's probability (absent when
    None: the model's variant without it)."""
    share, _ = coverage(concepts, have)
    specialist = [c for c in concepts if c.specialist]
    special, _ = coverage(specialist, have) if specialist else (1.0, ())
    out = {"coverage": share, "specialist_coverage": special}
    return out if relevance is None else {**out, "relevance": relevance}


ABOUTNESS_MODEL = Path(__file__).parent / "weights" / "aboutness.json"


@dataclass(frozen=True)
class Logistic:
    """``sigmoid(w . x + b)`` over the named ``features`` of ``about_features``."""

    features: tuple[str, ...]
    weights: tuple[float, ...]
    bias: float

    def probability(self, x: Mapping[str, float]) -> float:
        z = self.bias + sum(w * x[name] for w, name in zip(self.weights, self.features, strict=True))
        return 1.0 / (1.0 + math.exp(-z))


@dataclass(frozen=True)
class AboutnessModel:
    """P(about), fitted on the clinician benchmark's dev part (``medcite train aboutness``; its
    manifest names the data and the metrics). Two variants:
    with the relevance model's probability, and without it (a reranker whose scores are no
    probabilities)."""

    with_relevance: Logistic
    without_relevance: Logistic
    threshold: float

    def probability(self, features: Mapping[str, float]) -> float:
        return (self.with_relevance if "relevance" in features else self.without_relevance).probability(
            features
        )

    @classmethod
    def read(cls, path: Path) -> AboutnessModel:
        data = json.loads(path.read_text(encoding="utf-8"))

        def variant(name: str) -> Logistic:
            weights = tuple(float(w) for w in data[name]["weights"])
            return Logistic(tuple(data[name]["features"]), weights, float(data[name]["bias"]))

        return cls(
            variant("with_relevance"), variant("without_relevance"), threshold=float(data["threshold"])
        )

    @classmethod
    @functools.cache
    def shipped(cls) -> AboutnessModel:
        return cls.read(ABOUTNESS_MODEL)


def missing_subtypes(names: Sequence[str], chunk: Chunk) -> tuple[str, ...]:
    """The subtypes ``chunk`` (title, section path, text) does not name while naming another (rule 4)."""
    if not names:
        return ()
    have = subtypes(indexed_text(chunk.title, chunk.section, chunk.text))
    return tuple(name for name in names if have and name.split()[1] not in have)
