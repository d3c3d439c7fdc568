"""A full disk during an index build, at each stage in turn (a failing writer stands in for it).

Expected everywhere: an IndexStoreError that says the disk is full and while doing what, where;
no half-built folder left (the build removes it on the way out; a killed build's folder is
removed by the next build, see test_build_and_load.py); the previous index of the name still
loads and answers; and the embedding cache stays usable: the next build with space succeeds and
reuses every vector that was committed before the failure.
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from core.errors import IndexStoreError
from indexes.dense.embedding_cache import VectorStore
from indexes.store import load_index
from rag.retrieve.lexical import Bm25Retriever
from tests.helpers import HashEmbedder, make_doc, word_index

NAME = "full"
DOCS = [
    make_doc("d:marfan", {"Definition": "Marfan syndrome is a connective tissue disorder."}, title="Marfan"),
    make_doc("d:af", {"Anticoagulation": "Use the CHA2DS2-VASc score to decide on anticoagulation."}),
]
MORE = [*DOCS, make_doc("d:gout", {"Treatment": "Colchicine treats acute gout."}, title="Gout")]


def full_disk(*_args, **_kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


class FullFile:
    """A file opened for writing on a full disk: every write fails."""

    def __init__(self, handle) -> None:
        self._handle = handle

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self._handle.close()

    def close(self) -> None:
        self._handle.close()

    def write(self, data) -> int:
        full_disk()
        return 0


def fail_writes_of(monkeypatch, target: str) -> None:
    """Make the lowest-level write of ``target`` (a file name, or the cache) hit a full disk."""
    if target == "vectors.sqlite":  # sqlite reports a full disk as its own error, at commit

        def put_many(self, keys, vectors):
            raise sqlite3.OperationalError("database or disk is full")

        monkeypatch.setattr(VectorStore, "put_many", put_many)
    elif target == "index.faiss":
        import faiss

        monkeypatch.setattr(faiss, "write_index", full_disk)
    elif target.endswith(".npy"):  # chunk offsets and bm25s arrays go through np.save
        real_save = np.save

        def save(file, *args, **kwargs):
            return full_disk() if str(file).endswith(target) else real_save(file, *args, **kwargs)

        monkeypatch.setattr(np, "save", save)
    elif target == "symlink":  # publishing: repointing the index link at the new version
        monkeypatch.setattr(Path, "symlink_to", full_disk)
    else:  # chunks.jsonl and the JSON files are written through Path.open / Path.write_text
        real_open = Path.open

        def open_(self, mode="r", *args, **kwargs):
            handle = real_open(self, mode, *args, **kwargs)
            return FullFile(handle) if self.name == target and "w" in mode else handle

        monkeypatch.setattr(Path, "open", open_)


def build(tmp: Path, docs, embedder: HashEmbedder):
    return word_index(tmp, docs, NAME, embedder)


def answer(tmp: Path) -> list[str]:
    index = load_index(tmp / "indexes" / NAME)
    try:
        return [h.chunk.chunk_id for h in Bm25Retriever(index).retrieve("anticoagulation score", 3)]
    finally:
        index.close()


@pytest.mark.parametrize(
    ("target", "stage"),
    [
        ("chunks.jsonl", "writing chunks"),
        ("chunk_offsets.npy", "writing chunks"),
        ("data.csc.index.npy", "writing the BM25 index"),
        ("medcite_bm25.json", "writing the BM25 index"),
        ("vectors.sqlite", "embedding (writing the vector cache)"),
        ("index.faiss", "writing the FAISS index"),
        ("manifest.json", "writing the manifest"),
        ("symlink", "publishing the new build"),
    ],
)
def test_full_disk_at_each_stage_is_a_clear_error_and_keeps_the_previous_index(
    tmp_path, monkeypatch, target, stage
):
    first = build(tmp_path, DOCS, HashEmbedder())
    served = answer(tmp_path)
    listing = sorted(p.name for p in (tmp_path / "indexes").iterdir())

    with monkeypatch.context() as patch:
        fail_writes_of(patch, target)
        with pytest.raises(IndexStoreError) as caught:
            build(tmp_path, MORE, HashEmbedder())
    message = str(caught.value)
    assert f"while {stage}: the disk is full" in message and "still served" in message
    where = tmp_path / "cache" if target == "vectors.sqlite" else tmp_path / "indexes"
    assert f"in {where}" in message
    assert isinstance(caught.value.__cause__, OSError | sqlite3.Error)  # the original, chained
    assert sorted(p.name for p in (tmp_path / "indexes").iterdir()) == listing  # nothing half-built left
    assert answer(tmp_path) == served and load_index(tmp_path / "indexes" / NAME).manifest == first.manifest

    embedder = HashEmbedder()
    again = build(tmp_path, MORE, embedder)  # with space again: works, and reuses the cache
    n_old, n_new = first.manifest["counts"]["chunks"], again.manifest["counts"]["chunks"]
    embedded_before_failure = stage in {
        "writing the FAISS index",
        "writing the manifest",
        "publishing the new build",
    }
    reused = n_new if embedded_before_failure else n_old
    assert again.manifest["counts"]["embeddings_from_cache"] == reused
    assert embedder.texts_embedded == n_new - reused
    assert answer(tmp_path) != [] and load_index(tmp_path / "indexes" / NAME).dense.size == n_new
