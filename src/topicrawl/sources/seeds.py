"""Seed lists: a file of start URLs, one a line, read strictly.

The format: one absolute http(s) URL a line; blank lines and lines starting with ``#`` are
ignored; text after the URL must be a comment (``  # why this seed``). Every bad line is an
error, and all of them are reported at once with their line numbers, so a user fixes the
file in one go rather than one typo per run. URLs are canonicalised and duplicates dropped
(the first occurrence keeps its place).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from pathlib import Path

from topicrawl.core.errors import ConfigError
from topicrawl.core.models import Request
from topicrawl.parse.urls import InvalidUrl, Scope, canonicalize

__all__ = ["MAX_SEED_FILE_BYTES", "SeedFileSource", "SeedList", "parse_seeds", "read_seed_file"]

MAX_SEED_FILE_BYTES = 64 * 1024 * 1024
"""A seed file larger than this is refused (about a million URLs)."""

MAX_REPORTED_ERRORS = 20
"""Bad lines listed in a ConfigError; the rest are counted."""


@dataclass(frozen=True, slots=True)
class SeedList:
    """The seeds of a list: canonical, deduplicated, in file order, and how many lines were
    duplicates (after canonicalisation) or left out by the scope."""

    requests: tuple[Request, ...]
    duplicates: int = 0
    out_of_scope: int = 0

    @property
    def urls(self) -> list[str]:
        """The seed URLs."""
        return [r.url for r in self.requests]


def _check_line(line: str, max_url_length: int) -> str | None:
    """The URL of a seed line, None for a blank or comment line.

    Raises:
        ValueError: what is wrong with the line.
    """
    text = line.strip().removeprefix("\ufeff")
    if not text or text.startswith("#"):
        return None
    raw, *more = text.split(maxsplit=1)
    rest = more[0] if more else ""
    if rest and not rest.startswith("#"):
        raise ValueError("text after the URL must be a comment starting with '#'")
    if "://" not in raw:
        raise ValueError(f"{raw[:100]!r} is not a URL (add http:// or https://)")
    if len(raw) > max_url_length:
        raise ValueError(f"URL of {len(raw)} characters is over the {max_url_length} cap")
    try:
        return canonicalize(raw)
    except InvalidUrl as exc:
        raise ValueError(str(exc)) from exc


def parse_seeds(
    lines: Iterable[str],
    *,
    source: str = "<seeds>",
    scope: Scope | None = None,
    max_url_length: int = 2048,
) -> SeedList:
    """Validate seed lines and turn them into depth-0 requests.

    Args:
        lines: the lines (with or without line ends).
        source: the file name errors are reported against.
        scope: when given, seeds outside it are left out (and counted).
        max_url_length: longer URLs are errors.

    Raises:
        ConfigError: some lines are not valid seeds; the message lists them as
            ``source:line: problem`` (the first 20, then how many more).
    """
    errors: list[str] = []
    seen: set[str] = set()
    requests: list[Request] = []
    duplicates = out_of_scope = 0
    for number, line in enumerate(lines, start=1):
        try:
            url = _check_line(line, max_url_length)
        except ValueError as exc:
            errors.append(f"{source}:{number}: {exc}")
            continue
        if url is None:
            continue
        if url in seen:
            duplicates += 1
            continue
        seen.add(url)
        if scope is not None and not scope.allows(url):
            out_of_scope += 1
            continue
        requests.append(Request(url=url, depth=0))
    if errors:
        shown = errors[:MAX_REPORTED_ERRORS]
        if len(errors) > MAX_REPORTED_ERRORS:
            shown.append(f"... and {len(errors) - MAX_REPORTED_ERRORS} more bad lines")
        raise ConfigError(f"{len(errors)} invalid seed line(s):\n" + "\n".join(shown))
    return SeedList(tuple(requests), duplicates=duplicates, out_of_scope=out_of_scope)


def read_seed_file(
    path: str | Path,
    *,
    scope: Scope | None = None,
    max_url_length: int = 2048,
    max_bytes: int = MAX_SEED_FILE_BYTES,
) -> SeedList:
    """Read a seed file (UTF-8, a BOM allowed) with :func:`parse_seeds`.

    Raises:
        ConfigError: the file cannot be read, is too large, is not UTF-8, or has bad lines.
    """
    file = Path(path)
    try:
        size = file.stat().st_size
        raw = b"" if size > max_bytes else file.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read seed file {file}: {exc.strerror or exc}") from exc
    if size > max_bytes:
        raise ConfigError(f"seed file {file} is {size} bytes, over the {max_bytes} cap")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{file}:{line}: not UTF-8 text") from exc
    return parse_seeds(
        text.splitlines(), source=str(file), scope=scope, max_url_length=max_url_length
    )


class SeedFileSource:
    """The seeds of a file; implements ``core.protocols.Source``. The file is read (and
    validated) on first use, so a bad file raises :class:`ConfigError` from ``requests``;
    call :meth:`load` first to fail before a crawl starts."""

    def __init__(self, path: str | Path, *, scope: Scope | None = None) -> None:
        self._path = Path(path)
        self._scope = scope
        self._seeds: SeedList | None = None

    def load(self) -> SeedList:
        """Read and validate the file (once).

        Raises:
            ConfigError: see :func:`read_seed_file`.
        """
        if self._seeds is None:
            self._seeds = read_seed_file(self._path, scope=self._scope)
        return self._seeds

    async def requests(self) -> AsyncIterator[Request]:
        """The seed requests, in file order."""
        for request in self.load().requests:
            yield request
