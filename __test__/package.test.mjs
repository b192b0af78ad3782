// The packages as they are published (laid out and packed by
// scripts/release-lib.mjs, as `npm run release:dry` and the release workflow
// do): the main package and this platform's package install offline in a fresh
// folder and work there (require, import, a strict TypeScript program, the
// examples, the koma-sim command); the main package alone, a bundle, and
// KOMA_SIM_PATH give koma-sim or a clear error; and the checks of a tarball's
// contents catch a package that carries the wrong binaries.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { root, tempHome, SIM, alive } from "./helpers.mjs";
import * as release from "../scripts/release-lib.mjs";

const targets = await release.readTargets();
const host = targets.find((t) => t.triple === release.rustHost());
const platform = release.hostPlatform();

/** A fresh folder, removed when the test ends. */
function workDir(t, prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Pack the main package and this platform's package into `work`. */
async function packBoth(work) {
  const main = release.pack(await release.layoutMain(join(work, "stage", "main")), join(work, "main"));
  const plat = release.pack(release.layoutPlatform(host, join(work, "stage", host.abi)), join(work, host.abi));
  return { main, plat };
}

/** An app folder with the given tarballs installed, offline, from an empty npm cache. */
function install(work, tarballs) {
  const app = join(work, "app");
  mkdirSync(app);
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", version: "1.0.0", private: true, type: "module" }));
  release.npm(["install", "--offline", "--no-package-lock", "--cache", join(work, "npm-cache"), ...tarballs], app);
  return app;
}

function runner(app, extraEnv = {}) {
  const env = { ...process.env, KOMA_SIM_DELAY_MS: "0", KOMA_SIM_HOME: tempHome(), ...extraEnv };
  delete env.KOMA_SIM_PATH;
  Object.assign(env, extraEnv);
  return (args, input, { status = 0 } = {}) => {
    const r = spawnSync(
      args[0] === "bin" ? join(app, "node_modules", ".bin", "koma-sim") : process.execPath,
      args[0] === "bin" ? args.slice(1) : args,
      { cwd: app, env, encoding: "utf8", input },
    );
    assert.equal(r.status, status, `${args.join(" ")}: ${r.stdout}${r.stderr}`);
    return r;
  };
}

test("this machine is one of the napi targets", () => {
  assert.ok(host, `${release.rustHost()} is in package.json's napi.targets`);
  assert.equal(platform, host.abi, "Node here loads the package of the Rust host");
});

test("the published packages install offline in a fresh folder and work there", { timeout: 240000 }, async (t) => {
  const work = workDir(t, "koma-pack-");
  const { main, plat } = await packBoth(work);

  const mainFiles = release
    .readTarball(main)
    .map((e) => e.path)
    .sort();
  assert.deepEqual(mainFiles, ["package.json", ...release.rootManifest().files].sort());
  const platFiles = release
    .readTarball(plat)
    .map((e) => e.path)
    .sort();
  assert.deepEqual(platFiles, ["LICENSE", "README.md", `koma-sdk.${host.abi}.node`, "koma-sim", "package.json"]);
  assert.match(release.checkMain(main, { targets }), /no binary/);
  // The checkout's own build, linked against this machine's glibc: the floor is release:dry's check of the release build.
  assert.match(release.checkPlatform(plat, host, { glibcFloor: false }), /koma-sim \(elf|koma-sim \(macho/);

  const app = install(work, [main, plat]);
  const run = runner(app);
  const pkgDir = realpathSync(join(app, "node_modules", "@koma", `sdk-${host.abi}`));

  writeFileSync(
    join(app, "cjs.cjs"),
    `
    const { Client } = require("@koma/sdk");
    const { simPath } = require("@koma/sdk/sim");
    const c = new Client({ executable: simPath });
    c.probe().then((h) => { console.log(JSON.stringify({ protocol: h.protocol, simPath, path: h.binary.path })); return c.close(); });`,
  );
  const cjs = JSON.parse(run(["cjs.cjs"]).stdout);
  assert.equal(cjs.protocol, 1);
  assert.equal(realpathSync(cjs.simPath), join(pkgDir, "koma-sim"), "simPath is the platform package's koma-sim");

  writeFileSync(
    join(app, "esm.mjs"),
    `
    import { Client } from "@koma/sdk";
    import { simPath } from "@koma/sdk/sim";
    const c = new Client({ executable: simPath });
    console.log((await c.create({})).state.status);
    await c.close();`,
  );
  assert.equal(run(["esm.mjs"]).stdout.trim(), "idle");

  // A strict TypeScript program, module nodenext, await using.
  writeFileSync(
    join(app, "main.ts"),
    `
    import { Client, type EventItem } from "@koma/sdk";
    import { simPath } from "@koma/sdk/sim";
    await using client = new Client({ executable: simPath });
    await client.create({});
    const { turn } = await client.submit({ text: "read it" });
    let pieces = 0;
    for await (const item of client.events() as AsyncIterable<EventItem>) {
      if (item.type === "event" && item.name === "output") pieces += item.data.text.length > 0 ? 1 : 0;
      if (item.type === "event" && item.name === "turn_finished" && item.data.turn === turn) break;
    }
    // @ts-expect-error misspelt param
    void client.submit({ txt: "x" }).catch(() => {});
    console.log(pieces > 0 ? "streamed" : "nothing");
  `,
  );
  writeFileSync(
    join(app, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        module: "nodenext",
        moduleResolution: "nodenext",
        target: "ES2022",
        lib: ["ES2022", "ESNext.Disposable"],
        outDir: "out",
        typeRoots: [join(root, "node_modules", "@types")],
        types: ["node"],
      },
      files: ["main.ts"],
    }),
  );
  const tsc = spawnSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", app], { encoding: "utf8" });
  assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr);
  assert.equal(run(["out/main.js"]).stdout.trim(), "streamed");

  // The examples, copied in as a user would.
  cpSync(join(root, "examples"), join(app, "examples"), { recursive: true });
  assert.match(run(["examples/stream.mjs", "hello"]).stdout, /\[completed\]/);
  assert.match(run(["examples/approve.mjs"], "y\n").stdout, /\(allow\)[\s\S]*\[completed\]/);
  const session = run(["examples/resume.mjs"]).stdout.trim();
  assert.match(run(["examples/resume.mjs", session]).stdout, /resumed .*: idle[\s\S]*turn_finished/);

  // The koma-sim command runs the platform's koma-sim, and ends as it ends.
  assert.match(run(["bin", "--version"]).stdout, /^koma-sim \d/);
  const serve = run(["bin", "sdk", "serve"], "", { status: 0 });
  assert.match(serve.stdout, /"type":"hello"/);
  assert.ok(serve.stdout.includes(JSON.stringify(join(pkgDir, "koma-sim"))), `hello names the platform package's binary: ${serve.stdout}`);
  const usage = spawnSync(SIM, ["--no-such-flag"]).status;
  assert.notEqual(usage, 0);
  run(["bin", "--no-such-flag"], "", { status: usage });
  // A signal to the command reaches koma-sim, which is reaped; the command ends by the same signal.
  const child = spawn(join(app, "node_modules", ".bin", "koma-sim"), ["sdk", "serve"], {
    env: { ...process.env, KOMA_SIM_HOME: tempHome() },
    stdio: ["pipe", "pipe", "ignore"],
  });
  const [hello] = await once(createInterface({ input: child.stdout }), "line");
  const simPid = JSON.parse(hello).diagnostics[0].pid;
  assert.notEqual(simPid, child.pid, "koma-sim runs as a child of the command");
  child.kill("SIGTERM");
  const [, signal] = await once(child, "exit");
  assert.equal(signal, "SIGTERM");
  assert.equal(alive(simPid), false, "koma-sim is gone");

  // KOMA_SIM_PATH wins over the installed copy.
  const over = runner(app, { KOMA_SIM_PATH: SIM });
  assert.equal(over(["-e", `console.log(require("@koma/sdk/sim").simPath)`]).stdout.trim(), SIM);
});

