"""Per-client request rate limits: a token bucket for each API key (or client address).

Each client may send ``burst`` requests at once and then ``per_minute`` requests a minute on
average; a request beyond that gets HTTP 429 with the seconds until its next token in
Retry-After. The generation queue (``api/gate.py``) protects the model; this protects the
server from one client crowding out the others, retrieval included.

Clients are told apart by a digest of their bearer key when keys are configured (so the key
itself is never held as a dictionary key or logged) and by their address otherwise. At most
``max_clients`` buckets are kept, least recently seen dropped first, so a stream of new
addresses cannot grow memory without bound; a dropped client starts again with a full bucket.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from api.gate import QueueFullError


class RateLimitedError(QueueFullError):
    """This client sent more requests than its rate limit allows."""


def client_identity(api_key: str | None, address: str | None) -> str:
    """A stable, non-reversible name for the client: its key's digest, else its address."""
    if api_key:
        return "key:" + hashlib.sha256(api_key.encode()).hexdigest()[:16]
    return "addr:" + (address or "unknown")


class RateLimiter:
    def __init__(
        self,
        per_minute: int,
        burst: int,
        *,
        max_clients: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if per_minute < 1 or burst < 1 or max_clients < 1:
            raise ValueError("per_minute, burst and max_clients must all be at least 1")
        self.rate = per_minute / 60.0  # tokens per second
        self.burst = float(burst)
        self.max_clients = max_clients
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # tokens, last refill
        self._lock = threading.Lock()

    def check(self, client: str) -> None:
        """Take one token for ``client`` or raise RateLimitedError with the wait in seconds."""
        now = self._clock()
        with self._lock:
            tokens, last = self._buckets.pop(client, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            allowed = tokens >= 1.0
            if allowed:
                tokens -= 1.0
            self._buckets[client] = (tokens, now)
            while len(self._buckets) > self.max_clients:
                self._buckets.popitem(last=False)
        if not allowed:
            wait = math.ceil((1.0 - tokens) / self.rate)
            raise RateLimitedError(
                f"rate limit exceeded: at most {round(self.rate * 60)} requests a minute "
                f"(bursts of {int(self.burst)}); retry in {wait} s",
                retry_after_s=max(1, wait),
            )

    def __len__(self) -> int:
        return len(self._buckets)
