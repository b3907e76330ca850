"""The task dump a stuck crawl writes on SIGUSR1."""

from __future__ import annotations

import asyncio
import io

from topicrawl.cli.common import dump_tasks


async def test_the_dump_names_each_task_and_where_it_waits() -> None:
    gate = asyncio.Event()

    async def waiting_for_the_gate() -> None:
        await gate.wait()

    task = asyncio.create_task(waiting_for_the_gate(), name="gatekeeper")
    await asyncio.sleep(0)
    stream = io.StringIO()
    dump_tasks(asyncio.get_running_loop(), stream)
    gate.set()
    await task
    text = stream.getvalue()
    assert "gatekeeper" in text
    assert "waiting_for_the_gate" in text
    assert "await gate.wait()" in text
    assert text.rstrip().endswith("--- end of tasks ---")