test("without its platform package, @koma/sdk/sim loads and simPath says how to get koma-sim", { timeout: 120000 }, async (t) => {
  const work = workDir(t, "koma-pack-main-");
  const main = release.pack(await release.layoutMain(join(work, "stage", "main")), join(work, "main"));
  // The optional platform packages cannot be fetched offline: npm goes on without them.
  const app = install(work, [main]);
  assert.deepEqual(readdirSync(join(app, "node_modules", "@koma")), ["sdk"]);
  const run = runner(app);

  const r = run([
    "-e",
    `
    const sim = require("@koma/sdk/sim");
    try { console.log("found " + sim.simPath); } catch (err) { console.log(JSON.stringify({ code: err.code, message: err.message })); }`,
  ]);
  const err = JSON.parse(r.stdout);
  assert.equal(err.code, "ERR_KOMA_SIM_NOT_FOUND");
  assert.ok(err.message.includes(`(${platform})`), `names the platform: ${err.message}`);
  assert.ok(err.message.includes(`@koma/sdk-${platform}`), `names the package: ${err.message}`);
  assert.match(err.message, /cargo build --release -p koma-sim/);
  assert.match(err.message, /KOMA_SIM_PATH/);

  const bin = run(["bin", "--version"], "", { status: 1 });
  assert.match(bin.stderr, /ERR_KOMA_SIM_NOT_FOUND|there is no koma-sim for this platform/);

  const over = runner(app, { KOMA_SIM_PATH: SIM });
  assert.equal(over(["-e", `console.log(require("@koma/sdk/sim").simPath)`]).stdout.trim(), SIM);
  assert.match(over(["bin", "--version"]).stdout, /^koma-sim \d/);
  const missing = runner(app, { KOMA_SIM_PATH: join(work, "nothing-here") });
  assert.match(missing(["bin", "--version"], "", { status: 1 }).stderr, /KOMA_SIM_PATH is ".*nothing-here", and there is no such file/);
});

