"""A topic crawler process that dies (exit code 3) on any URL containing "crash"."""

from __future__ import annotations

import os

from topicrawl.topics import topic_worker

_real_fetch = topic_worker.fetch_page


async def _fetch_or_die(fetcher, url, config, politeness=None):  # type: ignore[no-untyped-def]
    if "crash" in url:
        os._exit(3)
    return await _real_fetch(fetcher, url, config, politeness)


topic_worker.fetch_page = _fetch_or_die  # type: ignore[assignment]

if __name__ == "__main__":
    topic_worker.main()
