// The Windows-only guarantees (docs/windows.md), run by Windows' Node under
// wine (`npm run platforms -- --target windows`, scripts/platforms/wine.mjs),
// or on a Windows machine (the release workflow), through a real koma-sim.exe
// child. Under wine the orchestrator passes, in the environment (elsewhere
// the test makes them itself, below):
//   KOMA_WIN_NPM_PREFIX  a global npm prefix where `npm install -g` put the
//                        package `fake-koma`: its .cmd shims `fake-koma` (a
//                        Node script) and `koma-native` (koma-sim.exe), in a
//                        folder whose name holds `&`, `%PATH%` and `^`
//   KOMA_WIN_WORK        a folder for this run's files
// The hard kill (a SIGKILLed Windows Node) is checked by the orchestrator,
// which sees every Windows process as a Linux one (scripts/platforms/wine.mjs).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { before, test } from "node:test";
import { Client, SIM, alive, rejection, tempHome } from "../helpers.mjs";
import { writeFakeKoma } from "./fake-koma.mjs";

const onWindows = process.platform === "win32";
const skip = onWindows ? false : "Windows only";
let prefix = process.env.KOMA_WIN_NPM_PREFIX;
let work = process.env.KOMA_WIN_WORK;

// On a Windows machine (the release workflow's runner), the shims are
// written here: fake-koma packed and installed with `npm install -g` into a
// prefix whose name holds `&`, `%PATH%` and `^`, by the npm beside this Node.
before(() => {
  if (!onWindows || (prefix && work)) return;
  work = mkdtempSync(join(tmpdir(), "koma-win-"));
  prefix = join(work, "npm & co %PATH% ^x");
  const pkg = join(work, "fake-koma");
  writeFakeKoma(pkg, `${SIM}.exe`);
  const npm = (args, cwd) => {
    const r = spawnSync(process.execPath, [join(dirname(process.execPath), "node_modules", "npm", "bin", "npm-cli.js"), ...args], {
      cwd,
      encoding: "utf8",
    });
    assert.equal(r.status, 0, `npm ${args.join(" ")}: ${r.stderr}${r.stdout}`);
    return r.stdout;
  };
  const tgz = npm(["pack", "--ignore-scripts"], pkg).trim().split("\n").pop();
  npm(["install", "-g", "--offline", "--ignore-scripts", "--no-audit", "--no-fund", `--prefix=${prefix}`, join(pkg, tgz)], work);
});
// What cmd.exe would expand or split, reaching koma untouched.
const DANGER = 'a & b | c %PATH% ^d "quoted" > e';

function client(executable, env = {}) {
  return new Client({ executable, env: { KOMA_SIM_HOME: tempHome(), KOMA_SIM_DELAY_MS: "0", ...env } });
}

async function turn(c) {
  await c.create({});
  const r = await c.run({ text: "hello" }, { onApproval: "deny" });
  assert.equal(r.status, "completed");
}

test("close() ends koma's whole tree through its Job Object, though koma and its tool ignore the end of stdin", { skip }, async () => {
  const c = client(SIM, { KOMA_SIM_FAULT: "spawn_tool,ignore_eof" });
  const hello = await c.probe();
  const tool = hello.diagnostics.find((d) => d.tool_pid)?.tool_pid;
  const koma = c.pid;
  assert.ok(tool > 0 && koma > 0, JSON.stringify(hello.diagnostics));
  assert.ok(alive(tool) && alive(koma));
  await c.close();
  assert.equal(alive(koma), false, "koma is gone when close() resolves");
  assert.equal(alive(tool), false, "its tool is gone when close() resolves");
});

