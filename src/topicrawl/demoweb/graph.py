"""The demo web as pure data: hosts, the resource at every path, and the ground-truth lookups."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from urllib.parse import quote, unquote, urljoin, urlsplit

from topicrawl.demoweb.model import DemoHost, DemoLink, DemoPage, HrefStyle, Kind, ServedLink

__all__ = ["CALENDAR_ENTRY", "DemoWeb", "normalise_path"]

CALENDAR_ENTRY = "/calendar/2024/01"
_CALENDAR = re.compile(r"/calendar/(\d{4})/(\d{2})")
_SEGMENT_SAFE = "!$&'()*+,;=:@-._~"
_MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip


def normalise_path(path: str) -> str:
    """``path`` with percent-encoding normalised and dot segments removed (RFC 3986 6.2.2).

    Each segment is decoded and re-encoded (UTF-8, upper-case hex, unreserved characters
    plain; an encoded ``/`` stays encoded), so ``/lab/天文.html`` and
    ``/lab/%e5%a4%a9%e6%96%87.html`` name the same resource; an empty path is ``/``.
    """
    segments = [quote(unquote(segment), safe=_SEGMENT_SAFE) for segment in path.split("/")]
    kept: list[str] = []
    for segment in segments[1:] if path.startswith("/") else segments:
        if segment == "..":
            if kept:
                kept.pop()
        elif segment != ".":
            kept.append(segment)
    if segments[-1] in {".", ".."}:
        kept.append("")
    return "/" + "/".join(kept)


@dataclass(frozen=True)
class DemoWeb:
    """A generated (or hand-made) set of hosts and the resources they serve.

    Every host serves on the same ``port``; 0 means "not bound yet": the URL-producing
    methods then raise ValueError. ``DemoWebServer`` hands out the bound copy (``at_port``).
    The server ignores query strings and fragments, so ``/a.html?utm_source=x#top`` is the
    resource at ``/a.html``. ``trap_host`` (if set) serves an endless month calendar under
    ``/calendar/YYYY/MM``; ``flaky_failures`` is how many 503s each FLAKY path answers (per
    server lifetime) before it answers 200.
    """

    hosts: tuple[DemoHost, ...]
    pages: tuple[DemoPage, ...]
    port: int = 0
    seed: int = 0
    flaky_failures: int = 2
    trap_host: str | None = None
    _index: Mapping[tuple[str, str], DemoPage] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )
    _hosts: Mapping[str, DemoHost] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        index: dict[tuple[str, str], DemoPage] = {}
        for page in self.pages:
            key = (page.host, normalise_path(page.path))
            if key in index:
                raise ValueError(f"two resources at {page.host}{page.path}")
            index[key] = page
        object.__setattr__(self, "_index", MappingProxyType(index))
        object.__setattr__(self, "_hosts", MappingProxyType({h.address: h for h in self.hosts}))

    @classmethod
    def generate(
        cls,
        *,
        seed: int = 7,
        hosts: int = 6,
        pages_per_host: int = 60,
        base_address: str = "127.0.0.2",
        crawl_delay: float = 0.05,
        flaky_failures: int = 2,
        huge_bytes: int = 6_000_000,
        bomb_bytes: int = 128 * 1024 * 1024,
    ) -> DemoWeb:
        """Build a realistic demo web, identical for identical arguments.

        Args:
            seed: drives every random choice (text, links, link styles).
            hosts: number of sites, on consecutive loopback addresses from ``base_address``;
                the first half are mainly English, the rest mainly Chinese.
            pages_per_host: articles per host (home, section, utility, private and ad pages
                come on top; the first host also serves the "lab" of hostile resources).
            crawl_delay: the robots.txt Crawl-delay of the second host (0: none).
            flaky_failures: 503s that ``/lab/flaky.html`` answers before it answers 200.
            huge_bytes: size of ``/lab/huge.html``; bomb_bytes: inflated size of the gzip bomb.

        Raises:
            ConfigError: an argument is out of range.
        """
        from topicrawl.demoweb.generate import build  # noqa: PLC0415 - generate imports us

        built_hosts, pages = build(
            seed=seed,
            hosts=hosts,
            pages_per_host=pages_per_host,
            base_address=base_address,
            crawl_delay=crawl_delay,
            huge_bytes=huge_bytes,
            bomb_bytes=bomb_bytes,
        )
        return cls(
            hosts=built_hosts,
            pages=pages,
            seed=seed,
            flaky_failures=flaky_failures,
            trap_host=built_hosts[0].address,
        )

    def at_port(self, port: int) -> DemoWeb:
        """The same web, with URLs on ``port``."""
        return dataclasses.replace(self, port=port)

    # -- URLs -------------------------------------------------------------------------------

    def base_url(self, host: str) -> str:
        """``http://HOST:PORT/`` for a host address."""
        if self.port <= 0:
            raise ValueError("the demo web is not bound to a port: use at_port() or the server's")
        return f"http://{host}:{self.port}/"

    def bases(self) -> dict[str, str]:
        """Base URL of every host, by address, in host order."""
        return {host.address: self.base_url(host.address) for host in self.hosts}

    def url_of(self, page: DemoPage) -> str:
        """The canonical URL of a resource: ``http://HOST:PORT`` + its normalised path."""
        return self.base_url(page.host)[:-1] + normalise_path(page.path)

    def urls(self, *, documents_only: bool = False) -> list[str]:
        """URLs of every stored resource (calendar months beyond the first are made on demand)."""
        return [self.url_of(page) for page in self.pages if page.is_document or not documents_only]

    def host(self, address: str) -> DemoHost:
        """The host with this address.

        Raises:
            KeyError: not a host of this web.
        """
        return self._hosts[address]

    # -- lookups ----------------------------------------------------------------------------

    def lookup(self, host: str, path: str) -> DemoPage | None:
        """The resource ``host`` serves at ``path`` (query and fragment ignored), or None (404).

        Besides stored resources this answers calendar months on the trap host and a 301 from
        ``/section`` to ``/section/`` when only the latter exists.
        """
        path = normalise_path(path.split("#", 1)[0].split("?", 1)[0])
        page = self._index.get((host, path))
        if page is not None:
            return page
        if host == self.trap_host and (match := _CALENDAR.fullmatch(path)):
            year, month = int(match[1]), int(match[2])
            if 1000 <= year <= 9999 and 1 <= month <= 12:
                return _calendar_page(host, year, month)
        if not path.endswith("/") and (host, path + "/") in self._index:
            target = DemoLink(host=host, target=path + "/", anchor="", block="redirect")
            return DemoPage(host=host, path=path, kind=Kind.REDIRECT, status=301, redirect=target)
        return None

    def find(self, url: str) -> DemoPage | None:
        """The resource served at ``url``, or None when the URL is not on this web or is a 404.

        Scheme and host case, dot segments, percent-encoding case, query and fragment do not
        matter; the port must be this web's.
        """
        try:
            parts = urlsplit(url.strip())
            port = parts.port
        except ValueError:
            return None
        host = parts.hostname or ""
        if parts.scheme.lower() != "http" or port != self.port or host not in self._hosts:
            return None
        return self.lookup(host, parts.path or "/")

    def page(self, url: str) -> DemoPage:
        """Like :meth:`find`, but a URL that serves nothing is an error.

        Raises:
            KeyError: the URL is not on this web, or answers 404.
        """
        page = self.find(url)
        if page is None:
            raise KeyError(url)
        return page

    def resolve(self, url: str) -> str | None:
        """The canonical URL of the resource at ``url`` (no redirects followed), or None."""
        page = self.find(url)
        return None if page is None else self.url_of(page)

    def true_topic(self, url: str) -> str | None:
        """The topic id the resource at ``url`` is about; None for hubs, utility pages, files.

        Raises:
            KeyError: the URL serves nothing on this web.
        """
        return self.page(url).true_topic

    def served_links(self, url: str) -> list[ServedLink]:
        """Every link of the resource at ``url`` in document order, as served."""
        page = self.page(url)
        base = self.url_of(page)
        served = []
        for link in page.links:
            href = link.href(page=page, port=self.port)
            absolute = href if "://" in href else urljoin(base, href)
            served.append(ServedLink(href, absolute, link.anchor, link.block, link.nofollow))
        return served

    def links_of(self, url: str) -> list[str]:
        """The absolute hrefs of the resource at ``url``, before canonicalisation.

        Relative hrefs are joined to the page's canonical URL (``urljoin``: dot segments go,
        query and fragment stay); absolute hrefs are returned as written (``HTTP://`` too).
        """
        return [link.url for link in self.served_links(url)]

    def robots_disallowed(self, url: str) -> bool:
        """Whether the host's robots.txt forbids ``url`` to an ordinary crawler (``*`` group).

        The longest matching Allow/Disallow prefix wins; on a tie Allow wins. URLs outside
        this web are never disallowed.
        """
        try:
            parts = urlsplit(url.strip())
        except ValueError:
            return False
        host = self._hosts.get(parts.hostname or "")
        if host is None:
            return False
        path = normalise_path(parts.path or "/")
        if parts.query:
            path += "?" + parts.query
        if path == "/robots.txt":
            return False
        verdicts = [(len(p), True) for p in host.allow if path.startswith(p)]
        verdicts += [(len(p), False) for p in host.disallow if p and path.startswith(p)]
        return bool(verdicts) and not max(verdicts)[1]


def _calendar_page(host: str, year: int, month: int) -> DemoPage:
    """One month of the endless events calendar: links to the previous and next month."""
    links = [DemoLink(host=host, target="/", anchor="Home", block="nav")]
    previous = (year, month - 1) if month > 1 else (year - 1, 12)
    following = (year, month + 1) if month < 12 else (year + 1, 1)
    for (y, m), label in ((previous, "Previous month"), (following, "Next month")):
        if 1000 <= y <= 9999:
            target = f"/calendar/{y:04d}/{m:02d}"
            style = HrefStyle.RELATIVE if label.startswith("Next") else HrefStyle.ROOT
            links.append(
                DemoLink(host=host, target=target, anchor=label, block="pager", style=style)
            )
    name = f"{_MONTHS[month - 1]} {year}"
    return DemoPage(
        host=host,
        path=f"/calendar/{year:04d}/{month:02d}",
        kind=Kind.CALENDAR,
        title=f"Events calendar: {name}",
        lang="en",
        paragraphs=((f"No events are listed for {name} yet.", "Check the next month."),),
        links=tuple(links),
    )
