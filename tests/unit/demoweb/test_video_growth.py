"""The demo web of seed 004 moves with a clock: counts grow, pages carry ETags (304 when
unchanged), and the microblog shows a post only once its time has come."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from topicrawl.demoweb.accounts import AccountWorld
from topicrawl.demoweb.accountserver import AccountServer
from topicrawl.demoweb.video import VideoServer, build_video_site
from topicrawl.demoweb.video.catalog import grow_count, grown, growth_rate
from topicrawl.parse.methods import parse_count
from topicrawl.revisit.clock import SimulatedClock
from topicrawl.sources.accountsapi import AccountsClient


def test_counts_grow_with_the_days_and_stay_exact_in_every_form() -> None:
    site = build_video_site(seed=0, titles=10, hard=False)
    rates = [growth_rate(t) for t in site.titles]
    assert all(0 < r <= 0.5 for r in rates)
    assert len(set(rates)) == len(rates)  # each title its own pace
    for title in site.titles:
        later = grown(title, 30.0)
        assert later.plays >= title.plays
        assert later.plays == grow_count(title.plays, growth_rate(title), 30.0)
        assert grown(title, 0.0) == title
    path = f"/title/{site.titles[0].id}.html"
    truth = site.truth_at(path, 30.0).fields
    assert truth["plays"] == grown(site.titles[0], 30.0).plays
    assert truth["plays"] > site.truth(path).fields["plays"]  # type: ignore[operator]
    _, _, body = site.render(path, day=30.0)
    written = body.decode().split('class="plays">', 1)[1].split("<b>", 1)[1].split("</b>", 1)[0]
    assert parse_count(written) == truth["plays"]
    # a play page's plays grow too; a list page has no counts and is unchanged
    play = next(p for p in site.paths() if p.startswith("/play/"))
    assert site.truth_at(play, 30.0).fields["plays"] != site.truth(play).fields["plays"]
    assert site.render("/index.html", day=30.0) == site.render("/index.html")


def test_pages_carry_an_etag_and_a_matching_request_gets_304() -> None:
    days = [0.0]
    server = VideoServer(build_video_site(seed=0, titles=4, hard=False), clock=lambda: days[0])
    with server.run_in_thread():
        url = server.base_url + f"title/{server.site.titles[0].id}.html"
        with urllib.request.urlopen(url, timeout=10) as response:
            etag = response.headers["ETag"]
            first = response.read()
        assert etag
        request = urllib.request.Request(url, headers={"If-None-Match": etag})
        with pytest.raises(urllib.error.HTTPError) as raised:
            urllib.request.urlopen(request, timeout=10).close()
        assert raised.value.code == 304
        raised.value.close()
        days[0] = 60.0  # two months later the counts differ: a full answer again
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200
            assert response.headers["ETag"] != etag
            assert response.read() != first
        assert server.not_modified == 1


async def test_the_microblog_shows_posts_as_their_time_comes() -> None:
    world = AccountWorld.generate(["Maria Keller"], seed=3, fans=3, others=3, days=10)
    account = max(world.statuses, key=lambda a: len(world.statuses[a]))
    times = sorted(s.created_at for s in world.statuses[account])
    middle = times[len(times) // 2]
    clock = SimulatedClock(middle)
    server = AccountServer(world, rate_limit=10_000, clock=clock.now)
    async with server, AccountsClient(server.base_url) as client:
        before = await client.statuses(account, max_posts=500)
        await clock.sleep_until(times[-1])
        after = await client.statuses(account, max_posts=500)
    assert all(e.post.created_at <= middle for e in before)
    assert len(before) == sum(t <= middle for t in times)
    assert len(after) == len(times) > len(before)
