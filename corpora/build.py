"""Sources -> chunks -> BM25 + FAISS -> manifest, written atomically.

Each build writes a new versioned folder ``<indexes>/<name>.<stamp>/`` and then atomically
repoints the symlink ``<indexes>/<name>`` at it, so a reader sees either the old or the new
index, never half of one; a failed build leaves the previous index untouched. Embeddings go
through the content-addressed cache, so a killed build resumes where it stopped.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import hashlib
import os
import platform
import resource
import shutil
import sqlite3
import time
import uuid
from array import array
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from core import __version__
from core.errors import ConfigError, EmptyCorpusError, IndexStoreError
from core.types import Chunk, Document
from corpora import build_writers as writers
from corpora import stream
from corpora.chunking import ChunkerConfig, TokenSpans
from corpora.engine import BuildEngine, LocalEngine
from corpora.sources.base import Source
from indexes import text
from indexes.bm25 import Bm25Params
from indexes.chunkstore import ChunkStore, write_chunks
from indexes.dense.embedder import MiniLmEmbedder
from indexes.dense.index import DenseParams
from indexes.manifest import corpus_fingerprint, write_manifest
from indexes.store import BM25_DIR, DENSE_DIR


@dataclass(frozen=True)
class BuildConfig:
    name: str = "default"
    chunker: ChunkerConfig = field(default_factory=ChunkerConfig)
    bm25: Bm25Params = field(default_factory=Bm25Params)
    lexical_backend: str = "bm25s"
    dense: DenseParams | None = field(default_factory=DenseParams)  # None: BM25 only
    limit: int | None = None  # at most this many documents per source (samples, tests)
    shards: int = 1  # 1: one BM25 and one dense index (the unsharded layout); N: indexes/shards.py
    batch_chunks: int = stream.BATCH_CHUNKS  # a sharded build streams this many chunks at a time

    def __post_init__(self) -> None:
        if self.batch_chunks < 1:
            raise ConfigError(f"batch_chunks must be at least 1, got {self.batch_chunks}")
        if self.shards < 1:
            raise ConfigError(f"shards must be at least 1, got {self.shards}")
        if self.shards > 1 and self.lexical_backend != "bm25s":
            raise ConfigError("a sharded index needs the bm25s lexical backend; drop --lexical or --shards")
        if not self.name or "/" in self.name or self.name.startswith("."):
            raise ConfigError(f"invalid index name {self.name!r}: use letters, digits, - and _")
        if self.lexical_backend not in {"bm25s", "rank-bm25"}:
            raise ConfigError(f"unknown lexical backend {self.lexical_backend!r}")


@dataclass
class BuildReport:
    folder: Path
    manifest: dict[str, Any]

    def summary(self) -> str:
        counts, seconds = self.manifest["counts"], self.manifest["build"]["seconds"]
        return (
            f"built {self.folder.name}: {counts['documents']} documents, {counts['chunks']} chunks "
            f"in {seconds['total']:.1f}s (chunk {seconds['chunk']:.1f}s, bm25 {seconds['bm25']:.1f}s, "
            f"embed {seconds['embed']:.1f}s, faiss {seconds['faiss']:.1f}s); "
            f"peak memory {self.manifest['build']['peak_rss_mb']:.0f} MB"
        )


def _limited(docs: Iterable[Document], limit: int | None) -> Iterator[Document]:
    for n, doc in enumerate(docs):
        if limit is not None and n >= limit:
            return
        yield doc


def _documents(
    sources: list[Source], config: BuildConfig, counts: dict[str, Any], names: deque[str], progress: bool
) -> Iterator[Document]:
    """Every source's documents in order; ``names`` gets each one's source name as it is read.

    A document id seen twice is refused once all are read (a 64-bit hash of each id is kept, 8
    bytes a document, not the ids: a corpus of millions is streamed through this).
    """
    hashes = array("Q")
    for source in sources:
        counts["per_source"].setdefault(source.name, {"documents": 0, "chunks": 0, "empty": 0})
        docs = tqdm(
            _limited(source.documents(), config.limit),
            desc=f"chunking {source.name}",
            unit="doc",
            disable=not progress,
        )
        for doc in docs:
            hashes.append(
                int.from_bytes(hashlib.blake2b(doc.doc_id.encode(), digest_size=8).digest(), "little")
            )
            names.append(source.name)
            yield doc
    ids = np.frombuffer(hashes, dtype=np.uint64) if hashes else np.zeros(0, np.uint64)
    unique = np.unique(ids).size
    if unique != ids.size:
        raise ConfigError(
            f"{ids.size - unique} document id(s) appear more than once; is a source listed twice?"
        )


def _chunks(
    sources: list[Source],
    spans: TokenSpans,
    config: BuildConfig,
    counts: dict[str, Any],
    progress: bool,
    engine: BuildEngine,
) -> Iterator[Chunk]:
    names: deque[str] = deque()  # the engine reads document n before it yields its chunks
    documents = _documents(sources, config, counts, names, progress)
    for chunks in engine.chunk(documents, spans, config.chunker):
        per = counts["per_source"][names.popleft()]
        if not chunks:
            per["empty"] += 1
            continue
        per["documents"] += 1
        per["chunks"] += len(chunks)
        yield from chunks


@contextlib.contextmanager
def _build_lock(indexes_dir: Path, name: str) -> Iterator[None]:
    """One build per index name at a time (an advisory lock, released if the process dies); with the
    lock held, folders left by a killed build of this name are removed (nobody else can be using them)."""
    with (indexes_dir / f".{name}.lock").open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(f"another build of index {name!r} is running; wait for it to finish") from None
        for stale in indexes_dir.glob(f".{name}.*.building"):
            shutil.rmtree(stale, ignore_errors=True)
        yield


@dataclass
class _Stages:
    """Which build stage is running (and where it writes), for the error if a write fails, and
    each stage's seconds and the process peak RSS after it (monotonic)."""

    label: str
    where: Path
    seconds: dict[str, float] = field(default_factory=dict)
    peak_mb: dict[str, float] = field(default_factory=dict)

    @contextlib.contextmanager
    def timed(self, key: str, label: str, where: Path) -> Iterator[None]:
        self.label, self.where = label, where
        t0 = time.perf_counter()
        yield
        self.seconds[key] = self.seconds.get(key, 0.0) + time.perf_counter() - t0
        self.peak_mb[key] = _peak_rss_mb()


