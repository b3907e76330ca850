"""Site schemas and parser settings, loaded from a TOML file.

A schema names the fields of one kind of page on some sites, which fields are required and
how each is validated; it also says where each method may find a field: the keys of
structured data, the user's CSS or XPath rule, trafilatura's metadata name. A file looks like::

    [[schemas]]
    name = "film"
    domains = ["example.com"]          # registered domains the schema applies to
    paths = ["^/film/"]                # optional: regular expressions on the URL path

    [schemas.fields.title]
    validator = "text"                 # text, number, count, date, url, names
    required = true
    structured = ["name", "og:title"]  # JSON-LD/microdata paths, OpenGraph properties
    rule = "css:h1.title::text"        # or "xpath://h1/text()"
    metadata = "title"                 # trafilatura's metadata field

Bad TOML, an unknown validator or a selector that does not compile is a
:class:`ParserConfigError` naming the file and the field.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from topicrawl.parse.methods.validators import VALIDATORS

__all__ = ["FieldSpec", "ParserConfig", "ParserConfigError", "SiteSchema", "load_config"]

_METADATA_KEYS = frozenset(
    {"title", "author", "date", "description", "sitename", "categories", "tags", "text", "url"}
)


class ParserConfigError(ValueError):
    """A parser settings file that cannot be used (the message names the file and the place)."""


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field of a schema: its validator, whether a record needs it, and where to look."""

    name: str
    validator: str = "text"
    required: bool = False
    structured: tuple[str, ...] = ()
    rule: str | None = None
    metadata: str | None = None


@dataclass(frozen=True, slots=True)
class SiteSchema:
    """The fields of one kind of page on some registered domains (and URL paths)."""

    name: str
    domains: frozenset[str]
    fields: tuple[FieldSpec, ...]
    paths: tuple[re.Pattern[str], ...] = ()

    @property
    def required(self) -> tuple[str, ...]:
        """The names of the fields every record must have."""
        return tuple(f.name for f in self.fields if f.required)

    def applies_to(self, domain: str, path: str) -> bool:
        """Whether a URL of registered ``domain`` and ``path`` is a page of this schema."""
        if domain not in self.domains:
            return False
        return not self.paths or any(p.search(path) for p in self.paths)


@dataclass(frozen=True, slots=True)
class ParserConfig:
    """Every schema of a crawl (empty: the parser library is off)."""

    schemas: tuple[SiteSchema, ...] = ()
    domains: frozenset[str] = field(default=frozenset())

    def __post_init__(self) -> None:
        if not self.domains:
            domains = frozenset(d for s in self.schemas for d in s.domains)
            object.__setattr__(self, "domains", domains)

    def schema_for(self, domain: str, path: str) -> SiteSchema | None:
        """The first schema that applies to a URL, or None."""
        if domain not in self.domains:
            return None
        return next((s for s in self.schemas if s.applies_to(domain, path)), None)

    def by_name(self, name: str) -> SiteSchema | None:
        """The schema called ``name``, or None."""
        return next((s for s in self.schemas if s.name == name), None)


def load_config(path: str | Path) -> ParserConfig:
    """Read parser settings from a TOML file.

    Raises:
        ParserConfigError: the file cannot be read or parsed, or a schema is wrong.
    """
    source = Path(path)
    try:
        data = tomllib.loads(source.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ParserConfigError(f"{source}: cannot read: {exc}") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ParserConfigError(f"{source}: not valid TOML: {exc}") from exc
    return config_from_mapping(data, origin=str(source))


def config_from_mapping(data: Mapping[str, object], *, origin: str = "<settings>") -> ParserConfig:
    """Parser settings from already-parsed TOML (see :func:`load_config`)."""
    schemas = data.get("schemas", [])
    if not isinstance(schemas, list):
        raise ParserConfigError(f"{origin}: 'schemas' must be an array of tables ([[schemas]])")
    built = tuple(_schema(item, f"{origin}: schemas[{i}]") for i, item in enumerate(schemas))
    names = [s.name for s in built]
    if len(set(names)) != len(names):
        raise ParserConfigError(f"{origin}: two schemas share a name: {names}")
    return ParserConfig(schemas=built)


def _schema(item: object, where: str) -> SiteSchema:
    if not isinstance(item, dict):
        raise ParserConfigError(f"{where}: must be a table")
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise ParserConfigError(f"{where}: needs a name")
    where = f"{where} ({name})"
    domains = _strings(item.get("domains", []), f"{where}.domains")
    if not domains:
        raise ParserConfigError(f"{where}: needs at least one domain")
    paths: list[re.Pattern[str]] = []
    for text in _strings(item.get("paths", []), f"{where}.paths"):
        try:
            paths.append(re.compile(text))
        except re.error as exc:
            raise ParserConfigError(
                f"{where}.paths: bad regular expression {text!r}: {exc}"
            ) from exc
    fields = item.get("fields")
    if not isinstance(fields, dict) or not fields:
        raise ParserConfigError(f"{where}: needs [schemas.fields.NAME] tables")
    specs = tuple(_field(fname, spec, f"{where}.fields.{fname}") for fname, spec in fields.items())
    return SiteSchema(
        name=name,
        domains=frozenset(d.lower() for d in domains),
        fields=specs,
        paths=tuple(paths),
    )


def _field(name: str, spec: object, where: str) -> FieldSpec:
    from topicrawl.parse.methods.rules import compile_rule  # noqa: PLC0415 - parsel on use

    if not isinstance(spec, dict):
        raise ParserConfigError(f"{where}: must be a table")
    unknown = set(spec) - {"validator", "required", "structured", "rule", "metadata"}
    if unknown:
        raise ParserConfigError(f"{where}: unknown keys {sorted(unknown)}")
    validator = spec.get("validator", "text")
    if validator not in VALIDATORS:
        raise ParserConfigError(
            f"{where}: unknown validator {validator!r} (one of {', '.join(VALIDATORS)})"
        )
    rule = spec.get("rule")
    if rule is not None:
        if not isinstance(rule, str):
            raise ParserConfigError(f"{where}.rule: must be a string")
        try:
            compile_rule(rule)
        except ValueError as exc:
            raise ParserConfigError(f"{where}.rule: {exc}") from exc
    metadata = spec.get("metadata")
    if metadata is not None and metadata not in _METADATA_KEYS:
        raise ParserConfigError(
            f"{where}.metadata: {metadata!r} is not one of {', '.join(sorted(_METADATA_KEYS))}"
        )
    required = spec.get("required", False)
    if not isinstance(required, bool):
        raise ParserConfigError(f"{where}.required: must be true or false")
    return FieldSpec(
        name=name,
        validator=validator,
        required=required,
        structured=tuple(_strings(spec.get("structured", []), f"{where}.structured")),
        rule=rule,
        metadata=metadata,
    )


def _strings(value: object, where: str) -> Sequence[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ParserConfigError(f"{where}: must be a string or an array of strings")
    return value
