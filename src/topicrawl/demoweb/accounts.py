"""A demo microblog of accounts around a video catalogue's entities, with its ground truth.

:meth:`AccountWorld.generate` takes entity names (any catalogue's directors, actors and
titles, English or Chinese) and makes, from a seed:

- per entity, some of: an **exact** account (its display name is the name), an **affix**
  account (``张艺谋导演``, ``Hero Official``), a **near** account (a one-letter typo, a longer
  title with a digit), all three in the video domain and the entity's own; and **false
  friends**: ``Li Wei Bakery`` / ``巩俐小吃店`` (the name plus a non-affix word) and, for
  Latin names, a different person one letter away; they post about other things;
- video fans, critics and news accounts (in the domain) and accounts about cooking, football,
  finance, astronomy, gardening and machine learning (not), with the demo web's vocabularies;
- each account's **true influence** (lognormal; entity accounts higher) and activity; a follow
  graph where an account follows others in proportion to their influence, four times more
  within its own domain; follower counts with noise, some inflated by bought followers;
- timelines of original posts (reposted and commented on in proportion to influence) and
  reposts of followed accounts' posts.

The ground truth is the generator's own: :attr:`DemoAccount.domain`, :attr:`DemoAccount.kind`,
:attr:`DemoAccount.entity` and :attr:`DemoAccount.influence`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from topicrawl.core.errors import ConfigError
from topicrawl.demoweb.text import TOPICS, Vocabulary

__all__ = [
    "TIMELINE_EPOCH",
    "VIDEO_WORDS",
    "AccountWorld",
    "DemoAccount",
    "DemoStatus",
    "is_chinese",
]

_EPOCH = 1_735_689_600.0  # 2025-01-01T00:00:00Z
TIMELINE_EPOCH = _EPOCH
"""When the generated timelines start (they run ``days`` from here)."""
_DAY = 86_400.0


def _bar(text: str) -> tuple[str, ...]:
    return tuple(text.split("|"))


VIDEO_WORDS = {
    "en": Vocabulary(
        nouns=_bar(
            "film|series|episode|director|actor|actress|premiere|box office|trailer|"
            "season finale|cast|screenplay|cinema|sequel|documentary|festival|scene|"
            "blockbuster|streaming|soundtrack|character|plot|review|studio"
        ),
        verbs=("directed", "filmed", "starred in", "premiered", "reviewed", "watched", "cast"),
        adjectives=("cinematic", "gripping", "award-winning", "moving", "epic", "hilarious"),
        entities=(),
    ),
    "zh": Vocabulary(
        nouns=_bar(
            "电影|电视剧|导演|演员|票房|预告片|首映|剧集|影评|大结局|主演|剧本|影院|续集|"
            "纪录片|电影节|镜头|大片|片场|配乐|角色|剧情|口碑|定档"
        ),
        verbs=("执导", "拍摄", "主演", "上映", "观看", "推荐", "杀青"),
        adjectives=("精彩", "感人", "震撼", "经典", "好看", "搞笑"),
        entities=(),
    ),
}
_OFF_TOPICS = tuple(t for t in TOPICS)
_ZH_AFFIXES = ("导演", "演员", "工作室", "官方", "电影")
_EN_AFFIXES = ("Official", "Film", "Director", "Actor", "Studio")
_ZH_FALSE = ("小吃店", "粉丝超市", "同名书店", "装修公司")
_EN_FALSE = ("Bakery", "Plumbing", "Realty", "Fitness")


def is_chinese(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


@dataclass(frozen=True, slots=True)
class DemoAccount:
    """A generated account with its truth: ``kind`` is exact, affix, near, false (a false
    friend of ``entity``), fan (a video account) or other; ``influence`` is the generator's."""

    id: str
    username: str
    display_name: str
    lang: str
    kind: str
    entity: str | None
    domain: bool
    influence: float
    activity: float
    bought: int = 0  # bought followers, counted in followers_count only
    topic: str = "video"


@dataclass(frozen=True, slots=True)
class DemoStatus:
    """A post on a timeline; ``reblog_of`` is the original's id for a repost."""

    id: int
    account: str
    created_at: float
    text: str
    lang: str
    reposts: int
    likes: int
    comments: int
    reblog_of: int | None = None


