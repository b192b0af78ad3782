"""The package's loggers, and what the core's trace records become on them.

- `koma_sdk`: the notes of a client's life (koma started, hello checked,
  detach written, koma's exit, close done) at DEBUG, a failure at WARNING,
  and a count of records dropped (the loop did not take them in time) at INFO;
- `koma_sdk.stderr`: every whole line koma writes to its stderr, at INFO;
- `koma_sdk.trace`: every frame written and read, at DEBUG, for a client
  made with `trace=True`, with `KOMA_SDK_TRACE=1`, or while `koma_sdk.trace`
  is enabled for DEBUG; a client made before that (a handler added, or the
  level lowered, later) keeps its frames from its next call or wake on, as
  Node's `koma-sdk:trace` channel does for a subscriber that comes late.

Each message starts with the client's name, `[koma_sdk pid 1234]` once koma
started; each record has `koma_pid`, `koma_kind` and `koma_direction`
attributes. The core keeps the records (bounded) on its own threads, without
the GIL; they are logged here, on the loop's thread, when the client's wake
is handled. The package adds no handler but a `NullHandler`, so that nothing
reaches stderr through logging's last resort unless the application
configures logging.
"""

from __future__ import annotations

import logging

logger = logging.getLogger("koma_sdk")
logger.addHandler(logging.NullHandler())
stderr_logger = logging.getLogger("koma_sdk.stderr")
trace_logger = logging.getLogger("koma_sdk.trace")

#: Where each kind of record goes (other kinds: `koma_sdk` at DEBUG).
_ROUTES: dict[str, tuple[logging.Logger, int]] = {
    "frame": (trace_logger, logging.DEBUG),
    "stderr": (stderr_logger, logging.INFO),
    "failed": (logger, logging.WARNING),
    "dropped": (logger, logging.INFO),
}
_NOTE = (logger, logging.DEBUG)

#: A record as the native module gives it: `(pid, kind, direction, line)`.
Record = tuple[int | None, str, str | None, str]


def frames_wanted(trace: bool) -> bool:
    """Whether a client made now records its frames (they cost a record
    each, so they are kept only once someone may log them: see
    `frames_now_wanted`)."""
    return trace or trace_logger.isEnabledFor(logging.DEBUG)


def frames_now_wanted() -> bool:
    """Whether a client that keeps no frames should keep them from now on
    (asked at each call and wake; logging caches the answer)."""
    return trace_logger.isEnabledFor(logging.DEBUG)


def log_trace(records: list[Record]) -> None:
    """Log one wake's records, in order."""
    for pid, kind, direction, line in records:
        target, level = _ROUTES.get(kind, _NOTE)
        if target.isEnabledFor(level):
            # The line is the message as it is (no arguments: a `%` in it stays).
            extra = {"koma_pid": pid, "koma_kind": kind, "koma_direction": direction}
            target.log(level, line, extra=extra)
