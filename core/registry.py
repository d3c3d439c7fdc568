"""The one place where configuration strings become classes.

Entries are ``"module:attribute"`` paths resolved on first use, so looking a name up never
imports a heavy dependency (torch, faiss) that the chosen component does not need.
"""

from __future__ import annotations

import importlib
from typing import Any

from core.errors import ConfigError

SOURCES: dict[str, str] = {
    "open-medicine": "corpora.sources.open_medicine:OpenMedicineSource",
    "hpo": "corpora.sources.hpo:HpoSource",
    "orphanet": "corpora.sources.orphanet:OrphanetSource",
    "medquad": "corpora.sources.medquad:MedQuADSource",
    "disease-ontology": "corpora.sources.disease_ontology:DiseaseOntologySource",
    "ngc": "corpora.sources.ngc:NgcSource",
    "bioasq-snippets": "corpora.sources.bioasq:BioasqSnippetSource",
    "pubmedqa-abstracts": "corpora.sources.pubmedqa:PubmedqaAbstractSource",
    "user-docs": "corpora.sources.user_docs:UserDocsSource",
}

LEXICAL_BACKENDS: dict[str, str] = {
    "bm25s": "indexes.bm25:Bm25sIndex",
    "rank-bm25": "indexes.bm25:RankBm25Index",
}

EMBEDDERS: dict[str, str] = {
    "minilm": "indexes.dense.embedder:MiniLmEmbedder",
}

RERANKERS: dict[str, str] = {
    "none": "rag.rerank.identity:IdentityReranker",
    "cross-encoder": "rag.rerank.cross_encoder:CrossEncoderReranker",
    "llm": "rag.rerank.llm:LlmRelevanceReranker",
    "trained": "rag.rerank.trained:TrainedReranker",
}

GENERATORS: dict[str, str] = {
    "llama-cpp": "rag.generate.llamacpp:LlamaCppGenerator",
    "openai": "rag.generate.openai_compat:OpenAICompatGenerator",
}

KINDS: dict[str, dict[str, str]] = {
    "source": SOURCES,
    "lexical backend": LEXICAL_BACKENDS,
    "embedder": EMBEDDERS,
    "reranker": RERANKERS,
    "generator": GENERATORS,
}


def resolve(kind: str, name: str) -> Any:
    """Return the class registered as ``name`` for ``kind`` or raise a ConfigError listing choices."""
    table = KINDS[kind]
    try:
        target = table[name]
    except KeyError:
        choices = ", ".join(sorted(table))
        raise ConfigError(f"unknown {kind} {name!r}; choose one of: {choices}") from None
    module_name, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module_name), attribute)
