"""Small hand-made fixtures shared by unit tests (no models involved)."""

from __future__ import annotations

import ast
import gc
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from bench.serving.scripted import ScriptedVerifier as ScriptedVerifier  # its home since bench uses it too
from core.errors import GeneratorTimeout, SourceError
from core.paths import Paths
from core.types import Chunk, Document, Generation, Hit
from corpora.sources.base import DocumentBuilder


def whitespace_spans(text: str) -> list[tuple[int, int]]:
    """A stand-in for the wordpiece tokenizer: one token per run of non-space characters."""
    return [m.span() for m in re.finditer(r"\S+", text)]


def make_doc(doc_id: str, sections: dict[str, str], *, title: str = "", source: str = "test") -> Document:
    builder = DocumentBuilder()
    for path, body in sections.items():
        builder.add(tuple(path.split("/")), body)
    return builder.build(
        doc_id=doc_id,
        title=title or doc_id,
        source=source,
        url=f"https://example.org/{doc_id}",
        license="CC0",
    )


def make_chunk(chunk_id: str, text: str, **fields: Any) -> Chunk:
    """A passage that is the whole of ``text``: document id before the ``#``, title the document id,
    section Overview, source test, licence CC0; ``fields`` replace any of those."""
    doc_id = chunk_id.split("#")[0]
    defaults: dict[str, Any] = {
        "chunk_id": chunk_id,
        "doc_id": doc_id,
        "title": doc_id,
        "section": ("Overview",),
        "source": "test",
        "url": f"https://example.org/{chunk_id}",
        "license": "CC0",
        "start": 0,
        "end": len(text),
        "text": text,
    }
    return Chunk(**{**defaults, **fields})


def make_hit(
    chunk_id: str, text: str, *, score: float = 0.0, rank: int = 1, retriever: str = "bm25", **fields: Any
) -> Hit:
    """A retrieved :func:`make_chunk` passage."""
    return Hit(chunk=make_chunk(chunk_id, text, **fields), score=score, rank=rank, retriever=retriever)


def make_turn(
    question: str = "q",
    kept: Sequence[Hit] = (),
    *,
    notes: Sequence[str] = (),
    timings: dict[str, float] | None = None,
    dropped: Sequence[Hit] = (),
) -> Any:
    """A ``rag.turn.Turn`` for ``question`` (read without a corpus vocabulary) over ``kept``."""
    from rag.reading.question import ReadQuestion
    from rag.turn import Clock, Evidence, Turn

    clock = Clock()
    clock.timings.update(timings or {})
    return Turn(ReadQuestion.read(question), Evidence(list(kept), list(dropped), notes=list(notes)), clock)


def fake_profile(changes: dict[str, Any] | None = None) -> Any:
    """The default profile as a hand-built pipeline of fakes needs it: every passage kept (no
    evidence threshold; fakes score on no calibrated scale), five kept in the reranker's order,
    nothing quoted (no relevance model), the closest lines from the kept passages at any
    probability and without the aboutness check of lines (judged, it reads a calibrated
    relevance), the heuristic verifier when one is assembled; then ``changes``
    (``rag.profile.with_changes``)."""
    from rag.profile import default_profile, with_changes

    base = {
        "rerank": {"threshold": None, "keep": 5, "candidates": 12, "order": "relevance"},
        "verify": {"backend": "heuristic"},
        "quote": {
            "threshold": None,
            "closest_floor": 0.0,
            "closest_pool_threshold": None,
            "closest_about": "off",
        },
        "generator": {"max_tokens": 256},
    }
    profile = with_changes(default_profile(), base)
    return with_changes(profile, changes) if changes else profile


def numbered_hit(n: int) -> Hit:
    """Source ``[n]`` of a numbered list: chunk ``guide:doc{n}#0`` reading ``passage {n} text``."""
    return make_hit(
        f"guide:doc{n}#0",
        f"passage {n} text",
        score=1.0,
        rank=n,
        title=f"Guideline {n}",
        section=("Section",),
        url=f"https://example.org/{n}",
    )


def passage_hits(passages: dict[str, tuple[str, str, str]], url: str, **fields: Any) -> list[Hit]:
    """``{chunk_id: (title, "Section > Subsection", text)}`` -> hybrid hits in the given order, rank n
    scored 1/n, each at ``url`` + its chunk id; ``fields`` replace any other passage field."""
    return [
        make_hit(
            cid,
            text,
            score=1.0 / rank,
            rank=rank,
            retriever="hybrid",
            title=title,
            section=tuple(section.split(" > ")),
            url=f"{url}{cid}",
            **fields,
        )
        for rank, (cid, (title, section, text)) in enumerate(passages.items(), start=1)
    ]


