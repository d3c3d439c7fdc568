"""IVF-PQ: a compressed dense index built from shards, with exact re-scoring from a memory-mapped file.

Build (each step a plain function of paths and arrays, so a Ray task on another node can run it):
``train_ivfpq`` trains the coarse quantiser and the product quantiser once on a sample and writes
an empty index; ``add_ivfpq_shard`` adds one shard's vectors, under their global row ids, into a
copy of it; ``merge_ivfpq`` merges the shards with FAISS's ``merge_ondisk`` into one folder:

    index.faiss        the trained index; its inverted lists point at lists.ivfdata
    lists.ivfdata      the codes and row ids of every list (FAISS's on-disk inverted lists)
    vectors.f16.npy    the exact vectors (or vectors.f32.npy), read memory-mapped to re-score
    ivf.json           rows, file names and sizes (checked before FAISS maps the lists)
    medcite_dense.json the DenseParams

Each file the build steps write gets a JSON sidecar (``<file>.json``: the params of the trained
index, or a shard's first row and row count); the merge takes the shards in row order and refuses
gaps and overlaps. The folder is written under a temporary name and renamed into place, and it is read with
``IO_FLAG_ONDISK_SAME_DIR``, so it can be moved. A search takes the ``rescore`` best candidates
of the IVF-PQ search and ranks them by their exact inner product. Nothing is pickled.
"""

from __future__ import annotations

import json
import mmap
import os
import shutil
import uuid
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import ConfigError, IndexCorruptError, require
from indexes.dense.params import DenseParams

INDEX_FILE = "index.faiss"
LISTS_FILE = "lists.ivfdata"
META_FILE = "ivf.json"
PARAMS_FILE = "medcite_dense.json"
VECTORS_FILES = {"float32": "vectors.f32.npy", "float16": "vectors.f16.npy"}
EXACT_FILTER_ROWS = 4096  # a filter this narrow is scored exactly: IVF would probe lists it misses


def _faiss() -> Any:
    return require("faiss", package="faiss-cpu", extra="dense")


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def check_shape(params: DenseParams, dim: int, n_train: int) -> None:
    """Refuse settings FAISS would fail on (or train badly with) before any work is done."""
    if dim % params.pq_m:
        raise ConfigError(f"pq_m {params.pq_m} must divide the vector dimension {dim}; try 48 or 96 for 384")
    if n_train < params.nlist or n_train < 2**params.pq_nbits:
        raise ConfigError(
            f"{n_train} training vectors for nlist {params.nlist} and {2**params.pq_nbits} PQ centroids: "
            "use a larger train_size or corpus, or a smaller nlist (about 4 x sqrt(rows)); ivfpq is for "
            "corpora too large for RAM, and a corpus this small is better served by flat or hnsw"
        )


def train_ivfpq(sample: np.ndarray, params: DenseParams, out: Path) -> None:
    """Train the coarse and product quantisers on ``sample``; write the empty index to ``out``."""
    _write_trained(trained_index(sample, params), params, out)


