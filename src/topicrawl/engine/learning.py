"""What a focused crawl learns, kept in its database: restored when a crawl (re)starts, saved
while it runs (when it changed, at most every ``interval`` seconds) and when it stops; and a
person's labels, which then judge the adaptive threshold's samples."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from topicrawl.core.errors import ConfigError
from topicrawl.core.protocols import Strategy
from topicrawl.focus import FocusedStrategy, HumanJudge, LearnedState
from topicrawl.storage.learned import FocusRecords

__all__ = ["LearningCheckpoints", "restore_learning", "save_learning"]

log = logging.getLogger(__name__)


async def restore_learning(strategy: Strategy, storage_url: str) -> None:
    """Give a focused strategy its saved state and a human judge over the stored labels.

    A state saved for other topics is not restored (logged): the crawl starts afresh.
    """
    if not isinstance(strategy, FocusedStrategy):
        return
    async with FocusRecords(storage_url) as records:
        saved = await records.latest_state()
        judgements = await records.judgements()
    if saved is not None:
        try:
            strategy.restore(LearnedState.from_json(saved.state))
        except ConfigError as exc:
            log.warning("not continuing the saved topic vectors and threshold: %s", exc)
    if judgements:
        strategy.judge = HumanJudge(judgements, fallback=strategy.judge)


async def save_learning(strategy: Strategy, storage_url: str, *, run_id: int | None) -> None:
    """Append a focused strategy's learned state to the database."""
    if not isinstance(strategy, FocusedStrategy):
        return
    state = strategy.learned_state()
    async with FocusRecords(storage_url) as records:
        await records.save_state(state.to_json(), pages=state.pages, run_id=run_id)


def _learned_key(state: LearnedState) -> tuple[object, ...]:
    """What identifies a state's learning (not its page count, which moves every page)."""
    return (
        state.thresholds,
        state.precisions,
        tuple(len(topic.snapshots) for topic in state.topics),
        0 if state.learner is None else state.learner.updates,
        state.promoted,
    )


class LearningCheckpoints:
    """Saves a focused strategy's learned state during a crawl, so a crash (kill -9) loses at
    most ``interval`` seconds of learning: called after each crawl checkpoint, it appends the
    state when the topic vectors or the threshold changed since the last save.
    """

    def __init__(
        self,
        strategy: Strategy,
        storage_url: str,
        *,
        run_id: int | None,
        interval: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._strategy = strategy if isinstance(strategy, FocusedStrategy) else None
        self._url = storage_url
        self._run_id = run_id
        self._interval = interval
        self._clock = clock
        self._last = clock()
        self._saved: tuple[object, ...] | None = None
        if self._strategy is not None:
            self._saved = _learned_key(self._strategy.learned_state())

    async def __call__(self) -> None:
        """Save the state if it changed and ``interval`` has passed since the last save."""
        if self._strategy is None or self._clock() - self._last < self._interval:
            return
        state = self._strategy.learned_state()
        key = _learned_key(state)
        if key == self._saved:
            return
        async with FocusRecords(self._url) as records:
            await records.save_state(state.to_json(), pages=state.pages, run_id=self._run_id)
        self._saved = key
        self._last = self._clock()
