"""Entity preference: links tied to preferred entities (or their graph neighbours) go first.

:class:`KgStrategy` wraps any strategy (bfs, best-first, shark, focused): every request the
inner strategy makes passes through it, so this is the one place where a link's priority gets
the knowledge-graph boost, recorded as the ``kg`` component of its reasons (stored with the
page as ``pages.reasons``). A link is raised when

- its anchor text names a preferred entity or a neighbour (strength 1 for the entity itself,
  ``1 / (1 + d)`` for a neighbour ``d`` relations away, up to the radius);
- its block's text does (times 0.6), or its URL does (times 0.8: ``/wiki/Julia_Child``);
- its page mentions one (times 0.5: a page about the entity links to more of it), less for a
  link in a block of many (times ``n ** -block_exponent`` for a block of n links: a page's
  navigation and footer lead to its site, its text and short lists to what it is about).

The boost is ``boost`` times the strongest of these, added to the inner strategy's score.
A strategy that holds links back (the focused one keeps links under its link threshold in a
candidate pool) would hide a preferred entity's links from the wrapper: its pool is wrapped
too (:class:`_PreferringPool`), and a held-back link that names a counted entity is queued
with the boost instead of waiting (``reasons["kg_held"]`` says so).
When the graph grows (a preferred entity gets a new neighbour), links passed on earlier and
still waiting that name the newcomer are raised too (``StrategyResult.rescored``; the
frontier re-files those still queued). The wrapper also keeps each page's recognised
entities and relations until the engine takes them (:meth:`KgStrategy.take_findings`) to
record them in the database, and grows its own graph with them: the relations it sees, and
entities named with a counted one on two pages, which count as its neighbours from then on.
"""

from __future__ import annotations

import dataclasses
import re
import time
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import ahocorasick

from topicrawl.core.models import (
    FetchFailure,
    Page,
    PageEntities,
    Request,
    StrategyResult,
)
from topicrawl.core.protocols import Strategy
from topicrawl.kg.model import KnowledgeBase
from topicrawl.kg.recognise import has_cjk
from topicrawl.kg.store import PageFinding

__all__ = ["EntityPreference", "KgStrategy", "normalise_for_match"]

_BLOCK = 0.6
_URL = 0.8
_PAGE = 0.5
_CO_MENTION_PAGES = 2  # pages naming two entities that make them neighbours
_NON_WORD = re.compile(r"[\W_]+")
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# Where Chinese meets a Latin letter or digit: a word boundary, though written without a space.
_SCRIPT_CHANGE = re.compile(rf"(?<=[{_HAN}])(?=[^\W_{_HAN}])|(?<=[^\W_{_HAN}])(?=[{_HAN}])")
_MAX_BOOSTED = 200_000  # URLs whose boost is remembered (to keep it through rescoring)
_MAX_WAITING = 50_000  # unraised links remembered, to raise when the graph grows
# An entity on more than this share of the pages (once this many were seen) is template text.
_EVERYWHERE_SHARE = 0.2
_EVERYWHERE_AFTER = 20
_RECHECK_EVERY = 25  # pages


def normalise_for_match(text: str) -> str:
    """Lowercase words separated by single spaces, padded with one: what names are matched
    in (anchor, block text, URL path alike; ``Julia_Child`` and ``julia-child`` both become
    `` julia child ``; ``用Nolan的`` becomes `` 用 nolan 的 ``). A name matches whole words, a
    Chinese name anywhere."""
    spaced = _SCRIPT_CHANGE.sub(" ", _NON_WORD.sub(" ", text.lower()))
    return f" {spaced.strip()} "


