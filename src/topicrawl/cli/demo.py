"""``topicrawl demo``: serve the demo web on loopback, crawl it, judge the crawl by ground truth."""

from __future__ import annotations

import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from topicrawl.cli.progress import CrawlProgress, summary_table
from topicrawl.core.config import CrawlSettings
from topicrawl.demoweb import TOPICS, DemoWeb, DemoWebServer
from topicrawl.engine.build import open_crawl, open_storage
from topicrawl.engine.heap import settle_heap

__all__ = ["run_demo"]

DEMO_TOPIC = TOPICS[0]


async def run_demo(
    *, db: Path | None, strategy: str, max_pages: int, seed: int, quiet: bool
) -> None:
    """Crawl a freshly generated demo web and print a summary with the true harvest rate."""
    console = Console()
    err = Console(stderr=True)
    db = _fresh_database(db)
    web = DemoWeb.generate(seed=seed)
    server = DemoWebServer(web, slow_delay=1.0)
    with server.run_in_thread():
        bound = server.web
        seeds = tuple(bound.bases().values())
        topic = DEMO_TOPIC.keywords()
        console.print(
            f"demo web: {len(seeds)} hosts on loopback ({', '.join(seeds)}), "
            f"{len(bound.urls(documents_only=True))} documents"
        )
        console.print(f"topic: [bold]{DEMO_TOPIC.name_en}[/bold] ({topic})")
        console.print(f"strategy: {strategy}, at most {max_pages} pages, results in {db}")
        settings = CrawlSettings(
            seeds=seeds,
            topics=(topic,),
            strategy=strategy,
            max_pages=max_pages,
            concurrency=16,
            politeness={"per_host": 4},
            scope={"allowed_domains": tuple(bound.bases()), "max_depth": 12},
            fetch={"timeout": 10.0, "backoff_base": 0.1},
            storage={"url": str(db)},
        )
        progress = CrawlProgress(console=err, total=max_pages, enabled=not quiet)
        with progress:
            async with open_crawl(settings, on_progress=progress.update) as crawler:
                settle_heap()
                stats = await crawler.run()
    async with open_storage(str(db)) as storage:
        urls = [page.url async for page in storage.iter_pages()]
    on_topic = sum(1 for url in urls if _true_topic(bound, url) == DEMO_TOPIC.id)
    console.print(summary_table(stats, title=f"demo crawl ({strategy})"))
    truth = Table(title="judged by the demo web's ground truth", show_header=False)
    truth.add_column("what", style="bold")
    truth.add_column("value", justify="right")
    truth.add_row(f"pages truly about {DEMO_TOPIC.name_en}", f"{on_topic}")
    rate = on_topic / len(urls) if urls else 0.0
    truth.add_row("harvest rate (true)", f"{rate:.3f}")
    total = sum(
        1 for url in bound.urls(documents_only=True) if bound.true_topic(url) == DEMO_TOPIC.id
    )
    truth.add_row(f"recall of the {total} on-topic documents", f"{on_topic / total:.3f}")
    console.print(truth)
    console.print(f"export with: topicrawl export --db {db} --format jsonl")
    # soft_wrap: the command stays one line, to be copied whole.
    console.print(
        f"open it in the dashboard: topicrawl serve --db {db}  (then http://127.0.0.1:8000/)",
        soft_wrap=True,
    )


def _fresh_database(db: Path | None) -> Path:
    """The demo always starts from an empty database (a file given by the user is replaced)."""
    if db is None:
        return Path(tempfile.mkdtemp(prefix="topicrawl-demo-")) / "demo.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    return db


def _true_topic(web: DemoWeb, url: str) -> str | None:
    if web.find(url) is None:
        return None
    return web.true_topic(url)
