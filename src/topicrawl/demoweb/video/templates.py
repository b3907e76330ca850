"""HTML of the demo video site's pages under each template version.

Versions (:data:`TEMPLATE_VERSIONS`):

- ``v1``: the first layout; fields in classed elements, no JSON-LD for the fields.
- ``cosmetic``: the same tree with every class renamed, one wrapper more, other separators.
- ``structural``: fields moved: a ``<dl>`` of facts, names as plain text, counts in a table,
  title in an ``<h2>`` in a header.
- ``jsonld_only``: the visible page keeps only the title, poster and synopsis; every other
  field is only in a JSON-LD ``Movie``/``TVSeries``/``Episode`` object.
- ``counts_reformatted``: ``v1`` with every count written in another form.
- ``ab``: each page is served as ``v1`` (layout A) or ``structural`` (layout B), chosen by a
  hash of its path: stable for a page, half and half over the site.

Hard-negative pages are the same in every version. The ground truth never changes with the
version: only where and how the fields are written does.
"""

from __future__ import annotations

import hashlib
import html
from dataclasses import dataclass, field

from topicrawl.demoweb.video.catalog import CountForm, Title, format_count
from topicrawl.demoweb.video.media import PlayMedia, json_ld

__all__ = ["TEMPLATE_VERSIONS", "PageSpec", "layout_of", "render_page"]

TEMPLATE_VERSIONS = ("v1", "cosmetic", "structural", "jsonld_only", "counts_reformatted", "ab")

_LABELS = {
    "en": {
        "film": "Film",
        "series": "TV series",
        "director": "Director",
        "actors": "Starring",
        "plays": "Plays",
        "comments": "Comments",
        "favourites": "Favourites",
        "genre": "Genre",
        "type": "Type",
        "year": "Year",
        "watch": "Watch",
        "episode": "Episode {n}",
        "views": "plays",
        "home": "Home",
    },
    "zh": {
        "film": "电影",
        "series": "电视剧",
        "director": "导演",
        "actors": "主演",
        "plays": "播放",
        "comments": "评论",
        "favourites": "收藏",
        "genre": "类型",
        "type": "类别",
        "year": "年份",
        "watch": "立即观看",
        "episode": "第{n}集",
        "views": "次播放",
        "home": "首页",
    },
}


@dataclass(slots=True)
class PageSpec:
    """Everything needed to render one page in any version.

    ``links`` are (href, text) pairs shown on list-like pages; ``body`` is the fixed markup of
    hard negatives; ``people`` maps a person's name to their page path.
    """

    path: str
    kind: str  # detail | play | list | negative
    lang: str
    heading: str
    title: Title | None = None
    episode: int = 0
    plays: int = 0
    media: PlayMedia | None = None
    links: list[tuple[str, str]] = field(default_factory=list)
    related: list[tuple[str, str]] = field(default_factory=list)
    form: CountForm = CountForm.COMMA
    alt_form: CountForm = CountForm.K
    body: str = ""
    head: str = ""
    people: dict[str, str] = field(default_factory=dict)


def layout_of(path: str, version: str) -> str:
    """The layout a page is served with under ``version`` (``ab`` resolves per path)."""
    if version != "ab":
        return version
    digest = hashlib.sha256(path.encode()).digest()
    return "v1" if digest[0] % 2 == 0 else "structural"


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _document(spec: PageSpec, title: str, head: str, body: str, version: str) -> str:
    lang = "zh-CN" if spec.lang == "zh" else "en"
    home = "/zh/index.html" if spec.lang == "zh" else "/index.html"
    style = "mv" if version == "cosmetic" else "site"
    return (
        f'<!DOCTYPE html><html lang="{lang}"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title>"
        f'<link rel="stylesheet" href="/static/{style}.css">{head}</head>'
        f'<body><nav class="top"><a href="{home}">{_LABELS[spec.lang]["home"]}</a> '
        f'<a href="/about.html">About</a> <a href="/blog/encoding.html">Blog</a></nav>'
        f"<main>{body}</main></body></html>"
    )


def _count(spec: PageSpec, value: int, version: str) -> str:
    form = spec.alt_form if version == "counts_reformatted" else spec.form
    return format_count(value, form)


def _names(spec: PageSpec, names: tuple[str, ...], cls: str) -> str:
    return ", ".join(
        f'<a class="{cls}" href="{spec.people.get(n, "#")}">{_e(n)}</a>' for n in names
    )


def _stats(title: Title) -> dict[str, int]:
    return {"plays": title.plays, "comments": title.comments, "favourites": title.favourites}


def _og(spec: PageSpec, title: Title) -> str:
    kind = "video.movie" if title.kind == "film" else "video.tv_show"
    return (
        f'<meta property="og:title" content="{_e(title.name)}">'
        f'<meta property="og:type" content="{kind}">'
    )


