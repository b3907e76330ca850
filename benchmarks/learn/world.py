"""The simulated web of the assignment benchmark: providers, hosts, URLs and arrival traces.

Pure Python and numpy, seeded. A *provider* is a hosting family with its own URL shape (host
names and paths) and its own way of treating the crawl's nodes: some block a node (403), some
throttle one (429 with a probability), some are far from a node (its latency multiplied).
Providers are the same in every seed (like real hosting companies that block one data
centre); hosts are drawn anew for every seed, so every test host is unseen in training and
only its URL shape can tell which provider it belongs to.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

NODE_SPEEDS = (1.0, 1.0, 0.5, 0.25)
NODE_IDS = ("n0", "n1", "n2", "n3")
SLOTS = 4  # tasks a node works on at once

_SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ra",
    "ve",
    "no",
    "tu",
    "sa",
    "pe",
    "di",
    "go",
    "ba",
    "ne",
    "ri",
    "fu",
    "zo",
    "ha",
    "ly",
    "qu",
    "xe",
    "wo",
    "ji",
    "ce",
    "mu",
    "ta",
    "ko",
    "ar",
    "en",
    "il",
    "or",
    "um",
    "st",
    "tr",
    "pl",
    "gr",
    "br",
]
_WORDS = [
    "news",
    "article",
    "blog",
    "post",
    "item",
    "product",
    "page",
    "guide",
    "docs",
    "help",
    "forum",
    "topic",
    "user",
    "wiki",
    "category",
    "tag",
    "archive",
    "search",
    "image",
    "video",
    "media",
    "data",
    "report",
    "story",
    "review",
    "about",
]

Shape = Callable[[np.random.Generator, str], str]


def _word(rng: np.random.Generator, parts: int = 3) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(parts))


def _path_word(rng: np.random.Generator) -> str:
    return str(rng.choice(_WORDS))


@dataclass(frozen=True, slots=True)
class Provider:
    """A hosting family: how its host names and URLs look, and how it treats each node.

    ``refuse[n]`` is the chance a fetch from node ``n`` is refused (``status[n]``: 403 for a
    block, 429 for a throttle); ``far[n]`` multiplies the latency from node ``n``.
    """

    name: str
    host: Callable[[np.random.Generator], str]
    path: Shape
    refuse: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    status: tuple[int, int, int, int] = (200, 200, 200, 200)
    far: tuple[float, float, float, float] = (1.0, 1.0, 1.0, 1.0)


def _num(rng: np.random.Generator, hi: int = 99999) -> int:
    return int(rng.integers(1, hi))


PROVIDERS: tuple[Provider, ...] = (
    Provider(
        "wikifarm",
        lambda r: f"{_word(r)}.wikifarm.org",
        lambda r, h: f"https://{h}/wiki/{_word(r).title()}_{_word(r, 2).title()}",
        refuse=(0.0, 0.0, 1.0, 0.0),
        status=(200, 200, 403, 200),
    ),
    Provider(
        "blogs",
        lambda r: f"{_word(r)}{_word(r, 2)}.com",
        lambda r, h: f"https://{h}/{2010 + _num(r, 16)}/{_num(r, 12):02d}/{_word(r)}-{_word(r)}/",
    ),
    Provider(
        "shopcdn",
        lambda r: f"shop.{_word(r)}.net",
        lambda r, h: f"https://{h}/p/{_num(r)}?ref={_num(r, 1 << 30):x}",
        refuse=(1.0, 0.0, 0.0, 0.0),
        status=(403, 200, 200, 200),
    ),
    Provider(
        "docsio",
        lambda r: f"{_word(r)}.io",
        lambda r, h: (
            f"https://{h}/docs/v{_num(r, 9)}.{_num(r, 20)}/{_path_word(r)}/{_word(r)}.html"
        ),
        far=(1.0, 1.0, 1.0, 3.0),
    ),
    Provider(
        "phpcms",
        lambda r: f"www.{_word(r)}.org",
        lambda r, h: f"https://{h}/index.php?title={_word(r).title()}&action=view",
        refuse=(0.0, 0.0, 0.0, 0.6),
        status=(200, 200, 200, 429),
    ),
    Provider(
        "newsuk",
        lambda r: f"www.{_word(r)}.co.uk",
        lambda r, h: f"https://{h}/news/{_path_word(r)}-{_word(r)}-{_num(r, 99999999)}",
        refuse=(0.0, 0.5, 0.0, 0.0),
        status=(200, 429, 200, 200),
        far=(2.0, 1.0, 1.0, 1.0),
    ),
    Provider(
        "pages",
        lambda r: f"{_word(r)}.github.io",
        lambda r, h: f"https://{h}/{_word(r)}/{_path_word(r)}/",
    ),
    Provider(
        "forums",
        lambda r: f"forum.{_word(r)}.com",
        lambda r, h: f"https://{h}/t/{_word(r)}-{_word(r)}/{_num(r)}",
        refuse=(0.0, 1.0, 0.0, 0.0),
        status=(200, 403, 200, 200),
    ),
    Provider(
        "edu",
        lambda r: f"{_word(r, 2)}.edu",
        lambda r, h: f"https://{h}/~{_word(r, 2)}/{_path_word(r)}.html",
        far=(1.0, 2.5, 1.0, 1.0),
    ),
    Provider(
        "apigw",
        lambda r: f"api.{_word(r)}.cloud",
        lambda r, h: f"https://{h}/v{_num(r, 4)}/{_path_word(r)}s/{_num(r)}.json",
        refuse=(0.0, 0.0, 0.7, 0.7),
        status=(200, 200, 429, 429),
    ),
)


@dataclass(frozen=True, slots=True)
class World:
    """One seed's hosts: names, provider, popularity (Zipf), base latency (seconds at speed 1
    and distance 1), per host-and-node distance, and some URLs of each."""

    hosts: tuple[str, ...]
    provider: np.ndarray  # host -> provider index
    popularity: np.ndarray  # sums to 1
    base: np.ndarray  # seconds
    distance: np.ndarray  # (hosts, nodes): latency multipliers
    urls: tuple[tuple[str, ...], ...]

    def refusal(self, host: int, node: int) -> tuple[float, int]:
        """The chance a fetch of ``host`` from ``node`` is refused, and its status."""
        p = PROVIDERS[int(self.provider[host])]
        return p.refuse[node], p.status[node]

    def mean_service(self) -> float:
        """Popularity-weighted mean seconds of a fetch at speed 1 (over the nodes)."""
        return float(self.popularity @ (self.base * self.distance.mean(axis=1)))


def make_world(seed: int, hosts: int = 300, urls_per_host: int = 4, zipf: float = 0.9) -> World:
    """The hosts of one seed (see the module docstring)."""
    rng = np.random.default_rng([seed, 7])
    provider = rng.integers(0, len(PROVIDERS), size=hosts)
    names: list[str] = []
    taken: set[str] = set()
    for i in range(hosts):
        name = PROVIDERS[provider[i]].host(rng)
        while name in taken:
            name = PROVIDERS[provider[i]].host(rng)
        taken.add(name)
        names.append(name)
    ranks = rng.permutation(hosts) + 1
    popularity = ranks.astype(float) ** -zipf
    popularity /= popularity.sum()
    base = rng.lognormal(math.log(0.2), 0.4, size=hosts)
    far = np.array([PROVIDERS[p].far for p in provider])
    distance = far * rng.lognormal(0.0, 0.25, size=(hosts, len(NODE_IDS)))
    urls = tuple(
        tuple(PROVIDERS[provider[i]].path(rng, names[i]) for _ in range(urls_per_host))
        for i in range(hosts)
    )
    return World(tuple(names), provider, popularity, base, distance, urls)
