"""Embedding throughput of the default embedder: with and without length-sorted batching, and
the plain-torch encoder (``indexes/dense/minilm.py``) against sentence-transformers on the same texts.

A fixed seeded sample of real chunks (their indexed texts, as the index build embeds them) goes
through ``indexes.dense.embedding_cache.embed_cached`` (an empty temporary cache each time, so
nothing is reused), once in corpus order and once sorted by length. The sample is cut into
blocks and the two orders alternate per block (ABBA), so drift in machine load hits both alike.
Torch uses every core, as an index build does. sentence-transformers already sorts the texts of
each ``encode`` call by length, so the global sort only changes which texts share a 256-text
cache batch (and so how much each model batch pads).

The implementations are compared the same way (ABBA blocks, one process, every core):
sentence-transformers ``encode`` against :class:`indexes.dense.embedder.MiniLmEmbedder`, with the
largest absolute difference between their vectors.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.retrieval import corpus
from bench.retrieval.materialize import bench_dir
from core.paths import Paths
from core.types import Chunk
from indexes import text

SAMPLE = 2000
BLOCKS = 2  # each block spans several 256-text cache batches, or sorting could change nothing


def sample_texts(n: int) -> list[str]:
    pool = corpus.load_pool(Paths.from_env().indexes_dir, bench_dir())
    rows = np.random.default_rng([corpus.SEED, 3]).choice(pool.size, size=n, replace=False)
    chunks = [Chunk.from_json(json.loads(line)) for line in pool.lines(rows)]
    return [text.indexed_text(c.title, c.section, c.text) for c in chunks]


def run(n: int = SAMPLE) -> dict[str, Any]:
    import torch

    from indexes.dense.embedder import MiniLmEmbedder
    from indexes.dense.embedding_cache import embed_cached

    texts = sample_texts(n)
    embedder = MiniLmEmbedder(threads=os.cpu_count())
    embedder.embed(["warm up"])
    torch.set_num_threads(os.cpu_count() or 1)  # an earlier benchmark in this process may have set 1
    wordpieces = [len(e.ids) for e in embedder._tokenizer.encode_batch(texts)]
    seconds = {"unsorted": 0.0, "sorted": 0.0}
    per_block: list[dict[str, float]] = []
    size = -(-n // BLOCKS)
    for b in range(BLOCKS):
        block = texts[b * size : (b + 1) * size]
        order = ["unsorted", "sorted"] if b % 2 == 0 else ["sorted", "unsorted"]
        row = {}
        for mode in order:
            with tempfile.TemporaryDirectory() as cache:
                t0 = time.perf_counter()
                embed_cached(embedder, block, Path(cache), sort_by_length=mode == "sorted", progress=False)
                row[mode] = time.perf_counter() - t0
            seconds[mode] += row[mode]
        per_block.append({k: round(v, 2) for k, v in row.items()})
    return {
        "embedder": embedder.name,
        "torch_threads": torch.get_num_threads(),
        "sample": f"{n} real pool chunks (indexed text), seed {corpus.SEED}",
        "wordpieces": {
            "mean": round(float(np.mean(wordpieces)), 1),
            "median": int(np.median(wordpieces)),
            "max_seq_length": embedder.max_tokens,
        },
        "batch": {"cache_batch": 256, "model_batch": embedder.batch_size, "blocks": BLOCKS},
        "seconds": {k: round(v, 2) for k, v in seconds.items()},
        "chunks_per_s": {k: round(n / v, 1) for k, v in seconds.items()},
        "speedup_sorted": round(seconds["unsorted"] / seconds["sorted"], 3),
        "per_block_seconds": per_block,
        "implementations": implementations(embedder, texts),
    }


def implementations(embedder: Any, texts: list[str]) -> dict[str, Any]:
    """Chunks/s of sentence-transformers and of medcite's encoder on ``texts``, ABBA blocks."""
    import sentence_transformers

    from indexes.dense.embedder import packaged_minilm_dir

    reference = sentence_transformers.SentenceTransformer(str(packaged_minilm_dir()), device="cpu")
    reference.encode(["warm up"])
    encode = {
        "sentence-transformers": lambda block: reference.encode(
            block, batch_size=embedder.batch_size, normalize_embeddings=True, convert_to_numpy=True
        ),
        "medcite (plain torch)": embedder.embed,
    }
    seconds = dict.fromkeys(encode, 0.0)
    largest = 0.0
    size = -(-len(texts) // BLOCKS)
    for b in range(BLOCKS):
        block = texts[b * size : (b + 1) * size]
        names = list(encode) if b % 2 == 0 else list(reversed(encode))
        vectors = {}
        for name in names:
            t0 = time.perf_counter()
            vectors[name] = np.asarray(encode[name](block), dtype=np.float32)
            seconds[name] += time.perf_counter() - t0
        largest = max(largest, float(np.abs(vectors[names[0]] - vectors[names[1]]).max()))
    return {
        "seconds": {k: round(v, 2) for k, v in seconds.items()},
        "chunks_per_s": {k: round(len(texts) / v, 1) for k, v in seconds.items()},
        "max_abs_difference": largest,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
