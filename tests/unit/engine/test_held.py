"""Held hosts: which holds the crawl waits out, which end it, and how they read."""

from __future__ import annotations

import pytest

from topicrawl.core.models import HeldHost
from topicrawl.engine.held import HeldHosts, describe


def test_a_hold_longer_than_the_patience_is_lasting_a_short_one_is_waited_out() -> None:
    held = HeldHosts(patience=60.0)
    held.hold("a.test", reason="robots.txt answered 500", seconds=600.0, now=1000.0)
    held.hold("b.test", reason="slow down", seconds=30.0, now=1000.0)
    assert [h.host for h in held.lasting(1000.0)] == ["a.test"]
    assert set(held.current(1000.0)) == {"a.test", "b.test"}
    # 541 s later a.test's hold has 59 s left: now it is worth waiting for.
    assert held.lasting(1541.0) == []
    assert set(held.current(1541.0)) == {"a.test"}  # b.test's hold is over
    assert held.current(1600.0) == {}


def test_a_new_hold_replaces_the_old_one() -> None:
    held = HeldHosts(patience=0.0)
    held.hold("a.test", reason="first", seconds=10.0, now=0.0)
    again = held.hold("a.test", reason="second", seconds=100.0, now=5.0)
    assert held.current(6.0) == {"a.test": again}
    assert again.until == 105.0


def test_a_negative_patience_is_refused() -> None:
    with pytest.raises(ValueError, match="patience"):
        HeldHosts(patience=-1.0)


def test_holds_in_words_name_host_reason_and_retry() -> None:
    hold = HeldHost(host="a.test:8080", reason="robots.txt answered 500", until=1600.0)
    text = describe([hold], now=1000.0)
    assert text.startswith("a.test:8080 held (robots.txt answered 500; retry at ")
    assert text.endswith("in 600 s)")