def hits_from(texts: dict[str, str]) -> list[Hit]:
    """``{chunk_id: text}`` -> hits in the given order with retrieval scores 10, 9, 8, ..."""
    return [make_hit(cid, text, score=10.0 - n, rank=n + 1) for n, (cid, text) in enumerate(texts.items())]


class ListRetriever:
    """A retriever that answers every query with the first ``k`` of the same hits."""

    def __init__(self, hits: Sequence[Hit], name: str = "fixed") -> None:
        self.hits = list(hits)
        self.name = name

    def retrieve(self, query: str, k: int, filters: Any = None) -> list[Hit]:
        return self.hits[:k]


def guideline_bm25(data: Path, limit: int) -> Paths:
    """A real BM25-only index of ``limit`` open-medicine guidelines (no embedder needed) in data
    folder ``data``; the paths that read it."""
    from rag.indexing import build_from_cli

    paths = Paths.from_env().model_copy(update={"data_dir": data})
    build_from_cli(paths, sources=["open-medicine"], limit=limit, dense=None, progress=False)
    return paths


def guideline_index(data: Path, dense: Any) -> Paths:
    """Six open-medicine guidelines in data folder ``data``: MiniLM wordpieces, vectors from the
    :class:`HashEmbedder` stored as ``dense`` (DenseParams); the paths that read it."""
    from corpora.build import BuildConfig, build_index
    from corpora.chunking import WordpieceSpans
    from corpora.sources.open_medicine import OpenMedicineSource
    from indexes.dense.embedder import packaged_minilm_dir

    paths = Paths.from_env().model_copy(update={"data_dir": data})
    build_index(
        [OpenMedicineSource()],
        BuildConfig(dense=dense, limit=6),
        paths.indexes_dir,
        spans=WordpieceSpans(packaged_minilm_dir() / "tokenizer.json"),
        tokenizer_name="minilm",
        embedder=HashEmbedder(),
        cache_dir=data / "cache",
        progress=False,
    )
    return paths


def word_index(
    data: Path, docs: Sequence[Document], name: str, embedder: Any = None, *, source_name: str = "test"
) -> Any:
    """Build index ``name`` of ``docs`` under ``data`` (``indexes/``, ``cache/``), one token per word;
    dense (default parameters) with ``embedder``, BM25 only without one. Returns the build report."""
    from corpora.build import BuildConfig, build_index
    from indexes.dense.index import DenseParams

    return build_index(
        [ListSource(docs, source_name)],
        BuildConfig(name=name, dense=DenseParams() if embedder is not None else None),
        data / "indexes",
        spans=whitespace_spans,
        tokenizer_name="whitespace",
        embedder=embedder,
        cache_dir=data / "cache",
        progress=False,
    )


