"""The demo video site: pages, manifests and media of a seeded catalog, with ground truth.

``build_video_site(seed=0)`` makes the same site on every run. Page classes
(:attr:`PageTruth.kind`):

- ``detail``: one per title (``/title/ID.html``): title, type, year, genre, directors, actors,
  plays, comments, favourites. A video page, not a play page.
- ``play``: one per film and per episode (``/play/ID-N.html``) and the embed pages that JSON-LD
  ``embedUrl`` / ``twitter:player`` point at (``/embed/ID-N.html``): fields title, type, plays
  (and episode for series; none on embed pages), media by one :class:`Delivery` each.
- ``list``: the home pages, genre lists, people lists and one page per person (filmography).
- hard cases under ``/hard/`` (play pages and negatives, ``subkind`` ``hard-<case>``) in
  markup forms the main templates never use; see :mod:`topicrawl.demoweb.video.hard`.
- ``/sitemap.xml`` (named in robots.txt) lists every labelled page: the negatives and the
  embed pages are linked from no page, so a crawl seeds them or reads the sitemap.
- ``negative``: hard negatives, ``subkind`` one of ``background`` (a muted, looping hero video),
  ``audio`` (audio-only pages: ``<audio>``, an audio-only HLS master, an audio player config,
  a JSON-LD podcast episode), ``video_list`` (lists of muted preview clips and an ItemList of
  VideoObjects without media) and ``mention`` (articles that only talk about video, with
  escaped ``<video>`` markup in code blocks).

:attr:`PageTruth.video_class` folds these into the benchmark's three classes: ``play``,
``video`` (detail pages) and ``none`` (lists and negatives).
"""

from __future__ import annotations

import dataclasses
import random
from typing import TYPE_CHECKING

from topicrawl.demoweb.video.catalog import (
    CountForm,
    Entity,
    Title,
    grow_count,
    grown,
    growth_rate,
    make_catalog,
    round_count,
)
from topicrawl.demoweb.video.hard import hard_pages
from topicrawl.demoweb.video.heldout import heldout_pages
from topicrawl.demoweb.video.iframes import iframe_pages
from topicrawl.demoweb.video.media import (
    Delivery,
    PlayMedia,
    media_body,
    play_media,
)
from topicrawl.demoweb.video.negatives import negative_pages
from topicrawl.demoweb.video.templates import TEMPLATE_VERSIONS, PageSpec, render_page
from topicrawl.demoweb.video.truth import PageTruth

if TYPE_CHECKING:
    from topicrawl.demoweb.video.server import VersionSchedule, VideoServer

__all__ = ["DEFAULT_BASE", "PageTruth", "VideoSite", "build_video_site"]

DEFAULT_BASE = "http://video.test/"
_GIF = (
    b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00"
    b",\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"
)
_ROBOTS = b"User-agent: *\nAllow: /\n"
_DELIVERIES = tuple(d for d in Delivery if d is not Delivery.EMBED)


