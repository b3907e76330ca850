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
(:func:`~topicrawl.kg.model.found_key`) rather than being forced onto a wrong one.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, NamedTuple

from rapidfuzz import fuzz, process

from topicrawl.core.models import EntityMention
from topicrawl.kg.model import KnowledgeBase, found_key
from topicrawl.kg.recognise import Span
from topicrawl.text.stopwords import all_stopwords

__all__ = ["Candidate", "LinkWeights", "Linker", "context_tokens"]

_WORD = re.compile(r"[a-z0-9][a-z0-9_+#.-]*[a-z0-9+#]|[a-z0-9]")
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_WINDOW = 250  # characters each side of a mention that make its local context
_PAGE_CONTEXT = 20_000  # characters of the page that make its page context
_CACHE = 50_000  # surfaces whose candidates are remembered
_WINDOWS_PER_NAME = 3  # mentions of one name whose windows make its local context
_STOP = all_stopwords()


def _fold(surface: str) -> str:
    return " ".join(surface.split()).casefold()


def context_tokens(text: str) -> set[str]:
    """Words (lowercase, stopwords dropped) and Chinese character pairs of ``text``: cheap,
    jieba-free tokens for comparing a context with an entity's profile."""
    lowered = text.lower()
    tokens = {w for w in _WORD.findall(lowered) if w not in _STOP and len(w) > 1}
    for run in _CJK_RUN.findall(lowered):
        if len(run) == 1:
            continue
        tokens.update(run[i : i + 2] for i in range(len(run) - 1))
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


class Candidate(NamedTuple):
    """An entity a name may mean: its key, how well the name matched an alias (0-1), the
    alias's normalised prior, and how it was found (``exact``, ``fuzzy`` or ``token``)."""

    key: str
    match: float
    prior: float
    how: str


class _PageContext:
    """A page's context tokens, and the tokens near a mention, each read on first use."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._page: frozenset[str] | None = None
        self._windows: dict[int, frozenset[str]] = {}  # by the first span's start

    @property
    def page(self) -> frozenset[str]:
        """The tokens of the page's first characters."""
        if self._page is None:
            self._page = frozenset(context_tokens(self._text[:_PAGE_CONTEXT]))
        return self._page

    def around(self, spans: Sequence[Span]) -> frozenset[str]:
        """The tokens within the window around each of ``spans`` (a word the window's edge
        cuts counts with its part inside). Read once per name: both passes ask."""
        known = self._windows.get(spans[0].start)
        if known is not None:
            return known
        tokens: set[str] = set()
        for span in spans:
            tokens |= context_tokens(self._text[max(0, span.start - _WINDOW) : span.end + _WINDOW])
        self._windows[spans[0].start] = window = frozenset(tokens)
        return window


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
        postings: dict[str, set[str]] = {}
        self._alias_tokens: dict[str, frozenset[str]] = {}
        for folded in self._aliases:
            tokens = frozenset(context_tokens(folded))
            self._alias_tokens[folded] = tokens
            for token in tokens:
                postings.setdefault(token, set()).add(folded)
        self._postings = postings
        self._profiles = {entity.key: self._profile(entity.key) for entity in kb.entities}
        self._cache: dict[str, tuple[Candidate, ...]] = {}

    def _profile(self, key: str) -> frozenset[str]:
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

    def link(self, text: str, spans: Sequence[Span]) -> list[EntityMention]:
        """Link every span of ``text``: a KB entity's key, or a found entity's (NIL).

        One sense per discourse: the mentions of one name on a page (same surface, same type
        guess) mean one entity, chosen once with the windows of its first mentions as its
        local context (a class page names its own type a hundred times).
        """
        if not spans:
            return []
        context = _PageContext(text)
        names: dict[tuple[str, str], list[Span]] = {}
        for span in spans:
            names.setdefault((span.surface, span.type), []).append(span)
        options = {name: self.candidates(group[0].surface) for name, group in names.items()}
        first = [
            self._choose(group, options[name], context, frozenset())
            for name, group in names.items()
        ]
        linked = frozenset(key for key, _ in first if key is not None)
        chosen = {
            name: self._choose(group, options[name], context, linked)
            for name, group in names.items()
        }
        mentions = []
        for span in spans:
            key, score = chosen[span.surface, span.type]
            if key is None:
                mentions.append(
                    EntityMention(
                        found_key(span.type or "unknown", span.surface),
                        span.surface,
                        span.type,
                        span.start,
                        span.end,
                        score,
                    )
                )
            else:
                entity = self._kb.get(key)
                entity_type = entity.type if entity is not None else span.type
                mentions.append(
                    EntityMention(key, span.surface, entity_type, span.start, span.end, score)
                )
        return mentions

    def score(
        self,
        span: Span,
        candidate: Candidate,
        window: AbstractSet[str],
        page: AbstractSet[str],
        linked: frozenset[str],
    ) -> float:
        """One candidate's score for one mention (0-1)."""
        w = self._weights
        profile = self._profiles.get(candidate.key, frozenset())
        context = 0.0
        if profile:
            shared = len(profile & window) + 0.5 * len(profile & page)
            context = 1.0 - math.exp(-shared / w.context_saturation)
        entity = self._kb.get(candidate.key)
        if not span.type or span.type == "other" or entity is None:
            agreement = 0.5
        else:
            agreement = 1.0 if entity.type == span.type else 0.0
        # An entity is never its own neighbour, so it never counts itself here.
        coherence = min(1.0, len(self._kb.neighbours(candidate.key) & linked) / 2.0)
        total = (
            w.prior * candidate.prior
            + w.context * context
            + w.type * agreement
            + w.coherence * coherence
        )
        return candidate.match * total

    def _choose(
        self,
        group: Sequence[Span],
        found: Sequence[Candidate],
        context: _PageContext,
        linked: frozenset[str],
    ) -> tuple[str | None, float]:
        """The entity the mentions in ``group`` (one name's, on one page) mean, or None."""
        threshold = self._weights.nil_threshold
        span = group[0]
        if len(found) == 1:
            # One candidate: the page's words can only add to a score that is enough
            # already, so they are read only when it is not.
            score = self.score(span, found[0], frozenset(), frozenset(), linked)
            if score >= threshold:
                return found[0].key, score
        best_key, best = None, 0.0
        if found:
            window = context.around(group[:_WINDOWS_PER_NAME])
            for candidate in found:
                score = self.score(span, candidate, window, context.page, linked)
                if score > best:
                    best_key, best = candidate.key, score
        if best < threshold:
            return None, best
        return best_key, best

    def __getstate__(self) -> Mapping[str, Any]:
        return {"kb": self._kb, "weights": self._weights}

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        self.__init__(state["kb"], weights=state["weights"])  # type: ignore[misc]
