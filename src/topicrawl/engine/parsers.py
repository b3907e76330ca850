"""The crawl's parser library: loaded from the settings' TOML file,
shared through the crawl's database, synced at each checkpoint and at the end."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

from topicrawl.core.errors import ConfigError, StorageError
from topicrawl.parse.methods import ParserConfigError, ParserLibrary, load_config

__all__ = ["open_parser_library"]

log = logging.getLogger(__name__)


@contextlib.asynccontextmanager
async def open_parser_library(
    path: str | None, storage_url: str
) -> AsyncIterator[ParserLibrary | None]:
    """The library of the schemas in ``path`` (None when no file is given), with what earlier
    runs and other workers learnt; what this run learns is saved when the block ends.

    Raises:
        ConfigError: the file cannot be read or a schema in it is wrong.
    """
    if path is None:
        yield None
        return
    try:
        config = load_config(path)
    except ParserConfigError as exc:
        raise ConfigError(str(exc)) from exc
    from topicrawl.storage.parsers import SqlParserStore  # noqa: PLC0415 - SQL on use

    async with SqlParserStore(storage_url) as store:
        library = ParserLibrary(config, store=store)
        await library.sync()
        log.info(
            "parser library: %d schemas, %d known URL patterns",
            len(config.schemas),
            len(library.states()),
        )
        try:
            yield library
        finally:
            try:
                await library.sync()
            except StorageError:  # the pages are stored; only their records are short
                log.exception("could not save the parser library's last records")
