"""A demo microblog speaking a subset of the Mastodon API, with topics whose heat changes.

:class:`MicroblogWorld` generates, from a seed, every post of every period up front: six topics
(three English, three Chinese) written with the demo web's vocabularies, whose heat follows a
trend (rising, fading, volatile, steady, peaking, and one that only appears mid-way), plus
chatter that mentions a keyword by chance. Posts carry @mentions, #tags (Weibo-style
``#话题#`` in Chinese), emoji and URLs, some of them to the demo web's pages. The world keeps
the ground truth: each post's true topic, and each topic's true heat per period (the mean
AHP heat of its posts, with the default weights).

:class:`MicroblogServer` serves the posts of the periods up to the current one (advanced by the
caller, or by the wall clock every ``period_seconds``) at::

    GET /api/v2/search?q=&type=statuses&limit=&max_id=&min_id=&since_id=&offset=
    GET /api/v1/timelines/tag/{hashtag}?limit=&max_id=&min_id=&since_id=
    GET /api/v1/instance

newest first, as Mastodon status JSON, with ``Link`` pagination (``rel="next"``) and
``X-RateLimit-Limit/Remaining/Reset`` headers; past the limit it answers 429.
"""

from __future__ import annotations

import enum
import html
import math
import random
import time
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any
from urllib.parse import quote, urlencode

from aiohttp import web as aioweb

from topicrawl.core.errors import ConfigError
from topicrawl.demoweb.ratelimit import RateWindow
from topicrawl.demoweb.text import LOCAL_NEWS, Topic, Vocabulary, topic_by_id
from topicrawl.demoweb.threaded import ThreadedServer, serve_app
from topicrawl.topics.ahp import HeatWeights, PostEngagement, default_heat_weights, post_heat

__all__ = [
    "DEFAULT_MICRO_TOPICS",
    "MicroPost",
    "MicroTopic",
    "MicroblogServer",
    "MicroblogWorld",
    "Trend",
]

# Mastodon's search and timelines return at most 40 statuses per page.
MAX_PAGE = 40
DEFAULT_PAGE = 20
_EPOCH = 1_704_067_200.0  # 2024-01-01T00:00:00Z: posts' times are counted from here


class Trend(enum.StrEnum):
    """How a topic's heat moves over the periods."""

    STEADY = "steady"
    RISING = "rising"
    FADING = "fading"
    VOLATILE = "volatile"
    PEAKING = "peaking"  # rises to a peak half-way, then falls
    EMERGING = "emerging"  # absent until ``start``, then rises fast


@dataclass(frozen=True, slots=True)
class MicroTopic:
    """One topic of the demo microblog.

    ``keyword`` is what a user searches for it (it is in about half of its posts' text, and
    every post has ``hashtag``); ``base`` names the demo web topic whose vocabulary it uses.
    """

    id: str
    base: str
    lang: str
    keyword: str
    hashtag: str
    trend: Trend
    start: int = 0

    @property
    def topic(self) -> Topic:
        return topic_by_id(self.base)


DEFAULT_MICRO_TOPICS: tuple[MicroTopic, ...] = (
    MicroTopic("astronomy_en", "astronomy", "en", "astronomy", "astronomy", Trend.RISING),
    MicroTopic("football_en", "football", "en", "football", "football", Trend.FADING),
    MicroTopic("finance_en", "finance", "en", "markets", "markets", Trend.VOLATILE),
    MicroTopic("cooking_zh", "cooking", "zh", "美食", "美食", Trend.STEADY),
    MicroTopic("ai_zh", "machine_learning", "zh", "人工智能", "人工智能", Trend.PEAKING),
    MicroTopic("gardening_zh", "gardening", "zh", "园艺", "园艺", Trend.EMERGING, start=4),
)


@dataclass(frozen=True, slots=True)
class MicroPost:
    """A generated status with its ground truth (``topic`` None: chatter)."""

    id: int
    topic: str | None
    period: int
    created_at: float
    author: str
    lang: str
    text: str
    tags: tuple[str, ...]
    mentions: tuple[str, ...]
    links: tuple[str, ...]
    reposts: int
    likes: int
    comments: int

    @property
    def engagement(self) -> PostEngagement:
        return PostEngagement(reposts=self.reposts, likes=self.likes, comments=self.comments)

    def matches(self, query: str) -> bool:
        """Whether a keyword search for ``query`` finds this post (text or tags)."""
        needle = query.strip().strip("#").lower()
        if not needle:
            return False
        return needle in self.text.lower() or any(needle == tag.lower() for tag in self.tags)


