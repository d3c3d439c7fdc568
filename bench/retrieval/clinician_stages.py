"""Recall of the answering chunk at each retrieval stage, on the clinician benchmark's dev part.

    python -m bench.retrieval.clinician_stages --out docs/results/clinician/stages_dev.json

For every answerable dev question of ``clinician-default`` (``evals/datasets/clinician.py``) each
first stage fetches 30 candidates; the rank of the first one that answers
(``training.aboutness.answering``) gives recall@5/10/30. Stages: BM25, dense MiniLM, the default
profile's hybrid (RRF); nomic-embed-text-v1.5 by exact cosine and RRF of the three (on the open-
medicine guideline chunks only when embedding the whole index would take over 25 minutes);
hybrid with the corpus's own abbreviations expanded; BM25 with stemmed words
(``rag.reading.terms.stem``); hybrid after ``rewrite`` and ``hyde`` reformulation by the local
generator (on the first 80 answerable questions, by default, shuffled with seed 31; hybrid on the same).

After the reranker (the default profile's cached P(relevant) of the hybrid's 30 candidates,
``DATA_DIR/cache/clinician-evidence.json``): the share of answerable questions whose answering
chunk is kept, per threshold x keep, kept in the retrieval order the default profile uses and
in relevance order; the share of near and far questions with a candidate at or over each
threshold; quartiles of the best candidate's P per kind. Nomic chunk vectors and reformulated
queries are cached under ``DATA_DIR/cache``. The test part is never read.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import GeneratorError
from core.paths import Paths
from core.types import Chunk, Filters, Hit
from evals.datasets.clinician import ClinicianItem, load_clinician
from indexes import text
from indexes.bm25 import Bm25sIndex
from indexes.store import LoadedIndex
from rag.protocols import Retriever
from rag.reading.terms import Vocabulary, stem
from rag.retrieve.hybrid import HybridRetriever
from rag.retrieve.lexical import Bm25Retriever
from rag.retrieve.query import clean_query
from training.aboutness import Candidates, answering, scored_candidates

K = 30
CUTS = (5, 10, 30)
THRESHOLDS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.49)
KEEPS = (3, 4, 6, 8, 10)
GATE = 0.49
GUIDELINE_SOURCE = "open-medicine"
GUIDELINES = Filters(sources=frozenset({GUIDELINE_SOURCE}))
NOMIC_GGUF = Path("/tmp/nomic/nomic-embed-text-v1.5.f16.gguf")
NOMIC_BUDGET_S = 25 * 60
QUERY_PREFIX, DOCUMENT_PREFIX = "search_query: ", "search_document: "
Search = Callable[[str], list[Hit]]
NOTES = (
    "The BM25 tokenizer (indexes/text.py) does not stem. bm25-stemmed: BM25 with the index's k1, b and "
    "method over rag.reading.terms.stem tokens of each chunk's indexed text and of the question; "
    "bm25-stem-query: the question stemmed, the index as built; hybrid-stemmed: RRF of bm25-stemmed "
    "and dense-minilm.",
    "hybrid+abbrev: the long forms of the abbreviations the corpus defines (rag/reading/abbreviations.py, "
    "through the corpus vocabulary) that the question writes in capitals or with a digit, appended in "
    "parentheses; both-ways also appends the short form of a long form the question spells out.",
    "corpus 'guidelines': retrieval filtered before ranking to the open-medicine chunks (BM25 idf still "
    "from the whole index); only answerable questions whose sources are guideline folders count.",
    "Reranker grid: 'retrieval order' keeps what the default profile keeps (rerank.order = retrieval): "
    "the first `keep` candidates in retrieval order with P >= threshold; 'relevance order' keeps the "
    "best P first. Both cut at `keep` after the threshold, as rag/rerank/evidence.py:rerank_and_filter.",
    "mean_s: seconds of retrieval per question on 2 shared CPU cores under nice 19; reformulate_s: "
    "seconds of generation per question, recorded when generated (read from the cache on reruns).",
)


@dataclass
class StageRun:
    """One stage's rank of the first answering candidate per question (None: not in the top 30)."""

    name: str
    corpus: str  # "full" | "guidelines"
    ranks: dict[str, int | None]
    seconds: list[float]
    extra: dict[str, Any] = field(default_factory=dict)

    def summary(self, qids: Sequence[str] | None = None) -> dict[str, Any]:
        keys = list(qids) if qids is not None else list(self.ranks)
        ranks = [self.ranks[q] for q in keys]
        out: dict[str, Any] = {"corpus": self.corpus, "questions": len(ranks)}
        for cut in CUTS:
            out[f"recall@{cut}"] = round(
                sum(r is not None and r <= cut for r in ranks) / max(len(ranks), 1), 4
            )
        out["mean_s"] = round(statistics.fmean(self.seconds), 4) if self.seconds else None
        return {**out, **self.extra}


