"""Where a focused crawl loses fetches: one topic's fetch order with each page's priority and
its parts, whether it is relevant, and the oracle's F90 beside it (issue #18).

    .venv/bin/python benchmarks/focus/trace.py TOPIC [--set NAME=JSON ...] [--until N]

Each line: fetch number, ``*`` for a relevant page, the priority it was fetched at, its
reasons (anchor, block, inherited, ...), its relevance and URL. The lines up to the crawl's
F90 show which links were taken before the relevant ones and why.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import loso  # noqa: E402
import run  # noqa: E402
from measure import measure_order  # noqa: E402

SHOWN = (
    "anchor",
    "block",
    "inherited",
    "blame",
    "hub",
    "importance",
    "menu",
    "probe",
    "prior",
    "model",
)


async def trace(topic_id: str, options: dict[str, object], until: int, strategy: str) -> None:
    site_name = topic_id.split("-", maxsplit=1)[0]
    with tempfile.TemporaryDirectory(prefix="focus-trace-") as tmp:
        workdir = Path(tmp)
        [entry] = await loso.load_sites([site_name], workdir, lambda _: None)
        topic = next(t for t in entry.topics if t.id == topic_id)
        site = run.topic_site(entry.site, topic)
        settings = run.settings_for(
            site, workdir / "t.db", strategy, topic.keywords, options, entry.site.budget
        )
        async with run.open_crawl(settings) as crawler:
            run._stop_when_complete(crawler, topic.relevant, until_most=True)
            await crawler.run()
        async with run.open_storage(str(workdir / "t.db")) as storage:
            pages = [p async for p in storage.iter_pages()]
    order = [p.final_url for p in pages]
    m = measure_order(order, topic.relevant)
    print(
        f"{topic_id}: keywords {topic.keywords!r}; F90 {m.to_most} (oracle "
        f"{entry.oracle[topic_id]}), {len(topic.relevant)} relevant"
    )
    for i, page in enumerate(pages[:until], 1):
        mark = "*" if page.final_url in topic.relevant else " "
        parts = " ".join(f"{k}={page.reasons[k]:.2f}" for k in SHOWN if k in page.reasons)
        rel = f"{page.relevance:.3f}" if page.relevance is not None else "-"
        print(f"{i:4} {mark} {page.score:.3f} rel={rel} {parts} {page.final_url}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("topic")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=JSON")
    parser.add_argument("--until", type=int, default=200)
    parser.add_argument("--strategy", default="focused")
    args = parser.parse_args()
    options = {k: json.loads(v) for k, _, v in (s.partition("=") for s in args.set)}
    run.ensure_docsweb()
    asyncio.run(trace(args.topic, options, args.until, args.strategy))


if __name__ == "__main__":
    main()
