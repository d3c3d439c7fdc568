"""Content-addressed embedding cache: a killed build resumes, and corpora share their vectors.

Each text's vector is stored under the sha256 of the text, per embedder
(``<cache>/<embedder sha256[:16]>[-<variant>]/vectors.sqlite``: key -> float32 bytes; no pickle;
an int8 or shortened embedder is a variant, so its vectors never mix with the float ones), through
``indexes/sqlite_cache.py`` (the table and keys this cache always had, so existing files keep
their vectors; a corrupt file is moved aside with a warning and its vectors embedded again). A
build looks every text up first and embeds only the missing ones, in length-sorted batches
committed one by one, so a killed build loses at most one batch, and an index of sources A + B
reuses what indexes of A and of B already embedded. ``seed_from_index`` fills the cache from an
already built index, so its vectors need not be computed again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from tqdm.auto import tqdm

from core.errors import ModelError
from indexes.sqlite_cache import Codec, SqliteCache, Table, hash_key

KEY_VERSION = 1  # bump when what a vector means changes (the embedder is in the file's path)
VECTORS = Table("vectors", key_type="BLOB", value_column="vector", value_type="BLOB", without_rowid=False)


class Embedder(Protocol):
    @property
    def dim(self) -> int: ...

    @property
    def weights_sha256(self) -> str: ...

    @property
    def variant(self) -> str: ...

    def fingerprint(self) -> dict[str, Any]: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def text_key(text: str) -> bytes:
    return hash_key(text.encode("utf-8"), version=KEY_VERSION)


def _float32_codec(dim: int) -> Codec[np.ndarray]:
    width = dim * 4

    def decode(blob: Any) -> np.ndarray:
        if not isinstance(blob, bytes) or len(blob) != width:  # a damaged row is re-embedded
            raise ValueError(f"expected {width} bytes of float32")
        return np.frombuffer(blob, dtype=np.float32)

    return Codec(lambda v: np.ascontiguousarray(v, dtype=np.float32).tobytes(), decode)


class VectorStore:
    """Vectors by text key in one sqlite file; rows of the wrong size are treated as missing.

    Strict: a write that fails (a full disk) raises, so the build stops and says where.
    """

    def __init__(self, path: Path, dim: int) -> None:
        self.dim = dim
        self._cache: SqliteCache[bytes, np.ndarray] = SqliteCache(
            path, VECTORS, _float32_codec(dim), label="embedding cache", strict=True
        )

    def close(self) -> None:
        self._cache.close()

    def get_many(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        return self._cache.get_many(keys)

    def put_many(self, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        """One transaction per batch: a kill loses at most the batch in flight."""
        self._cache.put_many(dict(zip(keys, vectors, strict=True)))


def store_for(embedder: Embedder, cache_dir: Path) -> VectorStore:
    folder = "-".join(part for part in (embedder.weights_sha256[:16], embedder.variant) if part)
    return VectorStore(cache_dir / folder / "vectors.sqlite", embedder.dim)


EmbedBatches = Callable[[Sequence[str], int], Iterator[np.ndarray]]
"""``(texts, batch_size)`` -> the vectors of consecutive runs of ``texts``, in order (a build
engine's way to embed: in this process, or on a pool of Ray actors)."""


def embed_here(embedder: Embedder) -> EmbedBatches:
    """Embed in this process, ``batch_size`` texts at a time."""

    def run(texts: Sequence[str], batch_size: int) -> Iterator[np.ndarray]:
        for start in range(0, len(texts), batch_size):
            yield embedder.embed(texts[start : start + batch_size])

    return run


def embed_cached(
    embedder: Embedder,
    texts: Sequence[str],
    cache_dir: Path,
    *,
    batch_size: int = 256,
    sort_by_length: bool = True,
    progress: bool = True,
    embed_batches: EmbedBatches | None = None,
) -> tuple[np.ndarray, int]:
    """Vectors for ``texts`` (n x dim float32, in input order) and how many came from the cache.

    With ``sort_by_length`` the missing texts are embedded shortest first, so each batch pads to
    similar lengths (the transformer's cost grows with the longest text in a batch). Only the
    missing texts go to ``embed_batches`` (default: this process); each batch that comes back is
    committed to the cache before the next is read.
    """
    store = store_for(embedder, cache_dir)
    try:
        keys = [text_key(t) for t in texts]
        cached = store.get_many(list(dict.fromkeys(keys)))
        out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
        missing: list[int] = []
        for i, key in enumerate(keys):
            vector = cached.get(key)
            if vector is None:
                missing.append(i)
            else:
                out[i] = vector
        reused = len(texts) - len(missing)
        todo = np.asarray(missing, dtype=np.int64)
        if sort_by_length and len(todo):
            todo = todo[np.argsort([len(texts[i]) for i in todo], kind="stable")]
        # counted in characters, not chunks: the shortest texts go first, so a count of chunks
        # would promise too early an end (the cost grows with the length)
        lengths = np.array([len(texts[i]) for i in todo], dtype=np.int64)
        bar = tqdm(
            total=int(lengths.sum()), desc="embedding", unit="char", unit_scale=True, disable=not progress
        )
        bar.set_postfix_str(f"{reused}/{len(texts)} chunks")
        run = embed_batches or embed_here(embedder)
        done = 0
        for vectors in run([texts[i] for i in todo], batch_size):
            rows = todo[done : done + len(vectors)]
            if len(rows) != len(vectors):
                raise ModelError(
                    f"the embedder returned {len(vectors)} vectors for {len(rows)} texts; rebuild"
                )
            store.put_many([keys[i] for i in rows], vectors)
            out[rows] = vectors
            bar.update(int(lengths[done : done + len(rows)].sum()))
            done += len(rows)
            bar.set_postfix_str(f"{reused + done}/{len(texts)} chunks", refresh=False)
        bar.close()
        if done != len(todo):
            raise ModelError(f"the embedder returned {done} vectors for {len(todo)} texts; rebuild")
        return out, reused
    finally:
        store.close()


def seed_from_index(folder: Path, embedder: Embedder, cache_dir: Path) -> int:
    """Copy a built index's vectors into the cache (keyed by its chunks' indexed text).

    Only an index built with the same embedder (its manifest's fingerprint: weights, precision,
    length) is used; the return value is the number of vectors added.
    """
    from indexes import text
    from indexes.chunkstore import ChunkStore
    from indexes.dense.index import DenseIndex
    from indexes.manifest import read_manifest

    manifest = read_manifest(folder)
    if manifest.get("embedder") != embedder.fingerprint():
        return 0
    dense = DenseIndex.load(folder / "dense")
    store = store_for(embedder, cache_dir)
    chunks = ChunkStore(folder)
    try:
        added = 0
        rows = list(chunks)
        for start in range(0, len(rows), 4096):
            block = rows[start : start + 4096]
            vectors = dense.reconstruct(start, len(block))
            keys = [text_key(text.indexed_text(c.title, c.section, c.text)) for c in block]
            store.put_many(keys, vectors)
            added += len(block)
        return added
    finally:
        chunks.close()
        store.close()
