// The arrows between source files must point one way. For each Rust crate
// (`<dir>/lib.rs` and the files of its modules) and each folder of JavaScript
// modules, this lists the cycles between files, and, for Rust, every impl
// block that lives outside the file that defines its type.
//
// A Rust file refers to another when it names an item or a module of it: a
// `use` or a path through `crate::`, `super::`, `self::` or a child module's
// name (an item re-exported by a module counts as that module's). A `mod x;`
// declaration is an arrow from the parent to the child, so a child that uses
// an item of its parent's file makes a cycle. Inline `mod m { ... }` blocks
// (tests) belong to their file. A JavaScript file refers to another by a
// relative `import`, `export ... from`, `import()` or `require()`. A Python
// module (of a package: a folder with `__init__.py`, its `.pyi` stubs
// included) refers to another by any `import` or `from ... import` of it,
// relative or by the package's name, wherever it stands: under `if
// TYPE_CHECKING:` and inside a function too (a cycle that only the type
// checker or a late import sees is still a cycle). `from . import name`
// names the module `name` where there is one, else the package's
// `__init__`; importing a module runs its package's `__init__` first, which
// is no arrow.
//
//   node scripts/check-deps.mjs               the project's crates, JS folders and the Python package
//   node scripts/check-deps.mjs DIR...        these: a Rust src dir (holding lib.rs), a Python package
//                                             (holding __init__.py) or a JS folder
//
// Exits 1 when it finds a cycle or a stray impl.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

// ---- Rust

