"""Relations between entities named in one sentence, typed by patterns and by the KB.

Two linked mentions in one sentence, the first before the second, are related when the text
between them (and, for a few Chinese patterns, the text right after the second) matches a
pattern: "X extends Y", "X implements Y", "X was directed by Y", "X 的导演是 Y", "X 由 Y 执导"...
A pattern may read its sentence backwards ("Y directed X" is ``directed_by(X, Y)``). A pair
with no pattern that the KB already relates gets the KB's relation type, less sure. The
confidence grows with the linker's confidence in both ends.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter

from topicrawl.core.models import EntityMention, RelationMention
from topicrawl.kg.model import KnowledgeBase

__all__ = ["PATTERNS", "RelationPattern", "extract_relations"]

_SENTENCE_MARKS = ".!?;\n。！？；"
_SENTENCE_END = re.compile(r"[.!?;\n。！？；]")
_EVIDENCE = 300
_MAX_GAP = 60  # characters between two mentions at most for a pattern to apply
_LETTER = re.compile(r"[^\W\d_]")  # every pattern has a word between (or after) the two
_BY_START = attrgetter("start")
_PATTERN_BASE = 0.6
_DECLARATIONS = frozenset({"extends", "implements"})
_TYPE_ARGS = re.compile(r"^<[^<>]*(?:<[^<>]*>[^<>]*)*>")
# Between two types of one clause's list: a comma, after the first's type arguments if any.
_LIST_GAP = re.compile(r"(?:<[^<>]*(?:<[^<>]*>[^<>]*)*>)?\s*,\s*")
_KB_BASE = 0.3


@dataclass(frozen=True, slots=True)
class RelationPattern:
    """The words between (and optionally after) two mentions that make a typed relation.

    ``reverse``: the second mention is the relation's subject ("Y directed X").
    """

    relation: str
    between: re.Pattern[str]
    after: re.Pattern[str] | None = None
    reverse: bool = False


def _p(
    relation: str, between: str, *, after: str | None = None, reverse: bool = False
) -> RelationPattern:
    return RelationPattern(
        relation,
        re.compile(between, re.IGNORECASE),
        re.compile(after) if after is not None else None,
        reverse,
    )


_SP = r"\s*"
_THE = r"(?:\s+(?:the|a|an|class|interface))?"
PATTERNS: tuple[RelationPattern, ...] = (
    _p("extends", rf"{_SP}(?:extends|inherits from|is a subclass of|is a kind of){_THE}\s+"),
    _p("implements", rf"{_SP}implements{_THE}\s+"),
    _p("part_of", rf"{_SP}(?:is part of|belongs to|is a member of|is in package){_THE}\s+"),
    _p("located_in", rf"{_SP}(?:is located in|lies in|is a city in|is in){_THE}\s+"),
    _p("directed_by", rf"{_SP}(?:was|is) directed by\s+"),
    _p("directed_by", rf"{_SP}directed{_THE}\s+", reverse=True),
    _p("written_by", rf"{_SP}(?:was|is) written by\s+"),
    _p("written_by", rf"{_SP}(?:wrote|is the author of){_THE}\s+", reverse=True),
    _p("founded_by", rf"{_SP}(?:was|is) founded by\s+"),
    _p("founded_by", rf"{_SP}founded{_THE}\s+", reverse=True),
    _p("works_for", rf"{_SP}(?:works for|works at|is employed by|joined){_THE}\s+"),
    _p("spouse", rf"{_SP}(?:married|is married to|is the (?:wife|husband) of)\s+"),
    _p("capital_of", rf"{_SP}is the capital of{_THE}\s+"),
    _p("directed_by", r"\s*的导演是\s*"),
    _p("directed_by", r"\s*由\s*", after=r"^\s*(?:执导|导演)"),
    _p("directed_by", r"\s*(?:执导了|导演了)\s*《?", reverse=True),
    _p("written_by", r"\s*的作者是\s*"),
    _p("written_by", r"\s*(?:写了|创作了|著有)\s*《?", reverse=True),
    _p("founded_by", r"\s*的创始人是\s*"),
    _p("founded_by", r"\s*(?:创立了|创办了|创建了)\s*", reverse=True),
    _p("located_in", r"\s*位于\s*"),
    _p("capital_of", r"\s*是\s*", after=r"^\s*的首都"),
    _p("extends", r"\s*(?:继承自|继承了|继承)\s*"),
    _p("implements", r"\s*实现了?\s*"),
    _p("works_for", r"\s*(?:就职于|任职于|加入了)\s*"),
    _p("spouse", r"\s*的(?:妻子|丈夫)是\s*"),
)


def _any_of(patterns: Sequence[RelationPattern]) -> re.Pattern[str]:
    """One expression that matches where any of ``patterns`` (their words between) does: most
    close pairs match none, and are turned away by one match instead of one per pattern."""
    return re.compile("|".join(f"(?:{p.between.pattern})" for p in patterns), re.IGNORECASE)


_ANY_PATTERN = _any_of(PATTERNS)


def extract_relations(
    text: str,
    mentions: Sequence[EntityMention],
    kb: KnowledgeBase,
    *,
    patterns: Sequence[RelationPattern] = PATTERNS,
) -> list[RelationMention]:
    """Relations between the mentions of each sentence of ``text``.

    A sentence ends at ``.!?;``, their Chinese forms, or a line end. The sentences are found
    between the mentions (no sentence end between two mentions: the same sentence), not by
    reading every sentence of the page: a page of code has thousands, most without a name.
    """
    found: dict[tuple[str, str, str], RelationMention] = {}
    any_pattern = _ANY_PATTERN if patterns is PATTERNS else _any_of(patterns)
    ordered = sorted(mentions, key=_BY_START)  # in order already, from the linker
    group: list[EntityMention] = []
    for mention in [*ordered, None]:
        if mention is not None and (
            not group or _SENTENCE_END.search(text, group[-1].end, mention.start) is None
        ):
            group.append(mention)
            continue
        if len(group) > 1:
            read = _sentence_relations(text, group, kb, patterns, any_pattern)
            # The sentence is cut out only for a group that relates something.
            evidence = _sentence_of(text, group[0].start, group[-1].end) if read else ""
            for relation in read:
                key = (relation.subject, relation.relation, relation.object)
                if key not in found or found[key].confidence < relation.confidence:
                    found[key] = relation._replace(evidence=evidence)
        group = [mention] if mention is not None else []
    return list(found.values())


def _sentence_of(text: str, start: int, end: int) -> str:
    """The sentence around ``start``-``end`` (single-spaced, at most ``_EVIDENCE`` long)."""
    low = max(0, start - _EVIDENCE)
    begin = max(text.rfind(mark, low, start) for mark in _SENTENCE_MARKS) + 1
    begin = max(begin, low)
    stop = _SENTENCE_END.search(text, end)
    finish = len(text) if stop is None else stop.end()  # with its mark (a line end is spaced)
    return " ".join(text[begin : min(finish, begin + 4 * _EVIDENCE)].split())[:_EVIDENCE]


def _sentence_relations(
    text: str,
    inside: Sequence[EntityMention],
    kb: KnowledgeBase,
    patterns: Sequence[RelationPattern],
    any_pattern: re.Pattern[str],
) -> list[RelationMention]:
    """The pairs of mentions close enough for a pattern, each tried against the patterns,
    and the pairs further apart that the KB relates (found through each entity's
    neighbours, not by trying every pair: a line of code names dozens of types)."""
    relations = []
    keys = {mention.entity for mention in inside}
    # Mentions that start later than each mention ends: the pairs of the sentence.
    seen: set[tuple[str, str]] = set()
    # A declaration's clauses: in "A extends B implements C, D" the type that implements C
    # and D is A, not B: the mention that ends an extends/implements clause (by its index)
    # -> the clause's subject mention and relation.
    clause: dict[int, tuple[EntityMention, str]] = {}
    for i, first in enumerate(inside):
        related = kb.neighbours(first.entity) & keys
        near_to = i + 1
        while near_to < len(inside) and inside[near_to].start - first.end <= _MAX_GAP:
            near_to += 1
        for j in range(i + 1, near_to):
            second = inside[j]
            if first.entity == second.entity:
                continue
            typed = _typed(text, first, second, patterns, any_pattern)
            if i in clause:
                typed = _in_clause(text, clause[i], first, second, typed)
            if typed is not None:
                relations.append(typed)
                if typed.relation in _DECLARATIONS and j not in clause:
                    held = clause.get(i)
                    subject = first if held is None else held[0]
                    if typed.subject in (first.entity, subject.entity):
                        clause[j] = (subject, typed.relation)
            elif second.entity in related and (first.entity, second.entity) not in seen:
                seen.add((first.entity, second.entity))
                relations.extend(_known(first, second, kb))
        if not related:
            continue
        for second in inside[near_to:]:
            pair = (first.entity, second.entity)
            if second.entity in related and pair not in seen:
                seen.add(pair)
                relations.extend(_known(first, second, kb))
    return relations


def _in_clause(
    text: str,
    held: tuple[EntityMention, str],
    first: EntityMention,
    second: EntityMention,
    typed: RelationMention | None,
) -> RelationMention | None:
    """A relation read after ``first``, which ended a clause of ``subject``'s declaration:
    "B implements C" there is ``subject`` implementing C, and "B, C" (a list of the clause)
    gives ``subject`` the clause's relation with C too."""
    subject, kind = held
    if typed is not None:
        if typed.relation in _DECLARATIONS and typed.subject == first.entity:
            return typed._replace(subject=subject.entity)
        return typed
    if subject.entity == second.entity or not _LIST_GAP.fullmatch(text[first.end : second.start]):
        return None
    sureness = min(subject.score, second.score)
    confidence = _PATTERN_BASE + (1 - _PATTERN_BASE) * sureness
    return RelationMention(subject.entity, kind, second.entity, confidence, "")


