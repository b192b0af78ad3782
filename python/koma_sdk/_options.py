"""Generated from schema/ by scripts/generate.mjs: do not edit.

The options of `Client` (schema/sdk.schema.json's `ClientOptions`): their
defaults, which `Client` takes, and their names and types, which
koma_sdk.testing's fakes take (`ClientSettings`) and hand out (`ClientOptions`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final, TypedDict

from ._telemetry import MeterProviderLike, TracerProviderLike

#: The default of `hello_timeout`, in seconds (15 s).
HELLO_TIMEOUT: Final = 15.0


class ClientSettings(TypedDict, total=False):
    """The options of `Client` beside `executable` and `env`: what a fake's client takes."""

    cwd: str | bytes | os.PathLike[str] | os.PathLike[bytes] | None
    trace: bool
    hello_timeout: float | None
    telemetry: bool
    tracer_provider: TracerProviderLike | None
    meter_provider: MeterProviderLike | None
    capture_content: bool


class _ClientOptionsFields(TypedDict):
    executable: str | bytes | os.PathLike[str] | os.PathLike[bytes]


class ClientOptions(_ClientOptionsFields, ClientSettings, total=False):
    """Options of `Client(...)`. As keyword arguments: `Client(**options)`."""

    env: Mapping[str, str] | None


__all__ = ["ClientOptions", "ClientSettings", "HELLO_TIMEOUT"]