@dataclass(frozen=True)
class AccountWorld:
    """Accounts, follow edges, timelines and the truth (see the module docstring)."""

    accounts: Mapping[str, DemoAccount]
    following: Mapping[str, tuple[str, ...]]
    statuses: Mapping[str, tuple[DemoStatus, ...]]  # newest first, per account
    followers_count: Mapping[str, int]
    entities: tuple[str, ...]
    _posts: Mapping[int, DemoStatus] = field(repr=False, compare=False, default_factory=dict)

    @classmethod
    def generate(
        cls,
        entities: Sequence[str],
        *,
        seed: int = 7,
        fans: int = 60,
        others: int = 120,
        days: float = 14.0,
        max_posts: int = 60,
        focus: float = 0.75,
        spill: float = 0.1,
        popularity: Mapping[str, float] | None = None,
    ) -> AccountWorld:
        """A world around ``entities`` (names, 2 to 100 characters each), identical for
        identical arguments. ``focus`` is the share of a video account's posts about video,
        ``spill`` the share of another account's. ``popularity`` (an entity name's plays, say)
        scales the true influence and the activity of that entity's own accounts (exact,
        affix, near) by the square root of its ratio to the median, within 0.3-3, so that
        they follow the entity's popularity; nothing else of the world changes.

        Raises:
            ConfigError: no usable name, or counts out of range.
        """
        names = list(dict.fromkeys(n.strip() for n in entities if 2 <= len(n.strip()) <= 100))
        if not names:
            raise ConfigError("the demo accounts need at least one entity name (2-100 characters)")
        if fans < 0 or others < 0 or not days > 0 or max_posts < 1:
            raise ConfigError("fans >= 0, others >= 0, days > 0 and max_posts >= 1 required")
        if not 0 <= spill <= focus <= 1:
            raise ConfigError("0 <= spill <= focus <= 1 required")
        rng = random.Random(seed)
        made: list[DemoAccount] = []
        scale = _popularity_scale(popularity or {})

        def add(**kw: object) -> None:
            kind = str(kw["kind"])
            own = kind in {"exact", "affix", "near"}
            boost = 3.0 if own else 1.0
            lift = scale.get(str(kw["entity"]), 1.0) if own else 1.0
            made.append(
                DemoAccount(
                    id=str(100_000 + len(made) * 7 + rng.randrange(7)),
                    influence=lift * boost * rng.lognormvariate(0.0, 1.0),
                    activity=lift * rng.lognormvariate(0.3, 0.6),
                    bought=int(rng.lognormvariate(7.0, 1.0)) if rng.random() < 0.12 else 0,
                    **kw,  # type: ignore[arg-type]
                )
            )

        for name in names:
            _entity_accounts(name, rng, add)
        for k in range(fans):
            lang = "zh" if rng.random() < 0.5 else "en"
            handle = f"影迷{k}号" if lang == "zh" else f"movie_buff_{k}"
            add(
                username=f"fan{k}",
                display_name=handle,
                lang=lang,
                kind="fan",
                entity=None,
                domain=True,
            )
        for k in range(others):
            topic = _OFF_TOPICS[k % len(_OFF_TOPICS)]
            lang = "zh" if rng.random() < 0.5 else "en"
            add(
                username=f"{topic.slug}_{k}",
                display_name=f"{topic.name(lang)} {k}",
                lang=lang,
                kind="other",
                entity=None,
                domain=False,
                topic=topic.id,
            )
        by_id = {a.id: a for a in made}
        following = _follow_graph(made, rng)
        followers = {a.id: a.bought for a in made}
        for targets in following.values():
            for target in targets:
                followers[target] += 1
        for a in made:  # followers from outside the sample, noisy around influence
            followers[a.id] += int(40 * a.influence * rng.lognormvariate(0.0, 0.8))
        posts = _timelines(
            made, following, names, rng, days=days, max_posts=max_posts, mix=(focus, spill)
        )
        flat = {s.id: s for tl in posts.values() for s in tl}
        return cls(
            accounts=MappingProxyType(by_id),
            following=MappingProxyType(following),
            statuses=MappingProxyType(posts),
            followers_count=MappingProxyType(followers),
            entities=tuple(names),
            _posts=MappingProxyType(flat),
        )

    def post(self, status_id: int) -> DemoStatus | None:
        return self._posts.get(status_id)

    def in_domain(self) -> frozenset[str]:
        """Ids of the accounts truly in the video domain."""
        return frozenset(a.id for a in self.accounts.values() if a.domain)

    def true_matches(self) -> dict[str, tuple[str, str]]:
        """Account id -> (entity, kind) for every account that truly is an entity's own."""
        return {
            a.id: (a.entity, a.kind)
            for a in self.accounts.values()
            if a.entity is not None and a.kind in {"exact", "affix", "near"}
        }


