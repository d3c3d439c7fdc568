"""Shared benchmark helpers: machine facts, timing statistics, memory readings, child processes, JSON.

The statistics are small pure functions over plain lists so that tests can check them with
hand-made numbers. Memory of one contender is read in a child process of its own
(:func:`run_child`): the peak RSS of a process that held several contenders cannot tell them apart.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

RESULTS_DIR = Path("docs/results/bench")
PACKAGES = (
    "numpy",
    "faiss-cpu",
    "bm25s",
    "rank-bm25",
    "langchain-community",
    "langchain-core",
    "torch",
    "sentence-transformers",
    "llama_cpp_python",
    "psutil",
)


# -- statistics -------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile with linear interpolation between order statistics (numpy's default)."""
    if not values:
        raise ValueError("no values to take a percentile of")
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def summarize(ms: Sequence[float]) -> dict[str, float]:
    """Median, p95, mean of per-query milliseconds and the sequential throughput (queries/s)."""
    total_s = float(np.sum(ms)) / 1000
    return {
        "n": len(ms),
        "median_ms": round(percentile(ms, 50), 3),
        "p95_ms": round(percentile(ms, 95), 3),
        "mean_ms": round(float(np.mean(ms)), 3),
        "qps": round(len(ms) / total_s, 2) if total_s > 0 else float("inf"),
    }


def overlap_at_k(a: Sequence[Any], b: Sequence[Any], k: int) -> float:
    """Share of the top ``k`` that two rankings have in common, ``|A & B| / max(|A|, |B|)``.

    Both sides are cut to ``k`` first; two empty rankings agree (1.0).
    """
    top_a, top_b = set(list(a)[:k]), set(list(b)[:k])
    denominator = max(len(top_a), len(top_b))
    return 1.0 if denominator == 0 else len(top_a & top_b) / denominator


def recall_of_approximate(
    approx: Sequence[Sequence[Any]], exact: Sequence[Sequence[Any]], k: int
) -> list[float]:
    """Per query, the share of the exact top ``k`` that the approximate search also returned.

    ``-1`` (FAISS's "no result") is never a hit; a query with no exact result scores 1.0.
    """
    if len(approx) != len(exact):
        raise ValueError(f"{len(approx)} approximate rankings for {len(exact)} exact ones")
    out = []
    for found, truth in zip(approx, exact, strict=True):
        wanted = {r for r in list(truth)[:k] if r != -1}
        got = {r for r in list(found)[:k] if r != -1}
        out.append(1.0 if not wanted else len(wanted & got) / len(wanted))
    return out


def same_top_k_up_to_ties(
    top_a: Sequence[int], top_b: Sequence[int], scores_a: np.ndarray, scores_b: np.ndarray, k: int
) -> bool:
    """Whether two top-``k`` row lists are the same ranking result once ties are allowed for.

    Each list must be a valid top ``k`` under the *other* side's scores: every member scores at
    least that side's ``k``-th best score (relative tolerance 1e-5, float32 vs float64). Many
    corpora hold duplicate passages, and documents tied at the cut-off may be listed in any order:
    swapping them is not a different result.
    """

    def valid(top: Sequence[int], scores: np.ndarray) -> bool:
        kth = float(np.sort(scores)[-k]) if len(scores) >= k else float(np.min(scores))
        return all(float(scores[r]) >= kth - 1e-5 * abs(kth) for r in top)

    return valid(top_a, scores_b) and valid(top_b, scores_a)


def interleaved(
    contenders: Mapping[str, Callable[[Any], Any]], queries: Iterable[Any]
) -> tuple[dict[str, list[float]], dict[str, list[Any]]]:
    """Run every contender on each query in turn (order rotated per query); ms and results per contender.

    Interleaving spreads machine noise (other work, frequency changes) over all contenders alike.
    The garbage collector is paused inside each timed call (as ``timeit`` does), so one
    contender's garbage is not collected on another's clock.
    """
    names = list(contenders)
    ms: dict[str, list[float]] = {n: [] for n in names}
    results: dict[str, list[Any]] = {n: [] for n in names}
    for i, query in enumerate(queries):
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            gc.disable()
            try:
                start = time.perf_counter()
                out = contenders[name](query)
                ms[name].append(1000 * (time.perf_counter() - start))
            finally:
                gc.enable()
            results[name].append(out)
    return ms, results


# -- memory -----------------------------------------------------------------------------------


def rss_mb() -> float:
    import psutil

    return float(psutil.Process().memory_info().rss / 2**20)


