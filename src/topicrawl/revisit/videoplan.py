"""Seed 004's video side as pure functions: records -> videos -> popularity -> tiers -> nodes.

- :func:`videos_from_records`: the parser library's records grouped into videos. A record of
  the detail schema (title, directors, actors, counts) makes a video; a record of another
  schema (a play page: title, plays) joins the video whose title it carries. A detail record
  without all its counts is kept and flagged ``partial`` (its popularity uses what it has).
- :func:`plan_videos`: each video's popularity index from its extracted counts and their
  growth since the previous plan (:func:`~topicrawl.revisit.popularity.popularity_index`),
  its tier (:func:`~topicrawl.revisit.tiers.assign_tiers`: daily, every 3 days, weekly) and
  its node.
- :func:`video_node`: videos spread over nodes by weighted rendezvous hashing of their URL,
  films and series apart (each kind is spread over all nodes on its own, so neither kind
  piles up on one node); a node's weight is its measured throughput (:func:`node_weights`:
  items per second of its last round), so a node that was slow gets fewer new videos. A
  video already placed keeps its node while that node is in the plan (its history and
  validators live there); only new videos and those of a node that left move.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from topicrawl.core.errors import ConfigError
from topicrawl.distributed.partition import rendezvous_score
from topicrawl.revisit.popularity import DEFAULT_COUNT_WEIGHTS, popularity_index
from topicrawl.revisit.tiers import TierPolicy, assign_tiers

__all__ = [
    "COUNT_FIELDS",
    "Video",
    "VideoPlan",
    "kind_of",
    "node_weights",
    "plan_videos",
    "video_node",
    "videos_from_records",
]

COUNT_FIELDS = ("plays", "comments", "favourites")
_KIND_WORDS = {
    "film": ("film", "movie", "电影", "影片"),
    "series": ("series", "tv", "show", "电视剧", "剧集", "连续剧"),
}


@dataclass(frozen=True, slots=True)
class Video:
    """A video of the site: its detail page (``key``), fields and the pages that belong to it."""

    key: str
    title: str
    kind: str
    directors: tuple[str, ...]
    actors: tuple[str, ...]
    pages: tuple[str, ...]
    counts: Mapping[str, float]
    partial: bool = False

    @property
    def names(self) -> tuple[str, ...]:
        """The entity names of this video for account matching: title, directors, actors."""
        return (self.title, *self.directors, *self.actors)


@dataclass(frozen=True, slots=True)
class VideoPlan:
    """One plan: each video's popularity, tier and node."""

    popularity: Mapping[str, float]
    tiers: Mapping[str, int]
    nodes: Mapping[str, str]


def kind_of(label: object) -> str:
    """``film``, ``series`` or ``video`` (unknown) from a page's type label, any language."""
    text = str(label or "").strip().lower()
    for kind, words in _KIND_WORDS.items():
        if any(word in text for word in words):
            return kind
    return "video"


def _names(value: object) -> tuple[str, ...]:
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value if str(v).strip())
    return (str(value),) if value else ()


def _count(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if number >= 0 and math.isfinite(number) else None


def videos_from_records(
    records: Mapping[str, tuple[str, Mapping[str, object]]], *, detail_schema: str
) -> list[Video]:
    """The videos in ``records`` (URL -> (schema name, record)), sorted by URL.

    A detail record needs a title; one without a title is skipped. Pages of other schemas join
    the video of the same title (the first by URL when titles repeat); pages whose title names
    no video are left out.
    """
    details: dict[str, Mapping[str, object]] = {}
    others: dict[str, str] = {}
    for url, (schema, record) in sorted(records.items()):
        title = str(record.get("title") or "").strip()
        if not title:
            continue
        if schema == detail_schema:
            details[url] = record
        else:
            others[url] = title
    by_title: dict[str, str] = {}
    for url, record in details.items():
        by_title.setdefault(str(record["title"]).strip(), url)
    pages: dict[str, list[str]] = {url: [url] for url in details}
    for url, title in others.items():
        owner = by_title.get(title)
        if owner is not None:
            pages[owner].append(url)
    videos = []
    for url, record in details.items():
        counts = {k: c for k in COUNT_FIELDS if (c := _count(record.get(k))) is not None}
        videos.append(
            Video(
                key=url,
                title=str(record["title"]).strip(),
                kind=kind_of(record.get("type")),
                directors=_names(record.get("directors")),
                actors=_names(record.get("actors")),
                pages=tuple(pages[url]),
                counts=counts,
                partial=len(counts) < len(COUNT_FIELDS)
                or not record.get("directors")
                or not record.get("actors"),
            )
        )
    return videos


def node_weights(rounds: Mapping[str, tuple[int, float]]) -> dict[str, float]:
    """Each node's weight from its last round: items handled per second (``(items, seconds)``);
    a node with no measured round gets the mean of the others (1.0 when none is measured).

    Raises:
        ConfigError: a negative count or time.
    """
    rates: dict[str, float | None] = {}
    for node, (items, seconds) in rounds.items():
        if items < 0 or not seconds >= 0:
            raise ConfigError(f"node {node!r}: items and seconds must be >= 0")
        rates[node] = items / seconds if items > 0 and seconds > 0 else None
    measured = [r for r in rates.values() if r is not None]
    fallback = sum(measured) / len(measured) if measured else 1.0
    return {node: rate if rate is not None else fallback for node, rate in rates.items()}


def video_node(key: str, kind: str, nodes: Mapping[str, float]) -> str:
    """The node of a video: weighted rendezvous hashing of ``kind:URL`` (films and series are
    each spread over all the nodes on their own).

    Raises:
        ConfigError: no node, or a weight that is not positive.
    """
    best: tuple[float, str] | None = None
    for node, weight in sorted(nodes.items()):
        if not (weight > 0 and math.isfinite(weight)):
            raise ConfigError(f"node {node!r} has weight {weight}; weights must be > 0")
        score = (rendezvous_score(f"video:{kind}:{key}", node, weight), node)
        if best is None or score > best:
            best = score
    if best is None:
        raise ConfigError("videos need at least one node")
    return best[1]


def plan_videos(
    videos: Sequence[Video],
    policy: TierPolicy,
    nodes: Mapping[str, float],
    *,
    previous: Mapping[str, Mapping[str, float]] | None = None,
    elapsed: float = 0.0,
    placed: Mapping[str, str] | None = None,
    day_seconds: float = 86_400.0,
    weights: Mapping[str, float] = DEFAULT_COUNT_WEIGHTS,
) -> VideoPlan:
    """Popularity, tier and node of every video.

    Args:
        videos: what the records hold now.
        policy: the tiers' shares and periods.
        nodes: node name -> weight (measured throughput; equal weights when unmeasured).
        previous: each video's counts at the previous plan, ``elapsed`` seconds ago (growth).
        placed: each video's node in the previous plan (kept while that node is in ``nodes``).
        day_seconds: a day's length, for growth per day.
        weights: each count's weight in the index.

    Raises:
        ConfigError: no node.
    """
    if not nodes:
        raise ConfigError("videos need at least one node")
    before = previous or {}
    popularity = {
        v.key: popularity_index(
            v.counts,
            previous=before.get(v.key),
            elapsed=elapsed,
            weights=weights,
            day_seconds=day_seconds,
        )
        for v in videos
    }
    tiers = assign_tiers(popularity, policy)
    kept = placed or {}
    where = {
        v.key: kept[v.key] if kept.get(v.key) in nodes else video_node(v.key, v.kind, nodes)
        for v in videos
    }
    return VideoPlan(popularity, tiers, where)
