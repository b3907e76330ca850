"""Entity names matched to microblog accounts in three steps, each match saying its step.

1. **exact**: the account's display name or username is the name (case, width, spaces,
   punctuation and ``_``/``-``/``.`` ignored).
2. **affix**: the name with a known prefix or suffix word: ``张艺谋导演``, ``电影英雄``,
   ``Hero Film``, ``Official Gong Li``. Only the listed words count, so ``张艺谋粉丝团`` (a fan
   club) is not an affix match of ``张艺谋``.
3. **fuzzy**: rapidfuzz's ratio of the normalised names at or above ``fuzzy_threshold`` (a
   typo, a missing character, a variant spelling), for the candidates steps 1 and 2 did not
   match; at most ``max_fuzzy`` per name, best first.

A false friend is an account that merely shares words with the name (``Li Wei Bakery`` for
``Li Wei``, ``张艺谋粉丝团``) or is a different short name one character away (``巩俐`` and
``巩丽`` are fuzzy-close: their posts decide, see :mod:`topicrawl.sources.lda`). The
matching itself is pure (:func:`match_name`); :func:`match_entities` asks a search function
for candidates.
"""

from __future__ import annotations

import enum
import re
import unicodedata
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

from rapidfuzz import fuzz

from topicrawl.core.errors import ConfigError
from topicrawl.sources.accountsapi import Account

__all__ = [
    "AFFIX_WORDS",
    "AccountMatch",
    "MatchStep",
    "match_entities",
    "match_name",
    "normalize_name",
]

AFFIX_WORDS: tuple[str, ...] = (
    "电影",
    "电视剧",
    "剧集",
    "演员",
    "导演",
    "官方",
    "官博",
    "工作室",
    "film",
    "movie",
    "the movie",
    "series",
    "tv series",
    "the series",
    "actor",
    "actress",
    "director",
    "official",
    "studio",
)
_DROP = re.compile(r"[\s_\-.·•・,，:：!！'\"“”‘’()（）\[\]【】《》<>@#|/\\]+")


class MatchStep(enum.IntEnum):
    """Which step matched an account to a name (lower is stricter)."""

    EXACT = 1
    AFFIX = 2
    FUZZY = 3


@dataclass(frozen=True, slots=True)
class AccountMatch:
    """An account matched to an entity name, the step that matched it and its score (0-100)."""

    name: str
    account: Account
    step: MatchStep
    score: float
    affix: str = ""


def normalize_name(name: str) -> str:
    """A name for comparison: NFKC, case-folded, spaces and punctuation dropped."""
    return _DROP.sub("", unicodedata.normalize("NFKC", name).casefold())


def _affixes(words: Iterable[str]) -> tuple[tuple[str, str], ...]:
    pairs = {(normalize_name(w), w) for w in words if normalize_name(w)}
    return tuple(sorted(pairs, key=lambda p: (-len(p[0]), p[0])))


_DEFAULT_AFFIXES = _affixes(AFFIX_WORDS)


def _affix_of(target: str, candidate: str, affixes: Sequence[tuple[str, str]]) -> str | None:
    """The affix word that turns ``target`` into ``candidate`` (prefix, suffix or both)."""
    if target not in candidate or candidate == target:
        return None
    start = candidate.find(target)
    while start >= 0:
        head, tail = candidate[:start], candidate[start + len(target) :]
        found = [_strip_affix(head, affixes), _strip_affix(tail, affixes)]
        if all(part is not None for part in found):
            return "+".join(part for part in found if part)
        start = candidate.find(target, start + 1)
    return None


def _strip_affix(part: str, affixes: Sequence[tuple[str, str]]) -> str | None:
    """``""`` for an empty part, the affix word when the part is one, else None."""
    if not part:
        return ""
    for norm, word in affixes:
        if part == norm:
            return word
    return None


def match_name(
    name: str,
    candidates: Iterable[Account],
    *,
    fuzzy_threshold: float = 88.0,
    affix_words: Iterable[str] | None = None,
    max_fuzzy: int = 3,
) -> list[AccountMatch]:
    """The accounts among ``candidates`` that are ``name``, strictest step first.

    Names shorter than two characters after normalising match nothing.

    Raises:
        ConfigError: ``fuzzy_threshold`` not in (0, 100] or ``max_fuzzy`` < 0.
    """
    if not 0 < fuzzy_threshold <= 100 or max_fuzzy < 0:
        raise ConfigError(f"fuzzy_threshold must be in (0, 100], got {fuzzy_threshold}")
    target = normalize_name(name)
    if len(target) < 2:
        return []
    affixes = _DEFAULT_AFFIXES if affix_words is None else _affixes(affix_words)
    strict: list[AccountMatch] = []
    fuzzy: list[AccountMatch] = []
    seen: set[str] = set()
    for account in candidates:
        if account.id in seen:
            continue
        seen.add(account.id)
        normals = [normalize_name(n) for n in account.names]
        if target in normals:
            strict.append(AccountMatch(name, account, MatchStep.EXACT, 100.0))
            continue
        affix = next((a for n in normals if (a := _affix_of(target, n, affixes))), None)
        if affix is not None:
            strict.append(AccountMatch(name, account, MatchStep.AFFIX, 100.0, affix))
            continue
        score = max((fuzz.ratio(target, n) for n in normals if n), default=0.0)
        if score >= fuzzy_threshold:
            fuzzy.append(AccountMatch(name, account, MatchStep.FUZZY, float(score)))
    fuzzy.sort(key=lambda m: (-m.score, m.account.id))
    return sorted(strict, key=lambda m: (m.step, m.account.id)) + fuzzy[:max_fuzzy]


Search = Callable[[str], Awaitable[Sequence[Account]]]


async def match_entities(
    names: Iterable[str],
    search: Search,
    *,
    fuzzy_threshold: float = 88.0,
    affix_words: Iterable[str] | None = None,
) -> list[AccountMatch]:
    """Every name's matches among the accounts ``search(name)`` returns (one search a name).

    An account matched by several names keeps its strictest match.
    """
    best: dict[str, AccountMatch] = {}
    done: set[str] = set()
    for name in names:
        key = normalize_name(name)
        if len(key) < 2 or key in done:
            continue
        done.add(key)
        found = match_name(
            name,
            await search(name.strip()),
            fuzzy_threshold=fuzzy_threshold,
            affix_words=affix_words,
        )
        for match in found:
            old = best.get(match.account.id)
            if old is None or (match.step, -match.score) < (old.step, -old.score):
                best[match.account.id] = match
    return sorted(best.values(), key=lambda m: (m.step, m.name, m.account.id))