def via(retriever: Retriever, rewrite: Callable[[str], str]) -> Search:
    """Search ``retriever`` with the question as ``rewrite`` makes it."""

    def search(question: str) -> list[Hit]:
        return retriever.retrieve(rewrite(question), K)

    return search


def first_answering(item: ClinicianItem, hits: Sequence[Hit]) -> int | None:
    return next((n for n, h in enumerate(hits[:K], start=1) if answering(item, h.chunk)), None)


def measure(name: str, items: Sequence[ClinicianItem], search: Search, corpus: str = "full") -> StageRun:
    """Run ``search`` on every item's question (timed), printing progress every 25 questions."""
    run = StageRun(name, corpus, {}, [])
    for n, item in enumerate(items, start=1):
        start = time.perf_counter()
        hits = search(item.question)
        run.seconds.append(time.perf_counter() - start)
        run.ranks[item.qid] = first_answering(item, hits)
        if n % 25 == 0 or n == len(items):
            found = sum(r is not None for r in run.ranks.values())
            print(f"  {name} [{corpus}]: {n}/{len(items)} questions, {found} found in top {K}", flush=True)
    return run


# -- stemmed BM25 ---------------------------------------------------------------------------------


def stemmed_tokens(value: str) -> list[str]:
    return [stem(t) for t in text.tokenize(value)]


class StemmedBm25:
    """BM25 on stemmed tokens: of the chunks too (``both``, an index built for this bench) or of
    the question only, against the index as built (words the corpus writes unstemmed miss)."""

    def __init__(self, index: LoadedIndex, *, both: bool) -> None:
        self.index, self.both = index, both
        self.name = "bm25-stemmed" if both else "bm25-stem-query"
        self.lexical: Any = index.lexical
        if both:
            corpus = [stemmed_tokens(text.indexed_text(c.title, c.section, c.text)) for c in index.chunks]
            self.lexical = Bm25sIndex.build(corpus, index.lexical.params)  # type: ignore[attr-defined]

    def retrieve(self, query: str, k: int, filters: Filters | None = None) -> list[Hit]:
        allowed = self.index.rows_where(filters) if filters else None
        rows, scores = self.lexical.search(stemmed_tokens(clean_query(query)), k, allowed)
        return [
            Hit(chunk=self.index.chunks.get(int(r)), score=float(s), rank=n, retriever=self.name)
            for n, (r, s) in enumerate(zip(rows, scores, strict=True), start=1)
        ]


# -- abbreviation expansion -----------------------------------------------------------------------

_WORD = re.compile(r"[^\W_]+(?:[-/][^\W_]+)*")


def abbreviation_expander(vocabulary: Vocabulary, both_ways: bool) -> Callable[[str], str]:
    """The question with the long forms of the corpus-defined abbreviations it writes (in capitals
    or with a digit: "CAP", "HbA1c", not "cap") appended; ``both_ways`` also adds the short form
    of a long form it spells out."""
    table = vocabulary.abbreviations
    spelled = {short: " " + " ".join(text.tokenize(long)) + " " for short, long in table.items()}

    def expand(question: str) -> str:
        words = " " + " ".join(text.tokenize(question)) + " "
        added: list[str] = []
        for word in _WORD.findall(question):
            key = word.casefold()
            written_as_code = word != word.lower() or any(ch.isdigit() for ch in word)
            if key in table and written_as_code and spelled[key] not in words and table[key] not in added:
                added.append(table[key])
        if both_ways:
            added += [
                s for s, long in spelled.items() if len(long) > 2 and long in words and f" {s} " not in words
            ]
        return f"{question} ({'; '.join(added)})" if added else question

    return expand


