"""Copy a built, unsharded index into a sharded one that gives the same answers.

For trying the sharded format on an index already built (and for tests): the chunks are copied,
BM25 is re-scored per shard with global statistics, the stored vectors (flat or hnsw) are split
into one FAISS file per shard, and a manifest with ``shards`` and every file's sha256 is written.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from core.errors import ConfigError
from indexes import text
from indexes.bm25 import Bm25Params
from indexes.chunkstore import CHUNKS_FILE, OFFSETS_FILE
from indexes.dense.index import DenseParams
from indexes.manifest import write_manifest
from indexes.shards import SHARDED_KINDS, shard_ranges, sharding_manifest, write_shards
from indexes.store import load_index


def reshard(src: Path, dst: Path, n_shards: int) -> dict[str, object]:
    """Write ``dst`` (which must not exist) as ``src`` split into ``n_shards``; returns its manifest."""
    if dst.exists():
        raise ConfigError(f"{dst} already exists; choose a new folder for the sharded copy")
    index = load_index(src)
    try:
        manifest = index.manifest
        if manifest.get("shards") is not None:
            raise ConfigError(f"{src} is already sharded; reshard an unsharded index")
        if manifest["lexical"]["backend"] != "bm25s":
            raise ConfigError(f"{src} has a {manifest['lexical']['backend']} index; only bm25s is sharded")
        dense = (
            DenseParams(**manifest["dense"]) if index.dense is not None and manifest.get("dense") else None
        )
        if dense is not None and dense.kind not in SHARDED_KINDS:
            raise ConfigError(f"dense kind {dense.kind!r} is one merged index; reshard flat or hnsw indexes")
        tokens = [text.tokenize(text.indexed_text(c.title, c.section, c.text)) for c in index.chunks]
        vectors = index.dense.reconstruct(0, index.dense.size) if dense is not None and index.dense else None
    finally:
        index.close()
    params = Bm25Params(**{k: manifest["lexical"][k] for k in ("k1", "b", "method")})
    ranges = shard_ranges(len(tokens), n_shards)
    work = dst.with_name(f".{dst.name}.resharding")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        for name in (CHUNKS_FILE, OFFSETS_FILE):
            shutil.copyfile(src.resolve() / name, work / name)
        write_shards(work, tokens, vectors, ranges, params, dense)
        fields = {k: v for k, v in manifest.items() if k not in {"files", "schema_version"}}
        written = write_manifest(work, {**fields, "shards": sharding_manifest(ranges)})
        work.rename(dst)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return written
