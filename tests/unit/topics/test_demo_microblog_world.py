"""The demo microblog's generated world: deterministic, trends as specified, truth consistent."""

from __future__ import annotations

import math
import re
from itertools import pairwise

import pytest

from topicrawl.core.errors import ConfigError
from topicrawl.demoweb.microblog import MicroblogWorld, MicroTopic, Trend
from topicrawl.topics.ahp import default_heat_weights, post_heat
from topicrawl.topics.discovery import clean_text


@pytest.fixture(scope="module")
def world() -> MicroblogWorld:
    return MicroblogWorld.generate(seed=3, periods=12)


def test_same_seed_same_world_other_seed_other_world(world: MicroblogWorld) -> None:
    again = MicroblogWorld.generate(seed=3, periods=12)
    assert again.posts == world.posts
    other = MicroblogWorld.generate(seed=4, periods=12)
    assert other.posts != world.posts


def test_topics_cover_both_languages_and_every_trend(world: MicroblogWorld) -> None:
    assert len(world.topics) >= 6
    assert {t.lang for t in world.topics} == {"en", "zh"}
    assert {t.trend for t in world.topics} >= {
        Trend.RISING,
        Trend.FADING,
        Trend.VOLATILE,
        Trend.EMERGING,
    }


def by_trend(world: MicroblogWorld, trend: Trend) -> MicroTopic:
    return next(t for t in world.topics if t.trend is trend)


def test_heat_follows_each_trend(world: MicroblogWorld) -> None:
    rising = world.heat_series(by_trend(world, Trend.RISING).id)
    fading = world.heat_series(by_trend(world, Trend.FADING).id)
    assert sum(rising[-3:]) > 3 * sum(rising[:3])
    assert sum(fading[:3]) > 3 * sum(fading[-3:])
    volatile = world.heat_series(by_trend(world, Trend.VOLATILE).id)
    changes = [abs(b - a) / a for a, b in pairwise(volatile)]
    assert max(changes) > 0.4  # it jumps by more than 40% at least once


def test_the_emerging_topic_has_no_post_before_its_start(world: MicroblogWorld) -> None:
    emerging = by_trend(world, Trend.EMERGING)
    periods = {p.period for p in world.posts if p.topic == emerging.id}
    assert min(periods) == emerging.start > 0
    assert periods == set(range(emerging.start, world.periods))
    assert world.true_heat(emerging.id, emerging.start - 1) is None


def test_true_heat_is_the_mean_ahp_heat_of_the_topics_posts(world: MicroblogWorld) -> None:
    topic = world.topics[0].id
    posts = [p for p in world.posts_of(5) if p.topic == topic]
    weights = default_heat_weights()
    expected = math.fsum(post_heat(p.engagement, weights) for p in posts) / len(posts)
    assert world.true_heat(topic, 5) == pytest.approx(expected)
    assert world.true_topic(posts[0].id) == topic
    assert world.true_topic(12345) is None


def test_posts_carry_microblog_noise_and_are_found_by_their_keyword(world: MicroblogWorld) -> None:
    posts = world.posts
    assert all(p.matches(world.topic(p.topic).keyword) for p in posts if p.topic is not None)
    assert any("@" in p.text for p in posts)
    assert any("http" in p.text and p.links for p in posts)
    assert any(p.lang == "zh" and re.match(r"#[^#\s]+#", p.text) for p in posts)  # Weibo tags
    assert any(p.topic is None for p in posts)  # chatter that mentions a keyword
    assert any("<script>" in p.text for p in posts)
    # Cleaning leaves the topic's own words: no mention, URL or hashtag survives.
    for p in posts[:50]:
        cleaned = clean_text(p.text)
        assert "@" not in cleaned
        assert "http" not in cleaned
        assert "#" not in cleaned


def test_ids_grow_with_time(world: MicroblogWorld) -> None:
    ordered = sorted(world.posts, key=lambda p: p.created_at)
    assert [p.id for p in ordered] == sorted(p.id for p in world.posts)


def test_links_point_to_the_given_targets_of_the_topic() -> None:
    targets = {"astronomy": ["http://127.0.0.2:1/astro.html"]}
    world = MicroblogWorld.generate(seed=1, periods=3, link_targets=targets)
    astro_links = {u for p in world.posts if p.topic == "astronomy_en" for u in p.links}
    assert astro_links == {"http://127.0.0.2:1/astro.html"}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"periods": 0},
        {"posts_per_topic": (5, 2)},
        {"topics": (MicroTopic("x", "nope", "en", "x", "x", Trend.STEADY),)},
        {"topics": (MicroTopic("x", "cooking", "fr", "x", "x", Trend.STEADY),)},
    ],
)
def test_bad_arguments_are_config_errors(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        MicroblogWorld.generate(**kwargs)  # type: ignore[arg-type]
