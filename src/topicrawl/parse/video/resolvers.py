"""Video resolvers: from a play page to its direct media URLs, one plugin per domain.

A resolver is any object with a ``name`` and an async ``resolve(url, html, fetch=...)``
(:class:`VideoResolver`). :class:`GenericResolver` is built in: it reads the page's markup
(:func:`~topicrawl.parse.video.detect.detect_video`) and, when given a ``fetch`` (the crawler's
own polite fetch, capped), reads the HLS/DASH manifests the page links and lists their video
renditions; an audio-only manifest is dropped from the media.

Per-domain resolvers are registered as entry points in the group
:data:`ENTRY_POINT_GROUP` (``topicrawl.video_resolvers``): the entry point's *name* is the
domain it handles (``example.org`` also covers ``www.example.org``), its *value* a resolver
class or factory taking no arguments, e.g. in a plugin's ``pyproject.toml``::

    [project.entry-points."topicrawl.video_resolvers"]
    "example.org" = "example_plugin:ExampleResolver"

A plugin that fails to load is skipped and named in :attr:`ResolverRegistry.errors`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from importlib.metadata import entry_points
from typing import Protocol, runtime_checkable
from urllib.parse import urlsplit

from topicrawl.core.errors import TopicrawlError
from topicrawl.parse.video.detect import detect_video
from topicrawl.parse.video.manifests import parse_manifest
from topicrawl.parse.video.model import ManifestError, MediaUrl, Resolution

__all__ = [
    "ENTRY_POINT_GROUP",
    "GenericResolver",
    "ManifestFetcher",
    "ResolverRegistry",
    "VideoResolver",
]

ENTRY_POINT_GROUP = "topicrawl.video_resolvers"

ManifestFetcher = Callable[[str], Awaitable[bytes]]
"""Fetches one manifest URL's body (capped) or raises; the crawler passes its own."""


@runtime_checkable
class VideoResolver(Protocol):
    """Lists a page's direct media URLs (see the module docstring)."""

    name: str

    async def resolve(
        self, url: str, html: str, *, fetch: ManifestFetcher | None = None
    ) -> Resolution: ...


class GenericResolver:
    """The built-in resolver: page markup, then the manifests it links (when ``fetch`` given).

    Args:
        max_manifests: manifests fetched per page at most (the rest are listed unread).
    """

    name = "generic"

    def __init__(self, *, max_manifests: int = 8) -> None:
        if max_manifests < 0:
            raise ValueError("max_manifests must be >= 0")
        self._max_manifests = max_manifests

    async def resolve(
        self, url: str, html: str, *, fetch: ManifestFetcher | None = None
    ) -> Resolution:
        page = detect_video(html, url)
        if not page.manifests or fetch is None or not self._max_manifests:
            return Resolution(url, page.video_class, page.media, self.name)
        media: dict[str, MediaUrl] = {m.url: m for m in page.media}
        fetched: list[str] = []
        errors: list[str] = []
        for candidate in [m for m in page.media if m.type in ("hls", "dash")][
            : self._max_manifests
        ]:
            fetched.append(candidate.url)
            try:
                manifest = parse_manifest(candidate.type, await fetch(candidate.url), candidate.url)
            except (TimeoutError, ManifestError, TopicrawlError, OSError) as exc:
                errors.append(f"{candidate.url}: {type(exc).__name__}: {exc}")
                continue
            if not manifest.has_video:
                del media[candidate.url]
                continue
            for rendition in manifest.renditions:
                media.setdefault(rendition.url, rendition)
        found = tuple(media.values())
        video_class = "play" if found else "video" if page.about else "none"
        return Resolution(url, video_class, found, self.name, tuple(fetched), tuple(errors))


class ResolverRegistry:
    """Resolvers by domain, the generic one for every other domain."""

    def __init__(
        self,
        resolvers: Mapping[str, VideoResolver] | None = None,
        *,
        generic: VideoResolver | None = None,
    ) -> None:
        self._by_domain: dict[str, VideoResolver] = {}
        self.generic: VideoResolver = generic or GenericResolver()
        self.errors: list[str] = []
        for domain, resolver in (resolvers or {}).items():
            self.register(domain, resolver)

    def register(self, domain: str, resolver: VideoResolver) -> None:
        """Use ``resolver`` for ``domain`` and its subdomains.

        Raises:
            TypeError: ``resolver`` is not a :class:`VideoResolver`.
        """
        if not isinstance(resolver, VideoResolver):
            raise TypeError(f"{resolver!r} has no name and async resolve(): not a video resolver")
        self._by_domain[domain.strip().lower().strip(".")] = resolver

    @classmethod
    def from_entry_points(
        cls, group: str = ENTRY_POINT_GROUP, *, generic: VideoResolver | None = None
    ) -> ResolverRegistry:
        """A registry with every resolver plugin installed in ``group``."""
        registry = cls(generic=generic)
        for point in entry_points(group=group):
            try:
                loaded = point.load()
                resolver = (
                    loaded()
                    if isinstance(loaded, type) or not hasattr(loaded, "resolve")
                    else loaded
                )
                registry.register(point.name, resolver)
            except Exception as exc:  # a broken plugin: skip it, say which and why
                registry.errors.append(f"{point.name} = {point.value}: {type(exc).__name__}: {exc}")
        return registry

    def domains(self) -> list[str]:
        return sorted(self._by_domain)

    def for_url(self, url: str) -> VideoResolver:
        """The resolver of ``url``'s host or its nearest registered parent domain."""
        host = (urlsplit(url).hostname or "").lower()
        labels = host.split(".")
        for start in range(len(labels)):
            resolver = self._by_domain.get(".".join(labels[start:]))
            if resolver is not None:
                return resolver
        return self.generic
