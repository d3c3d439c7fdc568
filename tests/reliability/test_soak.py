"""A short soak as a smoke check: ``medcite bench soak`` for about two minutes, kill phase included.

The real ``medcite serve`` (default profile: hybrid retrieval with the real embedder, the trained
relevance model, quotes, the local model for the closed-book questions) over a small real index of
six guideline sections, as the chat page's real-chain test builds it. 4 clients for 75 s, windows
of 30 s. Asserted: no 5xx, every status as its kind expects, every answer identical to the
single-client one, the server sampled throughout, the SIGKILL cut a stream, the index and caches
intact after it, the restarted server answering as before, and no question in the server's log.
The memory slope and the p95 ratio are reported, not asserted: 75 s says nothing about a plateau.
The 30-minute run is a benchmark (docs/reliability.md, "Soak").
"""

from __future__ import annotations

import json

import pytest

from bench.serving import soak
from core.paths import Paths
from rag.indexing import build_from_cli

pytestmark = pytest.mark.e2e

MIX = {
    "answerable": [
        "What INR should be targeted on warfarin for atrial fibrillation?",  # quoted
        "Which score is used to decide on anticoagulation in atrial fibrillation?",  # quoted
        "How often should eGFR be rechecked in CKD stage 3?",  # closest lines
    ],
    "unanswerable": ["How do I true a bicycle wheel?"],
    "conversations": [
        [
            {"role": "user", "content": "What INR should be targeted on warfarin for atrial fibrillation?"},
            {"role": "assistant", "content": "Target INR 2.0-3.0."},
            {"role": "user", "content": "How often should it be checked?"},
        ]
    ],
    "closed_book": ["What does the abbreviation ECG stand for?"],
    "kill": "List the common causes of chest pain.",
    # every kind often enough to show up in 75 s
    "weights": {
        "answerable": 0.3,
        "unanswerable": 0.1,
        "multi_turn": 0.1,
        "closed_book": 0.1,
        "malformed": 0.15,
        "oversized": 0.1,
        "wrong_key": 0.15,
    },
}


@pytest.fixture(scope="module")
def small_data(tmp_path_factory):
    data = tmp_path_factory.mktemp("soak-data")
    paths = Paths.from_env().model_copy(update={"data_dir": data})
    build_from_cli(paths, sources=["open-medicine"], limit=6, progress=False)
    return data


def test_a_short_soak_gets_no_errors_the_same_answers_and_survives_a_kill(small_data, tmp_path):
    (tmp_path / "mix.json").write_text(json.dumps(MIX))
    out, plot, log = tmp_path / "soak.json", tmp_path / "soak.png", tmp_path / "server.log"
    argv = ["--clients", "4", "--minutes", "1.25", "--window-minutes", "0.5", "--sample-seconds", "5"]
    argv += ["--warmup-minutes", "0.5", "--data-dir", str(small_data), "--mix", str(tmp_path / "mix.json")]
    soak.main([*argv, "--out", str(out), "--plot", str(plot), "--server-log", str(log)])
    result = json.loads(out.read_text())
    checks = result["checks"]
    print(json.dumps({k: result[k] for k in ("load", "memory")}, indent=1))

    for name in ("no_5xx", "statuses_as_expected", "answers_identical", "references_answered"):
        assert checks[name]["ok"], (name, checks[name])
    assert checks["answers_identical"]["compared"] >= 10
    assert checks["queue_empty_after"]["ok"], checks["queue_empty_after"]
    assert set(result["load"]["by_kind"]) == set(MIX["weights"]), result["load"]["by_kind"]

    assert len(result["windows"]) == 3 and result["windows"][0]["latency"]["served"]["n"] >= 5
    samples = result["samples"]
    assert len(samples) >= 15 and all(
        s["rss_mb"] > 100 and s["fds"] > 0 and s["threads"] > 0 for s in samples
    )
    fit = result["memory"]["fit"]
    assert fit["samples"] >= 8 and fit["ci95"][0] <= fit["slope_mb_per_min"] <= fit["ci95"][1]

    kill = {name: check for name, check in checks.items() if name.startswith("kill_")}
    assert len(kill) == 5 and all(c["ok"] for c in kill.values()), kill
    assert kill["kill_mid_stream"]["exit_code"] == -9 and not kill["kill_mid_stream"]["done_seen"]
    assert kill["kill_answers_equal"]["compared"] == 6

    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    served_log = log.read_text()
    assert "POST /v1/chat/completions 200" in served_log
    questions = [*MIX["answerable"], *MIX["unanswerable"], *MIX["closed_book"], MIX["kill"]]
    assert not any(q in served_log for q in questions)  # questions are never logged
