"""The demo video catalog: films and TV series in English and Chinese, their people, counts.

Everything comes from one seed, so a catalog (and every page rendered from it) is the same on
every run. Counts are rounded to three significant digits so that each written form the site
uses ("12,300", "1.23万", "12.3K", "1.23 million") denotes exactly the same number: a parser
that reads the form right gets the truth exactly.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import random
from dataclasses import dataclass

__all__ = [
    "CountForm",
    "Entity",
    "Title",
    "format_count",
    "grow_count",
    "grown",
    "growth_rate",
    "make_catalog",
    "round_count",
]

_EN_FIRST = [
    "Maria",
    "Daniel",
    "Sofia",
    "Thomas",
    "Elena",
    "Marcus",
    "Clara",
    "Jonah",
    "Ingrid",
    "Victor",
    "Hannah",
    "Oscar",
    "Lucia",
    "Felix",
    "Nora",
    "Adrian",
    "Iris",
    "Samuel",
    "Greta",
    "Julian",
    "Alma",
    "Rafael",
    "Vera",
    "Elliot",
    "Miriam",
    "Tobias",
]
_EN_LAST = [
    "Keller",
    "Marsh",
    "Lindqvist",
    "Okafor",
    "Brennan",
    "Castillo",
    "Hartley",
    "Novak",
    "Whitmore",
    "Ferreira",
    "Ashby",
    "Delacroix",
    "Morrow",
    "Sandoval",
    "Quinlan",
    "Eriksen",
    "Fairbanks",
    "Holloway",
    "Adeyemi",
    "Rourke",
    "Vance",
    "Sterling",
]
_ZH_SURNAMES = [
    "王",
    "李",
    "张",
    "刘",
    "陈",
    "杨",
    "黄",
    "赵",
    "周",
    "吴",
    "徐",
    "孙",
    "马",
    "朱",
    "胡",
    "郭",
    "何",
    "林",
    "罗",
    "高",
    "梁",
    "宋",
    "郑",
    "谢",
]
_ZH_GIVEN = [
    "伟",
    "芳",
    "娜",
    "秀英",
    "敏",
    "静",
    "丽",
    "强",
    "磊",
    "军",
    "洋",
    "勇",
    "艳",
    "杰",
    "娟",
    "涛",
    "明",
    "超",
    "秀兰",
    "霞",
    "平",
    "刚",
    "桂英",
    "志远",
    "晓东",
    "雨桐",
    "子轩",
    "一鸣",
    "思远",
    "佳怡",
    "浩然",
    "若曦",
    "俊杰",
    "欣妍",
]
_EN_ADJ = [
    "Silent",
    "Broken",
    "Golden",
    "Distant",
    "Last",
    "Hidden",
    "Burning",
    "Frozen",
    "Crimson",
    "Endless",
    "Quiet",
    "Wild",
    "Hollow",
    "Northern",
    "Midnight",
    "Fallen",
    "Paper",
    "Glass",
    "Iron",
    "Velvet",
]
_EN_NOUN = [
    "Harbour",
    "Orchard",
    "Frontier",
    "Lantern",
    "Kingdom",
    "Signal",
    "Tide",
    "Garden",
    "Witness",
    "Compass",
    "Meridian",
    "Station",
    "Archive",
    "Orbit",
    "Promise",
    "Harvest",
    "Bridge",
    "Summit",
    "Verdict",
    "Echo",
]
_ZH_A = [
    "长夜",
    "归途",
    "山河",
    "烟雨",
    "风起",
    "孤城",
    "明月",
    "流光",
    "逆光",
    "暗涌",
    "春潮",
    "青山",
    "远方",
    "迷雾",
    "寒江",
    "星河",
]
_ZH_B = [
    "之歌",
    "往事",
    "故人",
    "行者",
    "密码",
    "人间",
    "少年",
    "无声",
    "长歌",
    "归来",
    "之城",
    "时代",
    "旧梦",
    "迷踪",
]
_EN_GENRES = ("drama", "comedy", "thriller", "documentary", "science fiction", "romance")
_ZH_GENRES = ("剧情", "喜剧", "悬疑", "纪录片", "科幻", "爱情")


class CountForm(enum.StrEnum):
    """How a page writes a count."""

    COMMA = "comma"  # 12,300
    WAN = "wan"  # 1.23万 (plain digits under 10,000)
    K = "k"  # 12.3K (plain digits under 1,000)
    MILLION = "million"  # 1.23 million (comma digits under a million)


def round_count(value: int) -> int:
    """``value`` rounded to three significant digits, so every :class:`CountForm` is exact."""
    if value < 1000:
        return value
    digits = len(str(value)) - 3
    return round(value, -digits)


def _decimal(value: int, unit: int) -> str:
    return f"{value / unit:.3f}".rstrip("0").rstrip(".")


def format_count(value: int, form: CountForm) -> str:
    """``value`` written in ``form`` (``value`` should come from :func:`round_count`)."""
    if form is CountForm.WAN and value >= 10_000:
        if value >= 100_000_000:
            return f"{_decimal(value, 100_000_000)}亿"
        return f"{_decimal(value, 10_000)}万"
    if form is CountForm.K and value >= 1000:
        if value >= 1_000_000:
            return f"{_decimal(value, 1_000_000)}M"
        return f"{_decimal(value, 1000)}K"
    if form is CountForm.MILLION and value >= 1_000_000:
        return f"{_decimal(value, 1_000_000)} million"
    if form is CountForm.WAN or (form is CountForm.K and value < 1000):
        return str(value)
    return f"{value:,}"


@dataclass(frozen=True, slots=True)
class Entity:
    """A person of the catalog (director or actor), for account matching by other demos.

    ``titles`` are the ids of the titles they worked on.
    """

    name: str
    role: str  # "director" | "actor"
    lang: str  # "en" | "zh"
    aliases: tuple[str, ...]
    titles: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Title:
    """One film or series of the catalog."""

    id: str
    lang: str  # "en" | "zh"
    name: str
    kind: str  # "film" | "series"
    year: int
    genre: str
    directors: tuple[str, ...]
    actors: tuple[str, ...]
    plays: int
    comments: int
    favourites: int
    episodes: int  # 1 for a film
    synopsis: str


def _people(rng: random.Random, lang: str, count: int) -> list[str]:
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < count:
        if lang == "en":
            name = f"{rng.choice(_EN_FIRST)} {rng.choice(_EN_LAST)}"
        else:
            name = rng.choice(_ZH_SURNAMES) + rng.choice(_ZH_GIVEN)
        if name not in seen:
            seen.add(name)
            names.append(name)
    return names


def _title_name(rng: random.Random, lang: str, seen: set[str]) -> str:
    while True:
        if lang == "en":
            name = f"The {rng.choice(_EN_ADJ)} {rng.choice(_EN_NOUN)}"
        else:
            name = rng.choice(_ZH_A) + rng.choice(_ZH_B)
        if name not in seen:
            seen.add(name)
            return name


def _count(rng: random.Random, low: float, high: float) -> int:
    return round_count(int(10 ** rng.uniform(low, high)))


def _synopsis(rng: random.Random, lang: str, name: str, genre: str) -> str:
    if lang == "en":
        return (
            f"{name} is a {genre} about a family, a promise and the years between them. "
            f"Critics called it {rng.choice(('patient', 'bold', 'tender', 'restless'))}."
        )
    return f"《{name}》是一部{genre}作品，讲述了一个家庭、一个承诺和其间的岁月。"


def make_catalog(seed: int, *, titles: int = 80) -> tuple[list[Title], list[Entity]]:
    """The catalog for ``seed``: ``titles`` titles (half English, half Chinese) and their people."""
    rng = random.Random(f"video-catalog-{seed}")
    pools = {
        (lang, role): _people(rng, lang, 14 if role == "director" else 30)
        for lang in ("en", "zh")
        for role in ("director", "actor")
    }
    seen: set[str] = set()
    catalog: list[Title] = []
    for index in range(titles):
        lang = "en" if index % 2 == 0 else "zh"
        kind = "series" if rng.random() < 0.4 else "film"
        genre_index = rng.randrange(len(_EN_GENRES))
        genre = (_EN_GENRES if lang == "en" else _ZH_GENRES)[genre_index]
        name = _title_name(rng, lang, seen)
        plays = _count(rng, 3.0, 8.3)
        catalog.append(
            Title(
                id=f"{'f' if kind == 'film' else 's'}{index:03d}",
                lang=lang,
                name=name,
                kind=kind,
                year=rng.randint(1988, 2026),
                genre=genre,
                directors=tuple(rng.sample(pools[lang, "director"], rng.choice((1, 1, 1, 2)))),
                actors=tuple(rng.sample(pools[lang, "actor"], rng.randint(2, 5))),
                plays=plays,
                comments=round_count(max(1, int(plays * rng.uniform(0.001, 0.05)))),
                favourites=round_count(max(1, int(plays * rng.uniform(0.005, 0.1)))),
                episodes=1 if kind == "film" else rng.randint(2, 4),
                synopsis=_synopsis(rng, lang, name, genre),
            )
        )
    return catalog, _entities(pools, catalog)


def _entities(pools: dict[tuple[str, str], list[str]], catalog: list[Title]) -> list[Entity]:
    entities: list[Entity] = []
    for (lang, role), names in sorted(pools.items()):
        for name in names:
            field = "directors" if role == "director" else "actors"
            titles = tuple(t.id for t in catalog if name in getattr(t, field))
            if not titles:
                continue
            if lang == "en":
                first, last = name.split(" ", 1)
                aliases: tuple[str, ...] = (f"{first[0]}. {last}", name.replace(" ", ""))
            else:
                aliases = (f"{name}{'导演' if role == 'director' else ''}",)
            entities.append(Entity(name, role, lang, aliases, titles))
    return entities


def growth_rate(title: Title, seed: int = 0) -> float:
    """How fast ``title``'s counts grow: the fraction a day (heavy-tailed: most titles grow a
    little, a few are rising fast; identical for an identical title and seed)."""
    rng = random.Random(f"video-growth-{seed}-{title.id}")
    return min(0.5, 0.01 * rng.lognormvariate(0.0, 1.2))


def grow_count(value: int, rate: float, days: float) -> int:
    """``value`` after ``days`` of growth at ``rate`` a day, rounded as the site writes counts
    (:func:`round_count`; the same for every written form)."""
    if days <= 0 or rate <= 0:
        return value
    return round_count(int(value * math.exp(rate * days)))


def grown(title: Title, days: float, seed: int = 0) -> Title:
    """``title`` as it stands ``days`` days after the site started: its plays, comments and
    favourites grown at its :func:`growth_rate` (comments and favourites a little slower)."""
    if days <= 0:
        return title
    rate = growth_rate(title, seed)
    return dataclasses.replace(
        title,
        plays=grow_count(title.plays, rate, days),
        comments=grow_count(title.comments, 0.8 * rate, days),
        favourites=grow_count(title.favourites, 0.9 * rate, days),
    )