class EntityPreference:
    """Which entities are preferred, how strongly, and the matcher over their names.

    Args:
        kb: the knowledge base (its relations give the neighbourhood).
        preferred: keys of the preferred entities.
        radius: relations from a preferred entity that still count (0: the entity only).
    """

    def __init__(self, kb: KnowledgeBase, preferred: Sequence[str], *, radius: int = 1) -> None:
        if radius < 0:
            raise ValueError(f"radius must be >= 0, got {radius}")
        self._kb = kb
        self._preferred = tuple(preferred)
        self._radius = radius
        self._extra: dict[str, set[str]] = {}  # edges seen in the crawl: key -> neighbours
        self._names: dict[str, str] = {}  # found entities' names, by key
        self._pages = 0  # pages learned from
        self._mentioned: dict[str, int] = {}  # pages that mention each entity
        self._together: dict[tuple[str, str], int] = {}  # pages naming both
        self._rebuild()

    @property
    def strengths(self) -> Mapping[str, float]:
        """Each counted entity's key and its strength (1 for a preferred one)."""
        return self._strength

    def _rebuild(self) -> None:
        distance = dict.fromkeys(self._preferred, 0)
        frontier = list(self._preferred)
        for step in range(1, self._radius + 1):
            nearer = []
            for key in frontier:
                co_mentioned = {n for n in self._extra.get(key, ()) if not self._everywhere(n)}
                for near in self._kb.neighbours(key) | co_mentioned:
                    if near not in distance:
                        distance[near] = step
                        nearer.append(near)
            frontier = nearer
        self._distance = distance
        self._strength = {key: 1.0 / (1 + d) for key, d in distance.items()}
        automaton = ahocorasick.Automaton()
        best: dict[str, float] = {}
        for key, strength in self._strength.items():
            for name in self._names_of(key):
                form = normalise_for_match(name)
                # Chinese is written without spaces: its names match inside a run of text.
                form = form.strip() if has_cjk(name) else form
                if form.strip() and strength > best.get(form, 0.0):
                    best[form] = strength
        for form, strength in best.items():
            automaton.add_word(form, (len(form), strength))
        if best:
            automaton.make_automaton()
        self._automaton = automaton if best else None

    def _everywhere(self, key: str) -> bool:
        """Whether an entity is on too many pages to say anything (a site's name in its
        template): such an entity is nobody's neighbour by co-mention."""
        return (
            self._pages >= _EVERYWHERE_AFTER
            and self._mentioned.get(key, 0) > _EVERYWHERE_SHARE * self._pages
        )

    def _names_of(self, key: str) -> list[str]:
        entity = self._kb.get(key)
        if entity is not None:
            return [alias.text for alias in entity.all_names()]
        name = self._names.get(key)
        return [name] if name else []

    def strength_in(self, text: str) -> float:
        """The strongest preferred (or neighbouring) name the text mentions; 0 if none."""
        if self._automaton is None or not text:
            return 0.0
        best = 0.0
        for _, (_, strength) in self._automaton.iter(normalise_for_match(text)):
            best = max(best, strength)
        return best

    def page_strength(self, found: PageEntities | None) -> float:
        """The strongest counted entity the page mentions (as linked); 0 if none."""
        if found is None:
            return 0.0
        return max((self._strength.get(m.entity, 0.0) for m in found.mentions), default=0.0)

    def learn(self, found: PageEntities) -> bool:
        """Grow the graph with a page: its relations that touch a counted entity, and the
        entities named on two pages with an entity inside the radius (they count as its
        neighbours). True when the counted entities changed.
        """
        self._pages += 1
        for key in {m.entity for m in found.mentions}:
            self._mentioned[key] = self._mentioned.get(key, 0) + 1
        edges = [(r.subject, r.object) for r in found.relations]
        inside = {
            m.entity for m in found.mentions if self._distance.get(m.entity, 99) < self._radius
        }
        others = {m.entity for m in found.mentions} - inside
        for one in inside:
            # Named on the same page as the entity, on more than one page: once may be a
            # page's far corner (a list of other stories), twice is a pattern.
            for other in others:
                pair = (one, other)
                self._together[pair] = self._together.get(pair, 0) + 1
                if self._together[pair] == _CO_MENTION_PAGES:
                    edges.append(pair)
        grew = False
        for ends in edges:
            if not any(end in self._strength for end in ends):
                continue
            for one, other in (ends, ends[::-1]):
                linked = self._extra.setdefault(one, set())
                if other not in linked:
                    linked.add(other)
                    grew = True
        # Now and then anyway: an entity may have turned out to be on every page.
        if not grew and self._pages % _RECHECK_EVERY:
            return False
        for mention in found.mentions:
            self._names.setdefault(mention.entity, mention.surface)
        before = set(self._strength)
        self._rebuild()
        return set(self._strength) != before


