"""The soak benchmark's arithmetic: t quantiles, the fitted RSS line, windows, the checks, and the
parsing of a chat stream (bench/serving/soak_stats.py, soak_load.py)."""

from __future__ import annotations

import json
import math
import random

import pytest

from bench.serving.soak_load import DEFAULT_MIX, EXPECTED, Mix, body_key, parse_events
from bench.serving.soak_stats import (
    Request,
    fit_line,
    p95_growth,
    rss_slope,
    soak_checks,
    summarize_windows,
    t_quantile,
)

# Student's t 0.975 quantiles from a table (scipy.stats.t.ppf)
T_975 = {1: 12.7062, 2: 4.3027, 3: 3.1824, 5: 2.5706, 10: 2.2281, 30: 2.0423, 120: 1.9799}


@pytest.mark.parametrize("dof, expected", sorted(T_975.items()))
def test_t_quantile_matches_the_table(dof, expected):
    assert t_quantile(0.975, dof) == pytest.approx(expected, abs=0.004)


def test_t_quantile_is_symmetric_and_refuses_nonsense():
    assert t_quantile(0.025, 12) == pytest.approx(-t_quantile(0.975, 12))
    for dof, p in ((0, 0.975), (5, 1.0), (5, 0.0)):
        with pytest.raises(ValueError):
            t_quantile(p, dof)


def test_a_line_through_exact_points_has_a_zero_width_interval():
    fit = fit_line([0, 1, 2, 3], [5, 7, 9, 11])
    assert (fit.slope, fit.intercept, fit.n) == pytest.approx((2.0, 5.0, 4))
    assert fit.low == pytest.approx(2.0) and fit.high == pytest.approx(2.0)


def test_the_slope_interval_is_the_textbook_one():
    xs, ys = [1, 2, 3, 4, 5], [1.0, 2.0, 1.3, 3.75, 2.25]
    fit = fit_line(xs, ys)
    # by hand: slope = Sxy / Sxx = 4.25 / 10; residuals' sum of squares 2.79075 over n - 2 = 3
    # degrees of freedom; standard error sqrt(2.79075 / 3 / 10) = 0.305 (scipy's linregress agrees)
    assert (fit.slope, fit.intercept) == pytest.approx((0.425, 0.785))
    half = T_975[3] * math.sqrt(2.79075 / 3 / 10)
    assert (fit.low, fit.high) == pytest.approx((0.425 - half, 0.425 + half), abs=2e-3)


def test_a_flat_noisy_series_has_an_interval_around_zero():
    rng = random.Random(4)
    xs = [i / 6 for i in range(180)]  # 30 minutes, every 10 s
    fit = fit_line(xs, [2500 + rng.gauss(0, 10) for _ in xs])
    assert fit.low < 0 < fit.high and fit.high < 1.0


def test_fit_line_refuses_too_few_or_degenerate_points():
    with pytest.raises(ValueError, match="at least 3"):
        fit_line([0, 1], [0, 1])
    with pytest.raises(ValueError, match="same"):
        fit_line([2, 2, 2], [0, 1, 2])
    with pytest.raises(ValueError):
        fit_line([0, 1, 2], [0, 1])


def test_the_slope_leaves_out_the_warmup():
    samples = [{"t_min": t, "rss_mb": 100 + 50 * t if t < 5 else 350.0} for t in range(10)]
    fit = rss_slope(samples, warmup_min=5)
    assert fit is not None and fit.n == 5 and fit.slope == pytest.approx(0.0)
    assert rss_slope(samples, warmup_min=8) is None  # two samples left: no interval


def req(kind="answerable", start=0.0, latency=1.0, status=200, outcome="answer", mismatch=False):
    return Request(kind, start, latency, status, outcome, mismatch)


def test_windows_split_by_start_time_with_status_counts_and_percentiles_per_outcome():
    requests = [
        req(start=1, latency=1.0),
        req(start=2, latency=3.0),
        req(kind="oversized", start=5, latency=0.05, status=413, outcome="http_413"),
        req(start=61, latency=2.0, outcome="nothing_relevant"),
        req(start=119.9, latency=4.0),
    ]
    first, second = summarize_windows(requests, window_s=60, total_s=120)
    assert first["requests"] == 3 and first["status_counts"] == {"200": 2, "413": 1}
    assert first["latency"]["answer"] == {"n": 2, "p50_ms": 2000.0, "p95_ms": 2900.0}
    assert first["latency"]["http_413"]["n"] == 1
    assert first["latency"]["served"]["n"] == 2  # 200s only
    assert (second["start_min"], second["end_min"]) == (1.0, 2.0)
    assert second["latency"]["served"]["n"] == 2 and second["status_counts"] == {"200": 2}


