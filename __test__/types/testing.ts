// Type-checked with `tsc --strict` (typescript.test.mjs and `npm test`), never run:
// scenarios built in code are checked by testing.d.ts, whose types of koma-sim's
// scenario format are generated from schema/scenario.schema.json; each mistake
// marked @ts-expect-error below is one the typings must catch.
import type { TestContext } from "node:test";
import type { ApprovalDecision, Client } from "../../index.js";
import {
  FakeKoma,
  ScenarioError,
  checkScenario,
  fakeKoma,
  readRecord,
  step,
  type Json,
  type MethodAnswer,
  type RecordedRequest,
  type Scenario,
  type Step,
} from "../../testing.js";

const steps: Step[] = [
  step.output("a"),
  step.tool("run_tests", { passed: 42, names: ["a"] }, { input: { suite: "all" }, error: false }),
  step.approval("git_push", { input: null, allow: { output: "pushed" }, deny: { steps: [step.finish("failed", "no")] } }),
  step.pause(),
  step.pause(20),
  step.event("mystery", [1, 2.5, null, true]),
  step.exit(3),
  step.crash("SIGTERM"),
  step.stopAnswering(),
  step.brokenFrame("not JSON"),
  { do: "output", text: "an object of the file's format" },
  { do: "approval", tool: "rm", deny: { output: "no", error: true } },
];

export const scenario: Scenario = {
  about: "every part",
  unscripted: "agent",
  turns: [
    { match: { contains: "deploy" }, times: "always", steps },
    { match: { turn: 2 }, steps: [] },
    { match: { text: "x" }, times: 2, steps: [] },
    { match: { regex: "^fix" }, steps: [] },
    { steps: [] },
  ],
  methods: [
    { method: "submit", nth: 2, error: { code: "busy", message: "turn t-1 is running", data: { turn: "t-1" } } },
    { method: "state", result: null },
    { method: "state", delay_ms: 100 },
    { method: "state", delay_ms: 100, result: {} },
  ],
};

// @ts-expect-error an unknown step
export const s1: Step = { do: "explode" };
// @ts-expect-error a missing field
export const s2: Step = { do: "exit" };
// @ts-expect-error an unknown signal
step.crash("SIGFOO");
// @ts-expect-error a matcher is an object
export const s3: Scenario = { turns: [{ match: "deploy", steps: [] }] };
// @ts-expect-error a bad default for unscripted turns
export const s4: Scenario = { unscripted: "keyword" };
// @ts-expect-error both a result and an error
export const m1: MethodAnswer = { method: "state", result: {}, error: { code: "x" } };
// @ts-expect-error a method answer that scripts nothing
export const m2: MethodAnswer = { method: "state" };
// @ts-expect-error a method outside the protocol's (MethodName)
export const m3: MethodAnswer = { method: "sumbit", result: {} };
// @ts-expect-error a delay alone takes no error as well as a result
export const m4: MethodAnswer = { method: "state", delay_ms: 1, result: {}, error: { code: "x" } };
// @ts-expect-error two matchers in one match
export const s5: Scenario = { turns: [{ match: { text: "a", contains: "b" }, steps: [] }] };
// @ts-expect-error an output is JSON
step.tool("x", () => 1);

export async function typed(t: TestContext): Promise<void> {
  const text: string = checkScenario(scenario);
  const koma: FakeKoma = fakeKoma(t, scenario, { env: { KOMA_SIM_FAULT: "odd_status" }, delayMs: 0, client: { helloTimeout: null } });
  const client: Client = koma.client;
  const other: Client = koma.newClient({ trace: true });
  const reqs: RecordedRequest[] = koma.requests();
  const method: string | null = reqs[0].method;
  const approvals: Array<{ approval: string; decision: ApprovalDecision }> = koma.approvals();
  const texts: string[] = koma.texts();
  const called: boolean = koma.called("configure");
  const env: Record<string, string> = koma.clientOptions.env;
  await using disposed = new FakeKoma(scenario);
  await disposed.close();
  void [text, client, other, method, approvals, texts, called, env, readRecord(koma.recordPath), koma.calls("approve")];
  try {
    checkScenario({ turns: [] });
  } catch (e) {
    if (e instanceof ScenarioError) {
      const where: string = `${e.entry} ${e.field} ${e.problem}`;
      const code: "ERR_KOMA_BAD_SCENARIO" = e.code;
      void [where, code];
    }
  }
  // vitest's context
  fakeKoma({ onTestFinished: (fn: () => unknown) => void fn }, {});
}

// Under exactOptionalPropertyTypes, the builders' and the format's optional
// fields take `undefined` (a value that may be missing), as the code does.
export function explicitUndefined(input: Json | undefined, error: boolean | undefined, t: TestContext): void {
  void step.tool("run_tests", 1, { input, error });
  void step.approval("git_push", { input, allow: undefined, deny: { output: undefined, steps: undefined } });
  const scenario: Scenario = { turns: [{ match: undefined, times: undefined, steps: [{ do: "pause", ms: undefined }] }], about: undefined };
  void fakeKoma(t, scenario, { delayMs: undefined, client: { trace: undefined } });
}
