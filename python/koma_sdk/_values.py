"""What the generated modules (`_surface.py`, `_types.py`) are made of: the
check that a value is an object, the base of the result classes (made from
the wire's JSON by their table of fields), the base of the event classes, and
the requests behind the generated protocol methods. It imports no module of
the package's: the errors (which name `TurnResult`) are above it, and the
client turns `NotAnObject` into the call's `protocol_error`."""

from __future__ import annotations

import os
from typing import Any, ClassVar, Literal, TypeVar

#: A generated class's fields, in order: the wire's name of each, and how its
#: value is made: as it is (`None`), a result class, or a list of one (`[C]`).
Fields = tuple[tuple[str, Any], ...]

W = TypeVar("W", bound="Wire")


class NotAnObject(Exception):
    """A result class cannot be made of this value: the call fails with
    `protocol_error` and this message."""


def obj(value: Any, what: str = "the result") -> Any:
    """`value` if it is a JSON object; else `NotAnObject` (a field koma left
    out is then `None`: nothing is made up)."""
    if not isinstance(value, dict):
        text = repr(value)
        raise NotAnObject(f"{what} is not a JSON object: {text[:200]}")
    return value


def _list_of(of: type[Wire]) -> Any:
    def convert(value: Any) -> Any:
        return [of._wire(v) for v in value] if isinstance(value, list) else value

    return convert


class Wire:
    """The base of the generated result classes (frozen, slotted dataclasses):
    `_wire` makes one from the JSON the core handed over, by the class's
    table of fields. Each class gets a `_wire` of its own, written from its
    table when the class is made (as `dataclass` writes `__init__`): a call's
    result is converted on every call."""

    __slots__ = ()
    _fields: ClassVar[Fields] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        scope: dict[str, Any] = {"obj": obj}
        args = []
        for i, (key, how) in enumerate(cls._fields):
            if how is None:
                args.append(f"get({key!r})")
            else:
                scope[f"convert_{i}"] = _list_of(how[0]) if isinstance(how, list) else how._wire
                args.append(f"convert_{i}(get({key!r}))")
        source = (
            "def _wire(cls, value):\n"
            "    get = (value if type(value) is dict else obj(value)).get\n"
            f"    return cls({', '.join(args)})\n"
        )
        exec(source, scope)  # the source is made from the generated table only
        cls._wire = classmethod(scope["_wire"])  # type: ignore[method-assign, assignment]

    @classmethod
    def _wire(cls: type[W], value: Any) -> W:
        """One made from the JSON the core handed over (each class has its own, see above)."""
        raise NotImplementedError


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


T = TypeVar("T", bound=Wire)


class Requests:
    """What the generated protocol methods (`_surface.Methods`) call: the
    params as given (an optional one left out when `None`, a path as its
    str), then `_call`, which the client implements (and which makes the
    value of `result`, if given, from the answer)."""

    async def _call(self, method: str, params: Any, timeout: Any, result: type[Wire] | None = None) -> Any:
        raise NotImplementedError

    async def _ask(self, method: str, result: type[T], params: Any, timeout: Any, **optional: Any) -> T:
        """A method that answers a value of `result`."""
        value: T = await self._call(method, _params(params, optional), timeout, result)
        return value

    async def _tell(self, method: str, params: Any, timeout: Any, **optional: Any) -> None:
        """A method that answers `{}`."""
        await self._call(method, _params(params, optional), timeout)


def _params(params: Any, optional: dict[str, Any]) -> Any:
    if params is None:
        return None
    for key, value in optional.items():
        if value is not None:
            params[key] = value
    for key, value in params.items():
        if isinstance(value, os.PathLike):
            params[key] = os.fspath(value)
    return params
