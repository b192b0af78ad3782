"""Stubs of the native module (python/src): the core's connection, as the
package drives it. `mypy.stubtest` checks them against the module."""

from typing import Callable, Final, List, Literal, Optional, Tuple, Union, final

from ._errors import KomaError

__all__ = [
    "BATCH_STRIDE",
    "NativeClient",
    "SLOT_BATCH_COUNTING",
    "SLOT_BATCH_EPOCH",
    "SLOT_EPOCH",
    "SLOT_TAKEN",
    "SLOT_TAKEN_BYTES",
    "census",
    "init",
]

SLOT_EPOCH: Final[int]
SLOT_TAKEN: Final[int]
SLOT_BATCH_EPOCH: Final[int]
SLOT_TAKEN_BYTES: Final[int]
SLOT_BATCH_COUNTING: Final[int]
BATCH_STRIDE: Final[int]

#: Where a lifted string goes back: `(index, *path, text)`.
_LiftEntry = Tuple[Union[int, str], ...]
#: What a stream gives: a batch `(0, json, lifts, epoch, counting)`, the
#: overflow report `(1, dropped)`, or the end `(2, error or None)`.
_Taken = Union[
    Tuple[Literal[0], bytes, List[_LiftEntry], int, int],
    Tuple[Literal[1], int],
    Tuple[Literal[2], Optional[KomaError]],
]
#: A turn's news: `(key, kind, ...)` (see `NativeClient.deliver`).
_TurnNews = Union[
    Tuple[int, Literal["id"], str, None, None, None],
    Tuple[int, Literal["approval"], str, bytes, List[_LiftEntry], None],
    Tuple[int, Literal["ready"], None, None, None, None],
    Tuple[int, Literal["ended"], bytes, List[_LiftEntry], Optional[KomaError], Optional[str], Optional[str]],
]
#: One wake: `(tokens, joined results, their lifts, (token, error or None, failed) of the rest, turn news)`.
_Delivered = Tuple[List[int], Optional[bytes], List[_LiftEntry], List[Tuple[int, Optional[KomaError], bool]], List[_TurnNews]]

def init(error_factory: Callable[..., KomaError]) -> None: ...
def census() -> Tuple[int, int]: ...

@final
class NativeClient:
    def __new__(
        cls,
        executable: bytes,
        cwd: Optional[bytes],
        env: List[Tuple[bytes, bytes]],
        trace: bool,
        hello_timeout: Optional[float],
    ) -> NativeClient: ...
    def token(self) -> int: ...
    def request(self, token: int, method: str, params: Optional[bytes], timeout: Optional[float]) -> None: ...
    def probe(self, token: int, timeout: Optional[float]) -> Optional[bytes]: ...
    def abandon(self, token: int) -> None: ...
    def close(self, token: int) -> bool: ...
    def deliver(self) -> _Delivered: ...
    def take_events(self, wait: bool) -> Optional[_Taken]: ...
    def open_turn(
        self,
        key: int,
        entry: str,
        params: Optional[bytes],
        mode: Optional[str],
        approvals: Tuple[str, str],
        timeout: Optional[float],
        refused: Optional[KomaError],
    ) -> None: ...
    def take_turn_events(self, key: int) -> Optional[_Taken]: ...
    def read_turn(self, key: int, reading: bool) -> None: ...
    def stop_turn(self, key: int, code: str, message: str) -> None: ...
    def interrupt_turn(self, key: int, token: int) -> bool: ...
    def answer_approval(self, key: int, approval: str, kind: str, value: str) -> None: ...
    def release_turn(self, key: int) -> None: ...
    def unwant_events(self) -> None: ...
    def counters(self) -> memoryview: ...
    @property
    def stderr(self) -> str: ...
    @property
    def pid(self) -> Optional[int]: ...
    def buffered(self) -> Tuple[int, int]: ...
    def is_closed(self) -> bool: ...
    def kill_now(self) -> None: ...
    def wake_fd(self) -> Optional[int]: ...
    def release_wake(self) -> None: ...