def build_index(
    sources: list[Source],
    config: BuildConfig,
    indexes_dir: Path,
    *,
    spans: TokenSpans,
    tokenizer_name: str,
    embedder: MiniLmEmbedder | None,
    cache_dir: Path,
    progress: bool = True,
    engine: BuildEngine | None = None,
) -> BuildReport:
    """Build ``indexes_dir/<config.name>`` from ``sources``; see the module docstring.

    ``engine`` runs the chunking, embedding and index writing (default: this process); the
    files it produces are the same either way.
    """
    engine = engine or LocalEngine()
    if config.dense is not None and embedder is None:
        raise ConfigError("a dense index needs an embedder; pass one or build with --no-dense")
    indexes_dir.mkdir(parents=True, exist_ok=True)
    with _build_lock(indexes_dir, config.name), engine.session():
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"-{uuid.uuid4().hex[:8]}"
        work = indexes_dir / f".{config.name}.{stamp}.building"
        work.mkdir()
        stages = _Stages("writing chunks", work)  # named in the error if the disk fills up
        started = time.perf_counter()
        try:
            write = _write_streamed if config.shards > 1 else _write_in_memory
            fingerprint, rows, counts = write(
                sources, config, work, _Inputs(spans, embedder, cache_dir, engine), stages, progress
            )
            stages.seconds["total"] = time.perf_counter() - started
            stages.label, stages.where = "writing the manifest", work
            fields = _manifest_fields(sources, config, fingerprint, counts, tokenizer_name, embedder, stages)
            manifest = write_manifest(work, _with_engine(fields, engine, config.shards, rows))
            final = indexes_dir / f"{config.name}.{stamp}"
            work.rename(final)
        except BaseException as exc:
            shutil.rmtree(work, ignore_errors=True)  # deleting frees space even on a full disk
            if isinstance(exc, OSError | sqlite3.Error):
                raise _write_error(exc, config.name, stages.label, stages.where) from exc
            raise
        try:
            _point_link_at(indexes_dir / config.name, final)
        except OSError as exc:
            if (indexes_dir / config.name).resolve() != final:  # not published: the previous one stays
                shutil.rmtree(final, ignore_errors=True)
            raise _write_error(exc, config.name, "publishing the new build", indexes_dir) from exc
        return BuildReport(folder=final, manifest=manifest)


