"""What the demo servers share: ``async with`` and serving from a thread of their own."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from types import TracebackType
from typing import Self

from aiohttp import web as aioweb

__all__ = ["ThreadedServer", "serve_app"]


async def serve_app(app: aioweb.Application, host: str, port: int) -> tuple[aioweb.AppRunner, int]:
    """Start ``app`` on ``host``:``port`` (0: any free port); returns its runner (stop it with
    ``runner.cleanup()``) and the port bound.

    Raises:
        OSError: the address or port could not be bound (nothing is left running).
    """
    runner = aioweb.AppRunner(app, access_log=None, shutdown_timeout=0.25)
    await runner.setup()
    try:
        await aioweb.TCPSite(runner, host, port).start()
    except OSError:
        await runner.cleanup()
        raise
    return runner, int(runner.addresses[0][1])


class ThreadedServer:
    """A server with ``start``/``stop`` coroutines, usable as ``async with`` or in a thread."""

    thread_name = "demo-server"

    async def start(self) -> object:
        raise NotImplementedError

    async def stop(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    @contextlib.contextmanager
    def run_in_thread(self, *, timeout: float = 30.0) -> Iterator[Self]:
        """Serve from a background thread with its own event loop, for the block's duration.

        A crawler on the caller's loop then never shares a loop with the server.
        """
        loop = asyncio.new_event_loop()
        thread = threading.Thread(
            target=_run_loop, args=(loop,), name=self.thread_name, daemon=True
        )
        thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self.start(), loop).result(timeout)
            yield self
        finally:
            try:
                asyncio.run_coroutine_threadsafe(self.stop(), loop).result(timeout)
            finally:
                loop.call_soon_threadsafe(loop.stop)
                thread.join(timeout)


def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()
