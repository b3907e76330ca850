"""Entity recognition: where a page's text names something, and what kind of thing.

Three recognisers, merged (the knowledge base's names win an overlap, then the longer span):

- a gazetteer over the KB's aliases (Aho-Corasick, pyahocorasick) in the spellings a name
  takes (as written, in capitals, capitalised; a lower-case alias also in title case), so an
  alias written with a capital only matches text that starts with one; an alias in a Latin
  script only matches whole words;
- jieba for Chinese proper names: its dictionary's tags (``nr`` person, ``ns`` place, ``nt``
  organisation, ``nz`` other) and, for names jieba's HMM cut out but does not know, a surname
  or an ending (省, 公司 ...). The words are the ones the term counts use
  (:func:`~topicrawl.text.tokenize.segment_chinese`, remembered per run), so a page is
  segmented once. jieba alone splits many names (李白杨 into 李白 + 杨); a KB name is found
  whole by the gazetteer, whose spans win the overlap, so the split pieces are dropped;
- span rules for English proper names: runs of capitalised words (with ``of``, ``de``, ``van``
  ... inside), less a leading stopword; a single capitalised word that only starts a sentence
  is not a name.

Everything here is plain Python in the parse worker (the pickle holds only the KB's names; the
automaton and jieba's dictionaries are built on first use).
"""

from __future__ import annotations

import bisect
import re
import threading
from collections import Counter
from typing import Any, NamedTuple

import ahocorasick

from topicrawl.kg.model import KnowledgeBase
from topicrawl.text.stopwords import stopwords
from topicrawl.text.tokenize import CJK_RUN, chinese_segmenter, segment_chinese

__all__ = [
    "KB_SOURCE",
    "PERSON_MARGIN",
    "POS_TYPES",
    "Recogniser",
    "Span",
    "has_cjk",
    "person_margin",
]

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
# A capitalised word (or an acronym, or CamelCase), with inner apostrophes and hyphens. The
# capital comes first and the look back at what precedes it after: the expression fails at
# once on the other characters (a look back first is tried at every one, four times slower).
_AFTER_CAPITAL = r"[A-Za-z0-9]*(?:['’-][A-Za-z0-9]+)*"
_WORD_PATTERN = rf"[A-Z](?<![\w'’-].){_AFTER_CAPITAL}"
_CAPS_WORD = re.compile(_WORD_PATTERN)
_CONNECTORS = frozenset({"of", "de", "del", "der", "da", "van", "von", "la", "le", "du", "&"})
_SENTENCE_END = frozenset(".!?:;\u3002\uff01\uff1f\n\"'“”()[]")
_MARKS = "".join(re.escape(mark) for mark in sorted(_SENTENCE_END))
# A run of capitalised words joined by one space or by a connector between spaces; the empty
# group ``first`` matches when the run starts a sentence (the text's start, or a mark, maybe
# and a space, before its capital), so the common single word is judged without reading back.
_CAPS_RUN = re.compile(
    rf"[A-Z](?<![\w'’-].)(?P<first>(?<![^{_MARKS}].)|(?<=[{_MARKS}][ \t].))?{_AFTER_CAPITAL}"
    rf"(?:(?: | (?:{'|'.join(sorted(_CONNECTORS))}) ){_WORD_PATTERN})*"
)
_MAX_SPAN = 80
NAME_SHAPE = 0.25
"""The least name shape of a Chinese name from jieba's tags (:class:`Recogniser`): chosen on
half of the demo web's Chinese pages (`benchmarks/kg/quality.py`)."""
PERSON_MARGIN = 1.5
"""The least :func:`person_margin` of a Chinese word taken for a person's name (chosen on
half of the Chinese pages of the demo web and its video site: `benchmarks/kg/quality.py`)."""
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
    return not text.isascii() and _CJK.search(text) is not None


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


_ASCII_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _latin_word_char(char: str) -> bool:
    if char.isascii():
        return char.isalnum() or char == "_"
    return _is_word_char(char) and not has_cjk(char)


def _spellings(alias: str) -> set[str]:
    """The spellings of ``alias`` the gazetteer matches: as written, in capitals, with only
    its first letter capital, and (for one written in lower case) in title case."""
    spellings = {alias, alias.upper(), alias[:1] + alias[1:].lower()}
    if not alias[:1].isupper():
        spellings |= {alias.lower(), alias.title(), alias[:1].upper() + alias[1:]}
    return {s for s in spellings if s.strip()}