def _level(topic: MicroTopic, period: int, periods: int, rng: random.Random) -> float:
    """The topic's heat level (about 5 to 100) in ``period``."""
    x = period / max(1, periods - 1)
    if topic.trend is Trend.STEADY:
        return 45.0 * (1.0 + 0.08 * (rng.random() - 0.5))
    if topic.trend is Trend.RISING:
        return 12.0 + 80.0 * x
    if topic.trend is Trend.FADING:
        return 90.0 - 78.0 * x
    if topic.trend is Trend.VOLATILE:
        return 40.0 * (0.35 + 1.3 * rng.random())
    if topic.trend is Trend.PEAKING:
        return 15.0 + 70.0 * math.exp(-(((x - 0.5) / 0.22) ** 2))
    if period < topic.start:
        return 0.0
    ramp = (period - topic.start + 1) / max(1, periods - topic.start)
    return 20.0 + 75.0 * min(1.0, ramp)


# Posts are two or three short clauses; the glue between the topic's words is mostly words that
# are stopwords anyway, so what tells topics apart is their vocabulary, as in real posts.
_EN_CLAUSES = (
    "the {adj} {noun} {verb} by {entity}",
    "{entity} {verb} the {noun}",
    "{noun} and {noun2}",
    "so {adj} {noun}",
    "{verb} the {noun} with the {noun2}",
    "what about the {adj} {noun}?",
    "more {noun} from {entity}",
    "{noun}, {noun2} and {noun3}",
)
_ZH_CLAUSES = (
    "{entity}{verb}了{adj}的{noun}",
    "{noun}和{noun2}",
    "{adj}的{noun}",
    "{verb}{noun}",
    "{entity}的{noun}",
    "{noun}、{noun2}和{noun3}",
    "{noun}也很{adj}",
    "我们{verb}了{noun}",
)
_EMOJI = ("🔭", "⚽", "📈", "🍜", "🤖", "🌱", "🔥", "👍", "😂", "✨", "[哈哈]", "[doge]")
_EN_USERS = ("stargazer", "ana_cooks", "goal_line", "quant_kim", "green_thumb", "dev_li", "maria")
_ZH_USERS = ("小明", "美食家老王", "数据猫", "花园里的阿芳", "科技观察", "路人甲", "weibo_fan")


def _zipf_pick(items: Sequence[str], rng: random.Random) -> str:
    """A word with probability proportional to ``1 / rank``: a topic has a few key words."""
    weights = [1.0 / (k + 1) for k in range(len(items))]
    return rng.choices(items, weights=weights, k=1)[0]


def _words(vocab: Vocabulary, rng: random.Random, lang: str) -> dict[str, str]:
    nouns: list[str] = []
    while len(nouns) < 3:
        noun = _zipf_pick(vocab.nouns, rng)
        if noun not in nouns:
            nouns.append(noun)
    adj, adj2 = rng.sample(list(vocab.adjectives), 2)
    slots = {
        "noun": nouns[0],
        "noun2": nouns[1],
        "noun3": nouns[2],
        "verb": rng.choice(vocab.verbs),
        "adj": adj,
        "adj2": adj2,
        "entity": rng.choice(vocab.entities),
    }
    if lang == "en":
        slots |= {k[:1].upper() + k[1:]: v[:1].upper() + v[1:] for k, v in list(slots.items())}
    return slots


