"""Several periods of tracking against the demo microblog over HTTP, judged by its ground truth.

Thresholds: per period the posts of six true topics plus chatter are clustered; random
clustering scores an ARI near 0, and on seeds 1-5 the tracker measured 0.84-1.00 per period
(mean 0.95 over 60 periods, see benchmarks/heat/README.md). Merging two of six equal topics
scores 0.82, three 0.56. The test asks for a mean of at least 0.88 (so a merge of two topics
in every period fails) and no period below 0.7 (no period with three topics merged).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from topicrawl.demoweb.microblog import MicroblogServer, MicroblogWorld, Trend
from topicrawl.sources.microblog import MastodonClient
from topicrawl.topics.allocation import CpuUsage, TopicAllocation
from topicrawl.topics.store import TopicStore
from topicrawl.topics.tracker import PeriodReport, TopicTracker, TrackerOptions

PERIODS = 10


class FakeSupervisor:
    """Records what the tracker hands a supervisor."""

    def __init__(self) -> None:
        self.applied: list[dict[int, TopicAllocation]] = []
        self.submitted: dict[int, set[str]] = {}

    def apply(self, allocations: Mapping[int, TopicAllocation]) -> None:
        self.applied.append(dict(allocations))

    async def submit(self, topic_id: int, urls: Sequence[str]) -> int:
        before = len(self.submitted.setdefault(topic_id, set()))
        self.submitted[topic_id].update(urls)
        return len(self.submitted[topic_id]) - before

    def stats(self) -> dict[int, object]:
        return {}


def quiet_machine(window: float) -> CpuUsage:
    return CpuUsage(capacity=200.0, total=40.0, own=0.0)


@pytest.fixture(scope="module")
def world() -> MicroblogWorld:
    return MicroblogWorld.generate(seed=11, periods=PERIODS)


@pytest.fixture(scope="module")
def server(world: MicroblogWorld) -> Iterator[MicroblogServer]:
    with MicroblogServer(world).run_in_thread() as running:
        yield running


@pytest.fixture(scope="module")
def tracked(
    world: MicroblogWorld, server: MicroblogServer, tmp_path_factory: pytest.TempPathFactory
) -> tuple[list[PeriodReport], FakeSupervisor, Path]:
    db = tmp_path_factory.mktemp("tracking") / "topics.db"
    supervisor = FakeSupervisor()

    async def run() -> list[PeriodReport]:
        async with MastodonClient(server.base_url) as client, TopicStore(str(db)) as store:
            tracker = TopicTracker(
                source=client,
                options=TrackerOptions(keywords=world.keywords()),
                store=store,
                supervisor=supervisor,
                cpu_meter=quiet_machine,
            )

            def advance(period: int) -> None:
                server.period = period

            return await tracker.track(PERIODS, before_period=advance)

    return asyncio.run(run()), supervisor, db


def test_every_post_is_collected_once(world: MicroblogWorld, tracked: tuple) -> None:
    reports, _, _ = tracked
    for report in reports:
        truth = {str(p.id) for p in world.posts_of(report.period)}
        assert set(report.post_topics) == truth


def test_topics_found_match_the_true_topics(world: MicroblogWorld, tracked: tuple) -> None:
    reports, _, _ = tracked
    scores = []
    for report in reports:
        truth = [world.true_topic(pid) or "chatter" for pid in report.post_topics]
        found = [
            f"t{topic}" if topic is not None else f"none{i}"
            for i, topic in enumerate(report.post_topics.values())
        ]
        scores.append(adjusted_rand_score(truth, found))
    assert np.mean(scores) >= 0.88, scores
    assert min(scores) >= 0.7, scores


def dominant_topics(world: MicroblogWorld, report: PeriodReport) -> dict[str, int]:
    """Each true topic's tracked topic: the one holding most of its posts this period."""
    votes: dict[str, Counter[int]] = {}
    for pid, topic in report.post_topics.items():
        truth = world.true_topic(pid)
        if truth is not None and topic is not None:
            votes.setdefault(truth, Counter())[topic] += 1
    return {truth: counter.most_common(1)[0][0] for truth, counter in votes.items()}


