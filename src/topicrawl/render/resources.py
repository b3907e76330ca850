"""What a rendering page may load: pure policy over a browser request's type and method.

Images, media, fonts, style sheets and everything else a DOM does not need are aborted
before they leave the browser; scripts, XHR/fetch and the page's own document are loaded
(through the crawl's polite fetch, within a byte and time cap). Only GET is sent: a page's
script must not make the crawler post forms or call APIs that change things.
"""

from __future__ import annotations

import enum

__all__ = ["LOADED_TYPES", "ResourceAction", "resource_action"]


class ResourceAction(enum.StrEnum):
    """What happens to one request a rendering page makes."""

    LOAD = "load"  # fetched through the crawl (robots.txt, politeness, caps), then fulfilled
    BLOCK_TYPE = "blocked_type"  # images, media, fonts, style sheets, sockets...
    BLOCK_METHOD = "blocked_method"  # anything but GET
    BLOCK_SCHEME = "blocked_scheme"  # not http(s)


LOADED_TYPES = frozenset({"script", "xhr", "fetch"})
"""Playwright resource types a rendering page may load (its document is served apart)."""


def resource_action(resource_type: str, method: str, url: str) -> ResourceAction:
    """The fate of a request of Playwright ``resource_type`` (script, image, fetch...)."""
    if not url.startswith(("http://", "https://")):
        return ResourceAction.BLOCK_SCHEME
    if resource_type not in LOADED_TYPES:
        return ResourceAction.BLOCK_TYPE
    if method.upper() != "GET":
        return ResourceAction.BLOCK_METHOD
    return ResourceAction.LOAD