/** Source text with comments, strings and char literals blanked (lines kept). */
function blank(src) {
  let out = "";
  let i = 0;
  const n = src.length;
  const keepNewlines = (s) => s.replace(/[^\n]/g, " ");
  while (i < n) {
    const c = src[i];
    const next = src[i + 1];
    if (c === "/" && next === "/") {
      const end = src.indexOf("\n", i);
      const stop = end < 0 ? n : end;
      out += " ".repeat(stop - i);
      i = stop;
    } else if (c === "/" && next === "*") {
      let depth = 1;
      let j = i + 2;
      while (j < n && depth > 0) {
        if (src[j] === "/" && src[j + 1] === "*") {
          depth++;
          j += 2;
        } else if (src[j] === "*" && src[j + 1] === "/") {
          depth--;
          j += 2;
        } else j++;
      }
      out += keepNewlines(src.slice(i, j));
      i = j;
    } else if ((c === "r" || (c === "b" && next === "r")) && /^b?r#*"/.test(src.slice(i, i + 40)) && !/\w/.test(src[i - 1] ?? "")) {
      const m = /^b?r(#*)"/.exec(src.slice(i));
      const close = `"${m[1]}`;
      const end = src.indexOf(close, i + m[0].length);
      const stop = end < 0 ? n : end + close.length;
      out += '""' + keepNewlines(src.slice(i + 2, stop));
      i = stop;
    } else if (c === '"') {
      let j = i + 1;
      while (j < n && src[j] !== '"') j += src[j] === "\\" ? 2 : 1;
      out += '""' + keepNewlines(src.slice(i + 2, j + 1));
      i = j + 1;
    } else if (c === "'") {
      const m = /^'(\\(x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'])'/u.exec(src.slice(i, i + 16));
      if (m) {
        out += " ".repeat(m[0].length);
        i += m[0].length;
      } else {
        out += c; // a lifetime
        i++;
      }
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** Tokens of blanked source: identifiers, `::`, punctuation; each with its line. */
function tokens(text) {
  const out = [];
  const re = /[A-Za-z_][A-Za-z0-9_]*|::|[{}();,*<>#\[\]=!&]|\S/g;
  let line = 1;
  let last = 0;
  for (let m; (m = re.exec(text)); ) {
    for (let k = last; k < m.index; k++) if (text[k] === "\n") line++;
    last = m.index;
    out.push({ t: m[0], line });
  }
  return out;
}

/** The module tree of a crate: file modules (lib.rs, x.rs, x/mod.rs, x/y.rs), by path. */
function crateFiles(srcDir) {
  const modules = new Map(); // "a::b" -> file ("" is the crate root)
  const visit = (modPath, file) => {
    modules.set(modPath, file);
    const text = blank(readFileSync(file, "utf8"));
    const own = file.endsWith("lib.rs") || file.endsWith("mod.rs") || file.endsWith("main.rs") ? dirname(file) : file.slice(0, -3);
    const pathAttr = /#\[path\s*=\s*"([^"]*)"\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;/g;
    const raw = readFileSync(file, "utf8");
    const explicit = new Map();
    for (let m; (m = pathAttr.exec(raw)); ) explicit.set(m[2], resolve(dirname(file), m[1]));
    for (const m of text.matchAll(/(?:^|[\s;}])(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;/g)) {
      const name = m[1];
      const candidates = explicit.has(name) ? [explicit.get(name)] : [join(own, `${name}.rs`), join(own, name, "mod.rs")];
      const child = candidates.find((f) => existsSync(f));
      if (child) visit(modPath ? `${modPath}::${name}` : name, child);
    }
  };
  visit(
    "",
    ["lib.rs", "main.rs"].map((f) => join(srcDir, f)).find((f) => existsSync(f)),
  );
  return modules;
}

/** Expand a `use` tree starting at token index `i` (after `use`); returns [paths, next index]. */
function useTree(toks, i, prefix) {
  const paths = [];
  let path = [...prefix];
  while (i < toks.length) {
    const t = toks[i].t;
    if (t === "{") {
      i++;
      for (;;) {
        const [sub, j] = useTree(toks, i, path);
        paths.push(...sub);
        i = j;
        if (toks[i]?.t === ",") i++;
        if (toks[i]?.t === "}") {
          i++;
          break;
        }
        if (i >= toks.length) break;
      }
      return [paths, i];
    }
    if (t === "*") {
      paths.push([...path, "*"]);
      return [paths, i + 1];
    }
    if (t === "::") {
      i++;
      continue;
    }
    if (t === "as") {
      i += 2;
      continue;
    }
    if (t === "," || t === "}" || t === ";") {
      if (path.length > prefix.length) paths.push(path);
      return [paths, i];
    }
    if (/^[A-Za-z_]/.test(t)) path.push(t);
    i++;
  }
  return [paths, i];
}

function checkCrate(srcDir) {
  const modules = crateFiles(srcDir);
  const files = [...new Set(modules.values())];
  const modOfFile = new Map([...modules].map(([m, f]) => [f, m]));
  const problems = [];
  const edges = new Map(files.map((f) => [f, new Map()])); // from -> to -> [line...]
  const defs = new Map(); // type name -> Set(file)
  const impls = []; // {file, line, name}
  const addEdge = (from, to, line, what) => {
    if (from === to) return;
    const m = edges.get(from);
    if (!m.has(to)) m.set(to, []);
    m.get(to).push(`${line}: ${what}`);
  };

  for (const file of files) {
    const fileMod = modOfFile.get(file);
    const toks = tokens(blank(readFileSync(file, "utf8")));
    // Inline modules: a stack of [name, depth at which its block opened].
    const inline = [];
    let depth = 0;
    const childModsOf = new Map(); // module path -> Set(child names declared)
    const here = () => [fileMod, ...inline.map((x) => x[0])].filter(Boolean).join("::");
    // A module path (segments) -> the file it lives in, or undefined.
    const known = (segs) => {
      const p = segs.join("::");
      if (modules.has(p)) return modules.get(p);
      return undefined;
    };
    const inlineMods = new Set();
    // Resolve a path (segments as written) from module `at`; returns the file it names.
    const target = (segs, at) => {
      let base;
      let rest;
      const atSegs = at ? at.split("::") : [];
      if (segs[0] === "crate") {
        base = [];
        rest = segs.slice(1);
      } else if (segs[0] === "self") {
        base = atSegs;
        rest = segs.slice(1);
      } else if (segs[0] === "super") {
        base = atSegs;
        rest = segs;
        while (rest[0] === "super") {
          base = base.slice(0, -1);
          rest = rest.slice(1);
        }
        if (rest[0] === "self") rest = rest.slice(1);
      } else {
        const kids = childModsOf.get(at);
        if (!kids || !kids.has(segs[0])) return undefined; // an extern crate or a local name
        base = atSegs;
        rest = segs;
      }
      let mod = base;
      for (const s of rest) {
        const next = [...mod, s];
        const p = next.join("::");
        if (modules.has(p) || inlineMods.has(p)) mod = next;
        else break;
      }
      // An inline module lives in the file of its nearest file module.
      let m = mod;
      while (m.length && !modules.has(m.join("::"))) m = m.slice(0, -1);
      return known(m) ?? modules.get("");
    };
    for (let i = 0; i < toks.length; i++) {
      const t = toks[i].t;
      const line = toks[i].line;
      if (t === "{") depth++;
      else if (t === "}") {
        depth--;
        if (inline.length && inline[inline.length - 1][1] === depth) inline.pop();
      } else if (t === "mod" && /^\w+$/.test(toks[i + 1]?.t ?? "")) {
        const name = toks[i + 1].t;
        const at = here();
        if (!childModsOf.has(at)) childModsOf.set(at, new Set());
        childModsOf.get(at).add(name);
        const full = at ? `${at}::${name}` : name;
        if (toks[i + 2]?.t === "{") {
          inlineMods.add(full);
          inline.push([name, depth]);
          depth++;
          i += 2;
        } else if (toks[i + 2]?.t === ";" && modules.has(full)) {
          addEdge(file, modules.get(full), line, `mod ${name}`);
          i += 2;
        }
      } else if (t === "use") {
        const [paths, j] = useTree(toks, i + 1, []);
        for (const p of paths) {
          const segs = p.filter((s) => s !== "*");
          const to = target(segs, here());
          if (to) addEdge(file, to, line, `use ${p.join("::")}`);
        }
        i = j;
      } else if (
        toks[i + 1]?.t === "::" &&
        toks[i - 1]?.t !== "::" &&
        // A path from the crate, a parent or this module (not a macro's `$crate`), or through a child module.
        (((t === "crate" || t === "super" || t === "self") && toks[i - 1]?.t !== "$") ||
          (/^\w+$/.test(t) && childModsOf.get(here())?.has(t)))
      ) {
        const segs = [t];
        let j = i + 1;
        while (toks[j]?.t === "::" && /^\w+$/.test(toks[j + 1]?.t ?? "")) {
          segs.push(toks[j + 1].t);
          j += 2;
        }
        const to = target(segs, here());
        if (to) addEdge(file, to, line, segs.join("::"));
        i = j - 1;
      } else if (/^(struct|enum|union|trait)$/.test(t) && /^[A-Z]\w*$/.test(toks[i + 1]?.t ?? "")) {
        const name = toks[i + 1].t;
        if (!defs.has(name)) defs.set(name, new Set());
        defs.get(name).add(file);
      } else if (t === "impl" && toks[i - 1]?.t !== "->" && toks[i - 1]?.t !== ":" && toks[i - 1]?.t !== "(" && toks[i - 1]?.t !== ",") {
        // impl<...> [Trait<...> for] Type<...> {
        let j = i + 1;
        const skipGenerics = () => {
          if (toks[j]?.t !== "<") return;
          let d = 0;
          do {
            if (toks[j].t === "<") d++;
            else if (toks[j].t === ">") d--;
            j++;
          } while (j < toks.length && d > 0);
        };
        skipGenerics();
        let name;
        let k = j;
        let sawFor = false;
        for (; k < toks.length && toks[k].t !== "{" && toks[k].t !== ";"; k++) {
          if (toks[k].t === "for") sawFor = true;
        }
        // The self type: the last path before `{` (after `for` if there is one), without generics.
        let start = j;
        if (sawFor) for (let q = j; q < k; q++) if (toks[q].t === "for") start = q + 1;
        let d = 0;
        for (let q = start; q < k; q++) {
          const tq = toks[q].t;
          if (tq === "<") d++;
          else if (tq === ">") d--;
          else if (tq === "where" && d === 0) break;
          else if (d === 0 && /^[A-Z]\w*$/.test(tq)) name = tq;
        }
        if (name) impls.push({ file, line, name });
      }
    }
  }

  for (const { file, line, name } of impls) {
    const where = defs.get(name);
    if (where && where.size === 1 && !where.has(file)) {
      const [def] = where;
      problems.push(`${rel(file)}:${line}: impl of \`${name}\`, which ${rel(def)} defines (a type's impl blocks live with it)`);
    }
  }
  problems.push(...cycles(edges));
  return problems;
}

// ---- JavaScript

function jsFiles(dir) {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === "node_modules" || e.name.startsWith(".")) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...jsFiles(p));
    else if (/\.(m?js|cjs)$/.test(e.name)) out.push(p);
  }
  return out;
}

