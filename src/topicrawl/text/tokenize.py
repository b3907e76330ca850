"""Tokenisation of English and Chinese text: word tokens, jieba for Chinese runs, user words."""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import TYPE_CHECKING

import ahocorasick

from topicrawl.text.stopwords import all_stopwords

if TYPE_CHECKING:
    import jieba

__all__ = [
    "CJK_LETTER",
    "CJK_RUN",
    "Tokenizer",
    "chinese_segmenter",
    "light_stem",
    "normalize_text",
    "segment_chinese",
]

# CJK unified ideographs (basic, extension A, compatibility, extensions B-F).
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef"
# A CJK run, or a word run of any other script (letters and digits, no underscore).
_RUN = re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>[^\W_{_CJK}]+)")
_WORD_CHAR = re.compile(rf"[^\W_{_CJK}]")
CJK_RUN = re.compile(rf"[{_CJK}]+")
"""A run of Chinese characters: what :func:`segment_chinese` is given."""
_ASCII_WORD = re.compile(r"[a-z]+")
CJK_LETTER = re.compile(rf"[{_CJK}\u3040-\u30ff\uac00-\ud7af]")
"""A letter of Chinese, Japanese (ideographs, kana) or Korean (hangul) script."""
# Plurals of words that end in "che", which the "-ches" rule would cut too short.
_CHE_PLURALS = frozenset(
    {"caches", "niches", "cliches", "headaches", "avalanches", "mustaches", "moustaches"}
)

_MEMO_SIZE = 200_000  # words whose token is remembered, per tokenizer

_segmenter_lock = threading.Lock()
_segmenter: jieba.Tokenizer | None = None


def chinese_segmenter() -> jieba.Tokenizer:
    """Return jieba's process-wide tokenizer, loading its dictionary on first use only.

    The load takes about a second, so it happens lazily and once per process; jieba's own
    progress messages are silenced. Callers must not add words to it (it is shared): user
    words are handled by :class:`Tokenizer` before jieba sees the text.
    """
    global _segmenter  # noqa: PLW0603 - one dictionary per process is the point
    if _segmenter is None:
        with _segmenter_lock:
            if _segmenter is None:
                import jieba  # noqa: PLC0415 - importing jieba costs ~0.4 s; only Chinese needs it

                jieba.setLogLevel(logging.WARNING)
                jieba.dt.initialize()
                _segmenter = jieba.dt
    return _segmenter


# Runs of Chinese at most this long are remembered by segment_chinese (a clause between two
# punctuation marks is far shorter); with _SEGMENT_MEMO runs that caps the memo near 10 MB.
_SEGMENT_MEMO_CHARS = 256
_SEGMENT_MEMO = 16_384


def segment_chinese(run: str, *, hmm: bool = True) -> tuple[str, ...]:
    """jieba's words of a run of Chinese characters, with the process-wide dictionary.

    A parse worker cuts each page's Chinese twice: for the strategy's term counts and for the
    knowledge graph's names (issue #20). Both call this, and the second cut of a run is a
    lookup: short runs are remembered (least recently used first out), so a page is
    segmented once however many analyzers read it.
    """
    if len(run) > _SEGMENT_MEMO_CHARS:
        return tuple(chinese_segmenter().cut(run, HMM=hmm))
    return _segment_memo(run, hmm)


@lru_cache(maxsize=_SEGMENT_MEMO)
def _segment_memo(run: str, hmm: bool) -> tuple[str, ...]:
    return tuple(chinese_segmenter().cut(run, HMM=hmm))


def normalize_text(text: str) -> str:
    """NFKC-normalise (full-width forms to ASCII) and lowercase: what every token is cut from."""
    return unicodedata.normalize("NFKC", text).lower()


def light_stem(word: str) -> str:
    """Fold English plurals (an S-stemmer): ``crawlers`` -> ``crawler``, ``queries`` -> ``query``,
    ``classes`` -> ``class``, ``searches`` -> ``search``, ``pages`` -> ``page``.

    Only lowercase ASCII words longer than three letters change; words ending in ``ss``,
    ``us`` or ``is`` (``class``, ``corpus``, ``analysis``) are left alone.
    """
    if len(word) <= 3 or not _ASCII_WORD.fullmatch(word) or not word.endswith("s"):
        return word
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "shes", "ches")) and word not in _CHE_PLURALS:
        return word[:-2]
    if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if word.endswith(("ss", "us", "is")):
        return word
    return word[:-1]