@dataclass(frozen=True)
class MicroblogWorld:
    """Every post of every period, and the ground truth (see the module docstring)."""

    topics: tuple[MicroTopic, ...]
    periods: int
    posts: tuple[MicroPost, ...]
    levels: Mapping[str, tuple[float, ...]] = field(compare=False)
    seed: int = 0
    period_length: float = 3600.0
    _by_id: Mapping[int, MicroPost] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", MappingProxyType({p.id: p for p in self.posts}))

    @classmethod
    def generate(
        cls,
        *,
        seed: int = 11,
        periods: int = 12,
        topics: Sequence[MicroTopic] = DEFAULT_MICRO_TOPICS,
        posts_per_topic: tuple[int, int] = (8, 30),
        chatter: float = 0.05,
        link_targets: Mapping[str, Sequence[str]] | None = None,
        hostile: bool = True,
        period_length: float = 3600.0,
    ) -> MicroblogWorld:
        """Generate a world, identical for identical arguments.

        Args:
            seed: drives every random choice.
            periods: how many periods the world has.
            topics: its topics (ids unique; ``base`` a demo web topic id).
            posts_per_topic: posts a topic has in a period at heat 0 and at heat 100.
            chatter: share of extra off-topic posts that mention a topic's keyword by chance.
            link_targets: demo web URLs by demo web topic id; posts link to them (else to an
                off-site example URL).
            hostile: a few posts hold markup-like text (``<script>``) to test escaping.
            period_length: seconds between periods in the posts' ``created_at``.

        Raises:
            ConfigError: an argument is out of range or a topic is malformed.
        """
        if periods < 1 or period_length <= 0 or not 0.0 <= chatter < 1.0:
            raise ConfigError("periods >= 1, period_length > 0 and 0 <= chatter < 1 required")
        low, high = posts_per_topic
        if not 1 <= low <= high:
            raise ConfigError("posts_per_topic must be (low, high) with 1 <= low <= high")
        ids = [t.id for t in topics]
        if not topics or len(set(ids)) != len(ids):
            raise ConfigError("topics must be non-empty with unique ids")
        for t in topics:
            if t.lang not in {"en", "zh"}:
                raise ConfigError(f"topic {t.id}: lang must be 'en' or 'zh'")
            try:
                t.topic  # noqa: B018 - validates the base id
            except KeyError as exc:
                raise ConfigError(f"topic {t.id}: unknown base topic {t.base!r}") from exc
        rng = random.Random(seed)
        levels = {t.id: tuple(_level(t, p, periods, rng) for p in range(periods)) for t in topics}
        posts: list[MicroPost] = []
        for period in range(periods):
            drafts: list[tuple[str | None, str, MicroTopic]] = []
            for t in topics:
                level = levels[t.id][period]
                if level <= 0.0:
                    continue
                count = round(low + (high - low) * min(level, 100.0) / 100.0)
                drafts += [(t.id, t.lang, t) for _ in range(count)]
            extra = round(chatter * len(drafts))
            live = [t for t in topics if levels[t.id][period] > 0.0]
            drafts += [(None, t.lang, t) for t in (rng.choice(live) for _ in range(extra))]
            rng.shuffle(drafts)
            start = _EPOCH + period * period_length
            for seq, (truth, lang, t) in enumerate(drafts):
                created = start + (seq + rng.random()) * period_length / (len(drafts) + 1)
                level = levels[t.id][period] if truth is not None else 5.0
                posts.append(
                    _make_post(
                        rng,
                        post_id=(int(created * 1000) << 16) | (seq & 0xFFFF),
                        topic=t,
                        truth=truth,
                        lang=lang,
                        period=period,
                        created=created,
                        level=level,
                        link_targets=link_targets,
                        hostile=hostile and seq % 97 == 13,
                    )
                )
        posts.sort(key=lambda p: p.id)
        return cls(
            topics=tuple(topics),
            periods=periods,
            posts=tuple(posts),
            levels=MappingProxyType(levels),
            seed=seed,
            period_length=period_length,
        )

    def get(self, post_id: int) -> MicroPost | None:
        return self._by_id.get(post_id)

    def topic(self, topic_id: str) -> MicroTopic:
        for t in self.topics:
            if t.id == topic_id:
                return t
        raise KeyError(topic_id)

    def keywords(self) -> tuple[str, ...]:
        """One search keyword per topic: what a user following all of them would give."""
        return tuple(t.keyword for t in self.topics)

    def posts_of(self, period: int) -> tuple[MicroPost, ...]:
        return tuple(p for p in self.posts if p.period == period)

    def true_topic(self, post_id: int | str) -> str | None:
        """The true topic of a post (None: chatter or unknown id)."""
        post = self._by_id.get(int(post_id))
        return post.topic if post is not None else None

    def true_heat(
        self, topic_id: str, period: int, weights: HeatWeights | None = None
    ) -> float | None:
        """Mean AHP heat of the topic's posts in ``period`` (None: it has none then)."""
        weights = weights or default_heat_weights()
        heats = [
            post_heat(p.engagement, weights)
            for p in self.posts
            if p.period == period and p.topic == topic_id
        ]
        return math.fsum(heats) / len(heats) if heats else None

    def heat_series(self, topic_id: str, weights: HeatWeights | None = None) -> tuple[float, ...]:
        """True heat per period, 0 where the topic has no post."""
        return tuple(self.true_heat(topic_id, p, weights) or 0.0 for p in range(self.periods))