function checkJs(dir) {
  const files = jsFiles(dir);
  const edges = new Map(files.map((f) => [f, new Map()]));
  const resolveSpec = (from, spec) => {
    const base = resolve(dirname(from), spec);
    for (const c of [base, `${base}.mjs`, `${base}.js`, `${base}.cjs`, join(base, "index.js"), join(base, "index.mjs")]) {
      if (existsSync(c) && statSync(c).isFile()) return c;
    }
    return undefined;
  };
  const re =
    /(?:\bimport\s[^;]*?\sfrom\s*|\bexport\s[^;]*?\sfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire\s*\(\s*)["'](\.{1,2}\/[^"']+)["']/g;
  for (const f of files) {
    const text = readFileSync(f, "utf8");
    for (const m of text.matchAll(re)) {
      const to = resolveSpec(f, m[1]);
      if (!to || to === f) continue;
      if (!edges.has(to)) edges.set(to, new Map());
      const line = text.slice(0, m.index).split("\n").length;
      const mm = edges.get(f);
      if (!mm.has(to)) mm.set(to, []);
      mm.get(to).push(`${line}: ${m[1]}`);
    }
  }
  return cycles(edges);
}

// ---- Python

/** Python source with comments and string literals blanked (lines kept). */
function blankPython(src) {
  let out = "";
  let i = 0;
  const n = src.length;
  const keepNewlines = (s) => s.replace(/[^\n]/g, " ");
  while (i < n) {
    const c = src[i];
    if (c === "#") {
      const end = src.indexOf("\n", i);
      const stop = end < 0 ? n : end;
      out += " ".repeat(stop - i);
      i = stop;
    } else if (c === '"' || c === "'") {
      const triple = src.startsWith(c.repeat(3), i);
      const close = triple ? c.repeat(3) : c;
      let j = i + close.length;
      while (j < n && !src.startsWith(close, j) && (triple || src[j] !== "\n")) j += src[j] === "\\" ? 2 : 1;
      j = Math.min(n, j + close.length);
      out += '""' + keepNewlines(src.slice(i + 2, j));
      i = j;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

function pyFiles(dir) {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name.startsWith(".") || e.name === "__pycache__") continue;
    const p = join(dir, e.name);
    if (e.isDirectory() && existsSync(join(p, "__init__.py"))) out.push(...pyFiles(p));
    else if (/\.pyi?$/.test(e.name)) out.push(p);
  }
  return out;
}

function checkPython(dir) {
  const pkg = dir.split(/[\\/]/).pop();
  const files = pyFiles(dir);
  // A module's dotted name (`pkg.sub.mod`; a package is its `__init__`) -> its file.
  const nameOf = (f) => {
    const parts = relative(dir, f)
      .replace(/\.pyi?$/, "")
      .split(/[\\/]/);
    if (parts[parts.length - 1] === "__init__") parts.pop();
    return [pkg, ...parts].join(".");
  };
  const byName = new Map(files.map((f) => [nameOf(f), f]));
  const edges = new Map(files.map((f) => [f, new Map()]));
  const add = (from, name, line, what) => {
    // The module itself, else the nearest package that holds the name.
    let to;
    for (let m = name; m && !to; m = m.includes(".") ? m.slice(0, m.lastIndexOf(".")) : "") to = byName.get(m);
    if (!to || to === from) return;
    const mm = edges.get(from);
    if (!mm.has(to)) mm.set(to, []);
    mm.get(to).push(`${line}: ${what}`);
  };
  for (const f of files) {
    const text = blankPython(readFileSync(f, "utf8"));
    const self = nameOf(f);
    const isPackage = /__init__\.pyi?$/.test(f);
    const lineAt = (i) => text.slice(0, i).split("\n").length;
    // `from X import names` (names possibly in parentheses over several lines), and `import a, b as c`.
    for (const m of text.matchAll(/^[ \t]*from[ \t]+([.\w]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n;]*)/gm)) {
      let base = m[1];
      const dots = /^\.*/.exec(base)[0].length;
      if (dots > 0) {
        const here = self.split(".");
        const parent = isPackage ? here : here.slice(0, -1);
        base = [...parent.slice(0, parent.length - (dots - 1)), ...(base.slice(dots) ? [base.slice(dots)] : [])].join(".");
      }
      if (base !== pkg && !base.startsWith(`${pkg}.`)) continue;
      const names = m[2]
        .replace(/[()]/g, " ")
        .split(",")
        .map((s) => s.trim().split(/\s+/)[0])
        .filter(Boolean);
      for (const name of names) {
        const sub = `${base}.${name}`;
        add(f, byName.has(sub) ? sub : base, lineAt(m.index), `from ${m[1]} import ${name}`);
      }
    }
    for (const m of text.matchAll(/^[ \t]*import[ \t]+([^\n;]*)/gm)) {
      for (const part of m[1].split(",")) {
        const name = part.trim().split(/\s+/)[0];
        if (name === pkg || name?.startsWith(`${pkg}.`)) add(f, name, lineAt(m.index), `import ${name}`);
      }
    }
  }
  return cycles(edges);
}

// ---- cycles (Tarjan's strongly connected components)

function cycles(edges) {
  let index = 0;
  const idx = new Map();
  const low = new Map();
  const stack = [];
  const on = new Set();
  const out = [];
  const strong = (v) => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    on.add(v);
    for (const w of edges.get(v)?.keys() ?? []) {
      if (!idx.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const scc = [];
      let w;
      do {
        w = stack.pop();
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) {
        const set = new Set(scc);
        const lines = [`a cycle between ${scc.length} files: ${scc.map(rel).sort().join(", ")}`];
        for (const a of [...scc].sort()) {
          for (const [b, refs] of edges.get(a) ?? []) {
            if (set.has(b))
              lines.push(`    ${rel(a)} -> ${rel(b)} (line ${refs.slice(0, 3).join("; line ")}${refs.length > 3 ? "; ..." : ""})`);
          }
        }
        out.push(lines.join("\n"));
      }
    }
  };
  for (const v of edges.keys()) if (!idx.has(v)) strong(v);
  return out;
}

const rel = (f) => relative(process.cwd(), f) || ".";

// ---- main

const args = process.argv.slice(2);
const defaults = () =>
  [
    "src",
    "lib",
    ...readdirSync(join(root, "crates")).map((c) => join("crates", c, "src")),
    "python/src",
    "python/koma_sdk",
    "scripts",
    "bench",
    "__test__",
    "examples",
    "python/tests",
  ].filter((d) => existsSync(join(root, d)));
let found = 0;
for (const dir of args.length ? args.map((d) => resolve(d)) : defaults().map((d) => join(root, d))) {
  const isCrate = existsSync(join(dir, "lib.rs")) || existsSync(join(dir, "main.rs"));
  const isPackage = existsSync(join(dir, "__init__.py"));
  const problems = isCrate ? checkCrate(dir) : isPackage ? checkPython(dir) : checkJs(dir);
  for (const p of problems) console.log(`${rel(dir)}: ${p}`);
  found += problems.length;
}
if (found > 0) {
  console.log(`\n${found} problem(s): see the top of scripts/check-deps.mjs for the rules`);
  process.exit(1);
}
console.log("no cycles between files, and every impl block lives with its type");
