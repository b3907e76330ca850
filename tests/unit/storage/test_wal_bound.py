"""The SQLite write-ahead log stays bounded while readers come and go all the time."""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from pathlib import Path

from tests.pages import fetched_page
from topicrawl.core.models import Page
from topicrawl.storage import SqlStorage
from topicrawl.storage.wal import WalBound

WORDS = [f"word{i}" for i in range(2_000)]


def page(n: int, rng: random.Random) -> Page:
    text = " ".join(rng.choices(WORDS, k=1_500))  # ~15 KB, as a scale-web page
    return fetched_page(f"https://h{n % 7}.test/p/{n}.html", text, title=f"page {n}")


class Readers(threading.Thread):
    """Short read transactions one after another, as a crawl's frontier and look-ups make."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.stop = threading.Event()
        self.reads = 0

    def run(self) -> None:
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=5)
        try:
            while not self.stop.is_set():
                conn.execute("BEGIN")
                conn.execute("SELECT count(*) FROM pages").fetchall()
                time.sleep(0.002)
                conn.execute("COMMIT")
                self.reads += 1
                time.sleep(0.001)
        finally:
            conn.close()


async def test_the_log_is_truncated_past_its_limit_despite_busy_readers(tmp_path: Path) -> None:
    # Session 17: the log grew to 590 MB beside a 1.2 GB database at 35,000 pages, because
    # SQLite's own checkpoints never wait for readers and the log never started over.
    path = tmp_path / "crawl.db"
    limit = 2**20
    rng = random.Random(7)
    storage = SqlStorage(str(path), batch_size=20, flush_interval=60)
    await storage.open()
    readers = Readers(path)
    try:
        assert storage.wal is not None
        storage.wal = WalBound(path, limit_bytes=limit, busy_timeout=5.0, check_every=0.0)
        readers.start()
        sizes = []
        for batch in range(10):  # ~3 MB of text, ~8 MB of log with the search index
            for n in range(20):
                await storage.save_page(page(batch * 20 + n, rng), run_id=1)
            await storage.flush()
            sizes.append(storage.wal.size())
        truncated = storage.wal.truncated
    finally:
        readers.stop.set()
        readers.join()
        await storage.close()
    assert readers.reads > 10  # the readers were busy throughout
    assert truncated > 0
    # After each flush the log is near the limit (a checkpoint the readers put off is tried
    # again after the next batch); SQLite alone let it grow to 8 MB here.
    assert max(sizes) <= 3 * limit
    assert sizes[-1] <= 2 * limit
