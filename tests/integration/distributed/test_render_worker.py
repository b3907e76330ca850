"""Distributed workers render script shells too (``topicrawl worker --render auto``): one
worker, two at once, and a worker stopped mid-render (its browser must not outlive it)."""

from __future__ import annotations

import asyncio
import re
import signal
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import parse_qs

import psutil
import pytest

from tests.integration.distributed.harness import PATIENCE, Cluster, expected_urls
from tests.web.browser import require_browser
from topicrawl.demoweb import DemoWeb, DemoWebServer
from topicrawl.demoweb.spa import DATA_PATH
from topicrawl.distributed import NodeRegistry
from topicrawl.distributed.partition import rendezvous_score
from topicrawl.parse.urls import host_of

# The worker's closing line of its render stage (see cli.progress.render_line).
# The render cap of the workers: the default 15 s failed 9 of 40 renders of two workers at
# a load of 45 (two other browsers rendering beside them); no test here is about the cap.
_SLOW_MACHINE = {"TOPICRAWL_BROWSER__PAGE_TIMEOUT": "120"}
_RENDERED = re.compile(r"rendered in Chromium: (\d+) pages \((\d+) did not need it, (\d+) failed\)")


@pytest.fixture(scope="module")
def server() -> Iterator[DemoWebServer]:
    """An ordinary host and two single-page-app hosts (one for each of two workers)."""
    web = DemoWeb.generate(seed=5, hosts=3, pages_per_host=8)
    apps = [web.hosts[1].address, web.hosts[2].address]
    with DemoWebServer(web, spa_hosts=apps).run_in_thread() as demo:
        yield demo


@pytest.fixture
async def cluster(
    server: DemoWebServer, redis_url: str, postgres_url: str, tmp_path: Path
) -> AsyncIterator[Cluster]:
    made = Cluster(
        server=server,
        redis_url=redis_url,
        postgres_url=postgres_url,
        tmp=tmp_path,
        namespace=f"render-{uuid.uuid4().hex[:12]}",
        schema=f"render_{uuid.uuid4().hex[:12]}",
        # No test here kills a worker. With the harness's 1.5 s a rendering worker at a load
        # of 38 missed its heartbeat, was declared dead, and its leased pages were rendered
        # again by the other (at least once, as designed), which this module counts.
        timeout=15.0,
    )
    yield made
    await made.cleanup()


def _app_hosts(server: DemoWebServer) -> list[str]:
    return sorted(server.spa_hosts)


def _on(url: str, address: str) -> bool:
    return f"//{address}:" in url


def _rendered_by(cluster: Cluster, name: str) -> int:
    found = _RENDERED.search(cluster.log(name))
    assert found, f"{name} printed no render line: {cluster.log(name)[-3000:]}"
    assert found.group(3) == "0", f"{name} failed renders: {found.group(0)}"
    return int(found.group(1))


def _renders_by_page(server: DemoWebServer) -> Counter[tuple[str, str]]:
    """Per (app host, page path): the page-data requests its script made, i.e. its renders."""
    renders: Counter[tuple[str, str]] = Counter()
    for record in server.access_log():
        path, _, query = record.path.partition("?")
        if path == DATA_PATH:
            renders[record.host, parse_qs(query).get("path", [""])[0]] += 1
    return renders


RENDEZVOUS = ("--assignment", "rendezvous")


def _owners(bases: list[str], rivals: int = 2) -> list[str]:
    """Node ids, one a host, each of which the rendezvous policy gives its host over the other
    ids even at 100x their weight (with plain ids both app hosts go to one node about one time
    in two, and the test would test the hash, not two workers rendering)."""
    keys = [host_of(base) for base in bases]
    for n in range(1_000_000):
        names = [f"r{i}-{n}" for i in range(rivals)]
        if all(
            rendezvous_score(key, name, 1.0) > rendezvous_score(key, other, 100.0)
            for key, name in zip(keys, names, strict=True)
            for other in names
            if other != name
        ):
            return names
    raise AssertionError("no node ids split the hosts")  # pragma: no cover


