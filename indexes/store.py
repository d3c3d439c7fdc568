"""Open a built index folder: verify the manifest, then load chunks, BM25 and FAISS.

Layout of ``<data_dir>/indexes/<name>/``::

    manifest.json        see indexes/manifest.py
    chunks.jsonl         one chunk per line (core.types.Chunk.to_json)
    chunk_offsets.npy    byte offset of each line, plus the file length
    bm25/                bm25s arrays (.npy) + vocab/params (.json) + medcite_bm25.json
    dense/               index.faiss + medcite_dense.json (absent when built with --no-dense)

A sharded index (``manifest["shards"]``, see indexes/shards.py) keeps chunks global and holds
``bm25/shard-NNNN/`` and ``dense/shard-NNNN/`` folders plus global statistics; it loads as a
:class:`ShardedBm25` and a :class:`ShardedDense` (or one merged IVF-PQ index) over global rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import ConfigError, IndexCorruptError, IndexMismatchError
from core.types import Filters
from indexes import text
from indexes.bm25 import Bm25sIndex, LexicalIndex, RankBm25Index, read_params
from indexes.chunkstore import ChunkStore
from indexes.dense.index import DenseIndex
from indexes.manifest import check_compatible, read_manifest, require_folder, verify_files
from indexes.shard_search import ShardedBm25, ShardedDense
from indexes.shards import (
    BM25_GLOBALS,
    BM25_SHARD_ARRAYS,
    BM25_SHARD_FILE,
    DENSE_SHARDS_FILE,
    check_ranges,
    shard_dir,
)

BM25_DIR = "bm25"
DENSE_DIR = "dense"


@dataclass
class LoadedIndex:
    folder: Path
    manifest: dict[str, Any]
    chunks: ChunkStore
    lexical: LexicalIndex
    dense: DenseIndex | ShardedDense | None

    loaded_from: Path | None = None  # the resolved version folder, which a rebuild replaces
    _metadata: list[tuple[str, tuple[str, ...]]] | None = None

    def rows_where(self, filters: Filters) -> np.ndarray | None:
        """Boolean row mask for metadata filters (None when no filter is set).

        ``filters.sections`` matches any element of a chunk's section path, case-insensitively.
        """
        if not filters:
            return None
        if self._metadata is None:  # read once, on the first filtered query
            self._metadata = [(c.source, tuple(p.casefold() for p in c.section)) for c in self.chunks]
        wanted = {s.casefold() for s in filters.sections}
        return np.fromiter(
            (
                (not filters.sources or source in filters.sources)
                and (not wanted or any(part in wanted for part in path))
                for source, path in self._metadata
            ),
            dtype=bool,
            count=len(self._metadata),
        )

    def detach(self) -> None:
        """Hold everything in memory and read nothing more from the folder (for a server).

        By default BM25 arrays and chunk offsets are memory-mapped and chunk texts read by
        offset: cheap for the CLI, but a file truncated in place under a running process kills
        it with SIGBUS or returns another text. Detached, a truncated, deleted or rebuilt folder
        changes nothing served; the cost is the size of ``chunks.jsonl`` plus the BM25 arrays
        (FAISS indexes are read into memory at load anyway).
        """
        self.lexical.detach()
        self.chunks.detach()

    def close(self) -> None:
        """Close the chunk store and stop the shard search threads of a sharded index."""
        for part in (self.lexical, self.dense):
            if isinstance(part, ShardedBm25 | ShardedDense):
                part.close()
        self.chunks.close()


def load_index(
    folder: Path,
    *,
    embedder_fingerprint: dict[str, Any] | None = None,
    lexical_backend: str | None = None,
    checksums: bool = True,
    mmap: bool = True,
    search_threads: int | None = None,
) -> LoadedIndex:
    """Load and verify an index folder.

    ``embedder_fingerprint`` is the query-time embedder's; a different one is refused.
    ``lexical_backend`` overrides the saved BM25 backend (``rank-bm25`` rebuilds from chunks).
    ``search_threads``: threads that search a sharded index's shards at once (None: dense shards
    on one per usable CPU, at most one per shard, BM25 shards one after another, which measured
    faster; 1: one shard after another); unsharded indexes ignore it.
    """
    require_folder(folder)
    link, folder = folder, folder.resolve()  # every file from one version, even if a rebuild swaps the link
    manifest = read_manifest(folder)
    verify_files(folder, manifest, checksums=checksums)
    _check_shard_files(folder, manifest)
    check_compatible(manifest, "tokenizer", text.tokenizer_config())
    chunks = ChunkStore(folder)
    try:
        lexical, dense = _load_parts(
            folder, manifest, chunks, embedder_fingerprint, lexical_backend, mmap, search_threads
        )
    except BaseException:
        chunks.close()
        raise
    return LoadedIndex(
        folder=link, manifest=manifest, chunks=chunks, lexical=lexical, dense=dense, loaded_from=folder
    )


def _load_parts(
    folder: Path,
    manifest: dict[str, Any],
    chunks: ChunkStore,
    embedder_fingerprint: dict[str, Any] | None,
    lexical_backend: str | None,
    mmap: bool,
    search_threads: int | None = None,
) -> tuple[LexicalIndex, DenseIndex | ShardedDense | None]:
    if len(chunks) != manifest["counts"]["chunks"]:
        raise IndexCorruptError(f"{folder}: chunk count differs from the manifest; rebuild")
    ranges = _shard_ranges(manifest, len(chunks))

    saved_backend, params = read_params(folder / BM25_DIR)
    backend = lexical_backend or saved_backend
    lexical: LexicalIndex
    if backend == "bm25s":
        if saved_backend != "bm25s":
            raise ConfigError(f"{folder} holds a {saved_backend} index; rebuild with --lexical bm25s")
        if ranges is not None:
            lexical = ShardedBm25.load(
                folder / BM25_DIR, params, ranges, mmap=mmap, search_threads=search_threads
            )
        else:
            lexical = Bm25sIndex.load(folder / BM25_DIR, params, mmap=mmap)
    elif backend == "rank-bm25":
        corpus = [text.tokenize(text.indexed_text(c.title, c.section, c.text)) for c in chunks]
        lexical = RankBm25Index.build(corpus, params)
    else:
        raise ConfigError(f"unknown lexical backend {backend!r}; choose bm25s or rank-bm25")

    dense: DenseIndex | ShardedDense | None = None
    if manifest.get("embedder") is not None:
        if embedder_fingerprint is not None:
            check_compatible(manifest, "embedder", embedder_fingerprint)
        dense = load_dense(folder, manifest, search_threads=search_threads)
        if dense.size != len(chunks):
            raise IndexMismatchError(f"{folder}: {dense.size} vectors for {len(chunks)} chunks; rebuild")
    return lexical, dense


def load_dense(
    folder: Path, manifest: dict[str, Any], *, search_threads: int | None = None
) -> DenseIndex | ShardedDense:
    """The vectors of index ``folder``: one FAISS index, or its shards searched as one."""
    ranges = _shard_ranges(manifest, manifest["counts"]["chunks"])
    if ranges is not None and (folder / DENSE_DIR / DENSE_SHARDS_FILE).is_file():
        return ShardedDense.load(folder / DENSE_DIR, ranges, search_threads=search_threads)
    return DenseIndex.load(folder / DENSE_DIR)  # unsharded, or one merged index built from shards (ivfpq)


def _shard_ranges(manifest: dict[str, Any], n_chunks: int) -> list[tuple[int, int]] | None:
    """The rows of each shard from ``manifest["shards"]`` (None for an unsharded index)."""
    sharding = manifest.get("shards")
    if sharding is None:
        return None
    try:
        ranges = check_ranges(sharding["ranges"], n_chunks)
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexCorruptError(
            f"manifest.json has an invalid shards entry ({exc}); rebuild the index"
        ) from exc
    if sharding.get("count") != len(ranges):
        raise IndexCorruptError(
            f"manifest.json counts {sharding.get('count')} shards for {len(ranges)} ranges"
        )
    return ranges


def _check_shard_files(folder: Path, manifest: dict[str, Any]) -> None:
    """Refuse a sharded index whose manifest does not list (and so does not verify) every shard file."""
    sharding = manifest.get("shards")
    if not isinstance(sharding, dict):
        if sharding is not None:
            raise IndexCorruptError("manifest.json has an invalid shards entry; rebuild the index")
        return
    listed = manifest.get("files", {})
    expected = [f"{BM25_DIR}/{name}" for name in BM25_GLOBALS]
    for s in range(int(sharding.get("count", 0))):
        expected += [f"{BM25_DIR}/{shard_dir(s)}/{name}" for name in (*BM25_SHARD_ARRAYS, BM25_SHARD_FILE)]
    if manifest.get("embedder") is not None and (folder / DENSE_DIR / DENSE_SHARDS_FILE).is_file():
        expected += [f"{DENSE_DIR}/{DENSE_SHARDS_FILE}"]
        expected += [f"{DENSE_DIR}/{shard_dir(s)}/index.faiss" for s in range(int(sharding.get("count", 0)))]
    missing = [name for name in expected if name not in listed]
    if missing:
        raise IndexCorruptError(
            f"{folder}: manifest.json does not list {missing[0]} (and {len(missing) - 1} more shard files), "
            "so it cannot be verified; rebuild the index"
        )
