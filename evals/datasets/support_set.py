"""A labelled support set from BioASQ: does this passage support this sentence?

Built from ``bioasq_from_mirage`` in the shared data, split by question and by year:

- **test**: every BioASQ Task 11B question (the project's BioASQ test year);
- **dev**: a seeded sample of Task 7B-10B questions, for choosing thresholds; a question whose
  normalised text also occurs in 11B is left out of dev (``training.leakage.normalise``).

Per question, the claims are the first ``claims_per_question`` sentences (six words or more) of
its first ideal answer, a leading "Yes."/"No." removed; its passage is its gold snippets
(title and abstract per PubMed id, in the order BioASQ lists them) joined into one text. Pairs:

- ``own`` (label 1): a claim against its own question's passage. Label noise: an ideal answer
  may say more than its snippets (expert curators wrote it from them, and from knowledge);
- ``other`` (0): the claim against a randomly drawn other question's passage;
- ``near`` (0): against the passage of the other question of the same split whose text is most
  similar (embedding cosine), sharing no PubMed id with it: same topic, another claim;
- ``number``, ``negation``, ``antonym``, ``entity`` (0): the claim changed so that its own passage
  no longer supports it (a number doubled, a negation added or removed, a direction word
  flipped, the question's exact answer swapped for another question's), against its own passage.

Passages and claims come from the shared data and are never written to the repository; results
keep question ids, kinds and scores only.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import SourceError
from core.types import Chunk
from corpora.sources.base import iter_jsonl
from evals.datasets.bioasq import bioasq_rows, normalise
from rag.generate.sentences import sentence_spans

KINDS = ("own", "other", "near", "number", "negation", "antonym", "entity")
PERTURBATIONS = ("number", "negation", "antonym", "entity")
TEST_TASK = "Task11B"
DEV_TASKS = ("Task7B", "Task8B", "Task9B", "Task10B")


@dataclass(frozen=True)
class SupportPair:
    """One labelled (claim, passage) pair; ``passage`` is a Chunk so the verifier reads it as usual."""

    qid: str
    split: str  # "dev" | "test"
    kind: str  # one of KINDS
    label: int  # 1: supported
    claim: str
    passage: Chunk


@dataclass(frozen=True)
class Question:
    qid: str
    split: str
    body: str
    claims: tuple[str, ...]
    exact: tuple[str, ...]  # exact-answer strings (factoid and list questions)
    pmids: frozenset[str]
    passage: Chunk


# --- perturbations: each returns the changed claim, or None when the rule does not apply -------

_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.]*\d)")
_NEGATED = re.compile(
    r"\b(is|are|was|were|does|do|did|can|could|may|might|should|will|would|has|have|had)"
    r" not\b",
    re.IGNORECASE,
)
_NOT_CONTRACTED = re.compile(r"\b(is|are|was|were|does|do|did|has|have|had)n't\b", re.IGNORECASE)
_AUXILIARY = re.compile(r"\b(is|are|was|were|can|could|may|might|should|will|would)\b", re.IGNORECASE)
_ANTONYMS = {
    "increase": "decrease",
    "increases": "decreases",
    "increased": "decreased",
    "increasing": "decreasing",
    "higher": "lower",
    "high": "low",
    "upregulated": "downregulated",
    "up-regulated": "down-regulated",
    "upregulates": "downregulates",
    "activates": "inhibits",
    "activation": "inhibition",
    "activator": "inhibitor",
    "agonist": "antagonist",
    "positive": "negative",
    "benign": "malignant",
    "dominant": "recessive",
    "gain": "loss",
    "more": "less",
    "improves": "worsens",
    "improved": "worsened",
    "overexpression": "underexpression",
    "overexpressed": "underexpressed",
    "induces": "suppresses",
    "promotes": "suppresses",
    "better": "worse",
    "longer": "shorter",
    "larger": "smaller",
}
_ANTONYMS.update({b: a for a, b in list(_ANTONYMS.items()) if b not in _ANTONYMS})
_ANTONYM = re.compile(
    r"\b(" + "|".join(sorted(map(re.escape, _ANTONYMS), key=len, reverse=True)) + r")\b", re.IGNORECASE
)


def change_number(claim: str) -> str | None:
    """The first number doubled (``0`` -> ``1``): ``"22 breaths"`` -> ``"44 breaths"``."""
    match = _NUMBER.search(claim)
    if not match:
        return None
    text = match.group(1)
    if "." in text:
        decimals = len(text.split(".")[1])
        new = f"{float(text) * 2:.{decimals}f}"
    else:
        new = str(int(text) * 2 or 1)
    return claim[: match.start(1)] + new + claim[match.end(1) :]


def change_negation(claim: str) -> str | None:
    """A negation removed (``"is not"`` -> ``"is"``), or one added after the first auxiliary."""
    for pattern, repl in ((_NEGATED, r"\1"), (_NOT_CONTRACTED, r"\1")):
        if pattern.search(claim):
            return pattern.sub(repl, claim, count=1)
    if _AUXILIARY.search(claim):
        return _AUXILIARY.sub(r"\1 not", claim, count=1)
    return None


def change_direction(claim: str) -> str | None:
    """The first direction word flipped (increased -> decreased, dominant -> recessive, ...)."""
    match = _ANTONYM.search(claim)
    if not match:
        return None
    word = match.group(1)
    new = _ANTONYMS[word.lower()]
    new = new.capitalize() if word[0].isupper() else new
    return claim[: match.start(1)] + new + claim[match.end(1) :]


def change_entity(claim: str, exact: Sequence[str], replacement: str) -> str | None:
    """The question's exact answer (the key entity) replaced by another question's."""
    for answer in exact:
        if len(answer) >= 3 and answer.lower() != replacement.lower():
            pattern = re.compile(r"(?<!\w)" + re.escape(answer) + r"(?!\w)", re.IGNORECASE)
            if pattern.search(claim):
                return pattern.sub(replacement, claim)
    return None


# --- reading BioASQ ------------------------------------------------------------------------------


def claims_of(ideal: object, limit: int) -> tuple[str, ...]:
    answers = ideal if isinstance(ideal, list) else [ideal]
    text = " ".join(str(answers[0]).split()) if answers and answers[0] else ""
    text = re.sub(r"^(yes|no)\s*[.,:;]\s*", "", text, flags=re.IGNORECASE)
    sentences = [text[s:e].strip() for s, e in sentence_spans(text)]
    return tuple(s for s in sentences if len(s.split()) >= 6)[:limit]


def exact_answers(row: dict[str, Any]) -> tuple[str, ...]:
    if row.get("type") not in ("factoid", "list"):
        return ()
    values: list[str] = []
    for item in row.get("exact_answer") or []:
        values.extend(str(v) for v in (item if isinstance(item, list) else [item]))
    return tuple(v.strip() for v in values if v.strip())


def read_snippets(source_data: Path) -> dict[str, dict[str, str]]:
    path = source_data / "bioasq_from_mirage" / "snippet_corpus.jsonl"
    if not path.is_file():
        raise SourceError(
            f"BioASQ snippet corpus not found at {path}; point MEDCITE_SOURCE_DATA at the shared data"
        )
    return {str(row["_id"]): row for _, row in iter_jsonl(path)}


def article_texts(snippet_ids: Iterable[str], snippets: dict[str, dict[str, str]]) -> tuple[str, ...]:
    """One "title. abstract" text per PubMed article, in the order the snippets list them."""
    by_pmid: dict[str, dict[str, str]] = {}
    for sid in snippet_ids:
        row = snippets.get(sid)
        if row:
            by_pmid.setdefault(row["pmid"], {})[row["section"]] = " ".join(row["text"].split())
    parts = [
        ". ".join(p for p in (s.get("title", "").rstrip("."), s.get("abstract", "")) if p)
        for s in by_pmid.values()
    ]
    return tuple(p for p in parts if p)


def gold_passage(qid: str, snippet_ids: Sequence[str], snippets: dict[str, dict[str, str]]) -> Chunk | None:
    text = "\n\n".join(article_texts(snippet_ids, snippets))
    if not text:
        return None
    return Chunk(f"support:{qid}#0", f"support:{qid}", "", (), "bioasq", "", "", 0, len(text), text)


def read_questions(
    source_data: Path, *, dev_questions: int = 300, claims_per_question: int = 2, seed: int = 13
) -> list[Question]:
    """Test (all of 11B) and dev (a seeded 7B-10B sample) questions with claims and a passage."""
    rows = bioasq_rows(source_data)
    snippets = read_snippets(source_data)
    test_texts = {normalise(str(r["body"])) for r in rows if r["task"] == TEST_TASK}
    out: list[Question] = []
    dev_pool: list[Question] = []
    for raw in rows:
        row: dict[str, Any] = dict(raw)
        split = "test" if row["task"] == TEST_TASK else "dev" if row["task"] in DEV_TASKS else None
        if split is None or (split == "dev" and normalise(str(row["body"])) in test_texts):
            continue
        claims = claims_of(row.get("ideal_answer"), claims_per_question)
        passage = gold_passage(str(row["id"]), [str(s) for s in row.get("snippet_ids", [])], snippets)
        if not claims or passage is None:
            continue
        question = Question(
            str(row["id"]),
            split,
            str(row["body"]),
            claims,
            exact_answers(row),
            frozenset(str(p) for p in row.get("pmids", [])),
            passage,
        )
        (out if split == "test" else dev_pool).append(question)
    dev_pool.sort(key=lambda q: q.qid)
    out.extend(random.Random(seed).sample(dev_pool, min(dev_questions, len(dev_pool))))
    return out


def build_pairs(
    questions: Sequence[Question], nearest: Callable[[Sequence[Question]], dict[str, str]], seed: int = 13
) -> list[SupportPair]:
    """Every pair kind for every claim; ``nearest`` maps a qid to its most similar other question
    (of the same split, sharing no PubMed id) and is given one split at a time."""
    rng = random.Random(seed)
    pairs: list[SupportPair] = []
    for split in ("dev", "test"):
        group = [q for q in questions if q.split == split]
        by_id = {q.qid: q for q in group}
        near = nearest(group)
        entities = sorted({e for q in group for e in q.exact if len(e) >= 3})
        for q in group:
            others = [o for o in group if o.qid != q.qid and not (o.pmids & q.pmids)]
            for claim in q.claims:
                entity = None
                candidates = [e for e in entities if e.lower() not in q.passage.text.lower()]
                if q.exact and candidates:
                    entity = change_entity(claim, q.exact, rng.choice(candidates))
                made: list[tuple[str, str | None, Chunk]] = [
                    ("own", claim, q.passage),
                    ("other", claim, rng.choice(others).passage),
                    (
                        "near",
                        claim if q.qid in near else None,
                        by_id[near[q.qid]].passage if q.qid in near else q.passage,
                    ),
                    ("number", change_number(claim), q.passage),
                    ("negation", change_negation(claim), q.passage),
                    ("antonym", change_direction(claim), q.passage),
                    ("entity", entity, q.passage),
                ]
                for kind, text, passage in made:
                    if text is not None and (text != claim or kind not in PERTURBATIONS):
                        pairs.append(SupportPair(q.qid, split, kind, int(kind == "own"), text, passage))
    return pairs


def nearest_by_embedding(embed: Callable[[list[str]], Any]) -> Callable[[Sequence[Question]], dict[str, str]]:
    """``nearest`` for :func:`build_pairs` from an embedding function (normalised vectors)."""

    def nearest(group: Sequence[Question]) -> dict[str, str]:
        if len(group) < 2:
            return {}
        vectors = embed([q.body for q in group])
        similarity = vectors @ vectors.T
        out = {}
        for i, q in enumerate(group):
            for j in similarity[i].argsort()[::-1]:
                if j != i and not (group[j].pmids & q.pmids):
                    out[q.qid] = group[j].qid
                    break
        return out

    return nearest
