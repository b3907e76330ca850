"""The supervisor's persistent per-topic work queue: dedupe, leases, attempts, restarts."""

from __future__ import annotations

from pathlib import Path

import pytest

from topicrawl.core.errors import DatabaseCorrupt
from topicrawl.topics.workqueue import TopicWorkQueue, UrlState

A, B, C = "http://a.test/1", "http://a.test/2", "http://a.test/3"


def test_urls_are_canonical_and_deduped_per_topic(tmp_path: Path) -> None:
    queue = TopicWorkQueue(tmp_path / "q.db", max_url_length=40)
    assert (
        queue.add(1, [A, "HTTP://A.test/1#frag", B, "mailto:x@y", "http://a.test/" + "x" * 50]) == 2
    )
    assert queue.add(2, [A]) == 1  # another topic may want the same URL
    assert queue.add(1, [A, B]) == 0
    assert queue.counts() == {1: {UrlState.QUEUED: 2}, 2: {UrlState.QUEUED: 1}}


def test_leases_go_oldest_first_and_count_attempts(tmp_path: Path) -> None:
    queue = TopicWorkQueue(tmp_path / "q.db")
    queue.add(1, [A, B, C])
    first = queue.lease(1, 2)
    assert [(x.url, x.attempts) for x in first] == [(A, 1), (B, 1)]
    assert queue.lease(2, 5) == []
    queue.finish(1, A)
    assert (
        queue.give_back(1, B, count_attempt=True, max_attempts=2, reason="died") is UrlState.QUEUED
    )
    again = queue.lease(1, 5)
    assert [(x.url, x.attempts) for x in again] == [(B, 2), (C, 1)]  # B keeps its place
    assert (
        queue.give_back(1, B, count_attempt=True, max_attempts=2, reason="died") is UrlState.FAILED
    )
    # A process the supervisor stopped itself does not use up the URL's attempts.
    assert queue.give_back(1, C, count_attempt=False, max_attempts=2, reason="") is UrlState.QUEUED
    assert queue.state_of(1, C) == (UrlState.QUEUED, 0)
    assert queue.state_of(1, A) == (UrlState.DONE, 1)
    assert queue.state_of(1, B) == (UrlState.FAILED, 2)


def test_reopening_returns_open_leases(tmp_path: Path) -> None:
    queue = TopicWorkQueue(tmp_path / "q.db")
    queue.add(1, [A, B])
    queue.lease(1, 2)
    queue.finish(1, A, error="404 Not Found")
    queue.close()
    reopened = TopicWorkQueue(tmp_path / "q.db")
    assert reopened.counts() == {1: {UrlState.DONE: 1, UrlState.QUEUED: 1}}
    assert [x.url for x in reopened.lease(1, 5)] == [B]
    assert reopened.add(1, [A, B]) == 0


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "q.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(DatabaseCorrupt):
        TopicWorkQueue(bad)