def peak_rss_mb() -> float:
    """This process's peak resident set size so far (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class PeakSampler:
    """Samples RSS in a background thread; ``peak_mb`` is the largest reading inside the block.

    ru_maxrss only grows, so it cannot show the peak of a later, smaller stage; sampling can.
    """

    def __init__(self, interval_s: float = 0.05, read: Callable[[], float] | None = None) -> None:
        self.interval_s = interval_s
        self.read = read or rss_mb  # e.g. tree_rss_mb: this process and its children
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_mb = max(self.peak_mb, self.read())
            self._stop.wait(self.interval_s)

    def __enter__(self) -> PeakSampler:
        self.peak_mb = self.read()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak_mb = max(self.peak_mb, self.read())


def tree_rss_mb() -> float:
    """Summed RSS of this process and all its descendants (e.g. Ray's raylet, GCS and workers)."""
    import psutil

    me = psutil.Process()
    total = 0
    for proc in [me, *me.children(recursive=True)]:
        try:
            total += proc.memory_info().rss
        except psutil.Error:  # a process that ended between listing and reading
            continue
    return total / 2**20


def record_serving(
    out: dict[str, Any], serve: Callable[[Any], Any], queries: Iterable[Any], peak_mb: float, base_mb: float
) -> dict[str, Any]:
    """After a contender's build or load: every query once, then into ``out`` the peak RSS of the
    build or load (``peak_mb``), the RSS while serving and what the index holds above ``base_mb``
    (the RSS after imports)."""
    for query in queries:
        serve(query)
    out["peak_build_or_load_mb"] = round(peak_mb, 1)
    out["rss_serving_mb"] = round(rss_mb(), 1)
    out["index_mb"] = round(out["rss_serving_mb"] - base_mb, 1)
    return out


def memory_bandwidth_gbps(megabytes: int = 512, repeats: int = 5) -> dict[str, float]:
    """Single-thread copy bandwidth with numpy: (bytes read + bytes written) / best time.

    The floor of a memory-bound scan is bytes scanned / this rate.
    """
    src = np.ones(megabytes * 2**20 // 8, dtype=np.float64)
    dst = np.empty_like(src)
    best = min(_timed_copy(src, dst) for _ in range(repeats))
    return {"copy_gbps": round(2 * src.nbytes / best / 1e9, 2), "array_mb": megabytes}


def _timed_copy(src: np.ndarray, dst: np.ndarray) -> float:
    start = time.perf_counter()
    np.copyto(dst, src)
    return time.perf_counter() - start


# -- machine and threads ----------------------------------------------------------------------


def set_threads(n: int) -> dict[str, int]:
    """Cap faiss and torch at ``n`` threads (single-query latency is measured with 1)."""
    out = {}
    import faiss

    faiss.omp_set_num_threads(n)
    out["faiss"] = n
    if "torch" in sys.modules:  # only where the embedder is in use; importing torch costs 0.5 GB
        sys.modules["torch"].set_num_threads(n)
        out["torch"] = n
    return out


def versions() -> dict[str, str]:
    found = {}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return "unknown"


def machine_info() -> dict[str, Any]:
    import psutil

    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)),
        "ram_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "l3_cache": _read("/sys/devices/system/cpu/cpu0/cache/index3/size"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "versions": versions(),
    }


# -- results and child processes --------------------------------------------------------------


def write_result(name: str, payload: Mapping[str, Any], out_dir: Path = RESULTS_DIR) -> Path:
    """Write ``<out_dir>/<name>.json`` with machine facts and the time of the run in front."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.json"
    full: dict[str, Any] = {"benchmark": name, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    full |= {"machine": machine_info(), **payload}
    path.write_text(json.dumps(full, indent=1, ensure_ascii=False) + "\n")
    return path


def run_child(module: str, args: Mapping[str, Any], timeout_s: float = 1800) -> dict[str, Any]:
    """Run ``python -m module --child '<json args>'`` and return the JSON it prints last."""
    cmd = [sys.executable, "-m", module, "--child", json.dumps(dict(args))]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        raise RuntimeError(f"child {module} {dict(args)} exited {proc.returncode}:\n{tail}")
    return dict(json.loads(lines[-1]))


def child_entry(argv: Sequence[str], handler: Callable[[dict[str, Any]], dict[str, Any]]) -> bool:
    """If ``argv`` asks for a child run, run ``handler`` on its arguments, print JSON and return True."""
    if len(argv) >= 2 and argv[0] == "--child":
        # Sampled, not ru_maxrss: a child started by fork can inherit its parent's peak reading.
        with PeakSampler() as sampler:
            result = handler(json.loads(argv[1]))
        result.setdefault("process_peak_rss_mb", round(sampler.peak_mb, 1))
        print(json.dumps(result), flush=True)
        return True
    return False
