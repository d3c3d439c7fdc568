"""A bounded queue in front of the generator.

The local llama.cpp model runs one generation at a time (it is not thread-safe, and two
requests sharing 2 cores would each run at less than half speed). Requests that need the
generator take a slot; up to ``queue_limit`` more may wait; one beyond that is refused at once
(HTTP 429 with Retry-After) instead of piling up behind a queue no client will wait out.
Retrieval never passes through the gate.
"""

from __future__ import annotations

import asyncio

from core.errors import MedciteError


class QueueFullError(MedciteError):
    """Every generation slot is busy and the waiting line is full."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class QueueTimeoutError(QueueFullError):
    """A request waited for a generation slot longer than the queue timeout."""


class Slot:
    """One held generation slot; ``release`` is idempotent and must run on the event loop."""

    def __init__(self, gate: GenerationGate) -> None:
        self._gate: GenerationGate | None = gate

    def release(self) -> None:
        gate, self._gate = self._gate, None
        if gate is not None:
            gate._release()


class GenerationGate:
    def __init__(
        self, concurrency: int, queue_limit: int, queue_timeout_s: float, retry_after_s: int
    ) -> None:
        self._slots = asyncio.Semaphore(concurrency)
        self.concurrency = concurrency
        self.queue_limit = queue_limit
        self.queue_timeout_s = queue_timeout_s
        self.retry_after_s = retry_after_s
        self.waiting = 0
        self.running = 0

    async def acquire(self) -> Slot:
        """Wait for a generation slot; raises QueueFullError at once when the line is full.

        The caller releases the slot when the generation has really finished (a cancelled
        request's worker thread may still be unwinding), not merely when the response ends.
        """
        if self._slots.locked() and self.waiting >= self.queue_limit:
            raise QueueFullError(
                f"the generator is busy ({self.running} running, {self.waiting} waiting, "
                f"queue limit {self.queue_limit}); retry after {self.retry_after_s} s",
                self.retry_after_s,
            )
        self.waiting += 1
        try:
            await asyncio.wait_for(self._slots.acquire(), timeout=self.queue_timeout_s)
        except TimeoutError as exc:
            raise QueueTimeoutError(
                f"waited {self.queue_timeout_s:.0f} s for the generator without getting a turn; "
                f"retry after {self.retry_after_s} s",
                self.retry_after_s,
            ) from exc
        finally:
            self.waiting -= 1
        self.running += 1
        return Slot(self)

    def _release(self) -> None:
        self.running -= 1
        self._slots.release()

    def snapshot(self) -> dict[str, int]:
        return {
            "concurrency": self.concurrency,
            "running": self.running,
            "waiting": self.waiting,
            "queue_limit": self.queue_limit,
        }
