"""The streamed sharded build (corpora/stream.py, corpora/spool.py).

- its files are those of the in-memory reference (``indexes.shards.write_shards`` over every row
  at once), byte for byte, whatever the batch size;
- it is streamed: the first vectors are embedded before the source has been read to the end;
- the spool gives back exactly what was appended, and its ``.npy`` copy loads as the vectors.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from corpora.build import BuildConfig, BuildReport, build_index
from corpora.spool import Spool
from indexes import text
from indexes.bm25 import Bm25Params
from indexes.chunkstore import ChunkStore
from indexes.dense.index import DenseParams
from indexes.shards import shard_ranges, write_shards
from tests.helpers import HashEmbedder, ListSource, make_doc, whitespace_spans

DOCS = [
    make_doc(
        f"d:{i}", {"A": f"w{i % 37} x{i % 11} alpha", "B": f"q{i % 13} z{i % 7} beta {i}"}, title=f"T{i % 5}"
    )
    for i in range(120)
]  # 240 chunks
SHARDS = 4


class CountingSource(ListSource):
    """Counts the documents handed out so far."""

    def __init__(self, docs: list[Any]) -> None:
        super().__init__(docs)
        self.read = 0

    def documents(self) -> Iterator[Any]:
        for doc in self.docs:
            self.read += 1
            yield doc


def build(folder: Path, batch: int, embedder: Any = None, source: Any = None) -> BuildReport:
    return build_index(
        [source or ListSource(DOCS)],
        BuildConfig(name="s", shards=SHARDS, batch_chunks=batch, dense=DenseParams(kind="flat")),
        folder,
        spans=whitespace_spans,
        tokenizer_name="ws",
        embedder=embedder or HashEmbedder(),
        cache_dir=folder / "cache",
        progress=False,
    )


def digests(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "manifest.json"
    }


def test_the_streamed_files_are_the_in_memory_shards_whatever_the_batch(tmp_path: Path) -> None:
    one = build(tmp_path / "a", batch=7)
    other = build(tmp_path / "b", batch=10_000)
    assert digests(one.folder) == digests(other.folder)
    assert one.manifest["corpus_fingerprint"] == other.manifest["corpus_fingerprint"]
    store = ChunkStore(one.folder)
    chunks = list(store)
    store.close()
    assert len(chunks) == one.manifest["counts"]["chunks"] == 240
    tokens = [text.tokenize(text.indexed_text(c.title, c.section, c.text)) for c in chunks]
    vectors = HashEmbedder().embed([text.indexed_text(c.title, c.section, c.text) for c in chunks])
    reference = tmp_path / "reference"
    ranges = shard_ranges(len(chunks), SHARDS)
    write_shards(reference, tokens, vectors, ranges, Bm25Params(), DenseParams(kind="flat"))
    built, expected = digests(one.folder), digests(reference)
    assert {name.split("/")[0] for name in expected} == {"bm25", "dense"}
    for name, digest in expected.items():
        assert built[name] == digest, name
    assert not (one.folder / ".spool").exists()
    assert one.manifest["shards"]["ranges"] == [list(r) for r in ranges]


def test_the_first_vectors_are_embedded_before_the_source_is_read_to_the_end(tmp_path: Path) -> None:
    source = CountingSource(DOCS)
    seen: list[int] = []

    class Watching(HashEmbedder):
        def embed(self, texts: Any) -> np.ndarray:
            seen.append(source.read)
            return super().embed(texts)

    report = build(tmp_path, batch=20, embedder=Watching(), source=source)
    assert report.manifest["counts"]["chunks"] == 240
    assert seen[0] <= 12  # 20 chunks = 10 documents (+1 read ahead), not 120
    assert len(seen) >= 240 // 20


def test_an_empty_corpus_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    from core.errors import EmptyCorpusError

    with pytest.raises(EmptyCorpusError, match="no chunk"):
        build(tmp_path, batch=5, source=ListSource([]))
    assert not list(tmp_path.glob(".s.*.building")) and not (tmp_path / "s").exists()


def test_the_spool_reads_back_what_was_appended(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool", dim=3).create()
    rng = np.random.default_rng(0)
    rows = [[int(t) for t in rng.integers(0, 50, size=n)] for n in (0, 4, 1, 7, 3)]
    vectors = rng.random((5, 3), dtype=np.float32)
    spool.append(rows[:2], vectors[:2])
    spool.append(rows[2:], vectors[2:])
    assert spool.rows == 5
    flat, lengths = spool.tokens(1, 4)
    assert lengths.tolist() == [4, 1, 7] and flat.tolist() == rows[1] + rows[2] + rows[3]
    np.testing.assert_array_equal(spool.vectors(2, 5), vectors[2:])
    np.testing.assert_array_equal(spool.sample(np.array([0, 3, 4])), vectors[[0, 3, 4]])
    spool.write_npy(tmp_path / "v.npy", "float16")
    loaded = np.load(tmp_path / "v.npy", allow_pickle=False)
    assert loaded.dtype == np.float16 and loaded.shape == (5, 3)
    np.testing.assert_array_equal(loaded, vectors.astype(np.float16))
    with pytest.raises(Exception, match="rows need"):
        spool.append(rows[:1], None)


def test_batch_chunks_must_be_positive() -> None:
    from core.errors import ConfigError

    with pytest.raises(ConfigError, match="batch_chunks"):
        BuildConfig(batch_chunks=0)


@pytest.mark.parametrize("shards", [1, SHARDS])
def test_a_document_id_read_twice_is_refused(tmp_path: Path, shards: int) -> None:
    from core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"1 document id.*more than once"):
        build_index(
            [ListSource(DOCS[:5]), ListSource(DOCS[4:6], name="other")],
            BuildConfig(name="s", shards=shards, dense=None),
            tmp_path,
            spans=whitespace_spans,
            tokenizer_name="ws",
            embedder=None,
            cache_dir=tmp_path / "cache",
            progress=False,
        )
    assert not list(tmp_path.glob(".s.*.building")) and not (tmp_path / "s").exists()
