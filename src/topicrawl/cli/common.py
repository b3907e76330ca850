"""What the crawl, distributed and namespace commands share: their consoles, exit codes and
logging, and how topicrawl's errors become one message and an exit code.

Exit codes: 2 bad settings or a refused change, 3 nothing to work on (no page fetched, a
namespace that does not exist), 4 Redis or the database unreachable or failed, 1 any other
topicrawl error, 128 + the signal when interrupted (130 Ctrl-C, 143 SIGTERM).
"""

from __future__ import annotations

import asyncio
import io
import logging
import signal
import sys
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
    "dump_tasks_on_sigusr1",
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


def dump_tasks(loop: asyncio.AbstractEventLoop, stream: Any = None) -> None:
    """Write every asyncio task of ``loop`` with the stack it waits at (to stderr by default):
    what a crawl that no longer moves is waiting for."""
    stream = sys.stderr if stream is None else stream
    tasks = sorted(asyncio.all_tasks(loop), key=lambda task: task.get_name())
    buffer = io.StringIO()
    buffer.write(f"--- {len(tasks)} asyncio tasks (SIGUSR1) ---\n")
    for task in tasks:
        buffer.write(f"{task.get_name()}: {task.get_coro()!r}\n")
        task.print_stack(limit=12, file=buffer)
    buffer.write("--- end of tasks ---\n")
    stream.write(buffer.getvalue())
    stream.flush()


def dump_tasks_on_sigusr1() -> None:
    """On SIGUSR1 the running loop's tasks are written to stderr, the crawl going on
    (``kill -USR1 PID`` on a crawl or worker that seems stuck)."""
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGUSR1, dump_tasks, loop)


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
