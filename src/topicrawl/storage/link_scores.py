"""The priorities a strategy gave a page's links, as stored in ``pages.link_scores`` (schema 8).

A scoring strategy scores every link of a page, and queues some and holds the rest back under
its threshold; only the ones fetched later get a page row of their own with their scores. So
that the dashboard can show why a link waits (or was never fetched), the page keeps each link's
priority and component scores, compactly::

    {"names": ["anchor", "block", ...], "links": [[url, score, anchor, block, ...], ...]}

with ``null`` for a component a link lacks. Sizes are capped: at most :data:`MAX_LINKS` links
(the best-scored, when a page has more), values rounded to :data:`_DIGITS` decimals, and a
URL longer than :data:`_MAX_URL` characters is left out (it would make the row large and is
shown from the page's own links anyway).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from topicrawl.core.models import LinkScore

__all__ = ["MAX_LINKS", "decode_link_scores", "encode_link_scores"]

MAX_LINKS = 300
_DIGITS = 4
_MAX_URL = 2_000
_MAX_NAMES = 32  # component names; a strategy has about ten


def _number(value: float) -> float | None:
    number = float(value)
    return round(number, _DIGITS) if math.isfinite(number) else None


def encode_link_scores(scores: Sequence[LinkScore]) -> str | None:
    """The JSON text stored for ``scores`` (None when there is nothing to store)."""
    kept = [s for s in scores if len(s.url) <= _MAX_URL]
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
            s.url,
            _number(s.score),
            *(_number(s.reasons[n]) if n in s.reasons else None for n in order),
        ]
        for s in kept
    ]
    return json.dumps({"names": order, "links": rows}, separators=(",", ":"), ensure_ascii=False)


def decode_link_scores(raw: str | None) -> dict[str, LinkScore]:
    """The stored scores by URL; empty for ``None`` or a value this module did not write."""
    if not raw:
        return {}
    try:
        decoded = json.loads(raw)
        names = [str(name) for name in decoded["names"]]
        found: dict[str, LinkScore] = {}
        for url, score, *values in decoded["links"]:
            reasons = {
                name: float(value)
                for name, value in zip(names, values, strict=False)
                if value is not None
            }
            found[str(url)] = LinkScore(
                str(url), float(score) if score is not None else math.nan, reasons
            )
    except (ValueError, KeyError, TypeError):
        return {}
    return found
