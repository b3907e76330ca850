"""`topicrawl crawl --metrics-port`: Prometheus metrics of the running crawl process."""

from __future__ import annotations

import signal
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.unit.cli.crawls import crawl_argv, crawl_env, wait_for_pages
from topicrawl.demoweb import DemoWeb, DemoWebServer


@pytest.fixture(scope="module")
def server() -> Iterator[DemoWebServer]:
    web = DemoWeb.generate(seed=9, hosts=2, pages_per_host=30)
    demo = DemoWebServer(web)
    with demo.run_in_thread():
        yield demo


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_running_crawl_serves_its_metrics(server: DemoWebServer, tmp_path: Path) -> None:
    port = free_port()
    db = tmp_path / "crawl.db"
    child = subprocess.Popen(
        crawl_argv(server, db, "--metrics-port", str(port)),
        env=crawl_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_pages(db, child, 3)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            body = response.read().decode()
        child.send_signal(signal.SIGINT)
        child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()

    families = {family.name: family for family in text_string_to_metric_families(body)}
    assert families["topicrawl_pages"].type == "counter"
    pages = families["topicrawl_pages"].samples[0]
    assert pages.name == "topicrawl_pages_total"
    assert pages.value >= 3
    assert families["topicrawl_fetch_duration_seconds"].type == "histogram"
    assert families["topicrawl_frontier_queued"].type == "gauge"
    assert {"topicrawl_errors", "topicrawl_fetched_bytes", "topicrawl_parse_backlog"} <= set(
        families
    )


def test_a_port_out_of_range_is_a_usage_error(server: DemoWebServer, tmp_path: Path) -> None:
    done = subprocess.run(
        crawl_argv(server, tmp_path / "crawl.db", "--metrics-port", "70000"),
        env=crawl_env(),
        capture_output=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 2
    assert b"metrics-port" in done.stderr
