"""Entity linking: which knowledge-base entity a recognised name means, or none (NIL).

Candidates come from the exact alias (case-folded), and, when no alias matches exactly, from
a fuzzy match of the aliases (rapidfuzz) and a token search over them (an in-memory inverted
index of the aliases' words and Chinese character pairs, standing in for the database's full
text search: it runs in the parse worker, which has no database). Each candidate is scored by

- the alias's prior, normalised over the entities sharing the alias (times how well the name
  matched: 1 for an exact alias);
- the similarity of the mention's context (the words around it, and the page's) to the
  entity's profile: its description and its neighbours' names;
- type agreement between the recogniser's guess and the entity's type;
- coherence: how many of the entity's neighbours are linked elsewhere on the page (a second
  pass, after a first one without it).

Below ``nil_threshold`` the mention is NIL: it becomes a *found* entity of its own
(:func:`~topicrawl.kg.model.found_key`) rather than being forced onto a wrong one. So is a
name whose only candidate shares no word of its profile with the page (``lone_needs_page``):
the one entity the KB knows by that name is not taken on its prior alone.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, NamedTuple

from rapidfuzz import fuzz, process

from topicrawl.core.models import EntityMention
from topicrawl.kg.model import KnowledgeBase, found_key
from topicrawl.kg.recognise import Span, has_cjk
from topicrawl.text.stopwords import all_stopwords

__all__ = ["Candidate", "LinkWeights", "Linker", "context_tokens"]

_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_WINDOW = 250  # characters each side of a mention that make its local context
_PAGE_CONTEXT = 20_000  # characters of the page that make its page context
_CACHE = 50_000  # surfaces whose candidates are remembered
_BY_START = attrgetter("start")
_WINDOWS_PER_NAME = 3  # mentions of one name whose windows make its local context
# A word is a run of ASCII letters, digits and _+#.- (lowered), less the _+#.- it starts
# with and the _.- it ends with ("c++" and "java.util" stay whole), kept as bytes: the text
# is mapped through one table to one byte a character (every other byte, and a non-ASCII
# character's "?", becomes a space), the marks at words' edges are blanked, and the result
# is split, all in C; a window's words are those of the same slice of the mapped page.
_KEPT = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_+#.-")
_WORD_BYTES = bytes(
    byte if byte in _KEPT else byte + 32 if 65 <= byte <= 90 else 32 for byte in range(256)
)
_EDGES = (b". ", b"- ", b"_ ", b" .", b" -", b" _", b" +", b" #")
# Stopwords and one-character chunks: what a set of chunks loses to become tokens.
_DROPPED = frozenset(
    {w.encode("ascii") for w in all_stopwords() if w.isascii()} | {bytes([b]) for b in range(256)}
)


def _fold(surface: str) -> str:
    return " ".join(surface.split()).casefold()


def _mapped(text: str) -> bytes:
    """The text mapped to words and spaces, one byte a character, after one leading space."""
    mapped = b" " + text.encode("ascii", "replace").translate(_WORD_BYTES) + b" "
    for edge in _EDGES:
        if edge in mapped:
            mapped = mapped.replace(edge, b"  ")
            mapped = mapped.replace(edge, b"  ")  # overlapping marks: "a.. b"
    return mapped


def _chinese_pairs(text: str, tokens: set[bytes]) -> None:
    if has_cjk(text):
        for run in _CJK_RUN.findall(text):
            tokens.update(run[i : i + 2].encode() for i in range(len(run) - 1))


def context_tokens(text: str) -> set[bytes]:
    """Words (lowercase, stopwords dropped) and Chinese character pairs (UTF-8) of ``text``:
    cheap, jieba-free tokens for comparing a context with an entity's profile."""
    tokens = set(_mapped(text).split()) - _DROPPED
    _chinese_pairs(text, tokens)
    return tokens


@dataclass(frozen=True, slots=True)
class LinkWeights:
    """How the linker weighs its evidence, and where NIL begins."""

    prior: float = 0.35
    context: float = 0.35
    type: float = 0.1
    coherence: float = 0.2
    nil_threshold: float = 0.3
    fuzzy_cutoff: float = 85.0
    """Least rapidfuzz ratio (0-100) for a fuzzy alias candidate."""
    context_saturation: float = 3.0
    """Shared profile tokens at which context similarity reaches 1 - 1/e."""
    lone_needs_page: bool = True
    """A lone candidate (the only entity with the name) is NIL when its profile shares no
    word with the page: the name then means something the KB lacks (a left-out type of the
    same simple name, a namesake in another field), not the one entity it knows."""


