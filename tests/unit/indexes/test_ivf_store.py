"""An ivfpq index built by ``build_index`` loads through ``load_index`` (checksums) and retrieves.

Guidelines of open-medicine embedded by the hash embedder (the embedder is not the subject). With
every list probed and every row re-scored from float32 vectors, IVF-PQ must return the flat
index's hits and scores exactly: what the compression loses, re-scoring gives back.
"""

from __future__ import annotations

import pytest

from core.paths import Paths
from indexes.dense.index import DenseIndex, DenseParams
from indexes.store import load_index
from rag.indexing import make_retriever
from tests.helpers import HashEmbedder, guideline_index

QUERIES = ["anticoagulation in atrial fibrillation", "statin therapy LDL cholesterol", "bleeding risk"]
EVERYTHING = DenseParams(
    kind="ivfpq", nlist=4, pq_m=8, pq_nbits=4, nprobe=4, rescore=10_000, rescore_dtype="float32"
)


def _build(tmp_path_factory, dense: DenseParams) -> Paths:
    return guideline_index(tmp_path_factory.mktemp(f"store-{dense.kind}"), dense)


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[Paths, Paths]:
    return _build(tmp_path_factory, DenseParams(kind="flat")), _build(tmp_path_factory, EVERYTHING)


def _hits(paths: Paths) -> tuple[list[list[tuple[str, float]]], DenseIndex]:
    index = load_index(paths.indexes_dir / "default", embedder_fingerprint=HashEmbedder().fingerprint())
    try:
        retriever = make_retriever(index, HashEmbedder(), "dense")
        found = [[(h.chunk.chunk_id, h.score) for h in retriever.retrieve(q, 6)] for q in QUERIES]
        return found, index.dense
    finally:
        index.close()


def test_full_probe_and_rescore_returns_the_flat_hits(pair):
    flat, _ = _hits(pair[0])
    ivfpq, dense = _hits(pair[1])
    assert isinstance(dense, DenseIndex) and dense.params == EVERYTHING
    assert all(flat) and [[cid for cid, _ in q] for q in ivfpq] == [[cid for cid, _ in q] for q in flat]
    assert [[s for _, s in q] for q in ivfpq] == [[pytest.approx(s, abs=1e-6) for _, s in q] for q in flat]


def test_the_manifest_checksums_cover_the_ivfpq_files(pair):
    index = load_index(pair[1].indexes_dir / "default")
    try:
        names = {name.split("/")[-1] for name in index.manifest["files"]}
    finally:
        index.close()
    assert {"index.faiss", "lists.ivfdata", "vectors.f32.npy", "ivf.json"} <= names
