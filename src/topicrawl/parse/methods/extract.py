"""One page through the extraction methods, in the parse worker: the pure half of the
self-healing library (its state lives in :mod:`topicrawl.parse.methods.library`).

Given the page's schema and a :class:`Hint` (the method remembered for its URL pattern and
the fields' fingerprints), :func:`extract` runs the remembered method; when its output does
not validate (or nothing is remembered) it tries the others in :data:`METHODS` order and
reports the first whose output validates, every attempt, and fresh fingerprints of the
winner's elements when asked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import lxml.html
from lxml import etree
from lxml.html import HtmlElement

from topicrawl.parse.methods.maintext import extract_metadata
from topicrawl.parse.methods.relocate import (
    Candidates,
    Fingerprint,
    find_element,
    fingerprint_of,
    relocate,
)
from topicrawl.parse.methods.rules import apply_rule
from topicrawl.parse.methods.schema import SiteSchema
from topicrawl.parse.methods.structured import (
    StructuredData,
    StructuredTimeout,
    extract_structured,
    lookup,
)
from topicrawl.parse.methods.validators import Invalid, RawValue, Value, validate

__all__ = ["METHODS", "Attempt", "Extraction", "Hint", "extract"]

METHODS: tuple[str, ...] = ("structured", "rules", "maintext", "relocate")
"""The extraction methods, in the order they are tried."""


@dataclass(frozen=True, slots=True)
class Hint:
    """What the library knows of a page's URL pattern when the page is parsed."""

    schema: str
    pattern: str
    method: str | None = None
    fingerprints: Mapping[str, tuple[Fingerprint, ...]] = field(default_factory=dict)
    want_fingerprints: bool = False