def _entity_accounts(name: str, rng: random.Random, add: Callable[..., None]) -> None:
    zh = is_chinese(name)
    lang = "zh" if zh else "en"
    slug = f"e{abs(hash_text(name)) % 10**8}"

    def make(kind: str, display: str, domain: bool, suffix: str, topic: str = "video") -> None:
        add(
            username=f"{slug}{suffix}",
            display_name=display,
            lang=lang,
            kind=kind,
            entity=name,
            domain=domain,
            topic=topic,
        )

    if rng.random() < 0.7:
        make("exact", name, True, "")
    if rng.random() < 0.5:
        affix = rng.choice(_ZH_AFFIXES if zh else _EN_AFFIXES)
        make("affix", f"{name}{affix}" if zh else f"{name} {affix}", True, "_a")
    near = _near_variant(name, rng)
    if near is not None and rng.random() < 0.4:
        make("near", near, True, "_n")
    if rng.random() < 0.5:
        word = rng.choice(_ZH_FALSE if zh else _EN_FALSE)
        topic = rng.choice(_OFF_TOPICS).id
        make("false", f"{name}{word}" if zh else f"{name} {word}", False, "_f", topic)
    if not zh and len(name) >= 8 and rng.random() < 0.3:
        other = _near_variant(name, rng)
        if other is not None:
            make("false", other, False, "_g", rng.choice(_OFF_TOPICS).id)


def hash_text(text: str) -> int:
    """A stable (not per-process) hash of a name."""
    value = 0
    for ch in text:
        value = (value * 1_000_003 + ord(ch)) % (1 << 61)
    return value


def _near_variant(name: str, rng: random.Random) -> str | None:
    """A name one edit away: a typo in a Latin name of 7+ letters, a digit after a Chinese
    title of 4+ characters; None when the name is too short for one to stay recognisable."""
    if is_chinese(name):
        return f"{name}{rng.randint(2, 9)}" if len(name) >= 4 else None
    letters = [k for k, ch in enumerate(name) if ch.isalpha()]
    if len(letters) < 7:
        return None
    k = rng.choice(letters[1:-1])
    if rng.random() < 0.5:
        return name[:k] + name[k + 1 :]  # a dropped letter
    return name[:k] + name[k] + name[k:]  # a doubled letter


def _follow_graph(made: Sequence[DemoAccount], rng: random.Random) -> dict[str, tuple[str, ...]]:
    following: dict[str, tuple[str, ...]] = {}
    ids = [a.id for a in made]
    for a in made:
        weights = [
            0.0 if b.id == a.id else b.influence * (4.0 if b.domain == a.domain else 1.0)
            for b in made
        ]
        count = min(len(made) - 1, 3 + int(rng.lognormvariate(1.8, 0.6)))
        chosen: set[str] = set()
        for _ in range(count * 3):
            if len(chosen) >= count:
                break
            chosen.add(rng.choices(ids, weights=weights, k=1)[0])
        following[a.id] = tuple(sorted(chosen))
    return following


def _sentence(vocab: Vocabulary, rng: random.Random, lang: str, mention: str | None) -> str:
    noun, noun2 = rng.sample(list(vocab.nouns), 2)
    verb, adj = rng.choice(vocab.verbs), rng.choice(vocab.adjectives)
    if lang == "zh":
        text = f"{mention or ''}{verb}的{adj}{noun}，{noun2}也很{adj}"
    else:
        text = f"{mention or 'They'} {verb} the {adj} {noun}, and the {noun2} was {adj}"
    return text


