"""Entity recognition: where a page's text names something, and what kind of thing.

Three recognisers, merged (the knowledge base's names win an overlap, then the longer span):

- a gazetteer over the KB's aliases (Aho-Corasick, pyahocorasick): case-insensitive, but an
  alias written with capitals only matches text that starts with one, and an alias in a Latin
  script only matches whole words;
- jieba for Chinese proper names: its dictionary's tags (``nr`` person, ``ns`` place, ``nt``
  organisation, ``nz`` other) and, for names jieba's HMM cut out but does not know, a surname
  or an ending (省, 公司 ...); the KB's Chinese aliases go into jieba's user dictionary so a
  known name is one word (jieba alone splits many names, e.g. 李白杨 into 李白 + 杨);
- span rules for English proper names: runs of capitalised words (with ``of``, ``de``, ``van``
  ... inside), less a leading stopword; a single capitalised word that only starts a sentence
  is not a name.

Everything here is plain Python in the parse worker (the pickle holds only the KB's names; the
automaton and jieba's dictionaries are built on first use).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import ahocorasick

from topicrawl.kg.model import KnowledgeBase
from topicrawl.text.stopwords import stopwords
from topicrawl.text.tokenize import chinese_segmenter

__all__ = ["KB_SOURCE", "POS_TYPES", "Recogniser", "Span", "has_cjk"]

KB_SOURCE = "kb"
POS_SOURCE = "pos"
CAPS_SOURCE = "caps"

POS_TYPES = {
    "nr": "person",
    "nrfg": "person",
    "nrt": "person",
    "ns": "place",
    "nt": "organisation",
    "nz": "other",
}
"""jieba's proper-noun tags and the entity type each stands for."""

_TAG_OF_TYPE = {"person": "nr", "place": "ns", "organisation": "nt"}

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
# A capitalised word (or an acronym, or CamelCase), with inner apostrophes and hyphens.
_CAPS_WORD = re.compile(r"(?<![\w'’-])[A-Z][A-Za-z0-9]*(?:['’-][A-Za-z0-9]+)*")
_CONNECTORS = frozenset({"of", "de", "del", "der", "da", "van", "von", "la", "le", "du", "&"})
_SENTENCE_END = frozenset(".!?:;\u3002\uff01\uff1f\n\"'“”()[]")
_MAX_SPAN = 80
_MIN_POS_CHARS = 2


class Span(NamedTuple):
    """A recognised name: where it is in the text, its surface form, a type guess ("" when
    unknown) and which recogniser found it (``kb``, ``pos`` or ``caps``)."""

    start: int
    end: int
    surface: str
    type: str
    source: str


def has_cjk(text: str) -> bool:
    """Whether the text has a Chinese character."""
    return _CJK.search(text) is not None


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _latin_word_char(char: str) -> bool:
    return _is_word_char(char) and not has_cjk(char)


