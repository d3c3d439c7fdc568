"""Training and validation pairs for the relevance model, from the shared data.

BioASQ (Task 7B-10B; Task 11B is the test split and never read here): each question is searched
in the ``bioasq-snippets`` index with the project's hybrid retriever, exactly as at query time.
Labels are document-level: a chunk of a gold snippet is relevant. Hard negatives are retrieved
chunks that are not gold and come from no gold snippet's abstract (same PMID), since an
unjudged sentence of a relevant abstract is often relevant too. Gold chunks that retrieval
missed are added as positives. Questions are split train/validation by a seeded hash of the
question id; validation keeps each question's whole candidate list (with retrieval ranks) for
calibration and model choice.

MedQuAD (train only): a question -> its answer; negatives are answers about the same focus to
other question types (the usual confusion of consumer-health search). Answers that TREC
LiveQA-Med judged are left out, so the LiveQA test documents are never trained on, and so are
the question pools the abstention benchmarks draw from (``training.leakage.benchmark_pools``).

Every held-out question (``training.leakage``) is removed first; the counts go to the manifest.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from evals.datasets.bioasq import bioasq_rows, normalise
from rag.rerank.evidence import passage_text
from training.leakage import HeldOut, benchmark_pools, duplicated

TRAIN_TASKS = ("Task7B", "Task8B", "Task9B", "Task10B")


@dataclass(frozen=True)
class PairConfig:
    seed: int = 13
    validation_share: float = 0.1
    candidates: int = 30  # hybrid hits per question (the reranker's input size at query time)
    positives: int = 4  # per question, gold chunks kept for training
    negatives: int = 8  # per question, hard negatives kept for training (best-ranked first)
    medquad_questions: int = 3000  # MedQuAD questions sampled for training (0: none)
    medquad_negatives: int = 2


@dataclass
class PairStats:
    questions: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    pairs: dict[str, int] = field(default_factory=dict)


def split_of(qid: str, seed: int, validation_share: float) -> str:
    """``"validation"`` for a stable ``validation_share`` of question ids, else ``"train"``."""
    digest = hashlib.sha256(f"{seed}:{qid}".encode()).digest()
    return "validation" if int.from_bytes(digest[:8], "big") / 2**64 < validation_share else "train"


def bioasq_training_questions(source_data: Path, held_out: HeldOut, stats: PairStats) -> list[dict[str, Any]]:
    """Task 7B-10B questions minus held-out and duplicated texts (counted in ``stats``)."""
    rows = bioasq_rows(source_data)
    dups = duplicated(str(r["body"]) for r in rows)
    banned = held_out.all()
    kept = []
    for row in rows:
        if row["task"] not in TRAIN_TASKS:
            continue
        text = normalise(str(row["body"]))
        if text in dups:
            stats.dropped["bioasq_duplicated"] = stats.dropped.get("bioasq_duplicated", 0) + 1
        elif text in banned:
            stats.dropped["bioasq_in_evaluation_sets"] = stats.dropped.get("bioasq_in_evaluation_sets", 0) + 1
        else:
            kept.append(row)
    return kept


def _validation_record(qid: str, question: str, hits: Sequence[Any], gold: set[str]) -> dict[str, Any]:
    """A validation question with its ranked candidate passages, each labelled by its gold document."""
    return {
        "qid": qid,
        "question": question,
        "candidates": [
            {
                "chunk_id": h.chunk.chunk_id,
                "doc_id": h.chunk.doc_id,
                "rank": n,
                "passage": passage_text(h.chunk),
                "label": int(h.chunk.doc_id in gold),
            }
            for n, h in enumerate(hits, start=1)
        ],
        "gold": sorted(gold),
    }


def bioasq_pairs(
    rows: list[dict[str, Any]], index: Any, retriever: Any, config: PairConfig, stats: PairStats
) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(split, record)``: train records are single pairs, validation records candidate lists."""
    from corpora.sources.bioasq import qrels_doc_id

    chunks_of: dict[str, list[Any]] = defaultdict(list)
    pmid_of: dict[str, str] = {}
    for chunk in index.chunks:
        chunks_of[chunk.doc_id].append(chunk)
    for doc_id, doc_chunks in chunks_of.items():
        pmid_of[doc_id] = doc_chunks[0].url.rstrip("/").rsplit("/", 1)[-1]
    rng = random.Random(config.seed)
    for row in tqdm(rows, desc="bioasq pairs", unit="q", dynamic_ncols=True):
        qid, question = str(row["id"]), " ".join(str(row["body"]).split())
        gold = {qrels_doc_id(s) for s in row.get("snippet_ids", [])} & set(chunks_of)
        if not gold:
            stats.dropped["bioasq_no_gold_in_index"] = stats.dropped.get("bioasq_no_gold_in_index", 0) + 1
            continue
        gold_pmids = {pmid_of[d] for d in gold}
        hits = retriever.retrieve(question, config.candidates)
        split = split_of(qid, config.seed, config.validation_share)
        stats.questions[f"bioasq_{split}"] = stats.questions.get(f"bioasq_{split}", 0) + 1
        if split == "validation":
            yield split, _validation_record(qid, question, hits, gold)
            continue
        ranked_pos = [h.chunk for h in hits if h.chunk.doc_id in gold]
        ranked_ids = {x.chunk_id for x in ranked_pos}
        missed = [c for d in sorted(gold) for c in chunks_of[d] if c.chunk_id not in ranked_ids]
        positives = (ranked_pos + rng.sample(missed, len(missed)))[: config.positives]
        negatives = [
            h.chunk for h in hits if h.chunk.doc_id not in gold and pmid_of[h.chunk.doc_id] not in gold_pmids
        ][: config.negatives]
        for label, group in ((1, positives), (0, negatives)):
            for chunk in group:
                yield (
                    "train",
                    {
                        "qid": qid,
                        "question": question,
                        "passage": passage_text(chunk),
                        "label": label,
                        "origin": "bioasq",
                    },
                )


