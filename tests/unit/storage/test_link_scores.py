"""The stored priorities of a page's links: compact, capped, and safe to read back."""

from __future__ import annotations

import json
import math

import pytest

from topicrawl.core.models import Link, LinkScore
from topicrawl.storage.link_scores import MAX_LINKS, decode_link_scores, encode_link_scores


def _links(*urls: str) -> tuple[Link, ...]:
    return tuple(Link(url=url, anchor="", block=0) for url in urls)


def test_scores_round_trip_with_the_components_each_link_has() -> None:
    links = _links("http://a.test/2", "http://a.test/1")
    scores = [
        LinkScore("http://a.test/1", 0.123456, {"anchor": 0.5, "block": 0.25}),
        LinkScore("http://a.test/2", 0.9, {"anchor": 1.0, "template": 1.0}),
        LinkScore("http://elsewhere.test/", 0.5, {}),  # not among the links: kept by URL
    ]

    raw = encode_link_scores(scores, links)
    decoded = decode_link_scores(raw, links)

    assert decoded["http://a.test/1"] == LinkScore(
        "http://a.test/1", 0.1235, {"anchor": 0.5, "block": 0.25}
    )
    assert decoded["http://a.test/2"].reasons == {"anchor": 1.0, "template": 1.0}
    assert decoded["http://elsewhere.test/"].score == 0.5
    # The page's own links are stored by position, not by URL.
    assert raw is not None
    assert "a.test" not in raw
    # Positions past the links read back (a damaged row) are skipped, not a crash.
    assert set(decode_link_scores(raw, links[:1])) == {"http://a.test/2", "http://elsewhere.test/"}


def test_a_page_with_many_links_keeps_the_best_scored() -> None:
    scores = [LinkScore(f"http://a.test/{n}", n / 1000, {"anchor": 0.0}) for n in range(1000)]
    links = _links(*(s.url for s in scores))

    raw = encode_link_scores(scores, links)
    decoded = decode_link_scores(raw, links)

    assert len(decoded) == MAX_LINKS
    assert min(s.score for s in decoded.values()) == pytest.approx((1000 - MAX_LINKS) / 1000)
    assert raw is not None
    assert len(raw) < 40 * MAX_LINKS  # bytes: the row stays small


def test_long_urls_and_non_finite_numbers_are_not_stored_as_such() -> None:
    scores = [
        LinkScore("http://a.test/" + "x" * 5000, 1.0, {}),
        LinkScore("http://a.test/nan", math.nan, {"anchor": math.inf}),
    ]

    raw = encode_link_scores(scores, ())

    assert raw is not None
    json.loads(raw)  # strict JSON: no NaN or Infinity
    assert "NaN" not in raw
    decoded = decode_link_scores(raw, ())
    assert list(decoded) == ["http://a.test/nan"]
    assert math.isnan(decoded["http://a.test/nan"].score)
    assert decoded["http://a.test/nan"].reasons == {}
    assert encode_link_scores([], ()) is None


def test_numbers_too_large_to_store_exactly_read_back_as_missing() -> None:
    links = _links("http://a.test/1")
    scores = [LinkScore("http://a.test/1", 1e300, {"anchor": -1e300, "block": -0.00004})]

    decoded = decode_link_scores(encode_link_scores(scores, links), links)

    assert math.isnan(decoded["http://a.test/1"].score)
    assert decoded["http://a.test/1"].reasons == {"block": -0.0}


def test_hostile_urls_and_names_stay_strings() -> None:
    url = 'http://a.test/"],[1,2],["-4611686018427387904NaN'
    scores = [LinkScore(url, 0.5, {'x"],[': 0.25})]

    raw = encode_link_scores(scores, ())

    assert raw is not None
    assert decode_link_scores(raw, ()) == {url: LinkScore(url, 0.5, {'x"],[': 0.25})}


def test_values_written_before_the_scale_read_as_they_were() -> None:
    links = _links("http://a.test/1")
    raw = '{"names":["anchor","block"],"links":[[0,0.1235,0.5,null],["http://b.test/",1,null,2]]}'

    decoded = decode_link_scores(raw, links)

    assert decoded == {
        "http://a.test/1": LinkScore("http://a.test/1", 0.1235, {"anchor": 0.5}),
        "http://b.test/": LinkScore("http://b.test/", 1.0, {"block": 2.0}),
    }


@pytest.mark.parametrize(
    "raw",
    [
        None,
        "",
        "not json",
        "[]",
        '{"names": 1}',
        '{"links": [[0]]}',
        '{"names": [], "links": 5}',
        '{"names": [], "scale": 0, "links": [[0, 1]]}',
        '{"names": [], "scale": "x", "links": [[0, 1]]}',
    ],
)
def test_what_this_module_did_not_write_reads_as_nothing(raw: str | None) -> None:
    assert decode_link_scores(raw, _links("http://a.test/")) == {}
