// A staged copy of this checkout for another platform's runtime: the
// repository's tracked files, a git repository of its own listing the same
// files (the docs' tests ask git), this checkout's node_modules linked, and
// the target's binaries where a checkout keeps its own.
import { cpSync, existsSync, mkdirSync, rmSync, symlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import { root } from "../lib/repo.mjs";
import * as tools from "./tools.mjs";

/**
 * Stage into `dir` (emptied first); `binaries` maps a path in the copy to
 * the file to put there (a missing source is left out). Returns `dir`.
 * @param {string} dir
 * @param {Record<string, string | null | undefined>} binaries
 */
export function stageRepo(dir, binaries) {
  rmSync(dir, { recursive: true, force: true });
  const files = tools.out("git", ["ls-files", "-z"], { cwd: root }).split("\0").filter(Boolean);
  for (const f of files) if (existsSync(join(root, f))) cpSync(join(root, f), join(dir, f));
  tools.out("git", ["init", "-q"], { cwd: dir });
  tools.out("git", ["add", "--pathspec-from-file=-", "--pathspec-file-nul"], {
    cwd: dir,
    input: files.filter((f) => existsSync(join(dir, f))).join("\0"),
  });
  symlinkSync(join(root, "node_modules"), join(dir, "node_modules"));
  for (const [to, from] of Object.entries(binaries)) {
    if (!from) continue;
    mkdirSync(dirname(join(dir, to)), { recursive: true });
    cpSync(from, join(dir, to));
  }
  return dir;
}