def _lower_same_length(text: str) -> str:
    """``text.lower()``, but with every character kept at its index (a few characters lower to
    two, e.g. 'İ'; those stay as they are)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


class Recogniser:
    """Finds names in text with the gazetteer, jieba's tags and the English span rules.

    Args:
        kb: the knowledge base whose aliases the gazetteer knows (and jieba learns).
        chinese: tag Chinese text with jieba.
        english: apply the English span rules.
        user_dictionary: add the KB's Chinese aliases to jieba's dictionary (on by default;
            off only to show what jieba does alone).
    """

    def __init__(
        self,
        kb: KnowledgeBase,
        *,
        chinese: bool = True,
        english: bool = True,
        user_dictionary: bool = True,
    ) -> None:
        # alias text -> entity type of the alias's first entity (the tag jieba gets)
        names: dict[str, str] = {}
        for entity in kb.entities:
            for alias in entity.all_names():
                names.setdefault(alias.text, entity.type)
        self._names = names
        self._chinese = chinese
        self._english = english
        self._user_dictionary = user_dictionary
        self._automaton: Any = None
        self._tagger: _ChineseTagger | None = None
        self._lock = threading.Lock()
        self._stop = stopwords("en")

    def __getstate__(self) -> dict[str, object]:
        return {
            "names": self._names,
            "chinese": self._chinese,
            "english": self._english,
            "user_dictionary": self._user_dictionary,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._names = state["names"]
        self._chinese = state["chinese"]
        self._english = state["english"]
        self._user_dictionary = state["user_dictionary"]
        self._automaton = None
        self._tagger = None
        self._lock = threading.Lock()
        self._stop = stopwords("en")

    def spans(self, text: str) -> list[Span]:
        """The names in ``text``, in order, none overlapping."""
        found = self._gazetteer(text)
        chinese = self._chinese and has_cjk(text)
        if chinese:
            found += self._pos_names(text)
        if self._english:
            known = bytearray(len(text))
            for span in found:
                if span.source == KB_SOURCE:
                    known[span.start] = 1
            found += self._capitalised(text, known)
        return _merge(found)

    # -- gazetteer ------------------------------------------------------------------------

    def _build_automaton(self) -> Any:
        # Lowered alias -> its spellings with their types ("Apple" the company, "apple" the
        # fruit): a match stands if one spelling's case rule allows it.
        spellings: dict[str, list[tuple[str, str]]] = {}
        for alias, entity_type in self._names.items():
            key = _lower_same_length(alias)
            if key.strip():
                spellings.setdefault(key, []).append((alias, entity_type))
        automaton = ahocorasick.Automaton()
        for key, variants in spellings.items():
            automaton.add_word(key, (len(key), tuple(variants)))
        if spellings:
            automaton.make_automaton()
        return automaton

    def _gazetteer(self, text: str) -> list[Span]:
        if not self._names:
            return []
        if self._automaton is None:
            with self._lock:
                if self._automaton is None:
                    self._automaton = self._build_automaton()
        automaton = self._automaton
        if not len(automaton):
            return []
        lowered = _lower_same_length(text)
        spans = []
        size = len(text)
        for end_index, (length, variants) in automaton.iter_long(lowered):
            end = end_index + 1
            start = end - length
            first, last = lowered[start], lowered[end - 1]
            # A Latin-script alias matches whole words only (Chinese has no word boundaries).
            if _latin_word_char(first) and start > 0 and _is_word_char(text[start - 1]):
                continue
            if _latin_word_char(last) and end < size and _is_word_char(text[end]):
                continue
            surface = text[start:end]
            # "list" in prose is not the class List: a capitalised alias needs a capital.
            # The type stays unknown: the KB's guess is no evidence for linking.
            if any(not a[0].isupper() or surface[0].isupper() for a, _ in variants):
                spans.append(Span(start, end, surface, "", KB_SOURCE))
        return spans

    # -- Chinese --------------------------------------------------------------------------

    def _tagger_ready(self) -> _ChineseTagger:
        if self._tagger is None:
            with self._lock:
                if self._tagger is None:
                    self._tagger = self._make_tagger()
        return self._tagger

    def _make_tagger(self) -> _ChineseTagger:
        import jieba  # noqa: PLC0415 - ~0.4 s and a dictionary: only for Chinese pages
        import jieba.posseg  # noqa: PLC0415

        # jieba's own dictionaries, loaded once a process, copied (not changed) so the KB's
        # names do not leak into the text tokenizer's segmentation.
        base = chinese_segmenter()
        tokenizer = jieba.Tokenizer()
        tokenizer.FREQ = dict(base.FREQ)
        tokenizer.total = base.total
        tokenizer.initialized = True
        tags = dict(jieba.posseg.dt.word_tag_tab)
        if self._user_dictionary:
            for alias, entity_type in self._names.items():
                if has_cjk(alias) and " " not in alias:
                    tokenizer.add_word(
                        alias, freq=max(tokenizer.suggest_freq(alias, tune=False), 1) * 10
                    )
                    tags[alias] = _TAG_OF_TYPE.get(entity_type, "nz")
        return _ChineseTagger(tokenizer, tags)

    def _pos_names(self, text: str) -> list[Span]:
        tagger = self._tagger_ready()
        spans = []
        for start, run in _cjk_runs(text):
            offset = start
            for word in tagger.tokenizer.cut(run):
                begin = offset
                offset += len(word)
                if len(word) < _MIN_POS_CHARS or not has_cjk(word):
                    continue
                entity_type = tagger.type_of(word)
                if entity_type is not None:
                    spans.append(Span(begin, offset, word, entity_type, POS_SOURCE))
        return spans

    # -- English --------------------------------------------------------------------------

    def _capitalised(self, text: str, known: bytearray) -> list[Span]:
        """Runs of capitalised words; a word where a KB name starts is the KB's (and ends a
        run), which also spares most of the work on pages full of known names."""
        spans: list[Span] = []
        words = [word for word in _CAPS_WORD.finditer(text) if not known[word.start()]]
        index = 0
        while index < len(words):
            first = words[index]
            run = [first]
            index += 1
            while index < len(words):
                gap = text[run[-1].end() : words[index].start()]
                if gap == " " or _connector_gap(gap):
                    run.append(words[index])
                    index += 1
                else:
                    break
            spans.extend(self._caps_span(text, run))
        return spans

    def _caps_span(self, text: str, run: Sequence[re.Match[str]]) -> Iterable[Span]:
        # A leading stopword ("The", "In", "This") is a sentence's, not the name's.
        while run and run[0].group().lower() in self._stop:
            run = run[1:]
        if not run:
            return
        start, end = run[0].start(), run[-1].end()
        if end - start > _MAX_SPAN:
            return
        if len(run) == 1:
            word = run[0].group()
            inner_capital = any(c.isupper() for c in word[1:])
            if _starts_sentence(text, start) and not inner_capital:
                return
        yield Span(start, end, text[start:end], "", CAPS_SOURCE)


def _connector_gap(gap: str) -> bool:
    parts = gap.split(" ")
    return len(parts) == 3 and parts[0] == "" and parts[2] == "" and parts[1] in _CONNECTORS


def _starts_sentence(text: str, start: int) -> bool:
    before = text[:start].rstrip(" \t")
    return not before or before[-1] in _SENTENCE_END


# Endings that make an unknown word a place or an organisation (jieba guessed it as a word).
_PLACE_ENDINGS = ("省", "市", "县", "区", "镇", "村", "山", "河", "江", "湖", "岛", "州")
_ORGANISATION_ENDINGS = (
    "公司",
    "大学",
    "学院",
    "集团",
    "协会",
    "银行",
    "研究所",
    "研究院",
    "委员会",
    "医院",
    "基金会",
)
# Characters that end no name: jieba's HMM glues them to a surname ("杨是": 杨, then "is").
_NOT_NAME_ENDS = frozenset("是的了在和与及对把被也都就说等为从向着过")
# The most common Chinese surnames (single, then compound): an unknown word of two or three
# characters (four with a compound surname) that starts with one is taken for a person.
_SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶"
    "程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾"
    "毛郝龚邵万钱严覃武戴莫孔向汤"
)
_NAME_CHARS = 3
_COMPOUND_SURNAMES = ("欧阳", "司马", "诸葛", "上官", "东方", "慕容", "司徒", "令狐", "皇甫")


class _ChineseTagger:
    """jieba's segmentation (its fast HMM for unknown words) and a type for each word: the
    dictionary's proper-noun tag, else, for a word jieba did not know, a guess from its
    first character (a surname) or its ending (省, 公司 ...). jieba's own part-of-speech
    tagger (posseg) guesses better but costs three times the segmentation (measured on the
    Debian handbook in Chinese: 34 against 10 ms a page)."""

    def __init__(self, tokenizer: Any, tags: dict[str, str]) -> None:
        self.tokenizer = tokenizer
        self._tags = tags
        self._known = tokenizer.FREQ

    def type_of(self, word: str) -> str | None:
        tag = self._tags.get(word)
        if tag is not None:
            return POS_TYPES.get(tag)
        if self._known.get(word):
            return None
        if word.endswith(_ORGANISATION_ENDINGS):
            return "organisation"
        if word.endswith(_PLACE_ENDINGS):
            return "place"
        if word[-1] in _NOT_NAME_ENDS:
            return None
        if len(word) <= _NAME_CHARS and word[0] in _SURNAMES:
            return "person"
        if len(word) <= _NAME_CHARS + 1 and word.startswith(_COMPOUND_SURNAMES):
            return "person"
        return None


def _cjk_runs(text: str) -> Iterable[tuple[int, str]]:
    """Stretches of the text with Chinese in them (split at line ends), with their offsets."""
    offset = 0
    for line in text.split("\n"):
        if has_cjk(line):
            yield offset, line
        offset += len(line) + 1


_PRIORITY = {KB_SOURCE: 0, POS_SOURCE: 1, CAPS_SOURCE: 2}


def _merge(spans: list[Span]) -> list[Span]:
    """Non-overlapping spans: the KB's first, then longer, then earlier."""
    if not spans:
        return []
    covered = bytearray(max(span.end for span in spans))
    chosen: list[Span] = []
    ordered = sorted(spans, key=lambda s: (_PRIORITY[s.source], s.start - s.end, s.start))
    for span in ordered:
        if covered.find(1, span.start, span.end) != -1:
            continue
        chosen.append(span)
        covered[span.start : span.end] = b"\x01" * (span.end - span.start)
    return sorted(chosen)
