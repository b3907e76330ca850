"""The priorities a strategy gave a page's links, as stored in ``pages.link_scores`` (schema 8).

A scoring strategy scores every link of a page, and queues some and holds the rest back under
its threshold; only the ones fetched later get a page row of their own with their scores. So
that the dashboard can show why a link waits (or was never fetched), the page keeps each link's
priority and component scores, compactly::

    {"names": ["anchor", "block", ...], "links": [[at, score, anchor, block, ...], ...]}

where ``at`` is the link's position in the page's own links (stored beside, in
``pages.links``), or its URL when it is not among them, and ``null`` stands for a component a
link lacks. About 40 bytes a link. Sizes are capped: at most :data:`MAX_LINKS` links (the
best-scored, when a page has more), values rounded to :data:`_DIGITS` decimals, and a link
known only by a URL longer than :data:`_MAX_URL` characters is left out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from topicrawl.core.models import Link, LinkScore

__all__ = ["MAX_LINKS", "decode_link_scores", "encode_link_scores"]

MAX_LINKS = 300
_DIGITS = 4
_MAX_URL = 2_000
_MAX_NAMES = 32  # component names; a strategy has about ten


def _number(value: float) -> float | None:
    number = float(value)
    return round(number, _DIGITS) if math.isfinite(number) else None


def encode_link_scores(scores: Sequence[LinkScore], links: Sequence[Link]) -> str | None:
    """The JSON text stored for ``scores`` of a page whose links are ``links`` (None when
    there is nothing to store)."""
    at: dict[str, int] = {}
    for position, link in enumerate(links):
        at.setdefault(link.url, position)
    kept = [s for s in scores if s.url in at or len(s.url) <= _MAX_URL]
    if len(kept) > MAX_LINKS:
        kept = sorted(kept, key=lambda s: -s.score if math.isfinite(s.score) else math.inf)
        kept = kept[:MAX_LINKS]
    if not kept:
        return None
    names: dict[str, None] = {}
    for score in kept:
        for name in score.reasons:
            if len(names) < _MAX_NAMES:
                names.setdefault(str(name), None)
    order = list(names)
    rows = [
        [
            at.get(s.url, s.url),
            _number(s.score),
            *(_number(s.reasons[n]) if n in s.reasons else None for n in order),
        ]
        for s in kept
    ]
    return json.dumps({"names": order, "links": rows}, separators=(",", ":"), ensure_ascii=False)


def decode_link_scores(raw: str | None, links: Sequence[Link]) -> dict[str, LinkScore]:
    """The stored scores by URL (``links``: the page's own, as stored with it); empty for
    ``None`` or a value this module did not write."""
    if not raw:
        return {}
    try:
        decoded = json.loads(raw)
        names = [str(name) for name in decoded["names"]]
        found: dict[str, LinkScore] = {}
        for where, score, *values in decoded["links"]:
            if isinstance(where, int) and not isinstance(where, bool):
                if not 0 <= where < len(links):
                    continue
                url = links[where].url
            else:
                url = str(where)
            reasons = {
                name: float(value)
                for name, value in zip(names, values, strict=False)
                if value is not None
            }
            found[url] = LinkScore(url, float(score) if score is not None else math.nan, reasons)
    except (ValueError, KeyError, TypeError):
        return {}
    return found