class KgStrategy:
    """Wraps a strategy: boosts links tied to preferred entities, and keeps pages' findings.

    Args:
        inner: the crawl's strategy.
        preference: the preferred entities (None: findings are kept, no link is boosted).
        boost: the score added for a link of strength 1.
        block_exponent: how much less the page's own mention counts for a link in a block of
            many links (0: not at all).
    """

    def __init__(
        self,
        inner: Strategy,
        *,
        preference: EntityPreference | None,
        boost: float = 1.0,
        block_exponent: float = 0.0,
        clock: Any = time.time,
    ) -> None:
        if block_exponent < 0:
            raise ValueError(f"block_exponent must be >= 0, got {block_exponent}")
        self.inner = inner
        self.name = inner.name
        self._preference = preference
        self._boost = boost
        self._block_exponent = block_exponent
        self._clock = clock
        self._findings: list[PageFinding] = []
        self._boosted: dict[str, float] = {}
        # Links passed on unraised: their score, anchor and block, to raise them when the
        # graph grows while they wait (oldest dropped first past the cap).
        self._waiting: dict[str, tuple[float, str, str]] = {}
        # Links of the page at hand that were waiting unraised and are raised now, their new
        # scores (a later page names the entity in their anchor, or is about it), and the
        # pages fetched (a link to one is never waiting again).
        self._raised_again: list[tuple[str, float]] = []
        self._fetched: set[str] = set()
        self.boosted_links = 0
        self.raised_links = 0
        self.released_links = 0  # held back by the inner strategy, queued for the graph
        self._pool: _PreferringPool | None = None
        pool = getattr(inner, "candidates", None)
        holds_back = getattr(inner, "holds_back_links", False)
        if preference is not None and holds_back and pool is not None:
            self._pool = _PreferringPool(pool, self)
            inner.candidates = self._pool  # type: ignore[attr-defined]

    @property
    def follows_known_links(self) -> bool:
        """With a preference, a page's links the frontier already knows come through too: one
        that waits unraised (queued by breadth-first from a menu) is raised when a later page
        ties it to a counted entity. Otherwise as the inner strategy says."""
        if self._preference is not None:
            return True
        return bool(getattr(self.inner, "follows_known_links", True))

    def __getattr__(self, name: str) -> Any:
        # analyzer, runs_in_thread ... are the inner strategy's.
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def take_findings(self) -> list[PageFinding]:
        """The pages' findings kept since the last call (the caller records them)."""
        taken, self._findings = self._findings, []
        return taken

    def seeds(self, requests: Iterable[Request]) -> Iterable[Request]:
        return self._boost_all(self.inner.seeds(requests), page_strength=0.0, links={})

    def on_error(self, request: Request, failure: FetchFailure) -> Iterable[Request]:
        return self._boost_all(self.inner.on_error(request, failure), page_strength=0.0, links={})

    def on_idle(self, limit: int) -> Iterable[Request]:
        return self._boost_all(self.inner.on_idle(limit), page_strength=0.0, links={})

    def on_page(self, page: Page) -> StrategyResult:
        result = self.inner.on_page(page)
        found = page.entities
        if found is not None and (found.mentions or found.relations):
            self._findings.append(PageFinding(page.url, found, self._clock()))
        if self._preference is None:
            return result
        self._waiting.pop(page.url, None)
        if len(self._fetched) >= _MAX_WAITING:
            self._fetched.clear()
        self._fetched.add(page.url)
        grew = found is not None and self._preference.learn(found)
        links = self._links(page)
        page_strength = self._preference.page_strength(found)
        requests = tuple(self._boost_all(result.requests, page_strength=page_strength, links=links))
        if self._pool is not None:
            requests += tuple(self._pool.take_preferred(links, page_strength))
        rescored = [(url, score + self._boosted.get(url, 0.0)) for url, score in result.rescored]
        rescored += self._raised_again
        self._raised_again = []
        if grew:
            rescored += self._raise_waiting()
            if self._pool is not None:
                requests += tuple(self._pool.take_preferred_waiting())
        return dataclasses.replace(result, requests=requests, rescored=tuple(rescored))

    def _links(self, page: Page) -> dict[str, tuple[str, str, float]]:
        """Each link's anchor, block text and share of its page's mention strength."""
        sizes: dict[int, int] = {}
        for link in page.links:
            sizes[link.block] = sizes.get(link.block, 0) + 1
        exponent = self._block_exponent
        return {
            link.url: (link.anchor, link.block_text, sizes[link.block] ** -exponent)
            for link in page.links
        }

    def held_strength(self, request: Request, block: str, page_strength: float) -> float:
        """How strongly a link the inner strategy holds back is tied to a counted entity."""
        assert self._preference is not None
        return self._strength(self._preference, request.url, request.anchor, block, page_strength)

    def boosted(self, request: Request, strength: float, reason: str) -> Request:
        """``request`` raised by the boost for ``strength`` (its reasons record it)."""
        boost = self._boost * strength
        if len(self._boosted) >= _MAX_BOOSTED:
            self._boosted.clear()
        self._boosted[request.url] = boost
        self._waiting.pop(request.url, None)
        reasons = {**request.reasons, reason: round(boost, 6)}
        return dataclasses.replace(request, score=request.score + boost, reasons=reasons)

    def _raise_waiting(self) -> list[tuple[str, float]]:
        """New scores for links queued before the graph grew that now name a counted entity
        (the frontier re-files those still waiting)."""
        preference = self._preference
        assert preference is not None
        raised = []
        for url, (score, anchor, block) in list(self._waiting.items()):
            strength = self._strength(preference, url, anchor, block, 0.0)
            if strength > 0.0:
                boost = self._boost * strength
                self._boosted[url] = boost
                raised.append((url, score + boost))
                del self._waiting[url]
        self.raised_links += len(raised)
        return raised

    @staticmethod
    def _strength(
        preference: EntityPreference, url: str, anchor: str, block: str, page_strength: float
    ) -> float:
        return max(
            preference.strength_in(anchor),
            _BLOCK * preference.strength_in(block),
            _URL * preference.strength_in(_url_words(url)),
            _PAGE * page_strength,
        )

    def _boost_all(
        self,
        requests: Iterable[Request],
        *,
        page_strength: float,
        links: Mapping[str, tuple[str, str, float]],
    ) -> Iterable[Request]:
        preference = self._preference
        if preference is None:
            yield from requests
            return
        for request in requests:
            anchor, block, share = links.get(request.url, (request.anchor, "", 1.0))
            anchor = anchor or request.anchor
            strength = self._strength(preference, request.url, anchor, block, page_strength * share)
            if strength <= 0.0:
                if request.url not in self._waiting and request.url not in self._fetched:
                    if len(self._waiting) >= _MAX_WAITING:
                        self._waiting.pop(next(iter(self._waiting)))
                    self._waiting[request.url] = (request.score, anchor, block)
                yield request
                continue
            self.boosted_links += 1
            waited = self._waiting.get(request.url)
            if waited is not None:  # queued unraised before: the frontier re-files it
                self._raised_again.append((request.url, waited[0] + self._boost * strength))
                self.raised_links += 1
            yield self.boosted(request, strength, "kg")


