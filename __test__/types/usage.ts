// Type-checked with `tsc --strict` by `npm test`, and run by typescript.test.mjs.
import {
  Client,
  Turn,
  isKomaError,
  type EventItem,
  type KomaError,
  type State,
  type PartialTurnResult,
  type TurnResult,
  type ApprovalRequestedData,
  type InterruptResult,
  type RunOptions,
  type TraceMessage,
} from "../../index.js";

const executable = process.env.KOMA_SIM ?? "koma";

async function main(): Promise<void> {
  await using client = new Client({ executable, env: { KOMA_SIM_DELAY_MS: "0" } });
  const hello = await client.probe();
  const caps: string[] = hello.capabilities;
  const created = await client.create({ cwd: process.cwd() });
  const state: State = created.state;
  const status: "idle" | "running" | "waiting" = state.status;
  // State's fields are always present, some null.
  const session: string | null = state.session;
  const model: string | null = state.model;
  void session;
  void model;
  const { turn } = await client.submit({ text: "read the README" }, { timeout: 5000 });
  for await (const item of client.events()) {
    if (item.type === "overflow") {
      const dropped: number = item.dropped;
      void dropped;
      continue;
    }
    if (item.name === "output") {
      const text: string = item.data.text;
      void text;
    }
    if (item.name === "turn_finished" && item.data.turn === turn) break;
  }
  const ac = new AbortController();
  await client.state({ signal: ac.signal });
  try {
    await client.approve({ approval: "a-0", decision: "allow" });
  } catch (e) {
    // The type guard narrows a caught value to the package's errors.
    if (isKomaError(e) && e.code === "remote") console.log(`remote ${e.remote?.code}`);
  }
  // A turn in one call, with an async approval handler.
  const ask = async (request: ApprovalRequestedData): Promise<"allow" | "deny"> => (request.tool === "write_file" ? "allow" : "deny");
  const result: TurnResult = await client.run({ text: "fix notes.txt" }, { onApproval: ask, timeout: 10_000 });
  // koma's status as it said it: the catalog's, "unknown", or another string.
  const finished: string = result.status;
  if (result.status === "completed") void finished;
  const approvals = result.toolCalls.map((c) => c.approval ?? "none");
  // A tool's input and output are unknown: narrowed before use.
  const outputs = result.toolCalls.map((c) => (typeof c.output === "string" ? c.output.length : 0));
  void outputs;
  const stopped: InterruptResult = await client.interrupt();
  const none: string | null = stopped.turn;
  void none;
  // A Turn: narrowing its events.
  const streamed: Turn = client.turn({ text: "hello" }, { mode: "submit", onApproval: "deny" });
  let pieces = 0;
  for await (const item of streamed) {
    if (item.type === "overflow") continue;
    if (item.name === "output") pieces += item.data.text.length > 0 ? 1 : 0;
    if (item.name === "turn_finished") {
      const s: "completed" | "interrupted" | "failed" = item.data.status;
      void s;
    }
  }
  const id: string = await streamed.id;
  const second = await streamed.result;
  console.log(JSON.stringify({ ok: true, caps: caps.length, status, finished, approvals, pieces, same: id === second.turn }));
}

// A subscriber of the `koma-sdk:trace` channel narrows a message on its kind.
function onTrace(message: unknown): string {
  const m = message as TraceMessage;
  const client: Client | undefined = m.client;
  const pid: number | null = m.pid;
  const shown = m.kind === "frame" ? `${m.direction === "written" ? "->" : "<-"} ${m.text}` : `${m.kind}: ${m.text}`;
  return `${client === undefined ? "collected " : ""}${pid ?? "-"} ${shown}`;
}
void onTrace;

// What must not type-check.
function wrong(client: Client, item: EventItem, caught: unknown, options: RunOptions): void {
  // @ts-expect-error a caught value has no code until isKomaError narrows it
  void caught.code;
  if (isKomaError(caught)) {
    const code: KomaError["code"] = caught.code;
    // @ts-expect-error the codes are the protocol's table
    const other: typeof code = "ENOENT";
    void other;
    const partial: PartialTurnResult | undefined = caught.result;
    // What a failed turn had come to: `turn` is null when koma never started one.
    const started: string | null | undefined = partial?.turn;
    void started;
  }
  if (item.type === "event" && item.name === "tool_call") {
    // @ts-expect-error a tool's input is unknown, not any
    void item.data.input.path;
  }
  if (item.type === "event" && item.name === "tool_result") {
    // @ts-expect-error a tool's output is unknown, not any
    void item.data.output.length;
  }
  // @ts-expect-error run()'s onApproval is required in its options type too
  const noApproval: RunOptions = { mode: "submit" };
  void noApproval;
  void options.onApproval;
  // @ts-expect-error misspelt param
  void client.submit({ txt: "x" });
  // @ts-expect-error wrong decision value
  void client.approve({ approval: "a", decision: "maybe" });
  // @ts-expect-error params missing
  void client.submit();
  // @ts-expect-error unknown option
  void client.state({ deadline: 5 });
  if (item.type === "event" && item.name === "output") {
    // @ts-expect-error `output` has no `approval`
    void item.data.approval;
  }
  if (item.type === "event" && item.name === "approval_requested") {
    const approval: string = item.data.approval;
    void approval;
  }
  // @ts-expect-error run() requires onApproval
  void client.run({ text: "x" }, {});
  // @ts-expect-error onApproval answers "allow" or "deny"
  void client.run({ text: "x" }, { onApproval: () => "maybe" });
  // @ts-expect-error a Turn's id is a promise
  const id: string = client.turn({ text: "x" }).id;
  void id;
  // @ts-expect-error a Turn is made by client.turn() only: the type has no constructor
  void new Turn();
  // @ts-expect-error an overflow report is not an event
  const n: "event" = ({ type: "overflow", dropped: 1 } as EventItem).type;
  void n;
}
void wrong;

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