def test_measured_heat_follows_the_true_heat(world: MicroblogWorld, tracked: tuple) -> None:
    reports, _, _ = tracked
    errors = []
    agreements = 0
    pairs = 0
    for report in reports:
        heat = {t.topic_id: t.heat for t in report.topics}
        mapping = dominant_topics(world, report)
        measured = {truth: heat[topic] for truth, topic in mapping.items()}
        true = {truth: world.true_heat(truth, report.period) for truth in mapping}
        for truth in mapping:
            errors.append(abs(measured[truth] - true[truth]) / true[truth])
        names = sorted(mapping)
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                if abs(true[a] - true[b]) > 0.15 * max(true[a], true[b]):
                    pairs += 1
                    agreements += (measured[a] > measured[b]) == (true[a] > true[b])
    # A topic's heat is measured within 15% of the truth on median; clearly different heats
    # (more than 15% apart) are ordered as the truth orders them in at least 90% of the pairs.
    assert float(np.median(errors)) < 0.15
    assert agreements / pairs >= 0.9, (agreements, pairs)


def test_the_new_topic_appears_when_it_starts(world: MicroblogWorld, tracked: tuple) -> None:
    reports, _, _ = tracked
    emerging = next(t for t in world.topics if t.trend is Trend.EMERGING)
    before = reports[emerging.start - 1]
    assert all(world.true_topic(pid) != emerging.id for pid in before.post_topics)
    at_start = reports[emerging.start]
    topic = dominant_topics(world, at_start)[emerging.id]
    assert topic in {t.topic_id for t in at_start.topics if t.new}
    # It keeps its identity: the same tracked topic holds it in the later periods too.
    later = [dominant_topics(world, r).get(emerging.id) for r in reports[emerging.start :]]
    assert Counter(later).most_common(1)[0][1] >= len(later) - 2


def test_rising_and_fading_topics_get_more_and_less_cpu(
    world: MicroblogWorld, tracked: tuple
) -> None:
    reports, supervisor, _ = tracked
    assert len(supervisor.applied) == PERIODS
    rising = next(t for t in world.topics if t.trend is Trend.RISING).id
    fading = next(t for t in world.topics if t.trend is Trend.FADING).id

    def cap_share(report: PeriodReport, truth: str) -> float:
        topic = dominant_topics(world, report)[truth]
        caps = {t.topic_id: t.allocation.cpu_cap for t in report.topics if t.allocation}
        return caps[topic] / sum(caps.values())

    assert cap_share(reports[-1], rising) > cap_share(reports[1], rising)
    assert cap_share(reports[-1], fading) < cap_share(reports[1], fading)
    for report in reports:
        caps = [t.allocation.cpu_cap for t in report.topics if t.allocation]
        # M - C_used = 200 - 40 = 160 shared out; the 1% floor may add a little.
        assert 160.0 - 1e-6 <= sum(caps) <= 160.0 + len(caps)
        assert all(cap >= 1.0 for cap in caps)


def test_links_of_a_topics_posts_are_submitted_to_it(world: MicroblogWorld, tracked: tuple) -> None:
    _, supervisor, _ = tracked
    submitted = {url for urls in supervisor.submitted.values() for url in urls}
    linked = {u for p in world.posts if p.topic is not None for u in p.links}
    assert submitted
    assert submitted <= linked | {u for p in world.posts for u in p.links}
    assert len(submitted) >= 0.8 * len(linked)


async def test_the_store_holds_every_period_and_forecasts(
    world: MicroblogWorld, tracked: tuple
) -> None:
    reports, _, db = tracked
    async with TopicStore(str(db)) as store:
        history = await store.history()
    assert [p.period for p in history.periods] == list(range(PERIODS))
    assert sum(p.posts for p in history.periods) == len(world.posts)
    last = reports[-1]
    for topic in last.topics:
        stored = [f for f in history.forecasts[topic.topic_id] if f.target_period == PERIODS]
        assert {f.method for f in stored} == {"des", "bp", "combined"}
        assert topic.forecast is not None
        combined = next(f for f in stored if f.method == "combined")
        assert combined.value == pytest.approx(topic.forecast.value)
        weights = [f.weight for f in stored if f.method != "combined"]
        assert sum(weights) == pytest.approx(1.0)


async def test_a_resumed_tracker_continues_the_history(
    world: MicroblogWorld, server: MicroblogServer, tracked: tuple
) -> None:
    reports, _, db = tracked
    async with MastodonClient(server.base_url) as client, TopicStore(str(db)) as store:
        tracker = TopicTracker(
            source=client,
            options=TrackerOptions(keywords=world.keywords()),
            store=store,
            cpu_meter=quiet_machine,
        )
        await tracker.resume()
        assert tracker.next_period == PERIODS
        report = await tracker.run_period()  # the server has nothing newer: no post
    assert report.collected == 0
    known = {t.topic_id for t in reports[-1].topics}
    assert {t.topic_id for t in report.topics} <= known
