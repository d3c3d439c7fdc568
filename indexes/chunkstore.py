"""Chunks on disk: ``chunks.jsonl`` plus byte offsets for O(1) lookup by row or chunk id."""

from __future__ import annotations

import json
import os
from array import array
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from core.errors import IndexCorruptError
from core.types import Chunk

CHUNKS_FILE = "chunks.jsonl"
OFFSETS_FILE = "chunk_offsets.npy"


def write_chunks(folder: Path, chunks: Iterable[Chunk]) -> int:
    """Write chunks and their line offsets; returns the count."""
    with ChunkWriter(folder) as writer:
        for chunk in chunks:
            writer.add(chunk)
    return writer.count


class ChunkWriter:
    """Appends chunks to ``chunks.jsonl`` as they come; the offsets are written on close.

    Holds 8 bytes per chunk (its offset), never the chunks, so a streamed build can write any
    number of them. Left by an exception, it writes no offsets file (the folder is incomplete).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._offsets = array("q")
        self._position = 0
        self._fh = (folder / CHUNKS_FILE).open("wb")

    @property
    def count(self) -> int:
        return len(self._offsets)

    def add(self, chunk: Chunk) -> None:
        line = (json.dumps(chunk.to_json(), ensure_ascii=False) + "\n").encode("utf-8")
        self._offsets.append(self._position)
        self._fh.write(line)
        self._position += len(line)

    def __enter__(self) -> ChunkWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self._fh.close()
        if kind is None:
            offsets = np.frombuffer(self._offsets, dtype=np.int64) if self._offsets else np.zeros(0, np.int64)
            offsets = np.append(offsets, np.int64(self._position))
            np.save(self.folder / OFFSETS_FILE, offsets, allow_pickle=False)


class ChunkStore:
    """Read-only access to the chunks of a built index.

    By default the offsets are memory-mapped and texts are read by offset from a descriptor
    held on the file opened at load, so a rebuild that swaps or deletes the folder does not
    change what is read. A file truncated or rewritten in place still would (a short read is
    refused, a same-length rewrite is not detectable): a long-running server calls
    :meth:`detach` to hold everything in memory instead (about the size of ``chunks.jsonl``).
    """

    def __init__(self, folder: Path) -> None:
        self.path = folder / CHUNKS_FILE
        try:
            self._offsets = np.load(folder / OFFSETS_FILE, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise IndexCorruptError(f"cannot read {folder / OFFSETS_FILE}: {exc}") from exc
        self._fd: int | None = os.open(self.path, os.O_RDONLY)
        self._blob: bytes | None = None  # all of chunks.jsonl, once detached
        self._ids: dict[str, int] | None = None

    def detach(self) -> None:
        """Read the offsets and every chunk into memory and close the file.

        Afterwards nothing is read from the folder: truncating, deleting or replacing its files
        cannot crash the process (a truncated memory-mapped file raises SIGBUS) or change a text.
        """
        if self._fd is None:
            return
        size = int(self._offsets[-1])
        blob = os.pread(self._fd, size, 0)
        if len(blob) != size:
            raise IndexCorruptError(f"{self.path} has {len(blob)} bytes, its offsets say {size}; rebuild")
        self._offsets = np.array(self._offsets)  # a copy in memory, no longer mapped
        self._blob = blob
        os.close(self._fd)
        self._fd = None

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def get(self, row: int) -> Chunk:
        if not 0 <= row < len(self):
            raise IndexError(f"chunk row {row} outside 0..{len(self) - 1}")
        start, end = int(self._offsets[row]), int(self._offsets[row + 1])
        if self._blob is not None:
            raw = self._blob[start:end]
        elif self._fd is not None:
            raw = os.pread(self._fd, end - start, start)  # no shared file position: thread-safe
        else:
            raise IndexCorruptError(f"{self.path} was closed; load the index again")
        try:
            return Chunk.from_json(json.loads(raw))
        except (ValueError, KeyError) as exc:
            raise IndexCorruptError(f"{self.path}: row {row} is not a chunk record") from exc

    def __iter__(self) -> Iterator[Chunk]:
        # By row, through the descriptor or memory: reopening the path could read another build.
        for row in range(len(self)):
            yield self.get(row)

    def row_of(self, chunk_id: str) -> int:
        if self._ids is None:
            self._ids = {chunk.chunk_id: n for n, chunk in enumerate(self)}
        return self._ids[chunk_id]

    def by_id(self, chunk_id: str) -> Chunk:
        return self.get(self.row_of(chunk_id))

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
