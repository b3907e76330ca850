"""``topicrawl parsers show`` and records in exports, on a SQLite crawl database."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import time
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from topicrawl.cli.app import app
from topicrawl.core.errors import ConfigError
from topicrawl.core.models import Page
from topicrawl.engine.parsers import open_parser_library
from topicrawl.parse.methods import ParserLibrary, config_from_mapping, extract
from topicrawl.parse.methods.library import StoredRecord
from topicrawl.storage import SqlStorage
from topicrawl.storage.parsers import SqlParserStore

from ..parse.methods.pages import SCHEMA_TOML, page

CONFIG = config_from_mapping(tomllib.loads(SCHEMA_TOML))
HALF = "https://filmsite.com/film/9.html"  # a page with a partial record only


async def _crawl_db(db: Path) -> None:
    storage = SqlStorage(str(db))
    await storage.open()
    run = await storage.start_run(name="t", config="{}")
    urls = [f"https://filmsite.com/film/{n}.html" for n in range(4)]
    for url in [*urls, "https://other.org/", HALF]:
        await storage.save_page(
            Page(
                url=url,
                final_url=url,
                status=200,
                depth=0,
                fetched_at=time.time(),
                content_type="text/html",
                title="=cmd",
            ),
            run_id=run,
        )
    await storage.close()
    async with SqlParserStore(str(db)) as store:
        library = ParserLibrary(CONFIG, store=store)
        for n, url in enumerate(urls):
            hint = library.hint_for(url)
            assert hint is not None
            template = "v1" if n < 2 else "cosmetic"
            library.learn(extract(page(template), url, CONFIG.schemas[0], hint), url)
        await library.sync()
        partial = StoredRecord(
            url=HALF, pattern="filmsite.com/film/{n}.html", schema=CONFIG.schemas[0].name,
            method="partial:rules", record={"title": "Half a film"}, extracted_at=time.time(),
            missing=("plays",),
        )  # fmt: skip
        await store.save([], [], [partial])


def test_show_lists_patterns_and_changes(tmp_path: Path) -> None:
    db = tmp_path / "crawl.db"
    asyncio.run(_crawl_db(db))
    runner = CliRunner()
    shown = runner.invoke(app, ["parsers", "show", "--db", str(db)])
    assert shown.exit_code == 0, shown.output
    assert "relocate" in shown.output
    assert "100.0%" in shown.output
    as_json = runner.invoke(app, ["parsers", "show", "--db", str(db), "--json"])
    data = json.loads(as_json.output)
    (pattern,) = data["patterns"]
    assert pattern["pattern"] == "filmsite.com/film/{n}.html"
    assert (pattern["method"], pattern["pages"], pattern["success_rate"]) == ("relocate", 4, 1.0)
    (change,) = data["changes"]
    assert change["failed_fields"] == ["title", "plays"]
    assert data["records"] == 4


def test_exports_carry_records(tmp_path: Path) -> None:
    db = tmp_path / "crawl.db"
    asyncio.run(_crawl_db(db))
    runner = CliRunner()
    jsonl = runner.invoke(app, ["export", "--db", str(db), "--format", "jsonl"])
    # The runner mixes the "exported N pages" line from stderr in.
    lines = [json.loads(line) for line in jsonl.output.splitlines() if line.startswith("{")]
    by_url = {line["url"]: line["record"] for line in lines}
    assert by_url["https://other.org/"] is None
    assert by_url["https://filmsite.com/film/3.html"]["plays"] == 1_200_000
    # A partial record is exported too, flagged by its method.
    method = {line["url"]: line["record_method"] for line in lines}
    assert by_url[HALF] == {"title": "Half a film"}
    assert method[HALF] == "partial:rules"
    assert not method["https://filmsite.com/film/3.html"].startswith("partial:")
    assert method["https://other.org/"] is None
    out = runner.invoke(app, ["export", "--db", str(db), "--format", "csv"])
    text = "\n".join(x for x in out.output.splitlines() if not x.startswith("exported"))
    rows = list(csv.DictReader(io.StringIO(text)))
    film = next(r for r in rows if r["url"].endswith("/3.html"))
    assert film["record.plays"] == "1200000"
    assert film["record.actors"] == "Rui Costa; Mei Chen; John Hart"
    assert film["title"] == "'=cmd"  # still escaped against formulas
    assert next(r for r in rows if r["url"] == "https://other.org/")["record.plays"] == ""
    half = next(r for r in rows if r["url"] == HALF)
    assert (half["record.title"], half["record.plays"]) == ("Half a film", "")
    assert half["record_method"] == "partial:rules"


def test_show_on_a_missing_database_is_a_clear_error(tmp_path: Path) -> None:
    shown = CliRunner().invoke(app, ["parsers", "show", "--db", str(tmp_path / "none.db")])
    assert shown.exit_code == 2
    assert "does not exist" in shown.output


async def test_a_bad_parsers_file_fails_the_crawl_set_up(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[[schemas]\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        async with open_parser_library(str(bad), str(tmp_path / "crawl.db")):
            pass
