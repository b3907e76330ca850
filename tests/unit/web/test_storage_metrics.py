"""The dashboard's /metrics body: what a crawl database holds, in Prometheus text format."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from topicrawl.core.models import ErrorKind, FetchFailure, Page
from topicrawl.engine.samples import RunSample, sample_row
from topicrawl.storage import SqlStorage
from topicrawl.storage.target import create_engine, parse_target
from topicrawl.web.storage_metrics import CONTENT_TYPE, render_storage_metrics


def page(n: int, status: int) -> Page:
    url = f"http://h.test/{n}"
    return Page(url, url, status, 0, 1.0 + n, "text/html", size=100 * n)


def sample(run_id: int, at: float, node: str | None, pages: int) -> RunSample:
    return RunSample(
        run_id=run_id,
        at=at,
        pages=pages,
        failures=0,
        bytes=0,
        queued=7,
        in_flight=3,
        parse_backlog=1,
        failures_by_kind={},
        waits={},
        node=node,
    )


async def test_the_body_parses_and_counts_what_is_stored(tmp_path: Path) -> None:
    url = str(tmp_path / "crawl.db")
    async with SqlStorage(url) as storage:
        done = await storage.start_run(name="bfs", config="{}")
        running = await storage.start_run(name="bfs", config="{}")
        for n in range(1, 6):
            await storage.save_page(page(n, 404 if n == 5 else 200), run_id=running)
        for n, kind in enumerate([ErrorKind.TIMEOUT, ErrorKind.TIMEOUT, ErrorKind.ROBOTS]):
            failure = FetchFailure(f"http://h.test/f{n}", kind, "no", at=1.0)
            await storage.save_failure(failure, run_id=running)
        for at, node, pages in [(1.0, "a", 1), (2.0, "a", 4), (1.5, None, 2), (9.0, "z", 9)]:
            run_id = done if node == "z" else running
            storage.save_sample(sample_row(sample(run_id, at, node, pages)))
        await storage.finish_run(done, stats="{}")

    engine = create_engine(parse_target(url), busy_timeout=5.0, connect_timeout=5.0)
    try:
        body = (await render_storage_metrics(engine)).decode()
    finally:
        await engine.dispose()

    assert CONTENT_TYPE.startswith("text/plain")
    found = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body)
        for s in family.samples
    }
    assert found[("topicrawl_storage_pages", (("status", "200"),))] == 4
    assert found[("topicrawl_storage_pages", (("status", "404"),))] == 1
    assert found[("topicrawl_storage_failures", (("kind", "timeout"),))] == 2
    assert found[("topicrawl_storage_failures", (("kind", "robots"),))] == 1
    assert found[("topicrawl_storage_page_bytes", ())] == 1500
    assert found[("topicrawl_storage_runs", (("state", "running"),))] == 1
    assert found[("topicrawl_storage_runs", (("state", "finished"),))] == 1
    # The newest sample of each node of the running run; the finished run's are left out.
    live = {k: v for k, v in found.items() if k[0] == "topicrawl_run_pages"}
    assert live == {
        ("topicrawl_run_pages", (("node", ""), ("run_id", str(running)))): 2,
        ("topicrawl_run_pages", (("node", "a"), ("run_id", str(running)))): 4,
    }
