"""Role anchors: link texts that name a link's role on the page, not its target.

A site's generated pages carry navigation whose anchors are the same on every page while
their targets change with the page: Javadoc's "Use", "Tree", "Package", "Class"; Sphinx's
"next" and "previous"; "up", "下一页". Such a link's URL is named after the page it sits on
(``java/nio/file/class-use/Path.html`` from ``java/nio/file/Path.html``), so its URL words
repeat the parent's topic whatever the target is: a cross-reference index, a tree, the
next chapter. Nothing here names a site or a language: an anchor is a role anchor of a host
once it was seen on ``min_pages`` pages of that host, pointing to ``min_pages`` different
URLs. A menu link (the same anchor, the same target on every page: "Download", "Contents")
is not one.

Pure: no I/O; memory bounded (anchors per host, targets per anchor).
"""

from __future__ import annotations

from collections.abc import Iterable

from topicrawl.core.models import Link

__all__ = ["RoleAnchors", "anchor_key"]

_MAX_WORDS = 3  # a role anchor is a short label
_MAX_CHARS = 40
_MAX_ANCHORS_PER_HOST = 20_000  # distinct short anchors remembered per host
_MAX_HOSTS = 10_000


def anchor_key(anchor: str) -> str | None:
    """The anchor as a role label (lower-cased, spaces folded), or None when it is too long
    to be one or empty (an image link's empty anchor says nothing either way)."""
    words = anchor.split()
    if not words or len(words) > _MAX_WORDS:
        return None
    key = " ".join(words).lower()
    return key if len(key) <= _MAX_CHARS else None


class RoleAnchors:
    """Per host, each short anchor's pages and distinct targets, up to ``min_pages``."""

    def __init__(self, *, min_pages: int) -> None:
        if min_pages < 2:
            raise ValueError("min_pages must be >= 2")
        self._min = min_pages
        self._seen: dict[str, dict[str, tuple[int, set[str]]]] = {}

    def observe(self, host: str, links: Iterable[Link]) -> None:
        """One page of ``host`` links with these anchors (each anchor counts once a page)."""
        anchors = self._seen.get(host)
        if anchors is None:
            if len(self._seen) >= _MAX_HOSTS:
                return
            anchors = self._seen[host] = {}
        on_page: dict[str, str] = {}
        for link in links:
            key = anchor_key(link.anchor)
            if key is not None:
                on_page.setdefault(key, link.url)
        for key, url in on_page.items():
            entry = anchors.get(key)
            if entry is None:
                if len(anchors) >= _MAX_ANCHORS_PER_HOST:
                    continue
                entry = anchors[key] = (0, set())
            pages, targets = entry
            if pages >= self._min and len(targets) >= self._min:
                continue  # known as a role anchor: nothing more to count
            if len(targets) < self._min:
                targets.add(url)
            anchors[key] = (pages + 1, targets)

    def is_role(self, host: str, anchor: str) -> bool:
        """Whether ``anchor`` is a role anchor of ``host`` (see the module docstring)."""
        key = anchor_key(anchor)
        if key is None:
            return False
        entry = self._seen.get(host, {}).get(key)
        return entry is not None and entry[0] >= self._min and len(entry[1]) >= self._min
