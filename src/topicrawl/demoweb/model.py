"""The demo web's frozen records: hosts, links, and the resources served at each path."""

from __future__ import annotations

import enum
import posixpath
from dataclasses import dataclass

__all__ = ["DemoHost", "DemoLink", "DemoPage", "HrefStyle", "Kind", "ServedLink"]


class Kind(enum.StrEnum):
    """What a path serves. The first group are HTML documents (status 200, text/html)."""

    HOME = "home"
    SECTION = "section"
    ARTICLE = "article"
    UTILITY = "utility"
    PRIVATE = "private"
    LAB = "lab"
    CALENDAR = "calendar"
    FLAKY = "flaky"  # 503 for the first ``DemoWeb.flaky_failures`` requests, then a document
    SLOW = "slow"  # a document sent after the server's ``slow_delay``
    BROKEN = "broken"  # a document with broken markup and garbage bytes
    HUGE = "huge"  # an HTML document of ``size`` bytes, streamed without Content-Length
    BOMB = "bomb"  # gzip-encoded HTML that inflates to ``size`` bytes
    REDIRECT = "redirect"
    ERROR = "error"  # always 500
    FILE = "file"  # non-HTML bytes (PDF, PNG, ZIP, JSON, octet-stream)
    ROBOTS = "robots"
    SITEMAP = "sitemap"
    FEED = "feed"  # the host's latest articles as RSS 2.0 (/feed.rss) or Atom (/feed.atom)

    @property
    def is_html(self) -> bool:
        """Whether a successful fetch of this kind is a ``200 text/html`` response."""
        return self not in _NOT_HTML


_NOT_HTML = frozenset({Kind.REDIRECT, Kind.ERROR, Kind.FILE, Kind.ROBOTS, Kind.SITEMAP, Kind.FEED})


class HrefStyle(enum.StrEnum):
    """How a link's href is written in the HTML (all resolve to the same target).

    ROOT ``/a/b.html``; RELATIVE ``b.html`` or ``../a/b.html`` (from the linking page);
    DOTDOT ``../../a/b.html`` with one ``..`` more than the page's depth (RFC 3986 drops it);
    ABSOLUTE ``http://127.0.0.2:PORT/a/b.html``; UPPER ``HTTP://127.0.0.2:PORT/a/b.html``.
    A cross-host link in a relative style is written ABSOLUTE.
    """

    ROOT = "root"
    RELATIVE = "relative"
    DOTDOT = "dotdot"
    ABSOLUTE = "absolute"
    UPPER = "upper"


@dataclass(frozen=True, slots=True)
class DemoHost:
    """One site of the demo web, served on its own loopback address.

    ``disallow`` and ``allow`` are the path prefixes of its robots.txt ``User-agent: *``
    group (plain prefixes, no wildcards); ``crawl_delay`` 0 means no Crawl-delay line.
    """

    address: str
    name: str
    lang: str
    disallow: tuple[str, ...] = ("/private/",)
    allow: tuple[str, ...] = ("/private/press-kit.html",)
    crawl_delay: float = 0.0


@dataclass(frozen=True, slots=True)
class DemoLink:
    """A link to ``host`` + ``target`` (a root-relative path, percent-encoded or not).

    ``block`` names the DOM block the anchor sits in (nav, related, body, footer, ...);
    ``paragraph`` is the body paragraph an in-text link sits in (-1 elsewhere). ``query`` and
    ``fragment`` are appended to the href (tracking parameters, ``#comments``); the server
    ignores both, so they name the same resource as the bare target.
    """

    host: str
    target: str
    anchor: str
    block: str
    style: HrefStyle = HrefStyle.ROOT
    query: str = ""
    fragment: str = ""
    nofollow: bool = False
    paragraph: int = -1

    def href(self, *, page: DemoPage, port: int) -> str:
        """The href attribute as written in ``page``'s HTML when served on ``port``."""
        suffix = (f"?{self.query}" if self.query else "") + (
            f"#{self.fragment}" if self.fragment else ""
        )
        if self.style is HrefStyle.UPPER:
            return f"HTTP://{self.host}:{port}{self.target}{suffix}"
        if self.style is HrefStyle.ABSOLUTE or self.host != page.host:
            return f"http://{self.host}:{port}{self.target}{suffix}"
        page_dir = posixpath.dirname(page.path.split("?", 1)[0]) or "/"
        if self.style is HrefStyle.RELATIVE:
            relative = posixpath.relpath(self.target, page_dir)
            if self.target.endswith("/") and not relative.endswith("/"):
                relative += "/"
            return relative + suffix
        if self.style is HrefStyle.DOTDOT:
            depth = page_dir.strip("/").count("/") + (1 if page_dir != "/" else 0)
            return "../" * (depth + 1) + self.target.lstrip("/") + suffix
        return self.target + suffix


@dataclass(frozen=True, slots=True)
class ServedLink:
    """A link as a page serves it: the raw ``href`` and the absolute ``url`` it resolves to."""

    href: str
    url: str
    anchor: str
    block: str
    nofollow: bool


@dataclass(frozen=True, slots=True)
class DemoPage:
    """Whatever is served at ``host`` + ``path``: a document, a redirect, a file or an error.

    ``true_topic`` is the topic id the page is about, or None (hubs, utility pages, files).
    ``paragraphs`` hold sentences; ``links`` every outgoing link in document order.
    ``encoding`` is the body's real encoding; ``header_charset`` and ``meta_charset`` what
    the Content-Type header and ``<meta charset>`` claim (None: not declared). ``redirect``
    is the Location of a REDIRECT; ``size`` the body size of HUGE and BOMB (after
    decompression); ``body`` the bytes of a FILE; ``duplicate_of`` the path whose text this
    page repeats.
    """

    host: str
    path: str
    kind: Kind
    title: str = ""
    lang: str | None = None
    true_topic: str | None = None
    paragraphs: tuple[tuple[str, ...], ...] = ()
    links: tuple[DemoLink, ...] = ()
    status: int = 200
    content_type: str = "text/html"
    encoding: str = "utf-8"
    header_charset: str | None = "utf-8"
    meta_charset: str | None = "utf-8"
    noindex: bool = False
    nofollow: bool = False
    redirect: DemoLink | None = None
    size: int = 0
    body: bytes = b""
    duplicate_of: str | None = None

    @property
    def is_document(self) -> bool:
        """True when a successful fetch is a 200 text/html page (with links to follow)."""
        return self.kind.is_html

    @property
    def text(self) -> str:
        """The visible text: title, then paragraphs (a parser's text will be close to this)."""
        sep = "" if self.lang == "zh" else " "
        body = "\n\n".join(sep.join(sentences) for sentences in self.paragraphs)
        return f"{self.title}\n\n{body}" if body else self.title
