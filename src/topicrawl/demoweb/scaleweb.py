"""An unbounded web for scale benchmarks: every page is generated from its URL by hashing.

Host ``i`` (``0 <= i < hosts``) lives on loopback address ``base_address + i``; its pages are
``/p/<n>.html`` for every ``n >= 0`` (up to :data:`MAX_PAGE`), so the web has no end: a
breadth-first crawl of a million pages never runs out. The same seed and URL always give the
same bytes (:meth:`ScaleWeb.page`).

Each page has 20 to 60 links (uniform), each one to another host with probability
``cross_host_share`` (0.15 by default; a site's pages link mostly within the site). Links
within a host go to its navigation pages (0-15), to pages just after this one, or anywhere up
to twice this page's number, so every host's pages keep discovering new ones; links to other
hosts favour a few popular hosts and their first pages (a skewed in-degree, as on the web).
About one link in forty goes to ``/private/<n>.html``, which every host's robots.txt
disallows; hosts whose number ends in 3 also disallow ``/p/13`` (pages 13, 130-139, ...).

A host writes about one topic of :data:`topicrawl.demoweb.text.TOPICS` (each page is on its
host's topic with probability 0.7, otherwise on another), in English or, for three hosts in
ten, in Chinese. A page's size is drawn log-uniformly from 5 to 50 KB (UTF-8 bytes).
"""

from __future__ import annotations

import ipaddress
import math
import random
from dataclasses import dataclass, field
from html import escape

import xxhash

from topicrawl.demoweb.text import TOPICS, TextGenerator, Topic

__all__ = ["MAX_PAGE", "ScalePage", "ScaleWeb"]

MAX_PAGE = 10**12
"""The highest page number a host answers; links never point past it."""

_NAV_PAGES = 16
_PARAGRAPHS_PER_POOL = 48
_PRIVATE_ONE_IN = 40
_ON_TOPIC = 0.7
_ZH_HOSTS = 0.3


@dataclass(frozen=True, slots=True)
class ScalePage:
    """One generated page: its body, its links (absolute URLs, in page order), its topic."""

    body: bytes
    links: tuple[str, ...]
    topic: str
    lang: str