def _interaction(stats: dict[str, int]) -> list[dict[str, object]]:
    actions = {"plays": "WatchAction", "comments": "CommentAction", "favourites": "LikeAction"}
    return [
        {
            "@type": "InteractionCounter",
            "interactionType": f"https://schema.org/{actions[key]}",
            "userInteractionCount": value,
        }
        for key, value in stats.items()
    ]


def _detail(spec: PageSpec, version: str) -> str:
    t = spec.title
    assert t is not None
    lab = _LABELS[spec.lang]
    layout = layout_of(spec.path, version)
    watch = " ".join(f'<a class="watch" href="{h}">{_e(x)}</a>' for h, x in spec.links)
    poster = f'<img class="poster" src="/img/{t.id}.gif" alt="{_e(t.name)}">'
    stats = _stats(t)
    head = _og(spec, t)
    if layout in ("v1", "counts_reformatted"):
        counts = "".join(
            f'<li class="{k}">{lab[k]}: <b>{_count(spec, v, version)}</b></li>'
            for k, v in stats.items()
        )
        body = (
            f'<div class="title-info">{poster}<h1 class="title">{_e(t.name)}</h1>'
            f'<p class="meta"><span class="type">{lab[t.kind]}</span> · '
            f'<span class="year">{t.year}</span> · <span class="genre">{_e(t.genre)}</span></p>'
            f'<p class="directors">{lab["director"]}: {_names(spec, t.directors, "person")}</p>'
            f'<p class="actors">{lab["actors"]}: {_names(spec, t.actors, "person")}</p>'
            f'<ul class="stats">{counts}</ul><p class="synopsis">{_e(t.synopsis)}</p>'
            f'<p class="watch-links">{watch}</p></div>'
        )
    elif layout == "cosmetic":
        counts = "".join(
            f'<li class="cnt cnt-{k}"><i>{lab[k]}</i> <em>{_count(spec, v, version)}</em></li>'
            for k, v in stats.items()
        )
        body = (
            f'<div class="mv-card"><div class="mv-card__inner">{poster}'
            f'<h1 class="mv-card__name">{_e(t.name)}</h1>'
            f'<div class="mv-card__meta"><span class="badge badge-kind">{lab[t.kind]}</span> | '
            f'<span class="badge badge-yr">{t.year}</span> | '
            f'<span class="badge badge-gen">{_e(t.genre)}</span></div>'
            f'<div class="mv-crew">{lab["director"]}: '
            f"{_names(spec, t.directors, 'crew-link')}</div>"
            f'<div class="mv-cast">{lab["actors"]}: {_names(spec, t.actors, "cast-link")}</div>'
            f'<ul class="counters">{counts}</ul><div class="mv-plot">{_e(t.synopsis)}</div>'
            f'<div class="mv-watch">{watch}</div></div></div>'
        )
    elif layout == "structural":
        heads = "".join(f"<th>{lab[k]}</th>" for k in stats)
        cells = "".join(f"<td>{_count(spec, v, version)}</td>" for v in stats.values())
        body = (
            f'<article class="film"><header class="hero"><h2>{_e(t.name)}</h2>'
            f'<div class="sub">{t.year}</div></header>'
            f'<section class="facts"><dl><dt>{lab["type"]}</dt><dd>{lab[t.kind]}</dd>'
            f"<dt>{lab['genre']}</dt><dd>{_e(t.genre)}</dd>"
            f"<dt>{lab['actors']}</dt><dd>{' / '.join(_e(a) for a in t.actors)}</dd>"
            f"<dt>{lab['director']}</dt><dd>{' / '.join(_e(d) for d in t.directors)}</dd>"
            f"</dl></section>{poster}"
            f'<table class="numbers"><tr>{heads}</tr><tr>{cells}</tr></table>'
            f'<section class="plot"><p>{_e(t.synopsis)}</p></section>'
            f'<footer class="cta">{watch}</footer></article>'
        )
    else:  # jsonld_only
        obj: dict[str, object] = {
            "@context": "https://schema.org",
            "@type": "Movie" if t.kind == "film" else "TVSeries",
            "name": t.name,
            "genre": t.genre,
            "dateCreated": str(t.year),
            "director": [{"@type": "Person", "name": d} for d in t.directors],
            "actor": [{"@type": "Person", "name": a} for a in t.actors],
            "interactionStatistic": _interaction(stats),
        }
        if t.kind == "series":
            obj["numberOfEpisodes"] = t.episodes
        head += json_ld(obj)
        body = (
            f'<div class="page">{poster}<h1>{_e(t.name)}</h1><p>{_e(t.synopsis)}</p>'
            f"<p>{watch}</p></div>"
        )
    return _document(spec, t.name, head, body + _related(spec), version)