def _url_words(url: str) -> str:
    """The URL's path and query, unquoted (the host says nothing about an entity)."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.unquote(f"{parts.path} {parts.query}")


class _PreferringPool:
    """The inner strategy's pool of held-back links, seen through the preference.

    The focused strategy holds a link back (``add``) while it scores the page; the links it
    holds are noted, and once the page is done (:meth:`take_preferred`) those that name a counted
    entity, in their anchor, block or URL, or sit on a page that does, leave the pool and are
    queued with the boost. Held links that name nothing stay, and are looked at again when the
    graph grows (:meth:`take_preferred_waiting`). Everything else is the pool's own.
    """

    def __init__(self, pool: Any, owner: KgStrategy) -> None:
        self._pool = pool
        self._owner = owner
        self._added: list[Request] = []
        self._held: dict[str, Request] = {}  # held back naming nothing, newest last

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pool, name)

    def __len__(self) -> int:
        return len(self._pool)

    def __contains__(self, url: object) -> bool:
        return url in self._pool

    def add(self, request: Request) -> None:
        self._pool.add(request)
        self._added.append(request)

    def take_preferred(
        self, links: Mapping[str, tuple[str, str, float]], page_strength: float
    ) -> list[Request]:
        """The links held back while the last page was scored that the graph wants now."""
        added, self._added = self._added, []
        released = []
        for request in added:
            if request.url not in self._pool:
                continue  # queued after all, or dropped by the pool
            _, block, share = links.get(request.url, ("", "", 1.0))
            strength = self._owner.held_strength(request, block, page_strength * share)
            if strength > 0.0:
                self._pool.discard(request.url)
                self._held.pop(request.url, None)
                released.append(self._owner.boosted(request, strength, "kg_held"))
            else:
                if len(self._held) >= _MAX_WAITING:
                    self._held.pop(next(iter(self._held)))
                self._held[request.url] = request
        self._owner.released_links += len(released)
        return released

    def take_preferred_waiting(self) -> list[Request]:
        """Held links that name an entity the graph counts since it grew."""
        released = []
        for url, request in list(self._held.items()):
            if url not in self._pool:
                del self._held[url]
                continue
            strength = self._owner.held_strength(request, "", 0.0)
            if strength > 0.0:
                self._pool.discard(url)
                del self._held[url]
                released.append(self._owner.boosted(request, strength, "kg_held"))
        self._owner.released_links += len(released)
        return released
