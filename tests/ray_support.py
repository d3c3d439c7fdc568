"""Ray for tests: a small local instance, and a multi-node cluster on one machine for fault tests.

``multi_node_cluster`` uses Ray's own ``ray.cluster_utils.Cluster``: a head node and worker nodes,
each a separate raylet process (as ``ray start --head`` and ``ray start --address`` would make),
so a test can kill one node mid-job with ``cluster.remove_node(node, allow_graceful=False)``.
Both skip the test when the ``ray`` extra is not installed.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import pytest

# Quiet raylets: their INFO lines would bury a failing test's output.
os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "warning")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")


def _ray() -> Any:
    return pytest.importorskip("ray", reason="the ray extra is not installed: pip install -e '.[ray]'")


@contextlib.contextmanager
def local_ray(num_cpus: int = 2) -> Iterator[Any]:
    """A fresh local Ray instance for the block (any earlier connection is shut down first)."""
    ray = _ray()
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


# A node that stops answering is declared dead after ~3 s instead of Ray's ~15-30 s, so a test that
# waits for Ray to restart a lost node's actors elsewhere does not wait for its default detector.
QUICK_NODE_DEATH = {
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 1000,
    "health_check_timeout_ms": 1000,
    "health_check_failure_threshold": 3,
}


@contextlib.contextmanager
def multi_node_cluster(
    workers: int = 2, cpus_per_worker: float = 1, system_config: dict[str, Any] | None = None
) -> Iterator[tuple[Any, list[Any]]]:
    """A head node with no CPUs (the driver's node: it schedules nothing) and ``workers`` worker
    nodes; yields the cluster and its worker nodes, with this process connected to it.
    ``system_config``: Ray's internal settings for the cluster (e.g. :data:`QUICK_NODE_DEATH`)."""
    ray = _ray()
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()
    head: dict[str, Any] = {"num_cpus": 0}
    if system_config:
        head["_system_config"] = system_config
    cluster = Cluster(initialize_head=True, head_node_args=head)
    try:
        nodes = [cluster.add_node(num_cpus=cpus_per_worker) for _ in range(workers)]
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
        yield cluster, nodes
    finally:
        with contextlib.suppress(Exception):
            ray.shutdown()
        cluster.shutdown()
        _forget(cluster.address)


def _forget(address: str) -> None:
    """Remove Ray's "last cluster" file if it names this (now stopped) test cluster, as `ray stop`
    would: the next plain ``ray.init()`` in this machine would otherwise wait for it."""
    from ray._private.utils import get_ray_address_file

    path = get_ray_address_file(None)
    with contextlib.suppress(OSError):
        with open(path) as fh:
            recorded = fh.read().strip()
        if recorded == address:
            os.remove(path)
