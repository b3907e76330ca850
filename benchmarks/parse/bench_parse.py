"""Measure HTML parsing per page on real documentation sites (the Java 17 API docs, Python docs).

Run ``bash /work/shared/bench/docsweb.sh start`` once (it installs the docs), then::

    .venv/bin/python benchmarks/parse/bench_parse.py                 # 2000 pages of each site
    .venv/bin/python benchmarks/parse/bench_parse.py --pages 0       # every page
    .venv/bin/python benchmarks/parse/bench_parse.py --cold          # URL caches emptied per page
    .venv/bin/python benchmarks/parse/bench_parse.py --profile 300   # cProfile of 300 pages
    .venv/bin/python benchmarks/parse/bench_parse.py --body          # parse_body on the bytes
    .venv/bin/python benchmarks/parse/bench_parse.py --largest 38    # the 38 largest pages

``--body`` times what a parse worker does per page (:func:`topicrawl.parse.worker.parse_body`
on the raw bytes: decode, parse, content hash) instead of parse_html on decoded text.
``--just-parse`` and ``--just-load`` print no timings: run under
``valgrind --tool=callgrind``, the difference of their instruction counts is the parsing's.

Pages are read and decoded before timing; each is given the URL it has on the local docs web
(see docsweb.sh), so relative links resolve as in a crawl. Pages run in a shuffled order, one
after another, so the URL caches warm up as they would in a crawl of the site; ``--cold``
empties them before every page, the worst case of a crawl that never sees a URL twice.

Times are the CPU time of this process (``time.process_time``), not wall-clock time: on a
machine shared with other work, wall-clock time mostly measures the neighbours.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import random
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from selectolax.lexbor import LexborDocumentOptions, LexborHTMLParser

from topicrawl.parse import html as parse_module
from topicrawl.parse import urls as urls_module
from topicrawl.parse.html import parse_html
from topicrawl.parse.worker import parse_body

SITES = {
    "java17-api": (Path("/usr/share/doc/openjdk-17-jre-headless/api"), "http://127.0.0.11:8080/"),
    "python311": (Path("/usr/share/doc/python3.11/html"), "http://127.0.0.12:8080/"),
}


@dataclass(frozen=True, slots=True)
class Result:
    site: str
    pages: int
    mean_ms: float
    median_ms: float
    p99_ms: float
    max_ms: float
    pages_per_s: float
    links_per_page: float
    kb_per_page: float
    text_kchars_per_page: float
    lexbor_mean_ms: float


def load(site: str, limit: int, seed: int, *, largest: int = 0) -> list[tuple[str, str, bytes]]:
    """(url, text, body) of ``limit`` random pages of the site (0: all), or of its largest."""
    root, prefix = SITES[site]
    if not root.is_dir():
        sys.exit(f"{root} is missing: run `bash /work/shared/bench/docsweb.sh start` first")
    files = sorted(root.rglob("*.html"))
    random.Random(seed).shuffle(files)
    if largest:
        files = sorted(files, key=lambda path: path.stat().st_size, reverse=True)[:largest]
        random.Random(seed).shuffle(files)
    elif limit:
        files = files[:limit]
    pages = []
    for path in files:
        body = path.read_bytes()
        html = body.decode("utf-8", "replace")
        pages.append((prefix + path.relative_to(root).as_posix(), html, body))
    return pages


def clear_caches() -> None:
    parse_module._resolve_in_directory_cached.cache_clear()
    parse_module._absolute_cached.cache_clear()
    urls_module._canonicalize_slow.cache_clear()


def measure(
    site: str, pages: list[tuple[str, str, bytes]], *, cold: bool = False, body: bool = False
) -> Result:
    times: list[float] = []
    links = 0
    text = 0
    gc.collect()
    clear_caches()
    for url, html, raw in pages:
        if cold:
            clear_caches()
        if body:
            start = time.process_time()
            parsed = parse_body(raw, url).page
        else:
            start = time.process_time()
            parsed = parse_html(html, url=url)
        times.append(time.process_time() - start)
        links += len(parsed.links)
        text += len(parsed.text)
    lexbor = 0.0  # the bare Lexbor parse of the same pages, for scale
    for _, html, _ in pages:
        start = time.process_time()
        LexborHTMLParser(html, options=LexborDocumentOptions.WO_EVENTS)
        lexbor += time.process_time() - start
    times_ms = sorted(t * 1000 for t in times)
    n = len(times_ms)
    return Result(
        site=site,
        pages=n,
        mean_ms=statistics.fmean(times_ms),
        median_ms=statistics.median(times_ms),
        p99_ms=times_ms[min(n - 1, int(n * 0.99))],
        max_ms=times_ms[-1],
        pages_per_s=n / sum(times),
        links_per_page=links / n,
        kb_per_page=sum(len(raw) for _, _, raw in pages) / n / 1024,
        text_kchars_per_page=text / n / 1000,
        lexbor_mean_ms=lexbor / n * 1000,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=2000, help="pages per site, 0 = all")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sites", nargs="+", default=list(SITES), choices=list(SITES))
    parser.add_argument("--cold", action="store_true", help="empty the URL caches per page")
    parser.add_argument("--profile", type=int, default=0, help="profile N pages of the first site")
    parser.add_argument("--body", action="store_true", help="time parse_body on the raw bytes")
    parser.add_argument("--largest", type=int, default=0, help="the N largest pages per site")
    parser.add_argument("--just-parse", action="store_true", help="parse, print nothing")
    parser.add_argument("--just-load", action="store_true", help="only load the pages")
    args = parser.parse_args()

    def run(pages: list[tuple[str, str, bytes]]) -> None:
        for url, html, raw in pages:
            if args.body:
                parse_body(raw, url)
            else:
                parse_html(html, url=url)

    if args.profile:
        pages = load(args.sites[0], args.profile, args.seed, largest=args.largest)
        profiler = cProfile.Profile(time.process_time)
        profiler.enable()
        run(pages)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
        return
    if args.just_parse or args.just_load:
        for site in args.sites:
            pages = load(site, args.pages, args.seed, largest=args.largest)
            if args.just_parse:
                run(pages)
        return

    print(
        "| site | pages | KB/page | mean ms | median ms | p99 ms | max ms | pages/s "
        "| links/page | text kchars/page | bare Lexbor parse, mean ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for site in args.sites:
        pages = load(site, args.pages, args.seed, largest=args.largest)
        r = measure(site, pages, cold=args.cold, body=args.body)
        print(
            f"| {r.site} | {r.pages} | {r.kb_per_page:.1f} | {r.mean_ms:.3f} | "
            f"{r.median_ms:.3f} | {r.p99_ms:.2f} | {r.max_ms:.1f} | {r.pages_per_s:.0f} | "
            f"{r.links_per_page:.1f} | {r.text_kchars_per_page:.1f} | {r.lexbor_mean_ms:.3f} |"
        )


if __name__ == "__main__":
    main()