class Candidate(NamedTuple):
    """An entity a name may mean: its key, how well the name matched an alias (0-1), the
    alias's normalised prior, and how it was found (``exact``, ``fuzzy`` or ``token``)."""

    key: str
    match: float
    prior: float
    how: str


class _Weighed(NamedTuple):
    """One name's candidates and their scores without coherence; ``bare`` is the score of a
    lone candidate without the page's words, kept when it fell short of the threshold."""

    candidates: Sequence[Candidate]
    scores: tuple[float, ...]
    bare: float | None
    page_free: bool
    """Whether the page's words played no part (the same on every page)."""


class _PageContext:
    """A page's context tokens, and the tokens near a name's mentions, read on first use."""

    def __init__(self, text: str, *, cjk: bool) -> None:
        self._text = text
        self._mapped = _mapped(text)  # one byte a character, after one leading space
        self._chinese = cjk
        self._page: frozenset[bytes] | None = None

    def _tokens(self, start: int, end: int) -> set[bytes]:
        tokens = set(self._mapped[start + 1 : end + 1].split()) - _DROPPED
        if self._chinese:
            _chinese_pairs(self._text[start:end], tokens)
        return tokens

    @property
    def page(self) -> frozenset[bytes]:
        """The tokens of the page's first characters."""
        if self._page is None:
            self._page = frozenset(self._tokens(0, _PAGE_CONTEXT))
        return self._page

    def around(self, spans: Sequence[Span]) -> frozenset[bytes]:
        """The tokens within the window around each of ``spans`` (a word the window's edge
        cuts counts with its part inside)."""
        tokens: set[bytes] = set()
        for span in spans:
            tokens |= self._tokens(max(0, span.start - _WINDOW), span.end + _WINDOW)
        return frozenset(tokens)


