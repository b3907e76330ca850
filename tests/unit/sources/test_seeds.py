"""Seed lists: comments, validation with line numbers, canonical dedupe, scope."""

from __future__ import annotations

import pytest

from topicrawl.core.errors import ConfigError
from topicrawl.parse.urls import Scope
from topicrawl.sources.seeds import SeedFileSource, parse_seeds, read_seed_file

GOOD = """\ufeff# news sites
http://a.test/

  https://B.test:443/path?utm_source=x   # same as the next line
https://b.test/path
\thttp://a.test/#top
http://c.test/page
"""


def test_comments_blanks_and_canonical_dedupe() -> None:
    seeds = parse_seeds(GOOD.splitlines())
    assert seeds.urls == ["http://a.test/", "https://b.test/path", "http://c.test/page"]
    assert seeds.duplicates == 2
    assert all(r.depth == 0 for r in seeds.requests)


def test_every_bad_line_is_listed_with_its_number() -> None:
    lines = [
        "http://a.test/",
        "example.com",
        "# fine",
        "ftp://a.test/file",
        "http://a.test/ trailing words",
        "http://",
        "http://a.test/" + "x" * 3000,
    ]
    with pytest.raises(ConfigError) as caught:
        parse_seeds(lines, source="seeds.txt")
    message = str(caught.value)
    assert message.startswith("5 invalid seed line(s):")
    for number in (2, 4, 5, 6, 7):
        assert f"seeds.txt:{number}: " in message
    assert "seeds.txt:1:" not in message
    assert "seeds.txt:3:" not in message
    assert "add http://" in message


def test_many_bad_lines_are_summarised() -> None:
    with pytest.raises(ConfigError, match=r"45 invalid .*\n(.*\n){20}\.\.\. and 25 more"):
        parse_seeds(["bad"] * 45)


def test_scope_leaves_seeds_out() -> None:
    seeds = parse_seeds(GOOD.splitlines(), scope=Scope.build(allowed_domains=["b.test"]))
    assert seeds.urls == ["https://b.test/path"]
    assert seeds.out_of_scope == 2


def test_read_seed_file(tmp_path) -> None:
    path = tmp_path / "seeds.txt"
    path.write_text(GOOD, encoding="utf-8")
    assert read_seed_file(path).urls == [
        "http://a.test/",
        "https://b.test/path",
        "http://c.test/page",
    ]
    with pytest.raises(ConfigError, match="cannot read"):
        read_seed_file(tmp_path / "missing.txt")
    with pytest.raises(ConfigError, match="over the 10 cap"):
        read_seed_file(path, max_bytes=10)
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"http://a.test/\nhttp://a.test/caf\xe9\n")
    with pytest.raises(ConfigError, match=r"latin.txt:2: not UTF-8"):
        read_seed_file(latin)


async def test_seed_file_source(tmp_path) -> None:
    path = tmp_path / "seeds.txt"
    path.write_text("http://a.test/x\nhttp://a.test/y\n")
    source = SeedFileSource(path)
    assert [r.url async for r in source.requests()] == ["http://a.test/x", "http://a.test/y"]
    path.write_text("oops\n")
    assert len(source.load().requests) == 2  # read once
    with pytest.raises(ConfigError, match=":1: "):
        SeedFileSource(path).load()
