"""A background task whose code swallows a cancellation still ends when its owner stops it
(a worker once waited for ever on its live sampler that way)."""

from __future__ import annotations

import asyncio

import pytest

from topicrawl.core.tasks import cancel_and_wait


async def _swallows_one_cancellation(ended: list[str]) -> None:
    swallowed = False
    while True:
        try:
            await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            if swallowed:
                ended.append("cancelled")
                raise
            swallowed = True  # as Python 3.11's wait_for can when its call ends as it is cancelled


async def test_a_task_that_swallows_a_cancellation_is_cancelled_again() -> None:
    ended: list[str] = []
    task = asyncio.create_task(_swallows_one_cancellation(ended))
    await asyncio.sleep(0.02)
    await asyncio.wait_for(cancel_and_wait(task, every=0.05), timeout=30)
    assert task.cancelled()
    assert ended == ["cancelled"]


async def test_a_plain_cancel_and_await_would_wait_for_ever() -> None:
    # The check above is needed: one cancel and an await do not end such a task.
    task = asyncio.create_task(_swallows_one_cancellation([]))
    await asyncio.sleep(0.02)
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=0.3)
    assert not done
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_an_error_the_task_ended_with_is_raised() -> None:
    async def fails() -> None:
        raise RuntimeError("boom")

    task = asyncio.create_task(fails())
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="boom"):
        await cancel_and_wait(task)
