"""What a crawl killed with SIGKILL left behind, and what its resumed run fetched again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from topicrawl.demoweb import DemoWebServer


def durably_done(db: Path) -> set[str]:
    """URLs of the stored pages the SQLite frontier has durably marked done (never to be
    fetched again)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as con:
        query = (
            "SELECT p.url FROM pages p JOIN frontier_requests f ON f.url = p.url WHERE f.state = 1"
        )
        return {str(url) for (url,) in con.execute(query)}


def fetched_after(server: DemoWebServer, since: float) -> set[str]:
    """URLs the demo web answered 200 after ``since`` (``time.monotonic()``), but for the
    targets of redirects it answered then: a redirect's target is fetched as its last hop,
    and stored under the first URL or not at all."""
    web = server.web
    bases = web.bases()

    def url(host: str, path: str) -> str:
        return bases[host].rstrip("/") + path

    log = [r for r in server.access_log() if r.at > since]
    hops = set()
    for record in log:
        if 300 <= record.status < 400:
            page = web.find(url(record.host, record.path))
            if page is not None and page.redirect is not None:
                hops.add(url(page.redirect.host, page.redirect.target))
    return {url(r.host, r.path) for r in log if r.status == 200} - hops
