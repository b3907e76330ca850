"""The topic-word table: identity across periods, new and retired topics, heat history."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from topicrawl.topics import (
    DiscoveredTopic,
    TopicDiscoverer,
    TopicWordTable,
    TrackedTopic,
    WordSimilarity,
    word_similarity,
)


def cluster(members: tuple[int, ...], **words: float) -> DiscoveredTopic:
    return DiscoveredTopic(words=MappingProxyType(words), members=members)


PYTHON = cluster((0, 1), python=0.4, release=0.3, error=0.2)
FLOOD = cluster((2, 3, 4), rain=0.3, flood=0.3, subway=0.2)


def test_word_similarity_by_hand() -> None:
    a = {"rain": 0.3, "flood": 0.3, "subway": 0.2}
    b = {"rain": 0.4, "flood": 0.2, "shelter": 0.2}
    # Jaccard: 2 shared of 4 words
    assert word_similarity(a, b, WordSimilarity.JACCARD) == pytest.approx(0.5)
    # cosine: (0.12 + 0.06) / (sqrt(0.22) * sqrt(0.24))
    assert word_similarity(a, b) == pytest.approx(0.18 / (0.22**0.5 * 0.24**0.5))
    assert word_similarity(a, {}) == 0.0
    assert word_similarity({"x": 0.0}, {"x": 0.0}) == 0.0


def test_topics_keep_their_identity_across_periods() -> None:
    table = TopicWordTable()
    first = table.update(1, [PYTHON, FLOOD])
    assert first.new_topics == (1, 2)
    assert first.continued == ()
    # Period 2: the flood story goes on with partly new words; football appears.
    flood_later = cluster((0, 1), rain=0.3, flood=0.25, shelter=0.2)
    football = cluster((2, 3), football=0.3, goal=0.3)
    second = table.update(2, [football, flood_later])
    assert second.continued == (2,)
    assert second.new_topics == (3,)
    assert second.assignments == {3: (0,), 2: (1,)}
    flood = table[2]
    assert (flood.first_seen, flood.last_seen) == (1, 2)
    # words blended half old, half new: rain 0.3, flood 0.275, subway 0.1, shelter 0.1
    assert dict(flood.words) == pytest.approx(
        {"rain": 0.3, "flood": 0.275, "subway": 0.1, "shelter": 0.1}
    )
    assert list(flood.words) == ["rain", "flood", "shelter", "subway"]
    assert table[1].last_seen == 1


def test_unseen_topics_retire_after_r_periods() -> None:
    table = TopicWordTable(retire_after=2)
    table.update(1, [PYTHON, FLOOD])
    assert table.update(2, [FLOOD]).retired == ()
    third = table.update(3, [FLOOD])
    assert third.retired == (1,)
    assert [t.topic_id for t in table.active] == [2]
    assert table[1].retired_at == 3
    assert not table[1].active
    # A retired topic is never matched again: the same words start a new topic.
    assert table.update(4, [PYTHON]).new_topics == (3,)


def test_two_clusters_of_one_topic_stay_one_topic() -> None:
    table = TopicWordTable()
    table.update(1, [FLOOD])
    half_a = cluster((0, 1, 2), rain=0.4, flood=0.2)
    half_b = cluster((3,), flood=0.4, subway=0.3)
    update = table.update(2, [half_a, half_b])
    assert update.assignments == {1: (0, 1)}
    assert update.new_topics == ()


def test_heat_history_per_topic() -> None:
    table = TopicWordTable(retire_after=3)
    heats = [10.0, 20.0, 1.0, 2.0, 3.0]
    first = table.update(1, [PYTHON, FLOOD], post_heats=heats)
    assert first.heats == {1: 15.0, 2: 2.0}  # means over each topic's posts
    table.update(2, [cluster((0,), rain=0.3, flood=0.3, subway=0.2)], post_heats=[8.0])
    assert table[2].heat_history == ((1, 2.0), (2, 8.0))
    assert table[1].heat_series == (15.0, 0.0)  # active but no posts this period
    table.record_heat(1, 2, 4.5)
    assert table[1].heat_series == (15.0, 4.5)


def test_matching_a_real_discovery_across_periods() -> None:
    discoverer = TopicDiscoverer(tokenizer=lambda text: text.lower().split())
    period_1 = [
        "rain flood subway closed",
        "flood rain city subway",
        "python release error messages",
        "python release startup",
    ]
    period_2 = [
        "subway flood rain shelters",
        "rain flood water subway",
        "football final goal trophy",
        "football goal final fans",
    ]
    table = TopicWordTable()
    table.update(1, discoverer.discover(period_1))
    flood_id = next(t.topic_id for t in table.active if "flood" in t.words)
    update = table.update(2, discoverer.discover(period_2))
    assert update.continued == (flood_id,)
    assert len(update.new_topics) == 1
    assert "football" in table[update.new_topics[0]].words


def test_jaccard_matching_threshold() -> None:
    table = TopicWordTable(similarity=WordSimilarity.JACCARD, match_threshold=0.5)
    table.update(1, [FLOOD])
    # 1 shared word of 5: Jaccard 0.2 < 0.5 -> a new topic
    assert table.update(2, [cluster((0, 1), rain=0.3, a=0.1, b=0.1, c=0.1)]).new_topics == (2,)


def test_periods_must_move_forward_and_heats_must_be_sane() -> None:
    table = TopicWordTable()
    table.update(5, [PYTHON])
    with pytest.raises(ValueError, match="not after"):
        table.update(5, [PYTHON])
    with pytest.raises(ValueError, match="only 2 heats"):
        table.update(6, [FLOOD], post_heats=[1.0, 2.0])
    with pytest.raises(ValueError, match="finite"):
        table.update(6, [PYTHON], post_heats=[1.0, float("nan")])
    with pytest.raises(ValueError, match="heat"):
        table.record_heat(1, 6, -1.0)


def test_table_restores_from_stored_topics() -> None:
    stored = TrackedTopic(
        topic_id=7,
        words=MappingProxyType({"rain": 0.3, "flood": 0.3}),
        first_seen=1,
        last_seen=4,
        heat_history=((3, 1.0), (4, 2.0)),
    )
    table = TopicWordTable(topics=[stored])
    assert table.last_period == 4
    assert 7 in table
    assert len(table) == 1
    update = table.update(5, [FLOOD, PYTHON])
    assert update.continued == (7,)
    assert update.new_topics == (8,)


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="match_threshold"):
        TopicWordTable(match_threshold=0)
    with pytest.raises(ValueError, match="word_memory"):
        TopicWordTable(word_memory=1.0)
