"""TopicStore: a tracked period written and read back whole, on SQLite (and PostgreSQL)."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path
from types import MappingProxyType

import pytest

from topicrawl.storage.migrations import LATEST_VERSION
from topicrawl.topics.ahp import default_heat_weights
from topicrawl.topics.allocation import TopicAllocation
from topicrawl.topics.chart import render_chart
from topicrawl.topics.forecast import HeatForecast
from topicrawl.topics.store import COMBINED, PeriodRecord, PostRecord, TopicStore
from topicrawl.topics.table import TrackedTopic

HOSTILE = "<script>alert(1)</script>"


def forecast(value: float, des: float, bp: float, w_des: float) -> HeatForecast:
    return HeatForecast(
        value=value,
        steps=1,
        forecasts=MappingProxyType({"des": des, "bp": bp}),
        weights=MappingProxyType({"des": w_des, "bp": 1 - w_des}),
        errors=MappingProxyType({"des": (1.0,), "bp": (2.0,)}),
        notes=MappingProxyType({"bp": "2 periods of history, the net needs 6; used des"}),
    )


def post(n: int, period: int, topic: int | None) -> PostRecord:
    return PostRecord(
        source="m.social",
        post_id=str(1000 + n),
        period=period,
        created_at=1.7e9 + n,
        author=f"u{n}",
        text=f"text {n} {HOSTILE}",
        url=f"https://m.social/@u/{n}",
        reposts=n,
        likes=2 * n,
        comments=3 * n,
        heat=float(n),
        topic_id=topic,
        links=(f"https://example.org/{n}",),
        tags=("space",),
        lang="en",
    )


def record(period: int) -> PeriodRecord:
    topics = [
        TrackedTopic(1, MappingProxyType({"galaxy": 0.5, HOSTILE: 0.2}), 0, period),
        TrackedTopic(2, MappingProxyType({"match": 0.4}), 0, 0, retired_at=period)
        if period
        else TrackedTopic(2, MappingProxyType({"match": 0.4}), 0, 0),
    ]
    active = [t for t in topics if t.active]
    return PeriodRecord(
        period=period,
        started_at=100.0 + period,
        finished_at=101.0 + period,
        keywords=("space", "#football"),
        heat_weights=default_heat_weights(),
        posts=[post(3 * period + i, period, 1 if i else None) for i in range(3)],
        topics=topics,
        heats=MappingProxyType({t.topic_id: (10.0 * (period + 1) * t.topic_id, 2) for t in active}),
        forecasts=MappingProxyType(
            {t.topic_id: forecast(12.0 + period, 11.0, 13.0, 0.25) for t in active}
        ),
        allocations=MappingProxyType({t.topic_id: TopicAllocation(12.0, 40.0, 2) for t in active}),
        cpu_total=50.0,
        cpu_used_by_others=20.0,
    )


async def round_trip(url: str) -> None:
    async with TopicStore(url) as store:
        assert await store.last_period() is None
        await store.save_period(record(0))
        await store.save_period(record(1))
        await store.save_period(record(1))  # saving a period again replaces it
        history = await store.history()
        assert [p.period for p in history.periods] == [0, 1]
        assert history.periods[0].keywords == ("space", "#football")
        assert history.periods[1].posts == 3
        assert history.periods[1].cpu_used_by_others == 20.0
        assert [t.topic_id for t in history.topics] == [1, 2]
        assert history.topics[1].retired_at == 1
        assert dict(history.topics[0].words) == {"galaxy": 0.5, HOSTILE: 0.2}
        assert [(h.period, h.heat, h.posts) for h in history.heat[1]] == [
            (0, 10.0, 2),
            (1, 20.0, 2),
        ]
        assert [h.period for h in history.heat[2]] == [0]
        methods = {(f.target_period, f.method): (f.value, f.weight) for f in history.forecasts[1]}
        assert methods == {
            (1, "des"): (11.0, 0.25),
            (1, "bp"): (13.0, 0.75),
            (1, COMBINED): (12.0, 1.0),
            (2, "des"): (11.0, 0.25),
            (2, "bp"): (13.0, 0.75),
            (2, COMBINED): (13.0, 1.0),
        }
        notes = {f.note for f in history.forecasts[1] if f.method == "bp"}
        assert notes == {"2 periods of history, the net needs 6; used des"}
        assert [(a.period, a.cpu_cap, a.processes) for a in history.allocations[1]] == [
            (0, 40.0, 2),
            (1, 40.0, 2),
        ]
        assert await store.last_period() == 1
        assert await store.newest_post_id("m.social") == "1005"
        assert await store.newest_post_id("elsewhere") is None
        topics = await store.post_topics(1)
        assert topics == {
            ("m.social", "1003"): None,
            ("m.social", "1004"): 1,
            ("m.social", "1005"): 1,
        }
        loaded = {t.topic_id: t for t in await store.load_topics()}
        assert loaded[1].heat_history == ((0, 10.0), (1, 20.0))
        assert loaded[1].last_seen == 1
        assert loaded[2].retired_at == 1


async def test_round_trip_on_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "topics.db"
    await round_trip(str(path))
    with sqlite3.connect(path) as connection:
        versions = [r[0] for r in connection.execute("SELECT version FROM schema_version")]
        tables = {r[0] for r in connection.execute("SELECT name FROM sqlite_master")}
    assert versions == list(range(1, LATEST_VERSION + 1))
    assert LATEST_VERSION >= 3
    assert {
        "posts",
        "tracked_topics",
        "topic_words",
        "topic_heat",
        "heat_forecasts",
        "allocations",
    } <= tables


@pytest.mark.postgres
async def test_round_trip_on_postgres(postgres_url: str) -> None:
    schema = f"topics_{uuid.uuid4().hex[:12]}"
    await round_trip(f"{postgres_url}?schema={schema}")


async def test_the_chart_escapes_hostile_words_and_runs_no_script(tmp_path: Path) -> None:
    async with TopicStore(str(tmp_path / "t.db")) as store:
        await store.save_period(record(0))
        await store.save_period(record(1))
        history = await store.history()
    page = render_chart(history)
    assert "<script" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "default-src 'none'" in page
    # One chart per topic: a real-heat line and a forecast line for topic 1.
    assert page.count("<svg") == 2
    assert "forecast (entropy mix)" in page