def run_python(
    args: Sequence[str], data_dir: Path, *, check: bool = False, timeout: float | None = 300, **env: str
) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in a process of its own that reads data folder ``data_dir`` (``env``
    besides), its output captured as text."""
    return subprocess.run(
        [sys.executable, *args],
        env={**os.environ, "MEDCITE_DATA_DIR": str(data_dir), **env},
        capture_output=True,
        text=True,
        check=check,
        timeout=timeout,
    )


def smash_data_pages(path: Path) -> None:
    """Overwrite a sqlite file after its first two 4 KiB pages (header and schema kept, data gone)."""
    size = path.stat().st_size
    with path.open("r+b") as fh:
        fh.seek(2 * 4096)
        fh.write(b"\xff" * (size - 2 * 4096))


class ListSource:
    """A Source over documents held in memory."""

    name: ClassVar[str] = "test"
    default_subdir: ClassVar[str | None] = None

    def __init__(self, docs: Sequence[Document], name: str = "test") -> None:
        self.docs = list(docs)
        self.name = name  # type: ignore[misc]

    def documents(self) -> Iterator[Document]:
        yield from self.docs

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "documents": len(self.docs)}


class HashEmbedder:
    """Deterministic bag-of-words vectors: texts sharing words are close. Counts its calls."""

    dim = 64
    weights_sha256 = "0" * 64
    name = "hash-embedder"
    max_tokens = 10_000
    variant = ""

    def __init__(self) -> None:
        self.calls = 0
        self.texts_embedded = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts_embedded += len(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[row, sum(map(ord, word)) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)

    def fingerprint(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "dim": self.dim,
            "max_tokens": self.max_tokens,
            "weights_sha256": self.weights_sha256,
        }


class LetterModel:
    """Always prefers option B; optionally raises after `budget` scoring calls (a killed run)."""

    name = "letter-model"

    def __init__(self, budget: int | None = None) -> None:
        self.calls = 0
        self.budget = budget

    def next_token_logprobs(self, messages, candidates):
        self.calls += 1
        if self.budget is not None and self.calls > self.budget:
            raise KeyboardInterrupt  # what Ctrl-C or a kill does mid-run
        return {c: (-0.1 if c == "B" else -3.0) for c in candidates}

    def generate(self, messages, *, max_tokens, temperature=0.0, stop=()):
        raise AssertionError("multiple choice never generates text")

    def stream(self, messages, *, max_tokens, temperature=0.0, stop=()):
        raise AssertionError("multiple choice never generates text")

    def fingerprint(self):
        return {"name": self.name, "sha256": "0" * 64}


def docs_by_id(source: Any, *, skipped: int) -> dict[str, Document]:
    """Every document of ``source`` by id, once it is checked to have skipped ``skipped`` records."""
    docs = {d.doc_id: d for d in source.documents()}
    assert source.skipped == skipped
    return docs


def source_error(source: Any, match: str) -> SourceError:
    """The SourceError that reading every document of ``source`` raises, its message matching ``match``."""
    with pytest.raises(SourceError, match=match) as info:
        list(source.documents())
    return info.value


def all_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


class WordGenerator:
    """Streams ``reply`` word by word, counting the words produced; can time out after
    ``fail_after`` words. ``closed`` tells whether its stream was closed (finished or not)."""

    name = "word-generator"

    def __init__(self, reply: str, *, fail_after: int | None = None) -> None:
        self.reply = reply
        self.fail_after = fail_after
        self.produced = 0
        self.closed = False

    def generate(self, messages, *, max_tokens, temperature=0.0, stop=()):
        return Generation(self.reply, 100, len(self.reply.split()), 0.0)

    def stream(self, messages, *, max_tokens, temperature=0.0, stop=()):
        try:
            for n, word in enumerate(self.reply.split(" ")):
                if self.fail_after is not None and n >= self.fail_after:
                    raise GeneratorTimeout("no reply within 5 s")
                self.produced = n + 1
                yield word if n == 0 else " " + word
        finally:
            self.closed = True
        return {"prompt_tokens": 100, "completion_tokens": self.produced}

    def next_token_logprobs(self, messages, candidates):
        return {c: -1.0 for c in candidates}

    def fingerprint(self):
        return {"name": self.name}


def written_answer(prompt: str) -> str:
    """A scripted writer's text for an answer-quality run: the statements a judge splits an answer
    into, the questions it asks back, or the cited answer itself (by what the prompt asks for)."""
    if "Statements:" in prompt:
        return "- Anticoagulation is decided with a risk score."
    if "Write" in prompt and "questions" in prompt:
        return "Q: How is anticoagulation decided?\nNoncommittal: no"
    return "Anticoagulation is decided with the CHA2DS2-VASc score [1]."


def mcq_run_config(name: str, *, seed: int, **changes: Any) -> Any:
    """A small eval config: 5 MedQA + 3 PubMedQA items, closed-book and BM25 top 1 and 2 on the
    ``default`` index, profile ``fast``; ``changes`` replace top-level fields."""
    from evals.engine.config import EvalConfig

    grid = {"index": ["default"], "mode": ["bm25"], "rerank": ["none"], "k": [1, 2], "closed_book": True}
    raw = {
        "name": name,
        "profile": "fast",
        "seed": seed,
        "mcq": [{"dataset": "medqa", "n": 5}, {"dataset": "pubmedqa", "n": 3}],
        "grid": grid,
    }
    return EvalConfig.model_validate({**raw, **changes})


def parse_python(source: str) -> ast.Module:
    """``ast.parse`` with the garbage collector paused. CPython 3.11 keeps the AST converter's
    depth counter in global state (cpython#106905): a collection during the conversion can run
    Python code (finalizers, or another thread once the GIL is let go) that parses too and resets
    it, and the parse fails with "AST constructor recursion depth mismatch" (met twice late in the
    full suite, once on two tries in a row; each file parses cleanly alone)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source)
    finally:
        if paused:
            gc.enable()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until_ready(process: subprocess.Popen, url: str, seconds: float, output: Callable[[], str]) -> None:
    """Poll ``url`` until it answers 200; fail with the server's ``output()`` if it exits first,
    kill it when ``seconds`` pass."""
    import httpx

    deadline = time.monotonic() + seconds
    while True:
        if process.poll() is not None:
            pytest.fail(f"{url}'s server exited: {output()[-2000:]}")
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"{url} did not answer within {seconds:g} s")
        time.sleep(0.5)
