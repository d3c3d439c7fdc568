"""Answerable and unanswerable clinical questions for the default index (``abstention-default``).

Both halves are real MedQuAD questions (NIH, CC BY 4.0), told apart by what the index holds:

- **answerable**: GARD/GHR "What are the symptoms of X?" questions whose focus X is, after
  normalising, the title of an HPO disease reference in the index (each lists the disease's
  clinical features); one question per disease. MedQuAD's own answer is the reference.
- **unanswerable**: MedlinePlus drug questions (how to use it and the dose, side effects,
  precautions, overdose, a forgotten dose) about drugs the index never names: the first word of
  its first word (``"Abatacept Injection"`` -> ``"abatacept"``) occurs in any chunk's title or
  text. The answering documents (MedlinePlus drug monographs) are not in the default corpus, so
  a cited answer to one of these is made up or borrowed from an unrelated passage: exactly the
  wrong, cited dose the support gate exists to stop. One question per drug, question types
  drawn in turn.

Two parts share no disease, drug or question: ``test`` (``abstention-default``, the reported
numbers) and ``dev`` (``abstention-default-dev``, where the default profile's evidence threshold
was chosen; ``bench/answers/evidence_threshold.py``). No question of these pools
(:data:`DRAWN_FROM`) is a training pair (``training.leakage.benchmark_pools``; a test asserts it;
the history: docs/results/module_history.md). The answerable half is easy on purpose for
retrieval (the disease name is the chunk title), so it measures whether the gate lets supported
answers through. The pools are sorted by MedQuAD id and shuffled with a fixed seed, then
interleaved, so a partial run holds both halves.
"""

from __future__ import annotations

import random
from pathlib import Path

from core.errors import ConfigError, SourceError
from core.paths import Paths
from core.types import Chunk
from corpora.sources.base import iter_jsonl
from evals.datasets.bioasq import normalise
from evals.datasets.freetext import FreeTextItem

NAME = "abstention-default"
INDEX = "default"
DRUG_TYPES = ("usage", "side effects", "precautions", "emergency or overdose", "forget a dose")
DISEASE_SOURCES = ("GARD", "GHR")
# The MedQuAD (collection, question type) pools the items are drawn from: training never reads
# them (training.leakage.benchmark_pools), so no item can be a training question.
DRAWN_FROM = frozenset({(s, "symptoms") for s in DISEASE_SOURCES} | {("MPlusDrugs", t) for t in DRUG_TYPES})


def _medquad_rows(source_data: Path) -> list[dict[str, str]]:
    path = source_data / "medquad" / "medquad_qa.jsonl.gz"
    if not path.is_file():
        raise SourceError(f"MedQuAD not found at {path}; point MEDCITE_SOURCE_DATA at the shared data")
    return [row for _, row in iter_jsonl(path)]


Halves = tuple[list[FreeTextItem], list[FreeTextItem]]


def split_questions(
    rows: list[dict[str, str]],
    titles: set[str],
    corpus_words: set[str],
    per_half: int,
    seed: int,
    part: str = "test",
) -> Halves:
    """``(answerable, unanswerable)``, ``per_half`` of each (fewer if the pools are smaller).

    ``titles``: normalised titles of the index's disease references; ``corpus_words``: every
    word of every chunk's normalised title and text. A drug is unnamed when the first word of its
    name is not among them (so neither is the whole name). Each pool is shuffled with ``seed``;
    ``part="test"`` takes the first ``per_half`` diseases and drugs, ``part="dev"`` the next
    ``per_half``, so the two parts share no disease, no drug and no question.
    """
    if part not in ("test", "dev"):
        raise ValueError(f"part must be 'test' or 'dev', got {part!r}")
    answerable: dict[str, FreeTextItem] = {}
    by_drug: dict[str, list[dict[str, str]]] = {}
    for row in sorted(rows, key=lambda r: (r["source"], r["qid"])):
        focus = normalise(row.get("focus", ""))
        if not focus:
            continue
        if (row["source"], row["qtype"]) not in DRAWN_FROM:
            continue
        if row["source"] in DISEASE_SOURCES:
            if focus in titles:
                qid = f"{row['source']}:{row['qid']}"  # MedQuAD's ids repeat across its collections
                question = " ".join(row["question"].split())
                answerable.setdefault(
                    focus, FreeTextItem(NAME, qid, question, row.get("answer") or None, answerable=True)
                )
        else:
            head = focus.split()[0]
            if len(head) >= 4 and head not in corpus_words:
                by_drug.setdefault(focus, []).append(row)
    rng = random.Random(seed)
    diseases, drugs = sorted(answerable), sorted(by_drug)
    rng.shuffle(diseases)
    rng.shuffle(drugs)
    start = 0 if part == "test" else per_half
    yes = [answerable[d] for d in diseases[start : start + per_half]]
    no = []
    for n, drug in enumerate(drugs[start : start + per_half]):
        wanted = DRUG_TYPES[n % len(DRUG_TYPES)]
        rows_of = by_drug[drug]
        row = next((r for r in rows_of if r["qtype"] == wanted), rows_of[0])
        no.append(
            FreeTextItem(
                NAME,
                f"{row['source']}:{row['qid']}",
                " ".join(row["question"].split()),
                None,
                answerable=False,
            )
        )
    return yes, no


def default_index_chunks(paths: Paths, dataset: str) -> list[Chunk]:
    """Every chunk of the ``default`` index, which ``dataset``'s questions are defined against."""
    from rag.indexing import open_index

    if not (paths.indexes_dir / INDEX).exists():
        raise ConfigError(f"{dataset} is defined against the {INDEX!r} index; build it: medcite index build")
    index, _ = open_index(paths, INDEX, with_embedder=False)
    try:
        return list(index.chunks)
    finally:
        index.close()


def load_abstention(
    paths: Paths, part: str = "test", per_half: int = 100, seed: int = 13
) -> list[FreeTextItem]:
    """One part (``test`` or ``dev``) for the ``default`` index, the halves interleaved."""
    chunks = default_index_chunks(paths, NAME)
    titles = {normalise(c.title) for c in chunks if c.source == "hpo"}
    corpus_words = {word for c in chunks for word in normalise(f"{c.title} {c.text}").split()}
    yes, no = split_questions(_medquad_rows(paths.source_data), titles, corpus_words, per_half, seed, part)
    mixed = [item for pair in zip(yes, no, strict=False) for item in pair]
    return mixed + yes[len(no) :] + no[len(yes) :]
