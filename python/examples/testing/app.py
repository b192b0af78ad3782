"""The program under test: it runs one turn of a task, lets the agent use
only the tools it trusts, and tells the user how it went."""

from koma_sdk import ApprovalRequestedData, Client, Decision, KomaError

#: The tools the agent may use without asking anyone.
SAFE_TOOLS = {"read_file", "run_tests"}


def approve(request: ApprovalRequestedData) -> Decision:
    """Allow the safe tools, deny every other."""
    return "allow" if request["tool"] in SAFE_TOOLS else "deny"


async def run_task(client: Client, text: str) -> str:
    """Run `text` as a turn of `client`'s session; a line for the user."""
    try:
        result = await client.run(text, on_approval=approve)
    except KomaError as e:
        if e.code == "remote" and e.remote is not None and e.remote.code == "busy":
            return "Koma is busy with another task: try again later."
        # Koma ended during the turn, or before it answered the request
        # (which it may or may not have carried out): either way, the task stopped.
        if e.code in ("transport_failure", "delivery_unknown"):
            return "Koma stopped in the middle of the task."
        raise
    return f"{result.status}: {result.output}"
