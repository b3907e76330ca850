"""Video pages: is a page a video page or a play page, and which direct media URLs does it have.

:func:`detect_video` reads a page's markup (cheap when it has no video marker);
:class:`GenericResolver` adds the renditions of the HLS/DASH manifests it links, read from bytes
the crawler fetched (:mod:`~topicrawl.parse.video.manifests`); per-domain resolvers come from
entry points (:class:`ResolverRegistry`); :class:`~topicrawl.parse.video.ytdlp.YtDlpResolver`
is an optional one through yt-dlp (imported from its module, only when wanted).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from topicrawl.parse.video.detect import detect_video, has_video_markers, media_type
from topicrawl.parse.video.model import MEDIA_TYPES, ManifestError, MediaUrl, Resolution, VideoPage

if TYPE_CHECKING:
    from topicrawl.parse.video.manifests import (
        Manifest,
        parse_dash,
        parse_hls,
        parse_manifest,
    )
    from topicrawl.parse.video.resolvers import (
        ENTRY_POINT_GROUP,
        GenericResolver,
        ManifestFetcher,
        ResolverRegistry,
        VideoResolver,
    )

# The parse workers import detection only: manifests (m3u8, lxml) and resolvers load on use.
_LAZY = {
    "Manifest": "manifests",
    "parse_dash": "manifests",
    "parse_hls": "manifests",
    "parse_manifest": "manifests",
    "ENTRY_POINT_GROUP": "resolvers",
    "GenericResolver": "resolvers",
    "ManifestFetcher": "resolvers",
    "ResolverRegistry": "resolvers",
    "VideoResolver": "resolvers",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)


__all__ = [
    "ENTRY_POINT_GROUP",
    "MEDIA_TYPES",
    "GenericResolver",
    "Manifest",
    "ManifestError",
    "ManifestFetcher",
    "MediaUrl",
    "Resolution",
    "ResolverRegistry",
    "VideoPage",
    "VideoResolver",
    "detect_video",
    "has_video_markers",
    "media_type",
    "parse_dash",
    "parse_hls",
    "parse_manifest",
]
