"""SIGKILL mid-build and mid-eval, for real (a subprocess), then the same command again.

A build resumes from the embedding batches committed to the cache and ends equal to a clean
build; an eval run keeps every record written before the kill, never a torn line that breaks the
file, and the re-run scores only the missing items.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from evals.records import ItemRecord, read_records, write_records
from indexes.store import load_index
from tests.helpers import guideline_bm25
from tests.reliability.killable import N_DOCS, SlowEmbedder, SlowLetterModel, build, run

REPO = Path(__file__).resolve().parents[2]


def start(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "tests.reliability.killable", *args], cwd=REPO, env=env)


def kill_after(proc: subprocess.Popen, progress: Path, steps: int, timeout_s: float = 120) -> None:
    """SIGKILL ``proc`` once ``progress`` has ``steps`` lines (it must still be running)."""
    deadline = time.monotonic() + timeout_s
    while not progress.is_file() or len(progress.read_text().splitlines()) < steps:
        if proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"the process ended (exit {proc.returncode}) or stalled before step {steps}")
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL


def test_build_killed_while_embedding_resumes_and_equals_a_clean_build(tmp_path):
    data = tmp_path / "killed"
    proc = start("build", str(data))
    kill_after(proc, data / "progress", steps=2)  # the second batch is embedded, maybe not committed
    assert not (data / "indexes" / "killed").exists()
    (cache,) = (data / "cache").rglob("vectors.sqlite")
    with sqlite3.connect(cache) as db:
        cached = db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]
    assert cached in {256, 512}  # whole batches only: one committed, the second one if it got there

    embedder = SlowEmbedder()
    resumed = build(data, embedder)
    assert not list((data / "indexes").glob(".killed.*.building"))  # the killed build's folder is gone
    assert embedder.texts_embedded == N_DOCS - cached  # only the unfinished part is embedded again
    assert resumed.manifest["counts"]["embeddings_from_cache"] == cached

    clean = build(tmp_path / "clean", SlowEmbedder())
    files = resumed.manifest["files"]
    same = [name for name in files if not name.startswith("dense/")]
    assert {n: files[n]["sha256"] for n in same} == {n: clean.manifest["files"][n]["sha256"] for n in same}
    a, b = load_index(resumed.folder), load_index(clean.folder)
    assert np.array_equal(a.dense.reconstruct(0, N_DOCS), b.dense.reconstruct(0, N_DOCS))
    assert resumed.manifest["corpus_fingerprint"] == clean.manifest["corpus_fingerprint"]


@pytest.fixture(scope="module")
def eval_data(tmp_path_factory, source_data) -> Path:
    return guideline_bm25(tmp_path_factory.mktemp("kill-eval"), 4).data_dir


def test_eval_killed_mid_run_keeps_whole_records_and_resumes_the_rest(eval_data, tmp_path):
    out = tmp_path / "run"
    (eval_data / "progress").unlink(missing_ok=True)
    proc = start("eval", str(eval_data), str(out))
    kill_after(proc, eval_data / "progress", steps=7)
    raw = (out / "records.jsonl").read_bytes()
    kept = list(read_records(out / "records.jsonl"))
    assert 6 <= len(kept) < 24
    if raw.endswith(b"\n"):  # the usual case: each record is one write of one line
        assert all(json.loads(line) for line in raw.splitlines())

    model = SlowLetterModel()
    summary = run(eval_data, out, model)
    records = list(read_records(out / "records.jsonl"))
    assert len(records) == 3 * (5 + 3) == len({(r.condition, r.dataset, r.qid) for r in records})
    assert sum(c.skipped for c in summary.conditions.values()) == len(kept)  # finished items not redone
    assert model.calls <= 24 - len(kept)  # (an item scored but not yet written comes from the run cache)
    assert all(line.endswith("}") for line in (out / "records.jsonl").read_text().splitlines())


def test_a_torn_last_record_is_cut_before_the_next_append(tmp_path):
    path = tmp_path / "records.jsonl"
    first, second = (ItemRecord(dataset="medqa", qid=q, condition="rag", gold="A", pred="A") for q in "12")
    write_records(path, [first])
    whole = path.read_bytes()
    path.write_bytes(whole + json.dumps(second.to_json()).encode()[:25])  # killed mid-write
    assert list(read_records(path)) == [first]  # the reader skips the torn tail
    write_records(path, [second])  # the re-run appends the unfinished item again
    assert path.read_bytes() == whole + (json.dumps(second.to_json(), ensure_ascii=False) + "\n").encode()
    assert list(read_records(path)) == [first, second]
