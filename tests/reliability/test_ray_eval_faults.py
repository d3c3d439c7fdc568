"""A worker node killed in the middle of ``eval run --engine ray``: the run still finishes, with the
records of an undisturbed run, none lost and none twice; every worker node killed, twice: Ray
restarts the actors on a fresh node and the run still finishes the same; restarts used up, or no
node to restart on: the run stops with an error that says to rerun, and the rerun finishes it.

The cluster is Ray's own multi-node cluster on this machine (a head that schedules nothing, and two
worker nodes, each a separate raylet); a node is killed without warning while its actor is
answering, as a lost machine would be.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from core.errors import MedciteError
from evals.engine.config import EvalConfig
from evals.engine.engine_ray import RayEngine
from evals.engine.runner import run_eval
from evals.records import read_records
from tests.helpers import guideline_bm25
from tests.ray_eval_support import LoggedModel, calls, per_node, processes
from tests.ray_support import QUICK_NODE_DEATH, multi_node_cluster

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


def clean_run(tmp_path: Path):
    """The undisturbed (local) run's records in ``tmp_path/clean``; the index's paths, with an empty
    generation cache, so the Ray run asks the model again."""
    paths = guideline_bm25(tmp_path / "data", 4)
    run_eval(
        config(), paths, out=tmp_path / "clean", progress=False, generator=LoggedModel(tmp_path / "clean.log")
    )
    (tmp_path / "data" / "cache" / "generations.sqlite").unlink()
    return paths


def written(progress: Path) -> int:
    return len(progress.read_text().splitlines()) if progress.is_file() else 0


def kill_every_node(cluster, nodes, log: Path, progress: Path, rounds, running: threading.Thread):
    """For each ``(lines, replace)`` of ``rounds``: once ``progress`` holds ``lines`` records and two
    worker processes have answered on the current nodes (both actors up), remove every current
    worker node (no graceful exit) and, if ``replace``, add one fresh node with room for both.
    Returns the record counts at each kill and the fresh nodes; stops when ``running`` ends."""
    seen: list[int] = []
    fresh: list = []
    current = list(nodes)
    for lines, replace in rounds:
        while written(progress) < lines or len(processes(log, {n.node_id for n in current})) < 2:
            if not running.is_alive():
                return seen, fresh
            time.sleep(0.02)
        seen.append(written(progress))
        for node in current:
            cluster.remove_node(node, allow_graceful=False)
        current = [cluster.add_node(num_cpus=2)] if replace else []
        fresh.extend(current)
    return seen, fresh


def run_while_killing(cluster, nodes, log: Path, progress: Path, rounds, run):
    """``run()`` in a thread while this one kills nodes (Ray adds a node only from the main thread);
    returns its summary (or raises its error), the record counts at each kill and the fresh nodes."""
    box: dict = {}

    def target() -> None:
        try:
            box["summary"] = run()
        except Exception as exc:  # noqa: BLE001  (handed to the test's thread, which re-raises it)
            box["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    try:
        seen, fresh = kill_every_node(cluster, nodes, log, progress, rounds, thread)
    finally:
        thread.join()
    if "error" in box:
        raise box["error"]
    return box["summary"], seen, fresh


def test_workers_restart_on_a_fresh_node_after_every_node_is_killed_twice(tmp_path, capsys):
    paths = clean_run(tmp_path)
    log, out = tmp_path / "ray.log", tmp_path / "ray"
    engine = RayEngine(workers=2, max_restarts=2, restart_wait_s=60)

    def run():
        model = LoggedModel(log, delay_s=0.25)
        return run_eval(config(), paths, out=out, progress=True, engine=engine, generator=model)

    with multi_node_cluster(workers=2, cpus_per_worker=1, system_config=QUICK_NODE_DEATH) as (cluster, nodes):
        rounds = [(6, True), (14, True)]  # all worker nodes at once: only restarted actors can go on
        summary, seen, fresh = run_while_killing(cluster, nodes, log, out / "records.jsonl", rounds, run)

    assert len(seen) == 2 and seen[-1] < N_ITEMS  # both kills came while items were still to answer
    # the second kill waited for both restarted actors to answer on the first fresh node; on the last,
    # a loaded machine may let one restarted actor answer every item left before the other is up
    assert len(processes(log, {fresh[0].node_id})) == 2 and processes(log, {fresh[-1].node_id})
    got = records(out)
    assert len(got) == N_ITEMS == len({(r["condition"], r["dataset"], r["qid"]) for r in got})
    assert got == records(tmp_path / "clean")  # the same predictions, evidence and probabilities
    # 2 actors x 2 node losses, each death followed by a restart; the run may end while the last
    # restart is still coming up (that worker then counts as lost: the other answered its items)
    restarted = summary.workers_restarted
    assert restarted + summary.workers_lost == 4 and restarted >= 3
    note = json.loads((out / "manifest.json").read_text())["sessions"][-1]["engine"]
    assert note["workers_restarted"] == restarted and note["max_restarts"] == 2
    shown = capsys.readouterr().out  # the progress bar's lines say what happened
    assert shown.count("died; its items go to the others") == 4
    assert shown.count("restarted on node") == restarted


@pytest.mark.slow
def test_a_run_that_cannot_get_its_workers_back_stops_and_the_rerun_finishes_it(tmp_path):
    paths = clean_run(tmp_path)
    log, out = tmp_path / "ray.log", tmp_path / "ray"
    progress = out / "records.jsonl"

    def runner(engine: RayEngine):
        return lambda: run_eval(
            config(), paths, out=out, progress=False, engine=engine, generator=LoggedModel(log, delay_s=0.25)
        )

    with multi_node_cluster(workers=2, cpus_per_worker=1, system_config=QUICK_NODE_DEATH) as (cluster, nodes):
        # every node lost and none added: the restarts have nowhere to go
        with pytest.raises(MedciteError, match=r"came back within 5 s.*run the same command again to resume"):
            engine = RayEngine(workers=2, restart_wait_s=5)
            run_while_killing(cluster, nodes, log, progress, [(6, False)], runner(engine))
        first = written(progress)
        # a new node; every node lost twice, a fresh one added each time, one restart allowed: used up
        node = cluster.add_node(num_cpus=2)
        with pytest.raises(MedciteError, match=r"none can restart.*run the same command again to resume"):
            rounds = [(first + 4, True), (first + 10, True)]
            engine = RayEngine(workers=2, max_restarts=1, restart_wait_s=60)
            run_while_killing(cluster, [node], log, progress, rounds, runner(engine))
        second = written(progress)
        summary = runner(RayEngine(workers=2))()

    assert 6 <= first < second < N_ITEMS  # each stopped run kept its records; the rerun resumed
    assert sum(c.answered for c in summary.conditions.values()) == N_ITEMS - second
    got = records(out)
    assert len(got) == N_ITEMS == len({(r["condition"], r["dataset"], r["qid"]) for r in got})
    assert got == records(tmp_path / "clean")
    sessions = json.loads((out / "manifest.json").read_text())["sessions"]
    assert [s["engine"]["workers_restarted"] for s in sessions] == [0, 2, 0]