def medquad_eligible(
    docs: list[Any], held_out: HeldOut, liveqa_docs: set[str], stats: PairStats
) -> tuple[list[Any], set[str]]:
    """MedQuAD answers whose question training may read (with another answer of the same focus,
    for negatives), and the ids of the benchmark pools' answers; drops are counted in ``stats``."""
    from corpora.sources.medquad import collection_prefix

    by_focus = Counter(doc.title.casefold() for doc in docs)
    pools = benchmark_pools()
    pooled = [d for d in docs if (collection_prefix(d.doc_id), d.metadata.get("qtype")) in pools]
    # the same question text also occurs in other collections ("What are the treatments for X ?")
    banned_texts = {normalise(d.metadata.get("question", "")) for d in pooled}
    banned, skipped = held_out.all(), {d.doc_id for d in pooled}
    eligible = []
    for doc in docs:
        text = normalise(doc.metadata.get("question", ""))
        reason = (
            "medquad_benchmark_pools"
            if doc.doc_id in skipped or text in banned_texts
            else "medquad_liveqa_judged"
            if doc.doc_id in liveqa_docs
            else "medquad_in_evaluation_sets"
            if text in banned
            else None
        )
        if reason:
            stats.dropped[reason] = stats.dropped.get(reason, 0) + 1
        elif by_focus[doc.title.casefold()] > 1:
            eligible.append(doc)
    return eligible, skipped


def medquad_training_sample(eligible: list[Any], config: PairConfig, rng: random.Random) -> list[Any]:
    """The ``config.medquad_questions`` answers training reads, drawn first from
    ``Random(config.seed)``; the other eligible answers were never seen."""
    return rng.sample(eligible, min(config.medquad_questions, len(eligible)))


def medquad_pairs(
    source_data: Path, held_out: HeldOut, liveqa_docs: set[str], config: PairConfig, stats: PairStats
) -> Iterator[tuple[str, dict[str, Any]]]:
    """MedQuAD question -> answer pairs with same-focus negatives (train split only)."""
    from corpora.chunking import ChunkerConfig, WordpieceSpans, chunk_document
    from corpora.sources.medquad import MedQuADSource
    from indexes.dense.embedder import packaged_minilm_dir

    if config.medquad_questions <= 0:
        return
    docs = [d for d in MedQuADSource(source_data / "medquad").documents()]
    by_focus: dict[str, list[Any]] = defaultdict(list)
    for doc in docs:
        by_focus[doc.title.casefold()].append(doc)
    eligible, skipped = medquad_eligible(docs, held_out, liveqa_docs, stats)
    rng = random.Random(config.seed)
    chosen = medquad_training_sample(eligible, config, rng)
    spans, chunker = WordpieceSpans(packaged_minilm_dir() / "tokenizer.json"), ChunkerConfig()
    first_chunk = {}
    for doc in chosen:
        others = [
            o
            for o in by_focus[doc.title.casefold()]
            if o.doc_id != doc.doc_id and o.doc_id not in liveqa_docs
        ]
        others = [
            o
            for o in others
            if o.metadata.get("qtype") != doc.metadata.get("qtype") and o.doc_id not in skipped
        ]
        group = [(1, doc), *((0, o) for o in rng.sample(others, min(config.medquad_negatives, len(others))))]
        for label, d in group:
            if d.doc_id not in first_chunk:
                first_chunk[d.doc_id] = chunk_document(d, spans, chunker)[0]
            yield (
                "train",
                {
                    "qid": doc.doc_id,
                    "question": doc.metadata["question"],
                    "passage": passage_text(first_chunk[d.doc_id]),
                    "passage_doc": d.doc_id,
                    "label": label,
                    "origin": "medquad",
                },
            )
        stats.questions["medquad_train"] = stats.questions.get("medquad_train", 0) + 1


def liveqa_judged_documents(source_data: Path) -> set[str]:
    """MedQuAD doc ids that TREC LiveQA-Med judged (any grade): never trained on."""
    from evals.datasets.liveqa import QRELS, read_judgements

    judgements, _dropped = read_judgements(source_data / "medquad" / QRELS)
    return {doc for _qid, doc, _grade in judgements}


def write_pairs(records: Iterator[tuple[str, dict[str, Any]]], folder: Path, stats: PairStats) -> None:
    """Append records to ``folder/{train,validation}.jsonl``; count pairs per split and origin."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {s: (folder / f"{s}.jsonl").open("w", encoding="utf-8") for s in ("train", "validation")}
    try:
        for split, record in records:
            files[split].write(json.dumps(record, ensure_ascii=False) + "\n")
            key = f"{split}_{record.get('origin', 'bioasq')}"
            stats.pairs[key] = stats.pairs.get(key, 0) + len(record.get("candidates", [None]))
    finally:
        for fh in files.values():
            fh.close()
