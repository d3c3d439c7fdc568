"""Connect to Ray for the scale-out engines (``--engine ray``), the same way on a laptop and a cluster.

``connect(None)`` follows Ray's own rule: ``RAY_ADDRESS`` if set, else the cluster that the last
``ray start --head`` on this machine started, else a fresh local instance with this machine's
CPUs. One change to that rule: a last cluster that is no longer running (its head was killed, or
a test cluster left its address file behind) would make ``ray.init()`` wait for it for minutes;
here it is skipped with a warning and Ray starts locally. ``connect("host:6379")`` joins that
cluster. Nothing here is cluster-specific: a cluster only has to run the same medcite version on
every node and see the same storage for index folders and model files (README, "Scale out on
Ray").
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import Iterator
from types import ModuleType

from core.errors import ConfigError, require

log = logging.getLogger(__name__)


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
    if address is None and not os.environ.get("RAY_ADDRESS"):
        last = last_cluster()
        if last is None or not reachable(last):
            if last is not None:
                log.warning("the last `ray start` cluster (%s) is not running; starting Ray locally", last)
            address = "local"
    if address == "local" and num_cpus is not None:  # a cluster that exists keeps its own CPUs
        kwargs["num_cpus"] = num_cpus
    try:
        ray.init(address=address, **kwargs)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = "a local instance" if address == "local" else address or os.environ.get("RAY_ADDRESS")
        raise ConfigError(
            f"cannot connect to Ray at {where}: {exc}. Start a cluster with `ray start --head`, "
            "give its address with --address host:port, or leave --address out to run Ray locally"
        ) from exc
    try:
        yield ray
    finally:
        with contextlib.suppress(Exception):
            ray.shutdown()


def last_cluster() -> str | None:
    """The address the last ``ray start --head`` on this machine recorded (Ray's own file), if any."""
    try:
        from ray._private.utils import read_ray_address  # the file's location is Ray's to decide

        address = read_ray_address()
    except (ImportError, OSError):
        return None
    return address or None


def reachable(address: str, timeout_s: float = 2.0) -> bool:
    """Whether something listens at ``host:port`` (a running cluster's GCS)."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False
