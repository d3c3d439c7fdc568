"""The rows of a streamed build, on disk until the shards are written: token ids and vectors.

A sharded build (``corpora/stream.py``) reads its corpus a batch at a time and appends each
batch's rows here, so that neither the driver nor any one task holds the corpus. Three raw
little-endian files in the build's folder (removed before the index is published)::

    tokens.i32    every row's global BM25 token ids, concatenated
    lengths.i32   each row's token count
    vectors.f32   each row's embedding (``dim`` float32), when the index has a dense part

Readers (the shard tasks, possibly on other nodes that share the folder) read the rows they
need with plain file reads: no memory map, so what a reader touches is not kept resident.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.errors import ConfigError

TOKENS = "tokens.i32"
LENGTHS = "lengths.i32"
VECTORS = "vectors.f32"
ROWS_PER_READ = 65_536


@dataclass(frozen=True)
class Spool:
    """A spool folder; ``dim`` is the vector width (0: no vectors)."""

    folder: Path
    dim: int = 0

    def create(self) -> Spool:
        self.folder.mkdir(parents=True, exist_ok=False)
        for name in (TOKENS, LENGTHS) + ((VECTORS,) if self.dim else ()):
            (self.folder / name).touch()
        return self

    def append(self, token_ids: list[list[int]], vectors: np.ndarray | None) -> None:
        """Append rows: their token ids and (with ``dim``) their vectors, in row order."""
        if self.dim and (vectors is None or vectors.shape != (len(token_ids), self.dim)):
            shape = None if vectors is None else vectors.shape
            raise ConfigError(
                f"{len(token_ids)} rows need {len(token_ids)} x {self.dim} vectors, got {shape}"
            )
        lengths = np.fromiter((len(t) for t in token_ids), dtype="<i4", count=len(token_ids))
        flat = np.fromiter((i for t in token_ids for i in t), dtype="<i4", count=int(lengths.sum()))
        _append(self.folder / TOKENS, flat)
        _append(self.folder / LENGTHS, lengths)
        if self.dim and vectors is not None:
            _append(self.folder / VECTORS, np.ascontiguousarray(vectors, dtype="<f4"))

    @property
    def rows(self) -> int:
        return (self.folder / LENGTHS).stat().st_size // 4

    def lengths(self, start: int = 0, end: int | None = None) -> np.ndarray:
        end = self.rows if end is None else end
        return np.fromfile(self.folder / LENGTHS, dtype="<i4", count=end - start, offset=4 * start)

    def tokens(self, start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows ``start..end``: their token ids concatenated, and their lengths."""
        before = int(self.lengths(0, start).sum(dtype=np.int64))
        lengths = self.lengths(start, end)
        count = int(lengths.sum(dtype=np.int64))
        flat = np.fromfile(self.folder / TOKENS, dtype="<i4", count=count, offset=4 * before)
        if flat.size != count:
            raise ConfigError(f"{self.folder / TOKENS} is shorter than its lengths say; build again")
        return flat, lengths

    def vectors(self, start: int, end: int) -> np.ndarray:
        """Rows ``start..end`` of the vectors (a copy in memory)."""
        n = (end - start) * self.dim
        flat = np.fromfile(self.folder / VECTORS, dtype="<f4", count=n, offset=4 * self.dim * start)
        if flat.size != n:
            raise ConfigError(f"{self.folder / VECTORS} holds fewer rows than {end}; build again")
        return flat.reshape(end - start, self.dim)

    def sample(self, rows: np.ndarray) -> np.ndarray:
        """The vectors of the given sorted rows (read a block at a time)."""
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        for start in range(0, self.rows, ROWS_PER_READ):
            wanted = (rows >= start) & (rows < start + ROWS_PER_READ)
            if wanted.any():
                block = self.vectors(start, min(start + ROWS_PER_READ, self.rows))
                out[wanted] = block[rows[wanted] - start]
        return out

    def write_npy(self, out: Path, dtype: str) -> None:
        """Every vector as one ``.npy`` array in ``dtype``, written a block at a time."""
        rows = self.rows
        header = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False}
        with out.open("wb") as fh:
            np.lib.format.write_array_header_1_0(fh, {**header, "shape": (rows, self.dim)})
            for start in range(0, rows, ROWS_PER_READ):
                block = self.vectors(start, min(start + ROWS_PER_READ, rows))
                fh.write(np.ascontiguousarray(block, dtype=dtype).tobytes())


def _append(path: Path, array: np.ndarray) -> None:
    with path.open("ab") as fh:
        fh.write(array.tobytes())
