"""Relevant sets from each site's own structure (never from a text scorer); see ``topics.py``."""

from __future__ import annotations

import urllib.request
from collections import deque
from collections.abc import Iterable
from urllib.parse import urljoin, urlsplit

from selectolax.lexbor import LexborHTMLParser

__all__ = [
    "git_relevant",
    "handbook_relevant",
    "httpd_relevant",
    "java_relevant",
    "python_relevant",
    "sqlite_relevant",
    "toctree_links",
]

_JAVA_GENERATED = ("/class-use/", "/package-tree.html", "/package-use.html")
_MAX_TOC_PAGES = 2000


def java_relevant(pages: Iterable[str], scope: Iterable[str]) -> set[str]:
    """The pages of a group of Java packages or modules.

    ``scope`` holds paths under the site root: a package directory (``java.base/java/time``,
    its subpackages included) or a module directory (``java.sql``, the whole module). The
    generated cross-reference pages are left out.
    """
    prefixes = tuple(f"/{path.strip('/')}/" for path in scope)
    chosen = set()
    for url in pages:
        path = urlsplit(url).path
        if path.startswith(prefixes) and not any(part in path for part in _JAVA_GENERATED):
            chosen.add(url)
    return chosen


def toctree_links(html: str, base: str) -> list[str]:
    """The pages a Sphinx page's tables of contents (``div.toctree-wrapper``) link to."""
    doc = LexborHTMLParser(html)
    found: dict[str, None] = {}
    for anchor in doc.css("div.toctree-wrapper a.reference.internal"):
        href = anchor.attributes.get("href")
        if href:
            found[urljoin(base, href).split("#", 1)[0]] = None
    return list(found)


def python_relevant(root: str, chapters: Iterable[str], *, timeout: float = 10.0) -> set[str]:
    """A documentation chapter: its page and every page its tables of contents list,
    followed recursively within the site (fetched over HTTP from ``root``)."""
    site = urlsplit(root).netloc
    queue = deque(urljoin(root, chapter) for chapter in chapters)
    chosen: set[str] = set()
    while queue and len(chosen) < _MAX_TOC_PAGES:
        url = queue.popleft()
        if url in chosen or urlsplit(url).netloc != site:
            continue
        chosen.add(url)
        with urllib.request.urlopen(url, timeout=timeout) as response:
            html = response.read().decode("utf-8", errors="replace")
        queue.extend(link for link in toctree_links(html, url) if link not in chosen)
    return chosen


def _fetch(url: str, timeout: float) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        body: bytes = response.read()
    return body.decode("utf-8", errors="replace")


def _local(base: str, hrefs: Iterable[str]) -> set[str]:
    """The hrefs as absolute page URLs on ``base``'s host, fragments dropped."""
    site = urlsplit(base).netloc
    out = set()
    for href in hrefs:
        url = urljoin(base, href).split("#", 1)[0]
        if urlsplit(url).netloc == site and url.endswith(".html"):
            out.add(url)
    return out


def git_relevant(root: str, sections: Iterable[str], *, timeout: float = 10.0) -> set[str]:
    """A command category of ``git.html``: the pages its section (``div.sect1`` or
    ``div.sect2`` whose heading has the given id, e.g. ``_syncing_repositories``) lists."""
    base = urljoin(root, "git.html")
    doc = LexborHTMLParser(_fetch(base, timeout))
    chosen: set[str] = set()
    for section in sections:
        for block in doc.css("div.sect1, div.sect2"):
            heading = block.css_first("h2, h3")
            if heading is not None and heading.attributes.get("id") == section:
                hrefs = [a.attributes.get("href") or "" for a in block.css("a")]
                chosen |= _local(base, hrefs)
    chosen.discard(base)
    return chosen


def sqlite_relevant(root: str, lists: Iterable[str], *, timeout: float = 10.0) -> set[str]:
    """Pages a list of the SQLite docs names: ``lang.html`` (the SQL statements and clauses
    its list links to, and the page itself) or the title of a collapsible list of
    ``docs.html`` (``Extensions``)."""
    chosen: set[str] = set()
    docs: LexborHTMLParser | None = None
    for name in lists:
        if name.endswith(".html"):
            base = urljoin(root, name)
            page = LexborHTMLParser(_fetch(base, timeout))
            hrefs = [a.attributes.get("href") or "" for a in page.css("div.columns li a")]
            chosen |= _local(base, hrefs) | {base}
            continue
        base = urljoin(root, "docs.html")
        docs = docs or LexborHTMLParser(_fetch(base, timeout))
        for item in docs.css("ul.showhide > li"):
            title = item.css_first("a")
            if title is not None and title.text(strip=True).endswith(name):
                hrefs = [a.attributes.get("href") or "" for a in item.css("ul a.sh_link")]
                chosen |= _local(base, hrefs)
    return chosen


def httpd_relevant(root: str, lang: str, section: str, *, timeout: float = 10.0) -> set[str]:
    """A section of the httpd manual's site map in one language (``zh-cn``, ``vhosts``): the
    pages under that language's directory that the section lists."""
    base = urljoin(root, f"{lang}/sitemap.html")
    doc = LexborHTMLParser(_fetch(base, timeout))
    prefix = urljoin(root, f"{lang}/")
    for block in doc.css("div.section"):
        anchor = block.css_first("h2 a")
        if anchor is not None and anchor.attributes.get("id") == section:
            hrefs = [a.attributes.get("href") or "" for a in block.css("li a")]
            return {url for url in _local(base, hrefs) if url.startswith(prefix)}
    return set()


def handbook_relevant(root: str, lang: str, chapter: str, *, timeout: float = 10.0) -> set[str]:
    """A chapter of the Debian Administrator's Handbook in one language (``zh-CN``,
    ``apt.html``): the chapter page and every page its entry of the book's table of contents
    (``index.html``) lists."""
    base = urljoin(root, f"{lang}/index.html")
    doc = LexborHTMLParser(_fetch(base, timeout))
    for title in doc.css("div.toc > dl.toc > dt"):
        anchor = title.css_first("span.chapter a, span.appendix a")
        if anchor is None or anchor.attributes.get("href") != chapter:
            continue
        entry = title.next
        while entry is not None and entry.tag not in ("dd", "dt"):
            entry = entry.next
        hrefs = [chapter]
        if entry is not None and entry.tag == "dd":
            hrefs += [a.attributes.get("href") or "" for a in entry.css("a")]
        return _local(base, hrefs)
    return set()
