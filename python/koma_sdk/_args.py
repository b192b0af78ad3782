"""The arguments of calls, checked and turned into what the core takes: a
request's params as JSON text, a bound in seconds. Bad ones are
`invalid_params`, naming what is wrong."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from ._errors import invalid

_encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
_ascii_encoder = json.JSONEncoder(ensure_ascii=True, allow_nan=False, separators=(",", ":"))


def params(method: str, params: Any) -> bytes | None:
    """`params` as the JSON text the core checks, or `None` for no params."""
    if params is None:
        return None
    try:
        text = _encoder.encode(params)
    except (TypeError, ValueError, RecursionError) as e:
        raise invalid(f"{method}: {unsendable(params)} cannot be sent as JSON ({e})") from None
    check_keys(method, params)
    try:
        return text.encode()
    except UnicodeEncodeError:
        # A lone surrogate: written as an escape, the core names its field.
        return _ascii_encoder.encode(params).encode()


def unsendable(params: Any) -> str:
    """What of `params` JSON cannot hold: the top-level field that fails, where one does."""
    if isinstance(params, Mapping):
        for key, value in params.items():
            try:
                _encoder.encode(value)
            except (TypeError, ValueError, RecursionError):
                return f"field `{key}`"
    return "params"


def check_keys(method: str, value: Any) -> None:
    """Refuse a key that is not a str: Python's json would write `{1: 2}` as
    `{"1": 2}`, and send something other than what was given. (Called after
    the encoding succeeded, so `value` holds no cycle.)"""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise invalid(f"{method}: a key of params must be a str, not {type(key).__name__} ({key!r})")
            check_keys(method, item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            check_keys(method, item)


def seconds(what: str, value: Any) -> float | None:
    """A bound in seconds; `None` or `math.inf`: none. `what` names it in the error."""
    if value is None or (isinstance(value, float) and value == math.inf):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise invalid(f"{what} must be a number of seconds >= 0 (None or math.inf: no bound)")
    return float(value)
