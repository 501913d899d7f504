"""uvicorn's protocol of ``schedlab serve`` sends a response in one write (issue 34 item 5): the
writes of one loop pass are joined, in order, and nothing is written to a closed connection."""

from __future__ import annotations

import asyncio

from schedlab.service.protocol import CoalescingTransport


class Recorded:
    """A transport stand-in: the writes it was given, and whether it was closed."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str) -> str:
        return f"info {name}"


def test_the_writes_of_one_loop_pass_go_out_in_one_write_in_order():
    async def scenario() -> list[bytes]:
        wire = Recorded()
        transport = CoalescingTransport(wire)  # type: ignore[arg-type]
        transport.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
        transport.write(b"{}")
        assert wire.writes == []  # not before the loop has run what is ready
        await asyncio.sleep(0)
        transport.write(b"next")
        await asyncio.sleep(0)
        assert transport.get_extra_info("peername") == "info peername"  # the rest is the wire's
        return wire.writes

    assert asyncio.run(scenario()) == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}", b"next"]


def test_close_sends_what_is_pending_first_and_a_closed_connection_gets_nothing():
    async def scenario() -> tuple[list[bytes], list[bytes]]:
        closing, gone = Recorded(), Recorded()
        first = CoalescingTransport(closing)  # type: ignore[arg-type]
        first.write(b"last answer")
        first.close()
        second = CoalescingTransport(gone)  # type: ignore[arg-type]
        second.write(b"too late")
        gone.closed = True  # the client left before the loop pass ended
        await asyncio.sleep(0)
        assert closing.closed
        return closing.writes, gone.writes

    assert asyncio.run(scenario()) == ([b"last answer"], [])
