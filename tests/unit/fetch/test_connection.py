"""GuardedResponseHandler: one final response per request, no bytes on an idle connection."""

from __future__ import annotations

import asyncio
from typing import Any

from topicrawl.fetch.connection import GuardedResponseHandler


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.closed = False

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 80) if name == "peername" else default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def _response(body: bytes, status: int = 200) -> bytes:
    return b"HTTP/1.1 %d X\r\nContent-Length: %d\r\n\r\n%s" % (status, len(body), body)


async def _handler() -> tuple[GuardedResponseHandler, FakeTransport]:
    handler = GuardedResponseHandler(asyncio.get_running_loop())
    transport = FakeTransport()
    handler.connection_made(transport)
    return handler, transport


async def test_one_response_per_request_keeps_the_connection() -> None:
    handler, transport = await _handler()
    for _ in range(3):
        handler.set_response_params()
        handler.data_received(_response(b"hello"))
        message, payload = await handler.read()
        assert (message.code, await payload.read()) == (200, b"hello")
    assert handler.surplus == 0
    assert not transport.closed
    assert not handler.should_close


async def test_bytes_on_the_idle_connection_close_it() -> None:
    handler, transport = await _handler()
    handler.set_response_params()
    handler.data_received(_response(b"page"))
    await handler.read()
    handler.data_received(_response(b"smuggled"))  # nobody asked: the response is over
    assert handler.surplus == 1
    assert transport.closed
    assert handler.should_close
    assert len(handler) == 0  # nothing queued for the next request to read


async def test_a_second_response_to_one_request_closes_the_connection() -> None:
    handler, transport = await _handler()
    handler.set_response_params()
    handler.data_received(_response(b"page") + _response(b"smuggled"))
    _, payload = await handler.read()
    assert await payload.read() == b"page"
    assert handler.surplus == 1
    assert transport.closed
    assert len(handler) == 0


async def test_interim_responses_come_before_the_final_one() -> None:
    handler, transport = await _handler()
    handler.set_response_params()
    handler.data_received(b"HTTP/1.1 100 Continue\r\n\r\n" + _response(b"page"))
    assert (await handler.read())[0].code == 100
    assert (await handler.read())[0].code == 200
    assert handler.surplus == 0
    assert not transport.closed


async def test_bytes_before_the_first_request_wait_for_it() -> None:
    """aiohttp sends a proxy's CONNECT before it sets up the response parser."""
    handler, transport = await _handler()
    handler.data_received(_response(b"", status=200))
    handler.set_response_params()
    assert (await asyncio.wait_for(handler.read(), 5))[0].code == 200
    assert handler.surplus == 0
    assert not transport.closed