class Linker:
    """Links recognised spans to the knowledge base's entities (or NIL)."""

    def __init__(self, kb: KnowledgeBase, *, weights: LinkWeights | None = None) -> None:
        self._kb = kb
        self._weights = weights or LinkWeights()
        by_alias: dict[str, dict[str, float]] = {}
        for entity in kb.entities:
            for alias in entity.all_names():
                keyed = by_alias.setdefault(alias.text.casefold(), {})
                keyed[entity.key] = max(keyed.get(entity.key, 0.0), alias.prior)
        self._by_alias = by_alias
        self._aliases = list(by_alias)
        # The aliases by length, for the fuzzy match: a rapidfuzz ratio of at least c needs
        # lengths within a factor (200 - c) / c of each other, so only those are compared.
        # Chinese and other aliases apart: a Chinese name is never near a Latin one.
        self._by_length: dict[bool, list[str]] = {True: [], False: []}
        for folded_alias in sorted(self._aliases, key=len):
            self._by_length[_CJK_RUN.search(folded_alias) is not None].append(folded_alias)
        self._lengths = {cjk: [len(a) for a in found] for cjk, found in self._by_length.items()}
        postings: dict[bytes, set[str]] = {}
        self._alias_tokens: dict[str, frozenset[bytes]] = {}
        for folded in self._aliases:
            tokens = frozenset(context_tokens(folded))
            self._alias_tokens[folded] = tokens
            for token in tokens:
                postings.setdefault(token, set()).add(folded)
        self._postings = postings
        self._profiles = {entity.key: self._profile(entity.key) for entity in kb.entities}
        self._cache: dict[str, tuple[Candidate, ...]] = {}
        self._settled: dict[tuple[str, str], _Weighed] = {}  # names weighed without a page

    def _profile(self, key: str) -> frozenset[bytes]:
        entity = self._kb.get(key)
        assert entity is not None
        words = context_tokens(entity.description)
        for near in self._kb.neighbours(key):
            neighbour = self._kb.get(near)
            if neighbour is not None:
                for alias in neighbour.all_names():
                    words |= context_tokens(alias.text)
        own = set().union(*(context_tokens(a.text) for a in entity.all_names()))
        return frozenset(words - own)

    # -- candidates -----------------------------------------------------------------------

    def candidates(self, surface: str) -> tuple[Candidate, ...]:
        """The entities ``surface`` may mean, best match first."""
        folded = _fold(surface)
        cached = self._cache.get(folded)
        if cached is not None:
            return cached
        exact = self._by_alias.get(folded)
        if exact:
            total = sum(exact.values())
            found = tuple(
                Candidate(key, 1.0, prior / total, "exact")
                for key, prior in sorted(exact.items(), key=lambda item: -item[1])
            )
        else:
            found = self._inexact(folded)
        if len(self._cache) >= _CACHE:
            self._cache.clear()
        self._cache[folded] = found
        return found

    def _inexact(self, folded: str) -> tuple[Candidate, ...]:
        matches: dict[str, tuple[float, str]] = {}  # alias -> (match, how)
        if len(folded) >= 4 and self._aliases:
            cutoff = self._weights.fuzzy_cutoff
            spread = (200.0 - cutoff) / max(cutoff, 1.0)
            cjk = _CJK_RUN.search(folded) is not None
            lengths = self._lengths[cjk]
            low = bisect.bisect_left(lengths, math.floor(len(folded) / spread))
            high = bisect.bisect_right(lengths, math.ceil(len(folded) * spread))
            for alias, score, _ in process.extract(
                folded,
                self._by_length[cjk][low:high],
                scorer=fuzz.ratio,
                score_cutoff=self._weights.fuzzy_cutoff,
                limit=5,
            ):
                matches[alias] = (score / 100.0, "fuzzy")
        tokens = context_tokens(folded)
        if tokens:
            hits: dict[str, int] = {}
            for token in tokens:
                for alias in self._postings.get(token, ()):
                    hits[alias] = hits.get(alias, 0) + 1
            for alias, shared in hits.items():
                jaccard = shared / len(tokens | self._alias_tokens[alias])
                if jaccard >= 0.5 and jaccard > matches.get(alias, (0.0, ""))[0]:
                    matches[alias] = (jaccard, "token")
        best: dict[str, Candidate] = {}
        for alias, (match, how) in matches.items():
            keyed = self._by_alias[alias]
            total = sum(keyed.values())
            for key, prior in keyed.items():
                candidate = Candidate(key, match, prior / total, how)
                old = best.get(key)
                if old is None or candidate.match * candidate.prior > old.match * old.prior:
                    best[key] = candidate
        ranked = sorted(best.values(), key=lambda c: -(c.match * c.prior))
        return tuple(ranked[:10])

    # -- choice ---------------------------------------------------------------------------

    def link(
        self, text: str, spans: Sequence[Span], *, cjk: bool | None = None
    ) -> list[EntityMention]:
        """Link every span of ``text``: a KB entity's key, or a found entity's (NIL). ``cjk``:
        whether the text has Chinese, when the caller knows (a scan of the page).

        One sense per discourse: the mentions of one name on a page (same surface, same type
        guess) mean one entity, chosen once with the windows of its first mentions as its
        local context (a class page names its own type a hundred times). Each candidate's
        score without coherence is worked out once; the second pass, with the entities the
        first one linked, only adds the coherence term.
        """
        if not spans:
            return []
        context = _PageContext(text, cjk=has_cjk(text) if cjk is None else cjk)
        names: dict[tuple[str, str], list[Span]] = {}
        for span in spans:
            names.setdefault(span[2:4], []).append(span)  # (surface, type)
        weighed = {name: self._weighed(group, context) for name, group in names.items()}
        first = [self._pick(w, frozenset()) for w in weighed.values() if w.candidates]
        linked = frozenset(key for key, _ in first if key is not None)
        mentions: list[EntityMention] = []
        by_key = self._kb.get
        make = tuple.__new__  # EntityMention's own __new__ is a Python call a mention
        for (surface, span_type), group in names.items():
            options = weighed[surface, span_type]
            key, score = self._pick(options, linked) if options.candidates else (None, 0.0)
            entity = by_key(key) if key is not None else None
            if entity is None:
                key, entity_type = found_key(span_type or "unknown", surface), span_type
            else:
                key, entity_type = entity.key, entity.type
            mentions += [
                make(EntityMention, (key, surface, entity_type, span[0], span[1], score))
                for span in group
            ]
        mentions.sort(key=_BY_START)
        return mentions

    def score(
        self,
        span: Span,
        candidate: Candidate,
        window: AbstractSet[bytes],
        page: AbstractSet[bytes],
        linked: frozenset[str],
    ) -> float:
        """One candidate's score for one mention (0-1)."""
        return self._base(span, candidate, window, page) + self._coherence(candidate, linked)

    def _base(
        self,
        span: Span,
        candidate: Candidate,
        window: AbstractSet[bytes],
        page: AbstractSet[bytes],
    ) -> float:
        """A candidate's score without the coherence term."""
        w = self._weights
        profile = self._profiles.get(candidate.key, frozenset())
        context = 0.0
        if profile and (window or page):
            shared = len(profile & window) + 0.5 * len(profile & page)
            context = 1.0 - math.exp(-shared / w.context_saturation)
        entity = self._kb.get(candidate.key)
        if not span.type or span.type == "other" or entity is None:
            agreement = 0.5
        else:
            agreement = 1.0 if entity.type == span.type else 0.0
        evidence = w.prior * candidate.prior + w.context * context + w.type * agreement
        return candidate.match * evidence

    def _coherence(self, candidate: Candidate, linked: frozenset[str]) -> float:
        """The coherence term: how many of the entity's neighbours the page links (two are
        enough). An entity is never its own neighbour, so it never counts itself here."""
        if not linked:
            return 0.0
        shared = len(self._kb.neighbours(candidate.key) & linked)
        return candidate.match * self._weights.coherence * min(1.0, shared / 2.0)

    def _weighed(self, group: Sequence[Span], context: _PageContext) -> _Weighed:
        """:meth:`_weigh` for one name, remembered when the page's words played no part (no
        candidate, or one enough without them: most names of a site's pages)."""
        name = (group[0].surface, group[0].type)
        known = self._settled.get(name)
        if known is not None:
            return known
        weighed = self._weigh(group, self.candidates(name[0]), context)
        if weighed.page_free:
            if len(self._settled) >= _CACHE:
                self._settled.clear()
            self._settled[name] = weighed
        return weighed

    def _weigh(
        self, group: Sequence[Span], found: Sequence[Candidate], context: _PageContext
    ) -> _Weighed:
        """The scores without coherence of one name's candidates (its mentions on one page).

        One candidate is first scored without the page's words: they can only add to a score
        that is enough already, so they are read only when it is not."""
        span = group[0]
        if len(found) == 1:
            bare = self._base(span, found[0], frozenset(), frozenset())
            if bare >= self._weights.nil_threshold:
                if not self._weights.lone_needs_page:
                    return _Weighed(found, (bare,), None, page_free=True)
                profile = self._profiles.get(found[0].key)
                if not profile or not profile.isdisjoint(context.page):
                    return _Weighed(found, (bare,), None, page_free=False)
                return _Weighed((), (), None, page_free=False)  # nothing on the page: NIL
        else:
            bare = None
        if not found:
            return _Weighed(found, (), None, page_free=True)
        window = context.around(group[:_WINDOWS_PER_NAME])
        read = tuple(self._base(span, c, window, context.page) for c in found)
        return _Weighed(found, read, bare, page_free=False)

    def _pick(self, weighed: _Weighed, linked: frozenset[str]) -> tuple[str | None, float]:
        """The entity a name means (or None, NIL) and its score, given what else is linked."""
        threshold = self._weights.nil_threshold
        found = weighed.candidates
        if weighed.bare is not None:  # one candidate, not enough without the page's words
            score = weighed.bare + self._coherence(found[0], linked)
            if score >= threshold:
                return found[0].key, score
        best_key, best = None, 0.0
        for candidate, base in zip(found, weighed.scores, strict=True):
            score = base + self._coherence(candidate, linked)
            if score > best:
                best_key, best = candidate.key, score
        if best < threshold:
            return None, best
        return best_key, best

    def __getstate__(self) -> Mapping[str, Any]:
        return {"kb": self._kb, "weights": self._weights}

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        self.__init__(state["kb"], weights=state["weights"])  # type: ignore[misc]
