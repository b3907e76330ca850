"""HttpFetcher against the nginx docs web of the benchmarks, when it is running.

Start it with ``bash ../shared/bench/docsweb.sh start``; these tests skip when it is not up.
"""

from __future__ import annotations

import socket

import pytest

from tests.unit.fetch.servers import fetcher_for, settings
from topicrawl.core.errors import PermanentFetchError, RobotsDisallowed
from topicrawl.core.models import Request
from topicrawl.fetch import RobotsCache

JAVA = "http://127.0.0.11:8080"


def _docsweb_up() -> bool:
    try:
        with socket.create_connection(("127.0.0.11", 8080), timeout=0.5):
            return True
    except OSError:
        return False


pytestmark = pytest.mark.skipif(not _docsweb_up(), reason="docsweb (nginx) is not running")


async def test_real_pages_and_robots() -> None:
    async with fetcher_for(settings=settings()) as fetcher:
        fetcher.robots = RobotsCache(
            session=fetcher.session, user_agent="topicrawl/0.1", error_ttl=60, max_crawl_delay=5
        )
        index = await fetcher.fetch(Request(url=f"{JAVA}/index.html"))
        assert index.status == 200
        assert index.encoding == "utf-8"
        assert index.text is not None
        assert "Java" in index.text
        # nginx redirects a directory without its slash; the listing itself is forbidden.
        with pytest.raises(PermanentFetchError) as forbidden:
            await fetcher.fetch(Request(url=f"{JAVA}/java.base"))
        assert forbidden.value.status == 403
        page = await fetcher.fetch(Request(url=f"{JAVA}/java.base/module-summary.html"))
        assert page.text is not None
        assert "java.base" in page.text
        with pytest.raises(RobotsDisallowed):
            await fetcher.fetch(Request(url=f"{JAVA}/java.desktop/module-summary.html"))
