"""What a user of koma_sdk writes, for `mypy --strict` (not collected by
pytest): every method, every result's fields, events narrowed by their name
so that `data` has its fields' types, the turn layer, and errors. Each
`assert_type` is a check that fails the type check if the package's types
drift. It also runs, against koma-sim:

    python tests/typing_usage.py /path/to/koma-sim
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from typing import Any, Literal

if sys.version_info >= (3, 11):
    from typing import assert_type
else:
    from typing_extensions import assert_type

import koma_sdk.sim
from koma_sdk import (
    ApprovalRequestedData,
    Client,
    Decision,
    EventItem,
    Hello,
    KomaError,
    RemoteError,
    RemoteFailure,
    State,
    TimedOut,
    ToolCall,
    TransportFailure,
    Turn,
    TurnLoop,
    TurnResult,
)


def describe(e: EventItem) -> str:
    """Narrowing by `type`, then by `name`: `data` gets that event's fields."""
    if e.type == "overflow":
        assert_type(e.dropped, int)
        return f"{e.dropped} events lost"
    assert_type(e.seq, int)
    if e.name == "output":
        assert_type(e.data["text"], str)
        return e.data["text"]
    if e.name == "turn_started":
        return f"{e.data['turn']}: {e.data['text']}"
    if e.name == "tool_call":
        return f"{e.data['tool']}({e.data['input']!r}) in {e.data['call']}"
    if e.name == "tool_result":
        assert_type(e.data["error"], bool)
        return f"{e.data['call']} -> {e.data['output']!r}"
    if e.name == "approval_requested":
        return f"{e.data['approval']}: {e.data['tool']} wants {e.data['input']!r}"
    if e.name == "turn_finished":
        assert_type(e.data["status"], Literal["completed", "interrupted", "failed"])
        return f"{e.data['turn']} {e.data['status']} {e.data.get('error', '')}"
    if e.name == "diagnostic":
        assert_type(e.data["level"], Literal["info", "warning", "error"])
        return e.data["message"]
    # The last name of the catalog: mypy has narrowed `e` to the state event.
    assert_type(e.data["status"], Literal["idle", "running", "waiting"])
    return f"{e.data['session']} {e.data['status']} {e.data['turn']} {e.data['queued']} {e.data['model']}"


def show_hello(hello: Hello) -> str:
    assert_type(hello.capabilities, list[str])
    return f"{hello.protocol} {hello.binary.path} {hello.binary.version} {hello.diagnostics!r}"


def show_state(st: State) -> str:
    assert_type(st.queued, int)
    assert_type(st.session, str | None)
    return f"{st.session} {st.status} {st.turn} {st.queued} {st.model}"


def show_result(r: TurnResult) -> str:
    calls: list[ToolCall] = list(r.tool_calls)
    tools = [f"{c.call} {c.tool} {c.input!r} -> {c.output!r} error={c.error} approval={c.approval}" for c in calls]
    assert_type(r.overflowed, bool)
    return f"{r.turn} {r.status} {r.events} {r.output!r} {tools}"


def show_error(e: KomaError) -> str:
    remote: RemoteError | None = e.remote
    where = f" ({remote.code}: {remote.message} {remote.data!r})" if remote is not None else ""
    return f"{e.code}{where}: {e}"


def show_classes(e: KomaError) -> str:
    """A class per code narrows: a `RemoteFailure` has its `remote`, a
    `TimedOut` is a `TimeoutError`, and a test can make any of them."""
    if isinstance(e, RemoteFailure):
        return e.remote.code
    made: TransportFailure = TransportFailure("koma exited")
    by_code: KomaError = KomaError("timeout", "too slow")
    deadline: TimeoutError = TimedOut("too slow")
    return f"{made.code} {by_code.code} {deadline}"


async def policy(request: ApprovalRequestedData) -> Decision:
    return "allow" if request["tool"] == "write_file" else "deny"


def traced_client(executable: str) -> Client:
    """The SDK's providers are what the telemetry keywords take."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider

    Client(executable, telemetry=False)
    return Client(executable, tracer_provider=TracerProvider(), meter_provider=MeterProvider(), capture_content=True)


def sync_policy(request: ApprovalRequestedData) -> Decision:
    return "deny" if request["input"] is None else "allow"


async def main(executable: str) -> None:
    with tempfile.TemporaryDirectory() as home:
        env = {"KOMA_SIM_HOME": home, "KOMA_SIM_DELAY_MS": "0"}
        async with Client(executable, env=env, trace=False, hello_timeout=30.0) as client:
            print(show_hello(await client.probe(timeout=30)))
            created = await client.create(cwd=home, model="sim-1", timeout=10)
            print(created.session, show_state(created.state))
            print(show_state(await client.state(timeout=10)))
            submitted = await client.submit("read a.md", timeout=10)
            print(submitted.turn)
            async for item in client.events():
                print(describe(item))
                if item.type == "event" and item.name == "turn_finished" and item.data["turn"] == submitted.turn:
                    break
            queued = await client.enqueue("hello", timeout=10)
            print(queued.position)
            stopped = await client.interrupt(timeout=10)
            print(stopped.turn)
            both = await client.interrupt_and_submit("fix notes.txt", timeout=10)
            print(both.interrupted, both.turn)
            async for item in client.events():
                if item.type == "event" and item.name == "approval_requested":
                    await client.approve(item.data["approval"], "deny", timeout=10)
                if item.type == "event" and item.name == "turn_finished" and item.data["turn"] == both.turn:
                    break
            print(show_state(await client.configure(model="sim-2", timeout=10)))
            raw: Any = await client.request("state", {}, timeout=10)
            print(raw)

            turn: Turn = client.turn("write notes.txt", on_approval=sync_policy, timeout=30)
            async for item in turn:
                print(describe(item))
            print(await turn.id(), show_result(await turn.result()))
            await turn.interrupt()
            # The scoped forms: leaving the block ends the turn, if it still runs.
            async with client.turn("read src/lib.rs", on_approval="deny") as scoped:
                assert_type(scoped, Turn)
                async with contextlib.aclosing(aiter(scoped)) as loop:
                    assert_type(loop, TurnLoop)
                    async for item in loop:
                        print(describe(item))
                        break
            await scoped.aclose()
            print(show_result(await client.run("fix notes.txt", on_approval=policy, mode="interrupt", timeout=30)))
            print(show_result(await client.run("hello", on_approval="allow")))
            try:
                await client.submit("fix notes.txt")
                await client.submit("busy now")
            except KomaError as e:
                print(show_error(e), show_classes(e))
            print(client.pid, client.stderr[-80:])
            await client.interrupt()
            await client.detach(timeout=10)
        async with Client(executable, env=env) as again:
            resumed = await again.resume(created.session, after=0, timeout=10)
            print(resumed.session, show_state(resumed.state))
        await again.close()


if __name__ == "__main__":
    import asyncio

    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else koma_sdk.sim.path()))
