"""The crawl's video stage: from a parsed page's video verdict to the media URLs it stores.

The parse workers recognise video pages (:mod:`topicrawl.parse.video.detect`); for such a page
this stage picks the domain's resolver (a plugin by entry point, else the generic one) and
lets it fetch the HLS/DASH manifests it asks for through the crawl's own polite fetch (same
per-host delay, concurrency, robots.txt and scope; capped in bytes). With ``fetch_media`` it
then fetches each listed media file the same way (a file over ``max_media_bytes`` fails as
too large): failures go to the page's ``errors``, successes to :attr:`VideoStage.counts`;
media bodies are never stored. A resolver that fails is reported (log, counter) and the page
keeps what its markup said.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable

from topicrawl.core.config import VideoSettings
from topicrawl.core.errors import FetchError
from topicrawl.core.models import Link, Page, PageVideo
from topicrawl.parse.urls import InvalidUrl, canonicalize
from topicrawl.parse.video.model import VideoPage
from topicrawl.parse.video.resolvers import GenericResolver, ResolverRegistry

__all__ = ["BodyFetch", "VideoStage"]

log = logging.getLogger(__name__)

BodyFetch = Callable[[str, str, int], Awaitable[bytes]]
"""Fetches ``url`` (found on page ``parent``) politely, reading at most ``max_bytes``."""


class VideoStage:
    """Resolves video pages' media URLs during a crawl (see the module docstring).

    Args:
        settings: the crawl's video settings.
        fetch: the crawl's polite fetch for manifests and media files.
        registry: resolvers by domain (default: the plugins installed, when
            ``settings.plugins``, and the generic resolver).
    """

    def __init__(
        self,
        *,
        settings: VideoSettings,
        fetch: BodyFetch,
        registry: ResolverRegistry | None = None,
    ) -> None:
        self._settings = settings
        self._fetch = fetch
        generic = GenericResolver(max_manifests=settings.max_manifests)
        if registry is None:
            registry = (
                ResolverRegistry.from_entry_points(generic=generic)
                if settings.plugins
                else ResolverRegistry(generic=generic)
            )
            for error in registry.errors:
                log.warning("video resolver plugin not loaded: %s", error)
        self._registry = registry
        self.counts: Counter[str] = Counter()

    async def apply(self, page: Page, body: bytes | str, found: VideoPage) -> Page:
        """``page`` with its video verdict (and, with ``follow_embeds``, its player pages as
        links in a block of their own); ``body`` is the page's response body."""
        html = body if isinstance(body, str) else body.decode(page.encoding or "utf-8", "replace")
        video = await self.resolve(page.final_url, html, found)
        if not self._settings.follow_embeds or not found.embeds:
            return dataclasses.replace(page, video=video)
        known = {link.url for link in page.links}
        block = max((link.block for link in page.links), default=-1) + 1
        embeds = tuple(
            Link(url, "video player", block=block, block_text="video player")
            for url in _canonical(found.embeds)
            if url not in known
        )
        return dataclasses.replace(page, video=video, links=page.links + embeds)

    async def resolve(self, url: str, html: str, found: VideoPage) -> PageVideo:
        """The stored verdict of page ``url`` whose markup gave ``found``."""
        resolver = self._registry.for_url(url)
        markup = PageVideo(found.video_class, found.media, "markup")
        if resolver is self._registry.generic and (
            not found.manifests or not self._settings.fetch_manifests
        ):
            video = markup  # nothing to fetch: the markup's verdict is the generic answer
        else:

            async def fetch_manifest(manifest: str) -> bytes:
                self.counts["manifests/fetched"] += 1
                return await self._fetch(manifest, url, self._settings.max_manifest_bytes)

            fetch = fetch_manifest if self._settings.fetch_manifests else None
            try:
                result = await resolver.resolve(url, html, fetch=fetch)
            except Exception:  # a plugin's bug: reported, the markup's verdict kept
                log.exception("video resolver %s failed on %s", resolver.name, url)
                self.counts[f"errors/resolver/{resolver.name}"] += 1
                self.counts[f"pages/{markup.video_class}"] += 1
                return markup
            video = PageVideo(result.video_class, result.media, result.resolver, result.errors)
        if self._settings.fetch_media and video.media:
            video = await self._fetch_media(url, video)
        self.counts[f"pages/{video.video_class}"] += 1
        return video

    async def _fetch_media(self, url: str, video: PageVideo) -> PageVideo:
        notes = list(video.errors)
        for media in video.media:
            if media.type in ("hls", "dash"):
                continue
            try:
                body = await self._fetch(media.url, url, self._settings.max_media_bytes)
            except FetchError as exc:
                notes.append(f"media {media.url}: {exc.kind.value}: {exc.message}")
                self.counts["media/failed"] += 1
                continue
            self.counts["media/fetched"] += 1
            self.counts["media/bytes"] += len(body)
        return PageVideo(video.video_class, video.media, video.resolver, tuple(notes))


def _canonical(urls: Iterable[str]) -> list[str]:
    """The canonical forms of ``urls``, leaving out what is not an http(s) URL."""
    out = []
    for url in urls:
        try:
            out.append(canonicalize(url))
        except InvalidUrl:
            continue
    return out
