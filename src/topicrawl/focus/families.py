"""What the crawl learns from URLs: how relevant the pages of each URL family were (a link's
target is likely to be like its namesakes already crawled), and the links that still wait,
so that a topic update can score them again.

Nothing here names a site: a family is the pages of one URL directory whose file names start
with the same word (``asyncio.html``, ``asyncio-task.html``, ``asyncio-stream.html``;
``xml.dom.html``, ``xml.sax.html``), and the numbered pages of one directory are one family
(``/cooking/1022.html``, ``/cooking/1054.html``: a site that numbers its articles groups them by
section).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from urllib.parse import urlsplit

from topicrawl.core.models import Request

__all__ = [
    "URL_MEMO",
    "URL_MEMO_CHARS",
    "UrlDirectories",
    "UrlFamilies",
    "WaitingLinks",
    "directory_of",
    "family_of",
]

_MAX_URL_PATH = 500  # characters of a URL path looked at (hostile URLs can be long)
URL_MEMO = 8_192
"""How many URLs' family, directory and words are remembered (each, the most recently used):
a site's navigation links come back on every page (3,000 Java docs pages: 115,000 links to
8,330 URLs). URLs of more than :data:`URL_MEMO_CHARS` characters are not remembered."""
URL_MEMO_CHARS = 512
_NAME_WORD = re.compile(r"[^\W_]+")


def family_of(url: str) -> str:
    """The host, the directory and the first word of the file name, lower-cased, ``#`` for a
    word of digits: ``http://H/lib/asyncio-task.html`` -> ``"h/lib/asyncio"``,
    ``http://h/cooking/1022.html`` -> ``"h/cooking/#"`` (``""`` for a URL that names no
    file)."""
    return _family_of(url) if len(url) <= URL_MEMO_CHARS else _family_of.__wrapped__(url)


@functools.lru_cache(maxsize=URL_MEMO)
def _family_of(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    path = parts.path[:_MAX_URL_PATH]
    cut = path.rfind("/") + 1
    word = _NAME_WORD.search(path[cut:])
    if word is None:
        return ""
    name = word.group().lower()
    if name.isdigit():
        name = "#"  # numbered pages (``1022.html``, ``2024``) are one family
    return f"{parts.netloc.lower()}{path[:cut]}{name}"


class _UrlTally:
    """The crawled pages' summed relevance and count per URL group (``group`` of the URL),
    and over the whole crawl. At most ``capacity`` groups are counted (past it, new ones are
    not); ``prior`` is the pseudo-pages by which a group's mean is shrunk."""

    def __init__(self, group: Callable[[str], str], *, prior: float, capacity: int) -> None:
        if prior <= 0.0 or capacity < 0:
            raise ValueError("prior must be > 0 and capacity >= 0")
        self._group = group
        self._prior = prior
        self._capacity = capacity
        self._groups: dict[str, tuple[float, int]] = {}  # summed relevance, pages
        self._similarity = 0.0  # over every crawled page
        self._pages = 0
        self._best = 0.0

    def observe(self, url: str, similarity: float) -> None:
        """Count a crawled page (``url`` its final address) and its relevance."""
        self._best = max(self._best, similarity)
        self._similarity += similarity
        self._pages += 1
        group = self._group(url)
        if not group:
            return
        held = self._groups.get(group)
        if held is None:
            if len(self._groups) >= self._capacity:
                return
            held = (0.0, 0)
        self._groups[group] = (held[0] + similarity, held[1] + 1)

    def _held(self, url: str) -> tuple[float, int] | None:
        return self._groups.get(self._group(url))


class UrlFamilies(_UrlTally):
    """The yield of each URL family: how much more relevant its crawled pages were than the
    crawl's pages on average, shrunk by ``prior`` pseudo-pages of average relevance (so one
    lucky page says little), over the best page relevance seen, in [0, 1]:
    ``n * (mean_family - mean_crawl) / (n + prior) / best``. A family with no crawled page,
    or no better than the crawl's average, yields 0.

    At most ``capacity`` families are counted (past it, new ones are not).
    """

    def __init__(self, *, prior: float, capacity: int = 200_000) -> None:
        super().__init__(family_of, prior=prior, capacity=capacity)

    def score(self, url: str) -> float:
        """The yield of ``url``'s family."""
        held = self._held(url)
        if held is None or self._best <= 0.0:
            return 0.0
        total, pages = held
        lift = (total - pages * self._similarity / self._pages) / (pages + self._prior)
        return min(max(lift, 0.0) / self._best, 1.0)


