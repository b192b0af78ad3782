// The picture of docs/tracing.md: one real trace, rendered from the spans
// the SDK's in-memory exporter got. A request runs a turn on koma-sim that
// calls two tools, one of them after an approval a person answers.
//   node __test__/tracing-picture.mjs
// (telemetry.test.mjs renders it too, without the person's pause.)
import { join } from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { root } from "./helpers.mjs";
import { tracing, waterfall } from "./spans.mjs";

const { FakeKoma } = createRequire(import.meta.url)(join(root, "testing.js"));

export const KEYS = ["koma.turn.status", "koma.tool.outcome", "koma.approval.decision", "koma.approval.answered_by", "process.exit.code"];

export const SCENARIO = {
  turns: [
    {
      steps: [
        { do: "output", text: "Running the tests first." },
        { do: "tool", tool: "run_tests", input: { suite: "all" }, output: "42 passed" },
        { do: "approval", tool: "git_push", input: { remote: "origin" }, allow: { output: "pushed" } },
        { do: "output", text: " Deployed." },
      ],
    },
  ],
};

/** The trace of one request, as a waterfall; the person answers after `answerMs`. */
export async function picture({ answerMs = 0 } = {}) {
  const t = tracing();
  const koma = new FakeKoma(SCENARIO, { client: { tracerProvider: t.tracerProvider } });
  try {
    const person = () => new Promise((resolve) => setTimeout(() => resolve("allow"), answerMs));
    await t.tracer.startActiveSpan("POST /deploy", async (request) => {
      await koma.client.create({});
      await koma.client.run({ text: "deploy to staging" }, { onApproval: person });
      await koma.client.close();
      request.end();
    });
  } finally {
    await koma.close();
  }
  // The request's trace, and the client's, a trace of its own linked to the
  // request. (The fake's own close of its client is a span of its own, after them.)
  return waterfall(
    ["POST /deploy", "koma.client"].map((name) => t.tree().find((n) => n.name === name)),
    { keys: KEYS },
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await picture({ answerMs: 25 }));
