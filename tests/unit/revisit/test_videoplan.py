"""Seed 004's video plan without I/O: records -> videos, popularity -> tiers, videos -> nodes."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from topicrawl.core.errors import ConfigError
from topicrawl.revisit.tiers import TierPolicy
from topicrawl.revisit.videoplan import (
    kind_of,
    node_weights,
    plan_videos,
    video_node,
    videos_from_records,
)

DETAIL = "video-detail"


def _detail(title: str, plays: float, **extra: object) -> tuple[str, dict[str, object]]:
    record: dict[str, object] = {
        "title": title,
        "type": "Film",
        "directors": ["Ann Lee"],
        "actors": ["Bo Chen", "Cy Dee"],
        "plays": plays,
        "comments": plays / 100,
        "favourites": plays / 50,
    }
    record.update(extra)
    return DETAIL, record


def test_records_group_into_videos_with_their_play_pages() -> None:
    records = {
        "http://v.test/title/a.html": _detail("Alpha", 1000),
        "http://v.test/title/b.html": _detail("Beta", 10, type="电视剧"),
        "http://v.test/play/a-1.html": ("video-play", {"title": "Alpha", "plays": 900}),
        "http://v.test/play/b-1.html": ("video-play", {"title": "Beta", "plays": 5}),
        "http://v.test/play/b-2.html": ("video-play", {"title": "Beta", "plays": 4}),
        "http://v.test/play/x-1.html": ("video-play", {"title": "Nobody's", "plays": 4}),
        "http://v.test/title/untitled.html": (DETAIL, {"plays": 3}),
    }
    videos = {v.key: v for v in videos_from_records(records, detail_schema=DETAIL)}
    assert sorted(videos) == ["http://v.test/title/a.html", "http://v.test/title/b.html"]
    alpha, beta = videos["http://v.test/title/a.html"], videos["http://v.test/title/b.html"]
    assert alpha.pages == ("http://v.test/title/a.html", "http://v.test/play/a-1.html")
    assert len(beta.pages) == 3
    assert (alpha.kind, beta.kind) == ("film", "series")
    assert alpha.counts == {"plays": 1000, "comments": 10, "favourites": 20}
    assert alpha.names == ("Alpha", "Ann Lee", "Bo Chen", "Cy Dee")
    assert not alpha.partial


def test_a_record_with_missing_counts_is_kept_and_flagged_partial() -> None:
    _, record = _detail("Gamma", 100)
    del record["favourites"]
    record["comments"] = "many"  # not a number: left out, not guessed
    records = {"http://v.test/title/g.html": (DETAIL, record)}
    (video,) = videos_from_records(records, detail_schema=DETAIL)
    assert video.partial
    assert video.counts == {"plays": 100}


@pytest.mark.parametrize(
    ("label", "kind"),
    [("Film", "film"), ("Movie", "film"), ("电影", "film"), ("TV series", "series"),
     ("TVSeries", "series"), ("电视剧", "series"), ("", "video"), (None, "video")],
)  # fmt: skip
def test_kind_from_the_type_label(label: object, kind: str) -> None:
    assert kind_of(label) == kind


def test_tiers_follow_the_counts_and_a_fast_riser_moves_up() -> None:
    records = {f"http://v.test/title/{i}.html": _detail(f"T{i}", 10 ** (i + 2)) for i in range(10)}
    videos = videos_from_records(records, detail_schema=DETAIL)
    plan = plan_videos(videos, TierPolicy(), {"n": 1.0})
    by_plays = sorted(videos, key=lambda v: -v.counts["plays"])
    assert [plan.tiers[v.key] for v in by_plays] == [1, 1, 2, 2, 2, 3, 3, 3, 3, 3]
    # A week later the least played title has grown 100,000-fold, the others not at all.
    previous = {v.key: dict(v.counts) for v in videos}
    low = by_plays[-1].key
    grown = dict(records)
    grown[low] = _detail("T0", 10**7)
    later = plan_videos(
        videos_from_records(grown, detail_schema=DETAIL),
        TierPolicy(),
        {"n": 1.0},
        previous=previous,
        elapsed=7 * 86_400.0,
    )
    assert later.tiers[low] == 1
    assert plan.popularity[low] < later.popularity[low]


def test_videos_spread_over_nodes_films_and_series_each_evenly() -> None:
    nodes = {"a": 1.0, "b": 1.0, "c": 1.0}
    for kind in ("film", "series"):
        placed = Counter(video_node(f"http://v.test/{kind}/{i}", kind, nodes) for i in range(900))
        assert set(placed) == set(nodes)
        assert all(250 <= n <= 350 for n in placed.values()), placed
    # The kind is part of the hash: the same URL as a film and as a series may go apart.
    apart = sum(
        video_node(f"http://v.test/{i}", "film", nodes)
        != video_node(f"http://v.test/{i}", "series", nodes)
        for i in range(300)
    )
    assert 150 <= apart <= 250


def test_a_slow_node_gets_fewer_new_videos_and_placed_ones_stay() -> None:
    weights = node_weights({"fast": (300, 10.0), "slow": (100, 10.0)})
    assert weights == {"fast": 30.0, "slow": 10.0}
    placed = Counter(video_node(f"u{i}", "film", weights) for i in range(2000))
    assert 0.70 <= placed["fast"] / 2000 <= 0.80  # 3:1
    records = {f"http://v.test/title/{i}.html": _detail(f"T{i}", 100 + i) for i in range(40)}
    videos = videos_from_records(records, detail_schema=DETAIL)
    first = plan_videos(videos, TierPolicy(), {"a": 1.0, "b": 1.0})
    # Node c joins: videos already placed keep their node; only b's move when b leaves.
    second = plan_videos(videos, TierPolicy(), {"a": 1.0, "b": 1.0, "c": 1.0}, placed=first.nodes)
    assert second.nodes == first.nodes
    third = plan_videos(videos, TierPolicy(), {"a": 1.0, "c": 1.0}, placed=second.nodes)
    for key, node in first.nodes.items():
        assert third.nodes[key] == node if node == "a" else third.nodes[key] in {"a", "c"}
    assert "c" in set(third.nodes.values())


def test_node_weights_fill_in_unmeasured_nodes_and_refuse_nonsense() -> None:
    assert node_weights({"a": (10, 2.0), "b": (0, 0.0)}) == {"a": 5.0, "b": 5.0}
    assert node_weights({"a": (0, 0.0)}) == {"a": 1.0}
    with pytest.raises(ConfigError):
        node_weights({"a": (-1, 1.0)})
    with pytest.raises(ConfigError):
        video_node("u", "film", {})
    with pytest.raises(ConfigError):
        video_node("u", "film", {"a": math.nan})
    with pytest.raises(ConfigError):
        plan_videos([], TierPolicy(), {})
