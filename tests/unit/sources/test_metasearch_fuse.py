"""Reciprocal rank fusion of SearXNG results (pure)."""

from __future__ import annotations

import pytest

from topicrawl.sources.metasearch import RRF_K, fuse


def _r(
    url: str, engines: list[str], positions: list[int] | None = None, **more: object
) -> dict[str, object]:
    result: dict[str, object] = {"url": url, "title": url.rsplit("/", 1)[-1], "engines": engines}
    if positions is not None:
        result["positions"] = positions
    result.update(more)
    return result


def test_agreement_of_engines_beats_one_engines_first_place() -> None:
    results = [
        _r("http://a.example/solo", ["google"], [1]),
        _r("http://a.example/agreed", ["bing", "duckduckgo"], [3, 4]),
    ]
    ranked = fuse(results)
    assert [p.url for p in ranked] == ["http://a.example/agreed", "http://a.example/solo"]
    assert ranked[0].score == pytest.approx(1 / (RRF_K + 3) + 1 / (RRF_K + 4))
    assert ranked[0].engines == ("bing", "duckduckgo")
    assert ranked[0].positions == (3, 4)
    assert ranked[1].score == pytest.approx(1 / (RRF_K + 1))


def test_the_same_url_twice_counts_each_engine_once_at_its_best_rank() -> None:
    results = [
        _r("http://a.example/x", ["google"], [5]),
        _r("HTTP://A.example/x#frag", ["google"], [2]),  # same canonical URL, a later page
        _r("http://a.example/x", ["bing"], [7]),
    ]
    [only] = fuse(results)
    assert only.engines == ("bing", "google")
    assert only.score == pytest.approx(1 / (RRF_K + 2) + 1 / (RRF_K + 7))


def test_results_without_positions_rank_by_their_order_within_each_engine() -> None:
    results = [
        _r("http://a.example/1", ["google"]),
        _r("http://a.example/2", ["bing"]),
        _r("http://a.example/3", ["google", "bing"]),
        {"url": "http://a.example/4", "engine": "qwant"},
    ]
    by_url = {p.url: p for p in fuse(results)}
    assert by_url["http://a.example/3"].positions == (2, 2)
    assert by_url["http://a.example/2"].positions == (1,)
    assert by_url["http://a.example/4"].engines == ("qwant",)


def test_unusable_results_are_left_out_and_text_is_cleaned() -> None:
    results = [
        {"url": "javascript:alert(1)", "engines": ["x"]},
        {"url": 42},
        {"title": "no url"},
        _r("http://a.example/ok", ["x"], [1], title="evil\x1b[31m title\n", content="a" * 5000),
    ]
    [only] = fuse(results)
    assert only.url == "http://a.example/ok"
    assert only.title == "evil [31m title"
    assert len(only.snippet) == 500


def test_the_ranking_is_deterministic_for_ties() -> None:
    results = [_r(f"http://a.example/{c}", ["x"], [1]) for c in "cab"]
    assert [p.url[-1] for p in fuse(results)] == ["a", "b", "c"]


def test_a_negative_k_is_refused() -> None:
    with pytest.raises(ValueError, match="k must be"):
        fuse([], k=-1)
