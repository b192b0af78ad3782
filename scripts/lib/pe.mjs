// A reader of PE32+ files (the Windows target's addon and koma-sim.exe),
// enough to check a binary built for Windows on a machine that is not one:
// its cpu, whether it is a DLL, its subsystem, the DLLs it imports (and
// delay-loads), and the names it exports. Node's built-ins only:
// scripts/release-lib.mjs imports it, which runs in bare Node containers too.
//
// The layout is Microsoft's PE format (winnt.h): the DOS header's e_lfanew,
// the COFF header, the optional header's data directories, the section
// table, the import and export directories.

const MACHINES = { 0x8664: "x64", 0xaa64: "arm64", 0x14c: "ia32" };
const SUBSYSTEMS = { 2: "gui", 3: "console" };

/**
 * The DLLs every Windows installation has (its `System32`), compared without
 * case, and the API sets (`api-ms-win-*`, `ext-ms-*`) that resolve to them.
 * A binary that imports anything else needs a DLL a user may not have.
 */
const SYSTEM_DLLS = new Set(
  [
    "kernel32.dll",
    "kernelbase.dll",
    "ntdll.dll",
    "advapi32.dll",
    "bcrypt.dll",
    "bcryptprimitives.dll",
    "userenv.dll",
    "ws2_32.dll",
    "msvcrt.dll",
    "ucrtbase.dll",
    "user32.dll",
    "shell32.dll",
    "ole32.dll",
    "oleaut32.dll",
    "secur32.dll",
    "crypt32.dll",
    "iphlpapi.dll",
    "dbghelp.dll",
    "synchronization.dll",
    "psapi.dll",
  ].map((d) => d.toLowerCase()),
);

export const isSystemDll = (name) => SYSTEM_DLLS.has(name.toLowerCase()) || /^(api|ext)-ms-/i.test(name);

/** {cpu, dll, subsystem, imports: [dll], exports: [name]} of a PE32+ file, or throws. */
export function readPE(data) {
  if (data.readUInt16LE(0) !== 0x5a4d) throw new Error("not a PE file (no MZ)");
  const pe = data.readUInt32LE(0x3c);
  if (data.readUInt32LE(pe) !== 0x00004550) throw new Error("not a PE file (no PE signature)");
  const coff = pe + 4;
  const machine = data.readUInt16LE(coff);
  const sections = data.readUInt16LE(coff + 2);
  const optionalSize = data.readUInt16LE(coff + 16);
  const characteristics = data.readUInt16LE(coff + 18);
  const opt = coff + 20;
  if (data.readUInt16LE(opt) !== 0x20b) throw new Error("not PE32+ (a 64-bit image)");
  const subsystem = data.readUInt16LE(opt + 68);
  const dirCount = data.readUInt32LE(opt + 108);
  const dir = (i) =>
    i < dirCount ? { rva: data.readUInt32LE(opt + 112 + i * 8), size: data.readUInt32LE(opt + 116 + i * 8) } : { rva: 0, size: 0 };
  const table = opt + optionalSize;
  const secs = [];
  for (let i = 0; i < sections; i++) {
    const s = table + i * 40;
    secs.push({
      va: data.readUInt32LE(s + 12),
      vsize: data.readUInt32LE(s + 8),
      rawSize: data.readUInt32LE(s + 16),
      raw: data.readUInt32LE(s + 20),
    });
  }
  const at = (rva) => {
    const s = secs.find((x) => rva >= x.va && rva < x.va + Math.max(x.vsize, x.rawSize));
    if (!s) throw new Error(`RVA 0x${rva.toString(16)} is in no section`);
    return rva - s.va + s.raw;
  };
  const cstr = (rva) => {
    const o = at(rva);
    return data.toString("latin1", o, data.indexOf(0, o));
  };
  const imports = [];
  const importDir = dir(1);
  if (importDir.rva) {
    for (let d = at(importDir.rva); ; d += 20) {
      const name = data.readUInt32LE(d + 12);
      if (!name && !data.readUInt32LE(d) && !data.readUInt32LE(d + 16)) break;
      imports.push(cstr(name));
    }
  }
  // Delay-loaded DLLs (directory 13): loaded on first use, needed all the same.
  const delayDir = dir(13);
  if (delayDir.rva) {
    for (let d = at(delayDir.rva); ; d += 32) {
      const name = data.readUInt32LE(d + 4);
      if (!name) break;
      imports.push(cstr(name));
    }
  }
  const exports = [];
  const exportDir = dir(0);
  if (exportDir.rva) {
    const e = at(exportDir.rva);
    const count = data.readUInt32LE(e + 24);
    const names = at(data.readUInt32LE(e + 32));
    for (let i = 0; i < count; i++) exports.push(cstr(data.readUInt32LE(names + i * 4)));
  }
  return {
    cpu: MACHINES[machine] ?? `machine 0x${machine.toString(16)}`,
    dll: Boolean(characteristics & 0x2000),
    subsystem: SUBSYSTEMS[subsystem] ?? `subsystem ${subsystem}`,
    imports,
    exports,
  };
}
