"""Generated from schema/ by scripts/generate.mjs: do not edit.

The `code` of every error the package raises (see the README's table)."""

from typing import Literal

ErrorCode = Literal[
    "remote",
    "delivery_unknown",
    "transport_failure",
    "spawn_failed",
    "protocol_error",
    "protocol_mismatch",
    "frame_too_large",
    "too_many_pending",
    "lifecycle",
    "unsupported",
    "invalid_params",
    "closed",
    "aborted",
    "timeout",
]
