"""``video run --policy change-rate``: pages revisited at the freshness-optimal intervals of
their estimated change rates and plays, at the tiers' budget, on a simulated clock."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from topicrawl.cli.app import app
from topicrawl.demoweb.seed004 import Seed004Demo
from topicrawl.engine.videosystem import SystemReport, VideoSystem, VideoSystemSettings
from topicrawl.revisit.clock import SimulatedClock
from topicrawl.revisit.tiers import TierPolicy
from topicrawl.storage.videostore import VideoStore

START = 1_800_000_000.0


Videos = dict[str, tuple[float, int]]


async def _run(tmp_path: Path, policy: str) -> tuple[SystemReport, list[dict[str, Any]], Videos]:
    """A run of ``policy``: its report, page visits, and each video's plays and visits (by the
    path of its detail page)."""
    clock = SimulatedClock(START)
    db = str(tmp_path / f"{policy}.db")
    with Seed004Demo(clock, titles=6) as demo:
        settings = VideoSystemSettings(
            site=demo.site_url,
            db=db,
            parsers=str(demo.write_schemas(tmp_path / "schemas.toml")),
            days=8.0,
            policy=policy,
        )
        report = await VideoSystem(settings, clock=clock).run()
    async with VideoStore(db, read_only=True) as store:
        visits = [v for v in await store.visits() if v["kind"] == "page"]
        videos = await store.videos(limit=None)
    count = Counter(v["item"] for v in visits)
    found = {
        row["video"].split("/", 3)[3]: (
            float(json.loads(row["counts"])["plays"]),
            sum(count[p] for p in json.loads(row["pages"])),
        )
        for row in videos
    }
    return report, visits, found


def _gaps(visits: list[dict[str, Any]]) -> set[float]:
    """Every time between two visits of one page."""
    last: dict[str, float] = {}
    found = set()
    for visit in sorted(visits, key=lambda v: v["visited_at"]):
        if visit["item"] in last:
            found.add(round(visit["visited_at"] - last[visit["item"]], 3))
        last[visit["item"]] = visit["visited_at"]
    return found


async def test_change_rate_policy_spends_the_tiers_budget_on_popular_pages(
    tmp_path: Path,
) -> None:
    tiers, tier_visits, tier_videos = await _run(tmp_path, "tiers")
    rated, rated_visits, rated_videos = await _run(tmp_path, "change-rate")
    # Under the tiers every revisit comes one tier period after the last; under the change
    # rate policy at each page's own interval, shown to the user as the nearest tier.
    periods = set(TierPolicy().periods)
    assert _gaps(tier_visits) <= periods
    assert not _gaps(rated_visits) <= periods
    assert {v["tier"] for v in rated_visits} <= {1, 2, 3}
    # About the tiers' budget (its plan spends theirs; a page's last interval may pass the end).
    assert 0.7 * tiers.page_visits <= rated.page_visits <= 1.05 * tiers.page_visits
    # Revisits follow plays: the most played video's pages get more than the least played
    # one's, and more than the tiers gave them.
    top = max(rated_videos, key=lambda v: rated_videos[v][0])
    bottom = min(rated_videos, key=lambda v: rated_videos[v][0])
    assert rated_videos[top][1] > rated_videos[bottom][1]
    assert rated_videos[top][1] > tier_videos[top][1]


def test_video_run_refuses_an_unknown_policy(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["video", "run", "--demo", "--policy", "fastest", "--db", str(tmp_path / "x.db")]
    )
    assert result.exit_code == 2
    assert "policy" in result.output
