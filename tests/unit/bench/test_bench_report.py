"""The generated benchmark block replaces only itself; the ask summary fits token rates exactly."""

import json

import pytest

from bench.answers.generation import summarize_ask
from bench.report import BEGIN, END, replace_block
from bench.report_sections import targets

PAGE = "# Benchmarks\n\nIntro.\n\n## Index builds\n\nold numbers\n"


def test_the_block_is_inserted_before_the_first_section_then_replaced_in_place():
    first = replace_block(PAGE, f"{BEGIN}\nA\n{END}")
    assert first.index("Intro.") < first.index("\nA\n") < first.index("## Index builds")
    second = replace_block(first, f"{BEGIN}\nB\n{END}")
    assert "\nA\n" not in second and "\nB\n" in second
    assert second.count(BEGIN) == 1 and second.endswith("## Index builds\n\nold numbers\n")


def _answer(prompt, output, seconds, rerank_s, calls, hits):
    return {
        "timings": {"retrieve": 0.02, "rerank": rerank_s, "generate": seconds, "verify": 0.1},
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": output,
            "rerank_generator_calls": calls,
            "rerank_cache_hits": hits,
        },
        "total_seconds": 0.02 + rerank_s + seconds + 0.1,
    }


def test_ask_summary_recovers_prompt_and_output_rates(tmp_path):
    # seconds = prompt / 30 + output / 6 exactly, so the least-squares fit returns 30 and 6
    rows = [(600, 30), (900, 12), (300, 60), (750, 45)]
    answers = [_answer(p, o, p / 30 + o / 6, 50.0, 10, 0) for p, o in rows]
    path = tmp_path / "ask.json"
    path.write_text(json.dumps({"answers": answers}))
    out = summarize_ask(path)
    fit = out["fit_from_generate_stage"]
    assert fit["prompt_tokens_per_s"] == pytest.approx(30.0, abs=0.05)
    assert fit["output_tokens_per_s"] == pytest.approx(6.0, abs=0.05)
    assert out["rerank_seconds_per_candidate_uncached"] == 50.0 / 10
    assert "rerank_ms_per_candidate_cached" not in out  # no cache hits in this run
    # generate seconds 25, 32, 20, 32.5: the median is (25 + 32) / 2
    assert out["median_seconds"]["generate"] == pytest.approx((600 / 30 + 30 / 6 + 900 / 30 + 12 / 6) / 2)


def test_targets_state_met_and_not_met_with_the_numbers():
    lexical = {
        "ratios_vs_medcite": {"rank-bm25": {"throughput_ratio": 120.0, "median_ratio": 100.0}},
        "latency_paired": {"medcite-bm25s": {"qps": 1200.0}, "rank-bm25": {"qps": 10.0, "n": 50}},
        "latency_all_queries": {"medcite-bm25s": {"qps": 1500.0, "n": 200}},
        "raw_ms": {"paired": {"medcite-bm25s": [0.8, 2.5, 0.9]}},
        "agreement": {
            "medcite-bm25s vs rank-bm25": {
                "identical_top10_share": 0.8,
                "identical_up_to_ties_share": 0.9,
                "mean_overlap_at_10": 0.99,
            },
            "bm25s-robertson vs rank-bm25": {
                "identical_top10_share": 0.95,
                "identical_up_to_ties_share": 1.0,
                "mean_overlap_at_10": 1.0,
            },
        },
    }
    lines = "\n".join(targets({"lexical_100k": lexical}))
    assert "| BM25 at 100k: >= 50x the query throughput of rank-bm25 | 120x" in lines
    assert lines.count("**met**") == 1 and lines.count("**not met**") == 1
    assert "90% identical up to ties" in lines and "80% as plain sets" in lines
    assert "slowest 2 ms" in lines and "200 queries 1,500 queries/s = 150x" in lines