def _make_post(
    rng: random.Random,
    *,
    post_id: int,
    topic: MicroTopic,
    truth: str | None,
    lang: str,
    period: int,
    created: float,
    level: float,
    link_targets: Mapping[str, Sequence[str]] | None,
    hostile: bool,
) -> MicroPost:
    users = _ZH_USERS if lang == "zh" else _EN_USERS
    author = rng.choice(users)
    if truth is None:
        vocab = LOCAL_NEWS.vocabulary(lang)
        base_topic = None
    else:
        vocab = topic.topic.vocabulary(lang)
        base_topic = topic.base
    clauses = _ZH_CLAUSES if lang == "zh" else _EN_CLAUSES
    picked = []
    for _ in range(2 + int(rng.random() * 2)):
        slots = _words(vocab, rng, lang)
        picked.append(rng.choice(clauses).format_map(slots))
    sentence = ("，" if lang == "zh" else ", ").join(picked)
    if lang == "en":
        sentence = sentence[:1].upper() + sentence[1:]
    parts = [sentence]
    if truth is None or rng.random() < 0.5:
        # The keyword in the text (chatter always: that is why a search finds it).
        parts.append(f"{topic.keyword}" if lang == "zh" else f"#{topic.keyword} talk")
    if lang == "zh":
        parts.insert(0, f"#{topic.hashtag}#")
    else:
        parts.append(f"#{topic.hashtag}")
    mentions: list[str] = []
    if rng.random() < 0.4:
        other = rng.choice([u for u in users if u != author])
        mentions.append(other)
        parts.append(f"@{other}")
    if rng.random() < 0.6:
        parts.append(rng.choice(_EMOJI))
    links: list[str] = []
    if rng.random() < 0.35:
        targets = (link_targets or {}).get(base_topic or "", ())
        url = (
            rng.choice(list(targets))
            if targets
            else f"https://example.org/{topic.base}/{post_id % 1000}"
        )
        links.append(url)
        parts.append(url)
    if hostile:
        parts.append("<script>alert('x')</script> <img src=x onerror=alert(1)>")
    joiner = "" if lang == "zh" else " "
    text = joiner.join(parts)
    scale = max(level, 1.0)
    spread = 0.45

    def count(mean: float) -> int:
        return max(0, round(rng.lognormvariate(math.log(mean), spread)))

    return MicroPost(
        id=post_id,
        topic=truth,
        period=period,
        created_at=created,
        author=author,
        lang=lang,
        text=text,
        tags=(topic.hashtag,),
        mentions=tuple(mentions),
        links=tuple(links),
        reposts=count(0.8 * scale),
        likes=count(2.0 * scale),
        comments=count(0.3 * scale + 0.5),
    )


# --- the HTTP server ---------------------------------------------------------------------------


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.") + (
        f"{int(ts * 1000) % 1000:03d}Z"
    )


def _content_html(post: MicroPost, base: str) -> str:
    """The post's text as Mastodon renders it: escaped, with tag, mention and link anchors."""
    out: list[str] = []
    for token in post.text.split(" ") if post.lang == "en" else [post.text]:
        out.append(_render_token(token, post, base))
    return "<p>" + " ".join(out) + "</p>"


def _render_token(token: str, post: MicroPost, base: str) -> str:
    escaped = html.escape(token, quote=False)
    for url in post.links:
        if url in token:
            shown = html.escape(url.split("://", 1)[-1])
            anchor = (
                f'<a href="{html.escape(url)}" rel="nofollow noopener noreferrer" '
                f'target="_blank"><span class="invisible">'
                f"{html.escape(url.split('://', 1)[0])}://</span><span>{shown}</span></a>"
            )
            escaped = escaped.replace(html.escape(url, quote=False), anchor)
    for user in post.mentions:
        escaped = escaped.replace(
            f"@{html.escape(user)}",
            f'<span class="h-card"><a href="{base}@{quote(user)}" class="u-url mention">'
            f"@<span>{html.escape(user)}</span></a></span>",
        )
    if post.lang == "en":
        for tag in post.tags:
            if escaped == f"#{html.escape(tag)}":
                escaped = (
                    f'<a href="{base}tags/{quote(tag)}" class="mention hashtag" rel="tag">'
                    f"#<span>{html.escape(tag)}</span></a>"
                )
    return escaped


