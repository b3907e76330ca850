"""CPU a parse worker spends per page, with and without entity recognition and linking.

Pages come from the local docs web (``/work/shared/bench/docsweb.sh start``): Java API class
pages (English; the KB is the one :mod:`java_kb` builds from the docs' own class index, 4,600
entities) and the Debian Administrator's Handbook in Chinese (zh-CN; the same KB, so Chinese
names come from jieba's tags). The bodies are fetched once; then, in this one process, each
mode parses every page with :func:`topicrawl.parse.worker.parse_body` exactly as a worker
does, timed with ``time.process_time``. The modes run in turns, ``--rounds`` times, and the
medians are reported. The ``:whole`` modes are the code before session 20: the analyser
reads the whole page, not the page's ``<main>`` content only. Usage::

    python benchmarks/kg/cpu_per_page.py [--pages 200] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from java_kb import build

from topicrawl.core.models import ParsedPage
from topicrawl.focus.stemming import PageTerms
from topicrawl.kg.analyse import EntityAnalyzer
from topicrawl.kg.kbfile import parse_kb
from topicrawl.parse.worker import parse_body
from topicrawl.text import tokenize

JAVA = "http://127.0.0.11:8080/"
DEBIAN_ZH = "http://127.0.0.20:8080/zh-CN/"


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:
        return bytes(response.read())


def java_pages(kb_lines: list[dict[str, object]], count: int) -> list[tuple[str, bytes]]:
    """Every n-th class page of the Java docs (by qualified name), ``count`` of them."""
    keys = sorted(
        str(line["id"]) for line in kb_lines if "id" in line and line.get("type") != "package"
    )
    step = max(1, len(keys) // count)
    chosen = keys[::step][:count]
    index = _get(JAVA + "allclasses-index.html").decode("utf-8")
    urls = []
    for key in chosen:
        package, simple = key.rsplit(".", 1)
        found = re.search(
            rf'<a href="([^"]+/{re.escape(simple)}\.html)" title="[\w ]+ in {re.escape(package)}">',
            index,
        )
        if found:
            urls.append(JAVA + found.group(1))
    return [(url, _get(url)) for url in urls]


def chinese_pages(count: int) -> list[tuple[str, bytes]]:
    """The Chinese handbook's section pages, in its table of contents' order."""
    index = _get(DEBIAN_ZH).decode("utf-8")
    names = list(dict.fromkeys(re.findall(r'href="([\w.-]+\.html)"', index)))[:count]
    return [(DEBIAN_ZH + name, _get(DEBIAN_ZH + name)) for name in names]


Mode = Callable[[str, bytes], object]


def _forget_segmentation() -> None:
    """Empty the Chinese segmentation memo (where the code has one): a round must not find
    the pages' runs cut by the round before, as a crawl never sees a page twice. Runs shared
    by a page's two analyzers, or by pages (a site's navigation), are still remembered."""
    memo = getattr(tokenize, "_segment_memo", None)
    if memo is not None:
        memo.cache_clear()


def measure(
    pages: list[tuple[str, bytes]], modes: dict[str, Mode], rounds: int
) -> dict[str, float]:
    """Median CPU milliseconds per page of each mode."""
    times: dict[str, list[float]] = {name: [] for name in modes}
    for _ in range(rounds):
        for name, mode in modes.items():
            _forget_segmentation()
            start = time.process_time()
            for url, body in pages:
                mode(url, body)
            times[name].append((time.process_time() - start) * 1000 / len(pages))
    return {name: statistics.median(values) for name, values in times.items()}


def measure_texts(
    pages: list[ParsedPage], entities: EntityAnalyzer, rounds: int
) -> dict[str, float]:
    """Median CPU milliseconds per page of the analyser alone, on the main content (where the
    page has one) and on the whole page, in turns."""
    times: dict[str, list[float]] = {"main": [], "whole": []}
    for _ in range(rounds):
        for name, spent in times.items():
            _forget_segmentation()
            start = time.process_time()
            for page in pages:
                entities(page.title, page.text, main=page.main if name == "main" else None)
            spent.append((time.process_time() - start) * 1000 / len(pages))
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    lines = build(JAVA)
    kb_text = "\n".join(json.dumps(line) for line in lines)
    kb = parse_kb(kb_text, fmt="jsonl")
    entities = EntityAnalyzer(kb)
    terms = PageTerms(stemmer="snowball", user_words=[], stem=True)

    def whole_page(url: str, body: bytes, *, terms_too: bool) -> object:
        """The code before session 20: recognition over the whole page (header, menus and
        footer too), the parse not asked for the page's main content."""
        doc = parse_body(body, url, analyzer=terms if terms_too else None)
        return entities(doc.page.title, doc.page.text)

    modes: dict[str, Mode] = {
        "parse": lambda url, body: parse_body(body, url),
        "parse+kg": lambda url, body: parse_body(body, url, entity_analyzer=entities),
        "parse+kg:whole": lambda url, body: whole_page(url, body, terms_too=False),
        "parse+terms": lambda url, body: parse_body(body, url, analyzer=terms),
        "parse+terms+kg": lambda url, body: parse_body(
            body, url, analyzer=terms, entity_analyzer=entities
        ),
        "parse+terms+kg:whole": lambda url, body: whole_page(url, body, terms_too=True),
    }
    for label, pages in (
        (f"Java API docs, {args.pages} class pages", java_pages(lines, args.pages)),
        ("Debian handbook zh-CN, 60 pages", chinese_pages(60)),
    ):
        for url, body in pages[:3]:  # warm up: automaton, linker indexes, jieba's tables
            parse_body(body, url, analyzer=terms, entity_analyzer=entities)
        medians = measure(pages, modes, args.rounds)
        size = sum(len(body) for _, body in pages) / len(pages) / 1024
        print(f"{label} (mean {size:.0f} KB), median of {args.rounds} rounds, CPU ms/page:")
        for name, value in medians.items():
            print(f"  {name:16s} {value:8.2f}")
        for variant in ("", ":whole"):
            to_parse = medians["parse+kg" + variant] / medians["parse"] - 1
            to_terms = medians["parse+terms+kg" + variant] / medians["parse+terms"] - 1
            which = variant or " (main content)"
            print(f"  kg{which} adds {100 * to_parse:.0f} % to parse,", end=" ")
            print(f"{100 * to_terms:.0f} % to parse+terms")
        # The analyser alone on the pages as parsed (no parse in the timing: less noise),
        # reading the main content and the whole page in turns.
        parsed = [parse_body(body, url, find_main=True).page for url, body in pages]
        alone = measure_texts(parsed, entities, args.rounds)
        print(
            f"  analyser alone: main content {alone['main']:.2f}, whole page"
            f" {alone['whole']:.2f} ms/page ({sum(p.main is not None for p in parsed)} pages"
            " with <main>)"
        )


if __name__ == "__main__":
    main()
