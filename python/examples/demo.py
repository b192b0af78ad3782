"""A tour of koma_sdk against koma-sim: probe, create, a turn streamed with
its approval asked of a (pretend) person, the events of a turn started by
hand, and detach. Run it with `python3 python/dev.py demo`."""

import asyncio
import tempfile

from koma_sdk import ApprovalRequestedData, Client, KomaError
from koma_sdk.sim import path


async def ask_person(request: ApprovalRequestedData) -> str:
    print(f"\n  [approval] {request['tool']} {request['input'].get('path')}: allowed")
    await asyncio.sleep(0.1)  # a person thinking
    return "allow"


async def main() -> None:
    env = {"KOMA_SIM_HOME": tempfile.mkdtemp(prefix="koma-demo-"), "KOMA_SIM_DELAY_MS": "20"}
    async with Client(path(), env=env) as client:
        hello = await client.probe()
        print(f"koma {hello.binary.version}, protocol {hello.protocol}: {', '.join(hello.capabilities)}")

        created = await client.create()
        print(f"session {created.session} (model {created.state.model})")

        print("\n-- a turn, streamed, with its approval asked of a person")
        turn = client.turn("fix notes.txt", on_approval=ask_person)
        async for item in turn:
            if item.type == "event" and item.name == "output":
                print(item.data["text"], end="", flush=True)
        result = await turn.result()
        print(f"\n{result.status}; tool calls: {[(c.tool, c.approval, c.output) for c in result.tool_calls]}")

        print("\n-- one call: run()")
        result = await client.run("read src/lib.rs", on_approval="deny")
        print(f"{result.status}: {result.output}")

        print("\n-- the protocol's methods and events()")
        submitted = await client.submit("hello there")
        async for item in client.events():
            if item.type == "overflow":
                continue
            print(f"  #{item.seq} {item.name}")
            if item.name == "turn_finished" and item.data["turn"] == submitted.turn:
                break

        try:
            await client.approve("a-999", "allow")
        except KomaError as e:
            print(f"\nan error has a code: {e.code} (remote {e.remote.code if e.remote else None})")

        await client.detach()
        print("\ndetached: koma saved the session and exited")


asyncio.run(main())
