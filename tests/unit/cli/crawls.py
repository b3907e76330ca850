"""Running `topicrawl crawl` as a child process against the demo web."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from topicrawl.demoweb import DemoWebServer


def crawl_argv(server: DemoWebServer, db: Path, *extra: str) -> list[str]:
    """A slow crawl of the whole demo web (~5 pages/s a host) into ``db``."""
    argv = [sys.executable, "-m", "topicrawl.cli", "crawl", "--quiet", "--max-pages", "0"]
    argv += ["--per-host", "1", "--delay", "0.2", "--db", str(db), *extra]
    for host, base in server.web.bases().items():
        argv += ["--seed", base, "--allow-domain", host]
    return argv


def crawl_env() -> dict[str, str]:
    return {
        **os.environ,
        "TOPICRAWL_STORAGE__FLUSH_INTERVAL": "0.2",
        "TOPICRAWL_PARSE_WORKERS": "0",
        "TOPICRAWL_FETCH__TIMEOUT": "5",
    }


def stored_pages(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as connection:
            return int(connection.execute("SELECT count(*) FROM pages").fetchone()[0])
    except sqlite3.Error:
        return 0


def wait_for_pages(db: Path, child: subprocess.Popen[bytes], count: int) -> None:
    """Wait (at most 60 s) until the crawl writing ``db`` has stored ``count`` pages."""
    deadline = time.monotonic() + 60
    while stored_pages(db) < count:
        assert child.poll() is None, "the crawl ended before storing pages"
        assert time.monotonic() < deadline, "the crawl stored no pages in 60 s"
        time.sleep(0.1)