def status_json(post: MicroPost, base: str) -> dict[str, Any]:
    """A post as a Mastodon ``Status`` entity (the fields topicrawl and most clients read)."""
    account_id = str(zlib.crc32(post.author.encode()))
    return {
        "id": str(post.id),
        "created_at": _iso(post.created_at),
        "in_reply_to_id": None,
        "sensitive": False,
        "spoiler_text": "",
        "visibility": "public",
        "language": post.lang,
        "uri": f"{base}users/{quote(post.author)}/statuses/{post.id}",
        "url": f"{base}@{quote(post.author)}/{post.id}",
        "replies_count": post.comments,
        "reblogs_count": post.reposts,
        "favourites_count": post.likes,
        "content": _content_html(post, base),
        "account": {
            "id": account_id,
            "username": post.author,
            "acct": post.author,
            "display_name": post.author,
            "url": f"{base}@{quote(post.author)}",
        },
        "media_attachments": [],
        "mentions": [
            {"username": u, "acct": u, "url": f"{base}@{quote(u)}"} for u in post.mentions
        ],
        "tags": [{"name": t, "url": f"{base}tags/{quote(t)}"} for t in post.tags],
        "emojis": [],
    }


@dataclass(frozen=True, slots=True)
class _Page:
    posts: tuple[MicroPost, ...]
    more: bool


def _id_param(request: aioweb.Request, name: str) -> int | None:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError as exc:
        raise aioweb.HTTPBadRequest(
            text=f'{{"error": "{name} must be a status id"}}', content_type="application/json"
        ) from exc


def _int_param(request: aioweb.Request, name: str, default: int) -> int:
    raw = request.query.get(name)
    try:
        return default if raw is None or raw == "" else int(raw)
    except ValueError as exc:
        raise aioweb.HTTPBadRequest(
            text=f'{{"error": "{name} must be an integer"}}', content_type="application/json"
        ) from exc