def _typed(
    text: str,
    first: EntityMention,
    second: EntityMention,
    patterns: Sequence[RelationPattern],
    any_pattern: re.Pattern[str],
) -> RelationMention | None:
    """The relation a pattern reads in the words between two close mentions, if one does
    (its evidence is filled in by the caller)."""
    between = text[first.end : second.start]
    if _LETTER.search(between) is None:  # ", " or "(": most pairs on a page of code
        return None
    if between.startswith("<"):  # the first's type parameters: "SwingWorker<T,V> extends"
        between = _TYPE_ARGS.sub("", between, count=1)
    if any_pattern.fullmatch(between) is None:
        return None
    after = text[second.end : second.end + 10]
    for pattern in patterns:
        if not pattern.between.fullmatch(between):
            continue
        if pattern.after is not None and not pattern.after.match(after):
            continue
        subject, obj = (second, first) if pattern.reverse else (first, second)
        sureness = min(first.score, second.score)
        confidence = _PATTERN_BASE + (1 - _PATTERN_BASE) * sureness
        return RelationMention(subject.entity, pattern.relation, obj.entity, confidence, "")
    return None


def _known(
    first: EntityMention,
    second: EntityMention,
    kb: KnowledgeBase,
) -> list[RelationMention]:
    """The KB's own relations between two co-occurring entities, seen again on the page
    (its evidence is filled in by the caller)."""
    sureness = min(first.score, second.score)
    return [
        RelationMention(
            r.subject, r.type, r.object, _KB_BASE * r.confidence * (0.5 + sureness / 2), ""
        )
        for r in kb.relations_between(first.entity, second.entity)
    ]
