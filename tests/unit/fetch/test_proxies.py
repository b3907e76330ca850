"""ProxyPool: random choice among healthy proxies, benching and recovery, never a dead stop."""

from __future__ import annotations

import logging
import random
from collections import Counter

import pytest

from topicrawl.core.errors import ConfigError
from topicrawl.fetch import ProxyPool

A, B, C = "http://10.0.0.1:3128", "http://10.0.0.2:3128", "http://user:secret@10.0.0.3:3128"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def pool(clock: Clock, *proxies: str) -> ProxyPool:
    return ProxyPool(
        proxies or (A, B, C),
        max_latency=2.0,
        bench_seconds=60.0,
        clock=clock,
        rng=random.Random(42),
    )


def picks(proxies: ProxyPool, n: int = 600) -> Counter[str | None]:
    return Counter(proxies.choose() for _ in range(n))


def test_no_proxies_means_direct() -> None:
    empty = ProxyPool((), max_latency=1, bench_seconds=1)
    assert empty.choose() is None
    assert len(empty) == 0


def test_choice_is_random_over_all_healthy_proxies() -> None:
    counts = picks(pool(Clock()))
    assert set(counts) == {A, B, C}
    assert min(counts.values()) > 150  # roughly a third each


def test_failed_proxy_is_benched_then_comes_back() -> None:
    clock = Clock()
    proxies = pool(clock)
    proxies.report(A, latency=None, ok=False)
    assert set(picks(proxies)) == {B, C}
    clock.now += 59.9
    assert A not in picks(proxies)
    clock.now += 0.2
    assert A in picks(proxies)


def test_slow_proxy_is_benched_by_its_moving_average() -> None:
    clock = Clock()
    proxies = pool(clock)
    proxies.report(B, latency=1.0, ok=True)
    proxies.report(B, latency=3.0, ok=True)  # average 1.6: still in play
    assert B in picks(proxies)
    for _ in range(3):
        proxies.report(B, latency=4.0, ok=True)  # average climbs over 2.0
    assert B not in picks(proxies)
    clock.now += 61
    # Back on probation with a fresh average: one fast answer keeps it in play.
    proxies.report(B, latency=0.1, ok=True)
    assert B in picks(proxies)


def test_one_slow_answer_does_not_bench_a_fast_proxy() -> None:
    proxies = pool(Clock())
    for _ in range(10):
        proxies.report(A, latency=0.2, ok=True)
    proxies.report(A, latency=5.0, ok=True)
    assert A in picks(proxies)


def test_all_benched_uses_the_one_back_soonest_and_warns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    proxies = pool(clock)
    proxies.report(C, latency=None, ok=False)
    clock.now += 10
    proxies.report(A, latency=None, ok=False)
    clock.now += 10
    proxies.report(B, latency=None, ok=False)
    with caplog.at_level(logging.WARNING, logger="topicrawl.fetch.proxies"):
        assert proxies.choose() == C
        assert proxies.choose() == C
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1  # once per episode, not once per request
    assert "secret" not in caplog.text  # credentials never reach the log


def test_states_report_health() -> None:
    clock = Clock()
    proxies = pool(clock)
    proxies.report(A, latency=0.5, ok=True)
    proxies.report(B, latency=None, ok=False)
    states = {s.proxy: s for s in proxies.states()}
    assert states[A].latency == 0.5
    assert states[A].successes == 1
    assert states[B].benched_until == 60.0
    assert states[B].failures == 1


def test_unknown_proxy_reports_are_ignored() -> None:
    proxies = pool(Clock())
    proxies.report("http://10.9.9.9:1", latency=None, ok=False)
    assert set(picks(proxies)) == {A, B, C}


@pytest.mark.parametrize("bad", ["socks5://10.0.0.1:1080", "10.0.0.1:3128", "http://"])
def test_invalid_proxies_are_config_errors(bad: str) -> None:
    with pytest.raises(ConfigError):
        ProxyPool([bad], max_latency=1, bench_seconds=1)


def test_duplicates_are_dropped() -> None:
    proxies = ProxyPool([A, A + " ", B], max_latency=1, bench_seconds=1)
    assert proxies.proxies == (A, B)
