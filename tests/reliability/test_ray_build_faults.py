"""Ray build faults on a multi-node cluster on this machine (tests/ray_support.py).

- A worker node killed (no graceful shutdown) while the embedder actors work: the build finishes
  and its files are byte for byte those of an undisturbed build (the local engine's), except the
  manifest's creation time and build record; no chunk lost or duplicated.
- A build that cannot finish (the embedder fails on every batch): a RayBuildError that says what
  to do, no half-written folder, and the previous build of the index still served.

The embedder is a fake (bag-of-words vectors, slowed down so a kill lands mid-build): the model
is not the subject here, the pipeline is.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from corpora.build import BuildConfig, BuildReport, build_index
from corpora.engine import BuildEngine, LocalEngine
from corpora.engine_ray import RayBuildError, RayEngine
from indexes.store import load_index
from tests.helpers import HashEmbedder, ListSource, make_doc, whitespace_spans
from tests.ray_support import multi_node_cluster

DOCS = [
    make_doc(f"d:{n}", {f"S{s}": f"topic{n} part{s} " + "marker words " * (n % 5 + 1) for s in range(3)})
    for n in range(50)
]  # 150 chunks (one per section)
BATCH = 10


class SlowEmbedder(HashEmbedder):
    """HashEmbedder vectors, ``delay`` seconds per text; leaves a mark per batch naming its node."""

    def __init__(self, marks: Path | None = None, delay: float = 0.0, fail: bool = False) -> None:
        super().__init__()
        self.marks, self.delay, self.fail = marks, delay, fail

    def embed(self, texts: Any) -> np.ndarray:
        if self.fail:
            raise ValueError("this embedder fails on every batch")
        time.sleep(self.delay * len(texts))
        if self.marks is not None:
            import ray

            (self.marks / f"{ray.get_runtime_context().get_node_id()}.{uuid.uuid4().hex}").touch()
        return super().embed(texts)


@pytest.fixture(scope="module")
def cluster() -> Any:
    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import this file
    with multi_node_cluster(workers=2, cpus_per_worker=2) as (cluster, nodes):
        yield cluster, nodes


def build(indexes: Path, cache: Path, engine: BuildEngine, embedder: HashEmbedder) -> BuildReport:
    return build_index(
        [ListSource(DOCS)],
        BuildConfig(name="faults", shards=2),
        indexes,
        spans=whitespace_spans,
        tokenizer_name="whitespace",
        embedder=embedder,
        cache_dir=cache,
        progress=False,
        engine=engine,
    )


def comparable(report: BuildReport) -> dict[str, Any]:
    """Every file's sha256, and the manifest without its creation time and build record."""
    manifest = json.loads((report.folder / "manifest.json").read_text())
    return {
        "files": manifest.pop("files"),
        "rest": {k: v for k, v in manifest.items() if k not in {"created", "build"}},
    }


def test_a_worker_node_killed_mid_build_changes_nothing(cluster: Any, tmp_path: Path) -> None:
    ray_cluster, nodes = cluster
    reference = build(tmp_path / "ref", tmp_path / "ref-cache", LocalEngine(), HashEmbedder())
    marks = tmp_path / "marks"
    marks.mkdir()
    victims: list[str] = []

    def kill_a_busy_node() -> None:
        # a worker node that has embedded a batch (a mark on another node, such as the driver's
        # under load, names no node this test may kill)
        workers = {n.node_id: n for n in nodes}
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            busy = [m.name.split(".")[0] for m in marks.iterdir() if m.name.split(".")[0] in workers]
            if len(busy) >= 2:
                victims.append(busy[0])
                ray_cluster.remove_node(workers[busy[0]], allow_graceful=False)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_a_busy_node, daemon=True)
    killer.start()
    engine = RayEngine(workers=2, batch_size=BATCH)
    report = build(tmp_path / "idx", tmp_path / "cache", engine, SlowEmbedder(marks, delay=0.05))
    killer.join(timeout=5)
    assert victims, "no node was killed: the build finished before the first batches"
    assert len(list(marks.iterdir())) < len(DOCS) * 3 / BATCH + 10  # embedded about once
    assert comparable(report) == comparable(reference)
    ids = [json.loads(line)["chunk_id"] for line in (report.folder / "chunks.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids)) == len(DOCS) * 3


def test_a_build_that_cannot_finish_leaves_the_previous_index_served(cluster: Any, tmp_path: Path) -> None:
    indexes = tmp_path / "indexes"
    previous = build(indexes, tmp_path / "cache", LocalEngine(), HashEmbedder())
    failing = SlowEmbedder(fail=True)
    failing.weights_sha256 = "1" * 64  # another model: nothing of the previous build is cached for it
    with pytest.raises(RayBuildError, match="run the build again"):
        build(indexes, tmp_path / "cache", RayEngine(workers=1, batch_size=BATCH), failing)
    assert sorted(p.name for p in indexes.iterdir() if not p.name.endswith(".lock")) == [
        "faults",
        previous.folder.name,
    ]
    served = load_index(indexes / "faults")
    try:
        assert served.loaded_from == previous.folder
        assert len(served.chunks) == len(DOCS) * 3
    finally:
        served.close()


@pytest.mark.slow
@pytest.mark.filterwarnings(
    "ignore::pytest.PytestUnhandledThreadExceptionWarning"
)  # Ray Data's thread, at shutdown
def test_a_build_that_loses_every_worker_node_stops_with_a_clear_error(cluster: Any, tmp_path: Path) -> None:
    """Last in the file: it kills the module's cluster."""
    ray_cluster, nodes = cluster
    indexes = tmp_path / "indexes"
    previous = build(indexes, tmp_path / "ref-cache", LocalEngine(), HashEmbedder())
    marks = tmp_path / "marks"
    marks.mkdir()

    def kill_every_node() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(list(marks.iterdir())) < 2:
            time.sleep(0.05)
        for node in nodes:
            ray_cluster.remove_node(node, allow_graceful=False)

    threading.Thread(target=kill_every_node, daemon=True).start()
    engine = RayEngine(workers=2, batch_size=BATCH, stall_s=10)
    started = time.monotonic()
    with pytest.raises(RayBuildError, match="no worker node with CPUs"):
        build(indexes, tmp_path / "cache", engine, SlowEmbedder(marks, delay=0.05))
    assert time.monotonic() - started < 120
    assert not list(indexes.glob(".*.building"))
    assert (indexes / "faults").resolve() == previous.folder
