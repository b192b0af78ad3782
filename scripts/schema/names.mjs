// Names and comments, as every emitter writes them.

export const NOTE = "Generated from schema/ by scripts/generate.mjs: do not edit.";

export const camel = (s) => s.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
export const pascal = (s) => camel(s).replace(/^[a-z]/, (c) => c.toUpperCase());
/** `toolCalls` -> `tool_calls` (a snake_case name stays as it is). */
export const snake = (s) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
export const quote = (s) => JSON.stringify(s);

/** `text` wrapped to `width`, each line starting with `prefix`; blank lines and fenced code kept. */
export function doc(text, prefix, width = 100) {
  const lines = [];
  let fenced = false;
  for (const para of text.split("\n")) {
    if (para.startsWith("```")) fenced = !fenced;
    if (fenced || para.startsWith("```") || para.trim() === "") {
      lines.push((prefix + para).trimEnd());
      continue;
    }
    let line = "";
    for (const word of para.split(/\s+/)) {
      if (line && prefix.length + line.length + 1 + word.length > width) {
        lines.push(prefix + line);
        line = word;
      } else line = line ? `${line} ${word}` : word;
    }
    if (line) lines.push(prefix + line);
  }
  return lines;
}
