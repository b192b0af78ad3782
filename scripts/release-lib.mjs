// The pieces of a release, shared by scripts/release-dry.mjs (and so by the
// release workflow, which runs it on every runner) and __test__/package.test.mjs:
// lay out the main package and a per-platform package, pack them, check what a
// tarball holds (reading the tarball itself: names, modes, and the headers of
// its binaries), and install tarballs offline into an empty folder and run a
// turn there.
//
// Everything here uses Node's built-ins and npm only (the release runs on
// every Node the package supports, 20.4 included, and `--install` in a bare
// Node container).
import { execFile, execFileSync, spawnSync } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, relative, sep } from "node:path";
import { gunzipSync } from "node:zlib";
import { isSystemLibrary, readMachO } from "./lib/macho.mjs";
import { isSystemDll, readPE } from "./lib/pe.mjs";
import { serve } from "./lib/registry.mjs";
import { root } from "./lib/repo.mjs";

export { root, rustHost } from "./lib/repo.mjs";
/**
 * The minimum macOS of the macOS builds (MACOSX_DEPLOYMENT_TARGET when they
 * are linked): Big Sur, the first with arm64. The Mach-O files must say so,
 * and the macOS wheels' platform tag too (docs/platforms.md).
 */
export const MACOS_MIN = "11.0";
/**
 * The oldest glibc the Linux glibc builds run on: Node 20's own floor
 * (Ubuntu 20.04, Debian 10 and 11, RHEL 8). They are linked against it by
 * zig (scripts/platforms/targets.mjs); every ELF file must ask for no newer
 * `GLIBC_` symbol version, and the glibc wheels are `manylinux_2_28`
 * (docs/platforms.md).
 */
export const GLIBC_FLOOR = "2.28";

/** -1, 0 or 1 as glibc version `a` is older, the same or newer than `b` ("2.28"). */
export function compareGlibc(a, b) {
  const [x, y] = [a, b].map((v) => v.split(".").map(Number));
  for (let i = 0; i < Math.max(x.length, y.length); i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) < (y[i] ?? 0) ? -1 : 1;
  return 0;
}

export const rootManifest = () => JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

/**
 * A Rust target triple in napi-rs's names (what `parseTriple` of @napi-rs/cli
 * gives, which needs a newer Node than this package supports): cpu, os, and
 * the C library or ABI where the triple names one.
 */
export function parseTriple(triple) {
  const parts = triple.split("-");
  const cpus = { x86_64: "x64", aarch64: "arm64", i686: "ia32", armv7: "arm", riscv64gc: "riscv64", powerpc64le: "ppc64", s390x: "s390x" };
  const arch = cpus[parts[0]];
  const system = parts[2];
  const platform = { linux: "linux", darwin: "darwin", windows: "win32", freebsd: "freebsd", android: "android" }[system];
  if (!arch || !platform) throw new Error(`a target this script does not know: ${triple}`);
  const abi = parts[3] === "gnu" || parts[3] === "musl" || parts[3] === "msvc" || parts[3] === "gnueabihf" ? parts[3] : null;
  return { triple, platformArchABI: [platform, arch, abi].filter(Boolean).join("-"), platform, arch, abi };
}

/** The napi targets of package.json, each with napi-rs's own names for it. */
export async function readTargets() {
  const { napi } = rootManifest();
  return napi.targets.map((triple) => {
    const t = parseTriple(triple);
    const libc = t.platform === "linux" ? (t.abi === "musl" ? "musl" : "glibc") : null;
    return { triple, abi: t.platformArchABI, platform: t.platform, arch: t.arch, libc };
  });
}

/**
 * The platform package this Node would load (napi-rs's suffix, e.g.
 * "linux-x64-musl"), found the way sim.js and index.js find it.
 */
export function hostPlatform() {
  const { platform, arch } = process;
  if (platform === "win32") return `win32-${arch}-msvc`;
  if (platform !== "linux") return `${platform}-${arch}`;
  let libc = "gnu";
  try {
    libc = readFileSync("/usr/bin/ldd", "utf8").includes("musl") ? "musl" : "gnu";
  } catch {
    const report = process.report.getReport();
    if (!report.header.glibcVersionRuntime && (report.sharedObjects || []).some((f) => /libc\.musl-|ld-musl-/.test(f))) libc = "musl";
  }
  return arch === "arm" ? `linux-arm-${libc}eabihf` : `linux-${arch}-${libc}`;
}

export const binaryName = () => rootManifest().napi.binaryName;

/**
 * The npm targets with no wheel of koma_sdk: Windows on arm64 (its module
 * would link against python3.dll through an import library that pyo3 does
 * not make for that target here, and nothing here could run it).
 */
export const NO_WHEEL = new Set(["aarch64-pc-windows-msvc"]);
const simFile = (platform) => (platform === "win32" ? "koma-sim.exe" : "koma-sim");

