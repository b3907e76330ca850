"""Fixtures of the dashboard tests: one database crawled from the demo web and a hostile site."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.web.support import HostileSite, LiveDashboard, crawl_demo, hostile_site, in_thread
from tests.web.support import live_dashboard as _live_dashboard
from topicrawl.cli.app import app as cli_app
from topicrawl.demoweb import DemoWeb, DemoWebServer

TOKEN = "a-test-token-long-enough-0123456789"


@pytest.fixture(scope="session")
def demo_server() -> Iterator[DemoWebServer]:
    web = DemoWeb.generate(seed=11, hosts=3, pages_per_host=20)
    server = DemoWebServer(web, slow_delay=0.3)
    with server.run_in_thread():
        yield server


@pytest.fixture(scope="session")
def hostile() -> Iterator[HostileSite]:
    with hostile_site() as site:
        yield site


@pytest.fixture(scope="session")
def crawled_db(
    tmp_path_factory: pytest.TempPathFactory, demo_server: DemoWebServer, hostile: HostileSite
) -> Path:
    """A database of a real focused crawl of the demo web and the hostile site."""
    db = tmp_path_factory.mktemp("dashboard") / "crawl.db"
    crawl_demo(demo_server, db, hostile)
    return db


@pytest.fixture(scope="session")
def topics_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database of a real topic-tracking run over the demo microblog (4 periods)."""
    db = tmp_path_factory.mktemp("topics") / "topics.db"
    argv = ["topics", "track", "--demo", "--db", str(db), "--periods", "4", "--period-seconds", "0"]
    result = in_thread(lambda: CliRunner().invoke(cli_app, argv, catch_exceptions=False))
    assert result.exit_code == 0, result.output
    return db


@pytest.fixture(scope="session")
def dashboard(crawled_db: Path) -> Iterator[LiveDashboard]:
    with _live_dashboard(crawled_db) as live:
        yield live


@pytest.fixture(scope="session")
def token_dashboard(crawled_db: Path) -> Iterator[LiveDashboard]:
    with _live_dashboard(crawled_db, token=TOKEN) as live:
        yield live
