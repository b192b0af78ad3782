// The formatters of the generated text: rustfmt for Rust (the toolchain's,
// with rustfmt.toml), and ruff for Python, ruff itself in its WebAssembly
// build (@astral-sh/ruff-wasm-nodejs, a devDependency) with the settings of
// python/pyproject.toml, so that `ruff format --check` of python/dev.py test
// agrees. Its version must be the one python/dev.py pins.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";

const require = createRequire(import.meta.url);

/** `text` as rustfmt writes it, with the project's settings. */
export function rustfmt(root, text) {
  const dir = mkdtempSync(join(tmpdir(), "koma-generate-"));
  try {
    const file = join(dir, "generated.rs");
    writeFileSync(file, text);
    execFileSync("rustfmt", ["--edition", "2021", "--config-path", join(root, "rustfmt.toml"), file]);
    return readFileSync(file, "utf8");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

let workspace;

/** `text` as `ruff format` writes it in python/. */
export function ruffFormat(root, text) {
  if (!workspace) {
    const { Workspace } = require("@astral-sh/ruff-wasm-nodejs");
    const pins = readFileSync(join(root, "python", "dev.py"), "utf8");
    const pinned = /"ruff==([\d.]+)"/.exec(pins)?.[1];
    if (pinned !== Workspace.version()) {
      throw new Error(
        `python/dev.py pins ruff ${pinned}, but @astral-sh/ruff-wasm-nodejs is ${Workspace.version()}: make them the same version`,
      );
    }
    const project = readFileSync(join(root, "python", "pyproject.toml"), "utf8");
    const section = /\[tool\.ruff\]([\s\S]*?)(\n\[|$)/.exec(project)?.[1] ?? "";
    const setting = (name) => new RegExp(`^${name}\\s*=\\s*"?([\\w.]+)"?`, "m").exec(section)?.[1];
    workspace = new Workspace({ "line-length": Number(setting("line-length")), "target-version": setting("target-version") }, 0);
  }
  return workspace.format(text);
}
