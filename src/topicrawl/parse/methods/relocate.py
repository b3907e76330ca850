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
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from difflib import SequenceMatcher
from typing import Any

from lxml.html import HtmlElement

from topicrawl.parse.methods.validators import Invalid, RawValue, Value, parse_count

__all__ = ["MIN_SCORE", "Fingerprint", "find_element", "fingerprint_of", "relocate"]

MIN_SCORE = 0.45
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
    label: str
    many: bool = False

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
            label=str(data["label"]),
            many=bool(data.get("many", False)),
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


def _label(element: HtmlElement) -> str:
    """The text that labels an element: its previous sibling's text, or its parent's own
    text before it (e.g. ``<li>Plays: <b>1.2K</b></li>``)."""
    prev = element.getprevious()
    if prev is not None and isinstance(prev.tag, str):
        text = _norm(prev.text_content())
        if text:
            return text[:40]
    parent = element.getparent()
    if parent is not None:
        text = _norm(parent.text)
        if text:
            return text[:40]
        if parent.getprevious() is not None and isinstance(parent.getprevious().tag, str):
            return _norm(parent.getprevious().text_content())[:40]
    return ""


def fingerprint_of(element: HtmlElement, *, many: bool = False) -> Fingerprint:
    """The fingerprint of ``element`` (``many``: the field is a list of its children)."""
    path = tuple(str(a.tag) for a in reversed(list(element.iterancestors())))
    prev, nxt = element.getprevious(), element.getnext()
    return Fingerprint(
        tag=str(element.tag),
        attrs=tuple((a, element.get(a) or "") for a in _ATTRS if element.get(a)),
        shape=_shape(_norm(element.text_content())),
        path=path,
        parent=_sig(element.getparent()),
        prev_tag=str(prev.tag) if prev is not None else "",
        prev_text=_norm(prev.text_content())[:40] if prev is not None else "",
        next_tag=str(nxt.tag) if nxt is not None else "",
        label=_label(element),
        many=many,
    )


def _elements(tree: HtmlElement) -> Iterator[HtmlElement]:
    for element in tree.iter():
        if isinstance(element.tag, str) and element.tag not in _SKIP:
            yield element


def _score(fp: Fingerprint, element: HtmlElement) -> float:
    text = _norm(element.text_content())
    if not text or len(text) > _MAX_TEXT * (20 if fp.many else 1):
        return 0.0
    candidate = fingerprint_of(element, many=fp.many)
    score = 1.0 * (candidate.tag == fp.tag)
    mine, theirs = set(fp.attrs), set(candidate.attrs)
    score += 1.5 * (len(mine & theirs) / len(mine | theirs) if mine | theirs else 1.0)
    score += 1.0 * (candidate.shape == fp.shape)
    score += 1.0 * SequenceMatcher(None, fp.path, candidate.path).ratio()
    score += 0.5 * (candidate.parent == fp.parent)
    score += 0.5 * (candidate.prev_tag == fp.prev_tag) + 0.25 * (candidate.next_tag == fp.next_tag)
    score += 2.5 * (bool(fp.label) and candidate.label == fp.label)
    score += 0.5 * (bool(fp.prev_text) and candidate.prev_text == fp.prev_text)
    return score / 8.25


def relocate(tree: HtmlElement, fp: Fingerprint) -> RawValue | None:
    """The value of the element of ``tree`` most like ``fp``, or None if none is like enough."""
    best, best_score = None, MIN_SCORE
    for element in _elements(tree):
        score = _score(fp, element)
        if score > best_score:
            best, best_score = element, score
    if best is None:
        return None
    if fp.many:
        items = [_norm(child.text_content()) for child in best if isinstance(child.tag, str)]
        return [item for item in items if item] or None
    return _norm(best.text_content()) or None


def find_element(tree: HtmlElement, raw: RawValue, value: Value) -> HtmlElement | None:
    """The smallest element that shows a field's value (for a list: the element holding the
    first two names), so it can be fingerprinted; None when the page does not show it."""
    if isinstance(raw, list):
        names = [n for n in raw if n][:2]
        for element in _elements(tree):
            if _norm(element.text_content()) == names[0]:
                parent = element.getparent()
                if parent is not None and all(n in parent.text_content() for n in names):
                    return parent
        return None
    wanted = _norm(raw)
    counted = isinstance(value, int) and not isinstance(value, bool)
    best: HtmlElement | None = None
    for element in _elements(tree):
        own = _norm(element.text_content())
        if own == wanted or (counted and own and _same_count(own, value)):
            best = element  # later = deeper or later in document; keep the deepest match
            if not len(element):
                return element
    return best


def _same_count(text: str, value: object) -> bool:
    if len(text) > 40 or not any(c.isdigit() for c in text):
        return False
    try:
        shown = parse_count(text)
    except Invalid:
        return False
    assert isinstance(value, int)
    return value > 0 and abs(shown - value) <= 0.05 * value