@dataclass(frozen=True)
class _Inputs:
    """What a build reads with besides its sources: the chunker's spans, the embedder and its
    cache, and the engine that runs the heavy steps."""

    spans: TokenSpans
    embedder: MiniLmEmbedder | None
    cache_dir: Path
    engine: BuildEngine


def _write_in_memory(
    sources: list[Source], config: BuildConfig, work: Path, inputs: _Inputs, stages: _Stages, progress: bool
) -> tuple[str, int, dict[str, Any]]:
    """The unsharded build: every chunk, passage and vector in memory, written as one BM25 and one
    dense index. Returns the corpus fingerprint, the row count and the counts."""
    engine = inputs.engine
    chunks, passages, counts = _write_chunks_and_bm25(sources, config, work, inputs, stages, progress)
    counts["embeddings_from_cache"] = 0
    stages.seconds["embed"] = stages.seconds["faiss"] = 0.0
    if config.dense is not None and inputs.embedder is not None:
        with stages.timed("embed", "embedding (writing the vector cache)", inputs.cache_dir):
            vectors, reused = engine.embed(inputs.embedder, passages, inputs.cache_dir, progress=progress)
        with stages.timed("faiss", "writing the FAISS index", work):
            writers.write_dense(engine, work / DENSE_DIR, vectors, config.dense)
        counts["embeddings_from_cache"] = reused
    return corpus_fingerprint(chunks), len(chunks), counts


def _write_streamed(
    sources: list[Source], config: BuildConfig, work: Path, inputs: _Inputs, stages: _Stages, progress: bool
) -> tuple[str, int, dict[str, Any]]:
    """The sharded build, a batch of chunks at a time (corpora/stream.py): the corpus is never in
    memory; the shards are written from the spool by the engine's tasks."""
    engine, embedder = inputs.engine, inputs.embedder
    counts: dict[str, Any] = {"per_source": {}}
    embed = None
    if config.dense is not None and embedder is not None:
        embed = functools.partial(engine.embed, embedder, cache_dir=inputs.cache_dir, progress=False)
    stages.seconds.update(chunk=0.0, embed=0.0)
    streamed = stream.spool_rows(
        _chunks(sources, inputs.spans, config, counts, progress, engine),
        work,
        embed=embed,
        dim=embedder.dim if embedder is not None else 0,
        timer=stages,
        batch=config.batch_chunks,
        progress=progress,
    )
    _check_not_empty(streamed.rows, sources)
    with stages.timed("bm25", "writing the BM25 index", work):
        ranges = writers.bm25_from_spool(
            engine, work / BM25_DIR, streamed.spool, streamed.stats, config.bm25, config.shards
        )
    stages.seconds["faiss"] = 0.0
    if embed is not None and config.dense is not None:
        with stages.timed("faiss", "writing the FAISS index", work):
            writers.dense_from_spool(engine, work / DENSE_DIR, streamed.spool, config.dense, ranges)
    shutil.rmtree(streamed.spool.folder)
    counts["documents"] = sum(p["documents"] for p in counts["per_source"].values())
    counts["chunks"] = streamed.rows
    counts["embeddings_from_cache"] = streamed.reused
    return streamed.fingerprint, streamed.rows, counts


def _check_not_empty(rows: int, sources: list[Source]) -> None:
    if rows == 0:
        names = ", ".join(s.name for s in sources)
        raise EmptyCorpusError(f"the sources ({names}) produced no chunk with text; nothing to index")