test("simPath in an esbuild bundle: found beside node_modules, else a clear error; KOMA_SIM_PATH points at it", {
  timeout: 120000,
}, async (t) => {
  const { build } = await import("esbuild");
  const work = workDir(t, "koma-pack-bundle-");
  const { main, plat } = await packBoth(work);
  const app = install(work, [main, plat]);
  writeFileSync(
    join(app, "entry.cjs"),
    `
    const sim = require("@koma/sdk/sim");
    try { console.log("found " + sim.simPath); } catch (err) { console.log(err.code + " " + err.message); }`,
  );
  const inApp = join(app, "dist", "bundle.cjs");
  await build({ entryPoints: [join(app, "entry.cjs")], bundle: true, platform: "node", format: "cjs", outfile: inApp, logLevel: "silent" });
  assert.ok(readFileSync(inApp, "utf8").includes("KOMA_SIM_PATH"), "sim.js is in the bundle");

  // Beside the install, the bundle finds the platform package like any require would.
  const run = runner(app);
  const found = run([inApp]).stdout.trim();
  assert.equal(realpathSync(found.replace(/^found /, "")), realpathSync(join(app, "node_modules", "@koma", `sdk-${platform}`, "koma-sim")));

  // Shipped alone, it says what is missing and how to point at koma-sim.
  const alone = join(work, "elsewhere", "bundle.cjs");
  mkdirSync(join(work, "elsewhere"));
  copyFileSync(inApp, alone);
  const lost = runner(join(work, "elsewhere"))([alone]).stdout;
  assert.match(lost, /^ERR_KOMA_SIM_NOT_FOUND .*bundle.*KOMA_SIM_PATH/s);
  assert.equal(runner(join(work, "elsewhere"), { KOMA_SIM_PATH: SIM })([alone]).stdout.trim(), `found ${SIM}`);
});

