"""What crosses a process boundary whole: a `KomaError` of every code, with
its class, message, remote error, result and notes, and the turn's result,
under every pickle protocol (a worker of a fleet hands them to its driver
pickled: docs/scale.md, "Beyond one machine")."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import get_args

import pytest

from helpers import raises
from koma_sdk import ErrorCode, KomaError, RemoteError, ToolCall, TurnResult
from koma_sdk.testing import Crash, FakeKoma, Output, Pause, Scenario, ScriptedTurn

pytestmark = pytest.mark.anyio

PROTOCOLS = range(pickle.HIGHEST_PROTOCOL + 1)
RESULT = TurnResult(
    "t-1",
    "unknown",
    "half of it",
    [ToolCall("c-1", "write_file", {"path": "a.txt"}, "denied", True, "deny"), ToolCall("c-2", "read_file", {})],
    7,
    False,
)


def same_error(a: KomaError, b: KomaError) -> None:
    assert type(a) is type(b)
    assert (a.code, a.message, str(a), repr(a), a.args) == (b.code, b.message, str(b), repr(b), b.args)
    assert a.result == b.result
    assert (a.remote is None) == (b.remote is None)
    if a.remote is not None and b.remote is not None:
        assert (a.remote.code, a.remote.message, a.remote.data) == (b.remote.code, b.remote.message, b.remote.data)
    assert getattr(a, "__notes__", None) == getattr(b, "__notes__", None)
    assert isinstance(a, TimeoutError) == isinstance(b, TimeoutError) == (a.code == "timeout")


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("code", get_args(ErrorCode))
def test_an_error_of_every_code_pickles_whole(code: ErrorCode, protocol: int) -> None:
    remote = RemoteError("busy", "turn t-1 is running", {"turn": "t-1"}) if code == "remote" else None
    e = KomaError(code, f"what went wrong ({code})", remote)
    e.result = RESULT
    e.__notes__ = ["on worker 2, task 17"]  # what add_note() (3.11 on) keeps
    again = pickle.loads(pickle.dumps(e, protocol=protocol))
    same_error(again, e)
    assert again.result is not None and again.result.tool_calls[0].approval == "deny"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_remote_error_and_a_turn_result_pickle_alone(protocol: int) -> None:
    remote = RemoteError("unscripted", "no turn matches", {"text": "hi", "n": [1, None]})
    again = pickle.loads(pickle.dumps(remote, protocol=protocol))
    assert (type(again), again.code, again.message, again.data) == (
        RemoteError,
        remote.code,
        remote.message,
        remote.data,
    )
    assert pickle.loads(pickle.dumps(RESULT, protocol=protocol)) == RESULT
    assert pickle.loads(pickle.dumps(None, protocol=protocol)) is None
    bare = KomaError("closed", "the client is closed")  # no result, no remote, no notes
    same_error(pickle.loads(pickle.dumps(bare, protocol=protocol)), bare)


async def test_an_error_from_a_crashed_koma_pickles_with_the_turn_so_far(anyio_backend: str, tmp_path: Path) -> None:
    scenario = Scenario(turns=[ScriptedTurn([Output("Reading the code..."), Crash("SIGKILL")])])
    async with FakeKoma(scenario, dir=tmp_path) as koma:
        await koma.client.create()
        e = await raises(koma.client.run("refactor", on_approval="deny"))
    assert e.code == "transport_failure" and e.result is not None
    assert e.result.output == "Reading the code..."
    for protocol in PROTOCOLS:
        same_error(pickle.loads(pickle.dumps(e, protocol=protocol)), e)


async def test_a_turn_timeout_pickles_as_a_timeout_error(anyio_backend: str, tmp_path: Path) -> None:
    scenario = Scenario(turns=[ScriptedTurn([Output("Thinking..."), Pause()])])
    async with FakeKoma(scenario, dir=tmp_path) as koma:
        await koma.client.create()
        e = await raises(koma.client.run("a long task", on_approval="deny", timeout=0.2))
    assert e.code == "timeout" and isinstance(e, TimeoutError) and e.result is not None
    for protocol in PROTOCOLS:
        same_error(pickle.loads(pickle.dumps(e, protocol=protocol)), e)


class _Wrapper(Exception):
    """What Ray does with a task's error: a class of its own and the error's
    (`RayTaskError(KomaError)`), made from the error alone, whose attributes
    are the error's."""

    def __init__(self, cause: KomaError) -> None:
        self.cause = cause

    def __getattr__(self, name: str) -> object:
        return getattr(self.cause, name)


@pytest.mark.parametrize("code", get_args(ErrorCode))
def test_a_library_may_subclass_an_error_to_wrap_it(code: ErrorCode) -> None:
    e = KomaError(code, "what went wrong")
    e.result = RESULT
    wrapped = type(f"Wrapped({type(e).__name__})", (_Wrapper, type(e)), {})(e)
    assert isinstance(wrapped, KomaError), "`except KomaError` takes it"
    assert isinstance(wrapped, TimeoutError) == (code == "timeout")
    assert (wrapped.code, wrapped.message, wrapped.result) == (code, "what went wrong", RESULT)
    with pytest.raises(TypeError):
        KomaError(code)  # type: ignore[call-arg]  # the package's own errors still need their message
