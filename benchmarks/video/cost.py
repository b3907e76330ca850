"""What video detection costs the parse worker: ``parse_body`` with and without it, side by side.

    PYTHONPATH=src .venv/bin/python benchmarks/video/cost.py [--pages 300] [--rounds 7]

Pages: the Java 17 API docs (127.0.0.11:8080, from ``../shared/bench/docsweb.sh start``), read
breadth-first from the index up to ``--pages`` HTML pages, and the main demo web's documents.
Each round times every page with ``video=False`` then ``video=True`` (interleaved), CPU time of
this process; the table gives medians over rounds of the mean per page.
"""

from __future__ import annotations

import argparse
import statistics
import time
import urllib.request
from collections import deque
from urllib.parse import urlsplit

from topicrawl.demoweb import DemoWeb, Kind
from topicrawl.demoweb.render import render_document
from topicrawl.parse.html import parse_html
from topicrawl.parse.worker import parse_body

JAVA = "http://127.0.0.11:8080/"


def java_pages(limit: int) -> list[tuple[str, bytes]]:
    """Up to ``limit`` HTML pages of the Java docs, breadth-first from the index."""
    seen, queue, pages = {JAVA}, deque([JAVA]), []
    while queue and len(pages) < limit:
        url = queue.popleft()
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                if "html" not in response.headers.get("Content-Type", ""):
                    continue
                body = response.read()
        except OSError:
            continue
        pages.append((url, body))
        for link in parse_html(body.decode("utf-8", "replace"), url=url).links:
            target = link.url.split("#", 1)[0]
            if urlsplit(target).netloc == urlsplit(JAVA).netloc and target not in seen:
                seen.add(target)
                queue.append(target)
    return pages


def demo_pages() -> list[tuple[str, bytes]]:
    web = DemoWeb.generate()
    kinds = (Kind.HOME, Kind.SECTION, Kind.ARTICLE)
    return [
        (f"http://demo.test{p.path}", render_document(web, p)) for p in web.pages if p.kind in kinds
    ][:400]


def measure(pages: list[tuple[str, bytes]], rounds: int) -> dict[str, float]:
    off: list[float] = []
    on: list[float] = []
    for _ in range(rounds):
        for video, out in ((False, off), (True, on)):
            started = time.process_time()
            for url, body in pages:
                parse_body(body, url, video=video)
            out.append(1000 * (time.process_time() - started) / len(pages))
    a, b = statistics.median(off), statistics.median(on)
    marked = sum(parse_body(body, url).video is not None for url, body in pages)
    return {"pages": len(pages), "with_markers": marked, "off_ms": a, "on_ms": b, "ratio": b / a}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    for name, pages in (("java", java_pages(args.pages)), ("demo web", demo_pages())):
        row = measure(pages, args.rounds)
        print(
            f"{name}: {row['pages']} pages ({row['with_markers']} found video pages), parse_body "
            f"{row['off_ms']:.3f} ms without video detection, {row['on_ms']:.3f} ms with "
            f"({100 * (row['ratio'] - 1):+.1f} %)"
        )


if __name__ == "__main__":
    main()
