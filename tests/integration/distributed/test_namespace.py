"""A namespace is one crawl (issue 27, items 3, 4, 9, 10): its settings, seeds and scope live
in Redis, every worker agrees with them, its page limit holds across workers, and the
``crawl-ns`` commands create, feed, show, list, reset and drop it. Real worker processes,
real Redis and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from redis.asyncio import Redis

from tests.integration.distributed.harness import (
    PATIENCE,
    Cluster,
    crawl_settings,
    expected_urls,
    serve_demo_web,
)
from topicrawl.demoweb import DemoWebServer
from topicrawl.demoweb.truth import CrawlRules, expected_crawl
from topicrawl.distributed import NodeRegistry


@pytest.fixture(scope="module")
def server() -> Iterator[DemoWebServer]:
    yield from serve_demo_web(seed=12, hosts=10, pages_per_host=6)


async def registry_of(cluster: Cluster) -> NodeRegistry:
    registry = NodeRegistry(cluster.redis_url, namespace=cluster.namespace, heartbeat_timeout=60)
    return await registry.open()


async def keys_of(cluster: Cluster) -> set[str]:
    client = Redis.from_url(cluster.redis_url)
    try:
        return {key.decode() async for key in client.scan_iter(match=cluster.prefix + "*")}
    finally:
        await client.aclose()


async def failures(cluster: Cluster) -> list[tuple[str, str]]:
    connection = await cluster.pg()
    try:
        rows = await connection.fetch(f'SELECT url, kind FROM "{cluster.schema}".failures')
    finally:
        await connection.close()
    return [(row["url"], row["kind"]) for row in rows]


def halves(server: DemoWebServer) -> tuple[list[str], list[str]]:
    seeds = sorted(server.web.bases().values())
    return seeds[:5], seeds[5:]


def near_each_seed(server: DemoWebServer, seeds: list[str]) -> set[str]:
    """The pages a crawl reaches whenever each seed's site joins it: each seed and the pages
    of its host it links to (depth 1).

    A site whose seed comes later than another site's crawl can be reached first through a
    link from that site, deeper than from its own seed (each URL keeps the depth it was first
    queued at), and pages near ``max_depth`` then left out: what is sure is its seed, and what
    the seed links to. (Before, a worker refused another worker's seeds as out of scope.)"""
    found: set[str] = set()
    for seed in seeds:
        host = urlsplit(seed).hostname or ""
        settings = crawl_settings(
            server, "unused.db", seeds=(seed,), scope={"allowed_domains": (host,), "max_depth": 1}
        )
        rules = CrawlRules.from_settings(settings, hosts=server.web.bases())
        found |= set(expected_crawl(server.web, settings.seeds, rules))
    return found


def said(process_output: str) -> str:
    """Output with its line wrapping undone (rich wraps at the terminal's width)."""
    return " ".join(process_output.split())


async def test_two_workers_with_different_seeds_crawl_both_sites(cluster: Cluster) -> None:
    # Each worker is given the seeds of five hosts and no allowed domains: before, each
    # worker's scope was its own seeds' domains, and a host of the other's that the hashing
    # gave it was refused as out of scope (a failure row, the site lost). Now the scope is
    # the namespace's: every seed's domain, whoever gave it.
    first, second = halves(cluster.server)
    await cluster.create_schema()
    registry = await registry_of(cluster)
    try:
        async with cluster.writes_held():
            cluster.start_worker("w1", seeds=first, allow_domains=False)
            cluster.start_worker("w2", seeds=second, allow_domains=False)
            await cluster.wait_registered(registry, ("w1", "w2"))
    finally:
        await registry.close()
    codes = await cluster.wait_all(timeout=PATIENCE)
    assert codes == {"w1": 0, "w2": 0}, cluster.log("w1") + cluster.log("w2")
    web = cluster.server.web
    stored = {web.resolve(final) for _, final in await cluster.stored()}
    # Both sites: every seed and what it links to, and nothing a crawl of both could not reach
    # (one started alone may crawl some pages of the other site's through links before the
    # other joins; see near_each_seed).
    assert near_each_seed(cluster.server, first + second) <= stored
    assert stored <= expected_urls(cluster.server)
    assert not [f for f in await failures(cluster) if f[1] == "out_of_scope"]
    state = json.loads((await cluster.crawl_ns("show", "--json")).stdout)
    assert sorted(state["seeds"]) == sorted(first + second)


async def test_a_worker_whose_crawl_settings_differ_is_refused_with_the_difference(
    cluster: Cluster,
) -> None:
    await cluster.create_schema()
    registry = await registry_of(cluster)
    try:
        async with cluster.writes_held():
            cluster.start_worker("w1")
            await cluster.wait_registered(registry, ("w1",))
            before = json.loads((await cluster.crawl_ns("show", "--json")).stdout)
            # Another delay and strategy, and a seed of its own: refused, none of it stored.
            other = "http://127.0.0.1:9/elsewhere"
            extra = ["--delay", "0.7", "--strategy", "best-first", "--seed", other]
            cluster.start_worker("bad", extra=extra, allow_domains=False)
            assert cluster.procs["bad"].wait(PATIENCE) == 2, cluster.log("bad")
            after = json.loads((await cluster.crawl_ns("show", "--json")).stdout)
            assert (after["settings"], after["seeds"]) == (before["settings"], before["seeds"])
            assert "bad" not in after["nodes"]
            # Only its own settings (concurrency, timeouts) and no seeds: it joins and takes
            # the namespace's settings and seeds from Redis.
            argv = [sys.executable, "-m", "topicrawl.cli", "worker", "--quiet"]
            argv += ["--node-id", "w2", "--redis", cluster.redis_url]
            argv += ["--namespace", cluster.namespace, "--db", cluster.db_url]
            argv += ["--concurrency", "2", "--heartbeat-interval", "0.3"]
            argv += ["--heartbeat-timeout", "1.5", "--lock-ttl", "1.5"]
            cluster._start("w2", argv)
            await cluster.wait_registered(registry, ("w2",))
    finally:
        await registry.close()
    refusal = said(cluster.log("bad"))
    assert "politeness.delay: given 0.7, the namespace has 0.0" in refusal
    assert 'strategy: given "best-first", the namespace has "bfs"' in refusal
    del cluster.procs["bad"]
    codes = await cluster.wait_all(timeout=PATIENCE)
    assert codes == {"w1": 0, "w2": 0}, cluster.log("w2")
    web = cluster.server.web
    assert {web.resolve(f) for _, f in await cluster.stored()} == expected_urls(cluster.server)


async def test_three_workers_store_exactly_the_page_limit_and_say_how_to_raise_it(
    cluster: Cluster,
) -> None:
    # Each page is reserved in Redis before it is stored: three workers together store the
    # limit, not a page more (before: each re-read the stored count at its checkpoints and
    # the crawl overshot by what was in flight).
    limit = 25
    await cluster.create_schema()
    registry = await registry_of(cluster)
    try:
        async with cluster.writes_held():
            for name in ("w1", "w2", "w3"):
                cluster.start_worker(name, max_pages=limit, quiet=False)
            await cluster.wait_registered(registry, ("w1", "w2", "w3"))
    finally:
        await registry.close()
    codes = await cluster.wait_all(timeout=PATIENCE)
    assert codes == {"w1": 0, "w2": 0, "w3": 0}, cluster.log("w1")
    stored = await cluster.stored()
    assert len(stored) == limit
    assert len({url for url, _ in stored}) == limit
    logs = [said(cluster.log(name)) for name in ("w1", "w2", "w3")]
    told = f"the crawl reached its page limit: max_pages {limit} pages stored by all workers"
    assert any(told in log for log in logs), logs
    assert any(f"crawl-ns set --namespace {cluster.namespace} --max-pages N" in lg for lg in logs)
    # Raised, the crawl goes on where it stopped, to the end.
    raised = await cluster.crawl_ns("set", "--max-pages", "0")
    assert raised.returncode == 0, raised.stderr
    cluster.procs.clear()
    cluster.start_worker("w4")
    assert (await cluster.wait_all(timeout=PATIENCE)) == {"w4": 0}, cluster.log("w4")
    web = cluster.server.web
    assert {web.resolve(f) for _, f in await cluster.stored()} == expected_urls(cluster.server)


async def test_crawl_ns_creates_feeds_shows_resets_and_drops_a_crawl(cluster: Cluster) -> None:
    first, second = halves(cluster.server)
    created = await cluster.crawl_ns(
        "create", *[f"--seed={seed}" for seed in first], "--delay", "0.05", "--max-depth", "6"
    )
    assert created.returncode == 0, created.stderr
    again = await cluster.crawl_ns("create", f"--seed={first[0]}")
    assert again.returncode == 2
    assert "exists already" in said(again.stderr)
    shown = json.loads((await cluster.crawl_ns("show", "--json")).stdout)
    assert shown["settings"]["politeness"]["delay"] == 0.05
    assert (shown["done"], sorted(shown["seeds"]), shown["stored"]) == (False, first, 0)
    listed = await cluster.cli("crawl-ns", "list", "--redis", cluster.redis_url)
    assert cluster.namespace in listed.stdout.split()

    await cluster.create_schema()
    registry = await registry_of(cluster)
    try:
        async with cluster.writes_held():
            # Workers with no seeds and no crawl settings: all from the namespace.
            for name in ("w1", "w2"):
                argv = [sys.executable, "-m", "topicrawl.cli", "worker", "--quiet"]
                argv += ["--node-id", name, "--redis", cluster.redis_url]
                argv += ["--namespace", cluster.namespace, "--db", cluster.db_url]
                argv += ["--heartbeat-interval", "0.3", "--heartbeat-timeout", "1.5"]
                argv += ["--lock-ttl", "1.5", "--concurrency", "4"]
                cluster._start(name, argv)
            await cluster.wait_registered(registry, ("w1", "w2"))
            # The crawl cannot end while writes are held: these seeds come while it runs.
            added = await cluster.crawl_ns("add-seeds", *[f"--seed={seed}" for seed in second])
            assert added.returncode == 0, added.stderr
            # Queued by this command, or by a worker that read the widened scope first.
            assert "5 new seed(s)" in said(added.stderr)
            refused = await cluster.crawl_ns("drop")
            assert refused.returncode == 2
            assert "live workers" in said(refused.stderr)
    finally:
        await registry.close()
    codes = await cluster.wait_all(timeout=PATIENCE)
    assert codes == {"w1": 0, "w2": 0}, cluster.log("w1")
    web = cluster.server.web
    stored = await cluster.stored()
    pages = {web.resolve(f) for _, f in stored}
    assert near_each_seed(cluster.server, first + second) <= pages
    assert pages <= expected_urls(cluster.server)
    assert not [f for f in await failures(cluster) if f[1] == "out_of_scope"]
    shown = json.loads((await cluster.crawl_ns("show", "--json")).stdout)
    assert (shown["done"], shown["stored"], shown["queued"]) == (True, len(stored), 0)
    assert sorted(shown["domains"]) == sorted(web.bases())

    reset = await cluster.crawl_ns("reset")
    assert reset.returncode == 0, reset.stderr
    kept = {key.removeprefix(cluster.prefix) for key in await keys_of(cluster)}
    assert kept == {"settings", "seeds", "domains", "budget"}
    shown = json.loads((await cluster.crawl_ns("show", "--json")).stdout)
    assert (shown["stored"], shown["nodes"], len(shown["seeds"])) == (0, {}, 10)
    dropped = await cluster.crawl_ns("drop")
    assert dropped.returncode == 0, dropped.stderr
    assert await keys_of(cluster) == set()
    gone = await cluster.crawl_ns("show")
    assert gone.returncode == 3
    assert "does not exist" in said(gone.stderr)


async def test_a_failed_start_leaves_no_key_behind(cluster: Cluster) -> None:
    # PostgreSQL refuses (nothing listens on port 9): the worker created the namespace and its
    # frontier, and takes them away again.
    cluster.start_worker("w1", pg_port=9)
    assert cluster.procs["w1"].wait(PATIENCE) == 4, cluster.log("w1")
    assert "database error" in said(cluster.log("w1"))
    assert await keys_of(cluster) == set()


async def test_commands_on_a_namespace_that_does_not_exist_say_so(cluster: Cluster) -> None:
    where = ["--redis", cluster.redis_url, "--namespace", cluster.namespace]
    nodes = await cluster.cli("nodes", *where, timeout=120)
    assert nodes.returncode == 3
    assert f"namespace {cluster.namespace!r} does not exist" in said(nodes.stderr)
    coordinator = await cluster.cli("coordinator", *where, "--exit-when-done", timeout=120)
    assert coordinator.returncode == 3
    assert "does not exist" in said(coordinator.stderr)
    seedless = await cluster.cli("worker", *where, "--db", cluster.db_url, timeout=120)
    assert seedless.returncode == 2
    assert "no seeds were given" in said(seedless.stderr)
    assert await keys_of(cluster) == set()


async def test_node_configurations_are_checked_before_they_are_stored(cluster: Cluster) -> None:
    assert (
        await cluster.crawl_ns("create", f"--seed={halves(cluster.server)[0][0]}")
    ).returncode == 0
    where = ["--redis", cluster.redis_url, "--namespace", cluster.namespace]
    for config, reason in (
        ('*={"concurrency": -1}', "concurrency"),
        ('w1={"fetch": {"timeout": "inf"}}', "timeout"),
        ('w1={"strategy": "focused"}', "is the namespace's to set"),
        ('w1={"politeness": {"delay": 3}}', "politeness.delay"),
    ):
        done = await cluster.cli("nodes", *where, "--set-config", config)
        assert done.returncode == 2, (config, done.stdout, done.stderr)
        assert reason in said(done.stderr), (config, done.stderr)
    client = Redis.from_url(cluster.redis_url)
    try:
        assert not await client.exists(cluster.prefix + "nodecfg")
    finally:
        await client.aclose()
    fine = await cluster.cli("nodes", *where, "--set-config", 'w1={"concurrency": 2}')
    assert fine.returncode == 0, fine.stderr


async def test_ctrl_c_stops_a_worker_without_a_traceback_and_exit_130(cluster: Cluster) -> None:
    await cluster.create_schema()
    registry = await registry_of(cluster)
    try:
        async with cluster.writes_held():
            # Parse workers are child processes: a terminal's Ctrl-C reaches them too.
            cluster.start_worker("w1", env={"TOPICRAWL_PARSE_WORKERS": "1"})
            await cluster.wait_registered(registry, ("w1",))
            await cluster.wait_for_a_held_write()
            os.killpg(cluster.procs["w1"].pid, signal.SIGINT)
    finally:
        await registry.close()
    assert cluster.procs["w1"].wait(PATIENCE) == 130, cluster.log("w1")
    log = cluster.log("w1")
    assert "Traceback" not in log, log
    assert "interrupted by SIGINT" in log


async def test_a_worker_prints_progress_lines_as_it_crawls(cluster: Cluster) -> None:
    cluster.delay = 0.3  # a crawl of several seconds: several lines
    cluster.start_worker("w1", quiet=False, extra=["--progress-every", "0.5"])
    assert (await cluster.wait_all(timeout=PATIENCE)) == {"w1": 0}, cluster.log("w1")
    line = re.compile(
        r"worker w1: (\d+) pages, [\d.]+ pages/s, \d+ errors; crawl: (\d+) pages, \d+ queued,"
        r" \d+ in flight"
    )
    found = [tuple(map(int, m.groups())) for m in line.finditer(said(cluster.log("w1")))]
    assert len(found) >= 2, cluster.log("w1")
    assert [pages for pages, _ in found] == sorted(pages for pages, _ in found)
    assert found[-1][0] > 0


_KILL_LIMIT = 30  # of the 60 pages of the demo web above


async def _reserved(client: Redis, cluster: Cluster) -> int:
    return int(await client.hget(cluster.prefix + "budget", "reserved") or 0)


async def test_kill_9_between_reservation_and_storage_leaves_no_page_short(
    cluster: Cluster,
) -> None:
    # A page's reservation belongs to its lease and comes back with it (issue 27): a worker
    # killed with pages reserved but not stored leaves the crawl no page short of its limit.
    await cluster.create_schema()
    client = Redis.from_url(cluster.redis_url)
    try:
        async with cluster.writes_held():
            # w1 fetches, reserves and buffers pages, but cannot store one.
            w1 = cluster.start_worker("w1", max_pages=_KILL_LIMIT)
            deadline = time.monotonic() + PATIENCE
            while await _reserved(client, cluster) < 3:
                assert w1.poll() is None, cluster.log("w1")
                assert time.monotonic() < deadline, "w1 reserved no pages"
                await asyncio.sleep(0.05)
            await cluster.wait_for_a_held_write()
            w1.kill()  # SIGKILL: its buffered pages are lost, its reservations were made
            w1.wait(30)
            lost = await _reserved(client, cluster)
        assert await cluster.count() == 0
        assert lost >= 3
        # w2 finds w1 dead (heartbeat timeout 1.5 s): w1's leases, and with them its
        # reservations, go back; the crawl still stores exactly its limit.
        cluster.start_worker("w2", max_pages=_KILL_LIMIT)
        codes = await cluster.wait_all(timeout=PATIENCE)
        assert codes["w2"] == 0, cluster.log("w2")
        stored = await cluster.stored()
        assert len({url for url, _ in stored}) == len(stored)
        assert len(stored) == _KILL_LIMIT, cluster.log("w2")
        assert await _reserved(client, cluster) == _KILL_LIMIT
        assert not await client.hlen(cluster.prefix + "budgeted")
    finally:
        await client.aclose()
