// The program's tests, with node:test: each one scripts what the agent
// does, runs the program against it (koma-sim, a real child), and checks
// what the program said and what it sent.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fakeKoma, step } from "@koma/sdk/testing";
import { runTask } from "./app.mjs";

test("a safe tool is allowed", async (t) => {
  const koma = fakeKoma(t, {
    turns: [
      {
        match: { contains: "test" },
        steps: [step.approval("run_tests", { allow: { output: "42 passed" } }), step.output("All 42 tests pass.")],
      },
    ],
  });
  await koma.client.create({});
  assert.equal(await runTask(koma.client, "run the tests"), "completed: All 42 tests pass.");
  assert.deepEqual(koma.approvals(), [{ approval: "a-1", decision: "allow" }]);
});

test("any other tool is denied", async (t) => {
  const koma = fakeKoma(t, {
    turns: [
      {
        steps: [
          step.approval("git_push", {
            input: { remote: "origin" },
            deny: { steps: [step.output("I did not push."), step.finish("failed", "the push was denied")] },
          }),
        ],
      },
    ],
  });
  await koma.client.create({});
  assert.equal(await runTask(koma.client, "deploy"), "failed: I did not push.");
  assert.deepEqual(koma.approvals(), [{ approval: "a-1", decision: "deny" }]);
});

test("koma crashes in the middle of the task", async (t) => {
  const koma = fakeKoma(t, {
    turns: [{ steps: [step.output("Reading the code..."), step.crash("SIGKILL")] }],
  });
  await koma.client.create({});
  assert.equal(await runTask(koma.client, "refactor"), "Koma stopped in the middle of the task.");
});

test("koma crashes before it answers the request", async (t) => {
  const koma = fakeKoma(t, {
    turns: [{ steps: [step.crash("SIGKILL")] }],
    methods: [{ method: "submit", delay_ms: 60_000 }],
  });
  await koma.client.create({});
  assert.equal(await runTask(koma.client, "refactor"), "Koma stopped in the middle of the task.");
});

test("koma is busy", async (t) => {
  const koma = fakeKoma(t, {
    methods: [{ method: "submit", error: { code: "busy", message: "turn t-1 is running", data: { turn: "t-1" } } }],
  });
  await koma.client.create({});
  assert.equal(await runTask(koma.client, "another task"), "Koma is busy with another task: try again later.");
  assert.equal(koma.called("approve"), false);
});
