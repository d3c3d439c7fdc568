"""FAISS inner-product indexes over normalised vectors; row ``i`` is chunk row ``i``.

Kinds: ``flat`` (exact; right for up to a few hundred thousand chunks), ``hnsw`` (graph
search for large corpora; ``ef_search`` trades speed for recall), ``ivfpq`` (compressed codes in
on-disk inverted lists, the top ``rescore`` candidates re-scored with exact vectors read from a
memory-mapped file: for corpora whose vectors do not fit in RAM; see ``indexes/dense/ivf.py``). Saved
with ``faiss.write_index``: a plain binary format, no pickle.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import ConfigError, IndexCorruptError, require
from indexes.dense import ivf
from indexes.dense.params import DenseParams as DenseParams  # where every caller imports it from

INDEX_FILE = "index.faiss"
PARAMS_FILE = "medcite_dense.json"


def _faiss() -> Any:
    return require("faiss", package="faiss-cpu", extra="dense")


class DenseIndex:
    def __init__(self, index: Any, params: DenseParams, vectors: np.ndarray | None = None) -> None:
        self._index = index
        self.params = params
        self._vectors = vectors  # ivfpq: the exact vectors that re-score candidates (mmap once saved)
        self._on_disk = False  # ivfpq loaded from a folder: its lists are memory-mapped there

    @classmethod
    def build(cls, vectors: np.ndarray, params: DenseParams) -> DenseIndex:
        faiss = _faiss()
        if params.kind == "ivfpq":  # in one process; sharded builds use indexes.dense.ivf directly
            index = ivf.trained_index(ivf.training_sample(vectors, params), params)
            for start in range(0, len(vectors), 100_000):
                part = np.ascontiguousarray(vectors[start : start + 100_000], dtype=np.float32)
                index.add_with_ids(part, np.arange(start, start + len(part), dtype=np.int64))
            return cls(index, params, np.asarray(vectors, dtype=params.rescore_dtype))
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        dim = vectors.shape[1]
        if params.kind == "flat":
            index = faiss.IndexFlatIP(dim)
        else:
            index = faiss.IndexHNSWFlat(dim, params.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = params.ef_construction
            index.hnsw.efSearch = params.ef_search
        index.add(vectors)
        return cls(index, params)

    def save(self, folder: Path) -> None:
        if self.params.kind == "ivfpq":
            if self._on_disk or self._vectors is None:
                raise ConfigError("this ivfpq index was loaded from disk; copy its folder instead of saving")
            ivf.save_built(self._index, self._vectors, self.params, folder)
            return
        folder.mkdir(parents=True, exist_ok=True)
        _faiss().write_index(self._index, str(folder / INDEX_FILE))
        (folder / PARAMS_FILE).write_text(json.dumps(asdict(self.params)))

    @classmethod
    def load(cls, folder: Path) -> DenseIndex:
        faiss = _faiss()
        try:
            params = DenseParams(**json.loads((folder / PARAMS_FILE).read_text()))
            if params.kind == "ivfpq":
                index, vectors = ivf.load_ivfpq(folder)
                loaded = cls(index, params, vectors)
                loaded._on_disk = True
                return loaded
            index = faiss.read_index(str(folder / INDEX_FILE))
        except (OSError, ValueError, TypeError, RuntimeError) as exc:
            raise IndexCorruptError(f"cannot load the FAISS index in {folder}: {exc}") from exc
        if params.kind == "hnsw":
            index.hnsw.efSearch = params.ef_search
        return cls(index, params)

    @property
    def size(self) -> int:
        return int(self._index.ntotal)

    @property
    def dim(self) -> int:
        return int(self._index.d)

    def reconstruct(self, start: int, n: int) -> np.ndarray:
        """The stored vectors of rows ``start .. start+n`` (to reuse them in another index)."""
        if self.params.kind == "ivfpq":
            if self._vectors is None:
                raise ConfigError("this ivfpq index was merged without its vectors file; rebuild it with one")
            return np.asarray(self._vectors[start : start + n], dtype=np.float32)
        return np.asarray(self._index.reconstruct_n(start, n), dtype=np.float32)

    def search(
        self, query: np.ndarray, k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rows and cosine scores of the ``k`` nearest chunks, best first.

        With a row mask, FAISS searches only the allowed rows (an ID selector), so filters
        apply before ranking rather than thinning the top ``k`` afterwards.
        """
        k = min(k, self.size)
        if k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        faiss = _faiss()
        query = np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32)
        rows = None if allowed is None else np.flatnonzero(allowed).astype(np.int64)
        if rows is not None and rows.size == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if self.params.kind == "ivfpq":
            return ivf.search_ivfpq(self._index, self._vectors, self.params, query, k, rows)
        search_params = None
        if rows is not None:
            selector = faiss.IDSelectorBatch(rows)
            search_params = (
                faiss.SearchParametersHNSW(sel=selector, efSearch=self.params.ef_search)
                if self.params.kind == "hnsw"
                else faiss.SearchParameters(sel=selector)
            )
        scores, rows_found = self._index.search(query, k, params=search_params)
        keep = rows_found[0] >= 0
        return rows_found[0][keep].astype(np.int64), scores[0][keep].astype(np.float32)
