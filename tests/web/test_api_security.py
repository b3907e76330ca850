"""The dashboard over HTTP without a browser: headers, token, Host, the API, /metrics, serve."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from tests.web.conftest import TOKEN
from tests.web.support import MARKER, SEARCH_WORD, HostileSite, LiveDashboard
from topicrawl.cli.app import app as cli_app
from topicrawl.web.security import CSP

# Every kind of route: pages, API, metrics, static and vendored files, raw, errors.
ROUTES = [
    "/",
    "/topics",
    "/pages",
    "/pages?q=galaxy",
    "/pages/1",
    "/graph",
    "/nodes",
    "/api/runs",
    "/api/live",
    "/api/pages",
    "/api/pages/1",
    "/api/topics",
    "/api/graph",
    "/api/nodes",
    "/metrics",
    "/static/common.js",
    "/static/app.css",
    "/vendor/plotly.min.js",
    "/vendor/vis-network.min.js",
    "/raw/1",
    "/api/pages/999999",  # 404
    "/api/pages?status=abc",  # 422
    "/api/pages?after=not-a-cursor",  # 400
    "/no/such/route",
]


class Answer:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_opener = urllib.request.build_opener(_NoRedirect)


def get(url: str, headers: dict[str, str] | None = None) -> Answer:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with _opener.open(request, timeout=30) as response:
            return Answer(
                response.status,
                {k.lower(): v for k, v in response.headers.items()},
                response.read(),
            )
    except urllib.error.HTTPError as error:
        return Answer(error.code, {k.lower(): v for k, v in error.headers.items()}, error.read())


@pytest.mark.parametrize("route", ROUTES)
def test_every_response_carries_the_security_headers(dashboard: LiveDashboard, route: str) -> None:
    answer = get(dashboard.base + route)
    assert answer.status < 500, answer.body[:300]
    csp = answer.headers["content-security-policy"]
    if route.startswith("/raw/"):
        assert csp.startswith("sandbox;")
        assert "default-src 'none'" in csp
    else:
        assert csp == CSP
        for directive in (
            "script-src 'self'",
            "style-src 'self'",
            "frame-ancestors 'none'",
            "object-src 'none'",
        ):
            assert directive in csp
        assert "unsafe-inline" not in csp
        assert "unsafe-eval" not in csp
    assert answer.headers["x-content-type-options"] == "nosniff"


def test_no_page_carries_inline_script_or_style(dashboard: LiveDashboard) -> None:
    for route in ("/", "/topics", "/pages", "/pages/1", "/graph", "/nodes"):
        html = get(dashboard.base + route).body.decode()
        assert "<script>" not in html
        assert "<style" not in html
        assert " style=" not in html
        assert html.count("<script src=") >= 2
        assert "http://" not in html.replace("http://127.0.0.1", "")  # no CDN


def test_a_foreign_host_header_is_refused_without_a_token(dashboard: LiveDashboard) -> None:
    # A page elsewhere that rebinds its name to 127.0.0.1 still sends its own Host.
    answer = get(dashboard.base + "/api/runs", {"Host": "attacker.example"})
    assert answer.status == 400
    assert "content-security-policy" in answer.headers


@pytest.mark.parametrize(
    "route", ["/", "/api/runs", "/api/pages/1", "/metrics", "/raw/1", "/static/common.js"]
)
def test_the_token_is_asked_on_every_route(token_dashboard: LiveDashboard, route: str) -> None:
    base = token_dashboard.base
    refused = get(base + route)
    assert refused.status == 401
    assert b"runs" not in refused.body
    assert b"topicrawl_stored" not in refused.body
    assert refused.headers["content-security-policy"] == CSP
    assert get(base + route, {"Authorization": "Bearer wrong-token-wrong-token"}).status == 401
    assert get(base + route, {"Authorization": f"Bearer {TOKEN}"}).status == 200
    assert get(base + route, {"Cookie": f"topicrawl_token={TOKEN}"}).status == 200
    assert get(base + route, {"Cookie": "topicrawl_token=nope"}).status == 401


def test_the_token_in_the_address_is_traded_for_a_cookie(token_dashboard: LiveDashboard) -> None:
    answer = get(token_dashboard.base + f"/pages?q=galaxy&token={TOKEN}")
    assert answer.status == 303
    assert answer.headers["location"] == "/pages?q=galaxy"
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith(f"topicrawl_token={TOKEN};")
    assert "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie
    assert get(token_dashboard.base + "/pages?token=wrong").status == 401
    # Never a redirect to another site.
    elsewhere = get(token_dashboard.base + f"//evil.example/x?token={TOKEN}")
    assert elsewhere.headers["location"] == "/evil.example/x"


def test_metrics_parse_as_prometheus_text(dashboard: LiveDashboard, crawled_db: Path) -> None:
    answer = get(dashboard.base + "/metrics")
    assert answer.headers["content-type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(answer.body.decode())}
    assert families, "no metric families"
    for name in families:
        assert name.startswith("topicrawl_")
    # Whatever the metric is named, the pages the crawl stored are counted among them.
    run = get(dashboard.base + "/api/runs").json()["runs"][0]
    values = [s.value for f in families.values() for s in f.samples if "page" in s.name]
    assert run["stats"]["pages"] in values


def test_runs_live_and_search_answer_from_the_crawls(dashboard: LiveDashboard) -> None:
    (demo,) = get(dashboard.base + "/api/runs").json()["runs"]
    assert demo["config"]["strategy"] == "focused"
    assert demo["stats"]["pages"] > 10
    live = get(dashboard.base + f"/api/live?run={demo['id']}").json()
    assert live["totals"]["pages"] == demo["stats"]["pages"]
    assert live["running"] is False
    assert sum(live["series"]["pages_per_second"]) * live["series"]["width"] == pytest.approx(
        demo["stats"]["pages"]
    )
    found = get(dashboard.base + f"/api/pages?q={SEARCH_WORD}&limit=200").json()["pages"]
    assert {p["url"].rsplit("/", 1)[1] for p in found} >= {
        "script.html",
        "handlers.html",
        "jslink.html",
        "refresh.html",
        "svg.html",
        "title.html",
        "",
    }
    assert all(p["status"] == 200 for p in found)
    assert not get(dashboard.base + "/api/pages?q=zzzznotaword").json()["pages"]
    # Filters narrow: by host, by status, by run.
    # A host is what the pages list shows for it: the URL's host and port.
    (hostile_host,) = {p["host"] for p in found}
    assert hostile_host.startswith("127.0.0.1:")
    by_host = get(dashboard.base + f"/api/pages?host={hostile_host}&limit=200").json()["pages"]
    assert {p["id"] for p in by_host} == {p["id"] for p in found}
    assert not get(dashboard.base + "/api/pages?status=404").json()["pages"]
    assert not get(dashboard.base + f"/api/pages?run={demo['id'] + 1}").json()["pages"]
    # The threshold from the crawl's own scores (which pages a focused crawl of the demo web
    # reaches first, and so how high they score, varies from run to run): the filter keeps
    # exactly the pages at or above it.
    everything = get(dashboard.base + "/api/pages?limit=200").json()["pages"]
    scores = sorted({p["relevance"] for p in everything if p["relevance"] is not None})
    assert len(scores) >= 2
    bar = scores[len(scores) // 2]
    relevant = get(dashboard.base + f"/api/pages?min_relevance={bar}&limit=200").json()["pages"]
    assert relevant
    assert {p["id"] for p in relevant} == {
        p["id"] for p in everything if p["relevance"] is not None and p["relevance"] >= bar
    }


def test_keyset_next_links_walk_every_page_once(dashboard: LiveDashboard) -> None:
    everything = get(dashboard.base + "/api/pages?limit=200").json()
    assert everything["next"] is None
    seen: list[int] = []
    url = dashboard.base + "/api/pages?limit=7"
    while True:
        answer = get(url).json()
        seen.extend(p["id"] for p in answer["pages"])
        if answer["next"] is None:
            break
        url = dashboard.base + f"/api/pages?limit=7&after={answer['next']}"
    assert seen == [p["id"] for p in everything["pages"]]
    assert len(set(seen)) == len(seen) > 7


def test_a_hostile_page_is_returned_as_data_and_its_raw_body_sandboxed(
    dashboard: LiveDashboard, hostile: HostileSite
) -> None:
    found = get(dashboard.base + "/api/pages?q=title+markup").json()["pages"]
    (page,) = [p for p in found if p["url"].endswith("/title.html")]
    assert "<img src=x" in page["title"]  # stored as the page's own text, shown as text
    detail = get(dashboard.base + f"/api/pages/{page['id']}").json()
    assert detail["has_body"] is True
    raw = get(dashboard.base + f"/raw/{page['id']}")
    assert raw.headers["content-type"].startswith("text/html")
    assert MARKER.encode() in raw.body  # the raw page as it was sent...
    assert raw.headers["content-security-policy"].startswith("sandbox")  # ...which runs nothing


def test_page_detail_shows_scores_outlinks_and_failures(dashboard: LiveDashboard) -> None:
    pages = get(dashboard.base + "/api/pages?host=127.0.0.2&limit=200").json()["pages"]
    seed = min(pages, key=lambda p: p["id"])
    detail = get(dashboard.base + f"/api/pages/{seed['id']}").json()
    assert detail["page"]["reasons"]
    assert detail["outlinks"]
    assert detail["outlinks_total"] >= len(detail["outlinks"])
    fetched = [link for link in detail["outlinks"] if link["fetched"]]
    assert fetched
    assert all("score" in link["fetched"] for link in fetched)
    assert detail["topic_evolution"]
    assert detail["topic_evolution"][0]["snapshots"]


def test_graph_and_nodes_say_what_is_missing(dashboard: LiveDashboard) -> None:
    graph = get(dashboard.base + "/api/graph").json()
    assert graph["built"] is False  # the demo crawl recognised no entities: no KB, no preference
    assert "knowledge graph is empty" in graph["message"]
    nodes = get(dashboard.base + "/api/nodes").json()
    assert nodes["configured"] is False


def test_serve_refuses_a_public_address_without_a_token(crawled_db: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(cli_app, ["serve", "--db", str(crawled_db), "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "needs --token" in result.output
    short = runner.invoke(cli_app, ["serve", "--db", str(crawled_db), "--token", "short"])
    assert short.exit_code == 2


def test_serve_reports_a_missing_database(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli_app, ["serve", "--db", str(tmp_path / "none.db")])
    assert result.exit_code == 4
    assert "does not exist" in result.output
    assert not (tmp_path / "none.db").exists()


def test_demo_ends_with_the_command_that_opens_it_in_the_dashboard(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    result = CliRunner().invoke(
        cli_app, ["demo", "--db", str(db), "--max-pages", "15", "--quiet"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    last = result.output.strip().splitlines()[-1]
    assert f"topicrawl serve --db {db}" in last
    # ... and that command serves it: the same options, run.
    from topicrawl.web.app import open_reader  # noqa: PLC0415

    async def readable() -> None:
        engine, _, _ = await open_reader(str(db))
        await engine.dispose()

    asyncio.run(readable())
