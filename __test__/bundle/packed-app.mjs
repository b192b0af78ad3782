// A fresh application folder with @koma/sdk installed as it is published:
// the main package from `npm pack` of this repository, and this platform's
// package (the addon and koma-sim), laid out and packed as `npm run
// release:dry` does, both installed offline; and app.mjs copied in. Used by the bundler tests under Node (bundlers.test.mjs) and Bun
// (bun-compile.mjs).
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { hostPlatform, layoutPlatform, npmCommand, pack, rustHost } from "../../scripts/release-lib.mjs";

const here = dirname(fileURLToPath(import.meta.url));
export const root = join(here, "..", "..");
export const SIM = join(root, "bin", "koma-sim");
export const NODE_FILE = "koma-sdk.linux-x64-gnu.node";

function npm(args, cwd) {
  const r = spawnSync(...npmCommand(args), {
    cwd,
    encoding: "utf8",
    env: { ...process.env, npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false" },
  });
  if (r.status !== 0) throw new Error(`npm ${args.join(" ")} failed (${r.status ?? r.error}): ${r.stderr}`);
  return r.stdout;
}

/**
 * Make the folder; returns { work (remove it when done), app, packageDir,
 * addonDir (the platform package, with the .node file) }.
 */
export function packedApp() {
  const work = mkdtempSync(join(tmpdir(), "koma-bundle-"));
  const [{ filename }] = JSON.parse(npm(["pack", "--json", "--ignore-scripts", "--pack-destination", work], root));
  const abi = hostPlatform();
  const platform = pack(layoutPlatform({ abi, triple: rustHost(), platform: process.platform }, join(work, "stage", abi)), join(work, abi));
  const app = join(work, "app");
  mkdirSync(app);
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", version: "1.0.0", private: true, type: "module" }));
  npm(["install", "--offline", "--no-package-lock", "--ignore-scripts", join(work, filename), platform], app);
  copyFileSync(join(here, "app.mjs"), join(app, "app.mjs"));
  const scope = join(app, "node_modules", "@koma");
  return { work, app, packageDir: join(scope, "sdk"), addonDir: join(scope, `sdk-${abi}`) };
}

/** A new empty folder under `work`, with no node_modules on the way up to it (outside the app). */
export function elsewhere(work, name) {
  const dir = join(work, name);
  mkdirSync(dir);
  return dir;
}
