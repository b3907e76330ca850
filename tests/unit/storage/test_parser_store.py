"""The parser library's store on SQLite and PostgreSQL: two libraries share what they learn."""

from __future__ import annotations

import tomllib

from topicrawl.parse.methods import ParserLibrary, config_from_mapping, extract, url_pattern
from topicrawl.storage import SqlStorage
from topicrawl.storage.parsers import SqlParserStore

from ..parse.methods.pages import SCHEMA_TOML, page

CONFIG = config_from_mapping(tomllib.loads(SCHEMA_TOML))
URL = "https://filmsite.com/film/{n}.html"


def _parse(library: ParserLibrary, template: str, numbers: range) -> None:
    for n in numbers:
        url = URL.format(n=n)
        hint = library.hint_for(url)
        assert hint is not None
        schema = CONFIG.by_name(hint.schema)
        assert schema is not None
        library.learn(extract(page(template), url, schema, hint), url)


async def test_two_libraries_share_methods_counts_changes_and_records(store_url: str) -> None:
    storage = SqlStorage(store_url)
    await storage.open()
    await storage.close()
    async with SqlParserStore(store_url) as one_store, SqlParserStore(store_url) as two_store:
        one = ParserLibrary(CONFIG, store=one_store)
        two = ParserLibrary(CONFIG, store=two_store)
        _parse(one, "v1", range(3))
        _parse(two, "v1", range(3, 5))  # learns the same method on its own
        await one.sync()
        await two.sync()
        pattern = url_pattern(URL.format(n=0))
        assert two.states()[pattern].pages == 5
        # The template changes; the first library heals and the second learns it at sync.
        _parse(one, "cosmetic", range(10, 12))
        await one.sync()
        await two.sync()
        hint = two.hint_for(URL.format(n=99))
        assert hint is not None
        assert hint.method == "relocate"
        assert set(hint.fingerprints) >= {"title", "plays"}
        (stored,) = await one_store.patterns()
        assert (stored.pattern, stored.successes, stored.pages) == (pattern, 7, 7)
        (change,) = await two_store.changes()
        assert (change.old_method, change.new_method) == ("rules", "relocate")
        assert change.failed_fields == ("title", "plays")
        assert change.sample_url == URL.format(n=10)
        records = await two_store.records()
        assert len(records) == 7
        assert records[URL.format(n=11)]["plays"] == 1_200_000
