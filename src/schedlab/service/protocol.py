"""uvicorn's httptools protocol with each loop pass's writes sent in one ``write`` (one segment).

uvicorn writes a response's status line and headers, then its body, each at once: two system
calls and two loopback segments per answer, and the client woken twice (py-spy: a quarter of
the server's wall time at saturation was in these writes, benchmarks/bench_serve.py).
:class:`CoalescedHttp` gives the protocol a transport that gathers the writes made while the
loop runs its ready callbacks and writes them together right after (``call_soon``): the same
bytes in the same order, the answer sent in the same loop pass.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class CoalescingTransport:
    """A transport whose ``write`` is deferred to the end of the loop pass and joined; the rest
    is the wrapped transport's (``close`` sends what is pending first)."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._pending: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not self._pending:
            asyncio.get_running_loop().call_soon(self.flush)
        self._pending.append(data)

    def flush(self) -> None:
        data, self._pending = b"".join(self._pending), []
        if data and not self._transport.is_closing():  # (a client gone meanwhile gets nothing)
            self._transport.write(data)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class CoalescedHttp(HttpToolsProtocol):
    """uvicorn's ``--http httptools`` protocol over a :class:`CoalescingTransport`."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(CoalescingTransport(transport))  # type: ignore[arg-type]
