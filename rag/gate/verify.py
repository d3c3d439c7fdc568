"""Does each cited passage support the sentence that cites it? A cheap, explainable score.

No NLI or cross-encoder model ships weights on the registry, so support is estimated from
signals (``rag.gate.support_signals``) that each catch a different failure, for one (sentence,
cited passage) pair with the sentence's markers stripped: ``cosine`` (embedding similarity to
the passage's best sentence, row or item, or the passage whole), ``lexical`` (share of the
sentence's content words in the passage), and the rule checks ``numbers_ok`` (every number, with
its unit and a word beside it), ``names_ok`` (every drug, gene or score name), ``scope_ok`` (a
dose for a group cites a line or heading naming that group) and ``copy_ok`` (a copied sentence
keeps its passage's words and negations). A wrong number is the most dangerous error in a
medical answer, and the embedder barely sees one.

``heuristic = 0.6 * semantic + 0.4 * lexical``, ``semantic = clip((cosine - 0.35) / 0.45, 0, 1)``;
``support = heuristic * (1 if every check passes else 0.3)``, so a failed check caps support
under the default threshold of 0.5. With the trained support model (``verify.backend =
"trained"``, ``rag.gate.support_model``) ``support = P(supported) * check factor``: the model
reads negation and swapped entities the heuristic misses; the rules stay. An answer judge
(``verify.answer_judge``) has the last word for pairs that pass.
A list whose every item is an entry of the cited passages' own lists has support 1 without a
judge (``support_signals.listed_in_passage``): phenotype lists outgrow the model's window.

A sentence's support is the best over the passages it cites; without markers it is 0 (uncited).
A citation's support is the mean over the sentences citing it, so a weak citation shows.
Calibration figures and each signal's details: docs/results/module_history.md.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from core.errors import ConfigError
from core.types import Chunk, Hit, SentenceSupport
from indexes.text import indexed_text
from rag.gate.copy_check import changed_words
from rag.gate.dose_scope import unscoped_qualifiers
from rag.gate.support_signals import (
    lexical_coverage,
    listed_in_passage,
    listed_in_passages,
    names_agree,
    numbers_agree,
    passage_units,
    plain,
    quoted_from_passage,
)
from rag.generate.citations import ParsedSentence
from rag.profile import VerifyConfig
from rag.protocols import Embedder

if TYPE_CHECKING:
    from rag.gate.answer_judge import AnswerJudge
    from rag.gate.support_model import TrainedSupport

COS_FLOOR, COS_CEIL = 0.35, 0.80
SEMANTIC_WEIGHT, LEXICAL_WEIGHT = 0.6, 0.4
CHECK_PENALTY = 0.3  # support x this when a rule check fails (rule_checks)
HEURISTIC_THRESHOLD = 0.5  # the heuristic's calibration (module docstring); a model brings its own


def rule_checks(claim: str, chunk: Chunk) -> tuple[bool, bool, bool, bool]:
    """``(numbers_ok, names_ok, scope_ok, copy_ok)``: the rule checks a support score is capped by
    (``CHECK_PENALTY``) when any fails, the same for the verifier and for the support model's
    calibration in training (module docstring)."""
    text = indexed_text(chunk.title, chunk.section, chunk.text)
    return (
        numbers_agree(claim, text),
        names_agree(claim, text),
        not unscoped_qualifiers(claim, chunk),
        not changed_words(claim, chunk),
    )


@dataclass(frozen=True)
class PairSupport:
    """The signals behind one (sentence, passage) support score, for inspection and calibration."""

    cosine: float
    semantic: float
    lexical: float
    numbers_ok: bool
    support: float
    model: float | None = None  # P(supported) from the trained support model, when one is used
    listed: bool = False  # a quoted entry, or a list of the passage's entries: support 1
    names_ok: bool = True  # every name of the claim is in the passage
    scope_ok: bool = True  # every group a dose claim names is tied to that dose in the passage
    copy_ok: bool = True  # a near copy of a passage sentence keeps that sentence's words
    answer: float | None = None  # the answer judge's P(yes), when it decided (``answer_judge``)

    @property
    def checks_ok(self) -> bool:
        """Whether the number, name, dose-scope and copy checks pass (else support is capped)."""
        return self.numbers_ok and self.names_ok and self.scope_ok and self.copy_ok

    @property
    def heuristic(self) -> float:
        """The heuristic support (check factor applied), whatever ``support`` was made from."""
        blend = SEMANTIC_WEIGHT * self.semantic + LEXICAL_WEIGHT * self.lexical
        return blend * (1.0 if self.checks_ok else CHECK_PENALTY)


class SupportVerifier:
    """Scores each answer sentence against the passages it cites (see the module docstring)."""

    def __init__(
        self,
        embedder: Embedder,
        *,
        threshold: float | None = None,
        model: TrainedSupport | None = None,
        answer_judge: AnswerJudge | None = None,
    ) -> None:
        """``threshold`` None: the answer judge's when one is given, else the trained model's own
        (chosen on dev, in its manifest) when a model is given, else the heuristic's 0.5."""
        own = model.threshold if model is not None else None
        own = answer_judge.threshold if answer_judge is not None else own
        threshold = threshold if threshold is not None else own if own is not None else HEURISTIC_THRESHOLD
        if not 0.0 <= threshold <= 1.0:
            raise ConfigError(f"the support threshold must be in [0, 1], got {threshold}")
        self.embedder = embedder
        self.threshold = threshold
        self.model = model
        self.answer_judge = answer_judge
        self.dose_scope = self.copy_check = True

    @property
    def uses_generator(self) -> bool:
        """Whether scoring asks the generator (the answer judge); the gate then decides once it is done."""
        return self.answer_judge is not None

    def with_checks(self, verify: VerifyConfig) -> SupportVerifier:
        """This verifier (same models) applying the dose-scope and copy checks ``verify`` leaves on."""
        other = copy.copy(self)
        other.dose_scope, other.copy_check = verify.checks("dose_scope"), verify.checks("copy_check")
        return other

    def score_sentences(
        self, sentences: Sequence[ParsedSentence], sources: Sequence[Hit], question: str | None = None
    ) -> list[tuple[SentenceSupport, dict[int, float]]]:
        """Each sentence's support, and its support against each source it cites (by marker).

        The support gate calls this a few sentences at a time while an answer streams, and needs
        the per-passage scores to give each remaining citation the mean over the sentences kept.
        With an answer judge and the ``question``, the judge decides (``score_pairs``).
        """
        for s in sentences:
            if any(not 1 <= k <= len(sources) for k in s.markers):
                raise ValueError(
                    f"sentence markers {s.markers} point outside the {len(sources)} sources given"
                )
        pairs = sorted({(s.claim, k) for s in sentences for k in s.markers})
        scores = self.score_pairs([(claim, sources[k - 1].chunk) for claim, k in pairs], question)
        by_pair = {pair: score.support for pair, score in zip(pairs, scores, strict=True)}
        judged = self.answer_judge is not None and question is not None  # the judge decides lists too
        out = []
        for s in sentences:
            by_marker = {k: by_pair[(s.claim, k)] for k in s.markers}
            below = not judged and len(by_marker) > 1 and max(by_marker.values()) < self.threshold
            if below and listed_in_passages(s.claim, [sources[k - 1].chunk for k in by_marker]):
                by_marker = dict.fromkeys(by_marker, 1.0)  # a list its cited passages give between them
            support = max(by_marker.values(), default=0.0)
            supported = bool(s.markers) and support >= self.threshold
            out.append((SentenceSupport(s.claim, s.markers, support, supported), by_marker))
        return out

    def score_pairs(
        self, pairs: Sequence[tuple[str, Chunk]], question: str | None = None
    ) -> list[PairSupport]:
        """Support of each ``(claim, passage)``; all texts are embedded in one batch.

        With an answer judge and the ``question``, support is then the judge's P(yes) for the
        pairs that pass the rule checks and reach the judge's floor, 0 for the others
        (``_answered``); a listed or quoted entry is judged like any other sentence.
        """
        # keyed by the chunk, not its id: sentence selection cuts one chunk into pieces that share it
        units = {c: passage_units(c) for _, c in pairs}
        claims = [plain(claim) for claim, _ in pairs]
        texts = list(dict.fromkeys([c for c in claims if c] + [u for us in units.values() for u in us]))
        row = {text: i for i, text in enumerate(texts)}
        vectors = self.embedder.embed(texts) if texts else np.zeros((0, 0), dtype=np.float32)
        modelled = self._model_probabilities(pairs)
        out = []
        for i, (claim, chunk) in enumerate(pairs):
            if not plain(claim):  # nothing to check: a sentence made of markers only
                out.append(PairSupport(0.0, 0.0, 0.0, True, 0.0))
                continue
            unit_rows = [row[u] for u in units[chunk]]
            cosine = float(np.max(vectors[unit_rows] @ vectors[row[plain(claim)]])) if unit_rows else 0.0
            semantic = min(1.0, max(0.0, (cosine - COS_FLOOR) / (COS_CEIL - COS_FLOOR)))
            lexical = lexical_coverage(claim, chunk)
            numbers_ok, names_ok, scope_ok, copy_ok = rule_checks(claim, chunk)
            scope_ok = scope_ok or not self.dose_scope  # off only in ablations
            copy_ok = copy_ok or not self.copy_check
            checks_ok = numbers_ok and names_ok and scope_ok and copy_ok
            support = SEMANTIC_WEIGHT * semantic + LEXICAL_WEIGHT * lexical
            model = None if modelled is None else float(modelled[i])
            if model is not None:
                support = model
            listed = quoted_from_passage(claim, chunk) or listed_in_passage(claim, chunk)
            if listed:
                support = 1.0
            support *= 1.0 if checks_ok else CHECK_PENALTY
            out.append(
                PairSupport(
                    cosine,
                    semantic,
                    lexical,
                    numbers_ok,
                    support,
                    model,
                    listed,
                    names_ok,
                    scope_ok,
                    copy_ok,
                )
            )
        return self._answered(out, pairs, question)

    def _answered(
        self, scored: list[PairSupport], pairs: Sequence[tuple[str, Chunk]], question: str | None
    ) -> list[PairSupport]:
        """``scored`` with the answer judge's P(yes) as the support of each pair that passes the
        rule checks and whose support already reaches the judge's ``floor``; 0 for the others
        (the judge cannot overrule a wrong number, nor a passage the support model rejects).
        Without a judge or a question, ``scored`` as it is."""
        if self.answer_judge is None or question is None:
            return scored
        floor = self.answer_judge.floor
        asked = [i for i, p in enumerate(scored) if p.checks_ok and p.support >= floor and plain(pairs[i][0])]
        judged = self.answer_judge.probabilities(question, [(plain(pairs[i][0]), pairs[i][1]) for i in asked])
        answer = dict(zip(asked, judged, strict=True))
        return [replace(p, support=answer.get(i, 0.0), answer=answer.get(i)) for i, p in enumerate(scored)]

    def _model_probabilities(self, pairs: Sequence[tuple[str, Chunk]]) -> np.ndarray | None:
        if self.model is None:
            return None
        return self.model.probabilities([(plain(claim), c) for claim, c in pairs])
