"""Seed 004 as one system on the demo web, on a simulated clock: eight "days" in seconds.

Checked against the demo web's own truth, not against what the system reports of itself:
the records extracted, the tiers (recomputed from the site's true counts), the accounts kept
and dropped (the microblog generator's truth), and every revisit made when it was due.
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from pathlib import Path

from typer.testing import CliRunner

from topicrawl.cli.app import app
from topicrawl.demoweb.seed004 import Seed004Demo
from topicrawl.engine.accounts import AccountPipelineSettings
from topicrawl.engine.videosystem import VideoSystem, VideoSystemSettings
from topicrawl.revisit.clock import SimulatedClock
from topicrawl.revisit.popularity import popularity_index
from topicrawl.revisit.tiers import DAY, TierPolicy, assign_tiers
from topicrawl.storage.accountstore import AccountStore
from topicrawl.storage.history import PageHistory
from topicrawl.storage.videostore import VideoStore

START = 1_800_000_000.0
DAYS = 8.0
PERIODS = {1: DAY, 2: 3 * DAY, 3: 7 * DAY}
COUNTS = ("plays", "comments", "favourites")


def _path(url: str) -> str:
    return "/" + url.split("/", 3)[3]


async def test_the_system_extracts_tiers_ranks_and_revisits_when_due(tmp_path: Path) -> None:
    clock = SimulatedClock(START)
    db = str(tmp_path / "video.db")
    with Seed004Demo(clock, titles=8, fans=12, others=24) as demo:
        settings = VideoSystemSettings(
            site=demo.site_url,
            db=db,
            parsers=str(demo.write_schemas(tmp_path / "schemas.toml")),
            api=demo.api_url,
            days=DAYS,
            accounts=AccountPipelineSettings(max_hops=1, max_per_hop=40),
            nodes=("n1", "n2"),
        )
        report = await VideoSystem(settings, clock=clock).run()
        site, world = demo.site, demo.world
        requests_at_end = demo.video.requests

    assert clock.now() >= START + 7 * DAY
    async with VideoStore(db, read_only=True) as store:
        videos = {row["video"]: row for row in await store.videos(limit=100)}
        visits = await store.visits()
        plans = await store.plans(settings.site)
        records = await store.records()
    async with AccountStore(db, read_only=True) as accounts_store:
        accounts = await accounts_store.accounts(kept_only=False, limit=10_000)
        posts = await accounts_store.post_ids(demo.api_url.split("//")[1].rstrip("/"))

    # Pages extracted: one video per title, every field as the site wrote it on the last
    # day the page was fetched.
    assert len(videos) == len(site.titles) == report.videos
    last_fetch = defaultdict(lambda: START)
    for visit in visits:
        if visit["kind"] == "page" and visit["status"] == 200:
            last_fetch[visit["item"]] = visit["visited_at"]
    for url, row in videos.items():
        truth = site.truth_at(_path(url), (last_fetch[url] - START) / DAY).fields
        assert row["title"] == truth["title"]
        assert row["kind"] == truth["type"]
        assert json.loads(row["directors"]) == truth["directors"]
        assert json.loads(row["actors"]) == truth["actors"]
        _, record = records[url]
        assert {k: record[k] for k in COUNTS} == {k: truth[k] for k in COUNTS}
        # the play pages belong to their video
        pages = json.loads(row["pages"])
        assert all(site.truth(_path(p)).fields["title"] == truth["title"] for p in pages)
        assert len(pages) >= 2

    # Tiers from the counts: the first plan is the site's day-0 counts ranked, the second
    # (day 7) adds each count's growth since then, as the site's truth says.
    assert len(plans) == 2
    first_at, second_at = sorted(plans)
    assert second_at - first_at == 7 * DAY
    day0 = {url: site.truth_at(_path(url), 0).fields for url in videos}
    expected = assign_tiers(
        {u: popularity_index({k: f[k] for k in COUNTS}) for u, f in day0.items()}, TierPolicy()
    )
    assert plans[first_at] == expected
    assert sorted(expected.values()) == [1, 1, 2, 2, 3, 3, 3, 3]  # 20 % and 30 % of 8, rounded
    # The counts the second plan read were those of each detail page's last visit before it.
    seen_at: dict[str, float] = {}
    for visit in visits:
        if visit["kind"] == "page" and visit["item"] in videos and visit["visited_at"] < second_at:
            seen_at[visit["item"]] = visit["visited_at"]
    growth = {}
    for url in videos:
        now = site.truth_at(_path(url), (seen_at.get(url, START) - START) / DAY).fields
        growth[url] = popularity_index(
            {k: now[k] for k in COUNTS},
            previous={k: day0[url][k] for k in COUNTS},
            elapsed=7 * DAY,
        )
    assert plans[second_at] == assign_tiers(growth, TierPolicy())

    # Accounts: every exact or affix match is kept; of the accounts the LDA filter judged,
    # those dropped are nearly all off the video domain, those kept nearly all on it.
    truth = world.true_matches()
    in_domain = world.in_domain()
    by_id = {a["account_id"]: a for a in accounts}
    strict = [a for a in by_id.values() if a["match_step"] in (1, 2)]
    assert strict
    assert all(a["kept"] for a in strict)
    assert all(a["account_id"] in truth for a in strict)
    judged = [a for a in by_id.values() if a["match_step"] not in (1, 2)]
    dropped = [a for a in judged if not a["kept"]]
    kept = [a for a in judged if a["kept"]]
    assert len(dropped) >= 10
    assert sum(a["account_id"] not in in_domain for a in dropped) >= 0.9 * len(dropped)
    assert sum(a["account_id"] in in_domain for a in kept) >= 0.8 * len(kept)
    assert report.accounts["kept"] == sum(a["kept"] for a in accounts)
    assert report.accounts["dropped"] == len(accounts) - report.accounts["kept"]

    # Revisits when due: on the simulated clock, each at exactly its due time; each page and
    # account visited every period of its tier; nothing left due at the end.
    assert visits
    assert all(v["visited_at"] == v["due_at"] for v in visits)
    assert report.max_lateness == 0.0
    by_item: dict[str, list[dict[str, float]]] = defaultdict(list)
    for visit in visits:
        by_item[visit["item"]].append(visit)
    for item, made in by_item.items():
        for before, after in itertools.pairwise(made):
            gap = after["visited_at"] - before["visited_at"]
            # a re-plan may move an item to another tier (and make it due at once)
            assert gap in {PERIODS[before["tier"]], PERIODS[after["tier"]]} or (
                after["visited_at"] == second_at
            ), (item, gap)
    # In the first week every item was visited on each multiple of its tier's period.
    expected_days = {1: [1, 2, 3, 4, 5, 6], 2: [3, 6], 3: []}
    first_week = {1: 0, 2: 0, 3: 0}
    for made in by_item.values():
        week = [v for v in made if v["visited_at"] < second_at]
        if not week:
            continue
        (tier,) = {v["tier"] for v in week}
        assert [round((v["visited_at"] - START) / DAY) for v in week] == expected_days[tier]
        first_week[tier] += 1
    assert first_week[1] >= 10
    assert first_week[2] >= 10
    tier1_pages = [
        p for url, row in videos.items() if row["tier"] == 1 for p in json.loads(row["pages"])
    ]
    # Pages are spread over both nodes, films and series each by their own hash.
    assert {row["node"] for row in videos.values()} == {"n1", "n2"}
    # Each node's round was measured; the week-2 plan placed new videos by those rates.
    assert set(report.node_weights) == {"n1", "n2"}
    assert all(w > 0 for w in report.node_weights.values())
    assert report.page_visits == sum(1 for v in visits if v["kind"] == "page")
    assert report.account_visits == sum(1 for v in visits if v["kind"] == "account")
    # The counts grow, so most page revisits found a change, and the fetch history keeps it.
    assert report.changed_pages >= report.page_visits // 3
    async with PageHistory(db, read_only=True) as history:
        assert len(await history.rows(tier1_pages[0])) >= 6
    # The microblog shows posts as their time comes: revisits found new ones, all stored.
    assert report.new_posts > 0
    assert sum(len(p) for p in posts.values()) >= report.new_posts
    assert requests_at_end > report.pages_crawled


def test_video_run_and_show_from_the_cli(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    runner = CliRunner()
    # 12 titles: the demo site's port (so its URLs, so their hashes) differs from run to run,
    # and with 4 every video went to one node one run in eight (CI, session 19).
    args = ["video", "run", "--demo", "--clock", "simulated", "--days", "7", "--titles", "12"]
    args += ["--db", db, "--max-hops", "0", "--max-per-hop", "20", "--nodes", "a,b"]
    args += ["--node", "a"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "12 videos" in result.output
    shown = runner.invoke(app, ["video", "show", "--db", db, "--json", "--limit", "1000"])
    assert shown.exit_code == 0, shown.output
    body = json.loads(shown.output)
    assert len(body["videos"]) == 12
    assert body["counts"]["visits.page"] > 0
    # This process is node a: it revisited only what hashes to a, though it planned all.
    assert {v["node"] for v in body["videos"]} == {"a", "b"}
    assert {v["node"] for v in body["visits"]} == {"a"}
    assert {v["tier"] for v in body["videos"]} <= {1, 2, 3}


def test_video_run_refuses_bad_input(tmp_path: Path) -> None:
    runner = CliRunner()
    both = runner.invoke(app, ["video", "run", "--demo", "--site", "http://x.test/"])
    assert both.exit_code == 2
    no_schemas = runner.invoke(app, ["video", "run", "--site", "http://x.test/"])
    assert no_schemas.exit_code == 2
    assert "--parsers" in no_schemas.output
    bad_node = runner.invoke(
        app,
        ["video", "run", "--demo", "--nodes", "a,b", "--node", "c", "--db", str(tmp_path / "x")],
    )
    assert bad_node.exit_code == 2
    assert "node" in bad_node.output
    follower_on_demo = runner.invoke(
        app,
        ["video", "run", "--demo", "--nodes", "a,b", "--node", "b", "--db", str(tmp_path / "y")],
    )
    assert follower_on_demo.exit_code == 2
    assert "leader's --site" in follower_on_demo.output
