"""Reading a user's knowledge-base file (JSONL or CSV) into entities and relations.

JSONL: one object a line. An entity line has ``id``, ``name``, ``type`` and optionally
``aliases`` (strings, or objects ``{"alias": ..., "prior": ...}``), ``description``, ``lang``;
a relation line has ``subject``, ``relation`` (or ``type``), ``object`` (entity ids) and
optionally ``confidence``. A ``kind`` of ``entity`` or ``relation`` may say which one a line is.
Blank lines and lines starting with ``#`` are skipped.

CSV: a header row, then one row per entity or relation, with columns ``kind`` (entity or
relation), ``id``, ``name``, ``type``, ``aliases`` (separated by ``|``), ``priors`` (the
aliases' priors, separated by ``|``, optional), ``description``, ``lang``, ``subject``,
``relation``, ``object``, ``confidence``.

Every problem is reported with its line number, all of them at once; nothing of a file with a
problem is loaded.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator, Mapping
from collections.abc import Set as AbstractSet
from pathlib import Path

from topicrawl.core.errors import ConfigError
from topicrawl.kg.model import LOADED, Alias, Entity, KnowledgeBase, Relation

__all__ = ["KbFileError", "parse_kb", "read_kb_file"]

# Problems listed in the error at most (the count says how many more there were).
_SHOWN = 20
_MAX_NAME = 300
_MAX_DESCRIPTION = 5_000


class KbFileError(ConfigError):
    """A KB file with problems; ``problems`` holds each as ``line N: what is wrong``."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.problems = problems
        shown = problems[:_SHOWN]
        more = len(problems) - len(shown)
        lines = "\n  ".join(shown)
        tail = f"\n  ... and {more} more" if more else ""
        super().__init__(f"{source}: {len(problems)} problem(s), nothing loaded:\n  {lines}{tail}")


class _Problem(ValueError):
    pass


def read_kb_file(path: Path, *, known: AbstractSet[str] = frozenset()) -> KnowledgeBase:
    """Read a KB file; its format follows its suffix (``.csv``, else JSONL). Its relations
    may name the entities of the file and those of ``known`` (keys already in the database).

    Raises:
        KbFileError: the file is missing, unreadable, not UTF-8, or has bad lines.
    """
    try:
        content = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise KbFileError(str(path), [f"cannot read it: {exc}"]) from exc
    fmt = "csv" if path.suffix.lower() == ".csv" else "jsonl"
    return parse_kb(content, fmt=fmt, source=str(path), known=known)


def parse_kb(
    content: str, *, fmt: str, source: str = "KB", known: AbstractSet[str] = frozenset()
) -> KnowledgeBase:
    """Parse KB text in ``fmt`` (``jsonl`` or ``csv``).

    Raises:
        KbFileError: any line is malformed, an id repeats, or a relation names an entity
            the file does not define.
    """
    if fmt not in {"jsonl", "csv"}:
        raise ConfigError(f"unknown KB format {fmt!r}; use jsonl or csv")
    records = _jsonl_records(content) if fmt == "jsonl" else _csv_records(content)
    problems: list[str] = []
    entities: dict[str, Entity] = {}
    relations: list[tuple[int, Relation]] = []
    for line, record in records:
        if isinstance(record, str):
            problems.append(f"line {line}: {record}")
            continue
        try:
            item = _entity_or_relation(record)
        except _Problem as exc:
            problems.append(f"line {line}: {exc}")
            continue
        if isinstance(item, Relation):
            relations.append((line, item))
        elif item.key in entities:
            problems.append(f"line {line}: entity id {item.key!r} is defined twice")
        else:
            entities[item.key] = item
    for line, relation in relations:
        for end in (relation.subject, relation.object):
            if end not in entities and end not in known:
                problems.append(f"line {line}: relation names unknown entity id {end!r}")
    if problems:
        raise KbFileError(source, problems)
    return KnowledgeBase(
        entities=tuple(entities.values()), relations=tuple(r for _, r in relations)
    )


