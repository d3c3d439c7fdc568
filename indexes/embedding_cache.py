"""Content-addressed embedding cache: what makes a killed index build resume, not restart.

Texts are embedded in fixed-size batches; each batch's vectors are saved as
``<cache>/<embedder sha256[:16]>/<sha256 of the batch texts>.npy`` (written to a temporary
name, then renamed). A rebuild of the same corpus finds every finished batch on disk and only
embeds the rest. Plain ``.npy`` with ``allow_pickle=False``; a damaged file is re-embedded.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
from tqdm.auto import tqdm


class Embedder(Protocol):
    @property
    def dim(self) -> int: ...

    @property
    def weights_sha256(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def _batch_key(texts: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8") + b"\0")
    return digest.hexdigest()


def _load(path: Path, rows: int, dim: int) -> np.ndarray | None:
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return None
    if array.shape != (rows, dim) or array.dtype != np.float32:
        return None
    return array


def embed_cached(
    embedder: Embedder,
    texts: Sequence[str],
    cache_dir: Path,
    *,
    batch_size: int = 256,
    sort_by_length: bool = True,
    progress: bool = True,
) -> tuple[np.ndarray, int]:
    """Vectors for ``texts`` (n x dim float32, in input order) and how many came from the cache.

    With ``sort_by_length`` texts are embedded shortest first, so each batch pads to similar
    lengths (the transformer's cost grows with the longest text in a batch); the order is a
    stable sort, so the batches, and their cache keys, are the same on every run.
    """
    folder = cache_dir / embedder.weights_sha256[:16]
    folder.mkdir(parents=True, exist_ok=True)
    out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    order = np.argsort([len(t) for t in texts], kind="stable") if sort_by_length else np.arange(len(texts))
    reused = 0
    bar = tqdm(total=len(texts), desc="embedding", unit="chunk", disable=not progress)
    for start in range(0, len(texts), batch_size):
        rows = order[start : start + batch_size]
        batch = [texts[i] for i in rows]
        path = folder / f"{_batch_key(batch)}.npy"
        vectors = _load(path, len(batch), embedder.dim) if path.is_file() else None
        if vectors is None:
            vectors = embedder.embed(batch)
            tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npy")
            np.save(tmp, vectors, allow_pickle=False)
            tmp.replace(path)
        else:
            reused += len(batch)
        out[rows] = vectors
        bar.update(len(batch))
    bar.close()
    return out, reused
