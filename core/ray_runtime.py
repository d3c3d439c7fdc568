"""Connect to Ray for the scale-out engines (``--engine ray``), the same way on a laptop and a cluster.

``connect(None)`` follows Ray's own rule: ``RAY_ADDRESS`` if set, else the cluster that the last
``ray start --head`` on this machine started, else a fresh local instance with this machine's
CPUs. ``connect("host:6379")`` joins that cluster. Nothing here is cluster-specific: a cluster
only has to run the same medcite version on every node and see the same storage for index
folders and model files (README, "Scale out on Ray").
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from types import ModuleType

from core.errors import ConfigError, require


def ray_module() -> ModuleType:
    """``ray``, or an error naming the extra that installs it."""
    return require("ray", package="ray[data]", extra="ray")


@contextlib.contextmanager
def connect(address: str | None = None, *, num_cpus: int | None = None) -> Iterator[ModuleType]:
    """Yield the ``ray`` module connected to a cluster; shut the connection down afterwards.

    ``num_cpus`` applies only when Ray starts a local instance (no address, no running cluster).
    A connection that already exists in this process (a test's cluster) is used as it is and
    left open.
    """
    ray = ray_module()
    if ray.is_initialized():
        yield ray
        return
    kwargs: dict[str, object] = {"include_dashboard": False, "log_to_driver": False}
    local = address is None and not os.environ.get("RAY_ADDRESS")
    if local and num_cpus is not None:
        kwargs["num_cpus"] = num_cpus
    try:
        ray.init(address=address, **kwargs)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = address or os.environ.get("RAY_ADDRESS") or "a local instance"
        raise ConfigError(
            f"cannot connect to Ray at {where}: {exc}. Start a cluster with `ray start --head`, "
            "give its address with --address host:port, or leave --address out to run Ray locally"
        ) from exc
    try:
        yield ray
    finally:
        with contextlib.suppress(Exception):
            ray.shutdown()