class VideoSite:
    """A built video site: page paths, rendering by template version, truth and entities."""

    def __init__(
        self,
        *,
        seed: int,
        base: str,
        titles: list[Title],
        entities: list[Entity],
        pages: dict[str, PageSpec],
        truths: dict[str, PageTruth],
        manifests: dict[str, tuple[str, bytes]],
        files: set[str],
        hard: bool = True,
        heldout: bool = False,
        cross_base: str | None = None,
    ) -> None:
        self.seed = seed
        self.hard = hard
        self.heldout = heldout
        self.cross_base = cross_base
        self.base = base
        self.titles = tuple(titles)
        self._entities = tuple(entities)
        self._pages = pages
        self._truths = truths
        self._manifests = manifests
        self._files = files

    def at_base(self, base: str) -> VideoSite:
        """The same site with absolute URLs (og:video, JSON-LD, truth) under ``base``."""
        return build_video_site(
            seed=self.seed,
            base=base,
            titles=len(self.titles),
            hard=self.hard,
            heldout=self.heldout,
            cross_base=self.cross_base,
        )

    def paths(self) -> list[str]:
        """Every HTML page's path (the labelled pages), sorted."""
        return sorted(self._pages)

    def is_page(self, path: str) -> bool:
        """Whether ``path`` (query string ignored) is one of the labelled HTML pages."""
        return path.split("?", 1)[0] in self._pages

    def server(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        version_schedule: VersionSchedule | None = None,
    ) -> VideoServer:
        """A :class:`VideoServer` for this site, not started (``async with``, ``run_in_thread``)."""
        from topicrawl.demoweb.video.server import VideoServer  # noqa: PLC0415 (cycle)

        return VideoServer(self, host=host, port=port, version_schedule=version_schedule)

    def manifest_paths(self) -> list[str]:
        """Every served HLS playlist and DASH MPD path, sorted."""
        return sorted(self._manifests)

    def media_paths(self) -> list[str]:
        """Every served media file path (MP4, WebM, segments, audio), sorted."""
        return sorted(self._files)

    def url(self, path: str) -> str:
        """The absolute URL of ``path`` on this site."""
        return self.base + path.lstrip("/")

    def truth(self, path: str) -> PageTruth:
        """The ground truth of page ``path`` (a query string is ignored).

        Raises:
            KeyError: not a page of this site.
        """
        return self._truths[path.split("?", 1)[0]]

    def truth_at(self, path: str, day: float) -> PageTruth:
        """The ground truth of page ``path`` as served ``day`` days after the site started
        (counts grow: :func:`~topicrawl.demoweb.video.catalog.grown`).

        Raises:
            KeyError: not a page of this site.
        """
        truth = self.truth(path)
        spec = self._pages[path.split("?", 1)[0]]
        if day <= 0 or spec.title is None:
            return truth
        now = self._at_day(spec, day)
        fields = dict(truth.fields)
        counts = {"comments": now.title.comments, "favourites": now.title.favourites}  # type: ignore[union-attr]
        counts["plays"] = now.plays if spec.kind == "play" else now.title.plays  # type: ignore[union-attr]
        fields.update((k, v) for k, v in counts.items() if k in fields)
        return dataclasses.replace(truth, fields=fields)

    def _at_day(self, spec: PageSpec, day: float) -> PageSpec:
        if day <= 0 or spec.title is None:
            return spec
        rate = growth_rate(spec.title, self.seed)
        return dataclasses.replace(
            spec, title=grown(spec.title, day, self.seed), plays=grow_count(spec.plays, rate, day)
        )

    def entities(self) -> list[Entity]:
        """The directors and actors of the catalog, with aliases and their titles' ids."""
        return list(self._entities)

    def render(self, path: str, version: str = "v1", *, day: float = 0.0) -> tuple[int, str, bytes]:
        """Status, content type and body of ``path`` under template ``version``, its counts
        as they stand ``day`` days after the site started (0: the catalog's).

        Raises:
            ValueError: an unknown version.
        """
        if version not in TEMPLATE_VERSIONS:
            raise ValueError(f"unknown template version {version!r}; known: {TEMPLATE_VERSIONS}")
        path = path.split("?", 1)[0]
        spec = self._pages.get(path)
        if spec is not None:
            return 200, "text/html; charset=utf-8", render_page(self._at_day(spec, day), version)
        if path in self._manifests:
            ctype, body = self._manifests[path]
            return 200, ctype, body
        if path in self._files:
            ctype, body = media_body(path)
            return 200, ctype, body
        if path == "/robots.txt":
            return 200, "text/plain", _ROBOTS + f"Sitemap: {self.base}sitemap.xml\n".encode()
        if path == "/sitemap.xml":
            locs = "".join(f"<url><loc>{self.url(p)}</loc></url>" for p in self.paths())
            xml = (
                '<?xml version="1.0" encoding="UTF-8"?>'
                f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{locs}</urlset>'
            )
            return 200, "application/xml", xml.encode()
        if path.startswith("/img/") and path.endswith(".gif"):
            return 200, "image/gif", _GIF
        if path.startswith("/static/") and path.endswith((".css", ".js")):
            ctype = "text/css" if path.endswith(".css") else "text/javascript"
            return 200, ctype, b"/* demo */\n"
        return 404, "text/html; charset=utf-8", b"<!DOCTYPE html><h1>404 Not found</h1>"