def _jsonl_records(content: str) -> Iterator[tuple[int, Mapping[str, object] | str]]:
    for number, line in enumerate(content.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            value = json.loads(stripped)
        except json.JSONDecodeError as exc:
            yield number, f"not valid JSON ({exc.msg} at column {exc.colno})"
            continue
        if not isinstance(value, dict):
            yield number, "not a JSON object"
            continue
        yield number, value


_CSV_COLUMNS = frozenset(
    {
        "kind",
        "id",
        "name",
        "type",
        "aliases",
        "priors",
        "description",
        "lang",
        "subject",
        "relation",
        "object",
        "confidence",
    }
)


def _csv_records(content: str) -> Iterator[tuple[int, Mapping[str, object] | str]]:
    reader = csv.DictReader(io.StringIO(content, newline=""))
    try:
        header = reader.fieldnames
    except csv.Error as exc:
        yield 1, f"bad CSV header: {exc}"
        return
    if not header:
        yield 1, "no header row"
        return
    unknown = [name for name in header if name not in _CSV_COLUMNS]
    if unknown:
        yield 1, f"unknown column(s) {', '.join(map(repr, unknown))}"
        return
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield reader.line_num, f"bad CSV: {exc}"
            return
        if None in row:
            yield reader.line_num, "more fields than the header has"
            continue
        record: dict[str, object] = {k: v for k, v in row.items() if v not in {None, ""}}
        if not record:
            continue
        aliases = str(record.pop("aliases", ""))
        priors = str(record.pop("priors", ""))
        record["aliases"] = _csv_aliases(aliases, priors)
        if "confidence" in record:
            record["confidence"] = _number(record["confidence"])
        yield reader.line_num, record


def _csv_aliases(aliases: str, priors: str) -> list[object]:
    names = [a.strip() for a in aliases.split("|")] if aliases else []
    if not priors:
        return list(names)
    weights = [p.strip() for p in priors.split("|")]
    if len(weights) != len(names):
        return [{"error": f"{len(names)} aliases but {len(weights)} priors"}]
    return [{"alias": n, "prior": _number(w)} for n, w in zip(names, weights, strict=True)]


def _number(value: object) -> object:
    try:
        return float(str(value))
    except ValueError:
        return value  # reported by the field's own check


def _entity_or_relation(record: Mapping[str, object]) -> Entity | Relation:
    kind = record.get("kind")
    if kind is None:
        kind = "relation" if "subject" in record else "entity"
    if kind == "entity":
        return _entity(record)
    if kind == "relation":
        return _relation(record)
    raise _Problem(f"kind must be 'entity' or 'relation', not {kind!r}")


def _text(record: Mapping[str, object], name: str, *, limit: int = _MAX_NAME) -> str:
    value = record.get(name)
    if not isinstance(value, str) or not value.strip():
        raise _Problem(f"{name!r} must be a non-empty string")
    value = " ".join(value.split())
    if len(value) > limit:
        raise _Problem(f"{name!r} is longer than {limit} characters")
    return value


def _fraction(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Problem(f"{name} must be a number, not {value!r}")
    number = float(value)
    if not math.isfinite(number) or not 0.0 < number <= 1.0:
        raise _Problem(f"{name} must be in (0, 1], not {value!r}")
    return number


def _entity(record: Mapping[str, object]) -> Entity:
    key = _text(record, "id")
    if key.startswith("found:"):
        raise _Problem("ids starting with 'found:' are kept for entities the crawl finds")
    name = _text(record, "name")
    entity_type = _text(record, "type").lower()
    raw_aliases = record.get("aliases", [])
    if not isinstance(raw_aliases, list):
        raise _Problem("'aliases' must be a list")
    aliases: dict[str, Alias] = {}
    for raw in raw_aliases:
        alias = _alias(raw)
        aliases.setdefault(alias.text, alias)
    description = record.get("description", "")
    if not isinstance(description, str):
        raise _Problem("'description' must be a string")
    if len(description) > _MAX_DESCRIPTION:
        raise _Problem(f"'description' is longer than {_MAX_DESCRIPTION} characters")
    lang = record.get("lang")
    if lang is not None and not isinstance(lang, str):
        raise _Problem("'lang' must be a string")
    return Entity(
        key=key,
        name=name,
        type=entity_type,
        aliases=tuple(aliases.values()),
        description=" ".join(description.split()),
        lang=lang or None,
        origin=LOADED,
    )


def _alias(raw: object) -> Alias:
    text: object
    if isinstance(raw, str):
        text, prior = raw, 1.0
    elif isinstance(raw, dict):
        if "error" in raw:
            raise _Problem(str(raw["error"]))
        text = raw.get("alias")
        prior = _fraction(raw.get("prior", 1.0), "an alias's prior")
    else:
        raise _Problem(f"an alias must be a string or an object, not {raw!r}")
    if not isinstance(text, str) or not text.strip():
        raise _Problem("an alias must be a non-empty string")
    text = " ".join(text.split())
    if len(text) > _MAX_NAME:
        raise _Problem(f"an alias is longer than {_MAX_NAME} characters")
    return Alias(text, prior)


def _relation(record: Mapping[str, object]) -> Relation:
    subject = _text(record, "subject")
    obj = _text(record, "object")
    relation_type = record.get("relation", record.get("type"))
    if not isinstance(relation_type, str) or not relation_type.strip():
        raise _Problem("a relation needs a non-empty 'relation' (its type)")
    confidence = _fraction(record.get("confidence", 1.0), "confidence")
    return Relation(subject, relation_type.strip().lower(), obj, confidence, LOADED)
