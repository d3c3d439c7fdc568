"""A sharded build, streamed: the corpus passes through a batch at a time and never sits in memory.

``corpora/build.py`` takes this path for every build with more than one shard. Chunks come from
the engine as documents are read; each batch of ``batch`` chunks is

1. appended to ``chunks.jsonl`` (``indexes.chunkstore.ChunkWriter``) and to the corpus
   fingerprint's running hash;
2. tokenised for BM25, its tokens numbered in order of first appearance (the order the in-memory
   sharded build gives them) and counted into the global document frequencies;
3. embedded through the engine and the embedding cache (a killed build resumes from the cache);
4. appended to the spool (``corpora/spool.py``: token ids, lengths, vectors on disk).

What the driver keeps grows only with the vocabulary and by 8 bytes per chunk (its offset in
``chunks.jsonl``). Once every document is read the row count fixes the shard ranges, and the
shards are written from the spool by the engine's tasks (``corpora/build_writers.py``), each
reading its own rows. The files are the same bytes the in-memory sharded build writes.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
from tqdm.auto import tqdm

from core.types import Chunk
from corpora.spool import Spool
from indexes import text
from indexes.chunkstore import ChunkWriter
from indexes.manifest import add_to_fingerprint
from indexes.shards import Bm25Counter, Bm25Stats

BATCH_CHUNKS = 8192  # chunks per batch: ~12 MB of vectors; the Ray engine starts its embedders once per batch
SPOOL_DIR = ".spool"

Embed = Callable[[list[str]], tuple[np.ndarray, int]]  # texts -> vectors, how many from the cache


class Timer(Protocol):
    def timed(self, key: str, label: str, where: Path) -> contextlib.AbstractContextManager[None]: ...


@dataclass
class Streamed:
    """What the driver knows once every row is spooled."""

    spool: Spool
    fingerprint: str
    stats: Bm25Stats
    reused: int

    @property
    def rows(self) -> int:
        return self.stats.n_docs


def spool_rows(
    chunks: Iterable[Chunk],
    work: Path,
    *,
    embed: Embed | None,
    dim: int,
    timer: Timer,
    batch: int = BATCH_CHUNKS,
    progress: bool = True,
) -> Streamed:
    """Every chunk to ``work/chunks.jsonl`` and the spool in ``work/.spool`` (see the module)."""
    spool = Spool(work / SPOOL_DIR, dim if embed is not None else 0).create()
    counts, digest, reused = Bm25Counter(), hashlib.sha256(), 0
    bar = tqdm(desc="indexing", unit="chunk", disable=not progress)
    with ChunkWriter(work) as writer:
        for rows in _batches(chunks, batch, timer, work):
            with timer.timed("chunk", "writing chunks", work):
                for chunk in rows:
                    writer.add(chunk)
                    add_to_fingerprint(digest, chunk)
                passages = [text.indexed_text(c.title, c.section, c.text) for c in rows]
                token_ids = [counts.add(text.tokenize(p)) for p in passages]
            vectors = None
            if embed is not None:
                with timer.timed("embed", "embedding (writing the vector cache)", spool.folder):
                    vectors, from_cache = embed(passages)
                reused += from_cache
            with timer.timed("chunk", "writing the spool", spool.folder):
                spool.append(token_ids, vectors)
            bar.update(len(rows))
    bar.close()
    return Streamed(spool, digest.hexdigest(), counts.stats(), reused)


def _batches(chunks: Iterable[Chunk], size: int, timer: Timer, work: Path) -> Iterator[list[Chunk]]:
    """``size`` chunks at a time; reading and chunking the documents is timed as ``chunk``."""
    it = iter(chunks)
    while True:
        with timer.timed("chunk", "reading and chunking documents", work):
            rows = list(itertools.islice(it, size))
        if not rows:
            return
        yield rows