# -- nomic-embed-text-v1.5 ------------------------------------------------------------------------


def load_nomic(path: Path, threads: int) -> Any:
    import llama_cpp

    return llama_cpp.Llama(
        model_path=str(path),
        embedding=True,
        n_ctx=2048,
        n_batch=2048,
        n_ubatch=2048,
        n_threads=threads,
        n_threads_batch=threads,
        verbose=False,
    )


def unit(vectors: Any) -> np.ndarray:
    array = np.asarray(vectors, dtype=np.float32)
    return array / np.maximum(np.linalg.norm(array, axis=-1, keepdims=True), 1e-12)


def document_text(chunk: Chunk) -> str:
    return DOCUMENT_PREFIX + text.indexed_text(chunk.title, chunk.section, chunk.text)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def embed_rows(llm: Any, index: LoadedIndex, rows: np.ndarray, cache: Path) -> tuple[np.ndarray, float]:
    """Unit vectors of ``rows`` (cached at ``cache``, float32 .npy; a ``.partial.npy`` beside it
    resumes an interrupted run) and the chunks per second of the embedding done now."""
    if cache.is_file():
        return np.load(cache, allow_pickle=False), float("nan")
    partial = cache.with_suffix(".partial.npy")
    cache.parent.mkdir(parents=True, exist_ok=True)
    done = list(np.load(partial, allow_pickle=False)) if partial.is_file() else []
    start, first = time.perf_counter(), len(done)
    for n in range(first, len(rows)):
        done.append(unit(llm.embed(document_text(index.chunks.get(int(rows[n]))))))
        if (n + 1) % 100 == 0 or n + 1 == len(rows):
            rate = (n + 1 - first) / (time.perf_counter() - start)
            print(f"  nomic: embedded {n + 1}/{len(rows)} chunks ({rate:.2f}/s)", flush=True)
            np.save(partial, np.asarray(done, dtype=np.float32), allow_pickle=False)
    vectors = np.asarray(done, dtype=np.float32)
    np.save(cache, vectors, allow_pickle=False)
    partial.unlink(missing_ok=True)
    return vectors, (len(rows) - first) / max(time.perf_counter() - start, 1e-9)


