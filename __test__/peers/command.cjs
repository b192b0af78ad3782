// A peer written in JavaScript as the client's `executable`. On Unix it is
// the script itself (its `#!/usr/bin/env node` line). Windows runs no script
// as a program, so there it is an npm shim of the script, as `npm install -g`
// writes one (cmd-shim's format), beside it: the client reads the shim and
// runs the script with `node` from PATH (docs/windows.md, "Batch files").
const { existsSync, readFileSync, renameSync, writeFileSync } = require("node:fs");

const shim = (script) =>
  [
    "@ECHO off",
    "GOTO start",
    ":find_dp0",
    "SET dp0=%~dp0",
    "EXIT /b",
    ":start",
    "SETLOCAL",
    "CALL :find_dp0",
    "",
    'IF EXIST "%dp0%\\node.exe" (',
    '  SET "_prog=%dp0%\\node.exe"',
    ") ELSE (",
    '  SET "_prog=node"',
    "  SET PATHEXT=%PATHEXT:;.JS;=;%",
    ")",
    "",
    `endLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & "%_prog%"  "%dp0%\\${script}" %*`,
    "",
  ].join("\r\n");

/** The executable that runs the peer script `file` (an absolute path). */
function peerCommand(file) {
  if (process.platform !== "win32") return file;
  const at = Math.max(file.lastIndexOf("\\"), file.lastIndexOf("/"));
  const cmd = `${file.replace(/\.[cm]?js$/, "")}.cmd`;
  const text = shim(file.slice(at + 1));
  if (existsSync(cmd) && readFileSync(cmd, "utf8") === text) return cmd;
  // Whole or not at all: test files running at once may write it together.
  writeFileSync(`${cmd}.${process.pid}.tmp`, text);
  try {
    renameSync(`${cmd}.${process.pid}.tmp`, cmd);
  } catch (e) {
    if (!existsSync(cmd)) throw e;
  }
  return cmd;
}

module.exports = { peerCommand };