class Tokenizer:
    """Cuts text into lowercase word tokens; Chinese runs are segmented by jieba.

    Args:
        user_words: words that are never split and always kept (e.g. ``机器学习``, ``c++``);
            matched case-insensitively, longest first, and for words that start or end with a
            letter or digit only at word boundaries (``go`` does not match inside ``google``).
        drop_stopwords: drop the shipped English and Chinese stopwords.
        extra_stopwords: more words to drop.
        stem: fold English plurals with :func:`light_stem`.
        keep_numbers: keep tokens made only of digits.
        min_length: shortest non-CJK token kept (CJK tokens of one character are kept).
        max_length: longer tokens are dropped (they are ids, hashes or base64, not words).
        hmm: let jieba guess words missing from its dictionary.
    """

    def __init__(
        self,
        *,
        user_words: Iterable[str] = (),
        drop_stopwords: bool = True,
        extra_stopwords: Iterable[str] = (),
        stem: bool = True,
        keep_numbers: bool = False,
        min_length: int = 2,
        max_length: int = 40,
        hmm: bool = True,
    ) -> None:
        words = {normalize_text(word).strip() for word in user_words}
        self._user_words = frozenset(word for word in words if word)
        stop = set(all_stopwords()) if drop_stopwords else set()
        stop.update(normalize_text(word).strip() for word in extra_stopwords)
        self._stopwords = frozenset(stop - self._user_words)
        self._stem = stem
        self._keep_numbers = keep_numbers
        self._min_length = min_length
        self._max_length = max_length
        self._hmm = hmm
        self._words: dict[str, str] = {}
        self._automaton: ahocorasick.Automaton | None = None
        if self._user_words:
            automaton = ahocorasick.Automaton()
            for word in self._user_words:
                automaton.add_word(word, word)
            automaton.make_automaton()
            self._automaton = automaton

    @property
    def user_words(self) -> frozenset[str]:
        """The normalised user words."""
        return self._user_words

    def __call__(self, text: str) -> list[str]:
        return self.tokens(text)

    def tokens(self, text: str) -> list[str]:
        """Return the tokens of ``text`` in order, stopwords and noise removed."""
        text = normalize_text(text)
        out: list[str] = []
        start = 0
        for begin, end in self._user_word_spans(text):
            self._cut(text[start:begin], out)
            out.append(text[begin:end])
            start = end
        self._cut(text[start:], out)
        return out

    def _user_word_spans(self, text: str) -> Iterator[tuple[int, int]]:
        """Leftmost-longest, non-overlapping user-word matches that sit on word boundaries."""
        if self._automaton is None:
            return
        matches = sorted(
            (last - len(word) + 1, -len(word)) for last, word in self._automaton.iter(text)
        )
        cursor = 0
        for begin, negative_length in matches:
            end = begin - negative_length
            if begin >= cursor and _on_boundaries(text, begin, end):
                yield begin, end
                cursor = end

    def _cut(self, text: str, out: list[str]) -> None:
        words = self._words
        for cjk, word in _RUN.findall(text):
            if cjk:
                out.extend(
                    piece
                    for piece in segment_chinese(cjk, hmm=self._hmm)
                    if piece not in self._stopwords and len(piece) <= self._max_length
                )
                continue
            # Most words repeat, so each word's fate is memoised ("" = dropped).
            token = words.get(word)
            if token is None:
                token = self._word_token(word)
                if len(words) < _MEMO_SIZE:
                    words[word] = token
            if token:
                out.append(token)

    def _word_token(self, word: str) -> str:
        """What a non-CJK word becomes: a token, or "" when it is dropped."""
        if (
            len(word) < self._min_length
            or len(word) > self._max_length
            or word in self._stopwords
            or (not self._keep_numbers and word.isdigit())
        ):
            return ""
        if self._stem:
            word = light_stem(word)
            if word in self._stopwords:
                return ""
        return word


def _on_boundaries(text: str, begin: int, end: int) -> bool:
    # A user word edge that is a letter/digit must not continue a neighbouring word.
    if _WORD_CHAR.match(text, begin) and begin > 0 and _WORD_CHAR.match(text, begin - 1):
        return False
    return not (_WORD_CHAR.match(text, end - 1) and end < len(text) and _WORD_CHAR.match(text, end))
