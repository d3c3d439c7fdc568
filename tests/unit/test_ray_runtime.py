"""core.ray_runtime.connect: which Ray it joins, and the error when it cannot (no Ray started here)."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from core import ray_runtime
from core.errors import ConfigError


class FakeRay:
    """Records ``init`` calls; ``fail`` makes init raise as Ray does for an unreachable cluster."""

    def __init__(self, fail: Exception | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.fail = fail
        self.shut = False

    def is_initialized(self) -> bool:
        return False

    def init(self, **kwargs: Any) -> None:
        self.calls.append(kwargs)
        if self.fail is not None:
            raise self.fail

    def shutdown(self) -> None:
        self.shut = True


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeRay:
    ray = FakeRay()
    monkeypatch.setattr(ray_runtime, "ray_module", lambda: ray)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    return ray


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends: nothing listens


@pytest.mark.parametrize("last", ["dead", None])
def test_without_a_running_last_cluster_ray_starts_locally(fake: FakeRay, monkeypatch, last) -> None:
    address = f"127.0.0.1:{closed_port()}" if last == "dead" else None
    monkeypatch.setattr(ray_runtime, "last_cluster", lambda: address)
    with ray_runtime.connect(None, num_cpus=2):
        pass
    local = {"address": "local", "include_dashboard": False, "log_to_driver": False, "num_cpus": 2}
    assert fake.calls == [local]
    assert fake.shut


def test_a_running_last_cluster_is_joined_without_local_settings(fake: FakeRay, monkeypatch) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        monkeypatch.setattr(ray_runtime, "last_cluster", lambda: f"127.0.0.1:{server.getsockname()[1]}")
        with ray_runtime.connect(None, num_cpus=2):
            pass
    assert fake.calls == [{"address": None, "include_dashboard": False, "log_to_driver": False}]


def test_an_unreachable_address_says_how_to_start_a_cluster(fake: FakeRay) -> None:
    fake.fail = ConnectionError("GCS not reachable")
    with pytest.raises(ConfigError, match="ray start --head") as err, ray_runtime.connect("10.9.9.9:6379"):
        pass
    assert "10.9.9.9:6379" in str(err.value)
