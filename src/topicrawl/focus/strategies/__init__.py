"""The crawl strategies (bfs, best-first, shark, focused) and the registry that builds them.

Each is pure: it sees pages and returns scored requests, with no I/O and no event loop.
``base`` holds what they share and the three simple ones; the focused strategy is split by
concern over ``focused`` (construction, state, ``on_page``), ``focused_links`` (link
evidence), ``focused_learning`` (threshold, topic update, link learner) and
``focused_parts`` (its attributes and shared methods).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from topicrawl.core.errors import ConfigError
from topicrawl.core.protocols import Strategy
from topicrawl.focus.options import FocusedOptions, SharkOptions, StrategyOptions, build_options
from topicrawl.focus.relevance import TopicProfile, parse_topic
from topicrawl.focus.strategies.base import (
    BestFirstStrategy,
    BfsStrategy,
    SharkStrategy,
)
from topicrawl.focus.strategies.focused import FocusedStrategy

__all__ = [
    "STRATEGY_NAMES",
    "BestFirstStrategy",
    "BfsStrategy",
    "FocusedStrategy",
    "SharkStrategy",
    "make_strategy",
]


_Factory = Callable[[Sequence[TopicProfile], Mapping[str, object]], Strategy]


def _bfs(topics: Sequence[TopicProfile], options: Mapping[str, object]) -> Strategy:
    return BfsStrategy(topics=topics, options=build_options(StrategyOptions, options))


def _best_first(topics: Sequence[TopicProfile], options: Mapping[str, object]) -> Strategy:
    return BestFirstStrategy(topics=topics, options=build_options(StrategyOptions, options))


def _shark(topics: Sequence[TopicProfile], options: Mapping[str, object]) -> Strategy:
    return SharkStrategy(topics=topics, options=build_options(SharkOptions, options))


def _focused(topics: Sequence[TopicProfile], options: Mapping[str, object]) -> Strategy:
    return FocusedStrategy(topics=topics, options=build_options(FocusedOptions, options))


_REGISTRY: dict[str, _Factory] = {
    "bfs": _bfs,
    "best-first": _best_first,
    "shark": _shark,
    "focused": _focused,
}
STRATEGY_NAMES: tuple[str, ...] = tuple(_REGISTRY)


def make_strategy(
    name: str, *, topics: Sequence[str | TopicProfile], **options: object
) -> Strategy:
    """Build the strategy called ``name`` for ``topics`` (strings as :func:`parse_topic` reads
    them, or profiles), with its keyword options.

    Raises:
        ConfigError: the name is unknown, a scoring strategy has no topics, a topic has no
            keywords, or an option is unknown or invalid.
    """
    key = name.strip().lower().replace("_", "-")
    factory = _REGISTRY.get(key)
    if factory is None:
        raise ConfigError(f"unknown strategy {name!r}; choose one of: {', '.join(STRATEGY_NAMES)}")
    profiles = [t if isinstance(t, TopicProfile) else parse_topic(t) for t in topics]
    if not profiles and key != "bfs":
        raise ConfigError(f"strategy {key!r} needs at least one topic")
    return factory(profiles, options)
