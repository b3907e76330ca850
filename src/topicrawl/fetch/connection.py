"""Keep-alive connections that carry exactly one response per request.

aiohttp keeps a pooled connection's protocol reading while the connection sits idle, and
its parser goes on parsing what arrives: a server that sends more than it announced (bytes
past its Content-Length, a whole second response) leaves a parsed response queued on the
idle connection, and the next request sent over it reads that queued response as its own
answer. The connector only checks, before reusing a connection, that its socket is open.
(aiohttp does close a connection that holds a queued response when it is released, so only
bytes arriving after the body ended and before the next request do harm; issue #26 saw a
page stored under another URL this way.)

:class:`GuardedResponseHandler` holds each connection to HTTP/1.1 without pipelining: bytes
may arrive only while a request awaits its response, and each request gets one final
response. Anything else (bytes on an idle connection, a second response) closes the
connection at once, so nothing the server sent unasked is ever read as an answer.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any

import aiohttp
from aiohttp.client_proto import ResponseHandler
from aiohttp.http import RawResponseMessage
from aiohttp.streams import StreamReader

__all__ = ["GuardedConnector", "GuardedResponseHandler"]

logger = logging.getLogger(__name__)


class GuardedResponseHandler(ResponseHandler):
    """aiohttp's connection protocol, closing the connection on bytes no request asked for.

    ``surplus`` counts the bytes (or responses) refused; once it is non-zero the connection
    is closed and never goes back to the pool.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop)
        self._awaiting = False  # a request was sent and its final response has not ended
        self._answered = False  # that request's final response (headers) has arrived
        self.surplus = 0

    def set_response_params(self, **kwargs: Any) -> None:
        # aiohttp calls this right before it sends each request on the connection.
        self._awaiting = True
        self._answered = False
        super().set_response_params(**kwargs)

    def data_received(self, data: bytes) -> None:
        # Before its first request a connection has no parser, and aiohttp keeps what arrives
        # for the first response (a proxy's answer to CONNECT can come before
        # set_response_params is called); after it, bytes need a request waiting for them.
        if data and not self._awaiting and self._parser is not None:
            self._refuse(f"{len(data)} bytes arrived with no request waiting for them")
            return
        super().data_received(data)

    def feed_data(self, data: tuple[RawResponseMessage, StreamReader], size: int = 0) -> None:
        message, payload = data
        if 100 <= message.code < 200 and message.code != 101:
            super().feed_data(data, size)  # an interim response: the final one follows
            return
        if self._answered or not self._awaiting:
            self._refuse(f"a second response ({message.code}) to one request")
            return
        self._answered = True
        payload.on_eof(self._response_ended)  # called at once for an empty or complete body
        super().feed_data(data, size)

    def _response_ended(self) -> None:
        self._awaiting = False

    def _refuse(self, why: str) -> None:
        self.surplus += 1
        self.force_close()
        transport = self.transport
        if transport is not None:
            peer = transport.get_extra_info("peername")
            logger.info("closing the connection to %s: %s", peer, why)
            transport.close()


class GuardedConnector(aiohttp.TCPConnector):
    """A TCP connector whose connections are :class:`GuardedResponseHandler` protocols.

    Takes the same keyword arguments as :class:`aiohttp.TCPConnector`.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # aiohttp has no public hook for the protocol class; _factory is what its
        # connectors call for each new connection (TLS and proxy tunnels included).
        self._factory = functools.partial(_guarded_protocol, loop=self._loop)


def _guarded_protocol(loop: asyncio.AbstractEventLoop) -> ResponseHandler:
    return GuardedResponseHandler(loop)
