"""Assemble a Pipeline from a Profile: the one place where a profile becomes live objects.

Class lookups go through ``core/registry.py``; nothing here is created at import time.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from core.errors import ConfigError
from core.paths import Paths
from core.registry import resolve
from indexes.store import LoadedIndex
from rag.indexing import corpus_vocabulary, make_retriever, open_index
from rag.pipeline import Pipeline
from rag.profile import GeneratorConfig, Profile, RerankConfig
from rag.protocols import Generator, Reranker
from rag.reading.terms import Vocabulary
from rag.rerank.evidence import check_evidence_limits


@dataclass
class Assembled:
    """A ready pipeline plus the resources it holds (close the index when done)."""

    pipeline: Pipeline
    index: LoadedIndex
    profile: Profile
    embedder: Any = None  # the query embedder, None for a BM25-only index

    def close(self) -> None:
        self.index.close()


def make_generator(config: GeneratorConfig, paths: Paths) -> Generator:
    cls = resolve("generator", config.backend)
    if config.backend == "llama-cpp":
        from rag.generate.models import DEFAULT_GENERATOR, model_path

        path = config.model_path or model_path(paths.model_dir, DEFAULT_GENERATOR)
        return cls(  # type: ignore[no-any-return]
            path,
            n_ctx=config.n_ctx,
            threads=config.threads,
            timeout_s=config.timeout_s,
            state_dir=paths.cache_dir / "llama-prefix",
        )
    if not config.base_url:
        raise ConfigError(
            "the openai generator backend needs generator.base_url (e.g. http://127.0.0.1:8080/v1)"
        )
    api_key = os.environ.get(config.api_key_env) if config.api_key_env else None
    return cls(config.base_url, config.model, api_key=api_key, timeout_s=config.timeout_s)  # type: ignore[no-any-return]


def make_reranker(config: RerankConfig, generator: Generator, paths: Paths) -> Reranker:
    cls = resolve("reranker", config.backend)
    if config.backend == "none":
        return cls()  # type: ignore[no-any-return]
    if config.backend == "cross-encoder":
        if config.model_path is None:
            raise ConfigError(
                "the cross-encoder reranker needs rerank.model_path (a local CrossEncoder folder)"
            )
        return cls(config.model_path)  # type: ignore[no-any-return]
    if config.backend == "trained":  # model_path unset: the relevance model shipped with medcite
        return cls(config.model_path)  # type: ignore[no-any-return]
    from rag.rerank.cache import ScoreCache

    return cls(generator, cache=ScoreCache(paths.cache_dir / "rerank.sqlite"))  # type: ignore[no-any-return]


def assemble(profile: Profile, paths: Paths, *, generator: Generator | None = None) -> Assembled:
    """Load the profile's index, embedder, generator, reranker and verifier into a Pipeline."""
    from rag.gate.verify import SupportVerifier

    r = profile.retrieval
    index, embedder = open_index(paths, profile.index, with_embedder=True)
    try:
        retriever = make_retriever(
            index,
            embedder,
            r.mode,
            fusion=r.fusion,
            rrf_k=r.rrf_k,
            weights=r.weights,
            candidates=r.candidates,
        )
        generator = generator or make_generator(profile.generator, paths)
        reranker = make_reranker(profile.rerank, generator, paths)
        check_evidence_limits(reranker, profile.rerank.threshold, max_keep=profile.rerank.keep)
        verifier = None  # without embeddings nothing can be verified: the gate treats it so
        if embedder is not None:
            v = profile.verify
            support_model = None
            if v.backend == "trained":
                from rag.gate.support_model import TrainedSupport

                support_model = TrainedSupport(v.model_path)
            answer_judge = None
            if v.answer_judge is not None:
                from rag.gate.answer_judge import AnswerJudge

                answer_judge = AnswerJudge(generator, v.answer_judge, floor=v.judge_above)
            verifier = SupportVerifier(
                embedder, threshold=v.threshold, model=support_model, answer_judge=answer_judge
            )
        scope = None
        if embedder is not None and profile.rerank.min_clinical is not None:  # no vectors: no check
            from rag.reading.clinical import ClinicalScope

            scope = ClinicalScope(embedder)
    except BaseException:
        index.close()
        raise

    def vocabulary() -> Vocabulary:
        return corpus_vocabulary(paths, index)

    pipeline = Pipeline(
        retriever,
        reranker,
        generator,
        verifier=verifier,
        profile=profile,
        vocabulary=vocabulary,
        scope=scope,
    )
    return Assembled(pipeline=pipeline, index=index, profile=profile, embedder=embedder)


def describe(assembled: Assembled) -> dict[str, Any]:
    """What a run manifest or /ready reports about the assembled pipeline."""
    manifest = assembled.index.manifest
    return {
        "profile": assembled.profile.name,
        "index": assembled.profile.index,
        "chunks": manifest["counts"]["chunks"],
        "corpus_fingerprint": manifest["corpus_fingerprint"],
        "generator": assembled.pipeline.generator.fingerprint(),
        "reranker": assembled.pipeline.reranker.name,
    }