@dataclass(frozen=True, slots=True)
class ScaleWeb:
    """The generator: settings in, pages out. Pure and deterministic; no I/O.

    Raises:
        ValueError: a setting is out of range (``hosts`` below 1 or over 65,536, link or size
            bounds reversed, a share outside 0..1, an address whose hosts leave 127.0.0.0/8).
    """

    seed: int = 1
    hosts: int = 1000
    base_address: str = "127.1.0.1"
    port: int = 8080
    min_links: int = 20
    max_links: int = 60
    cross_host_share: float = 0.15
    min_bytes: int = 5_000
    max_bytes: int = 50_000
    _pools: dict[tuple[str, str], tuple[bytes, ...]] = field(init=False, repr=False, compare=False)
    _addresses: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not 1 <= self.hosts <= 65_536:
            raise ValueError("hosts must be 1..65536")
        if not 1 <= self.min_links <= self.max_links <= 10_000:
            raise ValueError("links need 1 <= min_links <= max_links <= 10000")
        if not 0.0 <= self.cross_host_share <= 1.0:
            raise ValueError("cross_host_share must be within 0..1")
        if not 1_000 <= self.min_bytes <= self.max_bytes <= 10_000_000:
            raise ValueError("sizes need 1000 <= min_bytes <= max_bytes <= 10000000")
        if not 0 <= self.port <= 65_535:
            raise ValueError("port must be 0..65535")
        first = ipaddress.IPv4Address(self.base_address)
        loopback = ipaddress.IPv4Network("127.0.0.0/8")
        if first not in loopback or first + (self.hosts - 1) not in loopback:
            raise ValueError(f"{self.hosts} hosts from {first} leave 127.0.0.0/8")
        addresses = tuple(str(first + i) for i in range(self.hosts))
        object.__setattr__(self, "_addresses", addresses)
        object.__setattr__(self, "_pools", _paragraph_pools(self.seed))

    # -- addresses --
    def address(self, host: int) -> str:
        """Host ``host``'s loopback address."""
        return self._addresses[host]

    def host_index(self, address: str) -> int:
        """Which host an address is; ValueError if it is none of this web's."""
        offset = int(ipaddress.IPv4Address(address)) - int(
            ipaddress.IPv4Address(self._addresses[0])
        )
        if not 0 <= offset < self.hosts:
            raise ValueError(f"{address} is not a host of this web")
        return offset

    def url(self, host: int, page: int, *, private: bool = False) -> str:
        folder = "private" if private else "p"
        return f"http://{self._addresses[host]}:{self.port}/{folder}/{page}.html"

    def seeds(self) -> list[str]:
        """Every host's home page."""
        return [self.url(host, 0) for host in range(self.hosts)]

    # -- content --
    def host_topic(self, host: int) -> tuple[Topic, str]:
        rng = random.Random(self._hash("host", host))
        return TOPICS[int(rng.random() * len(TOPICS))], ("zh" if rng.random() < _ZH_HOSTS else "en")

    def robots_txt(self, host: int) -> bytes:
        lines = ["User-agent: *", "Disallow: /private/"]
        if host % 10 == 3:
            lines.append("Disallow: /p/13")
        return ("\n".join(lines) + "\n").encode()

    def disallowed(self, host: int, path: str) -> bool:
        """Whether ``path`` is one this host's robots.txt forbids (for counting violations)."""
        return path.startswith("/private/") or (host % 10 == 3 and path.startswith("/p/13"))

    def link_targets(self, host: int, page: int) -> list[tuple[int, int, bool]]:
        """The page's links as (host, page, private) in page order."""
        rng = random.Random(self._hash("links", host, page))
        count = self.min_links + int(rng.random() * (self.max_links - self.min_links + 1))
        targets: list[tuple[int, int, bool]] = []
        for _ in range(count):
            if rng.random() < self.cross_host_share and self.hosts > 1:
                other = int(self.hosts * rng.random() ** 2)
                if other == host:
                    other = (host + 1) % self.hosts
                targets.append((other, int(64 * rng.random() ** 3), False))
                continue
            roll = rng.random()
            if roll < 0.3:
                target = int(rng.random() * _NAV_PAGES)
            elif roll < 0.65:
                target = page + 1 + int(rng.random() * 64)
            else:
                target = int(rng.random() * (2 * page + 256))
            private = int(rng.random() * _PRIVATE_ONE_IN) == 0
            targets.append((host, min(target, MAX_PAGE), private))
        return targets

    def page(self, host: int, page: int) -> ScalePage:
        """The page ``/p/<page>.html`` of host ``host`` (the same for ever for one seed)."""
        if not 0 <= page <= MAX_PAGE:
            raise ValueError(f"page must be 0..{MAX_PAGE}")
        rng = random.Random(self._hash("page", host, page))
        own, lang = self.host_topic(host)
        topic = own if rng.random() < _ON_TOPIC else TOPICS[int(rng.random() * len(TOPICS))]
        links = [self.url(h, p, private=private) for h, p, private in self.link_targets(host, page)]
        size = int(math.exp(rng.uniform(math.log(self.min_bytes), math.log(self.max_bytes))))
        head = (
            f'<!DOCTYPE html><html lang="{lang}"><head><meta charset="utf-8">'
            f"<title>{escape(topic.name(lang))} {host}-{page}</title></head><body>"
            f"<h1>{escape(topic.name(lang))} {page}</h1><nav>"
        ).encode()
        anchors = "".join(
            f'<a href="{url}">{escape(topic.name(lang))} {i}</a> ' for i, url in enumerate(links)
        )
        parts = [head, anchors.encode(), b"</nav><main>"]
        tail = b"</main></body></html>"
        used = sum(map(len, parts)) + len(tail)
        pool = self._pools[(topic.id, lang)]
        while used < size:
            paragraph = pool[int(rng.random() * len(pool))]
            room = size - used
            if len(paragraph) > room:
                paragraph = _cut_utf8(paragraph, max(room - 7, 0))
                paragraph = b"<p>" + paragraph[3:] + b"</p>" if paragraph else b""
                parts.append(paragraph)
                used = size
                break
            parts.append(paragraph)
            used += len(paragraph)
        parts.append(tail)
        return ScalePage(b"".join(parts), tuple(links), topic.id, lang)

    def _hash(self, *key: object) -> int:
        return xxhash.xxh64_intdigest("/".join(map(str, (self.seed, *key))).encode())


def _paragraphs(topic: Topic, lang: str, rng: random.Random) -> tuple[bytes, ...]:
    writer = TextGenerator(rng)
    out = []
    for _ in range(_PARAGRAPHS_PER_POOL):
        (sentences,) = writer.paragraphs(topic, lang, 1)
        joiner = "" if lang == "zh" else " "
        out.append(f"<p>{escape(joiner.join(sentences))}</p>".encode())
    return tuple(out)


def _paragraph_pools(seed: int) -> dict[tuple[str, str], tuple[bytes, ...]]:
    rng = random.Random(seed)
    return {(t.id, lang): _paragraphs(t, lang, rng) for t in TOPICS for lang in ("en", "zh")}


def _cut_utf8(data: bytes, limit: int) -> bytes:
    """At most ``limit`` bytes of ``data`` ending on a whole UTF-8 character."""
    cut = data[:limit]
    return cut.decode("utf-8", "ignore").encode()
