"""Relocation: find a field's element again after a template change, from the fingerprint
it had when it last matched.

The idea is Scrapling's adaptive selectors (this is our own code and storage): when a method
succeeds, each field's element is fingerprinted (its tag, identifying attributes, the shape
of its text, its path of tags from the root, its parent, and its neighbours' tags and
texts). After a change, every element of the new page is scored against the fingerprint and
the best one over :data:`MIN_SCORE` gives the field's value again. A label next to the value
("Plays", "导演") is the strongest clue; classes and paths are what cosmetic and structural
changes alter, so they weigh less.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from lxml.html import HtmlElement

from topicrawl.parse.methods.validators import Invalid, RawValue, Value, parse_count

__all__ = [
    "MAX_ELEMENTS",
    "MAX_VARIANTS",
    "MIN_SCORE",
    "Fingerprint",
    "find_element",
    "fingerprint_of",
    "merge_variants",
    "relocate",
]

MIN_SCORE = 0.4
"""The least score (0-1) an element needs to be taken for a field."""
MARGIN = 0.04
"""How far the best element must lead the best one with other text: a near tie is no answer."""
MAX_ELEMENTS = 10_000
"""Relocation gives up on pages with more elements than this (its cost grows with them)."""
_MAX_CHILDREN = 200
MAX_VARIANTS = 4
"""Fingerprints kept per field: pages of one pattern differ (languages, A/B layouts)."""
_SKIP = frozenset({"script", "style", "noscript", "template", "head", "title", "meta", "link"})
_ATTRS = ("id", "class", "itemprop", "property", "name", "role", "rel")
_MAX_TEXT = 300


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """What an element looked like when a field last matched it."""

    tag: str
    attrs: tuple[tuple[str, str], ...]
    shape: str
    path: tuple[str, ...]
    parent: str
    prev_tag: str
    prev_text: str
    next_tag: str
    label: tuple[str, ...]
    many: bool = False
    in_title: bool = False
    position: int = 0

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form (for storage)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Fingerprint:
        """The inverse of :meth:`to_json`."""
        return cls(
            tag=str(data["tag"]),
            attrs=tuple((str(k), str(v)) for k, v in data["attrs"]),
            shape=str(data["shape"]),
            path=tuple(map(str, data["path"])),
            parent=str(data["parent"]),
            prev_tag=str(data["prev_tag"]),
            prev_text=str(data["prev_text"]),
            next_tag=str(data["next_tag"]),
            label=tuple(map(str, data["label"])),
            many=bool(data.get("many", False)),
            in_title=bool(data.get("in_title", False)),
            position=int(data.get("position", 0)),
        )


def _norm(text: str | None) -> str:
    return " ".join((text or "").split())


def _shape(text: str) -> str:
    """Digits -> 9, Latin letters -> a, CJK -> 中, runs collapsed: "1.2万" -> "9.9中"."""
    shape = re.sub(r"\d+", "9", text[:60])
    shape = re.sub(r"[A-Za-z]+", "a", shape)
    return re.sub(r"[\u4e00-\u9fff]+", "中", shape)


def _sig(element: HtmlElement | None) -> str:
    if element is None or not isinstance(element.tag, str):
        return ""
    return f"{element.tag}.{'.'.join(sorted((element.get('class') or '').split()))}"


_NOT_LABEL = re.compile(r"[\W\d_]+")


def _label_text(text: str | None) -> str:
    """A label as compared: letters only, lower case ("Plays:" and "plays" are one label);
    empty for text with digits (a value, not a label) or too long to be a label."""
    if not text or len(text) > 40 or any(c.isdigit() for c in text):
        return ""
    return _NOT_LABEL.sub("", text).lower()[:30]


def _column_header(element: HtmlElement) -> str:
    """The ``<th>`` above a table cell, if any."""
    row = element.getparent()
    table = row.getparent() if row is not None else None
    if table is None or row is None:
        return ""
    column = list(row).index(element)
    for other in table.iter("tr"):
        if other is row:
            break
        cells = [c for c in other if isinstance(c.tag, str)]
        if column < len(cells) and cells[column].tag == "th":
            return _label_text(cells[column].text_content())
    return ""


def _labels(element: HtmlElement) -> tuple[str, ...]:
    """The texts that may label an element, letters only: its own text before its children
    (``<p>Director: <a>..</a></p>``), its previous sibling's text (``<dt>Plays</dt><dd>``),
    its column's header cell, its parent's own text before it (``<li>Plays: <b>..</b>``) and
    the text after it (``<span>1.2K</span> plays``)."""
    cues: list[str] = []
    if len(element):
        cues.append(_label_text(element.text))
    if element.tag in ("td", "th"):
        cues.append(_column_header(element))
    else:
        prev = element.getprevious()
        # A sibling that is a label holds text only (``<dt>``, ``<i>Plays</i>``), not a value
        # with its own markup (the previous field's ``<p>`` of links).
        if prev is not None and isinstance(prev.tag, str) and not len(prev):
            cues.append(_label_text(prev.text_content()))
    parent = element.getparent()
    if parent is not None and parent.index(element) == 0:
        cues.append(_label_text(parent.text))
    cues.append(_label_text(element.tail))
    return tuple(dict.fromkeys(c for c in cues if c))


def _labels_meet(mine: tuple[str, ...], theirs: tuple[str, ...]) -> bool:
    return any(a == b or (a in b or b in a) for a in mine for b in theirs if len(a) > 1 < len(b))


_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})


def _page_title(element: HtmlElement) -> str:
    found = element.getroottree().findtext(".//title")
    return _norm(found)


def fingerprint_of(
    element: HtmlElement, *, many: bool = False, page_title: str | None = None
) -> Fingerprint:
    """The fingerprint of ``element`` (``many``: the field is a list of its children;
    ``page_title``: the document's ``<title>``, looked up when not given)."""
    path = tuple(str(a.tag) for a in reversed(list(element.iterancestors())))
    text = _norm(element.text_content())
    title = _page_title(element) if page_title is None else page_title
    prev, nxt = element.getprevious(), element.getnext()
    return Fingerprint(
        tag=str(element.tag),
        attrs=tuple((a, element.get(a) or "") for a in _ATTRS if element.get(a)),
        shape=_shape(text),
        path=path,
        parent=_sig(element.getparent()),
        prev_tag=str(prev.tag) if prev is not None else "",
        prev_text=_norm(prev.text_content())[:40] if prev is not None else "",
        next_tag=str(nxt.tag) if nxt is not None else "",
        label=_labels(element),
        many=many,
        in_title=bool(text) and len(text) >= 2 and text in title,
        position=_position(element),
    )


def _position(element: HtmlElement) -> int:
    """The element's place among its parent's children of its tag (the column of a cell)."""
    parent = element.getparent()
    if parent is None:
        return 0
    return sum(1 for _ in element.itersiblings(element.tag, preceding=True))


def _elements(tree: HtmlElement) -> Iterator[HtmlElement]:
    for element in tree.iter():
        if isinstance(element.tag, str) and element.tag not in _SKIP:
            yield element


def _kind(shape: str) -> str:
    return "number" if "9" in shape and len(shape) <= 12 else "text"


def _path_likeness(one: tuple[str, ...], two: tuple[str, ...]) -> float:
    """Shared tags from the root and from the element up, over the longer path (cheap next to
    an edit distance, and what a template's wrapper or a moved block changes)."""
    if one == two:
        return 1.0
    longest = max(len(one), len(two)) or 1
    head = 0
    for a, b in zip(one, two, strict=False):
        if a != b:
            break
        head += 1
    tail = 0
    for a, b in zip(reversed(one), reversed(two), strict=False):
        if a != b:
            break
        tail += 1
    return min(longest, head + tail) / longest


def _similarity(fp: Fingerprint, candidate: Fingerprint) -> float:
    """How like ``fp`` a candidate element's fingerprint is, about 0-1 (a label, a title or a
    neighbour that matches as well can pass 1)."""
    if candidate.tag == fp.tag:
        score = 1.0
    else:
        score = 0.7 if candidate.tag in _HEADINGS and fp.tag in _HEADINGS else 0.0
    mine, theirs = set(fp.attrs), set(candidate.attrs)
    score += 1.5 * (len(mine & theirs) / len(mine | theirs) if mine | theirs else 1.0)
    if candidate.shape == fp.shape:
        score += 1.0
    elif _kind(candidate.shape) == _kind(fp.shape):
        score += 0.6
    score += 1.0 * _path_likeness(fp.path, candidate.path)
    score += 0.5 * (candidate.parent == fp.parent)
    score += 0.5 * (candidate.prev_tag == fp.prev_tag) + 0.25 * (candidate.next_tag == fp.next_tag)
    score += 2.5 * _labels_meet(fp.label, candidate.label)
    score += 0.5 * (bool(fp.prev_text) and candidate.prev_text == fp.prev_text)
    score += 2.5 * (fp.in_title and candidate.in_title)
    score += 0.75 * (candidate.position == fp.position)
    return score / (11.5 if fp.in_title else 9.0)


Candidates = list[tuple[str, HtmlElement, Fingerprint]]
"""A page's elements that may hold a field, with their texts and fingerprints."""


def candidates(tree: HtmlElement, *, many: bool) -> Candidates | None:
    """Every element of ``tree`` that may hold a field's value (``many``: a list of names),
    fingerprinted once for all the fields; None for a page over :data:`MAX_ELEMENTS`."""
    page_title = _page_title(tree)
    limit = _MAX_TEXT * (20 if many else 1)
    found: Candidates = []
    for count, element in enumerate(_elements(tree)):
        if count >= MAX_ELEMENTS:
            return None  # a page this large is not a template's page worth the time
        if len(element) > _MAX_CHILDREN:
            continue  # a container of many blocks holds no single field's value
        text = _norm(element.text_content())
        if text and len(text) <= limit:
            found.append((text, element, fingerprint_of(element, many=many, page_title=page_title)))
    return found


def relocate(
    tree: HtmlElement,
    variants: Sequence[Fingerprint],
    *,
    cache: dict[bool, Candidates | None] | None = None,
) -> RawValue | None:
    """The value of the element of ``tree`` most like one of ``variants`` (a field's
    fingerprints), or None if none is like enough or two with other texts nearly tie.
    ``cache`` keeps the page's candidates between the fields of one page."""
    if not variants:
        return None
    many = variants[0].many
    cache = {} if cache is None else cache
    if many not in cache:
        cache[many] = candidates(tree, many=many)
    found = cache[many]
    if found is None:
        return None
    scored: list[tuple[float, str, HtmlElement]] = []
    for text, element, candidate in found:
        score = max(_similarity(fp, candidate) for fp in variants)
        if score >= MIN_SCORE - MARGIN:
            scored.append((score, text, element))
    if not scored:
        return None
    scored.sort(key=lambda item: -item[0])
    best_score, best_text, best = scored[0]
    if best_score < MIN_SCORE:
        return None
    rival = next((s for s, text, _ in scored[1:] if text != best_text), 0.0)
    if best_score - rival < MARGIN:
        return None
    fp = variants[0]
    if fp.many:
        items = [_norm(child.text_content()) for child in best if isinstance(child.tag, str)]
        if any(items):
            return [item for item in items if item]
        # Names written as plain text ("A / B"): the field's validator splits them.
    return _norm(best.text_content()) or None


def find_element(tree: HtmlElement, raw: RawValue, value: Value) -> HtmlElement | None:
    """The smallest element that shows a field's value (for a list: the element holding the
    first two names), so it can be fingerprinted; None when the page does not show it."""
    if isinstance(raw, list):
        names = [n for n in raw if n][:2]
        for count, element in enumerate(_elements(tree)):
            if count >= MAX_ELEMENTS:
                return None
            if _norm(element.text_content()) == names[0]:
                parent = element.getparent()
                if parent is not None and all(n in parent.text_content() for n in names):
                    return parent
        return None
    wanted = _norm(raw)
    exact: list[HtmlElement] = []
    close: list[HtmlElement] = []
    counted = isinstance(value, int) and not isinstance(value, bool)
    for count, element in enumerate(_elements(tree)):
        if count >= MAX_ELEMENTS:
            return None
        if len(element) > _MAX_CHILDREN:
            continue
        own = _norm(element.text_content())
        if own == wanted:
            exact.append(element)
        elif counted and own and not len(element) and _same_count(own, value):
            close.append(element)
    if exact:
        # The deepest of the first nest of matches (``<li><b>1.2K</b></li>``: the ``<b>``).
        first = exact[0]
        nested = [e for e in exact if e is first or first in e.iterancestors()]
        return nested[-1]
    # A count from structured data is not written as such on the page ("1.2万" for 12345):
    # a count shown close to it stands for it, only when just one element does.
    return close[0] if len(close) == 1 else None


def _same_count(text: str, value: object) -> bool:
    if len(text) > 40 or not any(c.isdigit() for c in text):
        return False
    try:
        shown = parse_count(text)
    except Invalid:
        return False
    assert isinstance(value, int)
    return value > 0 and abs(shown - value) <= 0.05 * value


def _variant_key(fp: Fingerprint) -> tuple[object, ...]:
    return (fp.tag, fp.attrs, fp.path, fp.label, fp.parent)


def merge_variants(
    kept: Sequence[Fingerprint], fresh: Fingerprint, *, limit: int = MAX_VARIANTS
) -> tuple[Fingerprint, ...]:
    """``kept`` with ``fresh`` first; a variant like ``fresh`` (same element in another page)
    is replaced, and the oldest beyond ``limit`` go."""
    key = _variant_key(fresh)
    others = [fp for fp in kept if _variant_key(fp) != key]
    return (fresh, *others)[:limit]
