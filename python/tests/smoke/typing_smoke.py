"""Checked by `mypy --strict` (python/dev.py): an event narrowed by its name
gives `data` its fields; results have their attributes."""

from __future__ import annotations

from koma_sdk import Client, KomaError, TurnResult


async def usage(client: Client) -> str:
    hello = await client.probe(timeout=5)
    version: str = hello.binary.version
    session: str = (await client.create(cwd="/tmp")).session
    queued: int = (await client.state()).queued
    turn: str = (await client.submit("hi")).turn
    text = ""
    async for item in client.events():
        if item.type == "overflow":
            continue
        if item.name == "output":
            text += item.data["text"]
        elif item.name == "turn_finished":
            item.data["status"]
            break
    result: TurnResult = await client.run("fix", on_approval="allow")
    try:
        await client.approve("a-1", "deny")
    except KomaError as e:
        if e.remote is not None:
            print(e.remote.code, e.remote.data)
    return version + session + str(queued) + turn + text + result.output
