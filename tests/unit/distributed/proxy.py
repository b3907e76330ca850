"""A TCP proxy on loopback that a test can cut (refuse and drop connections) and restore."""

from __future__ import annotations

import asyncio
import contextlib


class CuttableProxy:
    """A TCP proxy on 127.0.0.1 to a service; :meth:`cut` drops it, :meth:`start` restores it
    on the same port."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        """Refuse new connections and drop the open ones."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for writer in list(self._writers):
            writer.close()
        self._writers.clear()
        if server is not None:
            await server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError, OSError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


class StallingProxy:
    """A TCP proxy to PostgreSQL whose open connections can be stalled: their bytes are no
    longer passed on either way, yet nothing is closed (no reset, no FIN), as in a network
    partition. Connections opened after a stall are passed on."""

    def __init__(self, port: int) -> None:
        self._port = port
        self._stalled: set[asyncio.Event] = set()
        self._live: set[asyncio.Event] = set()
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def stall(self) -> int:
        """Stall every open connection; returns how many."""
        stalled = len(self._live)
        for flag in self._live:
            flag.set()
        self._live.clear()
        return stalled

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in self._writers:
            writer.close()
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self._port)
        self._writers |= {writer, up_writer}
        stalled = asyncio.Event()
        self._live.add(stalled)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError, OSError):
                while data := await src.read(65536):
                    if stalled.is_set():
                        await asyncio.Event().wait()  # held, never passed on
                    dst.write(data)
                    await dst.drain()

        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
