"""What the generated values of `_surface.py` are made of: the check that a
result is an object, and the base of the event classes."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from ._errors import KomaError


def obj(value: Any, what: str = "the result") -> Any:
    """`value` if it is a JSON object; else `protocol_error` for that call (a
    field koma left out is then `None`: nothing is made up)."""
    if not isinstance(value, dict):
        text = repr(value)
        raise KomaError("protocol_error", f"{what} is not a JSON object: {text[:200]}")
    return value


class EventBase:
    """An event of the catalog: `seq`, `name` and the wire's `data` (a dict)."""

    __slots__ = ("seq", "data")
    type: ClassVar[Literal["event"]] = "event"
    name: ClassVar[str]

    def __init__(self, seq: int, data: Any) -> None:
        self.seq = seq
        self.data = data

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, EventBase)
            and type(other) is type(self)
            and self.seq == other.seq
            and self.data == other.data
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(seq={self.seq!r}, data={self.data!r})"
