"""The self-healing parser library: extraction methods, site schemas and validators, and the
state that learns which method works for each URL pattern (capability C13, items 1-3 of
issue 21; video pages are :mod:`topicrawl.parse.video`)."""

from __future__ import annotations

from topicrawl.parse.methods.extract import METHODS, Attempt, Extraction, Hint, extract
from topicrawl.parse.methods.library import (
    LibraryStore,
    MemoryLibraryStore,
    MethodChange,
    ParserLibrary,
    PatternState,
    PatternUpdate,
    StoredRecord,
)
from topicrawl.parse.methods.patterns import url_pattern
from topicrawl.parse.methods.relocate import Fingerprint
from topicrawl.parse.methods.schema import (
    FieldSpec,
    ParserConfig,
    ParserConfigError,
    SiteSchema,
    config_from_mapping,
    load_config,
)
from topicrawl.parse.methods.validators import Invalid, Value, parse_count, validate

__all__ = [
    "METHODS",
    "Attempt",
    "Extraction",
    "FieldSpec",
    "Fingerprint",
    "Hint",
    "Invalid",
    "LibraryStore",
    "MemoryLibraryStore",
    "MethodChange",
    "ParserConfig",
    "ParserConfigError",
    "ParserLibrary",
    "PatternState",
    "PatternUpdate",
    "SiteSchema",
    "StoredRecord",
    "Value",
    "config_from_mapping",
    "extract",
    "load_config",
    "parse_count",
    "url_pattern",
    "validate",
]
