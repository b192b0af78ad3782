"""Generated from schema/ by scripts/generate.mjs: do not edit.

One class per error code of the README's table, each a `KomaError` with its `code`:
`except koma_sdk.TransportFailure:`. `KomaError(code, message)` makes the class of `code`."""

from __future__ import annotations

from typing import Literal

from ._errors import ErrorOfCode, RemoteError


class RemoteFailure(ErrorOfCode, code="remote"):
    """`remote`: koma answered with an error; `err.remote` is `{code, message, data}`."""

    code: Literal["remote"]
    remote: RemoteError


class DeliveryUnknown(ErrorOfCode, code="delivery_unknown"):
    """`delivery_unknown`: written, then the stream ended or failed before the answer: koma may or may not have acted."""

    code: Literal["delivery_unknown"]


class TransportFailure(ErrorOfCode, code="transport_failure"):
    """`transport_failure`: koma could not be talked to (it exited, crashed, closed a pipe, sent no hello in time);
    every later call on a failed client."""

    code: Literal["transport_failure"]


class SpawnFailed(ErrorOfCode, code="spawn_failed"):
    """`spawn_failed`: the executable could not be started (not found, not executable, a working directory that cannot
    be entered)."""

    code: Literal["spawn_failed"]


class ProtocolError(ErrorOfCode, code="protocol_error"):
    """`protocol_error`: koma broke the protocol (a bad frame, a bad hello, a sequence gap, a frame over 40 MiB)."""

    code: Literal["protocol_error"]


class ProtocolMismatch(ErrorOfCode, code="protocol_mismatch"):
    """`protocol_mismatch`: hello's protocol is not the integer 1."""

    code: Literal["protocol_mismatch"]


class FrameTooLarge(ErrorOfCode, code="frame_too_large"):
    """`frame_too_large`: this request would be over 40 MiB."""

    code: Literal["frame_too_large"]


class TooManyPending(ErrorOfCode, code="too_many_pending"):
    """`too_many_pending`: 64 requests already wait for their answers."""

    code: Literal["too_many_pending"]


class LifecycleError(ErrorOfCode, code="lifecycle"):
    """`lifecycle`: out of order: `create`/`resume` not first or twice, anything after `detach`."""

    code: Literal["lifecycle"]


class Unsupported(ErrorOfCode, code="unsupported"):
    """`unsupported`: the method is not in hello's `capabilities`."""

    code: Literal["unsupported"]


class InvalidParams(ErrorOfCode, code="invalid_params"):
    """`invalid_params`: bad params, constructor options or call options."""

    code: Literal["invalid_params"]


class ClientClosed(ErrorOfCode, code="closed"):
    """`closed`: the client was closed before this call."""

    code: Literal["closed"]


class Aborted(ErrorOfCode, code="aborted"):
    """`aborted`: the call's `signal` was aborted."""

    code: Literal["aborted"]


class TimedOut(ErrorOfCode, TimeoutError, code="timeout"):
    """`timeout`: the call's `timeout` passed."""

    code: Literal["timeout"]


__all__ = [
    "Aborted",
    "ClientClosed",
    "DeliveryUnknown",
    "FrameTooLarge",
    "InvalidParams",
    "LifecycleError",
    "ProtocolError",
    "ProtocolMismatch",
    "RemoteFailure",
    "SpawnFailed",
    "TimedOut",
    "TooManyPending",
    "TransportFailure",
    "Unsupported",
]
