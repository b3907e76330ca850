"""The hub probe's budget (``hub_probe``): which URL it names and when, by hand."""

from __future__ import annotations

import pytest

from topicrawl.focus.probes import HubProbe


def test_every_nth_page_names_the_most_linked_url_not_crawled_yet() -> None:
    probe = HubProbe(every=3)
    probe.page({"p1"}, ["docs", "about", "x", "docs"])  # a page's links count once each
    assert probe.due() is None  # 1 page: not due
    probe.page({"p2"}, ["about", "docs", "y"])
    assert probe.due() is None
    probe.page({"p3"}, ["docs", "z"])
    # Due after 3 pages: docs (3 pages) before about (2); x, y, z one page each.
    assert probe.due() == ("docs", 3)
    assert probe.due() is None  # one probe per period
    for n in range(4, 7):
        probe.page({f"p{n}"}, ["docs", "y"])  # docs is never named again
    assert probe.due() == ("y", 4)


def test_a_crawled_url_is_forgotten_and_ties_go_to_the_first_seen() -> None:
    probe = HubProbe(every=2)
    probe.page({"p1"}, ["a", "b", "c"])
    probe.page({"a"}, ["b", "c"])  # a itself is crawled
    assert probe.due() == ("b", 2)  # b and c tie at 2; b was seen first
    probe.page({"p3"}, ["a", "q"])  # a link to a crawled page counts for nothing
    probe.page({"p4"}, ["q"])
    assert probe.due() == ("c", 2)
    probe.page({"p5"}, [])
    probe.page({"p6"}, [])
    assert probe.due() == ("q", 2)
    probe.page({"p7"}, ["only-once"])
    probe.page({"p8"}, [])
    assert probe.due() is None  # nothing two pages link to


def test_a_limited_budget_stops_probing() -> None:
    probe = HubProbe(every=1, limit=2)
    named = []
    for n in range(5):
        probe.page({f"p{n}"}, ["a", "b", "c", "d"])
        named.append(probe.due())
    assert named == [None, ("a", 2), ("b", 3), None, None]


def test_capacity_and_bad_settings() -> None:
    probe = HubProbe(every=1, capacity=1)
    probe.page({"p1"}, ["a", "b"])
    assert len(probe) == 1
    with pytest.raises(ValueError, match="every"):
        HubProbe(every=0)
    with pytest.raises(ValueError, match="limit"):
        HubProbe(every=1, limit=-1)