const npmEnv = () => {
  const env = { ...process.env, npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false" };
  for (const k of Object.keys(env)) if (/^npm_(lifecycle|package)_/.test(k)) delete env[k];
  return env;
};
/**
 * How npm is started: `npm` itself; on Windows, where it is a batch file
 * (npm.cmd) that Node runs only through a shell, its script with this Node:
 * the one `npm run` named (npm_execpath), else the one an installed Node
 * carries beside itself.
 */
export function npmCommand(args) {
  if (process.platform !== "win32") return ["npm", args];
  const cli = process.env.npm_execpath?.endsWith(".js")
    ? process.env.npm_execpath
    : join(dirname(process.execPath), "node_modules", "npm", "bin", "npm-cli.js");
  return [process.execPath, [cli, ...args]];
}
export const npm = (args, cwd, env = npmEnv()) =>
  execFileSync(...npmCommand(args), { cwd, env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

// ---------------------------------------------------------------- layout

/**
 * Lay out the main package in `dir`: what `npm pack` takes from the repository
 * (the `files` of package.json), and a package.json that names every
 * per-platform package in optionalDependencies, at this version, as
 * `napi prepublish` writes it.
 */
export async function layoutMain(dir) {
  const targets = await readTargets();
  const manifest = rootManifest();
  const [listing] = JSON.parse(npm(["pack", "--dry-run", "--json", "--ignore-scripts"], root));
  mkdirSync(dir, { recursive: true });
  for (const { path } of listing.files) {
    if (path === "package.json") continue;
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    copyFileSync(join(root, path), join(dir, path));
  }
  manifest.optionalDependencies = Object.fromEntries(targets.map((t) => [`${manifest.name}-${t.abi}`, manifest.version]));
  writeFileSync(join(dir, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  return dir;
}

/**
 * Lay out the package of one target in `dir`: npm/<abi>/ with the version of
 * the main package, the addon built for it, and koma-sim built for it
 * (target/<triple>/release/).
 */
export function layoutPlatform(target, dir, from = null) {
  const manifest = JSON.parse(readFileSync(join(root, "npm", target.abi, "package.json"), "utf8"));
  manifest.version = rootManifest().version;
  const addon = `${binaryName()}.${target.abi}.node`;
  // `from`: a folder of `npm run platforms`'s builds (target/platforms/<triple>/).
  const addonPath = from ? join(from, addon) : join(root, addon);
  const sim = from ? join(from, simFile(target.platform)) : join(root, "target", target.triple, "release", simFile(target.platform));
  const how = from ? `node scripts/platforms.mjs --target ${target.triple}` : `node scripts/build.mjs --target ${target.triple}`;
  for (const [what, path] of [
    ["the addon", addonPath],
    ["koma-sim", sim],
  ]) {
    if (!existsSync(path)) throw new Error(`layout of ${target.abi}: ${what} is not built (${path}); run \`${how}\``);
  }
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  copyFileSync(join(root, "npm", target.abi, "README.md"), join(dir, "README.md"));
  copyFileSync(join(root, "LICENSE"), join(dir, "LICENSE"));
  copyFileSync(addonPath, join(dir, addon));
  copyFileSync(sim, join(dir, simFile(target.platform)));
  chmodSync(join(dir, simFile(target.platform)), 0o755);
  return dir;
}

/** `npm pack` a laid-out package into `dest`; the tarball's path. */
export function pack(dir, dest) {
  mkdirSync(dest, { recursive: true });
  const [packed] = JSON.parse(npm(["pack", "--json", "--ignore-scripts", "--pack-destination", dest], dir));
  return join(dest, packed.filename);
}

// ---------------------------------------------------------------- reading tarballs

/** The entries of a .tgz: [{path (without "package/"), mode, data}]. */
export function readTarball(file) {
  const buf = gunzipSync(readFileSync(file));
  const entries = [];
  const str = (b) => b.toString("utf8", 0, b.indexOf(0) === -1 ? b.length : b.indexOf(0));
  const octal = (b) => parseInt(str(b).trim() || "0", 8);
  let paxPath = null;
  for (let off = 0; off + 512 <= buf.length; ) {
    const h = buf.subarray(off, off + 512);
    if (h.every((b) => b === 0)) break;
    const size = octal(h.subarray(124, 136));
    const type = String.fromCharCode(h[156] || 48);
    const data = buf.subarray(off + 512, off + 512 + size);
    off += 512 + Math.ceil(size / 512) * 512;
    if (type === "x") {
      const m = data.toString("utf8").match(/^\d+ path=(.*)$/m);
      paxPath = m ? m[1] : null;
      continue;
    }
    if (type === "g") continue;
    const prefix = str(h.subarray(345, 500));
    const name = paxPath ?? (prefix ? `${prefix}/${str(h.subarray(0, 100))}` : str(h.subarray(0, 100)));
    paxPath = null;
    if (type !== "0" && type !== "\0") continue; // npm packs regular files only
    entries.push({ path: name.replace(/^[^/]+\//, ""), mode: octal(h.subarray(100, 108)), data });
  }
  return entries;
}

// ---------------------------------------------------------------- binaries

const ELF_MACHINES = { 62: "x64", 183: "arm64", 3: "ia32", 40: "arm" };
const MACHO_CPUS = { 0x01000007: "x64", 0x0100000c: "arm64" };
const PE_MACHINES = { 0x8664: "x64", 0xaa64: "arm64", 0x14c: "ia32" };

/**
 * What a binary is, from its headers: {format: "elf"|"macho"|"pe", cpu,
 * kind: "executable"|"shared", libc: "glibc"|"musl"|"static"|null, needs},
 * or null when it is not a binary.
 */
export function inspectBinary(data) {
  if (data.length >= 64 && data.readUInt32BE(0) === 0x7f454c46) return inspectElf(data);
  if (data.length >= 32 && data.readUInt32LE(0) === 0xfeedfacf) {
    const filetype = data.readUInt32LE(12);
    return {
      format: "macho",
      cpu: MACHO_CPUS[data.readUInt32LE(4)] ?? `cputype ${data.readUInt32LE(4)}`,
      kind: filetype === 2 ? "executable" : filetype === 6 || filetype === 8 ? "shared" : `filetype ${filetype}`,
      libc: null,
      needs: [],
    };
  }
  if (data.length >= 8 && [0xcafebabe, 0xcafebabf].includes(data.readUInt32BE(0)))
    return { format: "macho-universal", cpu: "several", kind: "unknown", libc: null, needs: [] };
  if (data.length >= 64 && data.readUInt16LE(0) === 0x5a4d) {
    const pe = data.readUInt32LE(0x3c);
    if (pe + 24 <= data.length && data.readUInt32LE(pe) === 0x00004550) {
      const characteristics = data.readUInt16LE(pe + 22);
      return {
        format: "pe",
        cpu: PE_MACHINES[data.readUInt16LE(pe + 4)] ?? "unknown",
        kind: characteristics & 0x2000 ? "shared" : "executable",
        libc: null,
        needs: [],
      };
    }
  }
  return null;
}

function inspectElf(data) {
  if (data[4] !== 2 || data[5] !== 1)
    return { format: "elf", cpu: `class ${data[4]} data ${data[5]}`, kind: "unknown", libc: null, needs: [] };
  const type = data.readUInt16LE(16);
  const cpu = ELF_MACHINES[data.readUInt16LE(18)] ?? `machine ${data.readUInt16LE(18)}`;
  const phoff = Number(data.readBigUInt64LE(32));
  const phentsize = data.readUInt16LE(54);
  const phnum = data.readUInt16LE(56);
  const segments = [];
  for (let i = 0; i < phnum; i++) {
    const p = phoff + i * phentsize;
    segments.push({
      type: data.readUInt32LE(p),
      offset: Number(data.readBigUInt64LE(p + 8)),
      vaddr: Number(data.readBigUInt64LE(p + 16)),
      filesz: Number(data.readBigUInt64LE(p + 32)),
    });
  }
  const cstr = (at) => data.toString("latin1", at, data.indexOf(0, at));
  const interpSeg = segments.find((s) => s.type === 3);
  const interp = interpSeg ? cstr(interpSeg.offset) : null;
  const needs = [];
  const dyn = segments.find((s) => s.type === 2);
  if (dyn) {
    const entries = [];
    for (let at = dyn.offset; at + 16 <= dyn.offset + dyn.filesz; at += 16) {
      const tag = Number(data.readBigInt64LE(at));
      if (tag === 0) break;
      entries.push([tag, Number(data.readBigUInt64LE(at + 8))]);
    }
    const strtab = entries.find(([tag]) => tag === 5)?.[1];
    const load = segments.find((s) => s.type === 1 && strtab >= s.vaddr && strtab < s.vaddr + s.filesz);
    if (load) for (const [tag, val] of entries) if (tag === 1) needs.push(cstr(strtab - load.vaddr + load.offset + val));
  }
  let libc = "static";
  if ((interp && /ld-musl/.test(interp)) || needs.some((n) => /musl/.test(n) || n === "libc.so")) libc = "musl";
  else if ((interp && /ld-linux/.test(interp)) || needs.includes("libc.so.6")) libc = "glibc";
  // ET_DYN with an interpreter is a position-independent executable.
  const kind = type === 2 || (type === 3 && interp) ? "executable" : type === 3 ? "shared" : `type ${type}`;
  return { format: "elf", cpu, kind, libc, needs, interp, glibc: newestGlibc(data) };
}

/**
 * The newest `GLIBC_x.y` symbol version an ELF file asks for (its version
 * needs: the section of type SHT_GNU_verneed, with its string table), as
 * "2.28"; null when it asks for none.
 */
function newestGlibc(data) {
  const shoff = Number(data.readBigUInt64LE(40));
  const shentsize = data.readUInt16LE(58);
  const shnum = data.readUInt16LE(60);
  const sections = [];
  for (let i = 0; i < shnum && shoff + (i + 1) * shentsize <= data.length; i++) {
    const h = shoff + i * shentsize;
    sections.push({ type: data.readUInt32LE(h + 4), offset: Number(data.readBigUInt64LE(h + 24)), link: data.readUInt32LE(h + 40) });
  }
  const verneed = sections.find((s) => s.type === 0x6ffffffe);
  if (!verneed || !sections[verneed.link]) return null;
  const strings = sections[verneed.link].offset;
  const name = (at) => data.toString("latin1", strings + at, data.indexOf(0, strings + at));
  let newest = null;
  // Elf64_Verneed: vn_version, vn_cnt (u16), vn_file, vn_aux, vn_next (u32); Elf64_Vernaux: vna_hash (u32), vna_flags, vna_other (u16), vna_name, vna_next (u32).
  for (let at = verneed.offset, more = true; more; ) {
    const count = data.readUInt16LE(at + 2);
    for (let aux = at + data.readUInt32LE(at + 8), i = 0; i < count; i++) {
      const m = /^GLIBC_(\d+\.\d+(?:\.\d+)?)$/.exec(name(data.readUInt32LE(aux + 8)));
      if (m && (newest === null || compareGlibc(m[1], newest) > 0)) newest = m[1];
      aux += data.readUInt32LE(aux + 12);
    }
    const next = data.readUInt32LE(at + 12);
    more = next !== 0;
    at += next;
  }
  return newest;
}

const FORMATS = { linux: "elf", darwin: "macho", win32: "pe" };

/** Check one binary against a target; a description of it, or throws. */
function checkBinary(label, data, target, kind, { glibcFloor = true } = {}) {
  const info = inspectBinary(data);
  if (!info) throw new Error(`${label}: not a binary`);
  const problems = [];
  if (info.format !== FORMATS[target.platform]) problems.push(`format ${info.format}, not ${FORMATS[target.platform]}`);
  if (info.cpu !== target.arch) problems.push(`cpu ${info.cpu}, not ${target.arch}`);
  // A static kind of executable runs on either C library; the addon is loaded into Node and must use Node's.
  if (target.libc && info.libc !== target.libc && !(kind === "executable" && info.libc === "static")) {
    problems.push(
      `C library ${info.libc} (needs ${info.needs.join(", ") || "nothing"}${info.interp ? `, interpreter ${info.interp}` : ""}), not ${target.libc}`,
    );
  }
  if (info.kind !== kind && !(kind === "executable" && info.kind === "shared" && info.libc === "static"))
    problems.push(`a ${info.kind}, not a ${kind}`);
  let more = "";
  if (info.format === "elf" && info.libc === "glibc") {
    // What the file asks of glibc: never newer than the floor its package promises.
    if (glibcFloor && info.glibc && compareGlibc(info.glibc, GLIBC_FLOOR) > 0)
      problems.push(
        `it asks for GLIBC_${info.glibc}, newer than the floor, glibc ${GLIBC_FLOOR} (link it with zig: node scripts/platforms.mjs --target ${target.triple})`,
      );
    more = `, GLIBC_${info.glibc ?? "none"} at most (floor ${GLIBC_FLOOR})`;
  }
  if (info.format === "macho") {
    const m = checkMachO(data, target, kind, problems);
    more = `, macOS ${m.minos}+, links ${m.dylibs.map((d) => basename(d)).join(" ")}${m.signed ? ", signed (page hashes match)" : ""}`;
  }
  if (info.format === "pe") {
    const p = checkPE(data, target, kind, problems);
    more = `, ${p.subsystem} subsystem, imports ${p.imports.join(" ")}${kind === "shared" ? ", exports napi_register_module_v1" : ""}`;
  }
  if (problems.length) throw new Error(`${label} is not for ${target.abi}: ${problems.join("; ")}`);
  return `${info.format} ${info.cpu} ${info.kind}${info.libc ? `, ${info.libc}` : ""}${more}`;
}

/**
 * What a Mach-O file of a macOS package must say: the minimum macOS of the
 * release (MACOS_MIN), only the system's libraries (a user's Mac has nothing
 * else), the addon's Node-API entry point exported, and a code signature on
 * arm64 (where macOS runs nothing unsigned). Problems are added to `problems`.
 */
export function checkMachO(data, target, kind, problems) {
  const m = readMachO(data);
  if (m.platform !== "macos" || m.minos !== MACOS_MIN) problems.push(`minimum macOS ${m.minos ?? "not stated"}, not ${MACOS_MIN}`);
  const foreign = m.dylibs.filter((d) => !isSystemLibrary(d));
  if (foreign.length) problems.push(`links libraries that are not the system's: ${foreign.join(", ")}`);
  if (kind === "shared" && !m.exports.includes("napi_register_module_v1"))
    problems.push("does not export napi_register_module_v1 (Node-API's entry point)");
  if (target.arch === "arm64" && !m.signed) problems.push("has no code signature (macOS on arm64 runs no unsigned code)");
  if (m.signed && !m.signatureValid) problems.push("has a code signature whose page hashes do not match the file (macOS kills it)");
  return m;
}

/**
 * What a PE file of the Windows package must say: its cpu, a DLL for the
 * addon (exporting Node-API's entry point) and a console program for
 * koma-sim.exe, and only Windows' own DLLs imported (a user's Windows has
 * nothing else; `also` names more that may be, as the wheel's python3.dll).
 * With napi's dyn-symbols the addon imports nothing from node.exe, so it
 * loads in a Node whose executable has another name. Problems are added to
 * `problems`.
 */
export function checkPE(data, target, kind, problems, also = []) {
  const p = readPE(data);
  if (p.cpu !== target.arch) problems.push(`machine ${p.cpu}, not ${target.arch}`);
  if (kind === "shared" && !p.dll) problems.push("not a DLL");
  if (kind === "executable" && (p.dll || p.subsystem !== "console"))
    problems.push(`not a console program (${p.dll ? "a DLL" : `${p.subsystem} subsystem`})`);
  const allowed = (d) => isSystemDll(d) || also.some((a) => a.toLowerCase() === d.toLowerCase());
  const foreign = p.imports.filter((d) => !allowed(d));
  if (foreign.length) problems.push(`imports DLLs that are not Windows' own: ${foreign.join(", ")}`);
  if (kind === "shared" && !p.exports.includes("napi_register_module_v1"))
    problems.push("does not export napi_register_module_v1 (Node-API's entry point)");
  if (kind === "python" && (!p.dll || !p.exports.includes("PyInit__native")))
    problems.push("is not a DLL exporting PyInit__native (the module's entry point)");
  return { ...p, imports: [...new Set(p.imports.map((d) => d.toLowerCase()))] };
}

/**
 * The Windows wheel's two PE files, read from the wheel: the module (a DLL
 * exporting PyInit__native, importing Windows' own DLLs and python3.dll,
 * the stable ABI's, only) and koma-sim.exe (a console program). Throws with
 * every problem; a line saying what was checked.
 */
export function checkWheelPE(wheel, target) {
  const read = (name) => {
    const r = spawnSync(
      "python3",
      ["-c", "import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))", wheel, name],
      { maxBuffer: 256 << 20 },
    );
    if (r.status !== 0) throw new Error(`${basename(wheel)}: cannot read ${name}: ${r.stderr}`);
    return r.stdout;
  };
  const lines = [];
  const problems = [];
  for (const [name, kind, also] of [
    ["koma_sdk/_native.pyd", "python", ["python3.dll"]],
    ["koma_sdk/bin/koma-sim.exe", "executable", []],
  ]) {
    const mine = [];
    const p = checkPE(read(name), target, kind, mine, also);
    problems.push(...mine.map((m) => `${name}: ${m}`));
    lines.push(`${name} (pe ${p.cpu}, imports ${p.imports.join(" ")})`);
  }
  if (problems.length) throw new Error(`${basename(wheel)}: ${problems.join("; ")}`);
  return lines.join("; ");
}

// ---------------------------------------------------------------- checks

const manifestOf = (entries, file) => {
  const e = entries.find((x) => x.path === "package.json");
  if (!e) throw new Error(`${basename(file)}: no package.json`);
  return JSON.parse(e.data.toString("utf8"));
};

/** Which package a tarball holds (its package.json's name and version). */
export function tarballPackage(file) {
  const { name, version } = manifestOf(readTarball(file), file);
  return { name, version };
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const fail = (msg) => {
  throw new Error(msg);
};

/**
 * The main package: the repository's `files` and nothing else, no binary of
 * any kind, optionalDependencies naming every platform package at its own
 * version, and the koma-sim command as a JavaScript file. One line of report.
 */
export function checkMain(file, { targets }) {
  const { name, version, files: declared, bin } = rootManifest();
  const entries = readTarball(file);
  const m = manifestOf(entries, file);
  const id = `${name}@${version}`;
  if (m.name !== name || m.version !== version) fail(`${basename(file)}: holds ${m.name}@${m.version}, not ${id}`);
  for (const field of ["os", "cpu", "libc"])
    if (m[field] !== undefined) fail(`${id}: the main package must not restrict ${field} (it is ${JSON.stringify(m[field])})`);
  const expected = new Set(["package.json", ...declared]);
  const paths = entries.map((e) => e.path);
  for (const p of paths) if (!expected.has(p)) fail(`${id}: carries ${p}, which is not in package.json's files`);
  for (const p of expected) if (!paths.includes(p)) fail(`${id}: lacks ${p}`);
  for (const e of entries) {
    const info = inspectBinary(e.data);
    if (info || e.path.endsWith(".node") || /(^|\/)koma-sim(\.exe)?$/.test(e.path))
      fail(`${id}: carries a platform binary: ${e.path}${info ? ` (${info.format} ${info.cpu})` : ""}`);
  }
  const wanted = Object.fromEntries(targets.map((t) => [`${name}-${t.abi}`, version]));
  if (!same(m.optionalDependencies, wanted))
    fail(`${id}: optionalDependencies are ${JSON.stringify(m.optionalDependencies)}, not ${JSON.stringify(wanted)}`);
  if (!same(m.bin, bin)) fail(`${id}: bin is ${JSON.stringify(m.bin)}, not ${JSON.stringify(bin)}`);
  for (const script of Object.values(m.bin)) {
    const e = entries.find((x) => x.path === script);
    if (!e || !e.data.toString("utf8").startsWith("#!/usr/bin/env node\n")) fail(`${id}: the bin ${script} is not a Node script`);
    if (!(e.mode & 0o100)) fail(`${id}: the bin ${script} is not executable (mode ${e.mode.toString(8)})`);
  }
  return `${id}: ${paths.length} files, no binary; optionalDependencies name the ${targets.length} platform packages at ${version}; bin koma-sim -> ${m.bin["koma-sim"]}`;
}

/**
 * A platform package: exactly its addon, its koma-sim, package.json,
 * README.md and LICENSE; each binary for the target's os, cpu and C library; koma-sim
 * executable; os/cpu/libc fields that say the same. One line of report.
 */
/**
 * Check a platform package's tarball against its target: its files, its
 * manifest, its binaries' headers. `glibcFloor: false` leaves out the glibc
 * floor, for a checkout's own build (`npm run build`, linked against this
 * machine's glibc) packed by a test of the packaging itself.
 */
export function checkPlatform(file, target, { glibcFloor = true } = {}) {
  const { name: mainName, version } = rootManifest();
  const name = `${mainName}-${target.abi}`;
  const id = `${name}@${version}`;
  const entries = readTarball(file);
  const m = manifestOf(entries, file);
  if (m.name !== name || m.version !== version) fail(`${basename(file)}: holds ${m.name}@${m.version}, not ${id}`);
  checkPlatformManifest(m, target, id);
  const addon = `${binaryName()}.${target.abi}.node`;
  const sim = simFile(target.platform);
  const expected = ["README.md", "LICENSE", addon, sim, "package.json"].sort();
  const paths = entries.map((e) => e.path).sort();
  if (!same(paths, expected)) fail(`${id}: holds ${paths.join(", ")}; expected ${expected.join(", ")}`);
  const a = checkBinary(`${id}: ${addon}`, entries.find((e) => e.path === addon).data, target, "shared", { glibcFloor });
  const simEntry = entries.find((e) => e.path === sim);
  const s = checkBinary(`${id}: ${sim}`, simEntry.data, target, "executable", { glibcFloor });
  if ((simEntry.mode & 0o111) !== 0o111) fail(`${id}: ${sim} is not executable (mode ${simEntry.mode.toString(8)})`);
  const fields = ["os", "cpu", "libc"]
    .filter((f) => m[f])
    .map((f) => `${f} ${JSON.stringify(m[f])}`)
    .join(" ");
  return `${id}: ${addon} (${a}); ${sim} (${s}, mode ${(simEntry.mode & 0o777).toString(8)}); ${fields}`;
}

/** A platform package.json: name, os, cpu, libc, main, files, for this target. */
export function checkPlatformManifest(m, target, id = m.name) {
  const name = `${rootManifest().name}-${target.abi}`;
  const addon = `${binaryName()}.${target.abi}.node`;
  const problems = [];
  if (m.name !== name) problems.push(`name ${m.name}, not ${name}`);
  if (!same(m.os, [target.platform])) problems.push(`os ${JSON.stringify(m.os)}, not ["${target.platform}"]`);
  if (!same(m.cpu, [target.arch])) problems.push(`cpu ${JSON.stringify(m.cpu)}, not ["${target.arch}"]`);
  const libc = target.libc ? [target.libc] : undefined;
  if (!same(m.libc, libc)) problems.push(`libc ${JSON.stringify(m.libc)}, not ${JSON.stringify(libc)}`);
  if (m.main !== addon) problems.push(`main ${m.main}, not ${addon}`);
  if (!same([...(m.files ?? [])].sort(), [addon, simFile(target.platform)].sort()))
    problems.push(`files ${JSON.stringify(m.files)}, not ["${addon}", "${simFile(target.platform)}"]`);
  if (problems.length) fail(`${id} (${target.triple}): ${problems.join("; ")}`);
}

/** npm/<abi>/package.json for every target, and no npm/ folder without a target. */
export function checkNpmDirs(targets) {
  const dirs = readdirSync(join(root, "npm")).sort();
  const abis = targets.map((t) => t.abi).sort();
  if (!same(dirs, abis)) fail(`npm/ holds ${dirs.join(", ")}; napi.targets give ${abis.join(", ")}`);
  for (const t of targets)
    checkPlatformManifest(JSON.parse(readFileSync(join(root, "npm", t.abi, "package.json"), "utf8")), t, `npm/${t.abi}/package.json`);
  return `npm/: ${dirs.length} platform packages, one per napi target, with matching name, os, cpu, libc, main and files`;
}

// ---------------------------------------------------------------- install and run

const TURN = `
const { Client } = require("@koma/sdk");
const { simPath } = require("@koma/sdk/sim");
(async () => {
  const client = new Client({ executable: simPath });
  const hello = await client.probe();
  await client.create({});
  const { turn } = await client.submit({ text: "hello" });
  let output = 0;
  let finished = null;
  for await (const item of client.events()) {
    if (item.type !== "event") continue;
    if (item.name === "output" && item.data.turn === turn) output += item.data.text.length;
    if (item.name === "turn_finished" && item.data.turn === turn) { finished = item.data.status; break; }
  }
  const ran = await client.run({ text: "fix notes.txt" }, { onApproval: "allow" });
  await client.close();
  const addon = Object.keys(require.cache).find((k) => k.endsWith(".node"));
  const otel = Object.keys(require.cache).filter((k) => k.includes("@opentelemetry"));
  console.log(JSON.stringify({ simPath, addon, version: hello.binary.version, turn, finished, output, run: ran.status, otel }));
})().catch((err) => { console.error(err); process.exit(1); });
`;

/**
 * Install tarballs into an empty folder with no network (`--offline`, an empty
 * npm cache), then, from there: a turn against that install's simPath, the
 * documented testing example's tests (node:test), and the koma-sim command.
 * Returns lines of report; throws on failure.
 */
export function installAndRun(tarballs, platform) {
  const work = mkdtempSync(join(tmpdir(), "koma-release-install-"));
  try {
    const app = join(work, "app");
    mkdirSync(app);
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "release-dry-app", version: "1.0.0", private: true }));
    const env = { ...npmEnv(), npm_config_cache: join(work, "npm-cache") };
    delete env.KOMA_SIM_PATH;
    npm(["install", "--offline", "--no-package-lock", "--ignore-scripts", ...tarballs], app, env);
    const lines = [`installed offline into an empty folder: ${tarballs.map((t) => basename(t)).join(" + ")}`];

    const pkgDir = realpathSync(join(app, "node_modules", "@koma", `sdk-${platform}`));
    const runEnv = { ...env, KOMA_SIM_DELAY_MS: "0", KOMA_SIM_HOME: join(work, "sim-home") };
    writeFileSync(join(app, "turn.cjs"), TURN);
    const r = spawnSync(process.execPath, ["turn.cjs"], { cwd: app, env: runEnv, encoding: "utf8" });
    if (r.status !== 0) fail(`the turn failed (exit ${r.status ?? r.signal}): ${r.stderr}`);
    const got = JSON.parse(r.stdout.trim().split("\n").pop());
    const inside = (p) => !relative(pkgDir, realpathSync(p)).startsWith("..");
    if (!inside(got.simPath)) fail(`simPath is ${got.simPath}, not in ${pkgDir}`);
    if (!got.addon || !inside(got.addon)) fail(`the addon came from ${got.addon}, not from ${pkgDir}`);
    if (got.finished !== "completed" || !(got.output > 0)) fail(`the turn: ${r.stdout}`);
    if (got.run !== "completed") fail(`run(): ${r.stdout}`);
    const rel = (p) => relative(app, p).split(sep).join("/");
    lines.push(
      `turn ${got.turn} ${got.finished} (${got.output} characters of output) against simPath ${rel(got.simPath)}, addon ${rel(got.addon)}; run() ${got.run}`,
    );
    // OpenTelemetry is an optional peer: the install brings none of it (nor
    // any other dependency), and the package loads none of it.
    const installed = readdirSync(join(app, "node_modules")).filter((f) => !f.startsWith("."));
    const scoped = readdirSync(join(app, "node_modules", "@koma")).sort();
    if (installed.join() !== "@koma" || scoped.join() !== ["sdk", `sdk-${platform}`].sort().join())
      fail(`the install holds more than @koma/sdk and its platform package: ${installed.join(", ")} (@koma: ${scoped.join(", ")})`);
    if (got.otel.length) fail(`modules of OpenTelemetry were loaded: ${got.otel.join(", ")}`);
    lines.push(`installed: @koma/${scoped.join(", @koma/")} and nothing else; no @opentelemetry module loaded`);

    // The documented testing example (docs/testing.md), unchanged, from the
    // installed package: the app and its node:test tests, with
    // @koma/sdk/testing and the platform package's koma-sim.
    const example = join(app, "testing-example");
    mkdirSync(example);
    for (const f of ["app.mjs", "app.test.mjs"])
      copyFileSync(join(app, "node_modules", "@koma", "sdk", "examples", "testing", f), join(example, f));
    const testEnv = { ...runEnv };
    delete testEnv.NODE_TEST_CONTEXT;
    const tested = spawnSync(process.execPath, ["--test", "--test-reporter=tap", "app.test.mjs"], {
      cwd: example,
      env: testEnv,
      encoding: "utf8",
    });
    const count = (k) => Number((tested.stdout.match(new RegExp(`^# ${k} (\\d+)$`, "m")) || [])[1]);
    if (tested.status !== 0 || count("fail") !== 0 || !(count("pass") > 0))
      fail(`the testing example failed (exit ${tested.status ?? tested.signal}): ${tested.stdout}${tested.stderr}`);
    lines.push(
      `the testing example (examples/testing/app.test.mjs, node:test): ${count("pass")} tests passed against @koma/sdk/testing and koma-sim`,
    );

    const bin = join(app, "node_modules", ".bin", "koma-sim");
    const v = spawnSync(bin, ["--version"], { cwd: app, env: runEnv, encoding: "utf8" });
    if (v.status !== 0 || !/^koma-sim \d/.test(v.stdout))
      fail(`node_modules/.bin/koma-sim --version: exit ${v.status}, ${v.stdout}${v.stderr}`);
    lines.push(`node_modules/.bin/koma-sim --version: ${v.stdout.trim()}`);
    return lines;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Every .tgz under `dir`, each with the package it holds. */
export function findTarballs(dir) {
  const out = [];
  const walk = (d) => {
    for (const f of readdirSync(d)) {
      const p = join(d, f);
      if (statSync(p).isDirectory()) walk(p);
      else if (f.endsWith(".tgz")) out.push({ file: p, ...tarballPackage(p) });
    }
  };
  walk(dir);
  return out;
}

// ---------------------------------------------------------------- which package npm picks

/**
 * Serve the main tarball and every platform tarball from a registry on the
 * loopback address, and for each target install the main package by name
 * into an empty folder as that platform would (`npm install --os --cpu
 * --libc`): npm must add exactly that target's package, and on a platform of
 * none (win32 ia32) none. With `keep`, the install for a platform is left in
 * `keep(platform)`'s folder (the Windows check runs from it). Lines of report.
 */
export async function checkPicks(mainTgz, platformTgzs, targets, keep = null) {
  const { name, version } = rootManifest();
  const packages = [mainTgz, ...platformTgzs].map((file) => ({ file, manifest: manifestOf(readTarball(file), file) }));
  const registry = await serve(packages);
  const work = mkdtempSync(join(tmpdir(), "koma-release-picks-"));
  const lines = [];
  try {
    const cases = [
      ...targets.map((t) => ({ os: t.platform, cpu: t.arch, libc: t.libc, want: `${name}-${t.abi}` })),
      { os: "win32", cpu: "ia32", libc: null, want: null },
    ];
    for (const c of cases) {
      const label = [c.os, c.cpu, c.libc].filter(Boolean).join("-");
      const app = keep?.(label) ?? join(work, label);
      rmSync(app, { recursive: true, force: true });
      mkdirSync(app, { recursive: true });
      writeFileSync(join(app, "package.json"), JSON.stringify({ name: "picks-app", version: "1.0.0", private: true }));
      const env = { ...npmEnv(), npm_config_cache: join(work, `cache-${label}`), npm_config_registry: `${registry.url}/` };
      const flags = ["--os", c.os, "--cpu", c.cpu, ...(c.libc ? ["--libc", c.libc] : [])];
      await npmAsync(["install", "--ignore-scripts", "--no-package-lock", "--no-audit", ...flags, `${name}@${version}`], app, env);
      const scope = join(app, "node_modules", name.split("/")[0]);
      const got = readdirSync(scope)
        .map((d) => `${name.split("/")[0]}/${d}`)
        .filter((n) => n !== name)
        .sort();
      const want = c.want ? [c.want] : [];
      if (!same(got, want))
        fail(
          `npm install ${flags.join(" ")} ${name}: installed ${got.join(", ") || "no platform package"}, not ${want.join(", ") || "none"}`,
        );
      lines.push(
        `npm install ${flags.join(" ")} ${name} (by name, from a registry on 127.0.0.1): ${got[0] ?? "no platform package, as expected"}`,
      );
    }
  } finally {
    await registry.close();
    rmSync(work, { recursive: true, force: true });
  }
  return lines;
}

// npm in a child process without blocking this one (the registry answers from it).
function npmAsync(args, cwd, env) {
  return new Promise((resolve, reject) => {
    execFile(...npmCommand(args), { cwd, env, encoding: "utf8", maxBuffer: 64 << 20 }, (err, stdout, stderr) =>
      err ? reject(new Error(`npm ${args.join(" ")} failed: ${stderr}${stdout}`)) : resolve(stdout),
    );
  });
}
