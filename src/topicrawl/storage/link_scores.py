"""The priorities a strategy gave a page's links, as stored in ``pages.link_scores`` (schema 8).

A scoring strategy scores every link of a page, and queues some and holds the rest back under
its threshold; only the ones fetched later get a page row of their own with their scores. So
that the dashboard can show why a link waits (or was never fetched), the page keeps each link's
priority and component scores, compactly::

    {"names": ["anchor", "block", ...], "scale": 10000,
     "links": [[at, score, anchor, block, ...], ...]}

where ``at`` is the link's position in the page's own links (stored beside, in
``pages.links``), or its URL when it is not among them, and ``null`` stands for a component a
link lacks. The numbers are integers in units of ``1 / scale`` (``"scale": 10000``, four
decimals; a value written without ``scale``, as session 15 did, holds the numbers themselves).
About 30 bytes a link. Sizes are capped: at most :data:`MAX_LINKS` links (the best-scored,
when a page has more), and a link known only by a URL longer than :data:`_MAX_URL` characters
is left out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from itertools import chain
from typing import TYPE_CHECKING

from topicrawl.core.lazy import LazyModule
from topicrawl.core.models import Link, LinkScore

if TYPE_CHECKING:
    import numpy
else:
    numpy = LazyModule("numpy")  # only a scoring strategy's pages need it, not a bfs crawl

__all__ = ["MAX_LINKS", "decode_link_scores", "encode_link_scores"]

MAX_LINKS = 300
_SCALE = 10_000  # numbers are stored as integers in units of 1 / _SCALE (four decimals)
_LARGEST = 2.0**53  # a scaled number past this is not stored exactly: null, as NaN is
_NULL = -(2**62)  # marks null in the integer array (beyond _LARGEST, so never a number)
_MAX_URL = 2_000
_MAX_NAMES = 32  # component names; a strategy has about ten


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
    order = [str(name) for name in dict.fromkeys(chain.from_iterable(s.reasons for s in kept))]
    order = order[:_MAX_NAMES]
    # The numbers as one array of integers in units of 10^-4 (numpy rounds them), written as
    # one JSON list; each link's position (or URL) is put in front of its row. Rounding and
    # writing each number as a float in Python cost 320 µs a page (74 links, six components:
    # about a thirtieth of the focused strategy's own time on that page), this way about a
    # third of that (benchmarks/dashboard/link_scores_cost.py).
    columns = [[s.score for s in kept]]
    columns.extend([s.reasons.get(name, math.nan) for s in kept] for name in order)
    values = numpy.array(columns, dtype=float).T * _SCALE
    missing = ~numpy.isfinite(values) | (numpy.abs(values) > _LARGEST)
    scaled = numpy.rint(values, where=~missing, out=numpy.zeros_like(values)).astype(numpy.int64)
    scaled[missing] = _NULL
    numbers = json.dumps(scaled.tolist(), separators=(",", ":"))
    # Integers only in that text, so the sentinel -> null (a component a link lacks) is safe.
    rows = numbers[2:-2].replace(str(_NULL), "null").split("],[")
    where = [str(at[s.url]) if s.url in at else json.dumps(s.url, ensure_ascii=False) for s in kept]
    links_text = ",".join(f"[{w},{row}]" for w, row in zip(where, rows, strict=True))
    names_text = json.dumps(order, separators=(",", ":"), ensure_ascii=False)
    return f'{{"names":{names_text},"scale":{_SCALE},"links":[{links_text}]}}'


def decode_link_scores(raw: str | None, links: Sequence[Link]) -> dict[str, LinkScore]:
    """The stored scores by URL (``links``: the page's own, as stored with it); empty for
    ``None`` or a value this module did not write."""
    if not raw:
        return {}
    try:
        decoded = json.loads(raw)
        names = [str(name) for name in decoded["names"]]
        # Written before the scale was (session 15): the numbers themselves, rounded.
        scale = decoded.get("scale", 1)
        if isinstance(scale, bool) or not isinstance(scale, int) or scale < 1:
            return {}
        found: dict[str, LinkScore] = {}
        for where, score, *values in decoded["links"]:
            if isinstance(where, int) and not isinstance(where, bool):
                if not 0 <= where < len(links):
                    continue
                url = links[where].url
            else:
                url = str(where)
            reasons = {
                name: float(value) / scale
                for name, value in zip(names, values, strict=False)
                if value is not None
            }
            priority = float(score) / scale if score is not None else math.nan
            found[url] = LinkScore(url, priority, reasons)
    except (ValueError, KeyError, TypeError):
        return {}
    return found
