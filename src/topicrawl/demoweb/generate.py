"""Generates the demo web's hosts and pages from a seed: hubs, sections, articles, utility pages."""

from __future__ import annotations

import ipaddress
import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import overload

from topicrawl.core.errors import ConfigError
from topicrawl.demoweb.lab import lab_pages
from topicrawl.demoweb.model import DemoHost, DemoLink, DemoPage, HrefStyle, Kind
from topicrawl.demoweb.text import LOCAL_NEWS, TOPICS, TextGenerator, Topic

__all__ = ["Article", "build", "dead_address"]

_EN_NAMES = ("Northwind Gazette", "Daily Orbit", "Green Fork Review", "Harbour Post")
_ZH_NAMES = ("晨光日报", "东方视点", "星河网", "南山评论")
_UTILITY = {
    "en": (("/about.html", "About us"), ("/contact.html", "Contact"), ("/privacy.html", "Privacy")),
    "zh": (
        ("/about.html", "关于我们"),
        ("/contact.html", "联系我们"),
        ("/privacy.html", "隐私政策"),
    ),
}
_STAFF = {
    "en": (("/private/index.html", "Staff area"), ("/private/press-kit.html", "Press kit")),
    "zh": (("/private/index.html", "员工专区"), ("/private/press-kit.html", "媒体资料")),
}
_TRACKING = ("utm_source=newsletter&utm_medium=email", "utm_source=related&utm_campaign=recirc")


@dataclass(frozen=True, slots=True)
class Article:
    """A planned article: where it lives and what it is about, before its text is written."""

    host: str
    path: str
    topic: Topic | None
    lang: str
    title: str


def dead_address(base_address: str) -> str:
    """A loopback address in the base's /24 that no host uses: links to it are refused."""
    base = ipaddress.IPv4Address(base_address)
    return str(ipaddress.IPv4Address(int(base) & 0xFFFFFF00 | 254))


def build(
    *,
    seed: int,
    hosts: int,
    pages_per_host: int,
    base_address: str,
    crawl_delay: float,
    huge_bytes: int,
    bomb_bytes: int,
) -> tuple[tuple[DemoHost, ...], tuple[DemoPage, ...]]:
    """Hosts and every resource they serve; see ``DemoWeb.generate`` for the arguments."""
    host_specs = _hosts(hosts, base_address, crawl_delay)
    if pages_per_host < 1:
        raise ConfigError("pages_per_host must be at least 1")
    if crawl_delay < 0 or huge_bytes < 1 or bomb_bytes < 1:
        raise ConfigError("crawl_delay, huge_bytes and bomb_bytes must not be negative")
    rng = random.Random(seed)
    writer = TextGenerator(rng)
    plans = {
        h.address: _plan(h, index, pages_per_host, writer) for index, h in enumerate(host_specs)
    }
    by_topic = _ByTopic(plans)
    sites = [
        _Site(
            host=h,
            index=i,
            hosts=host_specs,
            plans=plans,
            by_topic=by_topic,
            rng=rng,
            writer=writer,
        )
        for i, h in enumerate(host_specs)
    ]
    pages: list[DemoPage] = []
    for site in sites:
        pages.extend(site.pages())
    first = plans[host_specs[0].address]
    first_site = sites[0]
    lab = lab_pages(
        host=host_specs[0],
        nav=first_site.nav(),
        footer=first_site.footer(),
        articles=[a for a in first if a.topic is not None],
        other_home=host_specs[1 % len(host_specs)].address,
        dead_host=dead_address(base_address),
        writer=writer,
        rng=rng,
        huge_bytes=huge_bytes,
        bomb_bytes=bomb_bytes,
    )
    pages = _linked_by_entities([*pages, *lab], host_specs)
    lab = pages[len(pages) - len(lab) :]
    pages = pages[: len(pages) - len(lab)]
    by_path = {p.path: p for p in pages if p.host == host_specs[0].address}
    original = by_path[next(a.path for a in first if a.topic is not None)]
    duplicate = replace(original, path="/archive" + original.path, duplicate_of=original.path)
    return host_specs, (*pages, *lab, duplicate)


