"""The one error type of the package: `KomaError`, with a `code` from the
table of docs/protocol.md (Error codes)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from ._codes import ErrorCode

if TYPE_CHECKING:
    from ._types import TurnResult


class RemoteError:
    """The server's `error` object of a failed response."""

    __slots__ = ("code", "message", "data")

    def __init__(self, code: str, message: str, data: Any = None) -> None:
        self.code: Final = code
        self.message: Final = message
        #: The `data` member, as JSON values (`None` when absent).
        self.data: Final = data

    def __repr__(self) -> str:
        return f"RemoteError(code={self.code!r}, message={self.message!r}, data={self.data!r})"

    def __reduce__(self) -> Any:
        # Pickled whole under every protocol (slots alone need protocol 2).
        return (RemoteError, (self.code, self.message, self.data))


class KomaError(Exception):
    """Every error the package raises. `code` says what happened (see the
    README's table); `remote` is the server's error for code `remote`;
    `result` is what a turn had come to, on every error of `Turn.result()`
    and `Client.run()`. One with code `timeout` is also a `TimeoutError`, so
    one `except TimeoutError` takes the package's deadlines and asyncio's."""

    def __new__(cls, *args: Any, **kwargs: Any) -> KomaError:
        # The code picks the class; __init__ checks the arguments. A subclass
        # that a library makes may pass others: Ray raises a failed task's
        # error as RayTaskError(KomaError), made from the error alone, which
        # `except KomaError` then takes (docs/scale.md, "Beyond one machine").
        if cls is KomaError and (args[0] if args else kwargs.get("code")) == "timeout":
            cls = _KomaTimeoutError
        self: KomaError = super().__new__(cls)
        return self

    def __init__(self, code: ErrorCode, message: str, remote: RemoteError | None = None) -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.message: str = message
        self.remote: RemoteError | None = remote
        self.result: TurnResult | None = None

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def __repr__(self) -> str:
        return f"KomaError(code={self.code!r}, message={self.message!r})"

    def __reduce__(self) -> Any:
        # Remade through KomaError (which picks the class of the code), with
        # every attribute: the result, and notes added on the way (pickling an
        # exception keeps only its args otherwise). A worker's errors reach a
        # driver whole this way (docs/scale.md, "Beyond one machine").
        return (KomaError, (self.code, self.message, self.remote), dict(self.__dict__))


class _KomaTimeoutError(KomaError, TimeoutError):
    """A `KomaError` with code `timeout` (made by `KomaError` itself)."""


def _from_native(code: ErrorCode, message: str, remote: tuple[str, str, str | None] | None) -> KomaError:
    """What the native module raises and reports: `remote` is the server's
    `(code, message, data JSON text or None)`."""
    if remote is None:
        return KomaError(code, message)
    rcode, rmessage, data = remote
    return KomaError(code, message, RemoteError(rcode, rmessage, None if data is None else json.loads(data)))


def invalid(message: str) -> KomaError:
    return KomaError("invalid_params", message)
