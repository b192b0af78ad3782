// Generated from schema/ by scripts/generate.mjs: do not edit.
"use strict";

/** The member that says which step a step is. */
const tag = "do";

/**
 * The steps, as `step`'s functions build them: [function, the tag's value,
 * [member, its argument's index or "options", the default the function gives]].
 * @type {Array<[string, string, Array<[string, number | "options", string?]>]>}
 */
const steps = [
  ["output", "output", [["text", 0]]],
  ["tool", "tool", [["tool", 0], ["input", "options"], ["output", 1], ["error", "options"]]],
  ["approval", "approval", [["tool", 0], ["input", "options"], ["allow", "options"], ["deny", "options"]]],
  ["pause", "pause", [["ms", 0]]],
  ["event", "event", [["name", 0], ["data", 1]]],
  ["finish", "finish", [["status", 0], ["error", 1]]],
  ["exit", "exit", [["code", 0]]],
  ["crash", "crash", [["signal", 0, "SIGKILL"]]],
  ["stopAnswering", "stop_answering", []],
  ["brokenFrame", "broken_frame", [["line", 0]]],
];

module.exports = { tag, steps };