def _related(spec: PageSpec) -> str:
    if not spec.related:
        return ""
    items = "".join(f'<li><a href="{h}">{_e(x)}</a></li>' for h, x in spec.related)
    return f'<aside class="related"><ul>{items}</ul></aside>'


def _play(spec: PageSpec, version: str) -> str:
    t = spec.title
    media = spec.media
    assert t is not None
    assert media is not None
    lab = _LABELS[spec.lang]
    layout = layout_of(spec.path, version)
    episode = lab["episode"].format(n=spec.episode) if t.kind == "series" else ""
    plays = _count(spec, spec.plays, version)
    nav = " ".join(f'<a class="ep-link" href="{h}">{_e(x)}</a>' for h, x in spec.links)
    head = media.head
    if layout in ("v1", "counts_reformatted"):
        body = (
            f'<h1 class="video-title">{_e(t.name)}</h1>'
            f'<p class="video-meta"><span class="type">{lab[t.kind]}</span> '
            f'<span class="ep">{episode}</span></p>'
            f'<div class="player-wrap">{media.player}</div>'
            f'<p class="views"><span class="play-count">{plays}</span> {lab["views"]}</p>'
            f'<div class="episodes">{nav}</div>'
        )
    elif layout == "cosmetic":
        body = (
            f'<div class="vp"><div class="vp__stage">{media.player}</div>'
            f'<h1 class="vp__heading">{_e(t.name)}</h1>'
            f'<div class="vp__sub"><b class="kind">{lab[t.kind]}</b> | <b class="epi">{episode}</b>'
            f' | <b class="vcount">{plays}</b> {lab["views"]}</div>'
            f'<nav class="vp__eps">{nav}</nav></div>'
        )
    elif layout == "structural":
        body = (
            f'<section class="stage">{media.player}</section>'
            f'<section class="info"><h3>{_e(t.name)}</h3><dl>'
            f"<dt>{lab['type']}</dt><dd>{lab[t.kind]}</dd>"
            + (f"<dt>#</dt><dd>{episode}</dd>" if episode else "")
            + f"<dt>{lab['plays']}</dt><dd>{plays}</dd></dl></section>"
            f'<footer class="more">{nav}</footer>'
        )
    else:  # jsonld_only
        obj: dict[str, object] = {
            "@context": "https://schema.org",
            "@type": "Episode" if t.kind == "series" else "Movie",
            "name": t.name,
            "interactionStatistic": _interaction({"plays": spec.plays}),
        }
        if t.kind == "series":
            obj["episodeNumber"] = spec.episode
            obj["partOfSeries"] = {"@type": "TVSeries", "name": t.name}
        head += json_ld(obj)
        body = f'<div class="stage">{media.player}</div><p>{nav}</p>'
    return _document(spec, f"{t.name} {episode}".strip(), head, body + media.scripts, version)


def _list(spec: PageSpec, version: str) -> str:
    layout = layout_of(spec.path, version)
    if layout == "structural":
        rows = "".join(f'<tr><td><a href="{h}">{_e(x)}</a></td></tr>' for h, x in spec.links)
        items = f'<table class="catalog">{rows}</table>'
    elif layout == "cosmetic":
        cards = "".join(
            f'<div class="tile"><a class="tile__link" href="{h}">{_e(x)}</a></div>'
            for h, x in spec.links
        )
        items = f'<div class="tiles">{cards}</div>'
    else:
        lis = "".join(f'<li class="item"><a href="{h}">{_e(x)}</a></li>' for h, x in spec.links)
        items = f'<ul class="titles">{lis}</ul>'
    head = spec.head
    if layout == "jsonld_only":
        head += json_ld(
            {
                "@context": "https://schema.org",
                "@type": "ItemList",
                "itemListElement": [
                    {"@type": "ListItem", "position": i + 1, "url": h, "name": x}
                    for i, (h, x) in enumerate(spec.links)
                ],
            }
        )
    body = f"<h1>{_e(spec.heading)}</h1>{items}{_related(spec)}"
    return _document(spec, spec.heading, head, body, version)


def render_page(spec: PageSpec, version: str) -> bytes:
    """The page ``spec`` under template ``version`` as UTF-8 HTML.

    Raises:
        ValueError: an unknown version.
    """
    if version not in TEMPLATE_VERSIONS:
        raise ValueError(f"unknown template version {version!r}; known: {TEMPLATE_VERSIONS}")
    if spec.kind == "detail":
        text = _detail(spec, version)
    elif spec.kind == "play":
        text = _play(spec, version)
    elif spec.kind == "list":
        text = _list(spec, version)
    else:
        text = _document(spec, spec.heading, spec.head, spec.body, "v1")
    return text.encode("utf-8")