class MicroblogServer(ThreadedServer):
    """Serves a :class:`MicroblogWorld` on a loopback address (see the module docstring).

    Args:
        world: what to serve.
        host: loopback address to listen on.
        port: 0 for an ephemeral port.
        period_seconds: when set, the current period advances by the wall clock, one every
            ``period_seconds`` from :meth:`start`; otherwise the caller moves it with
            :meth:`advance` / :attr:`period`.
        rate_limit: requests allowed per ``rate_window`` seconds (per client address).
        rate_window: the window, in seconds.
    """

    thread_name = "demo-microblog"

    def __init__(
        self,
        world: MicroblogWorld,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        period_seconds: float | None = None,
        rate_limit: int = 300,
        rate_window: float = 300.0,
    ) -> None:
        if not host.startswith("127."):
            raise ConfigError("the demo microblog listens on loopback (127.0.0.0/8) only")
        if rate_limit < 1 or rate_window <= 0:
            raise ConfigError("rate_limit must be >= 1 and rate_window > 0")
        if period_seconds is not None and period_seconds <= 0:
            raise ConfigError("period_seconds must be > 0")
        self.world = world
        self._host = host
        self._port = port
        self._period_seconds = period_seconds
        self._period = 0
        self._started_at = 0.0
        self._runner: aioweb.AppRunner | None = None
        self._base = ""
        self._limit = RateWindow(rate_limit, rate_window)

    # -- periods -----------------------------------------------------------------------------

    @property
    def period(self) -> int:
        """The latest period whose posts are served."""
        if self._period_seconds is not None and self._started_at:
            elapsed = time.monotonic() - self._started_at
            return min(self.world.periods - 1, int(elapsed // self._period_seconds))
        return self._period

    @period.setter
    def period(self, value: int) -> None:
        if not 0 <= value < self.world.periods:
            raise ValueError(f"period must be in 0..{self.world.periods - 1}, got {value}")
        self._period = value

    def advance(self) -> int:
        """Move to the next period (staying at the last); returns the new period."""
        self._period = min(self._period + 1, self.world.periods - 1)
        return self._period

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT/``.

        Raises:
            RuntimeError: not started.
        """
        if not self._base:
            raise RuntimeError("the demo microblog has not been started")
        return self._base

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> str:
        """Listen; returns the base URL."""
        if self._runner is not None:
            raise RuntimeError("the demo microblog is already started")
        app = aioweb.Application()
        app.router.add_get("/api/v2/search", self._search)
        app.router.add_get("/api/v1/timelines/tag/{hashtag}", self._tag)
        app.router.add_get("/api/v1/instance", self._instance)
        runner, port = await serve_app(app, self._host, self._port)
        self._runner = runner
        self._base = f"http://{self._host}:{port}/"
        self._started_at = time.monotonic()
        self._limit.clear()
        return self._base

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    # -- requests ----------------------------------------------------------------------------

    @property
    def requests(self) -> int:
        """Requests received (refused ones too)."""
        return self._limit.requests

    @property
    def rejected(self) -> int:
        """Requests refused with a 429."""
        return self._limit.rejected

    def _rate(self, request: aioweb.Request) -> tuple[dict[str, str], bool]:
        """Rate-limit headers for this request, and whether it is over the limit."""
        headers, allowed = self._limit.hit(request.remote or "?")
        return headers, not allowed

    def _visible(self) -> list[MicroPost]:
        current = self.period
        return [p for p in self.world.posts if p.period <= current]

    def _page(self, request: aioweb.Request, posts: list[MicroPost]) -> _Page:
        limit = min(MAX_PAGE, max(1, _int_param(request, "limit", DEFAULT_PAGE)))
        offset = max(0, _int_param(request, "offset", 0))
        max_id = _id_param(request, "max_id")
        since_id = _id_param(request, "since_id")
        min_id = _id_param(request, "min_id")
        chosen = [
            p
            for p in posts
            if (max_id is None or p.id < max_id)
            and (since_id is None or p.id > since_id)
            and (min_id is None or p.id > min_id)
        ]
        if min_id is not None:
            # Mastodon's min_id pages forward from the oldest: the page just after min_id.
            chosen.sort(key=lambda p: p.id)
            page = chosen[offset : offset + limit]
            page.sort(key=lambda p: -p.id)
        else:
            chosen.sort(key=lambda p: -p.id)
            page = chosen[offset : offset + limit]
        return _Page(tuple(page), more=len(chosen) > offset + limit)

    def _link_header(self, request: aioweb.Request, page: _Page) -> str | None:
        if not page.posts:
            return None
        query = {k: v for k, v in request.query.items() if k not in {"max_id", "min_id", "offset"}}
        path = f"{self._base}{request.path.lstrip('/')}"
        links = []
        if page.more:
            nxt = urlencode({**query, "max_id": str(page.posts[-1].id)})
            links.append(f'<{path}?{nxt}>; rel="next"')
        prev = urlencode({**query, "min_id": str(page.posts[0].id)})
        links.append(f'<{path}?{prev}>; rel="prev"')
        return ", ".join(links)

    def _limited(self, request: aioweb.Request) -> aioweb.Response | None:
        headers, over = self._rate(request)
        if not over:
            return None
        return aioweb.json_response({"error": "Too many requests"}, status=429, headers=headers)

    async def _search(self, request: aioweb.Request) -> aioweb.Response:
        limited = self._limited(request)
        if limited is not None:
            return limited
        query = request.query.get("q", "")[:200]
        kind = request.query.get("type", "statuses")
        posts: list[MicroPost] = []
        if kind == "statuses" and query.strip():
            posts = [p for p in self._visible() if p.matches(query)]
        page = self._page(request, posts)
        body = {
            "accounts": [],
            "hashtags": [],
            "statuses": [status_json(p, self._base) for p in page.posts],
        }
        return self._answer_counted(request, body, page)

    async def _tag(self, request: aioweb.Request) -> aioweb.Response:
        limited = self._limited(request)
        if limited is not None:
            return limited
        tag = request.match_info["hashtag"].lower()[:200]
        posts = [p for p in self._visible() if any(t.lower() == tag for t in p.tags)]
        page = self._page(request, posts)
        return self._answer_counted(request, [status_json(p, self._base) for p in page.posts], page)

    async def _instance(self, request: aioweb.Request) -> aioweb.Response:
        limited = self._limited(request)
        if limited is not None:
            return limited
        body = {"uri": self._base, "title": "topicrawl demo microblog", "version": "4.2.0"}
        return self._answer_counted(request, body, None)

    def _answer_counted(
        self, request: aioweb.Request, body: object, page: _Page | None
    ) -> aioweb.Response:
        """Answer with the headers of the hit already counted by :meth:`_limited`."""
        response = aioweb.json_response(body, headers=self._limit.headers(request.remote or "?"))
        if page is not None:
            link = self._link_header(request, page)
            if link:
                response.headers["Link"] = link
        return response