@dataclass(frozen=True, slots=True)
class Attempt:
    """One method tried on a page: whether its output validated, and the required fields that
    were missing or invalid."""

    method: str
    ok: bool
    failed: tuple[str, ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Extraction:
    """The outcome on one page: the winning method (None: none validated), its record, every
    attempt in order, and the winner's fields' fingerprints when asked for.

    When no method validated, ``partial`` is the record of the attempt that got the most
    fields valid (none: no attempt got any), ``partial_method`` that method and ``missing``
    its required fields that were missing or invalid: the page is stored with what it has,
    flagged, and the library learns nothing from it (no method is remembered or changed).
    """

    schema: str
    pattern: str
    remembered: str | None
    method: str | None
    record: Mapping[str, Value] | None
    attempts: tuple[Attempt, ...]
    fingerprints: Mapping[str, Fingerprint] | None = None
    partial: Mapping[str, Value] | None = None
    partial_method: str | None = None
    missing: tuple[str, ...] = ()

    @property
    def failed_fields(self) -> tuple[str, ...]:
        """The fields the remembered method failed on (empty when it worked or was none)."""
        first = self.attempts[0] if self.attempts else None
        if first is None or first.ok or first.method != self.remembered:
            return ()
        return first.failed


class _Page:
    """A page's lazily built views: the lxml tree, its structured data, trafilatura's output."""

    def __init__(self, html: str, url: str, budget: float) -> None:
        self.html, self.url, self.budget = html, url, budget
        self.tree = _tree(html)
        self._structured: StructuredData | None = None
        self.relocation_cache: dict[bool, Candidates | None] = {}
        self._metadata: dict[str, RawValue] | None = None

    @property
    def structured(self) -> StructuredData:
        if self._structured is None:
            self._structured = extract_structured(self.tree, len(self.html), budget=self.budget)
        return self._structured

    @property
    def metadata(self) -> dict[str, RawValue]:
        if self._metadata is None:
            self._metadata = extract_metadata(self.html, self.url)
        return self._metadata


def _tree(html: str) -> HtmlElement:
    parser = lxml.html.HTMLParser(encoding="utf-8", recover=True, huge_tree=False)
    try:
        root = lxml.html.document_fromstring(html.encode("utf-8", "replace"), parser=parser)
    except (etree.ParserError, ValueError):
        root = lxml.html.document_fromstring("<html><body></body></html>")
    return root


_RawFields = dict[str, RawValue]
_Method = Callable[[_Page, SiteSchema, Hint], _RawFields | None]


def _by_structured(page: _Page, schema: SiteSchema, hint: Hint) -> _RawFields | None:
    data = page.structured
    if not any(data.values()):
        return None
    found: _RawFields = {}
    for spec in schema.fields:
        for path in spec.structured or (spec.name,):
            value = lookup(data, path)
            if value is not None:
                found[spec.name] = value
                break
    return found


def _by_rules(page: _Page, schema: SiteSchema, hint: Hint) -> _RawFields | None:
    if not any(spec.rule for spec in schema.fields):
        return None
    found: _RawFields = {}
    for spec in schema.fields:
        if spec.rule:
            value = apply_rule(page.tree, spec.rule, many=spec.validator == "names")
            if value is not None:
                found[spec.name] = value
    return found


def _by_maintext(page: _Page, schema: SiteSchema, hint: Hint) -> _RawFields | None:
    if not any(spec.metadata for spec in schema.fields):
        return None
    metadata = page.metadata
    return {s.name: metadata[s.metadata] for s in schema.fields if s.metadata in metadata}


def _by_relocation(page: _Page, schema: SiteSchema, hint: Hint) -> _RawFields | None:
    if not hint.fingerprints:
        return None
    found: _RawFields = {}
    for spec in schema.fields:
        variants = hint.fingerprints.get(spec.name, ())
        if (
            variants
            and (value := relocate(page.tree, variants, cache=page.relocation_cache)) is not None
        ):
            found[spec.name] = value
    return found


_METHOD_FUNCTIONS: dict[str, _Method] = {
    "structured": _by_structured,
    "rules": _by_rules,
    "maintext": _by_maintext,
    "relocate": _by_relocation,
}


def _check(schema: SiteSchema, raw: _RawFields) -> tuple[dict[str, Value], tuple[str, ...]]:
    """The fields that validate, and the required ones that are missing or invalid."""
    record: dict[str, Value] = {}
    failed: list[str] = []
    for spec in schema.fields:
        value = raw.get(spec.name)
        if value is not None:
            try:
                record[spec.name] = validate(spec.validator, value)
                continue
            except Invalid:
                pass
        if spec.required:
            failed.append(spec.name)
    return record, tuple(failed)


def extract(
    html: str, url: str, schema: SiteSchema, hint: Hint, *, budget: float = 1.0
) -> Extraction:
    """Run the methods on one page as the module docstring says (``budget``: seconds for the
    structured-data step)."""
    page = _Page(html, url, budget)
    order = [hint.method] if hint.method in _METHOD_FUNCTIONS else []
    order += [m for m in METHODS if m not in order]
    attempts: list[Attempt] = []
    best: tuple[dict[str, Value], str, tuple[str, ...]] | None = None
    for method in order:
        try:
            raw = _METHOD_FUNCTIONS[method](page, schema, hint)
        except (StructuredTimeout, ValueError, TypeError, RecursionError, etree.LxmlError) as exc:
            attempts.append(Attempt(method, ok=False, error=f"{type(exc).__name__}: {exc}"))
            continue
        if raw is None:  # the method has nothing to go on for this schema (not counted)
            continue
        record, failed = _check(schema, raw)
        ok = not failed and bool(record)
        attempts.append(Attempt(method, ok=ok, failed=failed))
        if not ok and record and (best is None or len(record) > len(best[0])):
            best = (record, method, failed)
        if ok:
            prints = None
            if hint.want_fingerprints or method != hint.method:
                prints = _fingerprints(page.tree, schema, raw, record)
            return Extraction(
                schema.name, hint.pattern, hint.method, method, record, tuple(attempts), prints
            )
    if best is None:
        return Extraction(schema.name, hint.pattern, hint.method, None, None, tuple(attempts))
    partial, method, missing = best
    return Extraction(
        schema.name,
        hint.pattern,
        hint.method,
        None,
        None,
        tuple(attempts),
        partial=partial,
        partial_method=method,
        missing=missing,
    )


def _fingerprints(
    tree: HtmlElement, schema: SiteSchema, raw: _RawFields, record: Mapping[str, Value]
) -> dict[str, Fingerprint]:
    prints: dict[str, Fingerprint] = {}
    for spec in schema.fields:
        if spec.name not in record:
            continue
        element = find_element(tree, raw[spec.name], record[spec.name])
        if element is not None:
            prints[spec.name] = fingerprint_of(element, many=spec.validator == "names")
    return prints
