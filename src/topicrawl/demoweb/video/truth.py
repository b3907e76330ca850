"""Ground truth of one demo video page."""

from __future__ import annotations

from dataclasses import dataclass

from topicrawl.demoweb.video.media import MediaTruth

__all__ = ["PageTruth"]


@dataclass(frozen=True, slots=True)
class PageTruth:
    """The ground truth of one page: its class, its fields and its media URLs.

    ``fields`` holds what a parser should extract (strings, ints, lists of names); counts are
    ints exactly equal to what the page writes. ``media`` is empty except on play pages.
    ``subkind`` names a hard negative's kind (``background``, ``audio``, ``video_list``,
    ``mention``) or ``embed`` for an embed play page. ``embeds`` are the absolute addresses
    of the player pages a video page shows through an ``<iframe>`` or a JSON-LD ``embedUrl``
    only (kind ``iframe``: a video page whose media are on those pages).
    """

    kind: str  # detail | play | list | negative | iframe
    fields: dict[str, object]
    media: tuple[MediaTruth, ...]
    lang: str
    subkind: str = ""
    embeds: tuple[str, ...] = ()

    @property
    def video_class(self) -> str:
        """``play``, ``video`` (detail, iframe pages) or ``none``: the benchmark's three classes."""
        return {"play": "play", "detail": "video", "iframe": "video"}.get(self.kind, "none")