def _write_chunks_and_bm25(
    sources: list[Source], config: BuildConfig, work: Path, inputs: _Inputs, stages: _Stages, progress: bool
) -> tuple[list[Chunk], list[str], dict[str, Any]]:
    """Chunks to ``chunks.jsonl`` and the BM25 index over them; returns the chunks, the texts that
    were indexed (title, section and body) and counts."""
    counts: dict[str, Any] = {"per_source": {}}
    chunks_in = _chunks(sources, inputs.spans, config, counts, progress, inputs.engine)
    with stages.timed("chunk", "writing chunks", work):
        n_chunks = write_chunks(work, chunks_in)
    _check_not_empty(n_chunks, sources)
    store = ChunkStore(work)
    chunks = list(store)
    store.close()
    passages = [text.indexed_text(c.title, c.section, c.text) for c in chunks]
    with stages.timed("bm25", "writing the BM25 index", work):
        writers.write_bm25(inputs.engine, work / BM25_DIR, passages, config.lexical_backend, config.bm25)
    counts["documents"] = sum(p["documents"] for p in counts["per_source"].values())
    counts["chunks"] = n_chunks
    return chunks, passages, counts


def _manifest_fields(
    sources: list[Source],
    config: BuildConfig,
    fingerprint: str,
    counts: dict[str, Any],
    tokenizer_name: str,
    embedder: MiniLmEmbedder | None,
    stages: _Stages,
) -> dict[str, Any]:
    dense = config.dense is not None and embedder is not None
    order = ("documents", "chunks", "per_source", "embeddings_from_cache")
    return {
        "name": config.name,
        "medcite_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "sources": [s.describe() for s in sources],
        "corpus_fingerprint": fingerprint,
        "chunker": {**asdict(config.chunker), "tokenizer": tokenizer_name, "limit": config.limit},
        "tokenizer": text.tokenizer_config(),
        "lexical": {"backend": config.lexical_backend, **asdict(config.bm25)},
        "dense": asdict(config.dense) if config.dense is not None else None,
        "embedder": embedder.fingerprint() if dense and embedder is not None else None,
        "counts": {key: counts[key] for key in order},
        "build": {
            "seconds": stages.seconds,
            "peak_rss_mb": _peak_rss_mb(),
            "peak_rss_mb_after_stage": stages.peak_mb,
            "python": platform.python_version(),
            "machine": platform.machine(),
        },
    }


def _with_engine(fields: dict[str, Any], engine: BuildEngine, shards: int, rows: int) -> dict[str, Any]:
    """The engine under ``build``; with more than one shard, ``shards`` (indexes/shards.py)."""
    fields["build"]["engine"] = engine.describe()
    if shards > 1:
        from indexes.shards import shard_ranges, sharding_manifest

        fields["shards"] = sharding_manifest(shard_ranges(rows, shards))
    return fields


def _write_error(exc: OSError | sqlite3.Error, name: str, stage: str, where: Path) -> IndexStoreError:
    """A build stopped by the file system, as an error that says where and what to do.

    The half-written folder is already removed and the previous build of the index is untouched;
    finished embedding batches are kept in the cache, so the next build resumes from them.
    """
    full = (isinstance(exc, OSError) and exc.errno in {errno.ENOSPC, errno.EDQUOT}) or (
        isinstance(exc, sqlite3.Error) and "full" in str(exc)
    )
    what = "the disk is full (no space left on device)" if full else f"a write failed ({exc})"
    return IndexStoreError(
        f"building index {name!r} stopped while {stage}: {what}, in {where}. The previous build of "
        f"{name!r} is unchanged and still served; "
        + ("free some space" if full else "fix the cause")
        + " and run the build again (finished embeddings are cached and reused)"
    )


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _point_link_at(link: Path, target: Path) -> None:
    """Atomically make ``link`` a symlink to ``target`` and remove superseded versions."""
    previous = link.resolve() if link.is_symlink() else None
    if link.exists() and not link.is_symlink():
        raise ConfigError(f"{link} exists and is not an index link; move it away and rebuild")
    tmp = link.with_name(f".{link.name}.link-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(target.name)
    tmp.replace(link)
    if previous is not None and previous != target.resolve() and previous.parent == link.parent:
        # Readers that still have it open keep their mapped files until they close them.
        shutil.rmtree(previous, ignore_errors=True)
