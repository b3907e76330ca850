"""``topicrawl seeds find`` and ``crawl --seed-search`` against the demo web's SearXNG
endpoint."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from topicrawl.cli.app import app
from topicrawl.demoweb import DemoWeb, DemoWebServer
from topicrawl.demoweb.metasearch import SearchServer


@pytest.fixture(scope="module")
def search() -> Iterator[tuple[DemoWebServer, SearchServer]]:
    web = DemoWeb.generate(seed=3, hosts=3, pages_per_host=15)
    with DemoWebServer(web).run_in_thread() as demo, SearchServer(demo.web).run_in_thread() as s:
        yield demo, s


def test_seeds_find_prints_ranked_seeds_with_their_engines(
    search: tuple[DemoWebServer, SearchServer],
) -> None:
    demo, server = search
    result = CliRunner().invoke(
        app,
        [
            "seeds",
            "find",
            "--topic",
            "football",
            "--searx",
            server.base_url,
            "--json",
            "--limit",
            "5",
        ],
    )
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(lines) == 5
    assert [line["score"] for line in lines] == sorted(
        (line["score"] for line in lines), reverse=True
    )
    assert all(line["engines"] for line in lines)
    assert demo.web.true_topic(lines[0]["url"]) == "football"


def test_seeds_find_without_searx_or_results_exits_with_a_reason(
    search: tuple[DemoWebServer, SearchServer],
) -> None:
    _, server = search
    missing = CliRunner().invoke(app, ["seeds", "find", "--topic", "football"])
    assert missing.exit_code == 2
    assert "--searx" in missing.output
    nothing = CliRunner().invoke(
        app, ["seeds", "find", "--topic", "zzzqqq", "--searx", server.base_url]
    )
    assert nothing.exit_code == 3
    assert "no results" in nothing.output


def test_crawl_from_a_seed_search(
    search: tuple[DemoWebServer, SearchServer], tmp_path: Path
) -> None:
    demo, server = search
    db = tmp_path / "c.db"
    result = CliRunner().invoke(
        app,
        [
            "crawl", "--seed-search", "football", "--searx", server.base_url, "--strategy",
            "focused", "--max-pages", "15", "--db", str(db), "--quiet", "--concurrency", "2",
            *(arg for h in demo.web.hosts for arg in ("--allow-domain", h.address)),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "seeds from meta-search for 'football'" in result.output
    assert "pages stored" in result.output
