"""BM25 behind one interface, two backends.

- ``bm25s`` (default): precomputed sparse score matrix, saved by bm25s itself as plain ``.npy``
  arrays and JSON (``allow_pickle=False``), memory-mapped on load.
- ``rank-bm25``: the classic reference implementation, for differential tests and benchmarks.
  It cannot be saved without pickle, so its folder holds only its parameters and it is rebuilt
  from the index's chunks at load time (slow on large corpora; that is its job as a reference).

Both take the tokens made by :mod:`indexes.text`; neither tokenizes on its own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np

from core.errors import IndexCorruptError, require


@dataclass(frozen=True)
class Bm25Params:
    k1: float = 1.2
    b: float = 0.75
    method: str = "lucene"  # bm25s scoring variant; rank-bm25 is always Okapi


class LexicalIndex(Protocol):
    backend: ClassVar[str]

    def search(
        self, tokens: Sequence[str], k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rows and scores of the top ``k`` chunks with a positive score, best first.

        ``allowed`` is an optional boolean mask over rows (metadata filters).
        """
        ...

    def save(self, folder: Path) -> None: ...

    def detach(self) -> None:
        """Copy anything still memory-mapped from the index folder into memory."""
        ...


def top_k(scores: np.ndarray, k: int, allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Indices and values of the ``k`` largest positive scores, sorted descending, ties by row."""
    if allowed is not None:
        scores = np.where(allowed, scores, 0.0)
    positive = np.flatnonzero(scores > 0)
    if positive.size > k:  # keep every row tied with the k-th score, so ties go by row below
        values = scores[positive]
        positive = positive[values >= -np.partition(-values, k - 1)[k - 1]]
    order = np.lexsort((positive, -scores[positive]))[: max(k, 0)]
    rows = positive[order]
    return rows.astype(np.int64), scores[rows].astype(np.float32)


class Bm25sIndex:
    backend: ClassVar[str] = "bm25s"

    def __init__(self, model: Any, params: Bm25Params) -> None:
        self._model = model
        self.params = params

    @classmethod
    def build(cls, corpus_tokens: list[list[str]], params: Bm25Params) -> Bm25sIndex:
        bm25s = require("bm25s", package="bm25s", extra="lexical")
        model = bm25s.BM25(k1=params.k1, b=params.b, method=params.method)  # type: ignore[attr-defined]
        model.index(corpus_tokens, show_progress=False)
        return cls(model, params)

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self._model.save(str(folder), allow_pickle=False, show_progress=False)
        (folder / "medcite_bm25.json").write_text(
            json.dumps({"backend": self.backend, **asdict(self.params)})
        )

    @classmethod
    def load(cls, folder: Path, params: Bm25Params, *, mmap: bool = True) -> Bm25sIndex:
        bm25s = require("bm25s", package="bm25s", extra="lexical")
        try:
            model = bm25s.BM25.load(  # type: ignore[attr-defined]
                str(folder), mmap=mmap, allow_pickle=False, show_progress=False
            )
        except (OSError, ValueError, KeyError) as exc:
            raise IndexCorruptError(f"cannot load the BM25 index in {folder}: {exc}") from exc
        return cls(model, params)

    def detach(self) -> None:
        # bm25s maps only its three score arrays (vocab and params are read into memory).
        scores = self._model.scores
        for key in ("data", "indices", "indptr"):
            if isinstance(scores.get(key), np.memmap):
                scores[key] = np.array(scores[key])

    @property
    def vocabulary_size(self) -> int:
        return len(self._model.vocab_dict)

    def search(
        self, tokens: Sequence[str], k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        ids = self._model.get_tokens_ids(list(tokens))
        if not ids or k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        scores = np.asarray(self._model.get_scores_from_ids(ids), dtype=np.float32)
        return top_k(scores, k, allowed)


class RankBm25Index:
    backend: ClassVar[str] = "rank-bm25"

    def __init__(self, model: Any, params: Bm25Params) -> None:
        self._model = model
        self.params = params

    @classmethod
    def build(cls, corpus_tokens: list[list[str]], params: Bm25Params) -> RankBm25Index:
        rank_bm25 = require("rank_bm25", package="rank-bm25", extra="lexical")
        # rank-bm25 divides by the mean document length: an all-empty corpus is guarded upstream.
        model = rank_bm25.BM25Okapi(corpus_tokens, k1=params.k1, b=params.b)  # type: ignore[attr-defined]
        return cls(model, params)

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "medcite_bm25.json").write_text(
            json.dumps({"backend": self.backend, **asdict(self.params)})
        )

    def detach(self) -> None:
        """Nothing to do: rank-bm25 is rebuilt in memory at load."""

    @property
    def vocabulary_size(self) -> int:
        return len(self._model.idf)

    def search(
        self, tokens: Sequence[str], k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        known = [t for t in tokens if t in self._model.idf]
        if not known or k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        scores = np.asarray(self._model.get_scores(known), dtype=np.float32)
        return top_k(scores, k, allowed)


def read_params(folder: Path) -> tuple[str, Bm25Params]:
    """The backend name and parameters recorded next to a saved BM25 index."""
    try:
        raw = json.loads((folder / "medcite_bm25.json").read_text())
        backend = str(raw.pop("backend"))
        return backend, Bm25Params(**raw)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise IndexCorruptError(f"missing or invalid {folder / 'medcite_bm25.json'}: {exc}") from exc
