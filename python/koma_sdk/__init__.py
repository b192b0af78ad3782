"""Drive the Koma coding agent from Python, through `koma sdk serve`.

    from koma_sdk import Client

    async with Client("koma") as client:
        hello = await client.probe()
        print(hello.protocol, hello.capabilities)

The same Rust core as the Node package `@koma/sdk` speaks the protocol;
this package converts and delivers. See the README for the whole surface.
"""

from . import _exceptions, _surface, _types
from ._client import Client
from ._codes import ErrorCode
from ._errors import KomaError, RemoteError
from ._exceptions import *  # noqa: F403  (a class per error code: its own __all__)
from ._stream import EventStream
from ._surface import *  # noqa: F403  (the protocol's types: its own __all__)
from ._turn import ApprovalPolicy, Turn, TurnLoop
from ._types import *  # noqa: F403  (the package's own values: its own __all__)

__all__ = [
    "ApprovalPolicy",
    "Client",
    "ErrorCode",
    "EventStream",
    "KomaError",
    "RemoteError",
    "Turn",
    "TurnLoop",
]
__all__ += _exceptions.__all__ + _surface.__all__ + _types.__all__
