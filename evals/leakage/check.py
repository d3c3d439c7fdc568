"""Benchmark leakage: does an index hold an item's question or gold answer passage near-verbatim?

A RAG arm that retrieves the very passage a question was written from (BioASQ's gold snippets
in ``bioasq-distractors``, a PubMedQA abstract) measures lookup, not reasoning; the report
splits accuracy and help/harm into *leaked* and *clean* items so that shows.

**Text.** Lower case, words = runs of letters and digits (:func:`tokens`). A probe is an item's
question (without the option texts, short generic phrases that would match by chance) or one of
its gold passages (:mod:`evals.datasets.gold_passages`). Texts longer than :data:`WINDOW` words
are cut into near-equal windows of 32-96 words, each its own probe, so one chunk can hold a
whole probe.

**Score.** Word 8-gram shingles (a probe of 4..7 words is one shingle of its whole length; under
4 words it is not checked; a gold passage needs 8). The containment of probe P in chunk C is
``|shingles(P) ∩ shingles(C)| / |shingles(P)|``; an item is *leaked* when its question or any
gold passage reaches :data:`DEFAULT_THRESHOLD` (0.5) in a single chunk: half of a probe's 8-word
sequences verbatim in one passage is far above chance (the measured score distributions:
docs/results/leakage/README.md, docs/results/module_history.md).

**Scan** (:func:`scan_chunks`, :func:`check_index`): exact and memory-light, one pass over
the chunks. Every probe shingle is hashed to 64 bits (each word by blake2b-8, stable across
processes unlike Python's salted ``hash``, combined by a fixed polynomial) into sorted arrays
``hash -> probe ids``; chunks are streamed and only their shingles found there are counted. At
~10^6 probe and ~10^8 chunk shingles the expected number of 64-bit collisions is below 10^-5.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evals.datasets.gold_passages import GoldLookup, original_set
from evals.metrics.choice import wilson_interval
from evals.types import McqItem

DEFAULT_N = 8
DEFAULT_THRESHOLD = 0.5
MIN_TOKENS = 4
WINDOW = 64  # words per probe window (near-equal windows of 32-96 words)
SENSITIVITY = (0.3, 0.5, 0.8)  # thresholds whose rates every report also gives
MAX_CHUNK_IDS = 10  # matching chunk ids kept per item and kind (the count is kept in full)
_WORD = re.compile(r"[^\W_]+")
_PRIME = np.uint64(0x100000001B3)  # FNV-64 prime, odd: the polynomial that combines word hashes


def tokens(text: str) -> list[str]:
    """Lower-cased alphanumeric words: ``"Is X-1 safe?" -> ["is", "x", "1", "safe"]``."""
    return _WORD.findall(text.lower())


def shingles(words: Sequence[str], n: int = DEFAULT_N) -> set[tuple[str, ...]]:
    """Word n-grams; a text of ``MIN_TOKENS``..n-1 words is one shingle of its whole length,
    a shorter one has none."""
    if len(words) < MIN_TOKENS:
        return set()
    if len(words) < n:
        return {tuple(words)}
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def containment(probe: str, chunk: str, n: int = DEFAULT_N) -> float:
    """Share of the probe's shingles found in the chunk (0 for an unchecked short probe).

    The reference definition; :func:`scan_chunks` computes the same over hashes. A short probe's
    single shingle of k < n words is looked for among the chunk's k-grams.
    """
    mine = shingles(tokens(probe), n)
    if not mine:
        return 0.0
    k = len(next(iter(mine)))
    theirs = {s for s in shingles(tokens(chunk), k) if len(s) == k}
    return len(mine & theirs) / len(mine)


def windows(words: Sequence[str], size: int = WINDOW) -> list[list[str]]:
    """Near-equal consecutive pieces of about ``size`` words (one piece up to 1.5 x size)."""
    count = max(1, round(len(words) / size))
    bounds = [round(i * len(words) / count) for i in range(count + 1)]
    return [list(words[bounds[i] : bounds[i + 1]]) for i in range(count)]


class WordHasher:
    """blake2b-8 of each word as uint64, cached (a corpus has ~10^6 distinct words)."""

    def __init__(self) -> None:
        self._cache: dict[str, int] = {}

    def __call__(self, words: Sequence[str]) -> np.ndarray:
        cache = self._cache
        out = np.empty(len(words), dtype=np.uint64)
        for i, word in enumerate(words):
            value = cache.get(word)
            if value is None:
                digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
                value = cache[word] = int.from_bytes(digest, "little")
            out[i] = value
        return out


def shingle_hashes(word_hashes: np.ndarray, k: int) -> np.ndarray:
    """The 64-bit hash of every k-word window: sum of word hash x PRIME^(k-1-j), modulo 2^64."""
    count = len(word_hashes) - k + 1
    if count < 1:
        return np.empty(0, dtype=np.uint64)
    out = np.zeros(count, dtype=np.uint64)
    for j in range(k):
        out = out * _PRIME + word_hashes[j : j + count]
    return out


@dataclass(frozen=True)
class Probe:
    item: int  # position in the scanned item list
    kind: str  # "question" or "gold"
    k: int  # shingle length (n, or the whole probe when shorter)
    hashes: np.ndarray  # distinct shingle hashes


def make_probes(
    index: int, kind: str, text: str, hasher: WordHasher, n: int = DEFAULT_N, min_tokens: int = MIN_TOKENS
) -> list[Probe]:
    """The probes of one text (none when it has under ``min_tokens`` words)."""
    out = []
    for piece in windows(tokens(text)):
        if len(piece) < min_tokens:
            continue
        k = min(n, len(piece))
        out.append(Probe(index, kind, k, np.unique(shingle_hashes(hasher(piece), k))))
    return out


@dataclass
class _Table:
    """Sorted probe shingle hashes of one shingle length, each with its probe ids (CSR)."""

    keys: np.ndarray
    starts: np.ndarray
    probe_ids: np.ndarray

    @classmethod
    def build(cls, hashes: list[np.ndarray], ids: list[int]) -> _Table:
        flat = np.concatenate(hashes)
        owners = np.concatenate(
            [np.full(len(h), i, dtype=np.int64) for h, i in zip(hashes, ids, strict=True)]
        )
        order = np.argsort(flat, kind="stable")
        flat, owners = flat[order], owners[order]
        keys, starts = np.unique(flat, return_index=True)
        return cls(keys, np.append(starts, len(flat)), owners)

    def hits(self, chunk_hashes: np.ndarray) -> np.ndarray:
        """Probe ids, once per distinct shingle of the chunk found in the table."""
        if not len(chunk_hashes) or not len(self.keys):
            return np.empty(0, dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.keys, chunk_hashes), len(self.keys) - 1)
        found = np.unique(pos[self.keys[pos] == chunk_hashes])
        if not len(found):
            return np.empty(0, dtype=np.int64)
        return np.concatenate([self.probe_ids[self.starts[p] : self.starts[p + 1]] for p in found])


@dataclass
class ProbeMatches:
    """Per probe: the best containment, its chunk, and every chunk at or above the threshold."""

    best: np.ndarray
    best_chunk: list[str | None]
    matches: list[list[tuple[str, float]]] = field(default_factory=list)


def scan_chunks(
    chunks: Iterable[tuple[str, str]],
    probes: Sequence[Probe],
    threshold: float = DEFAULT_THRESHOLD,
    hasher: WordHasher | None = None,
    total: int | None = None,
    progress: bool = False,
) -> ProbeMatches:
    """Stream ``(chunk_id, text)`` pairs once and score every probe against every chunk."""
    from tqdm import tqdm

    hasher = hasher or WordHasher()
    sizes = np.array([len(p.hashes) for p in probes], dtype=np.float64)
    tables = {
        k: _Table.build([p.hashes for p in probes if p.k == k], [i for i, p in enumerate(probes) if p.k == k])
        for k in sorted({p.k for p in probes})
    }
    result = ProbeMatches(np.zeros(len(probes)), [None] * len(probes), [[] for _ in probes])
    bar = tqdm(chunks, total=total, desc="leakage scan", unit="chunk", disable=not progress, mininterval=2)
    for chunk_id, text in bar:
        word_hashes = hasher(tokens(text))
        hit_ids = [table.hits(shingle_hashes(word_hashes, k)) for k, table in tables.items()]
        found = np.concatenate(hit_ids) if hit_ids else np.empty(0, dtype=np.int64)
        if not len(found):
            continue
        ids, counts = np.unique(found, return_counts=True)
        for pid, score in zip(ids.tolist(), (counts / sizes[ids]).tolist(), strict=True):
            if score > result.best[pid]:
                result.best[pid], result.best_chunk[pid] = score, chunk_id
            if score >= threshold:
                result.matches[pid].append((chunk_id, round(score, 4)))
    return result


def index_chunks(folder: Path) -> tuple[Iterable[tuple[str, str]], int]:
    """``(chunk_id, text)`` of a built index folder, through its chunk store, and their count."""
    from indexes.chunkstore import ChunkStore

    store = ChunkStore(folder.resolve())

    def rows() -> Iterable[tuple[str, str]]:
        try:
            for chunk in store:
                yield chunk.chunk_id, chunk.text
        finally:
            store.close()

    return rows(), len(store)


def _top(pairs: Iterable[tuple[str, float]]) -> list[list[Any]]:
    best: dict[str, float] = {}
    for chunk_id, score in pairs:
        best[chunk_id] = max(score, best.get(chunk_id, 0.0))
    return [[c, s] for c, s in sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))]


def _item_row(
    item: McqItem,
    mine: list[int],
    probes: Sequence[Probe],
    gold_count: int,
    found: ProbeMatches,
    threshold: float,
) -> dict[str, Any]:
    row: dict[str, Any] = {"dataset": item.dataset, "qid": item.qid, "gold_passages": gold_count}
    for kind in ("question", "gold"):
        ids = [i for i in mine if probes[i].kind == kind]
        best = max((float(found.best[i]) for i in ids), default=None)
        chunks = _top(pair for i in ids for pair in found.matches[i])
        row[f"{kind}_containment"] = None if best is None else round(best, 4)
        row[f"{kind}_best_chunk"] = max(
            ((float(found.best[i]), found.best_chunk[i]) for i in ids), default=(0.0, None)
        )[1]
        row[f"{kind}_chunks"] = chunks[:MAX_CHUNK_IDS]
        row[f"{kind}_chunk_count"] = len(chunks)
        row[f"leaked_{kind}"] = best is not None and best >= threshold
    row["leaked"] = row["leaked_question"] or row["leaked_gold"]
    return row


def scan_items(
    items: Sequence[McqItem],
    gold: GoldLookup,
    chunks: Iterable[tuple[str, str]],
    *,
    total: int | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    n: int = DEFAULT_N,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """One JSON-able row per item: max containment of its question and of its gold passages,
    the chunk ids at or above ``threshold`` (best first, at most ``MAX_CHUNK_IDS``), and the
    ``leaked_question``, ``leaked_gold`` and ``leaked`` flags."""
    hasher = WordHasher()
    probes: list[Probe] = []
    owned: list[list[int]] = []
    gold_counts: list[int] = []
    for position, item in enumerate(items):
        mine = make_probes(position, "question", item.question, hasher, n)
        passages = gold(item)
        for passage in passages:
            mine += make_probes(position, "gold", passage, hasher, n, min_tokens=n)
        owned.append(list(range(len(probes), len(probes) + len(mine))))
        probes += mine
        gold_counts.append(len(passages))
    found = scan_chunks(chunks, probes, threshold, hasher, total, progress)
    return [
        _item_row(item, owned[i], probes, gold_counts[i], found, threshold) for i, item in enumerate(items)
    ]


def rate(count: int, n: int) -> dict[str, Any]:
    """``{n, count, rate, ci}`` with a 95% Wilson interval (rate and ci None when n is 0)."""
    if n == 0:
        return {"n": 0, "count": 0, "rate": None, "ci": None}
    low, high = wilson_interval(count, n)
    return {"n": n, "count": count, "rate": round(count / n, 4), "ci": [round(low, 4), round(high, 4)]}


def rates(rows: Sequence[dict[str, Any]], threshold: float | None = None) -> dict[str, dict[str, Any]]:
    """Per dataset: leaked by question, by gold passage, either, over all its items; with a
    ``threshold`` the flags are recomputed from the max containments (for a sensitivity table)."""

    def at(row: dict[str, Any], kind: str) -> bool:
        if threshold is None:
            return bool(row[f"leaked_{kind}"])
        value = row[f"{kind}_containment"]
        return value is not None and value >= threshold

    out: dict[str, dict[str, Any]] = {}
    for ds in dict.fromkeys(r["dataset"] for r in rows):
        mine = [r for r in rows if r["dataset"] == ds]
        q = [at(r, "question") for r in mine]
        g = [at(r, "gold") for r in mine]
        out[ds] = {
            "n": len(mine),
            "with_gold": sum(r["gold_passages"] > 0 for r in mine),
            "question": rate(sum(q), len(mine)),
            "gold": rate(sum(g), len(mine)),
            "either": rate(sum(a or b for a, b in zip(q, g, strict=True)), len(mine)),
        }
    return out


@dataclass
class LeakageReport:
    """The leakage of some benchmark items in one index."""

    index: str
    corpus_fingerprint: str | None
    threshold: float
    n: int
    chunks: int
    seconds: float
    rows: list[dict[str, Any]]

    def rates(self, threshold: float | None = None) -> dict[str, dict[str, Any]]:
        return rates(self.rows, threshold)

    def to_json(self, *, leaked_only: bool = False) -> dict[str, Any]:
        return {
            "index": self.index,
            "corpus_fingerprint": self.corpus_fingerprint,
            "threshold": self.threshold,
            "n": self.n,
            "window": WINDOW,
            "min_tokens": MIN_TOKENS,
            "chunks": self.chunks,
            "seconds": round(self.seconds, 1),
            "rates": self.rates(),
            "rates_by_threshold": {str(t): self.rates(t) for t in SENSITIVITY},
            "items": [r for r in self.rows if r["leaked"]] if leaked_only else self.rows,
        }


def check_index(
    items: Sequence[McqItem],
    gold: GoldLookup,
    folder: Path,
    *,
    name: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    n: int = DEFAULT_N,
    progress: bool = False,
) -> LeakageReport:
    """Scan a built index folder for the items (raises IndexNotFoundError when it is missing)."""
    import time

    from indexes.manifest import read_manifest

    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1] (got {threshold})")
    if n < MIN_TOKENS:
        raise ValueError(f"n must be at least {MIN_TOKENS} (got {n})")
    manifest = read_manifest(folder.resolve())
    start = time.perf_counter()
    chunks, total = index_chunks(folder)
    rows = scan_items(items, gold, chunks, total=total, threshold=threshold, n=n, progress=progress)
    return LeakageReport(
        index=name or folder.name,
        corpus_fingerprint=manifest.get("corpus_fingerprint"),
        threshold=threshold,
        n=n,
        chunks=total,
        seconds=time.perf_counter() - start,
        rows=rows,
    )


def leaked_by_key(rows: Iterable[dict[str, Any]]) -> dict[tuple[str, str], bool]:
    """``(base dataset, qid) -> leaked``; a perturbed copy (``medqa~drug-names``) takes its original's."""
    return {(original_set(r["dataset"]), r["qid"]): bool(r["leaked"]) for r in rows}