def embedding_rate(llm: Any, index: LoadedIndex, sample: int = 24) -> float:
    """Chunks per second over ``sample`` chunks spread over the index (after one warm-up)."""
    step = max(len(index.chunks) // sample, 1)
    texts = [document_text(index.chunks.get(r)) for r in range(0, len(index.chunks), step)][:sample]
    llm.embed(texts[0])
    start = time.perf_counter()
    for value in texts:
        llm.embed(value)
    return len(texts) / (time.perf_counter() - start)


class NomicRetriever:
    """Exact cosine between the query's and the embedded chunks' vectors (only those rows)."""

    name = "nomic"

    def __init__(self, llm: Any, index: LoadedIndex, rows: np.ndarray, vectors: np.ndarray) -> None:
        self.llm, self.index, self.rows, self.vectors = llm, index, rows, vectors

    def retrieve(self, query: str, k: int, filters: Filters | None = None) -> list[Hit]:
        vector = unit(self.llm.embed(QUERY_PREFIX + clean_query(query)))
        scores = self.vectors @ vector
        order = np.argsort(-scores, kind="stable")[:k]  # ties: by row
        return [
            Hit(
                chunk=self.index.chunks.get(int(self.rows[i])),
                score=float(scores[i]),
                rank=n,
                retriever="nomic",
            )
            for n, i in enumerate(order, start=1)
        ]


def nomic_setup(
    args: argparse.Namespace, index: LoadedIndex, paths: Paths
) -> tuple[NomicRetriever, dict[str, Any]]:
    """The nomic retriever over the whole index when embedding it fits the 25-minute budget at
    the measured rate, else over the open-medicine guideline chunks; and what was decided."""
    llm = load_nomic(args.nomic_gguf, args.nomic_threads)
    rate = embedding_rate(llm, index)
    full_s = len(index.chunks) / rate
    scope = "full" if full_s <= NOMIC_BUDGET_S else "guidelines"
    mask = index.rows_where(GUIDELINES) if scope == "guidelines" else None
    rows = np.flatnonzero(mask) if mask is not None else np.arange(len(index.chunks))
    sha = file_sha256(args.nomic_gguf)
    fingerprint = str(index.manifest["corpus_fingerprint"])
    cache = paths.cache_dir / "nomic" / f"{fingerprint[:16]}-nomic-v1.5-f16-{sha[:12]}-{scope}.npy"
    print(f"nomic: {rate:.2f} chunks/s, whole index ~{full_s / 60:.0f} min -> scope {scope}", flush=True)
    vectors, rate_now = embed_rows(llm, index, rows, cache)
    info = {
        "gguf": str(args.nomic_gguf),
        "gguf_sha256": sha,
        "threads": args.nomic_threads,
        "probe_chunks_per_s": round(rate, 3),
        "embed_chunks_per_s": None if np.isnan(rate_now) else round(rate_now, 3),
        "whole_index_estimate_min": round(full_s / 60, 1),
        "scope": scope,
        "chunks_embedded": len(rows),
        "vectors": str(cache),
    }
    return NomicRetriever(llm, index, rows, vectors), info


# -- reformulation --------------------------------------------------------------------------------


def reformulation_sample(items: Sequence[ClinicianItem], n: int, seed: int) -> list[ClinicianItem]:
    shuffled = list(items)
    random.Random(seed).shuffle(shuffled)
    return shuffled[:n]


def reformulations(
    pipeline: Any, mode: str, items: Sequence[ClinicianItem], cache: Path
) -> dict[str, dict[str, Any]]:
    """question -> {"query", "seconds", "failed"} for ``mode``, read from ``cache`` (JSON) or
    generated through ``Pipeline._reformulate`` (saved every 25 questions)."""
    stored: dict[str, dict[str, dict[str, Any]]] = json.loads(cache.read_text()) if cache.is_file() else {}
    table = stored.setdefault(mode, {})
    reformulating = pipeline.with_changes({"reformulation": {"kind": mode}})
    todo = [it for it in items if it.question not in table]
    for n, item in enumerate(todo, start=1):
        start = time.perf_counter()
        try:
            query, failed = reformulating._reformulate(item.question)[0], None
        except GeneratorError as exc:  # searched as asked, as the pipeline does
            query, failed = item.question, str(exc)
        table[item.question] = {"query": query, "seconds": time.perf_counter() - start, "failed": failed}
        if n % 25 == 0 or n == len(todo):
            print(f"  {mode}: reformulated {n}/{len(todo)} questions", flush=True)
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text(json.dumps(stored, indent=1))
    return {it.question: table[it.question] for it in items}


def reformulation_runs(
    pipeline: Any, hybrid: Retriever, items: Sequence[ClinicianItem], cache: Path
) -> list[StageRun]:
    runs = []
    for mode in ("rewrite", "hyde"):
        table = reformulations(pipeline, mode, items, cache)
        queries = {question: str(row["query"]) for question, row in table.items()}
        run = measure(f"hybrid+{mode}", items, via(hybrid, queries.__getitem__))
        run.extra = {
            "reformulate_s": round(statistics.fmean(v["seconds"] for v in table.values()), 3),
            "failed": sum(v["failed"] is not None for v in table.values()),
            "sample": "first questions of the answerable dev items shuffled with seed 31",
        }
        runs.append(run)
    return runs


# -- after the reranker ---------------------------------------------------------------------------


def answering_flags(
    items: Sequence[ClinicianItem], candidates: Candidates, index: LoadedIndex
) -> dict[str, list[bool]]:
    by_id = index.chunks.by_id  # type: ignore[attr-defined]
    return {
        it.qid: [answering(it, by_id(c)) for c, _ in candidates[it.question]] for it in items if it.answerable
    }


def kept_positions(scored: Sequence[Sequence[Any]], threshold: float, keep: int, order: str) -> list[int]:
    """Positions (in retrieval order) of the candidates ``rerank_and_filter`` keeps: P >= threshold,
    in retrieval order (the default profile's ``order``) or best P first, up to ``keep``."""
    passing = [n for n, (_, p) in enumerate(scored) if p >= threshold]
    if order == "relevance":
        passing.sort(key=lambda n: (-scored[n][1], n))
    return passing[:keep]


def gate_grid(
    items: Sequence[ClinicianItem], candidates: Candidates, flags: dict[str, list[bool]]
) -> list[dict[str, Any]]:
    answerable = [it for it in items if it.answerable]
    grid = []
    for threshold in THRESHOLDS:
        for keep in KEEPS:
            row: dict[str, Any] = {"threshold": threshold, "keep": keep}
            for order in ("retrieval", "relevance"):
                reached = sum(
                    any(
                        flags[it.qid][n]
                        for n in kept_positions(candidates[it.question], threshold, keep, order)
                    )
                    for it in answerable
                )
                row[f"answer_kept_{order}_order"] = round(reached / len(answerable), 4)
            grid.append(row)
    return grid


def unanswerable_pass(items: Sequence[ClinicianItem], candidates: Candidates) -> dict[str, dict[str, Any]]:
    """Per kind: the share of questions with at least one candidate at or over each threshold."""
    out: dict[str, dict[str, Any]] = {}
    for kind in ("answerable", "near", "far"):
        best = [max(p for _, p in candidates[it.question]) for it in items if it.kind == kind]
        out[kind] = {
            "n": len(best),
            **{f">={t}": round(sum(b >= t for b in best) / len(best), 4) for t in THRESHOLDS},
        }
    return out


def quartiles(values: Sequence[float]) -> dict[str, float]:
    q = np.percentile(np.asarray(values, dtype=np.float64), [0, 25, 50, 75, 100])
    return {
        "n": len(values),
        **{k: round(float(v), 4) for k, v in zip(("min", "q1", "median", "q3", "max"), q, strict=True)},
    }


def best_p_quartiles(
    items: Sequence[ClinicianItem], candidates: Candidates, flags: dict[str, list[bool]]
) -> dict[str, Any]:
    out = {
        kind: quartiles([max(p for _, p in candidates[it.question]) for it in items if it.kind == kind])
        for kind in ("answerable", "near", "far")
    }
    answer_p = [
        max(p for (_, p), hit in zip(candidates[it.question], flags[it.qid], strict=True) if hit)
        for it in items
        if it.answerable and any(flags[it.qid])
    ]
    out["answering_chunk (answerable, when in the 30)"] = quartiles(answer_p)
    return out


def reranker_section(
    items: Sequence[ClinicianItem], candidates: Candidates, index: LoadedIndex, hybrid: StageRun
) -> dict[str, Any]:
    flags = answering_flags(items, candidates, index)
    cached_rank = {q: next((n for n, f in enumerate(v, start=1) if f), None) for q, v in flags.items()}
    return {
        "source": "DATA_DIR/cache/clinician-evidence.json (scored_candidates, profile default)",
        "cache_rank_agrees_with_hybrid_run": sum(cached_rank[q] == hybrid.ranks.get(q) for q in cached_rank),
        "answerable": len(cached_rank),
        "grid": gate_grid(items, candidates, flags),
        "pass_rates": unanswerable_pass(items, candidates),
        "best_p_quartiles": best_p_quartiles(items, candidates, flags),
    }


# -- the stages -----------------------------------------------------------------------------------


def full_corpus_runs(assembled: Any, paths: Paths, items: Sequence[ClinicianItem]) -> list[StageRun]:
    """Stages 1-3, 6 and 7 over the whole default index."""
    from rag.indexing import corpus_vocabulary
    from rag.retrieve.dense import DenseRetriever

    index, hybrid = assembled.index, assembled.pipeline.retriever
    bm25, dense = Bm25Retriever(index), DenseRetriever(index, assembled.embedder)
    stemmed = StemmedBm25(index, both=True)
    vocabulary = corpus_vocabulary(paths, index)
    runs = [
        measure("bm25", items, lambda q: bm25.retrieve(q, K)),
        measure("dense-minilm", items, lambda q: dense.retrieve(q, K)),
        measure("hybrid", items, lambda q: hybrid.retrieve(q, K)),
    ]
    for name, both_ways in (("hybrid+abbrev", False), ("hybrid+abbrev-both-ways", True)):
        expand = abbreviation_expander(vocabulary, both_ways)
        run = measure(name, items, via(hybrid, expand))
        changed = {it.qid: expand(it.question) for it in items if expand(it.question) != it.question}
        run.extra = {"questions_changed": len(changed), "expanded": changed}
        runs.append(run)
    query_only = StemmedBm25(index, both=False)
    stemmed_hybrid = fused([stemmed, dense], assembled.profile)
    runs += [
        measure("bm25-stem-query", items, lambda q: query_only.retrieve(q, K)),
        measure("bm25-stemmed", items, lambda q: stemmed.retrieve(q, K)),
        measure("hybrid-stemmed", items, lambda q: stemmed_hybrid.retrieve(q, K)),
    ]
    return runs


def fused(retrievers: list[Any], profile: Any) -> HybridRetriever:
    r = profile.retrieval
    return HybridRetriever(retrievers, fusion="rrf", rrf_k=r.rrf_k, candidates=r.candidates)


def nomic_runs(
    args: argparse.Namespace, assembled: Any, paths: Paths, items: Sequence[ClinicianItem]
) -> tuple[list[StageRun], dict[str, Any]]:
    """Stages 4 and 5; when nomic embeds only the guideline chunks, stages 1-3 are run again on
    them (filtered before ranking) and only questions answered by a guideline are counted."""
    from rag.retrieve.dense import DenseRetriever

    index = assembled.index
    nomic, info = nomic_setup(args, index, paths)
    bm25, dense = Bm25Retriever(index), DenseRetriever(index, assembled.embedder)
    three = fused([bm25, dense, nomic], assembled.profile)
    if info["scope"] == "full":
        return [
            measure("nomic", items, lambda q: nomic.retrieve(q, K)),
            measure("hybrid+nomic", items, lambda q: three.retrieve(q, K)),
        ], info
    scope = [it for it in items if all(s.startswith(GUIDELINE_SOURCE + ":") for s in it.sources)]
    info["questions"] = f"{len(scope)} answerable dev questions answered by a guideline (HPO ones left out)"
    hybrid = assembled.pipeline.retriever
    searches: list[tuple[str, Search]] = [
        ("bm25", lambda q: bm25.retrieve(q, K, GUIDELINES)),
        ("dense-minilm", lambda q: dense.retrieve(q, K, GUIDELINES)),
        ("hybrid", lambda q: hybrid.retrieve(q, K, GUIDELINES)),
        ("nomic", lambda q: nomic.retrieve(q, K)),
        ("hybrid+nomic", lambda q: three.retrieve(q, K, GUIDELINES)),
    ]
    return [measure(name, scope, search, corpus="guidelines") for name, search in searches], info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="default")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--nomic-gguf", type=Path, default=NOMIC_GGUF, help="skipped when missing")
    parser.add_argument("--nomic-threads", type=int, default=1, help="more collapse under contention")
    parser.add_argument("--reformulation-questions", type=int, default=80, help="0 skips rewrite/hyde")
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument(
        "--limit", type=int, default=None, help="first N answerable questions (a quick check)"
    )
    args = parser.parse_args()
    from rag.assemble import assemble
    from rag.profile import load_profile

    paths = Paths.from_env()
    items = load_clinician(part="dev")
    answerable = [it for it in items if it.answerable][: args.limit]
    assembled = assemble(load_profile(args.profile), paths)
    notes = list(NOTES)
    runs = full_corpus_runs(assembled, paths, answerable)
    nomic: dict[str, Any] = {"skipped": f"no GGUF at {args.nomic_gguf}"}
    if args.nomic_gguf.is_file():
        more, nomic = nomic_runs(args, assembled, paths, answerable)
        runs += more
    stages = {f"{r.name} [{r.corpus}]": {**r.summary(), "ranks": r.ranks} for r in runs}
    if args.reformulation_questions > 0:
        sample = reformulation_sample(answerable, args.reformulation_questions, args.seed)
        cache = paths.cache_dir / f"clinician-reformulations-{args.profile}.json"
        hybrid = next(r for r in runs if r.name == "hybrid" and r.corpus == "full")
        paired = [it.qid for it in sample]
        stages[f"hybrid [full, reformulation sample of {len(sample)}]"] = hybrid.summary(paired)
        for run in reformulation_runs(assembled.pipeline, assembled.pipeline.retriever, sample, cache):
            stages[f"{run.name} [full, reformulation sample of {len(sample)}]"] = {
                **run.summary(),
                "ranks": run.ranks,
            }
    hybrid_full = next(r for r in runs if r.name == "hybrid" and r.corpus == "full")
    candidates = scored_candidates(items, args.profile, paths)
    result = {
        "part": "dev",
        "questions": {k: sum(it.kind == k for it in items) for k in ("answerable", "near", "far")},
        "answerable_measured": len(answerable),
        "k": K,
        "command": "python -m bench.retrieval.clinician_stages " + " ".join(_flags(args)),
        "nomic": nomic,
        "stages": stages,
        "reranker": reranker_section(items, candidates, assembled.index, hybrid_full),
        "notes": notes,
    }
    print(markdown(result))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    assembled.close()


