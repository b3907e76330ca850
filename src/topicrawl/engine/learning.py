"""What a focused crawl learns, kept in its database: restored when a crawl (re)starts, saved
when it stops; and a person's labels, which then judge the adaptive threshold's samples."""

from __future__ import annotations

import logging

from topicrawl.core.errors import ConfigError
from topicrawl.core.protocols import Strategy
from topicrawl.focus import FocusedStrategy, HumanJudge, LearnedState
from topicrawl.storage.learned import FocusRecords

__all__ = ["restore_learning", "save_learning"]

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
