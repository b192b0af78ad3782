"""The package's errors: `KomaError`, with a `code` from the table of
docs/protocol.md (Error codes), and the base of its class per code (the
classes themselves are generated into `_exceptions.py`). Every class here and
there shows as `koma_sdk.<Name>` (its `__module__`), as a traceback and
pickle name it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, ClassVar, Final

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


#: The class of each code (filled as `_exceptions.py` defines them).
_CLASSES: dict[str, type[ErrorOfCode]] = {}


class _ByCode(type):
    """`KomaError(code, message)` makes the class of `code`; the class of a
    code is made with the message alone (`TransportFailure("...")`)."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is KomaError:
            return _of_code(*args, **kwargs)
        return super().__call__(*args, **kwargs)


def _of_code(code: str, message: str, remote: RemoteError | None = None) -> KomaError:
    of_code = _CLASSES.get(code)
    if of_code is None:
        raise ValueError(f"{code!r} is not an error code of koma_sdk (see koma_sdk.ErrorCode)")
    return of_code(message, remote)


class KomaError(Exception, metaclass=_ByCode):
    """Every error the package raises, an instance of the class of its code
    (`TransportFailure`, `TimedOut`, ...). `code` says what happened (see the
    README's table); `remote` is the server's error for code `remote`;
    `result` is what a turn had come to, on every error of `Turn.result()`
    and `Client.run()`. `KomaError(code, message)` makes one of the class of
    `code`, as the package does (a test may raise one)."""

    code: ErrorCode
    message: str
    remote: RemoteError | None
    result: TurnResult | None

    def __init__(self, code: ErrorCode, message: str, remote: RemoteError | None = None) -> None:
        # Only through `_ByCode`, which makes the class of `code` instead.
        raise TypeError("KomaError(code, message) makes the class of `code`")  # pragma: no cover

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"

    def __reduce__(self) -> Any:
        # Remade through KomaError (which picks the class of the code), with
        # every attribute: the result, and notes added on the way (pickling an
        # exception keeps only its args otherwise). A worker's errors reach a
        # driver whole this way (docs/scale.md, "Beyond one machine").
        return (KomaError, (self.code, self.message, self.remote), dict(self.__dict__))


class ErrorOfCode(KomaError):
    """The base of the class of each code: made with the message alone."""

    def __init_subclass__(cls, code: ErrorCode | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if code is None:
            # A subclass made by a library, not a code's own class: Ray wraps a
            # failed task's error as RayTaskError(TransportFailure), made from
            # the error alone, which `except KomaError` then takes
            # (docs/scale.md, "Beyond one machine").
            return
        _CLASSES[code] = cls
        cls._code = code
        cls.__module__ = "koma_sdk"

    _code: ClassVar[ErrorCode]

    def __new__(cls, *args: Any, **kwargs: Any) -> ErrorOfCode:
        # The message alone (an OSError, as a timeout's class is, reads two
        # arguments as an errno and its text). Any arguments are taken, since
        # a library's subclass (Ray's) passes its own to its own `__init__`,
        # which checks them; ours does.
        message = args[0] if args else kwargs.get("message", "")
        self: ErrorOfCode = super().__new__(cls, message)
        return self

    def __init__(self, message: str, remote: RemoteError | None = None) -> None:
        Exception.__init__(self, message)
        self.code = self._code
        self.message = message
        self.remote = remote
        self.result = None


KomaError.__module__ = "koma_sdk"
RemoteError.__module__ = "koma_sdk"


def _from_native(code: ErrorCode, message: str, remote: tuple[str, str, str | None] | None) -> KomaError:
    """What the native module raises and reports: `remote` is the server's
    `(code, message, data JSON text or None)`."""
    if remote is None:
        return KomaError(code, message)
    rcode, rmessage, data = remote
    return KomaError(code, message, RemoteError(rcode, rmessage, None if data is None else json.loads(data)))


def invalid(message: str) -> KomaError:
    return KomaError("invalid_params", message)