def _timelines(
    made: Sequence[DemoAccount],
    following: Mapping[str, Sequence[str]],
    names: Sequence[str],
    rng: random.Random,
    *,
    days: float,
    max_posts: int,
    mix: tuple[float, float],
) -> dict[str, tuple[DemoStatus, ...]]:
    topics = {t.id: t for t in _OFF_TOPICS}
    drafts: dict[str, list[DemoStatus]] = {}
    for a in made:
        own: list[DemoStatus] = []
        for _ in range(max(3, min(max_posts, int(a.activity * days)))):
            # A video account talks of other things now and then, another account of films:
            # the filter must read the whole timeline.
            on_video = rng.random() < (mix[0] if a.domain else mix[1])
            if on_video:
                vocab = VIDEO_WORDS[a.lang]
                mention = rng.choice(names) if rng.random() < 0.6 else None
            elif a.domain:
                vocab = rng.choice(_OFF_TOPICS).vocabulary(a.lang)
                mention = None
            else:
                vocab = topics[a.topic].vocabulary(a.lang)
                # a false friend says its own name now and then
                mention = a.entity if a.entity and rng.random() < 0.3 else None
            own.append(
                DemoStatus(
                    id=0,
                    account=a.id,
                    created_at=_EPOCH + rng.random() * days * _DAY,
                    text=_sentence(vocab, rng, a.lang, mention),
                    lang=a.lang,
                    reposts=_poisson(rng, 2.0 * a.influence),
                    likes=_poisson(rng, 6.0 * a.influence),
                    comments=_poisson(rng, 1.2 * a.influence),
                )
            )
        drafts[a.id] = own
    # A repost is drafted with reblog_of = the index of its original in ``flat``.
    flat = [s for a in made for s in drafts[a.id]]
    starts: dict[str, int] = {}
    n = 0
    for a in made:
        starts[a.id] = n
        n += len(drafts[a.id])
    for a in made:
        followed = [f for f in following[a.id] if drafts[f]]
        for _ in range(int(len(drafts[a.id]) * 0.3 * rng.random()) if followed else 0):
            source_account = rng.choice(followed)
            k = rng.randrange(len(drafts[source_account]))
            source = drafts[source_account][k]
            flat.append(
                DemoStatus(
                    0,
                    a.id,
                    source.created_at + rng.random() * _DAY,
                    source.text,
                    source.lang,
                    0,
                    0,
                    0,
                    reblog_of=starts[source_account] + k,
                )
            )
    # Ids grow with time, as Mastodon's do.
    order = sorted(range(len(flat)), key=lambda i: (flat[i].created_at, i))
    new_id = {i: rank + 1 for rank, i in enumerate(order)}
    out: dict[str, list[DemoStatus]] = {a.id: [] for a in made}
    for i, s in enumerate(flat):
        original = new_id[s.reblog_of] if s.reblog_of is not None else None
        out[s.account].append(
            DemoStatus(
                new_id[i],
                s.account,
                s.created_at,
                s.text,
                s.lang,
                s.reposts,
                s.likes,
                s.comments,
                original,
            )
        )
    return {a: tuple(sorted(tl, key=lambda s: -s.id)) for a, tl in out.items()}


def _poisson(rng: random.Random, mean: float) -> int:
    if mean <= 0:
        return 0
    if mean > 30:
        return max(0, round(rng.gauss(mean, math.sqrt(mean))))
    limit, k, p = math.exp(-mean), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def _popularity_scale(popularity: Mapping[str, float]) -> dict[str, float]:
    """Each name's factor: sqrt(popularity / median popularity), kept within 0.3-3."""
    values = sorted(v for v in popularity.values() if v > 0)
    if not values:
        return {}
    middle = values[len(values) // 2]
    return {
        name: min(3.0, max(0.3, math.sqrt(max(value, 0.0) / middle)))
        for name, value in popularity.items()
    }