class Recogniser:
    """Finds names in text with the gazetteer, jieba's tags and the English span rules.

    Args:
        kb: the knowledge base whose aliases the gazetteer knows (and jieba learns).
        chinese: tag Chinese text with jieba.
        english: apply the English span rules.
        name_shape: the least :meth:`_ChineseTagger.name_shape` a Chinese name found by
            jieba's tags or the unknown-word rules needs (0: every one is kept).
        person_margin: the least :func:`person_margin` a Chinese word taken for a person's
            name needs (None: no such check).
    """

    def __init__(
        self,
        kb: KnowledgeBase,
        *,
        chinese: bool = True,
        english: bool = True,
        name_shape: float = NAME_SHAPE,
        person_margin: float | None = PERSON_MARGIN,
    ) -> None:
        # alias text -> entity type of the alias's first entity (the tag jieba gets)
        names: dict[str, str] = {}
        for entity in kb.entities:
            for alias in entity.all_names():
                names.setdefault(alias.text, entity.type)
        self._names = names
        self._chinese = chinese
        self._english = english
        self._name_shape = name_shape
        self._person_margin = person_margin
        self._automaton: Any = None
        self._tagger: _ChineseTagger | None = None
        self._lock = threading.Lock()
        self._stop = stopwords("en")

    def __getstate__(self) -> dict[str, object]:
        return {
            "names": self._names,
            "chinese": self._chinese,
            "english": self._english,
            "name_shape": self._name_shape,
            "person_margin": self._person_margin,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._names = state["names"]
        self._chinese = state["chinese"]
        self._english = state["english"]
        self._name_shape = state["name_shape"]
        self._person_margin = state.get("person_margin", PERSON_MARGIN)
        self._automaton = None
        self._tagger = None
        self._lock = threading.Lock()
        self._stop = stopwords("en")

    def spans(self, text: str, *, cjk: bool | None = None) -> list[Span]:
        """The names in ``text``, in order, none overlapping (``cjk``: whether the text has
        Chinese, when the caller knows)."""
        found = self._gazetteer(text)
        if cjk is None:
            cjk = has_cjk(text)
        named = self._pos_names(text) if self._chinese and cjk else []
        caps: list[Span] = []
        if self._english:
            known = bytearray(len(text))
            for span in found:
                known[span.start] = 1
            caps = self._capitalised(text, known)
        return _merge(found, named, caps)

    # -- gazetteer ------------------------------------------------------------------------

    def _build_automaton(self) -> Any:
        # The automaton runs over the text as it is (no lowered copy): each alias is added in
        # the spellings it may have. One written with a capital (the class "List", "Julia
        # Child") needs one in the text too, so it is added as written, in capitals and with
        # only its first letter capital; one in lower case ("apple") also capitalised and in
        # title case. Matching the text's own case is what keeps the matches few: on a Java
        # class page, "list", "set" and "type" in prose were two thirds of them.
        automaton = ahocorasick.Automaton()
        for alias in self._names:
            if not alias.strip():
                continue
            for spelling in _spellings(alias):
                # Whether it starts or ends with a Latin word character, worked out once (then
                # the text's neighbouring character must not continue the word).
                automaton.add_word(
                    spelling,
                    (
                        len(spelling),
                        _latin_word_char(spelling[0]),
                        _latin_word_char(spelling[-1]),
                    ),
                )
        if len(automaton):
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
        spans = []
        size = len(text)
        ascii_word = _ASCII_WORD
        make = tuple.__new__  # Span's own __new__ is a Python call a match
        for end_index, (length, latin_first, latin_last) in automaton.iter_long(text):
            end = end_index + 1
            start = end - length
            # A Latin-script alias matches whole words only: not inside a longer Latin word,
            # but right beside Chinese ("使用DocumentRoot指令": Chinese has no spaces).
            if latin_first and start > 0:
                char = text[start - 1]
                if char in ascii_word or (not char.isascii() and _latin_word_char(char)):
                    continue
            if latin_last and end < size:
                char = text[end]
                if char in ascii_word or (not char.isascii() and _latin_word_char(char)):
                    continue
            # The type stays unknown: the KB's guess is no evidence for linking.
            spans.append(make(Span, (start, end, text[start:end], "", KB_SOURCE)))
        return spans

    # -- Chinese --------------------------------------------------------------------------

    def _tagger_ready(self) -> _ChineseTagger:
        if self._tagger is None:
            with self._lock:
                if self._tagger is None:
                    self._tagger = self._make_tagger()
        return self._tagger

    def _make_tagger(self) -> _ChineseTagger:
        import jieba.posseg  # noqa: PLC0415 - ~0.4 s and a dictionary: only for Chinese pages

        # jieba's own tags, and the KB's Chinese names with their types (jieba cuts some of
        # them whole; the others the gazetteer finds).
        tags = dict(jieba.posseg.dt.word_tag_tab)
        for alias, entity_type in self._names.items():
            if has_cjk(alias) and " " not in alias:
                tags[alias] = _TAG_OF_TYPE.get(entity_type, "nz")
        return _ChineseTagger(tags, name_shape=self._name_shape, person_margin=self._person_margin)

    def _pos_names(self, text: str) -> list[Span]:
        tagger = self._tagger_ready()
        spans = []
        for run in CJK_RUN.finditer(text):
            offset = run.start()
            for word in segment_chinese(run.group()):
                begin = offset
                offset += len(word)
                if len(word) < _MIN_POS_CHARS:
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
        stop = self._stop
        for run in _CAPS_RUN.finditer(text):
            start, end = run.span()
            surface = run.group()
            if " " not in surface:  # one word, most runs: judged here
                if known[start] or len(surface) < 2 or surface.lower() in stop:
                    continue  # a KB name's start, a letter ("T" of List<T>), "The"
                rest = surface[1:]
                if run.group("first") is not None and rest == rest.lower():
                    continue  # a sentence's first word ("Returns"), unless CamelCase
                spans.append(Span(start, end, surface, "", CAPS_SOURCE))
                continue
            if known.find(1, start, end) == -1:
                span = self._caps_span(text, start, end)
                if span is not None:
                    spans.append(span)
                continue
            # A KB name inside: the words around it make runs of their own.
            words = [w for w in _CAPS_WORD.finditer(text, start, end) if not known[w.start()]]
            index = 0
            while index < len(words):
                first = last = words[index]
                index += 1
                while index < len(words):
                    gap = text[last.end() : words[index].start()]
                    if gap == " " or _connector_gap(gap):
                        last = words[index]
                        index += 1
                    else:
                        break
                span = self._caps_span(text, first.start(), last.end())
                if span is not None:
                    spans.append(span)
        return spans

    def _caps_span(self, text: str, start: int, end: int) -> Span | None:
        """The name in the run of capitalised words at ``start``-``end``, if it is one."""
        tokens = text[start:end].split(" ")
        # A leading stopword ("The", "In", "This") is a sentence's, not the name's.
        first = 0
        while first < len(tokens) and (
            tokens[first] in _CONNECTORS or tokens[first].lower() in self._stop
        ):
            start += len(tokens[first]) + 1
            first += 1
        if first == len(tokens) or end - start > _MAX_SPAN:
            return None
        if first == len(tokens) - 1:
            word = tokens[first]
            if len(word) < 2:
                return None
            rest = word[1:]
            if rest == rest.lower() and _starts_sentence(text, start):
                return None
        return Span(start, end, text[start:end], "", CAPS_SOURCE)


def _connector_gap(gap: str) -> bool:
    parts = gap.split(" ")
    return len(parts) == 3 and parts[0] == "" and parts[2] == "" and parts[1] in _CONNECTORS


def _starts_sentence(text: str, start: int) -> bool:
    at = start - 1
    while at >= 0 and text[at] in " \t":
        at -= 1
    return at < 0 or text[at] in _SENTENCE_END


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
    """A type for each of jieba's words: the dictionary's proper-noun tag, else, for a word
    jieba did not know (its HMM cut it out), a guess from its first character (a surname)
    or its ending (省, 公司 ...). jieba's own part-of-speech tagger (posseg) guesses better
    but costs three times the segmentation (measured on the Debian handbook in Chinese: 34
    against 10 ms a page), and it could not share the term counts' segmentation.

    jieba's dictionary tags many common words as names (安静 "quiet", 明星 "star" nr; 深度
    "depth" ns; 美味 "tasty" nz), so a typed word must also have the shape of a name of its
    type (:meth:`name_shape`) of at least ``name_shape``. A person's name must also read as
    one to jieba's part-of-speech model (:func:`person_margin` of at least
    ``person_margin``): the dictionary's tag of 安静 is nr, but its characters are those of
    an adjective."""

    def __init__(
        self,
        tags: dict[str, str],
        *,
        name_shape: float = 0.0,
        person_margin: float | None = None,
    ) -> None:
        self._tags = tags
        self._known = chinese_segmenter().FREQ
        self._least = name_shape
        self._shapes = _name_shapes() if name_shape > 0 else None
        self._person_margin = person_margin
        self._margins: dict[str, float] = {}

    def type_of(self, word: str) -> str | None:
        """The word's entity type, or None when it is no name (or lacks a name's shape)."""
        entity_type = self._guess(word)
        if (
            entity_type is not None
            and self._least > 0
            and self.name_shape(word, entity_type) < self._least
        ):
            return None
        if entity_type == "person" and self._person_margin is not None:
            margin = self._margins.get(word)
            if margin is None:
                if len(self._margins) >= _MARGINS_KEPT:
                    self._margins.clear()
                margin = self._margins[word] = person_margin(word)
            if margin < self._person_margin:
                return None
        return entity_type

    def name_shape(self, word: str, entity_type: str) -> float:
        """How much ``word`` starts or ends like the names of ``entity_type`` (0-1).

        Of jieba's dictionary words (two characters or more) that start with the word's first
        character, the share tagged with a name of the type; the same for the last character;
        the larger of the two (a person's surname starts the name, a place's 州 or 京 ends
        it). The word itself is left out of the counts (its own tag is what is in doubt)."""
        shapes = self._shapes if self._shapes is not None else _name_shapes()
        # Its tag as counted: jieba's (not a KB name's), of a word of two characters or more.
        tag = shapes.dictionary.get(word) if len(word) > 1 else None
        own = _group(tag) if tag is not None else None
        best = 0.0
        for at, char in ((0, word[0]), (1, word[-1])):
            counts = (shapes.first, shapes.last)[at].get(char, {})
            total = counts.get("", 0) - (own is not None)
            named = counts.get(entity_type, 0) - (own == entity_type)
            best = max(best, (named + 0.1) / (total + 1))
        return best

    def _guess(self, word: str) -> str | None:
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


_MARGINS_KEPT = 100_000
_PERSON_TAGS = frozenset({"nr", "nrfg", "nrt"})
_NO_PATH = -1e9  # a state or character the model never saw (its own floor is -3.14e100)


class _TagModel(NamedTuple):
    """jieba's part-of-speech HMM read per tag: each tag's log probabilities of starting a
    word, of the moves inside one (B -> M, M -> M, M -> E, B -> E), and of each character
    in each of the four states (B, M, E, S)."""

    start: dict[tuple[str, str], float]
    moves: dict[str, tuple[float, float, float, float]]
    emit: dict[tuple[str, str], dict[str, float]]
    tags: tuple[str, ...]


_tag_model_memo: _TagModel | None = None


def _tag_model() -> _TagModel:
    global _tag_model_memo  # noqa: PLW0603 - one model per process, like jieba's dictionary
    if _tag_model_memo is None:
        with _shapes_lock:
            if _tag_model_memo is None:
                from jieba.posseg import (  # noqa: PLC0415 - only for Chinese pages
                    prob_emit,
                    prob_start,
                    prob_trans,
                )

                emit, trans = prob_emit.P, prob_trans.P
                tags = tuple(sorted({tag for _, tag in emit}))

                def move(tag: str, a: str, b: str) -> float:
                    return float(trans.get((a, tag), {}).get((b, tag), _NO_PATH))

                _tag_model_memo = _TagModel(
                    start=dict(prob_start.P),
                    moves={
                        tag: (
                            move(tag, "B", "M"),
                            move(tag, "M", "M"),
                            move(tag, "M", "E"),
                            move(tag, "B", "E"),
                        )
                        for tag in tags
                    },
                    emit=emit,
                    tags=tags,
                )
    return _tag_model_memo


def _word_as(model: _TagModel, word: str, tag: str) -> float:
    """The log probability, in jieba's HMM, of ``word`` being one word tagged ``tag``."""
    emit = model.emit
    if len(word) == 1:
        return model.start.get(("S", tag), _NO_PATH) + emit.get(("S", tag), {}).get(word, _NO_PATH)
    b_to_m, m_to_m, m_to_e, b_to_e = model.moves[tag]
    score = model.start.get(("B", tag), _NO_PATH) + emit.get(("B", tag), {}).get(word[0], _NO_PATH)
    middle = emit.get(("M", tag), {})
    for at, char in enumerate(word[1:-1]):
        score += (b_to_m if at == 0 else m_to_m) + middle.get(char, _NO_PATH)
    score += (m_to_e if len(word) > 2 else b_to_e) + emit.get(("E", tag), {}).get(
        word[-1], _NO_PATH
    )
    return max(score, _NO_PATH)


def person_margin(word: str) -> float:
    """How much more likely jieba's part-of-speech model (its HMM, trained on tagged text,
    apart from the dictionary's one tag a word) finds ``word`` as a person's name (tags nr,
    nrfg, nrt) than as any other one word: the difference of the two log probabilities.
    Names have the characters of surnames and given names (李白 6.8, 刘德华 8.8); common
    words tagged nr in the dictionary mostly do not (安静 0.1, 古老 0.1, 明星 1.0)."""
    model = _tag_model()
    person = other = _NO_PATH
    for tag in model.tags:
        score = _word_as(model, word, tag)
        if tag in _PERSON_TAGS:
            person = max(person, score)
        else:
            other = max(other, score)
    return person - other


class _Shapes(NamedTuple):
    """Per first and per last character of jieba's dictionary words (two characters or
    more): how many words there are (under "") and how many of each name type; and the
    dictionary's tags they were counted from."""

    first: dict[str, dict[str, int]]
    last: dict[str, dict[str, int]]
    dictionary: dict[str, str]


_shapes_memo: _Shapes | None = None
_shapes_lock = threading.Lock()


def _group(tag: str) -> str:
    """The entity type a jieba tag stands for ("-" for a tag of no name)."""
    return POS_TYPES.get(tag, "-")


def _name_shapes() -> _Shapes:
    """The name shapes' counts, built once a process (~350,000 words, ~0.3 s)."""
    global _shapes_memo  # noqa: PLW0603 - one table per process, like jieba's dictionary
    if _shapes_memo is None:
        with _shapes_lock:
            if _shapes_memo is None:
                import jieba.posseg  # noqa: PLC0415 - only for Chinese pages

                pairs = [
                    (word, _group(tag))
                    for word, tag in jieba.posseg.dt.word_tag_tab.items()
                    if len(word) > 1
                ]
                tables: tuple[dict[str, dict[str, int]], ...] = ({}, {})
                for at, table in enumerate(tables):
                    for (char, group), n in Counter(
                        (word[-at], group)  # at 0 the first character, at 1 the last
                        for word, group in pairs
                    ).items():
                        counts = table.setdefault(char, {})
                        counts[group] = n
                        counts[""] = counts.get("", 0) + n
                _shapes_memo = _Shapes(tables[0], tables[1], jieba.posseg.dt.word_tag_tab)
    return _shapes_memo


def _merge(spans: list[Span], *others: list[Span]) -> list[Span]:
    """Non-overlapping spans: all of ``spans`` (the KB's), then of each list of ``others`` in
    turn those that overlap nothing taken before. Each list is in text order and overlaps
    nothing of its own (the gazetteer's longest matches, jieba's words, runs of capitals),
    so a span is checked against its two neighbours among those taken, not all of them."""
    chosen = spans
    for extra in others:
        if not extra:
            continue
        if not chosen:
            chosen = list(extra)
            continue
        starts = [span.start for span in chosen]
        kept = []
        for span in extra:
            at = bisect.bisect_right(starts, span.start)
            if at and chosen[at - 1].end > span.start:
                continue
            if at < len(chosen) and chosen[at].start < span.end:
                continue
            kept.append(span)
        if kept:
            chosen = sorted(chosen + kept)
    return chosen
