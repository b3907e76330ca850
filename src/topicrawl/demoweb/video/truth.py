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
    ``mention``) or ``embed`` for an embed play page.
    """

    kind: str  # detail | play | list | negative
    fields: dict[str, object]
    media: tuple[MediaTruth, ...]
    lang: str
    subkind: str = ""

    @property
    def video_class(self) -> str:
        """``play``, ``video`` (a detail page) or ``none``: the benchmark's three classes."""
        return {"play": "play", "detail": "video"}.get(self.kind, "none")
