"""The knowledge-graph tables (migration 7) on SQLite and a real PostgreSQL (a fresh schema)."""

from __future__ import annotations

import pytest

from topicrawl.core.errors import ConfigError
from topicrawl.core.models import EntityMention, PageEntities, RelationMention
from topicrawl.kg.kbfile import parse_kb
from topicrawl.kg.model import FOUND, LOADED
from topicrawl.kg.store import KgStore, PageFinding

KB = """\
{"id": "nolan", "name": "Christopher Nolan", "type": "person", \
"aliases": ["Nolan", {"alias": "诺兰", "prior": 0.9}], "description": "film director"}
{"id": "inception", "name": "Inception", "type": "work", "aliases": ["盗梦空间"]}
{"subject": "inception", "relation": "directed_by", "object": "nolan", "confidence": 0.95}
"""


@pytest.fixture
def kg_url(store_url: str) -> str:
    return store_url


async def test_a_loaded_kb_reads_back_whole(kg_url: str) -> None:
    async with KgStore(kg_url) as store:
        counts = await store.load(parse_kb(KB, fmt="jsonl"))
        kb = await store.read()
    assert (counts.entities, counts.relations) == (2, 1)
    nolan = kb.get("nolan")
    assert nolan is not None
    assert nolan.origin == LOADED
    assert nolan.description == "film director"
    assert {(a.text, a.prior) for a in nolan.aliases} == {
        ("Christopher Nolan", 1.0),
        ("Nolan", 1.0),
        ("诺兰", 0.9),
    }
    assert [(r.subject, r.type, r.object, r.confidence) for r in kb.relations] == [
        ("inception", "directed_by", "nolan", 0.95)
    ]
    assert kb.neighbours("nolan") == {"inception"}


async def test_loading_again_replaces_by_key_without_duplicates(kg_url: str) -> None:
    async with KgStore(kg_url) as store:
        await store.load(parse_kb(KB, fmt="jsonl"))
        again = KB.replace('"film director"', '"British film director"').replace('"Nolan", ', "")
        await store.load(parse_kb(again, fmt="jsonl"))
        kb = await store.read()
    assert len(kb.entities) == 2
    assert len(kb.relations) == 1
    nolan = kb.get("nolan")
    assert nolan is not None
    assert nolan.description == "British film director"
    assert "Nolan" not in {a.text for a in nolan.aliases}


async def test_recorded_pages_index_entities_relations_and_found_ones(kg_url: str) -> None:
    finding = PageEntities(
        mentions=(
            EntityMention("nolan", "Nolan", "person", 0, 5, 0.9),
            EntityMention("nolan", "诺兰", "person", 10, 12, 0.7),
            EntityMention("found:person:kip thorne", "Kip Thorne", "person", 20, 30, 0.0),
        ),
        relations=(
            RelationMention("inception", "directed_by", "nolan", 0.6, "Inception 的导演是诺兰"),
        ),
    )
    async with KgStore(kg_url) as store:
        kb = parse_kb(KB, fmt="jsonl")
        await store.load(kb)
        await store.record([PageFinding("http://a.test/1", finding, 1.0)], kb)
        # The same page again (re-fetched) replaces its rows; another page adds its own.
        await store.record(
            [
                PageFinding("http://a.test/1", finding, 2.0),
                PageFinding("http://a.test/2", finding, 2.0),
            ],
            kb,
        )
        read = await store.read()
        async with store.engine.connect() as connection:
            from sqlalchemy import select  # noqa: PLC0415

            from topicrawl.storage.schema import kg_entity_urls, kg_relation_urls  # noqa: PLC0415

            urls = (await connection.execute(select(kg_entity_urls))).all()
            relation_urls = (await connection.execute(select(kg_relation_urls))).all()
    found = read.get("found:person:kip thorne")
    assert found is not None
    assert found.origin == FOUND
    assert found.name == "Kip Thorne"
    nolan_rows = [row for row in urls if row.url == "http://a.test/1" and row.mentions == 2]
    assert len(nolan_rows) == 1
    assert nolan_rows[0].score == pytest.approx(0.9)
    assert len(urls) == 4  # (nolan, kip) x 2 pages
    assert len(read.relations) == 1  # the loaded relation, confirmed, not duplicated
    assert read.relations[0].confidence == pytest.approx(0.95)  # the larger one kept
    assert sorted(row.url for row in relation_urls) == ["http://a.test/1", "http://a.test/2"]


async def test_nothing_of_a_failed_load_is_kept(kg_url: str) -> None:
    async with KgStore(kg_url) as store:
        kb = parse_kb(KB, fmt="jsonl")
        broken = type(kb)(entities=kb.entities, relations=(*kb.relations,))
        object.__setattr__(
            broken, "relations", (*kb.relations, type(kb.relations[0])("nolan", "x", "nowhere"))
        )
        with pytest.raises(ConfigError, match="nowhere"):
            await store.load(broken)
        assert await store.keys() == set()
