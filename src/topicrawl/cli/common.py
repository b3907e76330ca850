"""What the crawl, distributed and namespace commands share: their consoles, exit codes and
logging, and how topicrawl's errors become one message and an exit code.

Exit codes: 2 bad settings or a refused change, 3 nothing to work on (no page fetched, a
namespace that does not exist), 4 Redis or the database unreachable or failed, 1 any other
topicrawl error, 128 + the signal when interrupted (130 Ctrl-C, 143 SIGTERM).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.logging import RichHandler
from rich.text import Text

from topicrawl.cli.options import read_seeds
from topicrawl.core.errors import ConfigError, FrontierError, StorageError, TopicrawlError

__all__ = [
    "EXIT_CONFIG",
    "EXIT_INTERRUPTED",
    "EXIT_MISSING",
    "EXIT_SERVICE",
    "err",
    "fail",
    "out",
    "run",
    "seeds_or_exit",
    "setup_logging",
]

err = Console(stderr=True)
out = Console()

EXIT_CONFIG = 2
EXIT_MISSING = 3
EXIT_SERVICE = 4
EXIT_INTERRUPTED = 130

T = TypeVar("T")


def setup_logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(),
        format="%(message)s",
        handlers=[RichHandler(console=err, show_path=False, rich_tracebacks=True)],
        force=True,
    )


def fail(exc: TopicrawlError) -> NoReturn:
    """Say what went wrong (one line per problem, never read as markup) and exit with its
    code."""
    if isinstance(exc, ConfigError):
        said, code = "error", EXIT_CONFIG
    elif isinstance(exc, FrontierError):
        said, code = "Redis error", EXIT_SERVICE
    elif isinstance(exc, StorageError):
        said, code = "database error", EXIT_SERVICE
    else:
        said, code = "error", 1
    err.print(Text(f"{said}: {exc}", style="red"), soft_wrap=True)
    raise typer.Exit(code) from exc


def run(coro_factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine, turning topicrawl's errors (also inside task groups) into messages
    and exit codes."""
    try:
        return asyncio.run(coro_factory())
    except BaseExceptionGroup as group:
        error = _first_error(group)
        if error is None:
            raise
        fail(error)
    except TopicrawlError as exc:
        fail(exc)


def _first_error(group: BaseExceptionGroup[BaseException]) -> TopicrawlError | None:
    for exc in group.exceptions:
        if isinstance(exc, TopicrawlError):
            return exc
        if isinstance(exc, BaseExceptionGroup):
            found = _first_error(exc)
            if found is not None:
                return found
    return None


def seeds_or_exit(seed: list[str] | None, seeds_file: Path | None) -> list[str]:
    """The start URLs given (see :func:`~topicrawl.cli.options.read_seeds`); a bad seed file
    exits 2 with its problems."""
    try:
        return read_seeds(seed, seeds_file)
    except ConfigError as exc:
        fail(exc)
