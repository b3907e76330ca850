"""What video detection and resolution produce: media URLs, a page's video verdict, errors."""

from __future__ import annotations

from dataclasses import dataclass

from topicrawl.core.errors import TopicrawlError
from topicrawl.core.models import MediaUrl, PageVideo

__all__ = [
    "MEDIA_TYPES",
    "ManifestError",
    "MediaUrl",
    "Resolution",
    "VideoPage",
]

MEDIA_TYPES = ("mp4", "webm", "mov", "hls", "dash")
"""The media types listed: progressive files, HLS playlists and DASH MPDs."""


class ManifestError(TopicrawlError, ValueError):
    """An HLS or DASH manifest that is too large, malformed or hostile (e.g. declares a DTD)."""


@dataclass(frozen=True, slots=True)
class VideoPage:
    """What a page's markup says about video, before any manifest is fetched.

    ``video_class`` is ``play`` (it carries playable video media), ``video`` (it is about a
    video: ``og:type video.*``, a JSON-LD ``Movie``/``TVSeries``/``Episode``/``VideoObject``,
    a Twitter player card, but no media) or ``none``. ``media`` are the candidate media URLs
    (manifests included, not yet expanded); ``manifests`` the HLS/DASH URLs a resolver may
    fetch to list their renditions; ``embeds`` player pages (``twitter:player``,
    ``embedUrl``), never listed as media; ``signals`` name what was seen, for debugging.
    ``about`` is whether the markup says the page is about a video, media aside (it decides
    ``video`` against ``none`` when a resolver finds the candidates hold no video).
    """

    url: str
    video_class: str
    media: tuple[MediaUrl, ...] = ()
    manifests: tuple[str, ...] = ()
    embeds: tuple[str, ...] = ()
    signals: tuple[str, ...] = ()
    about: bool = False

    @property
    def is_video(self) -> bool:
        return self.video_class != "none"

    @property
    def is_play(self) -> bool:
        return self.video_class == "play"


@dataclass(frozen=True, slots=True)
class Resolution:
    """A resolver's answer for one page: its class after manifests, and its media URLs.

    ``manifests`` are the manifest URLs fetched; ``errors`` say what could not be read (a
    manifest too large, malformed, unreachable), each with its URL.
    """

    page_url: str
    video_class: str
    media: tuple[MediaUrl, ...]
    resolver: str
    manifests: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()

    @property
    def is_play(self) -> bool:
        return self.video_class == "play"

    def stored(self) -> PageVideo:
        """The verdict as a page keeps it."""
        return PageVideo(self.video_class, self.media, self.resolver, self.errors)