def _forms(rng: random.Random, lang: str) -> tuple[CountForm, CountForm]:
    if lang == "zh":
        form = CountForm.WAN if rng.random() < 0.8 else CountForm.COMMA
        alt = CountForm.COMMA if form is CountForm.WAN else CountForm.WAN
        return form, alt
    forms = [CountForm.COMMA, CountForm.K, CountForm.MILLION]
    form = rng.choice(forms)
    forms.remove(form)
    return form, rng.choice(forms)


class _Builder:
    def __init__(
        self,
        seed: int,
        base: str,
        titles: int,
        hard: bool,
        *,
        heldout: bool = False,
        cross_base: str | None = None,
    ) -> None:
        self.seed = seed
        self.hard = hard
        self.heldout = heldout
        self.cross_base = cross_base
        self.rng = random.Random(f"video-site-{seed}")
        self.base = base
        self.titles, self.entities = make_catalog(seed, titles=titles)
        self.pages: dict[str, PageSpec] = {}
        self.truths: dict[str, PageTruth] = {}
        self.manifests: dict[str, tuple[str, bytes]] = {}
        self.files: set[str] = set()
        self.people = {e.name: f"/person/{n}.html" for n, e in enumerate(self.entities)}

    def add(self, spec: PageSpec, truth: PageTruth) -> None:
        spec.people = self.people
        self.pages[spec.path] = spec
        self.truths[spec.path] = truth

    def add_media(self, media: PlayMedia) -> None:
        self.manifests.update(media.manifests)
        self.files |= media.files

    def spec(self, path: str, kind: str, lang: str, heading: str, **kw: object) -> PageSpec:
        form, alt = _forms(self.rng, lang)
        return PageSpec(path, kind, lang, heading, form=form, alt_form=alt, **kw)  # type: ignore[arg-type]

    def build(self) -> None:
        for title in self.titles:
            self.title_pages(title)
        self.list_pages()
        for spec, truth, media in negative_pages(self.rng, self.titles):
            self.add(spec, truth)
            self.add_media(media)
        if self.hard:
            cases = list(hard_pages(self.seed, self.base))
            cases += iframe_pages(self.base, self.cross_base)
            for spec, truth, media in cases:
                self.add(spec, truth)
                self.add_media(media)
            items = [(spec.path, spec.heading) for spec, t, _ in cases if t.subkind != "embed"]
            self.list_page("/hard/index.html", "en", "Hard cases", items)
        if self.heldout:
            for spec, truth, media in heldout_pages(self.base):
                self.add(spec, truth)
                self.add_media(media)

    def title_pages(self, title: Title) -> None:
        detail = f"/title/{title.id}.html"
        episodes = [f"/play/{title.id}-{n}.html" for n in range(1, title.episodes + 1)]
        watch_label = "Watch" if title.lang == "en" else "立即观看"
        labels = [
            watch_label if title.kind == "film" else f"{watch_label} {n}"
            for n in range(1, title.episodes + 1)
        ]
        same_genre = [t for t in self.titles if t.genre == title.genre and t.id != title.id]
        related = [(f"/title/{t.id}.html", t.name) for t in same_genre[:4]]
        spec = self.spec(detail, "detail", title.lang, title.name, title=title, related=related)
        spec.links = list(zip(episodes, labels, strict=True))
        fields: dict[str, object] = {
            "title": title.name,
            "type": title.kind,
            "year": title.year,
            "genre": title.genre,
            "directors": list(title.directors),
            "actors": list(title.actors),
            "plays": title.plays,
            "comments": title.comments,
            "favourites": title.favourites,
        }
        self.add(spec, PageTruth("detail", fields, (), title.lang))
        for n, path in enumerate(episodes, start=1):
            self.play_page(title, n, path, detail, spec.links)

    def play_page(
        self, title: Title, n: int, path: str, detail: str, links: list[tuple[str, str]]
    ) -> None:
        mid = f"{title.id}-{n}"
        delivery = self.rng.choice(_DELIVERIES)
        media = play_media(self.base, mid, delivery, self.rng, name=title.name)
        self.add_media(media)
        plays = round_count(max(1, int(title.plays / title.episodes * self.rng.uniform(0.5, 1))))
        back = (detail, title.name)
        spec = self.spec(path, "play", title.lang, title.name, title=title, episode=n)
        spec.plays, spec.media = plays, media
        spec.links = [back, *(link for link in links if link[0] != path)]
        fields: dict[str, object] = {"title": title.name, "type": title.kind, "plays": plays}
        if title.kind == "series":
            fields["episode"] = n
        self.add(spec, PageTruth("play", fields, tuple(media.truth), title.lang))
        if delivery in (Delivery.JSONLD, Delivery.OPENGRAPH):
            embed = play_media(self.base, mid, Delivery.EMBED, self.rng)
            self.add_media(embed)
            page = PageSpec(
                f"/embed/{mid}.html", "fixed", title.lang, title.name, body=embed.player
            )
            self.add(page, PageTruth("play", {}, tuple(embed.truth), title.lang, "embed"))

    def list_pages(self) -> None:
        for lang, home in (("en", "/index.html"), ("zh", "/zh/index.html")):
            mine = [t for t in self.titles if t.lang == lang]
            prefix = "" if lang == "en" else "/zh"
            genres = sorted({t.genre for t in mine})
            genre_links = [(f"{prefix}/genre/{i}.html", g) for i, g in enumerate(genres)]
            heading = "Films and series" if lang == "en" else "电影与电视剧"
            people = f"{prefix}/people.html"
            self.list_page(home, lang, heading, [(f"/title/{t.id}.html", t.name) for t in mine])
            self.pages[home].related = [*genre_links, (people, "People")]
            for (href, genre), _ in zip(genre_links, genres, strict=True):
                items = [(f"/title/{t.id}.html", t.name) for t in mine if t.genre == genre]
                self.list_page(href, lang, genre, items)
            crew = [(self.people[e.name], e.name) for e in self.entities if e.lang == lang]
            self.list_page(people, lang, "People" if lang == "en" else "影人", crew)
        for entity in self.entities:
            by_id = {t.id: t for t in self.titles}
            items = [(f"/title/{i}.html", by_id[i].name) for i in entity.titles]
            self.list_page(self.people[entity.name], entity.lang, entity.name, items)

    def list_page(self, path: str, lang: str, heading: str, items: list[tuple[str, str]]) -> None:
        spec = self.spec(path, "list", lang, heading, links=items)
        fields: dict[str, object] = {"heading": heading, "items": [x for _, x in items]}
        self.add(spec, PageTruth("list", fields, (), lang))