_NEXT = range(1, 4)
"""Which of the ring's next articles an article links (the next three: a chain of one link each
makes an entity's last page as many fetches away as it has pages)."""
_CONTENT = frozenset({Kind.HOME, Kind.SECTION, Kind.ARTICLE, Kind.UTILITY, Kind.PRIVATE})
"""The kinds of page an entity's name may link to (the site's own pages, not the lab's)."""


def _disallowed(host: DemoHost, path: str) -> bool:
    """Whether the host's robots.txt keeps an ordinary crawler from ``path`` (the longest
    matching prefix wins, Allow on a tie)."""
    longest = max((len(p) for p in host.disallow if path.startswith(p)), default=-1)
    return longest > max((len(p) for p in host.allow if path.startswith(p)), default=-1)


def _linked_by_entities(pages: Sequence[DemoPage], hosts: Sequence[DemoHost]) -> list[DemoPage]:
    """The pages, each article that names a vocabulary's entity linking in its text to more
    pages that name it, with the name as the anchor (as a site links a name to more about it).

    The site's pages naming an entity (those a crawler may fetch, in generation order; not
    the lab's fixtures nor the sponsored pages) are joined in a ring of its articles: each
    links to the next three; the other pages naming it (hubs, utility pages) are shared out among
    the articles, one link each. So every such page is reached by a link that names the
    entity, from a page that names it. The link sits in
    the article's first paragraph with the name. Nothing is drawn at random: the demo web of
    a seed is the same text as before, with these links added.
    """
    by_address = {h.address: h for h in hosts}
    names = sorted({n for t in TOPICS for n in (*t.en.entities, *t.zh.entities)})
    naming: dict[str, list[int]] = {name: [] for name in names}
    for index, page in enumerate(pages):
        if page.kind not in _CONTENT or page.path.startswith("/ads/"):
            continue  # the lab's fixtures and the sponsored pages are reached as they are
        if _disallowed(by_address[page.host], page.path):
            continue
        text = page.text
        for name in names:
            if name in text:
                naming[name].append(index)
    added: dict[int, list[DemoLink]] = {}
    for name in names:
        articles = [i for i in naming[name] if pages[i].kind is Kind.ARTICLE]
        others = [i for i in naming[name] if pages[i].kind is not Kind.ARTICLE]
        if not articles:
            continue
        targets: dict[int, list[int]] = {i: [] for i in articles}
        for n, i in enumerate(articles):  # the next ones in the ring (a ring of one: none)
            targets[i] += [articles[(n + k) % len(articles)] for k in _NEXT if k < len(articles)]
        for n, other in enumerate(others):
            targets[articles[n % len(articles)]].append(other)
        for source, ends in targets.items():
            page = pages[source]
            sep = "" if page.lang == "zh" else " "
            where = next(  # the first paragraph with the name (else the first)
                (i for i, sentences in enumerate(page.paragraphs) if name in sep.join(sentences)),
                0,
            )
            added.setdefault(source, []).extend(
                DemoLink(
                    host=pages[end].host,
                    target=pages[end].path,
                    anchor=name,
                    block="body",
                    style=HrefStyle.ROOT if pages[end].host == page.host else HrefStyle.ABSOLUTE,
                    paragraph=where,
                )
                for end in ends
            )
    linked = list(pages)
    for source, links in added.items():
        page = pages[source]
        nav = [link for link in page.links if link.block == "nav"]
        body = sorted(
            [link for link in page.links if link.block == "body"] + links,
            key=lambda link: link.paragraph,
        )
        rest = [link for link in page.links if link.block not in ("nav", "body")]
        linked[source] = replace(page, links=(*nav, *body, *rest))
    return linked


