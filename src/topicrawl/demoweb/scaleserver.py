"""Serves a :class:`ScaleWeb` fast: a bare asyncio HTTP/1.1 server, in one or many processes.

Every host listens on its own loopback address (one port for all); with ``processes > 1``
each process binds every address with ``SO_REUSEPORT`` and the kernel spreads connections
over them. The server parses only what it needs (the request line; keep-alive unless the
client says ``Connection: close``), so generating the page is most of its cost.

Counters live in shared memory (one slot per process): pages served, bytes, 404s, and
requests for paths the host's robots.txt disallows. ``GET /__stats`` on any host answers them
summed, as JSON; :meth:`ScaleServer.stats` reads them directly.

    python -m topicrawl.demoweb.scaleserver --hosts 1000 --port 8480 --processes 2
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import multiprocessing
import multiprocessing.sharedctypes
import os
import re
import signal
import socket
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any

from topicrawl.demoweb.scaleweb import MAX_PAGE, ScaleWeb

__all__ = ["ScaleServer", "ServerStats"]

_PAGE = re.compile(rb"^/(p|private)/(\d{1,13})\.html$")
_FIELDS = 4  # served, bytes, not_found, disallowed
_MAX_HEAD = 16_384
ServerStats = dict[str, int]


class _Http(asyncio.Protocol):
    """One connection: answers each complete request head in order."""

    def __init__(self, web: ScaleWeb, counters: Any, slot: int) -> None:
        self._web = web
        self._counters = counters
        self._slot = slot * _FIELDS
        self._buffer = b""
        self._transport: asyncio.Transport | None = None
        self._host = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        address = transport.get_extra_info("sockname")[0]
        self._host = self._web.host_index(address)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while (end := self._buffer.find(b"\r\n\r\n")) >= 0:
            head, self._buffer = self._buffer[:end], self._buffer[end + 4 :]
            self._answer(head)
        if len(self._buffer) > _MAX_HEAD and self._transport is not None:
            self._transport.close()

    def _answer(self, head: bytes) -> None:
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        line, _, rest = head.partition(b"\r\n")
        parts = line.split(b" ")
        lowered = rest.lower()
        # HTTP/1.0 closes unless it asks to keep alive; HTTP/1.1 keeps alive unless told.
        keep = b"connection: keep-alive" in lowered
        close = b"connection: close" in lowered or (parts[-1] == b"HTTP/1.0" and not keep)
        if len(parts) != 3 or parts[0] not in (b"GET", b"HEAD"):
            self._send(400, b"text/plain", b"bad request\n", close=True, head_only=False)
            return
        path = parts[1].split(b"?", 1)[0]
        status, kind, body = self._route(path)
        self._send(status, kind, body, close=close, head_only=parts[0] == b"HEAD", keep=keep)

    def _route(self, path: bytes) -> tuple[int, bytes, bytes]:
        counters, slot, web = self._counters, self._slot, self._web
        if path == b"/robots.txt":
            return 200, b"text/plain", web.robots_txt(self._host)
        if path == b"/__stats":
            return 200, b"application/json", json.dumps(_sum(counters)).encode()
        match = _PAGE.match(path)
        if match is None or int(match[2]) > MAX_PAGE:
            counters[slot + 2] += 1
            return 404, b"text/html", b"<!DOCTYPE html><title>404</title><h1>Not found</h1>"
        if web.disallowed(self._host, path.decode()):
            counters[slot + 3] += 1
        body = web.page(self._host, int(match[2])).body
        counters[slot] += 1
        counters[slot + 1] += len(body)
        return 200, b"text/html; charset=utf-8", body

    def _send(
        self,
        status: int,
        kind: bytes,
        body: bytes,
        *,
        close: bool,
        head_only: bool,
        keep: bool = False,
    ) -> None:
        assert self._transport is not None
        reason = {200: b"OK", 400: b"Bad Request", 404: b"Not Found"}[status]
        connection = b"Connection: close\r\n" if close else b""
        if keep and not close:
            connection = b"Connection: keep-alive\r\n"
        head = b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n%s\r\n" % (
            status,
            reason,
            kind,
            len(body),
            connection,
        )
        self._transport.write(head if head_only else head + body)
        if close:
            self._transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None


def _sum(counters: Any) -> ServerStats:
    totals = [0] * _FIELDS
    for i in range(len(counters)):
        totals[i % _FIELDS] += counters[i]
    return dict(zip(("served", "bytes", "not_found", "disallowed"), totals, strict=True))


def _sockets(web: ScaleWeb, port: int, *, reuse_port: bool) -> list[socket.socket]:
    out = []
    for host in range(web.hosts):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((web.address(host), port))
        sock.listen(1024)
        sock.setblocking(False)
        out.append(sock)
    return out


async def _serve(web: ScaleWeb, sockets: list[socket.socket], counters: Any, slot: int) -> None:
    loop = asyncio.get_running_loop()
    servers = [
        await loop.create_server(lambda: _Http(web, counters, slot), sock=sock) for sock in sockets
    ]
    stop = asyncio.Event()
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGTERM, stop.set)
    try:
        await stop.wait()
    finally:
        for server in servers:
            server.close()


def _worker(web: ScaleWeb, port: int, counters: Any, slot: int, nice: int) -> None:
    if nice:
        os.nice(nice)
    sockets = _sockets(web, port, reuse_port=True)
    asyncio.run(_serve(web, sockets, counters, slot))


class ScaleServer:
    """The scale web served by ``processes`` processes; a context manager.

    With ``port=0`` a free port is found first (bound on the first host's address and let
    go); ``web.port`` must then be 0 too and :attr:`web` is the same web on the chosen port.
    """

    def __init__(self, web: ScaleWeb, *, processes: int = 1, nice: int = 0) -> None:
        if not 1 <= processes <= 64:
            raise ValueError("processes must be 1..64")
        self.web = web
        self._processes = processes
        self._nice = nice
        self._counters = multiprocessing.get_context("fork").Array("q", processes * _FIELDS)
        self._children: list[multiprocessing.process.BaseProcess] = []

    @property
    def pids(self) -> list[int]:
        return [child.pid for child in self._children if child.pid is not None]

    def start(self) -> None:
        if self.web.port == 0:
            probe = socket.socket()
            probe.bind((self.web.address(0), 0))
            port = probe.getsockname()[1]
            probe.close()
            self.web = dataclasses.replace(self.web, port=port)
        context = multiprocessing.get_context("fork")
        for slot in range(self._processes):
            child = context.Process(
                target=_worker,
                args=(self.web, self.web.port, self._counters, slot, self._nice),
                name=f"scaleweb-{slot}",
                daemon=True,
            )
            child.start()
            self._children.append(child)
        self._wait_listening()

    def _wait_listening(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        last = (self.web.address(self.web.hosts - 1), self.web.port)
        while time.monotonic() < deadline:
            if any(not child.is_alive() for child in self._children):
                raise RuntimeError("a scale web process died at start (port taken?)")
            with contextlib.suppress(OSError), socket.create_connection(last, timeout=1):
                return
            time.sleep(0.05)
        raise TimeoutError("the scale web did not start listening")

    def stats(self) -> ServerStats:
        return _sum(self._counters)

    def stop(self) -> None:
        for child in self._children:
            if child.pid is not None and child.is_alive():
                os.kill(child.pid, signal.SIGTERM)
        for child in self._children:
            child.join(10)
            if child.is_alive():
                child.kill()
                child.join(5)
        self._children.clear()

    def __enter__(self) -> ScaleServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def serving(web: ScaleWeb, *, processes: int = 1, nice: int = 0) -> Iterator[ScaleServer]:
    """``with serving(web) as server:`` the web is up inside the block."""
    server = ScaleServer(web, processes=processes, nice=nice)
    with server:
        yield server


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m topicrawl.demoweb.scaleserver")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--base-address", default="127.1.0.1")
    parser.add_argument("--port", type=int, default=8480)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--seeds-file", help="write every host's home page URL here")
    args = parser.parse_args(argv)
    try:
        web = ScaleWeb(
            seed=args.seed, hosts=args.hosts, base_address=args.base_address, port=args.port
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.seeds_file:
        with open(args.seeds_file, "w", encoding="utf-8") as out:
            out.write("\n".join(web.seeds()) + "\n")
    with serving(web, processes=args.processes) as server:
        print(json.dumps({"hosts": web.hosts, "port": web.port, "pids": server.pids}), flush=True)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