def build_video_site(
    *,
    seed: int = 0,
    base: str = DEFAULT_BASE,
    titles: int = 80,
    hard: bool = True,
    heldout: bool = False,
    cross_base: str | None = None,
) -> VideoSite:
    """The demo video site for ``seed`` with absolute URLs under ``base``.

    ``hard`` adds the ``/hard/`` pages (:mod:`~topicrawl.demoweb.video.hard`, and the player
    iframe pages of :mod:`~topicrawl.demoweb.video.iframes`) and their list
    ``/hard/index.html`` (linked from no other page: seed it to crawl them). ``cross_base``
    is where the cross-origin iframe's player page lives (another server of the same site;
    default: this site). ``heldout`` adds the session-20 held-out pages (``/heldout/``,
    :mod:`~topicrawl.demoweb.video.heldout`), linked from no page and left out by default.

    Raises:
        ValueError: ``base`` is not an ``http(s)://.../`` URL or ``titles`` is out of 2..500.
    """
    if not base.startswith(("http://", "https://")) or not base.endswith("/"):
        raise ValueError(f"base must be an http(s) URL ending in '/', got {base!r}")
    if not 2 <= titles <= 500:
        raise ValueError(f"titles must be in 2..500, got {titles}")
    builder = _Builder(seed, base, titles, hard, heldout=heldout, cross_base=cross_base)
    builder.build()
    return VideoSite(
        seed=seed,
        base=base,
        titles=builder.titles,
        entities=builder.entities,
        pages=builder.pages,
        truths=builder.truths,
        manifests=builder.manifests,
        files=builder.files,
        hard=hard,
        heldout=heldout,
        cross_base=cross_base,
    )
