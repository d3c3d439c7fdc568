"""A worker node killed in the middle of ``eval run --engine ray``: the run still finishes, with the
records of an undisturbed run, none lost and none twice.

The cluster is Ray's own multi-node cluster on this machine (a head that schedules nothing, and two
worker nodes, each a separate raylet); the node is killed without warning while its actor is
answering, as a lost machine would be.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from evals.engine.config import EvalConfig
from evals.engine.engine_ray import RayEngine
from evals.engine.runner import run_eval
from evals.records import read_records
from tests.helpers import guideline_bm25
from tests.ray_eval_support import LoggedModel, calls, per_node
from tests.ray_support import multi_node_cluster

N_ITEMS = 3 * (5 + 3)  # three conditions (closed-book, k=1, k=2) x 8 items


def config() -> EvalConfig:
    grid = {"index": ["default"], "mode": ["bm25"], "rerank": ["none"], "k": [1, 2], "closed_book": True}
    return EvalConfig.model_validate(
        {
            "name": "faults",
            "profile": "fast",
            "seed": 9,
            "grid": grid,
            "mcq": [{"dataset": "medqa", "n": 5}, {"dataset": "pubmedqa", "n": 3}],
        }
    )


def records(folder: Path) -> list[dict]:
    out = []
    for r in read_records(folder / "records.jsonl"):
        row = r.to_json()
        row.pop("latency_s")
        row["extra"] = {k: v for k, v in row["extra"].items() if k != "timings"}
        out.append(row)
    return sorted(out, key=lambda row: (row["condition"], row["dataset"], row["qid"]))


def kill_when(cluster, node, progress: Path, lines: int, seen: list[int]) -> None:
    """Remove ``node`` (no graceful exit) once ``progress`` holds ``lines`` records."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if progress.is_file() and len(progress.read_text().splitlines()) >= lines:
            seen.append(len(progress.read_text().splitlines()))
            cluster.remove_node(node, allow_graceful=False)
            return
        time.sleep(0.02)


def test_a_worker_node_killed_mid_run_changes_nothing_in_the_records(tmp_path):
    data = tmp_path / "data"
    paths = guideline_bm25(data, 4)
    run_eval(
        config(), paths, out=tmp_path / "clean", progress=False, generator=LoggedModel(tmp_path / "clean.log")
    )
    (data / "cache" / "generations.sqlite").unlink()  # the Ray run asks the model again

    log, out = tmp_path / "ray.log", tmp_path / "ray"
    with multi_node_cluster(workers=2, cpus_per_worker=1) as (cluster, nodes):
        seen: list[int] = []
        killer = threading.Thread(target=kill_when, args=(cluster, nodes[0], out / "records.jsonl", 6, seen))
        killer.start()
        summary = run_eval(
            config(),
            paths,
            out=out,
            progress=False,
            engine=RayEngine(workers=2),
            generator=LoggedModel(log, delay_s=0.25),
        )
        killer.join()

    assert seen and seen[0] < N_ITEMS  # the node went down while items were still to answer
    by_node = per_node(log)
    assert by_node[nodes[0].node_id] > 0 and by_node[nodes[1].node_id] > 0  # both nodes worked
    got = records(out)
    assert len(got) == N_ITEMS == len({(r["condition"], r["dataset"], r["qid"]) for r in got})
    assert got == records(tmp_path / "clean")  # the same predictions, evidence and probabilities
    assert sum(c.answered for c in summary.conditions.values()) == N_ITEMS
    assert summary.workers_lost == 1  # the killed node's actor; its items went to the survivor
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["sessions"][-1]["engine"]["workers_lost"] == 1
    assert len(calls(log)) >= N_ITEMS  # an item lost with the node is asked again, on the survivor
