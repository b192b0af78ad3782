"""What a client hands its Turns: the native connection, the client's loop,
its calls in flight, where each turn's updates go, and its telemetry. A
Turn talks to its client through this object alone (never through
`Client`'s attributes), and the client uses it for its own calls too."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._backend import Backend, Future
from ._native import NativeClient, TurnApproval, TurnEnded, TurnId, TurnReady
from ._telemetry import Telemetry

#: What the core says of a turn, a class per kind (the core's `TurnUpdate`).
TurnUpdate = TurnId | TurnApproval | TurnReady | TurnEnded


class Link:
    """A client's connection as its parts share it. It holds nothing that
    refers back to the client: `bind` reaches the client through a weak
    reference, so a client let go of is collected at once."""

    __slots__ = ("native", "bind", "telemetry", "calls", "turns")

    def __init__(self, native: NativeClient, bind: Callable[[], Backend], telemetry: Telemetry | None) -> None:
        self.native = native
        #: The running loop's backend, to which the client is bound from now on (`Client._bind`).
        self.bind = bind
        #: OpenTelemetry's spans and metrics of the client, when it is traced.
        self.telemetry = telemetry
        #: The calls waiting for their answers, by token.
        self.calls: dict[int, Future] = {}
        #: Where each turn not over yet takes its updates, by key.
        self.turns: dict[int, Callable[[TurnUpdate], None]] = {}

    async def wait_for(self, token: int, backend: Backend) -> Any:
        """The answer to call `token`, written already (`backend`: the loop
        bound before it was written). Cancelled, its late answer is ignored."""
        fut = backend.future()
        self.calls[token] = fut
        try:
            return await fut
        except BaseException:
            if self.calls.pop(token, None) is not None:
                self.native.abandon(token)
            raise

    def update(self, updates: list[tuple[int, TurnUpdate]]) -> None:
        """Hand each update of one wake to its turn (the last, `TurnEnded`, lets it go)."""
        turns = self.turns
        for key, update in updates:
            take = turns.pop(key, None) if type(update) is TurnEnded else turns.get(key)
            if take is not None:
                take(update)
