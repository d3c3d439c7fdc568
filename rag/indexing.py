"""Library calls behind ``medcite index ...`` and ``medcite retrieve``: build, inspect, search."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.errors import ConfigError, MedciteError
from core.paths import Paths
from core.types import Filters, Hit
from corpora.chunking import ChunkerConfig
from indexes.dense.index import DenseParams
from indexes.dense.params import default_embedder_precision
from indexes.manifest import read_manifest, verify_files
from indexes.store import LoadedIndex, load_index
from rag.protocols import Retriever
from rag.reading.terms import VERSION as VOCABULARY_VERSION
from rag.reading.terms import Vocabulary


def _parse_sources(raw: list[str] | None, path: Path | None) -> list[tuple[str, Path | None]]:
    from corpora.catalog import DEFAULT_CORPUS

    names = raw or list(DEFAULT_CORPUS)
    if path is not None and len(names) != 1:
        raise ConfigError("--path needs exactly one --source; use --source NAME=PATH for several")
    parsed: list[tuple[str, Path | None]] = []
    for item in names:
        name, sep, where = item.partition("=")
        parsed.append((name, Path(where) if sep else path))
    return parsed


def build_from_cli(
    paths: Paths,
    *,
    sources: list[str] | None = None,
    path: Path | None = None,
    options: Sequence[str] = (),
    fetch: bool = False,
    name: str = "default",
    dense: str | None = "flat",
    lexical: str = "bm25s",
    embedder_precision: str | None = None,
    max_tokens: int = ChunkerConfig.max_tokens,
    overlap: int = ChunkerConfig.overlap,
    limit: int | None = None,
    skip_existing: bool = False,
    progress: bool = True,
    engine: str = "local",
    address: str | None = None,
    workers: int | None = None,
    shards: int = 1,
) -> str:
    """Build an index and return a one-line summary (defaults: the CLI's, the default corpus)."""
    from corpora.build import BuildConfig, build_index
    from corpora.chunking import WordpieceSpans
    from corpora.engine import make_engine
    from indexes.bm25 import Bm25Params
    from indexes.dense.embedder import MiniLmEmbedder, packaged_minilm_dir

    opened = _open_sources(paths, sources, path, options, fetch)
    config = BuildConfig(
        name=name,
        chunker=ChunkerConfig(max_tokens=max_tokens, overlap=overlap),
        bm25=Bm25Params(),
        lexical_backend=lexical,
        dense=DenseParams(kind=dense) if dense else None,
        limit=limit,
        shards=shards,
    )
    build_engine = make_engine(engine, address=address, workers=workers)  # flag errors before any work
    # bulk float embedding runs on torch (faster once loaded); int8 on ONNX Runtime
    precision = embedder_precision or default_embedder_precision()
    embedder = MiniLmEmbedder(runtime="torch", precision=precision) if dense else None
    model_dir = embedder.model_path if embedder else packaged_minilm_dir()
    spans = WordpieceSpans(model_dir / "tokenizer.json")
    if skip_existing and _same_build(paths.indexes_dir / name, opened, config, embedder):
        return f"index {name} is up to date (same sources and settings); skipped"
    report = build_index(
        opened,
        config,
        paths.indexes_dir,
        spans=spans,
        tokenizer_name=spans.name,
        embedder=embedder,
        cache_dir=paths.cache_dir / "embeddings",
        progress=progress,
        engine=build_engine,
    )
    _read_vocabulary(paths, report.folder)
    return report.summary()


def _read_vocabulary(paths: Paths, folder: Path) -> None:
    """Read the new index's corpus vocabulary now, so that the first question does not wait for it."""
    index = load_index(folder)
    try:
        corpus_vocabulary(paths, index)
    finally:
        index.close()


def corpus_vocabulary(paths: Paths, index: LoadedIndex) -> Vocabulary:
    """The support gate's view of the index's corpus (``rag/reading/terms.py``), cached as JSON under
    the corpus fingerprint: built once per corpus, read in milliseconds after that."""
    fingerprint = str(index.manifest.get("corpus_fingerprint", "unknown"))
    path = paths.cache_dir / "vocabulary" / f"{fingerprint}.v{VOCABULARY_VERSION}.json"
    return Vocabulary.cached(path, index.chunks)


def _open_sources(
    paths: Paths, sources: list[str] | None, path: Path | None, options: Sequence[str], fetch: bool
) -> list[Any]:
    """The sources to build, each with its ``--set`` options."""
    from corpora.catalog import open_source, parse_option

    per_source: dict[str, dict[str, Any]] = {}
    for raw in options:
        source, key, value = parse_option(raw)
        per_source.setdefault(source, {})[key] = value
    specs = _parse_sources(sources, path)
    unused = set(per_source) - {n for n, _ in specs}
    if unused:
        raise ConfigError(f"--set names source(s) not being built: {sorted(unused)}")
    return [open_source(n, paths, path=p, options=per_source.get(n), fetch=fetch) for n, p in specs]


def _same_build(folder: Path, sources: list[Any], config: Any, embedder: Any) -> bool:
    from dataclasses import asdict

    try:
        manifest = read_manifest(folder)
        verify_files(folder, manifest, checksums=False)
    except MedciteError:  # missing or unreadable: build it
        return False
    chunker = {k: v for k, v in manifest["chunker"].items() if k not in {"tokenizer"}}
    return bool(
        manifest["sources"] == [s.describe() for s in sources]
        and chunker == {**asdict(config.chunker), "limit": config.limit}
        and manifest["lexical"]["backend"] == config.lexical_backend
        and manifest["dense"] == (asdict(config.dense) if config.dense else None)
        and manifest.get("embedder") == (embedder.fingerprint() if embedder is not None else None)
        and (manifest.get("shards") or {}).get("count", 1) == config.shards
    )


def index_info(paths: Paths, name: str, *, verify: bool) -> dict[str, Any]:
    folder = paths.indexes_dir / name
    manifest = read_manifest(folder)
    verify_files(folder, manifest, checksums=verify)
    return manifest


def open_index(paths: Paths, name: str, *, with_embedder: bool) -> tuple[LoadedIndex, Any]:
    """Load index ``name`` and, if asked and the index has vectors, its query embedder."""
    embedder = None
    fingerprint = None
    folder = paths.indexes_dir / name
    recorded = read_manifest(folder).get("embedder") if with_embedder else None
    if recorded:
        from indexes.dense.embedder import MiniLmEmbedder

        embedder = MiniLmEmbedder.matching(recorded)  # the index's precision and length
        fingerprint = embedder.fingerprint()
    return load_index(folder, embedder_fingerprint=fingerprint), embedder


def make_retriever(
    index: LoadedIndex,
    embedder: Any,
    mode: str,
    *,
    fusion: str | None = None,
    rrf_k: float | None = None,
    weights: Sequence[float] | None = None,
    candidates: int | None = None,
) -> Retriever:
    """The retriever of ``mode`` over ``index``; settings left out take the default profile's."""
    from rag.retrieve.dense import DenseRetriever
    from rag.retrieve.hybrid import HybridRetriever
    from rag.retrieve.lexical import Bm25Retriever

    if mode == "bm25":
        return Bm25Retriever(index)
    if embedder is None:
        raise ConfigError(f"--mode {mode} needs dense vectors; this index has none (use --mode bm25)")
    if mode == "dense":
        return DenseRetriever(index, embedder)
    if mode == "hybrid":
        return HybridRetriever(
            [Bm25Retriever(index), DenseRetriever(index, embedder)],
            fusion=fusion,
            rrf_k=rrf_k,
            weights=weights,
            candidates=candidates,
        )
    raise ConfigError(f"unknown retrieval mode {mode!r}; choose bm25, dense or hybrid")


def retrieve(paths: Paths, name: str, query: str, *, k: int, mode: str, filters: Filters) -> list[Hit]:
    if k < 1:
        raise ConfigError("--k must be at least 1")
    index, embedder = open_index(paths, name, with_embedder=mode != "bm25")
    try:
        return make_retriever(index, embedder, mode).retrieve(query, k, filters)
    finally:
        index.close()
