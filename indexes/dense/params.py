"""``DenseParams``: the kind of a dense index and its settings, checked on creation.

A module of its own so that ``index.py`` and ``ivf.py`` (which ``index.py`` imports) can both name
it; callers import it from ``indexes.dense.index``, beside ``DenseIndex``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from core.errors import ConfigError

RESCORE_DTYPES = ("float16", "float32")  # of the ivfpq re-scoring vectors file
# The embedder's weights and products, recorded in the index. bfloat16 products embed 2.2x the
# float rate here (a CPU with bfloat16 dot products), with the same recall and another outcome for
# 1 of 404 clinician dev questions: the default on such a CPU. int8 embeds 2.9x, the same recall,
# but other outcomes for 2.7% (over the 1% allowed): opt-in (docs/benchmarks.md, "First run in
# four minutes").
EMBEDDER_PRECISIONS = ("float32", "bfloat16", "int8")
BFLOAT16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})  # /proc/cpuinfo: bfloat16 dot products


@cache
def default_embedder_precision(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """bfloat16 on a CPU with bfloat16 dot products, else float32 (elsewhere torch emulates them:
    not measured, and not what was judged)."""
    try:
        flags = next((line for line in cpuinfo.read_text().splitlines() if line.startswith("flags")), "")
    except OSError:  # not Linux: no flags to read
        return "float32"
    return "bfloat16" if BFLOAT16_FLAGS & set(flags.split()) else "float32"


@dataclass(frozen=True)
class DenseParams:
    kind: str = "flat"  # "flat" | "hnsw" | "ivfpq"
    hnsw_m: int = 32
    ef_construction: int = 200
    ef_search: int = 128
    # ivfpq (defaults chosen at 1M by bench/retrieval/ivfpq_rescore.py: recall@10 0.97; docs/benchmarks.md)
    nlist: int = 1024  # inverted lists (coarse centroids); about 4-16 x sqrt(rows)
    pq_m: int = 96  # PQ sub-quantisers = bytes per vector at 8 bits; must divide the dimension
    pq_nbits: int = 8
    nprobe: int = 128  # lists searched per query
    rescore: int = 100  # IVF-PQ candidates re-scored with exact vectors (0: none)
    rescore_dtype: str = "float16"  # of the memory-mapped vectors file: float16 | float32
    train_size: int = 65_536  # training sample (rows), drawn with a fixed seed

    def __post_init__(self) -> None:
        if self.kind not in {"flat", "hnsw", "ivfpq"}:
            raise ConfigError(
                f"unknown dense index kind {self.kind!r}; choose flat or hnsw (in RAM) or ivfpq (compressed)"
            )
        for name in ("nlist", "pq_m", "nprobe", "train_size", "hnsw_m", "ef_construction", "ef_search"):
            if getattr(self, name) < 1:
                raise ConfigError(f"dense {name} must be at least 1, not {getattr(self, name)}")
        if not 1 <= self.pq_nbits <= 16:
            raise ConfigError(f"pq_nbits {self.pq_nbits} is outside 1..16; 8 is the usual choice")
        if self.nprobe > self.nlist:
            raise ConfigError(f"nprobe {self.nprobe} exceeds nlist {self.nlist}; lower nprobe")
        if self.rescore < 0:
            raise ConfigError(f"rescore must be 0 (off) or a candidate count, not {self.rescore}")
        if self.rescore_dtype not in RESCORE_DTYPES:
            raise ConfigError(f"rescore_dtype {self.rescore_dtype!r}: choose float16 or float32")
