from __future__ import annotations

import asyncio

import pytest

from api.gate import GenerationGate, QueueFullError, QueueTimeoutError


def test_one_running_one_waiting_then_refused_and_released_in_order():
    async def scenario() -> list[str]:
        gate = GenerationGate(concurrency=1, queue_limit=1, queue_timeout_s=5, retry_after_s=7)
        first = await gate.acquire()
        waiter = asyncio.create_task(gate.acquire())
        await asyncio.sleep(0.01)
        assert gate.snapshot() == {"concurrency": 1, "running": 1, "waiting": 1, "queue_limit": 1}
        with pytest.raises(QueueFullError) as refused:
            await gate.acquire()
        assert refused.value.retry_after_s == 7
        first.release()
        first.release()  # idempotent: a double release must not free a second slot
        second = await asyncio.wait_for(waiter, 1)
        assert gate.snapshot()["running"] == 1 and gate.snapshot()["waiting"] == 0
        second.release()
        return ["ok"]

    assert asyncio.run(scenario()) == ["ok"]


def test_waiting_longer_than_the_queue_timeout_gives_up():
    async def scenario() -> None:
        gate = GenerationGate(concurrency=1, queue_limit=2, queue_timeout_s=0.05, retry_after_s=3)
        held = await gate.acquire()
        with pytest.raises(QueueTimeoutError, match="waited"):
            await gate.acquire()
        assert gate.snapshot()["waiting"] == 0
        held.release()

    asyncio.run(scenario())
