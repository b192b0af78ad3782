// The code blocks of the user docs (README.md, python/README.md, docs/*.md),
// each with the marker that says what it is: an HTML comment on the line
// before its fence, `<!-- test: WHAT -->`. __test__/docs/blocks.test.mjs
// runs the Node ones, python/tests/test_docs.py the Python ones (it reads the
// blocks with its own few lines, by the same rules). CONTRIBUTING.md, "The
// docs' code blocks", lists the markers.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

/** The pages whose blocks are tested, relative to the root. */
export function pages(root) {
  const docs = readdirSync(join(root, "docs"))
    .filter((f) => f.endsWith(".md"))
    .sort()
    .map((f) => `docs/${f}`);
  return ["README.md", "python/README.md", ...docs];
}

/**
 * The fenced blocks of a page, in order: `{file, line, lang, info, body,
 * marker}`, where `marker` is the text after `test:` of the comment just
 * before the fence (null when there is none) and `body` is dedented as far
 * as its fence is (a block in a list item).
 */
export function blocks(root, file) {
  const lines = readFileSync(join(root, file), "utf8").split("\n");
  const out = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^( *)```(\w*)(.*)$/.exec(lines[i]);
    if (!open) continue;
    const [, indent, lang, info] = open;
    const body = [];
    let j = i + 1;
    for (; j < lines.length && !new RegExp(`^ {0,${indent.length}}\`\`\`\\s*$`).test(lines[j]); j++)
      body.push(lines[j].slice(Math.min(indent.length, lines[j].length - lines[j].trimStart().length)));
    if (j === lines.length) throw new Error(`${file}:${i + 1}: a fence that is never closed`);
    // The marker: a comment ending on the line before the fence (it may span lines).
    let marker = null;
    if (i > 0 && /-->\s*$/.test(lines[i - 1])) {
      let k = i - 1;
      while (k > 0 && !lines[k].includes("<!--")) k--;
      const comment = lines
        .slice(k, i)
        .map((l) => l.trim())
        .join("\n");
      const m = /^<!--\s*test:\s*([\s\S]*?)\s*-->$/.exec(comment);
      if (m) marker = m[1];
    }
    out.push({ file, line: i + 1, lang, info: info.trim(), body: body.length ? `${body.join("\n")}\n` : "", marker });
    i = j;
  }
  return out;
}

/** Every page's blocks. */
export function allBlocks(root) {
  return pages(root).flatMap((f) => blocks(root, f));
}

/** The marker's kind (its first word, `not run` as one) and the rest. */
export function parseMarker(marker) {
  if (marker === null) return { kind: null, rest: "" };
  const m =
    /^(not run|part of|run|save|output|printed|spans|picture|file|shell|scenario|json|messages of|message of)\b:?\s*([\s\S]*)$/.exec(
      marker,
    );
  return m ? { kind: m[1], rest: m[2].trim() } : { kind: "unknown", rest: marker };
}

/**
 * Which suite runs a block: "python" (python/tests/test_docs.py) or "node"
 * (__test__/docs/blocks.test.mjs). A Python block, a shell block marked
 * `python`, a picture drawn by a .py script, and the output or spans of a
 * Python program are Python's; the rest are Node's.
 */
export function ownerOf(block, previousProgram) {
  const { kind, rest } = parseMarker(block.marker);
  if (block.lang === "python") return "python";
  if (kind === "messages of" || kind === "message of") return /python/.test(block.file) ? "python" : "node";
  if (kind === "shell") return /^python\b/.test(rest) ? "python" : "node";
  if (kind === "picture") return rest.endsWith(".py") ? "python" : "node";
  if (kind === "output" || kind === "printed" || kind === "spans") return previousProgram?.lang === "python" ? "python" : "node";
  return "node";
}
