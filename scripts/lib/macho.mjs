// A reader of 64-bit Mach-O files (the two macOS targets), enough to check a
// binary built for macOS on a machine that is not one: its cpu and kind, the
// minimum macOS it asks for, the libraries it links, the symbols it exports,
// and whether it carries a code signature whose page hashes match the file
// (macOS on arm64 kills a program whose signature is missing or stale, as
// one is after a strip that does not sign again). Node's built-ins only:
// scripts/release-lib.mjs imports it, which runs in bare Node containers too.
//
// The layout is Apple's <mach-o/loader.h>, <mach-o/nlist.h> and, for the
// signature, the CodeDirectory of its code signing blobs (big-endian).
import { createHash } from "node:crypto";

const MH_MAGIC_64 = 0xfeedfacf;
const CPUS = { 0x01000007: "x64", 0x0100000c: "arm64" };
const FILETYPES = { 2: "executable", 6: "shared", 8: "shared" }; // MH_EXECUTE, MH_DYLIB, MH_BUNDLE
const LC_SYMTAB = 0x2;
const LC_LOAD_DYLIB = 0xc;
const LC_LOAD_WEAK_DYLIB = 0x80000018;
const LC_REEXPORT_DYLIB = 0x8000001f;
const LC_LAZY_LOAD_DYLIB = 0x20;
const LC_VERSION_MIN_MACOSX = 0x24;
const LC_BUILD_VERSION = 0x32;
const LC_CODE_SIGNATURE = 0x1d;
const PLATFORM_MACOS = 1;
const N_STAB = 0xe0;
const N_TYPE = 0x0e;
const N_EXT = 0x01;
const N_SECT = 0x0e;

/** A version as Mach-O packs it (xxxx.yy.zz in nibbles) as text: 11.0, 10.15.1. */
const version = (v) => {
  const parts = [v >>> 16, (v >>> 8) & 0xff, v & 0xff];
  return (parts[2] ? parts : parts.slice(0, 2)).join(".");
};

/** Whether `data` is a thin 64-bit little-endian Mach-O file. */
export const isMachO = (data) => data.length >= 32 && data.readUInt32LE(0) === MH_MAGIC_64;

/**
 * What a Mach-O file says of itself: {cpu, kind, minos, platform, dylibs,
 * exports, signed}. `minos` is the minimum macOS as text ("11.0"), null when
 * the file names none; `dylibs` the install names of the libraries it loads;
 * `exports` its external defined symbols, without the leading underscore.
 */
export function readMachO(data) {
  if (!isMachO(data)) throw new Error("not a 64-bit Mach-O file");
  const cputype = data.readUInt32LE(4);
  const filetype = data.readUInt32LE(12);
  const ncmds = data.readUInt32LE(16);
  const out = {
    cpu: CPUS[cputype] ?? `cputype ${cputype}`,
    kind: FILETYPES[filetype] ?? `filetype ${filetype}`,
    minos: null,
    platform: null,
    dylibs: [],
    exports: [],
    signed: false,
    signatureValid: null,
  };
  const cstr = (at) => data.toString("latin1", at, data.indexOf(0, at));
  let at = 32; // after mach_header_64
  for (let i = 0; i < ncmds; i++) {
    const cmd = data.readUInt32LE(at);
    const size = data.readUInt32LE(at + 4);
    if (cmd === LC_BUILD_VERSION) {
      const platform = data.readUInt32LE(at + 8);
      out.platform = platform === PLATFORM_MACOS ? "macos" : `platform ${platform}`;
      out.minos = version(data.readUInt32LE(at + 12));
    } else if (cmd === LC_VERSION_MIN_MACOSX) {
      out.platform = "macos";
      out.minos = version(data.readUInt32LE(at + 8));
    } else if ([LC_LOAD_DYLIB, LC_LOAD_WEAK_DYLIB, LC_REEXPORT_DYLIB, LC_LAZY_LOAD_DYLIB].includes(cmd)) {
      out.dylibs.push(cstr(at + data.readUInt32LE(at + 8)));
    } else if (cmd === LC_CODE_SIGNATURE) {
      out.signed = data.readUInt32LE(at + 12) > 0; // datasize
      if (out.signed) out.signatureValid = pageHashesMatch(data, data.readUInt32LE(at + 8));
    } else if (cmd === LC_SYMTAB) {
      const symoff = data.readUInt32LE(at + 8);
      const nsyms = data.readUInt32LE(at + 12);
      const stroff = data.readUInt32LE(at + 16);
      for (let s = 0; s < nsyms; s++) {
        const e = symoff + s * 16; // nlist_64
        const type = data[e + 4];
        if (type & N_STAB || !(type & N_EXT) || (type & N_TYPE) !== N_SECT) continue;
        out.exports.push(cstr(stroff + data.readUInt32LE(e)).replace(/^_/, ""));
      }
    }
    at += size;
  }
  return out;
}

const CSMAGIC_EMBEDDED_SIGNATURE = 0xfade0cc0;
const CSMAGIC_CODEDIRECTORY = 0xfade0c02;
const HASHES = { 1: "sha1", 2: "sha256" };

/** Whether the code signature at `offset` holds a CodeDirectory whose hash of every page matches the file. */
function pageHashesMatch(data, offset) {
  if (data.readUInt32BE(offset) !== CSMAGIC_EMBEDDED_SIGNATURE) return false;
  const count = data.readUInt32BE(offset + 8);
  for (let i = 0; i < count; i++) {
    const cd = offset + data.readUInt32BE(offset + 12 + i * 8 + 4);
    if (data.readUInt32BE(cd) !== CSMAGIC_CODEDIRECTORY) continue;
    const hashOffset = data.readUInt32BE(cd + 16);
    const nCodeSlots = data.readUInt32BE(cd + 28);
    const codeLimit = data.readUInt32BE(cd + 32);
    const hashSize = data[cd + 36];
    const algorithm = HASHES[data[cd + 37]];
    const pageSize = 2 ** data[cd + 39];
    if (!algorithm) return false;
    for (let slot = 0; slot < nCodeSlots; slot++) {
      const page = data.subarray(slot * pageSize, Math.min((slot + 1) * pageSize, codeLimit));
      const want = data.subarray(cd + hashOffset + slot * hashSize, cd + hashOffset + (slot + 1) * hashSize);
      if (!createHash(algorithm).update(page).digest().subarray(0, hashSize).equals(want)) return false;
    }
    return nCodeSlots === Math.ceil(codeLimit / pageSize);
  }
  return false;
}

/** The libraries macOS itself provides: /usr/lib and the system's frameworks. */
export const isSystemLibrary = (path) => /^\/usr\/lib\/[^/]+\.dylib$/.test(path) || path.startsWith("/System/Library/Frameworks/");