def directory_of(url: str) -> str:
    """The host and the directory, the host lower-cased: ``http://H/lib/os.html`` ->
    ``"h/lib/"`` (``""`` for a URL that cannot be split)."""
    return _directory_of(url) if len(url) <= URL_MEMO_CHARS else _directory_of.__wrapped__(url)


@functools.lru_cache(maxsize=URL_MEMO)
def _directory_of(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    path = parts.path[:_MAX_URL_PATH]
    return f"{parts.netloc.lower()}{path[: path.rfind('/') + 1] or '/'}"


class UrlDirectories(_UrlTally):
    """How relevant the crawled pages of each URL directory were, against the crawl's average:
    what a link into a directory inherits from its parent is scaled by

        min(1, shrunk / mean),  shrunk = (sum_d + prior * mean) / (n_d + prior)

    where ``sum_d`` and ``n_d`` are the directory's crawled pages' summed relevance and count,
    and ``mean`` the crawl's mean relevance: the directory's mean, shrunk toward the crawl's by
    ``prior`` pseudo-pages (one off-topic page says little). A directory no worse than the
    average, or with no crawled page, keeps the full inherited score. So a parent's relevance
    stops vouching for links into a directory its namesakes have shown to be off topic: the
    Java docs' ``java/lang/`` pages (``Object``, ``String``), linked from every class's
    method signatures, inherit from every relevant class page they are linked from.

    At most ``capacity`` directories are counted (past it, new ones are not).
    """

    def __init__(self, *, prior: float, capacity: int = 200_000) -> None:
        super().__init__(directory_of, prior=prior, capacity=capacity)

    def factor(self, url: str) -> float:
        """The share of its inherited score a link to ``url`` keeps, in (0, 1]."""
        held = self._held(url)
        if held is None or self._similarity <= 0.0:
            return 1.0
        mean = self._similarity / self._pages
        total, pages = held
        shrunk = (total + self._prior * mean) / (pages + self._prior)
        return min(shrunk / mean, 1.0)


class WaitingLinks:
    """The links a crawl has queued or held back and not crawled yet, each at its best score
    so far (at most ``capacity``; past it, new links are not remembered)."""

    def __init__(self, *, capacity: int = 200_000) -> None:
        if capacity < 0:
            raise ValueError("capacity must be >= 0")
        self._capacity = capacity
        self._links: dict[str, Request] = {}

    def __len__(self) -> int:
        return len(self._links)

    def __iter__(self) -> Iterator[Request]:
        """The waiting links, oldest first (a copy: the caller may :meth:`wait` meanwhile)."""
        return iter(list(self._links.values()))

    def wait(self, request: Request) -> None:
        """Remember ``request``, unless the same URL already waits at a score as high."""
        held = self._links.get(request.url)
        if held is None and len(self._links) >= self._capacity:
            return
        if held is None or request.score > held.score:
            self._links[request.url] = request

    def get(self, url: str) -> Request | None:
        """The waiting link to ``url`` at its best score, if it waits."""
        return self._links.get(url)

    def set(self, request: Request) -> None:
        """A waiting link is worth ``request.score`` now, up or down (after a topic update);
        a link not waiting is left alone."""
        if request.url in self._links:
            self._links[request.url] = request

    def lower(self, url: str, score: float) -> None:
        """A waiting link is worth ``score`` now, as a link of the site's template (a block
        recognised as template after it queued the link): it is re-scored as such."""
        held = self._links.get(url)
        if held is not None and score < held.score:
            reasons = {**held.reasons, "anchor": 0.0, "template": 1.0}
            self._links[url] = replace(held, score=score, reasons=reasons)

    def crawled(self, url: str) -> None:
        """Forget a link once its page is crawled."""
        self._links.pop(url, None)
