"""Ground truth: the exact pages a correct BFS crawler reaches on a demo web, and harvest rate."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from topicrawl.core.config import CrawlSettings
from topicrawl.core.errors import ConfigError
from topicrawl.demoweb.graph import DemoWeb
from topicrawl.demoweb.model import DemoPage, Kind

__all__ = ["CrawlRules", "expected_crawl", "fetch_outcome", "harvest_rate"]


@dataclass(frozen=True, slots=True)
class CrawlRules:
    """The crawl rules the ground truth is computed under (same meaning as ``CrawlSettings``).

    ``hosts`` are the host addresses the crawl may fetch from (None: every host of the web);
    ``max_body_bytes`` must be at least 100 000 (ordinary pages are assumed to fit).
    """

    max_depth: int = 50
    obey_robots: bool = True
    follow_nofollow: bool = False
    hosts: frozenset[str] | None = None
    max_redirects: int = 5
    max_url_length: int = 2048
    retries: int = 2
    max_body_bytes: int = 5_000_000

    def __post_init__(self) -> None:
        if self.max_depth < 0 or self.max_redirects < 0 or self.retries < 0:
            raise ConfigError("max_depth, max_redirects and retries must not be negative")
        if self.max_body_bytes < 100_000:
            raise ConfigError("max_body_bytes under 100000 would cut ordinary demo pages")

    @classmethod
    def from_settings(
        cls, settings: CrawlSettings, *, hosts: Iterable[str] | None = None
    ) -> CrawlRules:
        """The rules a crawl with these settings follows, on ``hosts`` (None: all)."""
        return cls(
            max_depth=settings.scope.max_depth,
            obey_robots=settings.politeness.obey_robots,
            follow_nofollow=settings.scope.follow_nofollow,
            hosts=None if hosts is None else frozenset(hosts),
            max_redirects=settings.fetch.max_redirects,
            max_url_length=settings.fetch.max_url_length,
            retries=settings.fetch.retries,
            max_body_bytes=settings.fetch.max_body_bytes,
        )


def _permitted(web: DemoWeb, url: str, rules: CrawlRules) -> bool:
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    if rules.hosts is not None:
        in_scope = host in rules.hosts
    else:
        in_scope = any(known.address == host for known in web.hosts)
    return (
        in_scope
        and len(url) <= rules.max_url_length
        and not (rules.obey_robots and web.robots_disallowed(url))
    )


def fetch_outcome(web: DemoWeb, url: str, rules: CrawlRules) -> DemoPage | None:
    """The page a correct fetcher ends on when it fetches ``url``, or None when it gets none.

    Every URL of a redirect chain (the first included) must be in scope, not longer than
    ``max_url_length`` (fragment removed) and, when robots are obeyed, allowed. More than
    ``max_redirects`` hops, or a URL met twice in one chain, gives None. The end of the chain
    counts only if it is a document (200 text/html): 404s, the 500, files, robots.txt and
    sitemaps do not; FLAKY counts when ``retries >= web.flaky_failures``; HUGE and BOMB when
    their size fits ``max_body_bytes``; SLOW counts (the fetch timeout is assumed longer
    than the server's ``slow_delay``).
    """
    current = url.split("#", 1)[0]
    chain: set[str] = set()
    while True:
        if not _permitted(web, current, rules):
            return None
        page = web.find(current)
        if page is None:
            return None
        if page.kind is not Kind.REDIRECT or page.redirect is None:
            break
        here = web.url_of(page)
        if here in chain or len(chain) >= rules.max_redirects:
            return None
        chain.add(here)
        current = urljoin(current, page.redirect.href(page=page, port=web.port)).split("#", 1)[0]
    if not page.is_document:
        return None
    if page.kind is Kind.FLAKY and rules.retries < web.flaky_failures:
        return None
    if page.kind in {Kind.HUGE, Kind.BOMB} and page.size > rules.max_body_bytes:
        return None
    return page


def expected_crawl(
    web: DemoWeb, seeds: Iterable[str], rules: CrawlRules | None = None
) -> dict[str, int]:
    """Every page a correct breadth-first crawl from ``seeds`` reaches, with its depth.

    Keys are the pages' canonical URLs (``web.url_of``; map a crawled URL with
    ``web.resolve``). The rules, exactly:

    * Seeds have depth 0; a link found on a page of depth d has depth d + 1; a URL deeper
      than ``max_depth`` is not fetched. A redirect does not add depth: the page it ends on
      gets the depth of the URL that was fetched. Each page keeps its smallest depth.
    * Fetching a URL follows :func:`fetch_outcome` (scope, length, robots on every hop,
      redirect limits, which responses are pages).
    * Links are taken from a reached page in document order, made absolute against the page
      URL (``web.links_of``); a link with ``rel=nofollow``, and every link of a page whose
      ``<meta name="robots">`` says nofollow, is skipped unless ``follow_nofollow``.
    * Query strings and fragments never make a new page (the server ignores them), so
      tracking-parameter and ``#fragment`` variants reach the same page; a different path
      with the same text (the archive duplicate) is a page of its own. Calendar months are
      pages, so the trap contributes every month within ``max_depth`` links of its entry.
    * A noindex page is reached (it is fetched); sitemaps and robots.txt are not followed.
    """
    rules = rules or CrawlRules()
    reached: dict[str, int] = {}
    tried: set[str] = set()
    queue = deque((seed, 0) for seed in seeds)
    while queue:
        url, depth = queue.popleft()
        bare = url.split("#", 1)[0]
        if bare in tried:
            continue
        tried.add(bare)
        page = fetch_outcome(web, bare, rules)
        if page is None:
            continue
        page_url = web.url_of(page)
        if page_url in reached:
            continue
        reached[page_url] = depth
        if depth >= rules.max_depth or (page.nofollow and not rules.follow_nofollow):
            continue
        queue.extend(
            (link.url, depth + 1)
            for link in web.served_links(page_url)
            if rules.follow_nofollow or not link.nofollow
        )
    return reached


def harvest_rate(web: DemoWeb, urls: Iterable[str], topics: Iterable[str]) -> float | None:
    """The share of ``urls`` whose page is truly about one of ``topics`` (None if no URLs).

    Raises:
        KeyError: a URL serves nothing on this web.
    """
    wanted = set(topics)
    pages = [web.page(url) for url in urls]
    if not pages:
        return None
    return sum(page.true_topic in wanted for page in pages) / len(pages)
