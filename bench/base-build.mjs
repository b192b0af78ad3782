// The "base" of a base-against-new benchmark (bench/turns.mjs): the package
// as built from another git commit, loaded beside the working tree's build in
// the same process.
//
// The commit's files are exported (`git archive`, no checkout and no
// worktree to clean up) into target/bench-base/<commit>/, and its addon is
// built there with cargo as scripts/build.mjs's napi build does it (release,
// this machine's target, no features), into one cargo target dir shared by
// every base (target/bench-base/target: the dependencies are built once).
// The addon is copied beside the export's index.js and binding.js, which
// then load it as they load a local build: the turn layer's JavaScript is
// compiled into the addon (include_str!), so that directory is the whole
// package of that commit. A finished build is reused (its stamp file).
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { root, run, rustHost } from "../scripts/lib/repo.mjs";

export const BASE_DIR = join(root, "target", "bench-base");

const git = (...args) => {
  const r = spawnSync("git", ["-C", root, ...args], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")}: ${(r.stderr || r.error?.message || "").trim()}`);
  return r.stdout.trim();
};

/** The commit `spec` names (default: the merge-base of HEAD with main), as a full hash and a short one. */
export function resolveBase(spec) {
  const sha = spec ? git("rev-parse", "--verify", `${spec}^{commit}`) : git("merge-base", "HEAD", "main");
  return { sha, short: sha.slice(0, 7) };
}

/** What this checkout is: its commit, and whether src/, crates/ or the lock differ from it. */
export function describeNew() {
  try {
    const sha = git("rev-parse", "--short", "HEAD");
    const dirty = git("status", "--porcelain", "--untracked-files=no", "--", "src", "crates", "Cargo.toml", "Cargo.lock", "python");
    return `${sha}${dirty ? " + uncommitted changes" : ""}`;
  } catch {
    return "not a checkout";
  }
}

/** The file name of this checkout's addon (what binding.js loads first), e.g. koma-sdk.linux-x64-gnu.node. */
function addonName() {
  const name = readdirSync(root).find((f) => /^koma-sdk\.[\w-]+\.node$/.test(f) && !f.includes("testing"));
  if (!name) throw new Error("no addon in the checkout: run `node scripts/build.mjs` first");
  return name;
}

/** The commit's files in target/bench-base/<sha>/ (exported once). */
export function exportCommit(sha) {
  const dir = join(BASE_DIR, sha);
  if (existsSync(join(dir, ".exported"))) return dir;
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  run("sh", ["-c", 'git -C "$0" archive --format=tar "$1" | tar -x -C "$2"', root, sha, tmp]);
  writeFileSync(join(tmp, ".exported"), `${sha}\n`);
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return dir;
}

/**
 * The base's index.js, its addon built first if it is not there yet (a
 * release build: minutes on a small machine, the first time).
 */
export function buildBaseAddon(sha) {
  const dir = exportCommit(sha);
  const name = addonName();
  const stamp = join(dir, ".addon-built");
  if (!existsSync(stamp)) {
    const host = rustHost();
    const targetDir = join(BASE_DIR, "target");
    console.log(`building the base addon of ${sha.slice(0, 7)} in ${dir} (cargo target dir ${targetDir})`);
    run("cargo", ["build", "--release", "--locked", "-p", "koma-sdk-node", "--target", host, "--target-dir", targetDir], {
      cwd: dir,
    });
    const lib = process.platform === "darwin" ? "libkoma_sdk_node.dylib" : "libkoma_sdk_node.so";
    copyFileSync(join(targetDir, host, "release", lib), join(dir, name));
    writeFileSync(stamp, `${name}\n`);
  }
  return join(dir, "index.js");
}
