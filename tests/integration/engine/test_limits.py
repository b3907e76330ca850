"""Item 5 of issue 26: values the crawl cannot work with are refused at start (exit 2, one
clear line) instead of livelocking or doing nothing in silence."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from tests.integration.engine.servers import serve, working_site
from topicrawl.core.config import CrawlSettings
from topicrawl.engine import run_crawl


def _crawl(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "400"}
    return subprocess.run(
        [sys.executable, "-m", "topicrawl.cli", "crawl", "--quiet", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,  # a hang guard
        check=False,
    )


def test_a_concurrency_the_crawl_cannot_use_is_refused(tmp_path: Path) -> None:
    done = _crawl(
        "--seed", "http://127.0.0.1:9/", "--concurrency", "100000", "--db", str(tmp_path / "c.db")
    )
    assert done.returncode == 2, done.stderr
    assert "concurrency 100000 is more than fetch.connections 100" in done.stderr
    assert not (tmp_path / "c.db").exists()  # refused before anything was made


def test_a_seed_over_the_url_length_limit_is_refused(tmp_path: Path) -> None:
    seed = "http://127.0.0.1:9/" + "x" * 10_000
    done = _crawl("--seed", seed, "--db", str(tmp_path / "s.db"))
    assert done.returncode == 2, done.stderr
    assert "10019 characters long, more than fetch.max_url_length 2048" in done.stderr


async def test_concurrency_up_to_the_connection_pool_crawls(tmp_path: Path) -> None:
    async with serve(working_site()) as base:
        settings = CrawlSettings(
            seeds=(f"{base}/page/0",),
            concurrency=4,
            parse_workers=0,
            politeness={"delay": 0.0},
            fetch={"connections": 4, "timeout": 5.0},
            storage={"url": str(tmp_path / "ok.db"), "flush_interval": 0.2},
        )
        async with asyncio.timeout(60):  # a hang guard
            report = await run_crawl(settings)
    assert report.stats.pages == 10