test("an npm shim of a Node script runs the script with the Node the shim would use, no cmd.exe between, the environment untouched", {
  skip,
}, async () => {
  const record = join(work, "fake-koma-record.json");
  // `Path`, not `PATH`: Windows' names are case-insensitive, so it replaces the parent's.
  // This Node's folder on PATH, as an installed Node's is.
  const c = client("fake-koma", {
    Path: `${prefix};${dirname(process.execPath)};${process.env.PATH}`,
    KOMA_DANGER: DANGER,
    FAKE_KOMA_RECORD: record,
    FAKE_KOMA_SIM: SIM,
  });
  await turn(c);
  const pid = c.pid;
  await c.close();
  const seen = JSON.parse(readFileSync(record, "utf8"));
  assert.equal(seen.pid, pid, "the process started is Node running the script (no cmd.exe)");
  assert.equal(seen.ppid, process.pid, "whose parent is this process");
  assert.equal(seen.execPath.toLowerCase(), process.execPath.toLowerCase(), "the Node on PATH, as the shim would use");
  assert.deepEqual(seen.argv.slice(1), [join(prefix, "node_modules", "fake-koma", "cli.js"), "sdk", "serve"]);
  assert.equal(seen.env.KOMA_DANGER, DANGER);
  const paths = Object.keys(seen.env).filter((k) => k.toUpperCase() === "PATH");
  assert.deepEqual(paths, ["Path"], "one PATH variable, spelt as given");
  assert.ok(seen.env.Path.startsWith(`${prefix};`));
});

test("an npm shim of a native program runs that program directly", { skip }, async () => {
  const c = client("koma-native", { Path: `${prefix};${process.env.PATH}` });
  const hello = await c.probe();
  await turn(c);
  assert.equal(hello.diagnostics[0].pid, c.pid, "the process started is koma itself");
  assert.equal(hello.binary.path.toLowerCase(), join(prefix, "node_modules", "fake-koma", "bin", "koma-native.exe").toLowerCase());
  await c.close();
});

test("the shims given by path work the same, and a shim's argument-like path is not split", { skip }, async () => {
  const c = client(join(prefix, "koma-native.cmd"));
  const hello = await c.probe();
  assert.equal(hello.diagnostics[0].pid, c.pid);
  await c.close();
});

test("any other batch file is refused with spawn_failed, saying what to pass instead, and nothing starts", { skip }, async () => {
  const bat = join(work, "koma.bat");
  writeFileSync(bat, `@echo off\r\n"${SIM}.exe" %*\r\n`);
  for (const executable of [bat, "koma"]) {
    const c = client(executable, { Path: work });
    const e = await rejection(c.probe());
    assert.equal(e.code, "spawn_failed", e.message);
    assert.match(e.message, /is a batch file, which only cmd\.exe \(a shell\) can run, and koma is never started through a shell/);
    assert.match(e.message, /set `executable` to the program it runs \(a \.exe\)/);
    assert.equal(c.pid, null);
    await c.close();
  }
});

test("a name is found on PATH with PATHEXT (.exe), and a missing one says so", { skip }, async () => {
  const dir = join(SIM, "..");
  const c = client("koma-sim", { PATH: dir });
  await turn(c);
  await c.close();
  const e = await rejection(client("no-such-koma", { PATH: dir }).probe());
  assert.equal(e.code, "spawn_failed");
  assert.match(e.message, /not found on PATH/);
});

test("an environment name with `=` is refused before anything starts", { skip }, () => {
  assert.throws(() => client(SIM, { "A=B": "1" }), {
    code: "invalid_params",
    message: /the name `A=B` cannot be an environment variable's/,
  });
});

test("koma's exit code is in the error, with its NTSTATUS name", { skip }, async () => {
  const scenario = join(work, "crash.json");
  writeFileSync(
    scenario,
    JSON.stringify({
      turns: [
        {
          steps: [
            { do: "output", text: "x" },
            { do: "crash", signal: "SIGSEGV" },
          ],
        },
      ],
    }),
  );
  const c = client(SIM, { KOMA_SIM_SCENARIO: scenario });
  await c.create({});
  const e = await rejection(c.run({ text: "go" }, { onApproval: "deny" }));
  assert.equal(e.code, "transport_failure");
  assert.match(e.message, /koma exited with code 0xC0000005 \(STATUS_ACCESS_VIOLATION\)/);
  await c.close();
});

test("CRLF from a Windows koma is accepted", { skip }, async () => {
  const c = client(SIM, { KOMA_SIM_FAULT: "crlf" });
  await turn(c);
  await c.close();
});