test("the checks of a tarball catch a package with the wrong contents", { timeout: 120000 }, async (t) => {
  const work = workDir(t, "koma-pack-wrong-");
  // This machine's binaries, laid out as the package of another target.
  const mislabel = (abi) => {
    const target = targets.find((x) => x.abi === abi);
    const dir = join(work, "stage", abi);
    mkdirSync(dir, { recursive: true });
    const manifest = JSON.parse(readFileSync(join(root, "npm", abi, "package.json"), "utf8"));
    manifest.version = release.rootManifest().version;
    writeFileSync(join(dir, "package.json"), JSON.stringify(manifest));
    copyFileSync(join(root, "npm", abi, "README.md"), join(dir, "README.md"));
    copyFileSync(join(root, "LICENSE"), join(dir, "LICENSE"));
    copyFileSync(join(root, `koma-sdk.${host.abi}.node`), join(dir, `koma-sdk.${abi}.node`));
    copyFileSync(join(root, "target", host.triple, "release", "koma-sim"), join(dir, "koma-sim"));
    return { target, tgz: release.pack(dir, join(work, abi)) };
  };
  if (host.libc === "glibc") {
    // The checkout's own build, as its own package: the glibc floor refuses it
    // when it asks for a newer GLIBC_ version than the floor (it is linked
    // against this machine's glibc, not the floor's: 2.34 on Debian 12).
    const own = mislabel(host.abi);
    const asked = release.inspectBinary(readFileSync(join(root, `koma-sdk.${host.abi}.node`))).glibc;
    if (release.compareGlibc(asked, release.GLIBC_FLOOR) > 0)
      assert.throws(
        () => release.checkPlatform(own.tgz, own.target),
        new RegExp(
          `is not for ${host.abi}: it asks for GLIBC_${asked.replace(".", "\\.")}, newer than the floor, glibc ${release.GLIBC_FLOOR.replace(".", "\\.")}`,
        ),
      );
    else assert.match(release.checkPlatform(own.tgz, own.target), /at most \(floor/);
    const musl = mislabel(host.abi.replace(/-gnu$/, "-musl"));
    assert.throws(() => release.checkPlatform(musl.tgz, musl.target), /is not for linux-\w+-musl: C library glibc .*not musl/);
  }
  const other = targets.find((x) => x.arch !== host.arch && x.platform !== host.platform);
  const wrong = mislabel(other.abi);
  assert.throws(
    () => release.checkPlatform(wrong.tgz, wrong.target),
    new RegExp(`is not for ${other.abi}: format \\w+, not \\w+; cpu ${host.arch}, not ${other.arch}`),
  );

  // A main package that carries a binary.
  const mainDir = await release.layoutMain(join(work, "stage", "main"));
  copyFileSync(join(root, `koma-sdk.${host.abi}.node`), join(mainDir, `koma-sdk.${host.abi}.node`));
  const manifest = JSON.parse(readFileSync(join(mainDir, "package.json"), "utf8"));
  manifest.files.push(`koma-sdk.${host.abi}.node`);
  writeFileSync(join(mainDir, "package.json"), JSON.stringify(manifest));
  const bad = release.pack(mainDir, join(work, "main"));
  assert.throws(
    () => release.checkMain(bad, { targets }),
    /carries koma-sdk\..*\.node, which is not in package.json's files|carries a platform binary/,
  );
});

test("without its platform package, @koma/sdk fails with ERR_KOMA_SDK_NO_ADDON, naming the package, its error first", {
  timeout: 60000,
}, (t) => {
  const dir = workDir(t, "koma-no-addon-");
  for (const f of ["index.js", "binding.js", "package.json"]) copyFileSync(join(root, f), join(dir, f));
  const r = spawnSync(
    process.execPath,
    [
      "-e",
      `
    try { require(${JSON.stringify(dir)}); console.log("loaded"); }
    catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message, cause: e.cause && e.cause.message })); }
  `,
    ],
    { encoding: "utf8", env: { ...process.env, NAPI_RS_NATIVE_LIBRARY_PATH: "" } },
  );
  assert.equal(r.status, 0, r.stderr);
  const e = JSON.parse(r.stdout);
  const pkg = `@koma/sdk-${platform}`;
  assert.equal(e.code, "ERR_KOMA_SDK_NO_ADDON");
  assert.ok(e.message.includes(`install ${pkg}`), e.message);
  assert.ok(e.cause.includes(pkg), `the first cause is the platform package's: ${e.cause}`);
  assert.doesNotMatch(e.cause, /wasm32/);
});

test("on a platform the published package has no package for (32-bit Windows), @koma/sdk says it has no addon there, naming no package", {
  timeout: 60000,
}, (t) => {
  // The published package.json names its platform packages in
  // optionalDependencies; this platform's is left out, as win32-ia32's is.
  const dir = workDir(t, "koma-no-platform-");
  for (const f of ["index.js", "binding.js"]) copyFileSync(join(root, f), join(dir, f));
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  manifest.optionalDependencies = { "@koma/sdk-some-other-platform": manifest.version };
  writeFileSync(join(dir, "package.json"), JSON.stringify(manifest));
  const r = spawnSync(
    process.execPath,
    [
      "-e",
      `try { require(${JSON.stringify(dir)}); console.log("loaded"); } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }`,
    ],
    { encoding: "utf8", env: { ...process.env, NAPI_RS_NATIVE_LIBRARY_PATH: "" } },
  );
  assert.equal(r.status, 0, r.stderr);
  const e = JSON.parse(r.stdout);
  assert.equal(e.code, "ERR_KOMA_SDK_NO_ADDON");
  assert.equal(e.message, `@koma/sdk: it has no native addon for ${process.platform}-${process.arch}`);
});

test("index.js evaluated twice in one process (as a test runner that inlines the package does) sets the addon up once", () => {
  const script = `
    const { inspect } = require("node:util");
    const first = require("./index.js");
    const stateBefore = first.Client.prototype.state;
    delete require.cache[require.resolve("./index.js")];
    const second = require("./index.js");
    const client = new second.Client({ executable: ${JSON.stringify(SIM)}, env: { KOMA_SIM_HOME: ${JSON.stringify(tempHome())} } });
    (async () => {
      const state = await client.state().catch((e) => e);
      const err = await client.create({ cwd: 1 }).catch((e) => e);
      await client.close();
      console.log(JSON.stringify({
        same: first.Client === second.Client && first.KomaError === second.KomaError && first.isKomaError === second.isKomaError,
        inspected: inspect(new first.Client({ executable: "x" })),
        wrappedOnce: second.Client.prototype.state === stateBefore,
        state: state.status ?? state.message,
        koma: err instanceof first.KomaError && first.isKomaError(err) && err.code,
      }));
    })();`;
  const run = spawnSync(process.execPath, ["-e", script], { cwd: root, encoding: "utf8", timeout: 60_000 });
  assert.equal(run.status, 0, run.stderr);
  assert.deepEqual(JSON.parse(run.stdout), {
    same: true,
    inspected: "Client { pid: null, phase: 'not_started' }",
    wrappedOnce: true,
    state: "idle",
    koma: "invalid_params",
  });
});
