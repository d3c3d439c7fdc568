"""FAISS inner-product indexes over normalised vectors; row ``i`` is chunk row ``i``.

Kinds: ``flat`` (exact; right for up to a few hundred thousand chunks), ``hnsw`` (graph
search for large corpora; ``ef_search`` trades speed for recall). Saved with
``faiss.write_index``: a plain binary format, no pickle.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import ConfigError, IndexCorruptError, require

INDEX_FILE = "index.faiss"
PARAMS_FILE = "medcite_dense.json"


@dataclass(frozen=True)
class DenseParams:
    kind: str = "flat"  # "flat" | "hnsw"
    hnsw_m: int = 32
    ef_construction: int = 200
    ef_search: int = 128

    def __post_init__(self) -> None:
        if self.kind not in {"flat", "hnsw"}:
            raise ConfigError(f"unknown dense index kind {self.kind!r}; choose flat or hnsw")


def _faiss() -> Any:
    return require("faiss", package="faiss-cpu", extra="dense")


class DenseIndex:
    def __init__(self, index: Any, params: DenseParams) -> None:
        self._index = index
        self.params = params

    @classmethod
    def build(cls, vectors: np.ndarray, params: DenseParams) -> DenseIndex:
        faiss = _faiss()
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
        folder.mkdir(parents=True, exist_ok=True)
        _faiss().write_index(self._index, str(folder / INDEX_FILE))
        (folder / PARAMS_FILE).write_text(json.dumps(asdict(self.params)))

    @classmethod
    def load(cls, folder: Path) -> DenseIndex:
        faiss = _faiss()
        try:
            params = DenseParams(**json.loads((folder / PARAMS_FILE).read_text()))
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
        search_params = None
        if allowed is not None:
            rows = np.flatnonzero(allowed).astype(np.int64)
            if rows.size == 0:
                return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
            selector = faiss.IDSelectorBatch(rows)
            search_params = (
                faiss.SearchParametersHNSW(sel=selector, efSearch=self.params.ef_search)
                if self.params.kind == "hnsw"
                else faiss.SearchParameters(sel=selector)
            )
        scores, rows_found = self._index.search(query, k, params=search_params)
        keep = rows_found[0] >= 0
        return rows_found[0][keep].astype(np.int64), scores[0][keep].astype(np.float32)
