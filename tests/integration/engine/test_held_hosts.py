"""Item 3 of issue 26: a host whose robots.txt answers 500, or that refuses connections, no
longer holds the whole crawl for half an hour. The crawl goes on with the other hosts, ends
when only held hosts are left, records their URLs as ``host_held`` failures, says why, and a
resumed crawl tries them again."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web

from tests.integration.engine.servers import broken_robots, refused_port, serve, working_site
from topicrawl.core.config import CrawlSettings
from topicrawl.core.models import ErrorKind
from topicrawl.engine import open_storage, run_crawl


def _settings(seeds: tuple[str, ...], db: Path, **extra: object) -> CrawlSettings:
    options: dict[str, object] = {
        "seeds": seeds,
        "strategy": "bfs",
        "concurrency": 2,
        "parse_workers": 0,
        "politeness": {"delay": 0.0, "robots_error_ttl": 600.0},
        "fetch": {"timeout": 5.0, "backoff_base": 0.01, "backoff_max": 0.1},
        "storage": {"url": str(db), "flush_interval": 0.2},
    }
    options.update(extra)
    return CrawlSettings(**options)  # type: ignore[arg-type]


async def _stored(db: Path) -> tuple[set[str], dict[str, ErrorKind]]:
    async with open_storage(str(db)) as storage:
        pages = {page.url async for page in storage.iter_pages()}
        failures = {f.url: f.kind async for f in storage.iter_failures()}
    return pages, failures


async def test_a_host_with_a_broken_robots_txt_does_not_hold_the_crawl(tmp_path: Path) -> None:
    db = tmp_path / "held.db"
    async with serve(working_site()) as good, serve(broken_robots()) as bad:
        async with asyncio.timeout(60):  # a hang guard: the old code waited 30 minutes
            report = await run_crawl(_settings((f"{good}/page/0", f"{bad}/page/0"), db))
    pages, failures = await _stored(db)
    assert pages == {f"{good}/page/{n}" for n in range(10)}
    assert failures == {f"{bad}/page/0": ErrorKind.HOST_HELD}
    bad_host = bad.removeprefix("http://")
    assert list(report.stats.held) == [bad_host]
    assert report.stats.held[bad_host].reason == "robots.txt answered 500"
    assert report.queued_left == 1  # left for a resumed crawl


async def test_a_resumed_crawl_retries_the_held_hosts_urls(tmp_path: Path) -> None:
    db = tmp_path / "resume.db"
    broken = True

    async def robots(request: web.Request) -> web.Response:
        return web.Response(status=500 if broken else 404)

    routes = {**working_site(), "/robots.txt": robots}
    async with serve(routes) as base:
        settings = _settings((f"{base}/page/0",), db, max_pages=0)
        async with asyncio.timeout(60):
            first = await run_crawl(settings)
            assert first.stats.pages == 0
            assert first.stats.errors == {"host_held": 1}
            broken = False
            second = await run_crawl(settings)
    assert second.stats.pages == 10
    assert second.queued_left == 0


def test_an_unreachable_seed_exits_3_at_once_and_says_why(tmp_path: Path) -> None:
    port = refused_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "400"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "topicrawl.cli",
            "crawl",
            "--seed",
            f"http://127.0.0.1:{port}/",
            "--db",
            str(tmp_path / "unreachable.db"),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,  # a hang guard: the old code took about 30 minutes
        check=False,
    )
    assert done.returncode == 3, done.stderr
    assert f"127.0.0.1:{port} held (robots.txt could not be fetched" in done.stderr
    assert "host_held" in done.stdout  # the summary counts the URL left unfetched
    assert "no page could be fetched: 127.0.0.1" in done.stderr


async def test_a_hold_within_the_patience_is_waited_out_a_longer_one_ends_the_crawl(
    tmp_path: Path,
) -> None:
    # robots.txt answers 500 once, then 404: the host is held for robots_error_ttl (2 s).
    # Patience 10 s waits that out and crawls the site; patience 0 leaves the host held.
    crawled: dict[float, tuple[int, dict[str, int]]] = {}
    for patience in (10.0, 0.0):
        db = tmp_path / f"patience-{patience:g}.db"
        async with serve({**working_site(), "/robots.txt": _fails_once()}) as base:
            settings = _settings(
                (f"{base}/page/0",),
                db,
                politeness={"robots_error_ttl": 2.0, "hold_patience": patience},
            )
            async with asyncio.timeout(60):
                report = await run_crawl(settings)
        crawled[patience] = (report.stats.pages, report.stats.errors)
    assert crawled == {10.0: (10, {}), 0.0: (0, {"host_held": 1})}


def _fails_once() -> Callable[[web.Request], Awaitable[web.Response]]:
    """A robots.txt handler answering 500 the first time, 404 after."""
    answers = [500]

    async def robots(request: web.Request) -> web.Response:
        return web.Response(status=answers.pop() if answers else 404)

    return robots


def test_the_hold_patience_is_a_bounded_setting(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "400"}
    base = [sys.executable, "-m", "topicrawl.cli", "crawl", "--seed", "http://127.0.0.1:9/"]
    base += ["--db", str(tmp_path / "bad.db"), "--quiet"]
    for extra, environment in (
        (["--hold-patience", "-1"], {}),
        (["--hold-patience", "90000"], {}),
        ([], {"TOPICRAWL_POLITENESS__HOLD_PATIENCE": "nan"}),
    ):
        done = subprocess.run(
            [*base, *extra],
            capture_output=True,
            text=True,
            env={**env, **environment},
            timeout=60,
            check=False,
        )
        assert done.returncode == 2, (extra, environment, done.stderr)
        assert "hold_patience" in done.stderr.replace("HOLD_PATIENCE", "hold_patience")
    assert not (tmp_path / "bad.db").exists()  # refused before anything was opened