def _hosts(count: int, base_address: str, crawl_delay: float) -> tuple[DemoHost, ...]:
    try:
        base = ipaddress.IPv4Address(base_address)
    except ValueError as exc:
        raise ConfigError(f"base_address {base_address!r} is not an IPv4 address") from exc
    if not 1 <= count <= 200:
        raise ConfigError("hosts must be between 1 and 200")
    last = base + (count - 1)
    if not (base.is_loopback and last.is_loopback) or (int(last) & 0xFF) >= 254:
        raise ConfigError(f"{count} hosts from {base_address} leave 127.0.0.0/8 or reach .254")
    english = math.ceil(count / 2)
    specs = []
    for i in range(count):
        lang = "en" if i < english else "zh"
        names = _EN_NAMES if lang == "en" else _ZH_NAMES
        j = i if lang == "en" else i - english
        name = names[j % len(names)] + (f" {j // len(names) + 1}" if j >= len(names) else "")
        delay = crawl_delay if i == min(1, count - 1) else 0.0
        specs.append(DemoHost(address=str(base + i), name=name, lang=lang, crawl_delay=delay))
    return tuple(specs)


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60].rstrip("-") or "article"


def _plan(host: DemoHost, index: int, count: int, writer: TextGenerator) -> list[Article]:
    """The host's articles: half on its primary topic, a tenth off-topic, the rest spread."""
    primary = TOPICS[index % len(TOPICS)]
    others = [t for t in TOPICS if t is not primary]
    minority = "zh" if host.lang == "en" else "en"
    seen: dict[str | None, int] = {}
    used: set[str] = set()
    plan = []
    for j in range(count):
        topic = None if j % 10 == 9 else primary if j % 2 == 0 else others[(j // 2) % len(others)]
        key = topic.id if topic else None
        nth = seen[key] = seen.get(key, -1) + 1
        lang = minority if nth % 4 == 3 else host.lang
        title = writer.title(topic, lang)
        section = (topic or LOCAL_NEWS).slug
        stem = f"{1000 + j:04d}" if lang == "zh" else _slug(title)
        path = f"/{section}/{stem}.html"
        while path in used:
            stem += "-2"
            path = f"/{section}/{stem}.html"
        used.add(path)
        plan.append(Article(host.address, path, topic, lang, title))
    return plan


class _ByTopic:
    """Every host's articles grouped by topic, in host order, so "this topic's articles on the
    other hosts" is a view, not a list built per article (that was quadratic in the web's
    size: 200 hosts of 500 pages did not finish generating in 7 minutes)."""

    def __init__(self, plans: dict[str, list[Article]]) -> None:
        self._all: dict[Topic | None, list[Article]] = {}
        self._blocks: dict[tuple[Topic | None, str], tuple[int, int]] = {}
        for host, plan in plans.items():  # host order: plans are built in it
            for topic in dict.fromkeys(a.topic for a in plan):
                articles = self._all.setdefault(topic, [])
                start = len(articles)
                articles.extend(a for a in plan if a.topic is topic)
                self._blocks[topic, host] = (start, len(articles))

    def elsewhere(self, topic: Topic | None, host: str) -> _Elsewhere:
        """The topic's articles on every host but ``host``, in host order."""
        articles = self._all.get(topic, [])
        start, end = self._blocks.get((topic, host), (len(articles), len(articles)))
        return _Elsewhere(articles, start, end - start)


class _Elsewhere(Sequence[Article]):
    """A list with one block (``gap`` items from ``start``) left out, without copying it."""

    def __init__(self, items: list[Article], start: int, gap: int) -> None:
        self._items = items
        self._start = start
        self._gap = gap

    def __len__(self) -> int:
        return len(self._items) - self._gap

    @overload
    def __getitem__(self, index: int) -> Article: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Article]: ...

    def __getitem__(self, index: int | slice) -> Article | Sequence[Article]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._items[index if index < self._start else index + self._gap]


class _Site:
    """Writes one host's pages; links reach into every host's plan."""

    def __init__(
        self,
        *,
        host: DemoHost,
        index: int,
        hosts: tuple[DemoHost, ...],
        plans: dict[str, list[Article]],
        by_topic: _ByTopic,
        rng: random.Random,
        writer: TextGenerator,
    ) -> None:
        self.host = host
        self.index = index
        self.hosts = hosts
        self.plans = plans
        self.articles = plans[host.address]
        self.rng = rng
        self.writer = writer
        self.lang = host.lang
        self.by_topic = by_topic

    def pages(self) -> list[DemoPage]:
        pages = [self._home()]
        pages += [self._section(topic) for topic in (*TOPICS, LOCAL_NEWS)]
        pages += [self._article(article, j) for j, article in enumerate(self.articles)]
        pages += self._utility()
        addr = self.host.address
        pages.append(
            DemoPage(host=addr, path="/robots.txt", kind=Kind.ROBOTS, content_type="text/plain")
        )
        pages.append(
            DemoPage(
                host=addr, path="/sitemap.xml", kind=Kind.SITEMAP, content_type="application/xml"
            )
        )
        pages.append(
            DemoPage(
                host=addr, path="/feed.rss", kind=Kind.FEED, content_type="application/rss+xml"
            )
        )
        pages.append(
            DemoPage(
                host=addr, path="/feed.atom", kind=Kind.FEED, content_type="application/atom+xml"
            )
        )
        return pages

    # -- link blocks --------------------------------------------------------------------------

    def _style(self, *, same_host: bool) -> HrefStyle:
        roll = self.rng.random()
        if not same_host:
            return HrefStyle.UPPER if roll < 0.15 else HrefStyle.ABSOLUTE
        for style, share in (
            (HrefStyle.ROOT, 0.6),
            (HrefStyle.RELATIVE, 0.8),
            (HrefStyle.ABSOLUTE, 0.9),
            (HrefStyle.DOTDOT, 0.95),
        ):
            if roll < share:
                return style
        return HrefStyle.UPPER

    def _link(self, article: Article, block: str, paragraph: int = -1) -> DemoLink:
        roll = self.rng.random()
        return DemoLink(
            host=article.host,
            target=article.path,
            anchor=article.title,
            block=block,
            style=self._style(same_host=article.host == self.host.address),
            query=self.rng.choice(_TRACKING) if roll < 0.1 else "",
            fragment="comments" if 0.1 <= roll < 0.2 else "",
            paragraph=paragraph,
        )

    def nav(self) -> list[DemoLink]:
        addr = self.host.address
        home = "首页" if self.lang == "zh" else "Home"
        links = [DemoLink(host=addr, target="/", anchor=home, block="nav")]
        for topic in (*TOPICS, LOCAL_NEWS):
            links.append(
                DemoLink(
                    host=addr,
                    target=f"/{topic.slug}/",
                    anchor=topic.name(self.lang),
                    block="nav",
                    style=HrefStyle.RELATIVE if self.rng.random() < 0.3 else HrefStyle.ROOT,
                )
            )
        return links

    def footer(self) -> list[DemoLink]:
        addr = self.host.address
        entries = [*_UTILITY[self.lang], *_STAFF[self.lang]]
        if self.index == 0:
            entries += [("/lab/", "Site lab"), ("/calendar/2024/01", "Events calendar")]
        links = [DemoLink(host=addr, target=t, anchor=a, block="footer") for t, a in entries]
        offer = f"/ads/offer-{self.rng.randint(1, 2)}.html"
        sponsored = "赞助内容" if self.lang == "zh" else "Sponsored"
        links.append(
            DemoLink(host=addr, target=offer, anchor=sponsored, block="footer", nofollow=True)
        )
        links += [
            DemoLink(
                host=other.address,
                target="/",
                anchor=other.name,
                block="partners",
                style=self._style(same_host=False),
            )
            for other in self.hosts
            if other.address != addr
        ]
        return links

    # -- pages ----------------------------------------------------------------------------------

    def _home(self) -> DemoPage:
        latest = [self._link(a, "latest") for a in self.articles[:8]]
        teasers = []
        for topic in TOPICS:
            mine = [a for a in self.articles if a.topic is topic][:2]
            teasers += [self._link(a, f"teaser-{topic.slug}") for a in mine]
        welcome = (
            "欢迎来到" + self.host.name + "。"
            if self.lang == "zh"
            else f"Welcome to {self.host.name}."
        )
        return DemoPage(
            host=self.host.address,
            path="/",
            kind=Kind.HOME,
            title=self.host.name,
            lang=self.lang,
            paragraphs=((welcome, self.writer.sentence(None, self.lang)),),
            links=(*self.nav(), *latest, *teasers, *self.footer()),
        )

    def _section(self, topic: Topic) -> DemoPage:
        listed = [self._link(a, "list") for a in self.articles if (a.topic or LOCAL_NEWS) is topic]
        real = None if topic is LOCAL_NEWS else topic
        return DemoPage(
            host=self.host.address,
            path=f"/{topic.slug}/",
            kind=Kind.SECTION,
            title=topic.name(self.lang),
            lang=self.lang,
            true_topic=real.id if real else None,
            paragraphs=self.writer.paragraphs(real, self.lang, 1),
            links=(*self.nav(), *listed, *self.footer()),
        )

    def _article(self, article: Article, j: int) -> DemoPage:
        paragraphs = self.writer.paragraphs(article.topic, article.lang, self.rng.randint(3, 6))
        body = []
        for _ in range(self.rng.randint(1, 3)):
            where = self.rng.randrange(len(paragraphs))
            body.append(self._link(self._pick(article), "body", where))
        if j % 12 == 5:
            gone = f"/{(article.topic or LOCAL_NEWS).slug}/retired-{j}.html"
            anchor = "旧文章" if article.lang == "zh" else "an older story"
            body.append(
                DemoLink(
                    host=self.host.address, target=gone, anchor=anchor, block="body", paragraph=0
                )
            )
        body.sort(key=lambda link: link.paragraph)
        return DemoPage(
            host=self.host.address,
            path=article.path,
            kind=Kind.ARTICLE,
            title=article.title,
            lang=article.lang,
            true_topic=article.topic.id if article.topic else None,
            paragraphs=paragraphs,
            links=(*self.nav(), *body, *self._related(article), *self.footer()),
        )

    def _pick(self, article: Article) -> Article:
        """An in-text link target: mostly the same topic, sometimes another host."""
        roll = self.rng.random()
        pool = self.articles
        if roll < 0.2 and len(self.hosts) > 1:
            pool = self.plans[
                self.rng.choice([h for h in self.hosts if h is not self.host]).address
            ]
        if roll < 0.75:
            same = [a for a in pool if a.topic is article.topic and a is not article]
            pool = same or pool
        return self.rng.choice(pool)

    def _related(self, article: Article) -> list[DemoLink]:
        same = [a for a in self.articles if a.topic is article.topic and a is not article]
        picks = self.rng.sample(same, min(3, len(same)))
        away = self.by_topic.elsewhere(article.topic, self.host.address)
        if away:
            picks.append(self.rng.choice(away))
        cross = [a for a in self.articles if a.topic is not article.topic]
        if cross:
            picks.append(self.rng.choice(cross))
        return [self._link(a, "related") for a in picks]

    def _utility(self) -> list[DemoPage]:
        addr, lang = self.host.address, self.lang
        nav, footer = self.nav(), self.footer()
        pages = [
            DemoPage(
                host=addr,
                path=path,
                kind=Kind.UTILITY,
                title=title,
                lang=lang,
                paragraphs=self.writer.paragraphs(None, lang, 1),
                links=(*nav, *footer),
            )
            for path, title in _UTILITY[lang]
        ]
        primary = TOPICS[self.index % len(TOPICS)]
        private: list[tuple[str, str, Topic | None, tuple[DemoLink, ...]]] = [
            ("/private/drafts.html", "Drafts", primary, ()),
            ("/private/salaries.html", "Salaries", None, ()),
            ("/private/press-kit.html", "Press kit", None, ()),
        ]
        index_links = tuple(
            DemoLink(host=addr, target=p, anchor=t, block="list") for p, t, _, _ in private
        )
        private.insert(0, ("/private/index.html", "Staff area", None, index_links))
        for path, title, topic, links in private:
            pages.append(
                DemoPage(
                    host=addr,
                    path=path,
                    kind=Kind.PRIVATE,
                    title=title,
                    lang=lang,
                    true_topic=topic.id if topic else None,
                    paragraphs=self.writer.paragraphs(topic, lang, 2),
                    links=(*nav, *links),
                )
            )
        for n in (1, 2):
            pages.append(
                DemoPage(
                    host=addr,
                    path=f"/ads/offer-{n}.html",
                    kind=Kind.UTILITY,
                    title=f"Special offer {n}",
                    lang=lang,
                    paragraphs=self.writer.paragraphs(None, lang, 1),
                    links=tuple(nav),
                )
            )
        return pages
