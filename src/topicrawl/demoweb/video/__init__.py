"""The demo video site: films and TV series in English and Chinese, with ground truth.

``build_video_site(seed=0)`` builds it; :class:`VideoServer` serves it over HTTP, switching
template version on a :class:`VersionSchedule`. See ``site.py`` for the page classes,
``media.py`` for what counts as a media URL and ``templates.py`` for the template versions.
"""

from __future__ import annotations

from topicrawl.demoweb.video.catalog import CountForm, Entity, Title, format_count
from topicrawl.demoweb.video.media import Delivery, MediaTruth
from topicrawl.demoweb.video.server import VersionSchedule, VideoServer
from topicrawl.demoweb.video.site import DEFAULT_BASE, VideoSite, build_video_site
from topicrawl.demoweb.video.templates import TEMPLATE_VERSIONS, layout_of
from topicrawl.demoweb.video.truth import PageTruth

__all__ = [
    "DEFAULT_BASE",
    "TEMPLATE_VERSIONS",
    "CountForm",
    "Delivery",
    "Entity",
    "MediaTruth",
    "PageTruth",
    "Title",
    "VersionSchedule",
    "VideoServer",
    "VideoSite",
    "build_video_site",
    "format_count",
    "layout_of",
]
