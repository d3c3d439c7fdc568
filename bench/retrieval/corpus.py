"""The benchmark corpora: real samples of 10k and 100k chunks and a documented synthetic 1M.

The pool is every real chunk of the built indexes ``orphanet-medquad``, ``default`` and
``bioasq-snippets`` (~124k chunks): their ``chunks.jsonl`` lines verbatim, their BM25 tokens
(``indexes.text`` over ``indexed_text``, exactly as the index build makes them) and their real
MiniLM vectors, reconstructed from the flat FAISS files (nothing is re-embedded). It is cached
under ``<data>/bench/pool/`` as ``.npy`` and JSON.

- ``10k`` and ``100k``: a seeded sample of pool rows without replacement (real data only).
- ``1M``: every pool row plus synthetic chunks, each derived from a seeded random pool row:
  tokens: every token kept with probability ``1 - REPLACE_P``, otherwise replaced by a token drawn
  from the pool's unigram distribution (lengths and vocabulary stay real); vector: the row's
  vector plus gaussian noise of standard deviation ``NOISE_SIGMA`` per dimension, renormalised
  (cosine to its origin about ``1 / sqrt(1 + 384 * sigma**2)`` = 0.89). Embedding a million
  chunks on 2 cores would take hours and would measure the embedder, not the index.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from core.types import Chunk
from indexes import text
from indexes.manifest import read_manifest

POOL_INDEXES = ("orphanet-medquad", "default", "bioasq-snippets")
SIZES = ("10k", "100k", "1M")  # the sizes; any "<n>k" / "<n>M" works (e.g. "150k" to test)
SEED = 0
QUESTIONS = 200
REPLACE_P = 0.2
NOISE_SIGMA = 0.025
SYNTHETIC_METHOD = {
    "base": "each synthetic chunk copies a seeded uniformly drawn real chunk",
    "tokens": f"each token replaced with probability {REPLACE_P} by a real unigram draw",
    "vectors": f"real vector + N(0, {NOISE_SIGMA}^2) per dimension, renormalised (cosine to origin ~0.89)",
    "text": "the stored chunk text is the perturbed tokens joined by spaces; title names the origin",
}


@dataclass
class Pool:
    """The real chunks: raw JSON lines, flat token ids with offsets, vocabulary, vectors."""

    folder: Path
    line_offsets: np.ndarray  # int64, n + 1
    token_ids: np.ndarray  # int32, all tokens of all chunks
    token_offsets: np.ndarray  # int64, n + 1
    vocab: list[str]
    vectors: np.ndarray  # float32 n x dim, memory-mapped
    info: dict

    @property
    def size(self) -> int:
        return len(self.line_offsets) - 1

    def lines(self, rows: np.ndarray) -> list[bytes]:
        with (self.folder / "chunks.jsonl").open("rb") as fh:
            out = []
            for r in rows:
                fh.seek(int(self.line_offsets[r]))
                out.append(fh.read(int(self.line_offsets[r + 1] - self.line_offsets[r])))
            return out

    def tokens(self, rows: np.ndarray) -> list[list[str]]:
        return [
            [self.vocab[t] for t in self.token_ids[self.token_offsets[r] : self.token_offsets[r + 1]]]
            for r in rows
        ]


def pool_fingerprint(indexes_dir: Path) -> dict[str, str]:
    return {name: read_manifest(indexes_dir / name)["corpus_fingerprint"] for name in POOL_INDEXES}


def load_pool(indexes_dir: Path, bench_dir: Path) -> Pool:
    """The cached pool, rebuilt first when the source indexes changed."""
    folder = bench_dir / "pool"
    info_path = folder / "pool.json"
    wanted = pool_fingerprint(indexes_dir)
    if not info_path.is_file() or json.loads(info_path.read_text()).get("sources") != wanted:
        _build_pool(indexes_dir, folder, wanted)
    info = json.loads(info_path.read_text())
    return Pool(
        folder=folder,
        line_offsets=np.load(folder / "line_offsets.npy", allow_pickle=False),
        token_ids=np.load(folder / "token_ids.npy", allow_pickle=False),
        token_offsets=np.load(folder / "token_offsets.npy", allow_pickle=False),
        vocab=json.loads((folder / "vocab.json").read_text()),
        vectors=np.load(folder / "vectors.npy", mmap_mode="r", allow_pickle=False),
        info=info,
    )


def _build_pool(indexes_dir: Path, folder: Path, fingerprints: dict[str, str]) -> None:
    import faiss

    folder.mkdir(parents=True, exist_ok=True)
    vocab: dict[str, int] = {}
    ids: list[int] = []
    token_offsets, line_offsets, vectors, counts = [0], [0], [], {}
    with (folder / "chunks.jsonl").open("wb") as out:
        for name in POOL_INDEXES:
            index = faiss.read_index(str(indexes_dir / name / "dense" / "index.faiss"))
            vectors.append(index.reconstruct_n(0, index.ntotal))
            lines = (indexes_dir / name / "chunks.jsonl").read_bytes().splitlines(keepends=True)
            if len(lines) != index.ntotal:
                raise ValueError(f"{name}: {len(lines)} chunks but {index.ntotal} vectors; rebuild it")
            counts[name] = len(lines)
            for line in tqdm(lines, desc=f"tokenizing {name}", unit="chunk"):
                chunk = Chunk.from_json(json.loads(line))
                for token in text.tokenize(text.indexed_text(chunk.title, chunk.section, chunk.text)):
                    ids.append(vocab.setdefault(token, len(vocab)))
                token_offsets.append(len(ids))
                out.write(line)
                line_offsets.append(line_offsets[-1] + len(line))
    np.save(folder / "vectors.npy", np.concatenate(vectors).astype(np.float32), allow_pickle=False)
    np.save(folder / "token_ids.npy", np.asarray(ids, dtype=np.int32), allow_pickle=False)
    np.save(folder / "token_offsets.npy", np.asarray(token_offsets, dtype=np.int64), allow_pickle=False)
    np.save(folder / "line_offsets.npy", np.asarray(line_offsets, dtype=np.int64), allow_pickle=False)
    (folder / "vocab.json").write_text(json.dumps(list(vocab), ensure_ascii=False))
    embedder = read_manifest(indexes_dir / POOL_INDEXES[0])["embedder"]
    info = {
        "sources": fingerprints,
        "chunks": counts,
        "embedder": embedder,
        "tokenizer": text.tokenizer_config(),
    }
    (folder / "pool.json").write_text(json.dumps(info, indent=1) + "\n")


# -- samples and the synthetic expansion (pure, seeded) ---------------------------------------


def chunk_count(size: str) -> int:
    """``"10k"`` -> 10,000, ``"1M"`` -> 1,000,000."""
    units = {"k": 1_000, "M": 1_000_000}
    if len(size) < 2 or size[-1] not in units or not size[:-1].isdigit():
        raise ValueError(f"size {size!r}: write a whole number followed by k or M, e.g. 100k or 1M")
    return int(size[:-1]) * units[size[-1]]


def questions(n: int, seed: int = SEED) -> list[str]:
    """The first ``n`` of a fixed seeded sample of 200 MedQuAD questions (smaller runs are prefixes)."""
    from bench.retrieval.query_latency import sample_questions
    from core.paths import Paths

    pool = sample_questions(Paths.from_env(), "medquad", max(n, QUESTIONS), seed)
    return pool[:n]


def sample_rows(pool_size: int, size: int, seed: int = SEED) -> np.ndarray:
    """Sorted pool rows of a real sample; the whole pool when ``size`` is at least its size."""
    if size >= pool_size:
        return np.arange(pool_size, dtype=np.int64)
    rng = np.random.default_rng([seed, size])
    return np.sort(rng.choice(pool_size, size=size, replace=False)).astype(np.int64)


def synthetic_bases(pool_size: int, count: int, seed: int = SEED) -> np.ndarray:
    """For each synthetic chunk, the pool row it is derived from."""
    return np.random.default_rng([seed, 1, count]).integers(0, pool_size, size=count, dtype=np.int64)


def perturb_tokens(
    token_ids: np.ndarray, token_offsets: np.ndarray, bases: np.ndarray, rng: np.random.Generator, p: float
) -> tuple[np.ndarray, np.ndarray]:
    """Token ids and offsets of copies of ``bases`` with a share ``p`` of tokens replaced.

    A replacement is a uniformly drawn position of the flat token array, i.e. a draw from the
    corpus's unigram distribution; each copy keeps its origin's length.
    """
    lengths = token_offsets[bases + 1] - token_offsets[bases]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    # position of token j of copy i in the flat array: start(base_i) + j
    positions = np.repeat(token_offsets[bases] - offsets[:-1], lengths) + np.arange(offsets[-1])
    out = token_ids[positions].copy()
    replace = rng.random(out.size) < p
    out[replace] = token_ids[rng.integers(0, token_ids.size, size=int(replace.sum()))]
    return out, offsets


def perturb_vectors(
    vectors: np.ndarray, bases: np.ndarray, rng: np.random.Generator, sigma: float
) -> np.ndarray:
    """Unit vectors near ``vectors[bases]``: gaussian noise of ``sigma`` per dimension, renormalised."""
    out = np.asarray(vectors[bases], dtype=np.float32).copy()
    out += sigma * rng.standard_normal(out.shape, dtype=np.float32)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def synthetic_chunk(n: int, base: Chunk, tokens: list[str]) -> Chunk:
    """The stored record of synthetic chunk ``n``: its BM25 tokens joined, its origin named."""
    body = " ".join(tokens)
    return Chunk(
        chunk_id=f"synthetic-{n}#0",
        doc_id=f"synthetic-{n}",
        title=f"synthetic copy of {base.chunk_id}",
        section=(),
        source="synthetic",
        url=base.url,
        license=base.license,
        start=0,
        end=len(body),
        text=body,
    )


def describe(size: str, pool: Pool) -> dict:
    n = chunk_count(size)
    real = min(n, pool.size)
    return {
        "size": size,
        "chunks": n,
        "real_chunks": real,
        "synthetic_chunks": n - real,
        "seed": SEED,
        "pool": pool.info["chunks"],
        "synthetic": None if n <= pool.size else SYNTHETIC_METHOD,
    }
