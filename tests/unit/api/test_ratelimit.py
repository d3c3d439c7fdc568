"""Per-client token buckets, driven by a hand-moved clock."""

from __future__ import annotations

import pytest

from api.ratelimit import RateLimitedError, RateLimiter, client_identity


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_is_allowed_then_the_client_waits_for_its_next_token():
    clock = Clock()
    limiter = RateLimiter(per_minute=60, burst=3, clock=clock)  # one token a second
    for _ in range(3):
        limiter.check("a")
    with pytest.raises(RateLimitedError, match="at most 60 requests a minute") as refused:
        limiter.check("a")
    assert refused.value.retry_after_s == 1
    clock.now += 1.0
    limiter.check("a")  # one token came back
    with pytest.raises(RateLimitedError):
        limiter.check("a")


def test_clients_do_not_share_buckets_and_a_refusal_costs_no_token():
    clock = Clock()
    limiter = RateLimiter(per_minute=6, burst=1, clock=clock)  # a token every 10 s
    limiter.check("a")
    limiter.check("b")
    for _ in range(5):  # hammering while refused does not push the next token further away
        with pytest.raises(RateLimitedError) as refused:
            limiter.check("a")
    assert refused.value.retry_after_s == 10
    clock.now += 10.0
    limiter.check("a")


def test_tokens_never_exceed_the_burst_after_a_long_pause():
    clock = Clock()
    limiter = RateLimiter(per_minute=60, burst=2, clock=clock)
    limiter.check("a")
    clock.now += 3600.0
    limiter.check("a")
    limiter.check("a")
    with pytest.raises(RateLimitedError):
        limiter.check("a")


def test_the_number_of_tracked_clients_is_bounded():
    limiter = RateLimiter(per_minute=60, burst=1, max_clients=100, clock=Clock())
    for n in range(1000):
        limiter.check(f"addr:10.0.{n // 256}.{n % 256}")
    assert len(limiter) == 100


def test_identity_hides_the_key_and_falls_back_to_the_address():
    key = "sk-a-very-secret-key-0001"
    named = client_identity(key, "127.0.0.1")
    assert key not in named and named.startswith("key:") and named == client_identity(key, "10.0.0.9")
    assert named != client_identity("sk-a-very-secret-key-0002", "127.0.0.1")
    assert client_identity(None, "127.0.0.1") == "addr:127.0.0.1"


@pytest.mark.parametrize(("per_minute", "burst"), [(0, 1), (1, 0)])
def test_limits_below_one_are_refused(per_minute, burst):
    with pytest.raises(ValueError, match="at least 1"):
        RateLimiter(per_minute, burst)
