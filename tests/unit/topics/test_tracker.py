"""TopicTracker with an in-memory source: collection, heat, leftovers, allocation, persistence."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from topicrawl.sources.microblog import Post
from topicrawl.topics.ahp import HeatWeights
from topicrawl.topics.allocation import CpuUsage, TopicAllocation
from topicrawl.topics.discovery import JiebaTokenizer, TopicDiscoverer
from topicrawl.topics.store import TopicStore
from topicrawl.topics.tracker import TopicTracker, TrackerOptions

# Equal weights make hand-computing heat easy: heat = (reposts + likes + comments) / 3.
EQUAL = HeatWeights(reposts=1 / 3, likes=1 / 3, comments=1 / 3)

SPACE = "telescope galaxy nebula orbit"
FOOD = "dumpling noodle broth recipe"
LONE = "galaxy spotted today with friends downtown"


def post(n: int, text: str, engagement: int, *, links: tuple[str, ...] = ()) -> Post:
    return Post(
        id=str(n),
        text=text,
        created_at=1.7e9 + n,
        author="a",
        reposts=engagement,
        likes=engagement,
        comments=engagement,
        url="",
        links=links,
    )


@dataclass
class Call:
    query: str
    since_id: str | None


class FakeSource:
    """Serves the posts whose text holds the query, newest first, newer than since_id."""

    source = "fake"

    def __init__(self) -> None:
        self.posts: list[Post] = []
        self.calls: list[Call] = []

    async def search(
        self, query: str, *, max_posts: int = 400, since_id: str | None = None
    ) -> Sequence[Post]:
        self.calls.append(Call(query, since_id))
        found = [
            p
            for p in sorted(self.posts, key=lambda p: -int(p.id))
            if query in p.text and int(p.id) > int(since_id or 0)
        ]
        return found[:max_posts]

    async def hashtag(
        self, tag: str, *, max_posts: int = 400, since_id: str | None = None
    ) -> Sequence[Post]:
        return []


class Recorder:
    def __init__(self) -> None:
        self.applied: list[dict[int, TopicAllocation]] = []
        self.submitted: list[tuple[int, list[str]]] = []

    def apply(self, allocations: Mapping[int, TopicAllocation]) -> None:
        self.applied.append(dict(allocations))

    async def submit(self, topic_id: int, urls: Sequence[str]) -> int:
        self.submitted.append((topic_id, list(urls)))
        return len(urls)

    def stats(self) -> dict[int, object]:
        return {}


def machine(window: float) -> CpuUsage:
    return CpuUsage(capacity=200.0, total=60.0, own=0.0)


def tracker(source: FakeSource, **kwargs: object) -> TopicTracker:
    return TopicTracker(
        source=source,
        options=TrackerOptions(keywords=("telescope", "galaxy", "noodle"), min_posts=2),
        heat_weights=EQUAL,
        cpu_meter=machine,
        **kwargs,  # type: ignore[arg-type]
    )


async def test_a_period_finds_topics_heat_and_allocations(tmp_path: Path) -> None:
    source = FakeSource()
    source.posts = [
        post(1, f"{SPACE} one", 10, links=("http://a.test/1",)),
        post(2, f"{SPACE} two", 20),
        post(3, f"{SPACE} three", 30),
        post(4, f"{FOOD} noodle one", 2),
        post(5, f"{FOOD} noodle two", 4),
    ]
    recorder = Recorder()
    async with TopicStore(str(tmp_path / "t.db")) as store:
        tracking = tracker(source, supervisor=recorder, store=store)
        report = await tracking.run_period()
        history = await store.history()
    # Posts found by two keywords ("telescope", "galaxy") are collected once.
    assert report.collected == 5
    assert len(report.topics) == 2
    space, food = report.topics  # hottest first
    assert space.posts == 3
    assert space.heat == pytest.approx(20.0)  # mean of 10, 20, 30
    assert food.heat == pytest.approx(3.0)
    assert "telescope" in space.words
    assert space.new
    assert food.new
    # M - C_used = 140, shared 20 : 3.
    assert space.allocation is not None
    assert food.allocation is not None
    assert space.allocation.cpu_cap == pytest.approx(140 * 20 / 23)
    assert food.allocation.cpu_cap == pytest.approx(140 * 3 / 23)
    assert recorder.applied == [{space.topic_id: space.allocation, food.topic_id: food.allocation}]
    assert recorder.submitted == [(space.topic_id, ["http://a.test/1"])]
    assert [p.period for p in history.periods] == [0]
    assert [h.heat for h in history.heat[space.topic_id]] == [pytest.approx(20.0)]


async def test_later_periods_ask_only_for_new_posts_and_keep_topic_ids() -> None:
    source = FakeSource()
    source.posts = [post(i, f"{SPACE} p{i}", 5) for i in range(1, 4)]
    tracking = tracker(source)
    first = await tracking.run_period()
    source.calls.clear()
    source.posts += [post(i, f"{SPACE} p{i}", 50) for i in range(10, 13)]
    second = await tracking.run_period()
    assert {c.since_id for c in source.calls if c.query != "noodle"} == {"3"}
    assert second.collected == 3
    assert [t.topic_id for t in second.topics] == [first.topics[0].topic_id]
    assert second.topics[0].heat == pytest.approx(50.0)
    forecast = second.topics[0].forecast
    assert forecast is not None
    assert set(forecast.forecasts) == {"des", "bp"}


async def test_a_post_outside_every_cluster_joins_the_topic_whose_words_it_holds() -> None:
    source = FakeSource()
    source.posts = [
        post(1, f"{SPACE} one", 10),
        post(2, f"{SPACE} two", 10),
        post(3, LONE, 40),
    ]
    # Precondition: clustering alone leaves post 3 out (too little in common with the rest).
    discoverer = TopicDiscoverer(
        tokenizer=JiebaTokenizer(user_words=["telescope", "galaxy", "noodle"]), min_posts=2
    )
    clusters = discoverer.discover([p.text for p in source.posts])
    assert [c.members for c in clusters] == [(0, 1)]
    report = await tracker(source).run_period()
    assert len(report.topics) == 1
    topic = report.topics[0]
    assert report.post_topics["3"] == topic.topic_id
    assert topic.posts == 3
    assert topic.heat == pytest.approx(20.0)


async def test_a_period_without_posts_records_zero_heat_and_retires_in_time() -> None:
    source = FakeSource()
    source.posts = [post(i, f"{SPACE} p{i}", 5) for i in range(1, 4)]
    tracking = tracker(source)
    await tracking.run_period()
    reports = [await tracking.run_period() for _ in range(3)]
    assert [r.collected for r in reports] == [0, 0, 0]
    assert reports[0].topics[0].heat == 0.0
    assert reports[-1].retired == (1,)
    assert reports[-1].topics == ()


def test_options_need_something_to_track() -> None:
    with pytest.raises(ValueError, match="keyword"):
        TrackerOptions(keywords=())