def _flags(args: argparse.Namespace) -> list[str]:
    return [f"--{k.replace('_', '-')} {v}" for k, v in sorted(vars(args).items()) if v is not None]


# -- the report -----------------------------------------------------------------------------------


def markdown(result: dict[str, Any]) -> str:
    lines = ["| stage | corpus / questions | R@5 | R@10 | R@30 | s/question |", "|---|---|---|---|---|---|"]
    for name, s in result["stages"].items():
        extra = f" (+{s['reformulate_s']:.1f} s reformulating)" if "reformulate_s" in s else ""
        lines.append(
            f"| {name.split(' [')[0]} | {s['corpus']} / {s['questions']} | {s['recall@5']:.3f} | "
            f"{s['recall@10']:.3f} | {s['recall@30']:.3f} | {s['mean_s']:.3f}{extra} |"
        )
    rr = result["reranker"]
    lines += ["", "Answering chunk kept (retrieval order, as the default profile / best P first):", ""]
    lines += [
        "| threshold | " + " | ".join(f"keep {k}" for k in KEEPS) + " |",
        "|---" * (len(KEEPS) + 1) + "|",
    ]
    for t in THRESHOLDS:
        rows = [r for r in rr["grid"] if r["threshold"] == t]
        cells = [
            f"{r['answer_kept_retrieval_order']:.3f} / {r['answer_kept_relevance_order']:.3f}" for r in rows
        ]
        lines.append(f"| {t} | " + " | ".join(cells) + " |")
    lines += ["", "Questions with a candidate at or over the threshold:", ""]
    lines += [
        "| kind | n | " + " | ".join(f">= {t}" for t in THRESHOLDS) + " |",
        "|---" * (len(THRESHOLDS) + 2) + "|",
    ]
    for kind, row in rr["pass_rates"].items():
        lines.append(
            f"| {kind} | {row['n']} | " + " | ".join(f"{row[f'>={t}']:.3f}" for t in THRESHOLDS) + " |"
        )
    lines += [
        "",
        "Best candidate P per kind:",
        "",
        "| kind | n | min | q1 | median | q3 | max |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, q in rr["best_p_quartiles"].items():
        lines.append(
            f"| {kind} | {q['n']} | "
            + " | ".join(f"{q[k]:.3f}" for k in ("min", "q1", "median", "q3", "max"))
            + " |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
