"""Open a built index folder: verify the manifest, then load chunks, BM25 and FAISS.

Layout of ``<data_dir>/indexes/<name>/``::

    manifest.json        see indexes/manifest.py
    chunks.jsonl         one chunk per line (core.types.Chunk.to_json)
    chunk_offsets.npy    byte offset of each line, plus the file length
    bm25/                bm25s arrays (.npy) + vocab/params (.json) + medcite_bm25.json
    dense/               index.faiss + medcite_dense.json (absent when built with --no-dense)
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
from indexes.dense import DenseIndex
from indexes.manifest import check_compatible, read_manifest, verify_files

BM25_DIR = "bm25"
DENSE_DIR = "dense"


@dataclass
class LoadedIndex:
    folder: Path
    manifest: dict[str, Any]
    chunks: ChunkStore
    lexical: LexicalIndex
    dense: DenseIndex | None

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
        self.chunks.close()


def load_index(
    folder: Path,
    *,
    embedder_fingerprint: dict[str, Any] | None = None,
    lexical_backend: str | None = None,
    checksums: bool = True,
    mmap: bool = True,
) -> LoadedIndex:
    """Load and verify an index folder.

    ``embedder_fingerprint`` is the query-time embedder's; a different one is refused.
    ``lexical_backend`` overrides the saved BM25 backend (``rank-bm25`` rebuilds from chunks).
    """
    link, folder = folder, folder.resolve()  # every file from one version, even if a rebuild swaps the link
    manifest = read_manifest(folder)
    verify_files(folder, manifest, checksums=checksums)
    check_compatible(manifest, "tokenizer", text.tokenizer_config())
    chunks = ChunkStore(folder)
    try:
        lexical, dense = _load_parts(folder, manifest, chunks, embedder_fingerprint, lexical_backend, mmap)
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
) -> tuple[LexicalIndex, DenseIndex | None]:
    if len(chunks) != manifest["counts"]["chunks"]:
        raise IndexCorruptError(f"{folder}: chunk count differs from the manifest; rebuild")

    saved_backend, params = read_params(folder / BM25_DIR)
    backend = lexical_backend or saved_backend
    lexical: LexicalIndex
    if backend == "bm25s":
        if saved_backend != "bm25s":
            raise ConfigError(f"{folder} holds a {saved_backend} index; rebuild with --lexical bm25s")
        lexical = Bm25sIndex.load(folder / BM25_DIR, params, mmap=mmap)
    elif backend == "rank-bm25":
        corpus = [text.tokenize(text.indexed_text(c.title, c.section, c.text)) for c in chunks]
        lexical = RankBm25Index.build(corpus, params)
    else:
        raise ConfigError(f"unknown lexical backend {backend!r}; choose bm25s or rank-bm25")

    dense = None
    if manifest.get("embedder") is not None:
        if embedder_fingerprint is not None:
            check_compatible(manifest, "embedder", embedder_fingerprint)
        dense = DenseIndex.load(folder / DENSE_DIR)
        if dense.size != len(chunks):
            raise IndexMismatchError(f"{folder}: {dense.size} vectors for {len(chunks)} chunks; rebuild")
    return lexical, dense
