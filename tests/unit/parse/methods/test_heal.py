"""The learn-and-heal loop on hand-made pages across template changes."""

from __future__ import annotations

import tomllib

from topicrawl.parse.methods import (
    MemoryLibraryStore,
    ParserLibrary,
    config_from_mapping,
    extract,
    url_pattern,
)

from .pages import FILM, SCHEMA_TOML, page

CONFIG = config_from_mapping(tomllib.loads(SCHEMA_TOML))
URL = "https://www.filmsite.com/film/{n}.html"


def _crawl(library: ParserLibrary, template: str, first: int, count: int) -> list[object]:
    outcomes = []
    for n in range(first, first + count):
        url = URL.format(n=n)
        hint = library.hint_for(url)
        assert hint is not None
        schema = CONFIG.by_name(hint.schema)
        assert schema is not None
        outcome = extract(page(template), url, schema, hint)
        library.learn(outcome, url)
        outcomes.append(outcome)
    return outcomes


def test_a_page_matching_no_schema_gets_no_hint() -> None:
    library = ParserLibrary(CONFIG)
    assert library.hint_for("https://docs.example.org/film/1.html") is None
    assert library.hint_for("https://filmsite.com/about") is None


def test_url_patterns_generalise_ids() -> None:
    assert url_pattern("https://www.filmsite.com/film/12.html?x=1") == "filmsite.com/film/{n}.html"
    assert url_pattern("https://filmsite.com/v/ab12cd34ef") == "filmsite.com/v/{id}"


def test_first_valid_method_is_remembered_then_used_alone() -> None:
    library = ParserLibrary(CONFIG)
    first, *rest = _crawl(library, "v1", 1, 5)
    assert first.method == "rules"
    assert first.record is not None
    assert first.record["plays"] == 1_200_000
    assert first.record["actors"] == FILM["actors"]
    assert all(o.method == "rules" and len(o.attempts) == 1 for o in rest)
    state = library.states()[url_pattern(URL.format(n=1))]
    assert state.method == "rules"
    assert state.successes == 5
    assert set(state.fingerprints) >= {"title", "plays", "actors"}


def test_a_cosmetic_change_heals_by_relocation_and_is_logged() -> None:
    library = ParserLibrary(CONFIG)
    _crawl(library, "v1", 1, 3)
    healed = _crawl(library, "cosmetic", 10, 3)
    assert healed[0].method == "relocate"
    assert healed[0].failed_fields == ("title", "plays")
    assert healed[0].record is not None
    assert healed[0].record["title"] == FILM["title"]
    assert healed[0].record["plays"] == 1_200_000
    assert healed[0].record["actors"] == FILM["actors"]
    # From then on relocation is the pattern's method: one method tried per page.
    assert [len(o.attempts) for o in healed[1:]] == [1, 1]
    (change,) = library.changes_seen
    assert (change.old_method, change.new_method) == ("rules", "relocate")
    assert change.sample_url == URL.format(n=10)
    assert change.failed_fields == ("title", "plays")


def test_data_moved_into_json_ld_heals_to_structured_data() -> None:
    library = ParserLibrary(CONFIG)
    _crawl(library, "v1", 1, 3)
    (moved, after) = _crawl(library, "jsonld", 20, 2)
    assert moved.method == "structured"
    assert moved.record is not None
    assert moved.record["plays"] == FILM["plays"]
    assert moved.record["director"] == [FILM["director"]]
    assert after.attempts[0].method == "structured"
    assert len(after.attempts) == 1
    assert [c.new_method for c in library.changes_seen] == ["structured"]


def test_a_page_no_method_parses_counts_as_a_failure_and_keeps_the_method() -> None:
    library = ParserLibrary(CONFIG)
    _crawl(library, "v1", 1, 2)
    url = URL.format(n=99)
    hint = library.hint_for(url)
    assert hint is not None
    schema = CONFIG.by_name("film")
    assert schema is not None
    outcome = extract("<html><body><p>gone</p></body></html>", url, schema, hint)
    library.learn(outcome, url)
    assert outcome.method is None
    assert outcome.record is None
    state = library.states()[url_pattern(url)]
    assert (state.method, state.failures) == ("rules", 1)
    assert not library.changes_seen


async def test_sync_shares_what_one_library_learnt_with_another() -> None:
    store = MemoryLibraryStore()
    one, two = ParserLibrary(CONFIG, store=store), ParserLibrary(CONFIG, store=store)
    _crawl(one, "v1", 1, 3)
    await one.sync()
    await two.sync()
    hint = two.hint_for(URL.format(n=50))
    assert hint is not None
    assert hint.method == "rules"
    assert "plays" in hint.fingerprints
    assert len(store.records) == 3


def test_a_page_kind_first_met_after_a_change_borrows_the_sites_fingerprints() -> None:
    # Session 20: the demo video site's detail pages are learnt under v1; its play pages are
    # first met after the structural change, so their v1 rules never matched and their own
    # patterns learnt nothing. Relocation by the same-named fields' fingerprints from the
    # detail pages gives them records; every field given is right.
    from pathlib import Path  # noqa: PLC0415

    from topicrawl.demoweb.video import build_video_site  # noqa: PLC0415
    from topicrawl.parse.methods import load_config  # noqa: PLC0415

    config = load_config(Path(__file__).parents[4] / "benchmarks" / "parsers" / "video.toml")
    site = build_video_site(seed=0, titles=12, hard=False)
    library = ParserLibrary(config)

    def read(path: str, version: str) -> object:
        url = "https://video.example.com" + path
        hint = library.hint_for(url)
        assert hint is not None
        schema = config.by_name(hint.schema)
        assert schema is not None
        outcome = extract(site.render(path, version)[2].decode(), url, schema, hint)
        library.learn(outcome, url)
        return outcome

    for path in (p for p in site.paths() if p.startswith("/title/")):
        assert read(path, "v1").method == "rules"  # type: ignore[attr-defined]
    plays = [p for p in site.paths() if p.startswith("/play/")]
    got = 0
    for path in plays:
        outcome = read(path, "structural")
        record = outcome.record  # type: ignore[attr-defined]
        if record is None:
            continue
        got += 1
        truth = site.truth(path).fields
        assert {k: str(v) for k, v in record.items()} == {k: str(truth[k]) for k in record}, path
    assert got >= 0.75 * len(plays), (got, len(plays))
