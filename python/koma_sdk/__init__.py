"""Drive the Koma coding agent from Python, through `koma sdk serve`.

    from koma_sdk import Client

    async with Client("koma") as client:
        hello = await client.probe()
        print(hello.protocol, hello.capabilities)

The same Rust core as the Node package `@koma/sdk` speaks the protocol;
this package converts and delivers. See the README for the whole surface.
"""

from . import _errors, _native

_native.init(_errors._from_native)

from ._client import Client  # noqa: E402
from ._errors import ErrorCode, KomaError, RemoteError  # noqa: E402
from ._stream import EventStream  # noqa: E402
from ._turn import ApprovalPolicy, Turn  # noqa: E402
from ._types import (  # noqa: E402
    ApprovalRequestedData,
    ApprovalRequestedEvent,
    Binary,
    Decision,
    DiagnosticData,
    DiagnosticEvent,
    EnqueueResult,
    Event,
    EventItem,
    Hello,
    InterruptAndSubmitResult,
    InterruptResult,
    OutputData,
    OutputEvent,
    Overflow,
    SessionResult,
    State,
    StateData,
    StateEvent,
    Status,
    SubmitResult,
    ToolCall,
    ToolCallData,
    ToolCallEvent,
    ToolResultData,
    ToolResultEvent,
    TurnFinishedData,
    TurnFinishedEvent,
    TurnMode,
    TurnResult,
    TurnStartedData,
    TurnStartedEvent,
    TurnStatus,
)

__all__ = [
    "ApprovalPolicy",
    "ApprovalRequestedData",
    "ApprovalRequestedEvent",
    "Binary",
    "Client",
    "Decision",
    "DiagnosticData",
    "DiagnosticEvent",
    "EnqueueResult",
    "ErrorCode",
    "Event",
    "EventItem",
    "EventStream",
    "Hello",
    "InterruptAndSubmitResult",
    "InterruptResult",
    "KomaError",
    "OutputData",
    "OutputEvent",
    "Overflow",
    "RemoteError",
    "SessionResult",
    "State",
    "StateData",
    "StateEvent",
    "Status",
    "SubmitResult",
    "ToolCall",
    "ToolCallData",
    "ToolCallEvent",
    "ToolResultData",
    "ToolResultEvent",
    "Turn",
    "TurnFinishedData",
    "TurnFinishedEvent",
    "TurnResult",
    "TurnStartedData",
    "TurnStartedEvent",
    "TurnMode",
    "TurnStatus",
]
