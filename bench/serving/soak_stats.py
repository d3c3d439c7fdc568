"""The soak benchmark's arithmetic, pure: windows, percentiles, the memory slope, the checks.

``bench/serving/soak.py`` does the I/O (the server, the clients, the kill); everything it concludes
is computed here from plain records, so tests can check it with hand-made numbers.

- :func:`summarize_windows`: per window of ``window_s`` (by request start), the count of every
  status and p50 / p95 latency per outcome (``answer``, ``closest_lines``, ``http_413``, ...).
- :func:`fit_line`: least squares of RSS over time with the slope's 95% interval (Student's t).
- :func:`soak_checks`: the pass/fail verdicts, each with the numbers behind it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from bench.common import percentile

SERVED = "served"  # every answered chat request (status 200), whatever its outcome
MIN_WINDOW_SAMPLES = 5  # a window with fewer served answers has no p95 worth comparing


@dataclass(frozen=True)
class Request:
    """One request of the load: its kind, when it started (s since the load began), how long it
    took, the HTTP status (0: no response), the outcome and whether its answer differed from the
    single-client reference."""

    kind: str
    start_s: float
    latency_s: float
    status: int
    outcome: str
    mismatch: bool = False


@dataclass(frozen=True)
class LineFit:
    slope: float
    intercept: float
    low: float  # the slope's 95% interval
    high: float
    n: int


def t_quantile(p: float, dof: int) -> float:
    """Student's t quantile: exact for 1 and 2 degrees of freedom, else the Cornish-Fisher
    expansion (Abramowitz & Stegun 26.7.5), within 0.004 of the exact value from 3 up."""
    if dof < 1 or not 0 < p < 1:
        raise ValueError(f"t quantile needs dof >= 1 and 0 < p < 1, got dof={dof}, p={p}")
    if dof == 1:
        return math.tan(math.pi * (p - 0.5))
    if dof == 2:
        return (2 * p - 1) * math.sqrt(2 / (4 * p * (1 - p)))
    z, v = NormalDist().inv_cdf(p), float(dof)
    return (
        z
        + (z**3 + z) / (4 * v)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3)
        + (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / (92160 * v**4)
    )


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> LineFit:
    """Ordinary least squares ``y = slope * x + intercept`` and the slope's 95% interval."""
    n = len(xs)
    if n != len(ys):
        raise ValueError(f"{n} x values for {len(ys)} y values")
    if n < 3:
        raise ValueError(f"a line with an interval needs at least 3 points, got {n}")
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mean_x) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("every x is the same: no slope to fit")
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sxx
    intercept = mean_y - slope * mean_x
    residual = sum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys, strict=True))
    half = t_quantile(0.975, n - 2) * math.sqrt(residual / (n - 2) / sxx)
    return LineFit(slope, intercept, slope - half, slope + half, n)


def latency_summary(seconds: Sequence[float]) -> dict[str, float]:
    return {
        "n": len(seconds),
        "p50_ms": round(percentile(seconds, 50) * 1000, 1),
        "p95_ms": round(percentile(seconds, 95) * 1000, 1),
    }


def summarize_windows(requests: Iterable[Request], window_s: float, total_s: float) -> list[dict[str, Any]]:
    """One entry per window of the load (a request belongs to the window it started in)."""
    count = max(1, math.ceil(total_s / window_s - 1e-9))
    buckets: list[list[Request]] = [[] for _ in range(count)]
    for r in requests:
        buckets[min(int(r.start_s // window_s), count - 1)].append(r)
    windows = []
    for i, bucket in enumerate(buckets):
        by_outcome: dict[str, list[float]] = {}
        for r in bucket:
            by_outcome.setdefault(r.outcome, []).append(r.latency_s)
        served = [r.latency_s for r in bucket if r.status == 200]
        latency = {name: latency_summary(v) for name, v in sorted(by_outcome.items())}
        if served:
            latency[SERVED] = latency_summary(served)
        windows.append(
            {
                "window": i,
                "start_min": round(i * window_s / 60, 3),
                "end_min": round(min((i + 1) * window_s, total_s) / 60, 3),
                "requests": len(bucket),
                "status_counts": dict(sorted(Counter(str(r.status) for r in bucket).items())),
                "latency": latency,
            }
        )
    return windows


def rss_slope(samples: Sequence[Mapping[str, float]], warmup_min: float) -> LineFit | None:
    """The fitted RSS line (MB per minute) over the samples taken after the warm-up; None with
    fewer than 3 of them."""
    after = [s for s in samples if s["t_min"] >= warmup_min]
    if len(after) < 3:
        return None
    return fit_line([s["t_min"] for s in after], [s["rss_mb"] for s in after])


def p95_growth(windows: Sequence[Mapping[str, Any]]) -> list[float | None]:
    """Each window's served p95 over the first window's (None where a window has too few answers)."""
    p95s = [
        w["latency"][SERVED]["p95_ms"]
        if w["latency"].get(SERVED, {}).get("n", 0) >= MIN_WINDOW_SAMPLES
        else None
        for w in windows
    ]
    if not p95s or p95s[0] is None:
        return [None] * len(p95s)
    return [None if p is None else round(p / p95s[0], 3) for p in p95s]


def soak_checks(
    requests: Sequence[Request],
    expected: Mapping[str, int],
    windows: Sequence[Mapping[str, Any]],
    fit: LineFit | None,
    *,
    slope_limit_mb_per_min: float = 1.0,
    p95_factor: float = 2.0,
) -> dict[str, dict[str, Any]]:
    """The load's verdicts, each ``{"ok": bool, ...numbers}``; ``expected`` maps kind -> status."""
    server_errors = sum(1 for r in requests if r.status >= 500)
    unexpected = Counter(f"{r.kind} {r.status} {r.outcome}" for r in requests if r.status != expected[r.kind])
    compared = [r for r in requests if r.status == 200 == expected[r.kind]]
    growth = p95_growth(windows)
    worst = max((g for g in growth if g is not None), default=None)
    slope: dict[str, Any] = {"ok": False, "limit_mb_per_min": slope_limit_mb_per_min}
    if fit is not None:
        # under the limit with 95% confidence: the interval's upper end, not only the estimate
        slope |= {
            "ok": fit.high < slope_limit_mb_per_min,
            "slope_mb_per_min": round(fit.slope, 4),
            "ci95": [round(fit.low, 4), round(fit.high, 4)],
            "samples": fit.n,
        }
    return {
        "no_5xx": {"ok": server_errors == 0, "count": server_errors},
        "statuses_as_expected": {"ok": not unexpected, "unexpected": dict(unexpected)},
        "answers_identical": {
            "ok": bool(compared) and not any(r.mismatch for r in compared),
            "compared": len(compared),
            "mismatches": sum(r.mismatch for r in compared),
        },
        "rss_slope": slope,
        "p95_within_factor_of_first_window": {
            "ok": worst is not None and worst <= p95_factor,
            "factor": p95_factor,
            "ratios": growth,
        },
    }
