"""Ending background tasks for sure."""

from __future__ import annotations

import asyncio

__all__ = ["cancel_and_wait"]


async def cancel_and_wait(task: asyncio.Task[object], *, every: float = 1.0) -> None:
    """Cancel ``task`` and wait until it has ended; an error it ended with is raised.

    The cancellation is repeated every ``every`` seconds while the task goes on: code it awaits
    can swallow one (Python 3.11's ``asyncio.wait_for`` returns normally when its inner call
    finishes as the cancellation lands), and a single ``cancel(); await task`` then waits for
    ever. A worker was seen waiting so on its live sampler after its crawl had ended, its loop
    idle and the sampler's task marked cancelling.
    """
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=every)
    if not task.cancelled():
        task.result()
