// The same tests with vitest: the test's context gives `onTestFinished`,
// which closes the fake Koma when the test ends.
import { expect, test } from "vitest";
import { fakeKoma, step } from "@koma/sdk/testing";
import { runTask } from "../app.mjs";

test("a safe tool is allowed", async (context) => {
  const koma = fakeKoma(context, {
    turns: [
      {
        match: { contains: "test" },
        steps: [step.approval("run_tests", { allow: { output: "42 passed" } }), step.output("All 42 tests pass.")],
      },
    ],
  });
  await koma.client.create({});
  expect(await runTask(koma.client, "run the tests")).toBe("completed: All 42 tests pass.");
  expect(koma.approvals()).toEqual([{ approval: "a-1", decision: "allow" }]);
});

test("any other tool is denied", async (context) => {
  const koma = fakeKoma(context, {
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
  expect(await runTask(koma.client, "deploy")).toBe("failed: I did not push.");
  expect(koma.approvals()).toEqual([{ approval: "a-1", decision: "deny" }]);
});

test("koma crashes in the middle of the task", async (context) => {
  const koma = fakeKoma(context, {
    turns: [{ steps: [step.output("Reading the code..."), step.crash("SIGKILL")] }],
  });
  await koma.client.create({});
  expect(await runTask(koma.client, "refactor")).toBe("Koma stopped in the middle of the task.");
});

test("koma crashes before it answers the request", async (context) => {
  const koma = fakeKoma(context, {
    turns: [{ steps: [step.crash("SIGKILL")] }],
    methods: [{ method: "submit", delay_ms: 60_000 }],
  });
  await koma.client.create({});
  expect(await runTask(koma.client, "refactor")).toBe("Koma stopped in the middle of the task.");
});

test("koma is busy", async (context) => {
  const koma = fakeKoma(context, {
    methods: [{ method: "submit", error: { code: "busy", message: "turn t-1 is running", data: { turn: "t-1" } } }],
  });
  await koma.client.create({});
  expect(await runTask(koma.client, "another task")).toBe("Koma is busy with another task: try again later.");
  expect(koma.called("approve")).toBe(false);
});