class _Descendants:
    """Every process a worker started (the Playwright driver, Chromium and its renderers),
    seen while it ran, so that what outlives the worker can be found after it exits."""

    def __init__(self) -> None:
        self.seen: dict[int, tuple[float, str]] = {}  # pid -> create time (a reused pid is
        # another process), name

    def look(self, cluster: Cluster) -> None:
        for proc in cluster.procs.values():
            try:
                children = psutil.Process(proc.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                continue
            for child in children:
                try:
                    self.seen.setdefault(child.pid, (child.create_time(), child.name().lower()))
                except psutil.NoSuchProcess:
                    continue

    def chromium(self) -> int:
        """How many of them were Chromium processes (the check below must have something)."""
        return sum(1 for _, name in self.seen.values() if "chrom" in name)

    def left(self) -> list[str]:
        """Those still alive (zombies aside), described."""
        alive = []
        for pid, (created, _) in self.seen.items():
            try:
                process = psutil.Process(pid)
                if process.create_time() == created and process.status() != psutil.STATUS_ZOMBIE:
                    alive.append(f"{pid} {' '.join(process.cmdline())[:120]}")
            except psutil.NoSuchProcess:
                continue
        return alive


async def _wait_watching(
    cluster: Cluster, watch: _Descendants, timeout: float = PATIENCE * 4
) -> dict[str, int]:
    """Wait for every process, noting their descendants meanwhile; their exit codes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        watch.look(cluster)
        if all(proc.poll() is not None for proc in cluster.procs.values()):
            break
        await asyncio.sleep(0.1)
    return await cluster.wait_all(timeout=0)


async def _gone(watch: _Descendants) -> list[str]:
    """What the workers left running, after a few seconds for the orphans to exit."""
    for _ in range(50):
        if not (left := watch.left()):
            return left
        await asyncio.sleep(0.1)
    return watch.left()


async def _failures(cluster: Cluster) -> list[str]:
    """The crawl's recorded failures (for a failing assertion's message)."""
    connection = await cluster.pg()
    try:
        rows = await connection.fetch(f'SELECT url, kind, message FROM "{cluster.schema}".failures')
    finally:
        await connection.close()
    return [f"{row['url']} {row['kind']}: {row['message'][:200]}" for row in rows]


async def test_a_worker_follows_links_that_exist_only_after_rendering(cluster: Cluster) -> None:
    require_browser()
    web = cluster.server.web
    apps = _app_hosts(cluster.server)
    # What a crawl that does not render can reach on the app hosts: their home pages and the
    # pages the ordinary host links to.
    linked = {
        (link.host, link.target)
        for page in web.pages
        if page.host not in apps
        for link in page.links
        if link.host in apps
    }
    unrendered = len(linked | {(app, "/") for app in apps})
    cluster.start_worker("w1", extra=["--render", "auto"], env=_SLOW_MACHINE, quiet=False)
    watch = _Descendants()
    codes = await _wait_watching(cluster, watch)
    assert codes == {"w1": 0}, cluster.log("w1")
    stored = [url for url, _ in await cluster.stored()]
    on_apps = [url for url in stored if any(_on(url, app) for app in apps)]
    assert len(on_apps) > unrendered + 5, (len(on_apps), unrendered)
    assert _rendered_by(cluster, "w1") == sum(_renders_by_page(cluster.server).values())
    # The crawl ended: its browser went with it.
    assert watch.chromium() > 0
    assert await _gone(watch) == []


async def test_two_workers_render_their_own_app_hosts_each_page_once(cluster: Cluster) -> None:
    require_browser()
    server = cluster.server
    apps = _app_hosts(server)
    names = _owners([server.web.base_url(app) for app in apps])
    server.clear_log()
    await cluster.create_schema()
    registry = await NodeRegistry(
        cluster.redis_url, namespace=cluster.namespace, heartbeat_timeout=cluster.timeout
    ).open()
    try:
        # Hosts placed by rendezvous, whose split _owners computed (the default, the success
        # table, ranks two equal new nodes by expected delay and may give one both hosts).
        cluster.start_coordinator(extra=RENDEZVOUS)
        # No page is stored until both have registered: on a loaded machine the first could
        # otherwise crawl everything while the other starts its browser.
        async with cluster.writes_held():
            for name in names:
                cluster.start_worker(
                    name,
                    extra=["--render", "auto", *RENDEZVOUS],
                    env=_SLOW_MACHINE,
                    quiet=False,
                )
            await cluster.wait_registered(registry, names)
    finally:
        await registry.close()
    watch = _Descendants()
    codes = await _wait_watching(cluster, watch)
    assert codes == dict.fromkeys(["coordinator", *names], 0), [cluster.log(n) for n in names]

    stored = await cluster.stored()
    urls = [url for url, _ in stored]
    assert len(urls) == len(set(urls)), "a URL was stored twice"
    # Every page of the app hosts a complete crawl reaches was stored: the links that exist
    # only in rendered pages were followed, whichever worker rendered the page.
    expected = expected_urls(server)
    for app in apps:
        wanted = {url for url in expected if _on(url, app)}
        got = {server.web.resolve(final) for _, final in stored if _on(final, app)}
        assert got == wanted, (app, sorted(wanted ^ got), await _failures(cluster))
    # Each page was rendered once in all (its script asks for its data once a render), and
    # both workers rendered.
    renders = _renders_by_page(server)
    assert renders, "nothing was rendered"
    assert max(renders.values()) == 1, [page for page, n in renders.items() if n > 1]
    by_worker = {name: _rendered_by(cluster, name) for name in names}
    assert all(by_worker.values()), by_worker
    assert sum(by_worker.values()) == sum(renders.values()), (by_worker, len(renders))
    # The app pages have the title and text their script builds (a shell's title is
    # "Loading..." and it has no text).
    connection = await cluster.pg()
    try:
        rows = await connection.fetch(
            f'SELECT final_url, length(text) AS chars, title FROM "{cluster.schema}".pages'
            " WHERE content_type LIKE 'text/html%'"
        )
    finally:
        await connection.close()
    web = server.web
    app_pages = {
        row["final_url"]: (row["title"], row["chars"])
        for row in rows
        if any(_on(row["final_url"], app) for app in apps)
    }
    assert len(app_pages) == len(renders)
    for url, (title, chars) in app_pages.items():
        page = web.find(url)
        assert page is not None, url
        assert title == f"{page.title} | {web.host(page.host).name}", url
        assert chars > 0, url
    # Both browsers went with their workers.
    assert watch.chromium() > 0
    assert await _gone(watch) == []


async def test_a_worker_stopped_mid_render_leaves_no_browser_behind(cluster: Cluster) -> None:
    require_browser()
    server = cluster.server
    server.clear_log()
    proc = cluster.start_worker("w1", extra=["--render", "auto"], env=_SLOW_MACHINE)
    watch = _Descendants()
    deadline = time.monotonic() + PATIENCE
    while not _renders_by_page(server):  # a page is rendering: the browser is up
        watch.look(cluster)
        assert proc.poll() is None, cluster.log("w1")
        assert time.monotonic() < deadline, "nothing was rendered"
        await asyncio.sleep(0.05)
    watch.look(cluster)
    assert watch.chromium() > 0
    proc.send_signal(signal.SIGTERM)
    codes = await _wait_watching(cluster, watch, timeout=PATIENCE)
    assert codes == {"w1": 128 + signal.SIGTERM}, cluster.log("w1")
    assert await _gone(watch) == []
