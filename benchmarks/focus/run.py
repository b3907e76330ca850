"""Focused-crawl benchmark: every strategy, real HTTP crawls with the engine, against ground truth.

    .venv/bin/python benchmarks/focus/run.py [--sites all] [--quick] [--topics ID,ID]
                                             [--budget SITE=N] [--first-keyword]

Sites (``--sites all``, the default): java, python, django, git, sqlite, httpd, debian (real
documentation sites of ``../shared/bench/docsweb.sh``) and demo. ``--quick``: the first topic
of each site, focused and shark only, budgets of at most 400 pages (a couple of minutes once
the sites' complete crawls are cached, see below).

For each site: one complete breadth-first crawl gives the crawl graph (for the oracle, see
``measure.py``), the reachable pages and the BFS fetch order (BFS ignores the topic, so one
crawl serves every topic). The crawl graph is cached in ``out/cache/`` under the version of
``src/topicrawl`` (the same code crawls the same graph). A topic on a multilingual site (httpd,
Debian) starts from its language's index page: its oracle starts there too and its relevant
pages are those reachable from there. Then, per topic, one crawl each with ``best-first``,
``shark``, ``focused`` and ``focused`` with a frozen topic vector (``evolve=False``), all from
the site's (or topic's) seed, memory frontier, in-process parsing, a page budget per site.
Every order is cut at the site's budget and measured against the topic's relevant set
(``relevant.py``): harvest rate over the first 200 fetches, recall at 100/200/500/1000
fetches, fetches to 50 % and 90 % recall and their ratio to the oracle's. A ratio whose
strategy did not get there within the budget is a lower bound (``>``), and so is a geometric
mean that includes one. Per topic, ``focused`` against ``focused-frozen``: F90 of both, the
pages at which the topic updates ran (read back from the learned state the crawl saved), and
the verdict (a crawl that reached 90 % recall before its first update is the frozen crawl: a
tie by construction).

Prints markdown tables and writes them to ``out/latest.md`` (and raw numbers to
``out/results.json``). The real sites come from ``../shared/bench/docsweb.sh``
(started here if they do not answer).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
OUT = HERE / "out"
sys.path.insert(0, str(HERE))

from measure import (  # noqa: E402
    CHECKPOINTS,
    HARVEST_AT,
    CrawlGraph,
    OrderMeasures,
    geometric_mean,
    measure_order,
    oracle_order,
)
from relevant import (  # noqa: E402
    git_relevant,
    handbook_relevant,
    httpd_relevant,
    java_relevant,
    python_relevant,
    sqlite_relevant,
)
from topics import (  # noqa: E402
    DEBIAN_TOPICS,
    DEMO_LANGS,
    DEMO_TOPIC_IDS,
    DJANGO_TOPICS,
    GIT_TOPICS,
    HTTPD_TOPICS,
    JAVA_TOPICS,
    PYTHON_TOPICS,
    SQLITE_TOPICS,
    SiteTopic,
)

from topicrawl.core.config import CrawlSettings  # noqa: E402
from topicrawl.core.models import Page  # noqa: E402
from topicrawl.demoweb import TOPICS, DemoWeb, DemoWebServer  # noqa: E402
from topicrawl.engine import Crawler, open_crawl, open_storage  # noqa: E402
from topicrawl.focus import LearnedState  # noqa: E402
from topicrawl.parse.urls import canonicalize  # noqa: E402
from topicrawl.storage.learned import FocusRecords  # noqa: E402

DOCSWEB_SH = Path(os.environ.get("DOCSWEB_SH", REPO.parent / "shared" / "bench" / "docsweb.sh"))
JAVA_ROOT = "http://127.0.0.11:8080/index.html"
PYTHON_ROOT = "http://127.0.0.12:8080/index.html"
DJANGO_ROOT = "http://127.0.0.16:8080/index.html"
GIT_ROOT = "http://127.0.0.17:8080/git.html"
SQLITE_ROOT = "http://127.0.0.18:8080/index.html"
HTTPD_ROOT = "http://127.0.0.19:8080/index.html"  # links to every language's manual
DEBIAN_ROOT = "http://127.0.0.20:8080/zh-CN/index.html"  # a language's book links only itself

CONCURRENCY = 1
PAGES_IN_HAND = 0  # 0: as many as CONCURRENCY
PARSE_WORKERS = 0  # parse (and count page terms) on the event loop: every crawl the same
"""Requests in flight. One makes a crawl's fetch order the strategy's own and the same on
every run (the strategies' random choices are seeded), so strategies and settings compare
exactly. With 2 in flight (sessions 3-4) the order depends on which response comes first:
the same code gave java-sql 2.43x and 9.62x the oracle's fetches, and a site's geometric mean
moved by up to ~20 % between runs. Parsing runs in-process and is the bottleneck, so 1 in
flight is hardly slower. ``--concurrency`` sets it for a run."""

STRATEGIES: dict[str, tuple[str, dict[str, object]]] = {
    "best-first": ("best-first", {}),
    "shark": ("shark", {}),
    "focused": ("focused", {}),
    "focused-frozen": ("focused", {"evolve": False}),
}
"""Benchmark name -> (strategy, options). One configuration for every topic."""


@dataclass(frozen=True, slots=True)
class Topic:
    """A benchmark topic on one site: keywords and the reachable relevant pages."""

    site: str
    id: str
    keywords: str
    relevant: frozenset[str]
    seed: str = ""
    """The crawl's start page (empty: the site's seed)."""


@dataclass(frozen=True, slots=True)
class Row:
    """One topic x strategy result."""

    site: str
    topic: str
    strategy: str
    measures: OrderMeasures
    half_ratio: float | None
    most_ratio: float | None
    seconds: float
    updates: tuple[int, ...] = ()
    """Pages learned from when each topic update ran (``focused`` only)."""


@dataclass(frozen=True, slots=True)
class Site:
    """A site under test: its seeds, its crawl scope and page budget."""

    name: str
    seeds: tuple[str, ...]
    budget: int
    extra: dict[str, object]


def settings_for(
    site: Site,
    db: Path,
    strategy: str,
    topic: str | None,
    options: dict[str, object],
    max_pages: int,
) -> CrawlSettings:
    return CrawlSettings(
        seeds=site.seeds,
        topics=(topic,) if topic else (),
        strategy=strategy,
        strategy_options=options,  # type: ignore[arg-type]
        max_pages=max_pages,
        concurrency=CONCURRENCY,
        # As many URLs in hand as requests, for every strategy: the default of the scoring
        # strategies, and the rule under which every recorded number was measured (bfs would
        # get 1.5x by default; --pages-in-hand sets it for all).
        pages_in_hand=PAGES_IN_HAND or CONCURRENCY,
        parse_workers=PARSE_WORKERS,
        politeness={"per_host": CONCURRENCY, "delay": 0.0},
        frontier={"kind": "memory"},
        fetch={"timeout": 10.0, "backoff_base": 0.05, "backoff_max": 1.0},
        storage={"url": str(db), "flush_interval": 1.0},
        **site.extra,  # type: ignore[arg-type]
    )


async def crawl(
    site: Site,
    workdir: Path,
    strategy: str,
    topic: str | None,
    options: dict[str, object],
    max_pages: int,
    *,
    links: bool = False,
    relevant: frozenset[str] = frozenset(),
    until_most: bool = False,
) -> tuple[list[tuple[str, str, tuple[str, ...]]], float, tuple[int, ...]]:
    """Run one crawl; return ``(url, final_url, link urls)`` per page in fetch order, seconds,
    and (a focused crawl) the page counts at which its topic vector was updated.

    With a ``relevant`` set the crawl stops early once it has fetched all of it and at least
    ``HARVEST_AT`` pages: every measure is then known (recall stays 1). ``until_most``: it
    stops as soon as it has 90 % of them (F50 and F90 are then known; the grid of
    ``loso.py`` needs no more).
    """
    db = Path(tempfile.mkstemp(suffix=".db", dir=workdir)[1])
    db.unlink()
    started = time.perf_counter()
    async with open_crawl(settings_for(site, db, strategy, topic, options, max_pages)) as crawler:
        if relevant:
            _stop_when_complete(crawler, relevant, until_most=until_most)
        await crawler.run()
    seconds = time.perf_counter() - started
    async with open_storage(str(db)) as storage:
        pages = [
            (p.url, p.final_url, tuple(link.url for link in p.links) if links else ())
            async for p in storage.iter_pages(with_links=links)
        ]
    updates = await topic_updates(db) if strategy == "focused" else ()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    return pages, seconds, updates


async def topic_updates(db: Path) -> tuple[int, ...]:
    """The pages learned from when each topic update ran, read back from the learned state
    the crawl saved in its database (the benchmark's topics are one per crawl)."""
    async with FocusRecords(str(db)) as records:
        saved = await records.latest_state()
    if saved is None:
        return ()
    state = LearnedState.from_json(saved.state)
    return tuple(snapshot.pages for snapshot in state.topics[0].snapshots[1:])


def _stop_when_complete(
    crawler: Crawler, relevant: frozenset[str], *, until_most: bool = False
) -> None:
    # Watches what the crawl stores (the benchmark's only hook into a running crawl).
    storage = crawler.storage
    save_page = storage.save_page
    missing = set(relevant)
    stored = 0
    # As measure.py counts 90 % recall: at least ceil(0.9 * total) relevant pages.
    enough = len(relevant) - math.ceil(0.9 * len(relevant) - 1e-9) if until_most else 0

    async def watched(page: Page, **kwargs: Any) -> None:
        nonlocal stored
        await save_page(page, **kwargs)
        stored += 1
        missing.discard(page.final_url)
        if len(missing) <= enough and (until_most or stored >= HARVEST_AT):
            crawler.stop()

    storage.save_page = watched  # type: ignore[method-assign]


def ensure_docsweb() -> None:
    roots = (JAVA_ROOT, PYTHON_ROOT, DJANGO_ROOT, GIT_ROOT, SQLITE_ROOT, HTTPD_ROOT, DEBIAN_ROOT)
    for root in roots:
        try:
            with urllib.request.urlopen(root, timeout=3) as response:
                if response.status == 200:
                    continue
        except OSError:
            pass
        subprocess.run(["bash", str(DOCSWEB_SH), "start"], check=True)
        return


async def bench_site(
    site: Site,
    make_topics: Callable[[CrawlGraph], list[Topic]],
    workdir: Path,
    strategies: Sequence[str],
    log: Callable[[str], None],
) -> list[Row]:
    """Complete BFS crawl, topics, oracle, then every strategy on every topic."""
    graph, bfs_pages = await site_graph(site, workdir, log)
    rows: list[Row] = []
    for topic in make_topics(graph):
        order = oracle_order(topic_graph(graph, topic), topic.relevant)
        oracle = measure_order(order, topic.relevant)
        rows.append(_row(topic, "oracle", oracle, oracle, 0.0))
        if not topic.seed:
            bfs_order = bfs_pages[: site.budget or None]
            rows.append(_row(topic, "bfs", measure_order(bfs_order, topic.relevant), oracle, 0.0))
        for name in strategies:
            strategy, options = STRATEGIES[name]
            order, took, updates = await crawl(
                topic_site(site, topic),
                workdir,
                strategy,
                topic.keywords,
                options,
                site.budget,
                relevant=topic.relevant,
            )
            measures = measure_order([final for _, final, _ in order], topic.relevant)
            rows.append(_row(topic, name, measures, oracle, took, updates))
            log(
                f"  {topic.id:22} {name:15} {len(order):5} pages {took:5.0f} s  "
                f"F90 {measures.to_most}  oracle {oracle.to_most}"
            )
    return rows


def topic_site(site: Site, topic: Topic) -> Site:
    """The site as a topic's crawls see it: from the topic's own seed when it has one."""
    return dataclasses.replace(site, seeds=(topic.seed,)) if topic.seed else site


def topic_graph(graph: CrawlGraph, topic: Topic) -> CrawlGraph:
    """The crawl graph with the topic's seed as the oracle's start."""
    return dataclasses.replace(graph, seed=topic.seed) if topic.seed else graph


def code_version() -> str:
    """The git tree of ``src/topicrawl`` (with a hash of uncommitted changes to it, if any)."""
    tree = subprocess.run(
        ["git", "rev-parse", "HEAD:src/topicrawl"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return tree[:20] + _uncommitted("src/topicrawl")


def graph_version() -> str:
    """The code a site's complete BFS crawl graph depends on: ``src/topicrawl`` without the
    ``focus`` package (the graph is every page's links, whatever the strategy's scores), so
    a change to the focused strategy does not crawl every site again."""
    listing = subprocess.run(
        ["git", "ls-tree", "HEAD", "src/topicrawl/"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    kept = "".join(line for line in listing.splitlines(keepends=True) if "/focus" not in line)
    digest = hashlib.sha1(kept.encode(), usedforsecurity=False).hexdigest()[:20]
    return "g" + digest + _uncommitted("src/topicrawl", ":(exclude)src/topicrawl/focus")


def _uncommitted(*paths: str) -> str:
    """``+`` and a hash of the uncommitted changes under ``paths`` ("" when there are none)."""
    diff = subprocess.run(
        ["git", "diff", "HEAD", "--", *paths], cwd=REPO, capture_output=True, check=True
    ).stdout
    return "+" + hashlib.sha1(diff, usedforsecurity=False).hexdigest()[:10] if diff else ""


async def site_graph(
    site: Site, workdir: Path, log: Callable[[str], None]
) -> tuple[CrawlGraph, list[str]]:
    """The site's crawl graph and BFS fetch order, from the cache (of the code the graph
    depends on, :func:`graph_version`) or a complete BFS crawl."""
    cache = OUT / "cache" / f"graph-{site.name}-{graph_version()}.json"
    if site.name != "demo" and cache.exists():
        saved = json.loads(cache.read_text(encoding="utf-8"))
        graph = CrawlGraph(
            seed=saved["seed"], links={k: tuple(v) for k, v in saved["links"].items()}
        )
        log(f"{site.name}: crawl graph from {cache.name}, {len(graph.links)} pages")
        return graph, list(saved["order"])
    pages, seconds, _ = await crawl(site, workdir, "bfs", None, {}, 0, links=True)
    graph = CrawlGraph.from_pages(site.seeds[0], pages)
    order = [final for _, final, _ in pages]
    log(
        f"{site.name}: complete BFS crawl {len(pages)} pages, {graph.edges()} links, "
        f"{seconds:.0f} s"
    )
    if site.name != "demo":
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(
            json.dumps({"seed": graph.seed, "links": graph.links, "order": order}),
            encoding="utf-8",
        )
    return graph, order


def _row(
    topic: Topic,
    name: str,
    m: OrderMeasures,
    oracle: OrderMeasures,
    s: float,
    updates: tuple[int, ...] = (),
) -> Row:
    return Row(
        topic.site,
        topic.id,
        name,
        m,
        _ratio(m.to_half, oracle.to_half, m.fetched),
        _ratio(m.to_most, oracle.to_most, m.fetched),
        s,
        updates,
    )


def _ratio(value: int | None, oracle: int | None, fetched: int) -> float | None:
    """Fetches over the oracle's; a negative number -x means "more than x" (not reached)."""
    if oracle is None:
        return None
    if value is None:
        return -(fetched + 1) / oracle
    return value / oracle


@dataclass(frozen=True, slots=True)
class RealSite:
    """A documentation site of the docs web: its complete crawl's seed, its page budget
    (the oracle's F90 of every topic well within it) and how its topics are made."""

    name: str
    root: str
    budget: int
    make_topics: Callable[[CrawlGraph], list[Topic]]

    def site(self, budget: int | None = None) -> Site:
        return Site(self.name, (self.root,), self.budget if budget is None else budget, {})


def java_topics(graph: CrawlGraph) -> list[Topic]:
    reachable = graph.reachable()
    return [
        Topic("java", t.id, t.keywords, frozenset(java_relevant(reachable, t.scope)))
        for t in JAVA_TOPICS
    ]


def python_topics(graph: CrawlGraph) -> list[Topic]:
    return _structured("python", PYTHON_ROOT, PYTHON_TOPICS, python_relevant, graph)


def django_topics(graph: CrawlGraph) -> list[Topic]:
    return _structured("django", DJANGO_ROOT, DJANGO_TOPICS, python_relevant, graph)


def git_topics(graph: CrawlGraph) -> list[Topic]:
    return _structured("git", GIT_ROOT, GIT_TOPICS, git_relevant, graph)


def sqlite_topics(graph: CrawlGraph) -> list[Topic]:
    return _structured("sqlite", SQLITE_ROOT, SQLITE_TOPICS, sqlite_relevant, graph)


def httpd_topics(graph: CrawlGraph) -> list[Topic]:
    return _structured(
        "httpd", HTTPD_ROOT, HTTPD_TOPICS, lambda root, scope: httpd_relevant(root, *scope), graph
    )


def debian_topics(graph: CrawlGraph) -> list[Topic]:
    root = DEBIAN_ROOT.rsplit("/", 2)[0] + "/"
    return _structured(
        "debian", root, DEBIAN_TOPICS, lambda r, scope: handbook_relevant(r, *scope), graph
    )


def _structured(
    site: str,
    root: str,
    topics: Sequence[SiteTopic],
    derive: Callable[[str, tuple[str, ...]], set[str]],
    graph: CrawlGraph,
) -> list[Topic]:
    """Topics whose relevant set ``derive`` reads from the site's own structure; only the pages
    reachable from the topic's seed count."""
    made = []
    for t in topics:
        seed = canonicalize(urljoin(root, t.seed)) if t.seed else ""
        reachable = dataclasses.replace(graph, seed=seed).reachable() if seed else graph.reachable()
        relevant = {canonicalize(u) for u in derive(root, t.scope)} & reachable
        made.append(Topic(site, t.id, t.keywords, frozenset(relevant), seed))
    return made


def demo_server() -> DemoWebServer:
    """The demo web's server, without the robots.txt Crawl-delay of its second host.

    A host that must wait between fetches is ready or not depending on how long the other
    hosts' fetches took, so with the Crawl-delay (0.05 s) the fetch order differed between
    runs of the same code: fetch 169 of one run of demo-astronomy-zh was the waiting host's
    page, in another (that host 6 ms short of its delay) another host's.
    """
    return DemoWebServer(DemoWeb.generate(seed=7, crawl_delay=0.0), slow_delay=0.2)


def demo_topics(web: DemoWeb) -> Callable[[CrawlGraph], list[Topic]]:
    def make(graph: CrawlGraph) -> list[Topic]:
        reachable = graph.reachable()
        topics = []
        for topic in (t for t in TOPICS if t.id in DEMO_TOPIC_IDS):
            for lang in DEMO_LANGS:
                words = [topic.name(lang), *topic.vocabulary(lang).nouns[:6]]
                relevant = frozenset(
                    url
                    for url in reachable
                    if (page := web.find(url)) is not None
                    and page.true_topic == topic.id
                    and page.lang == lang
                )
                topics.append(Topic("demo", f"demo-{topic.id}-{lang}", ", ".join(words), relevant))
        return topics

    return make


REAL_SITES: dict[str, RealSite] = {
    s.name: s
    for s in (
        RealSite("java", JAVA_ROOT, 1500, java_topics),
        RealSite("python", PYTHON_ROOT, 1000, python_topics),
        RealSite("django", DJANGO_ROOT, 700, django_topics),
        RealSite("git", GIT_ROOT, 300, git_topics),
        RealSite("sqlite", SQLITE_ROOT, 800, sqlite_topics),
        RealSite("httpd", HTTPD_ROOT, 1500, httpd_topics),
        RealSite("debian", DEBIAN_ROOT, 400, debian_topics),
    )
}
"""The real sites, in the order they run. Budgets: Java and Python as since session 3; the
others about the site's size (Git, Debian zh-CN: the whole of it) or, for httpd's 2,700
pages in 11 languages, several times the oracle's F90."""
ALL_SITES = (*REAL_SITES, "demo")
QUICK_BUDGET = 400


# --------------------------------------------------------------------------- output


def _fmt_ratio(value: float | None) -> str:
    if value is None:
        return "-"
    return f">{-value:.1f}" if value < 0 else f"{value:.2f}"


def _fmt_count(value: int | None, fetched: int) -> str:
    return str(value) if value is not None else f">{fetched}"


def tables(rows: Sequence[Row], topics: dict[str, Topic], budgets: dict[str, int]) -> str:
    lines: list[str] = []
    for site in dict.fromkeys(r.site for r in rows):
        site_rows = [r for r in rows if r.site == site]
        lines += [f"### {site} (budget {budgets[site] or 'none'} pages)", ""]
        lines.append(
            "| topic (relevant) | strategy | harvest@200 | "
            + " | ".join(f"R@{n}" for n in CHECKPOINTS)
            + " | F50 | F50/oracle | F90 | F90/oracle |"
        )
        lines.append("|---|---|---" + "|---" * len(CHECKPOINTS) + "|---|---|---|---|")
        for r in site_rows:
            m = r.measures
            name = f"{r.topic} ({topics[r.topic].relevant.__len__()})"
            lines.append(
                f"| {name} | {r.strategy} | {m.harvest:.2f} | "
                + " | ".join(f"{x:.2f}" for x in m.recall)
                + f" | {_fmt_count(m.to_half, m.fetched)} | {_fmt_ratio(r.half_ratio)}"
                f" | {_fmt_count(m.to_most, m.fetched)} | {_fmt_ratio(r.most_ratio)} |"
            )
        lines += [
            "",
            f"Geometric mean over the {site} topics of fetches / oracle's "
            "(`>`: a lower bound, some topic not reached within the budget):",
            "",
            "| strategy | F50/oracle | F90/oracle | crawl seconds (sum) |",
            "|---|---|---|---|",
        ]
        for strategy in dict.fromkeys(r.strategy for r in site_rows):
            if strategy == "oracle":
                continue
            chosen = [r for r in site_rows if r.strategy == strategy]
            lines.append(
                f"| {strategy} | {_gm([r.half_ratio for r in chosen])} | "
                f"{_gm([r.most_ratio for r in chosen])} | "
                f"{sum(r.seconds for r in chosen):.0f} |"
            )
        lines.append("")
        lines += update_table(site, site_rows)
    verdicts = [v for _, _, v in _update_verdicts(rows)]
    if verdicts:
        ties = [v for v in verdicts if v.startswith("tie")]
        lines += [
            f"Topic update against the frozen vector over all {len(verdicts)} topics: "
            f"{verdicts.count('win')} wins, {verdicts.count('loss')} losses, {len(ties)} ties "
            f"({sum(1 for v in ties if v != 'tie')} of them with no update before 90 % recall).",
            "",
        ]
    return "\n".join(lines)


def _update_verdicts(rows: Sequence[Row]) -> list[tuple[Row, Row, str]]:
    """Per topic with both focused crawls: (updated, frozen, verdict). A topic
    whose crawl reached 90 % recall before its first update (or never updated) is the frozen
    crawl fetch for fetch, a tie by construction."""
    out = []
    for topic in dict.fromkeys(r.topic for r in rows):
        by_name = {r.strategy: r for r in rows if r.topic == topic}
        updated, frozen = by_name.get("focused"), by_name.get("focused-frozen")
        if updated is None or frozen is None:
            continue
        first = updated.updates[0] if updated.updates else None
        mine, theirs = _f90(updated.measures), _f90(frozen.measures)
        if mine < theirs:
            verdict = "win"
        elif mine > theirs:
            verdict = "loss"
        elif first is None:
            verdict = "tie: no update"
        elif first >= mine:
            verdict = "tie: first update after 90 % recall"
        else:
            verdict = "tie"
        out.append((updated, frozen, verdict))
    return out


def _f90(m: OrderMeasures) -> int:
    return m.to_most if m.to_most is not None else m.fetched + 1


def update_table(site: str, site_rows: Sequence[Row]) -> list[str]:
    """The topic update against the frozen vector, topic by topic, for one site."""
    verdicts = _update_verdicts(site_rows)
    if not verdicts:
        return []
    lines = [
        f"Topic update against the frozen vector ({site}): F90, and when the updates ran "
        "(pages learned from):",
        "",
        "| topic | F90 focused | F90 frozen | updates at page | verdict |",
        "|---|---|---|---|---|",
    ]
    for updated, frozen, verdict in verdicts:
        at = ", ".join(map(str, updated.updates[:6])) + (
            ", ..." if len(updated.updates) > 6 else ""
        )
        lines.append(
            f"| {updated.topic} | {_fmt_count(updated.measures.to_most, updated.measures.fetched)}"
            f" | {_fmt_count(frozen.measures.to_most, frozen.measures.fetched)}"
            f" | {at or 'none'} | {verdict} |"
        )
    return [*lines, ""]


def _gm(ratios: Sequence[float | None]) -> str:
    known = [r for r in ratios if r is not None]
    mean = geometric_mean(abs(r) for r in known)
    if mean is None:
        return "-"
    return (">" if any(r < 0 for r in known) else "") + f"{mean:.2f}"


# --------------------------------------------------------------------------- main


async def main(argv: Sequence[str] | None = None) -> None:
    global CONCURRENCY, PAGES_IN_HAND, PARSE_WORKERS  # noqa: PLW0603 - one setting for every crawl
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sites", default="all", help=f"all, or some of {','.join(ALL_SITES)}")
    parser.add_argument(
        "--budget",
        action="append",
        default=[],
        metavar="SITE=N",
        help="a site's page budget (default: REAL_SITES); repeatable",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"the first topic of each site, focused and shark, at most {QUICK_BUDGET} pages",
    )
    parser.add_argument("--strategies", default="")
    parser.add_argument("--topics", default="", help="only these topic ids (comma-separated)")
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY)
    parser.add_argument(
        "--pages-in-hand", type=int, default=0, help="URLs in hand (default: --concurrency)"
    )
    parser.add_argument(
        "--parse-workers",
        type=int,
        default=PARSE_WORKERS,
        help="parse worker processes, which also count each page's terms (default 0: both on "
        "the event loop; with 1 in flight the crawls are the same either way)",
    )
    parser.add_argument(
        "--first-keyword",
        action="store_true",
        help="every topic is given by its first keyword phrase alone (a sparse topic: what "
        "the topic update can add is then most of what there is to know)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="OPTION=JSON",
        help="a focused-strategy option for focused and focused-frozen, for probes "
        "(e.g. --set block_links=0 --set 'stemmer=\"light\"'); repeatable",
    )
    args = parser.parse_args(argv)
    for assignment in args.set:
        name, _, value = assignment.partition("=")
        for key in ("focused", "focused-frozen"):
            STRATEGIES[key][1][name.strip()] = json.loads(value)
    CONCURRENCY = args.concurrency
    PAGES_IN_HAND = args.pages_in_hand
    PARSE_WORKERS = args.parse_workers
    sites = list(ALL_SITES) if args.sites == "all" else args.sites.split(",")
    budget_of = {name: int(n) for name, _, n in (b.partition("=") for b in args.budget)}
    default_strategies = "focused,shark" if args.quick else ",".join(STRATEGIES)
    strategies = [s for s in (args.strategies or default_strategies).split(",") if s]
    wanted = set(filter(None, args.topics.split(",")))
    OUT.mkdir(exist_ok=True)
    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.0f} s] {message}", file=sys.stderr, flush=True)

    def only(make: Callable[[CrawlGraph], list[Topic]]) -> Callable[[CrawlGraph], list[Topic]]:
        def chosen(graph: CrawlGraph) -> list[Topic]:
            made = [t for t in make(graph) if not wanted or t.id in wanted]
            if args.quick:
                made = made[:1]
            if args.first_keyword:
                made = [dataclasses.replace(t, keywords=t.keywords.split(",")[0]) for t in made]
            return made

        return chosen

    rows: list[Row] = []
    topics: dict[str, Topic] = {}
    budgets: dict[str, int] = {}

    def keep(make: Callable[[CrawlGraph], list[Topic]]) -> Callable[[CrawlGraph], list[Topic]]:
        def wrapped(graph: CrawlGraph) -> list[Topic]:
            made = only(make)(graph)
            topics.update((t.id, t) for t in made)
            return made

        return wrapped

    with tempfile.TemporaryDirectory(prefix="focus-bench-") as tmp:
        workdir = Path(tmp)
        if set(sites) & set(REAL_SITES):
            ensure_docsweb()
        for name in (s for s in REAL_SITES if s in sites):
            real = REAL_SITES[name]
            budget = budget_of.get(name, real.budget)
            if args.quick:
                budget = min(budget, QUICK_BUDGET)
            budgets[name] = budget
            rows += await bench_site(
                real.site(budget), keep(real.make_topics), workdir, strategies, log
            )
        if "demo" in sites:
            with demo_server().run_in_thread() as server:
                bound = server.web
                bases = bound.bases()
                site = Site(
                    "demo",
                    tuple(bases.values()),
                    0,
                    {"scope": {"allowed_domains": tuple(bases), "max_depth": 12}},
                )
                budgets["demo"] = 0
                rows += await bench_site(site, keep(demo_topics(bound)), workdir, strategies, log)
    text = tables(rows, topics, budgets)
    header = (
        f"Run {time.strftime('%Y-%m-%d %H:%M')}, {time.perf_counter() - started:.0f} s, "
        f"{CONCURRENCY} requests in flight, load average {os.getloadavg()[0]:.1f}"
        + (f", focused options {' '.join(args.set)}" if args.set else "")
        + (", every topic by its first keyword alone" if args.first_keyword else "")
        + (", quick mode" if args.quick else "")
        + ".\n\n"
    )
    (OUT / "latest.md").write_text(header + text, encoding="utf-8")
    (OUT / "results.json").write_text(
        json.dumps([{**asdict(r), "measures": asdict(r.measures)} for r in rows], indent=1),
        encoding="utf-8",
    )
    print(header + text)


if __name__ == "__main__":
    asyncio.run(main())
