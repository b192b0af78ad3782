"""The picture of docs/tracing-python.md: one real trace, rendered from the
spans the SDK's in-memory exporter got. A request runs a turn on koma-sim
that calls two tools, one of them after an approval a person answers.

    python/.venv/bin/python python/tests/tracing_picture.py

(test_telemetry.py renders it too, without the person's pause.)"""

from __future__ import annotations

from typing import Any

import anyio

from koma_sdk import Client
from koma_sdk.testing import FakeKoma
from spans import Tracing, waterfall

KEYS = (
    "koma.turn.status",
    "koma.tool.outcome",
    "koma.approval.decision",
    "koma.approval.answered_by",
    "process.exit.code",
)

SCENARIO: dict[str, Any] = {
    "turns": [
        {
            "steps": [
                {"do": "output", "text": "Running the tests first."},
                {"do": "tool", "tool": "run_tests", "input": {"suite": "all"}, "output": "42 passed"},
                {"do": "approval", "tool": "git_push", "input": {"remote": "origin"}, "allow": {"output": "pushed"}},
                {"do": "output", "text": " Deployed."},
            ]
        }
    ]
}


async def picture(answer_after: float = 0.0) -> str:
    """The trace of one request, as a waterfall; the person answers after `answer_after` seconds."""
    t = Tracing()

    async def person(request: Any) -> str:
        await anyio.sleep(answer_after)
        return "allow"

    async with FakeKoma(SCENARIO) as koma:
        with t.tracer.start_as_current_span("POST /deploy"):
            async with Client(koma.executable, env=koma.env, tracer_provider=t.tracer_provider) as client:
                await client.create()
                await client.run("deploy to staging", on_approval=person)
    # The request's trace, and the client's, a trace of its own linked to the request.
    roots = {n.name: n for n in t.tree()}
    return waterfall([roots["POST /deploy"], roots["koma.client"]], keys=KEYS)


if __name__ == "__main__":
    print(anyio.run(picture, 0.025))
