"""The demo web served by its own process (``python -m topicrawl.demoweb``), so the server's
CPU never competes with the test's event loop, where the supervisor and the duty cycle run."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator

import pytest

from topicrawl.demoweb import DemoWeb

SEED, HOSTS, PAGES_PER_HOST = 5, 3, 40


@pytest.fixture(scope="module")
def demo_web() -> Iterator[DemoWeb]:
    """The demo web (robots.txt without Crawl-delay), bound to the port its server listens on."""
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "topicrawl.demoweb",
            "--port=0",
            f"--seed={SEED}",
            f"--hosts={HOSTS}",
            f"--pages-per-host={PAGES_PER_HOST}",
            "--crawl-delay=0",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        port = 0
        for line in server.stdout:
            if match := re.search(r":(\d+)/\s*$", line):
                port = int(match[1])
            if line.startswith("Serving"):
                break
        assert port, "the demo web server did not start"
        web = DemoWeb.generate(seed=SEED, hosts=HOSTS, pages_per_host=PAGES_PER_HOST, crawl_delay=0)
        yield web.at_port(port)
    finally:
        server.terminate()
        server.wait(10)
        if server.stdout is not None:
            server.stdout.close()
