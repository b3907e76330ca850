"""Relevant sets from each site's own structure (never from a text scorer); see ``topics.py``."""

from __future__ import annotations

import urllib.request
from collections import deque
from collections.abc import Iterable
from urllib.parse import urljoin, urlsplit

from selectolax.lexbor import LexborHTMLParser

__all__ = ["java_relevant", "python_relevant", "toctree_links"]

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
