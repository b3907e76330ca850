"""The topic's words found inside the glued-together words of URLs and anchors.

Sites name pages by words run together: ``cvsimport``, ``atomiccommit``, ``lockingv3``,
``queryplanner``, ``fileformat2``. The tokenizer keeps such a word whole, so a link whose
URL or anchor names the topic this way scores nothing. :class:`CompoundWords` adds the
topic's own words that it finds inside the longer words of a short text (Latin letters and
digits only: Chinese is segmented by the tokenizer already).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["CompoundWords"]

_WORD = re.compile(r"[A-Za-z0-9]+")
_MEMO = 20_000  # texts whose expansion is remembered (links come back on page after page)
_MAX_TEXT = 2_000  # characters of a text looked at (a block text is capped at 2,000)
# What may follow a keyword's word in a word that is only its inflection ("imports",
# "locking"): the tokenizer's stemmer already meets the keyword there.
_INFLECTIONS = frozenset({"s", "es", "ed", "d", "ing", "er", "ers", "ly"})


class CompoundWords:
    """Finds the keywords' words (``min_length`` letters or more, lower-cased) glued inside
    the longer words of a text: ``expand("git-cvsimport(1)")`` with the keywords ``CVS`` and
    ``import`` is ``"git-cvsimport(1) cvs import"``. A word equal to a keyword's word, or one
    that is only the word inflected (``imports``, ``locking``), is left alone: the tokenizer
    already sees it. ``min_length`` 0: nothing is ever added."""

    def __init__(self, keywords: Iterable[str], *, min_length: int) -> None:
        if min_length < 0:
            raise ValueError("min_length must be >= 0")
        words: dict[str, None] = {}
        if min_length:
            for phrase in keywords:
                for word in _WORD.findall(phrase):
                    if len(word) >= min_length and not word.isdigit():
                        words[word.lower()] = None
        self.words: tuple[str, ...] = tuple(words)
        """The keywords' words looked for, in the keywords' order."""
        self._shortest = min((len(w) for w in self.words), default=0)
        self._memo: dict[str, str] = {}

    def __bool__(self) -> bool:
        return bool(self.words)

    def expand(self, text: str) -> str:
        """``text`` followed by the keyword words found inside its longer words (each once,
        in the order found); ``text`` itself when none is."""
        if not self.words:
            return text
        held = self._memo.get(text)
        if held is not None:
            return held
        found: dict[str, None] = {}
        for token in _WORD.findall(text[:_MAX_TEXT]):
            if len(token) <= self._shortest:
                continue
            lowered = token.lower()
            for word in self.words:
                if len(word) < len(lowered) and word in lowered and not _inflected(lowered, word):
                    found[word] = None
        expanded = f"{text} {' '.join(found)}" if found else text
        if len(self._memo) >= _MEMO:
            self._memo.clear()
        self._memo[text] = expanded
        return expanded


def _inflected(token: str, word: str) -> bool:
    return token.startswith(word) and token[len(word) :] in _INFLECTIONS