def _write_trained(index: Any, params: DenseParams, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    _faiss().write_index(index, str(out))
    _sidecar(out).write_text(json.dumps({"params": asdict(params), "dim": int(index.d)}))


def trained_index(sample: np.ndarray, params: DenseParams) -> Any:
    """An empty IVF-PQ index over inner product, trained on ``sample`` (FAISS's fixed seeds)."""
    faiss = _faiss()
    sample = np.ascontiguousarray(sample, dtype=np.float32)
    check_shape(params, sample.shape[1], len(sample))
    spec = f"IVF{params.nlist},PQ{params.pq_m}x{params.pq_nbits}"
    index = faiss.index_factory(sample.shape[1], spec, faiss.METRIC_INNER_PRODUCT)
    index.do_polysemous_training = False  # the factory turns it on; unused here and ~10x the training time
    index.train(sample)
    return index


def training_sample(vectors: np.ndarray, params: DenseParams, seed: int = 0) -> np.ndarray:
    """A seeded sample of ``params.train_size`` rows (all rows when there are fewer), in row order."""
    rows = training_rows(len(vectors), params, seed)
    return np.ascontiguousarray(vectors[rows], dtype=np.float32)


def training_rows(n_rows: int, params: DenseParams, seed: int = 0) -> np.ndarray:
    """The sorted rows ``training_sample`` takes from ``n_rows`` vectors."""
    n = min(params.train_size, n_rows)
    return np.sort(np.random.default_rng(seed).choice(n_rows, size=n, replace=False))


def save_built(index: Any, vectors: np.ndarray, params: DenseParams, folder: Path) -> None:
    """Write an index built in memory (trained + every row added) in the merged on-disk layout."""
    faiss = _faiss()
    work = folder.with_name(f".{folder.name}.build-{uuid.uuid4().hex[:8]}")
    work.mkdir(parents=True)
    try:
        empty = faiss.clone_index(index)
        empty.reset()
        _write_trained(empty, params, work / "trained.faiss")
        faiss.write_index(index, str(work / "shard.faiss"))
        _sidecar(work / "shard.faiss").write_text(json.dumps({"first_row": 0, "rows": int(index.ntotal)}))
        np.save(work / "vectors.npy", np.asarray(vectors, dtype=params.rescore_dtype), allow_pickle=False)
        merge_ivfpq(work / "trained.faiss", [work / "shard.faiss"], folder, work / "vectors.npy")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def add_ivfpq_shard(trained: Path, vectors: np.ndarray, first_row: int, out: Path) -> None:
    """Add ``vectors`` as rows ``first_row ..`` into a copy of the trained index; write it to ``out``."""
    faiss = _faiss()
    index = _read(trained)
    if index.ntotal:
        raise ConfigError(f"{trained} already holds {index.ntotal} vectors; pass the trained, empty index")
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    index.add_with_ids(vectors, np.arange(first_row, first_row + len(vectors), dtype=np.int64))
    out.parent.mkdir(parents=True, exist_ok=True)
    faiss.write_index(index, str(out))
    _sidecar(out).write_text(json.dumps({"first_row": int(first_row), "rows": len(vectors)}))


def merge_ivfpq(trained: Path, shard_files: Sequence[Path], folder: Path, vectors_file: Path | None) -> None:
    """Merge the shards into on-disk lists in ``folder`` (built aside, renamed into place).

    The shards must cover rows ``0 .. n`` once each. ``vectors_file`` (.npy, rows in order) is
    stored in the rescore dtype of the trained index's params (hard-linked when it already is);
    without it the index cannot re-score.
    """
    from faiss.contrib.ondisk import merge_ondisk

    faiss = _faiss()
    params_json = json.loads(_sidecar(trained).read_text())["params"]
    shard_files = sorted(shard_files, key=lambda p: json.loads(_sidecar(p).read_text())["first_row"])
    rows = _check_cover(shard_files)  # in row order, every list holds its rows as one build would
    work = folder.with_name(f".{folder.name}.partial-{uuid.uuid4().hex[:8]}")
    work.mkdir(parents=True)
    try:
        index = _read(trained)
        merge_ondisk(index, [str(p) for p in shard_files], str(work / LISTS_FILE))
        faiss.write_index(index, str(work / INDEX_FILE))
        del index
        meta: dict[str, Any] = {"rows": rows, "lists_file": LISTS_FILE, "vectors_file": None}
        meta["lists_bytes"] = (work / LISTS_FILE).stat().st_size
        if vectors_file is not None:
            meta["vectors_file"] = _store_vectors(vectors_file, work, params_json["rescore_dtype"], rows)
        (work / META_FILE).write_text(json.dumps(meta))
        (work / PARAMS_FILE).write_text(json.dumps(params_json))
        _replace(work, folder)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def _check_cover(shard_files: Sequence[Path]) -> int:
    spans = sorted(
        (info["first_row"], info["first_row"] + info["rows"])
        for info in (json.loads(_sidecar(p).read_text()) for p in shard_files)
    )
    end = 0
    for start, stop in spans:
        if start != end:
            raise ConfigError(f"shards leave rows {end}..{start} uncovered or overlap: {spans}")
        end = stop
    return end


def _store_vectors(source: Path, work: Path, dtype: str, rows: int) -> str:
    name = VECTORS_FILES[dtype]
    array = np.load(source, mmap_mode="r", allow_pickle=False)
    if array.ndim != 2 or len(array) != rows:
        raise ConfigError(f"{source} holds {array.shape} vectors for {rows} rows; write all rows in order")
    if array.dtype == np.dtype(dtype):
        try:
            os.link(source, work / name)
            return name
        except OSError:  # another file system
            pass
    out = np.lib.format.open_memmap(work / name, mode="w+", dtype=dtype, shape=array.shape)
    for start in range(0, rows, 100_000):
        out[start : start + 100_000] = array[start : start + 100_000]
    out.flush()
    return name


def _replace(work: Path, folder: Path) -> None:
    """Rename ``work`` to ``folder``; an existing ``folder`` is moved aside first, then deleted."""
    old = folder.with_name(f".{folder.name}.old-{uuid.uuid4().hex[:8]}")
    if folder.exists():
        folder.rename(old)
    work.rename(folder)
    shutil.rmtree(old, ignore_errors=True)


def _read(path: Path, flags: int = 0) -> Any:
    try:
        return _faiss().read_index(str(path), flags)
    except RuntimeError as exc:
        raise IndexCorruptError(f"cannot read the FAISS index {path}: {exc}; rebuild it") from exc


def load_ivfpq(folder: Path, rows: int | None = None) -> tuple[Any, np.ndarray | None]:
    """The merged index (lists memory-mapped from ``folder``) and its re-scoring vectors (mmap)."""
    faiss = _faiss()
    try:
        meta = json.loads((folder / META_FILE).read_text())
        lists = folder / meta["lists_file"]
        size = lists.stat().st_size
    except (OSError, ValueError, KeyError) as exc:
        raise IndexCorruptError(f"{folder}: IVF-PQ lists or {META_FILE} missing ({exc}); rebuild it") from exc
    if size != meta["lists_bytes"]:  # FAISS would map past the end of a truncated file and crash
        raise IndexCorruptError(f"{lists} has {size} bytes, {meta['lists_bytes']} expected; rebuild it")
    index = _read(folder / INDEX_FILE, faiss.IO_FLAG_ONDISK_SAME_DIR)
    invlists = faiss.downcast_InvertedLists(faiss.extract_index_ivf(index).invlists)
    if index.ntotal != meta["rows"] or getattr(invlists, "totsize", size) != size:
        raise IndexCorruptError(f"{folder}: index, lists and {META_FILE} disagree; rebuild it")
    vectors = None
    if meta["vectors_file"] is not None:
        try:
            vectors = np.load(folder / meta["vectors_file"], mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise IndexCorruptError(f"{folder}: re-scoring vectors unreadable ({exc}); rebuild it") from exc
        if vectors.shape != (index.ntotal, index.d):
            raise IndexCorruptError(f"{folder}: {vectors.shape} re-scoring vectors for {index.ntotal} rows")
        _random_access(vectors)
    return index, vectors


def _random_access(array: np.ndarray) -> None:
    """Tell the kernel a search reads a few scattered rows: without it, read-ahead pulls 128 KB or
    more around every 768-byte row, and the whole file soon sits in memory."""
    handle = getattr(array, "_mmap", None)
    if handle is not None and hasattr(mmap, "MADV_RANDOM"):
        handle.madvise(mmap.MADV_RANDOM)


def search_ivfpq(
    index: Any,
    vectors: np.ndarray | None,
    params: DenseParams,
    query: np.ndarray,
    k: int,
    allowed_rows: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Rows and scores, best first: IVF-PQ candidates, re-scored exactly when vectors are there."""
    faiss = _faiss()
    query = np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32)
    if allowed_rows is not None and vectors is not None and allowed_rows.size <= EXACT_FILTER_ROWS:
        return _exact(vectors, allowed_rows, query[0], k)
    selector = faiss.IDSelectorBatch(allowed_rows) if allowed_rows is not None else None
    search_params = faiss.SearchParametersIVF(sel=selector, nprobe=params.nprobe)
    rescore = params.rescore if vectors is not None else 0
    scores, found = index.search(query, max(k, rescore), params=search_params)
    rows = found[0][found[0] >= 0]
    if rows.size and int(rows.max()) >= index.ntotal:
        raise IndexCorruptError(f"the IVF-PQ lists return row {int(rows.max())} of {index.ntotal}; rebuild")
    if rescore == 0 or vectors is None:
        return rows[:k].astype(np.int64), scores[0][: rows.size][:k].astype(np.float32)
    return _exact(vectors, np.sort(rows), query[0], k)


def _exact(vectors: np.ndarray, rows: np.ndarray, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best of ``rows`` (ascending) by exact inner product; ties keep the lower row."""
    scores = np.asarray(vectors[rows], dtype=np.float32) @ query
    order = np.argsort(-scores, kind="stable")[:k]
    return rows[order].astype(np.int64), scores[order].astype(np.float32)
