"""The least memory topicrawl's processes can take on the crawl benchmark, before any crawling.

    python benchmarks/crawl/memory_floor.py [--page PATH]

Each line runs in a fresh interpreter and reports its peak RSS (``ru_maxrss``) after
importing one layer of the stack, so the table says what the imports alone cost:
the event-loop process (CLI, engine, storage, fetcher) and the parse worker. The last lines
parse the largest page of the Java docs benchmark once with selectolax (Lexbor), as the
parse worker does, and report the worker's peak: the DOM of one page is the worker's floor
on that site.

The crawl benchmark's memory target (peak RSS of the process tree at most half of
Scrapy's, ~145 MB) is to be read against these floors.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

JAVA_DOCS = Path("/usr/share/doc/openjdk-17-jre-headless/api")
BIGGEST_PAGE = JAVA_DOCS / "java.base/java/lang/class-use/Object.html"

_PEAK = "import resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)"

LAYERS = (
    ("bare interpreter", "pass"),
    ("aiohttp", "import aiohttp"),
    ("SQLAlchemy async + aiosqlite", "import sqlalchemy.ext.asyncio, aiosqlite"),
    ("pydantic-settings", "import pydantic_settings"),
    ("typer + rich", "import typer, rich.console"),
    ("numpy", "import numpy"),
    ("parse worker (its imports)", "import topicrawl.parse.worker"),
    ("event-loop process (CLI + engine imports)", "import topicrawl.cli.app, topicrawl.engine"),
    (
        "event-loop process, numpy loaded?",
        "import sys, topicrawl.cli.app, topicrawl.engine; print('numpy' in sys.modules, end=' ')",
    ),
)


def peak_mb(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\n{_PEAK}"], check=True, capture_output=True, text=True
    )
    return out.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--page", type=Path, default=BIGGEST_PAGE, help="an HTML file to parse")
    args = parser.parse_args()
    print("| what | peak RSS MB |")
    print("|---|---|")
    for name, code in LAYERS:
        print(f"| {name} | {peak_mb(code)} |")
    if args.page.exists():
        size = args.page.stat().st_size
        parse = (
            "from topicrawl.parse.worker import parse_body\n"
            f"body = open({str(args.page)!r}, 'rb').read()\n"
            "doc = parse_body(body, 'http://127.0.0.11:8080/x.html')\n"
            "del body, doc"
        )
        print(
            f"| parse worker after parsing {args.page.name} ({size / 1e6:.1f} MB) | "
            f"{peak_mb(parse)} |"
        )
    else:
        print(f"({args.page} not found: start ../shared/bench/docsweb.sh to install the docs)")


if __name__ == "__main__":
    main()