def test_a_last_partial_window_ends_with_the_load_and_a_late_start_goes_to_the_last_window():
    windows = summarize_windows([req(start=150.0)], window_s=60, total_s=150)
    assert [w["end_min"] for w in windows] == [1.0, 2.0, 2.5]
    assert windows[-1]["requests"] == 1


def window(p95, n=10):
    return {"latency": {"served": {"n": n, "p50_ms": p95 / 2, "p95_ms": p95}}}


def test_p95_growth_is_relative_to_the_first_window_and_skips_thin_windows():
    assert p95_growth([window(1000), window(1500), window(9000, n=2), window(2100)]) == [1.0, 1.5, None, 2.1]
    assert p95_growth([window(1000, n=1), window(1000)]) == [None, None]
    assert p95_growth([]) == []


def test_checks_pass_on_a_clean_run_and_name_what_failed_otherwise():
    fit = fit_line([5, 10, 15, 20], [300.0, 300.5, 301.0, 301.5])  # 0.1 MB/min exactly
    good = [req(), req(kind="wrong_key", status=401, outcome="http_401")]
    checks = soak_checks(good, EXPECTED, [window(1000), window(1900)], fit)
    assert all(c["ok"] for c in checks.values()), checks
    assert checks["answers_identical"]["compared"] == 1
    assert checks["rss_slope"]["slope_mb_per_min"] == pytest.approx(0.1)

    bad = [
        req(mismatch=True),
        req(status=503, outcome="http_503"),
        req(kind="malformed", status=200, outcome="answer"),
    ]
    steep = fit_line([5, 10, 15, 20], [300.0, 310.0, 320.0, 330.0])
    checks = soak_checks(bad, EXPECTED, [window(1000), window(2500)], steep)
    assert not any(c["ok"] for c in checks.values()), checks
    assert checks["no_5xx"]["count"] == 1
    assert checks["statuses_as_expected"]["unexpected"] == {
        "answerable 503 http_503": 1,
        "malformed 200 answer": 1,
    }
    assert checks["answers_identical"]["mismatches"] == 1


def test_a_slope_whose_interval_reaches_the_limit_fails_and_no_fit_fails():
    wide = fit_line([5, 6, 7, 8], [300.0, 303.0, 299.0, 302.5])  # estimate under 1 MB/min, interval not
    assert wide.slope < 1.0 < wide.high
    assert not soak_checks([req()], EXPECTED, [window(1)], wide)["rss_slope"]["ok"]
    assert not soak_checks([req()], EXPECTED, [window(1)], None)["rss_slope"]["ok"]


def event(**body):
    return "data: " + json.dumps(body)


def test_a_stream_parses_to_its_text_citations_and_outcome():
    citations = [{"marker": 1, "chunk_id": "a#0"}]
    lines = [
        event(choices=[{"delta": {"role": "assistant", "content": ""}}]),
        "",
        event(choices=[{"delta": {"content": "The sources say: "}}]),
        event(choices=[{"delta": {"content": "INR 2-3. [1]"}}]),
        event(choices=[{"delta": {}}], citations=citations, medcite={"outcome": "answer"}),
        "data: [DONE]",
    ]
    got = parse_events(lines)
    assert got == {
        "text": "The sources say: INR 2-3. [1]",
        "citations": citations,
        "outcome": "answer",
        "error": None,
        "done": True,
    }
    cut = parse_events([*lines[:3], 'data: {"error": {"type": "server_error"}}'])
    assert cut["error"] == "server_error" and not cut["done"] and cut["outcome"] is None


def test_a_request_key_ignores_streaming_and_key_order():
    body = {"messages": [{"role": "user", "content": "q"}], "max_tokens": 64}
    assert body_key({**body, "stream": True}) == body_key(dict(reversed(body.items())))
    assert body_key(body) != body_key({**body, "closed_book": True})


def test_the_default_mix_has_every_kind_and_reads_back_from_json(tmp_path):
    assert set(DEFAULT_MIX.weights) == set(EXPECTED)
    assert all(DEFAULT_MIX.bodies().values())
    path = tmp_path / "mix.json"
    path.write_text(json.dumps({**DEFAULT_MIX.__dict__, "weights": {"answerable": 1.0}}))
    assert Mix.load(path).weights == {"answerable": 1.0}
    path.write_text(json.dumps({**DEFAULT_MIX.__dict__, "weights": {"retrieve": 1.0}}))
    with pytest.raises(SystemExit, match="mix weights must be shares"):
        Mix.load(path)
    path.write_text(json.dumps({"answerable": []}))
    with pytest.raises(SystemExit, match="cannot read the question mix"):
        Mix.load(path)
