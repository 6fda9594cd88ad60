// From what a user types (files, folders, manifests, -f lists, -I, -D, -G, --top) to a checked
// DesignSpec, ready for introspection (core/run/design.ts loadDesign runs it: the front end is the
// simulator layer's).
// A folder gives its sources (folder.ts); a FuseSoC/Bender manifest is read by its own tool
// (manifest/); includes, packages and modules the files need but nobody named are searched for in
// the design's repository (discover.ts). Every addition is reported in `notes`, and `discovered`
// holds what a project file should record so that the search happens once.
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { emptyDesign, type DesignSpec } from './types.js';
import { libraryDirFiles, readFileList } from './filelist.js';
import { checkVerilatorArgs } from './verilatorArgs.js';
import { DesignError } from './errors.js';
import { collectFolder, describeFolder } from './folder.js';
import { commonDir, discover, repositoryRoot, type Discovery } from './discover.js';
import { findManifest, manifestKind, otherManifests, readManifest, type ManifestDesign } from './manifest/index.js';
import type { FusesocRef } from './manifest/fusesoc.js';

export interface DesignOptions {
  files: string[];
  /** `-f` lists: paths relative to the working directory (or the list, where only there). */
  fileLists?: string[];
  /** `-F` lists: paths relative to the list's own folder. */
  relativeFileLists?: string[];
  /** `-v` library files: their modules are used only where referenced. */
  libraryFiles?: string[];
  /** `-y` library folders: their files with a `libext` extension become library files. */
  libraryDirs?: string[];
  /** `+libext+.v+.sv`: the extensions of -y folders' files (default .v, .sv). */
  libext?: string[];
  /** Pass-through Verilator options (`--verilator-arg`), checked against the allowlist. */
  verilatorArgs?: string[];
  includeDirs?: string[];
  /** `NAME` or `NAME=VALUE`. */
  defines?: string[];
  /** `NAME=VALUE`. */
  params?: string[];
  top?: string;
  cwd?: string;
  /** A FuseSoC core / Bender package to ask its tool about (a `.core`, a `Bender.yml`, or a folder
   * holding one). A path in `files` naming a manifest or a folder holding one means the same. */
  manifest?: FusesocRef;
  /** Search the design's repository for missing includes, packages and modules. Off by default:
   * the CLI and the editor turn it on for the user's designs; benchmarks and services, whose
   * tasks name every file, must not pick up a same-named file from elsewhere. */
  discover?: boolean;
}

export interface PreparedDesign {
  design: DesignSpec;
  warnings: string[];
  /** What was done on the user's behalf: folder contents, manifest answers, discoveries. */
  notes: string[];
  /** Found by searching the repository: what a project file should record. Absolute paths. */
  discovered: { includeDirs: string[]; files: string[] };
  discovery?: Discovery;
  manifest?: ManifestDesign;
}

export function designFromOptions(o: DesignOptions): { design: DesignSpec; warnings: string[] } {
  const cwd = o.cwd ?? process.cwd();
  const d = emptyDesign();
  const warnings: string[] = [];
  for (const f of o.fileLists ?? []) readFileList(f, false, d, warnings, cwd);
  for (const f of o.relativeFileLists ?? []) readFileList(f, true, d, warnings, cwd);
  d.files.push(...o.files.map((f) => resolve(cwd, f)));
  d.libraryFiles.push(...(o.libraryFiles ?? []).map((f) => resolve(cwd, f)));
  for (const dir of o.libraryDirs ?? []) d.libraryFiles.push(...libraryDirFiles(resolve(cwd, dir), o.libext));
  d.libraryFiles = [...new Set(d.libraryFiles)];
  if (o.verilatorArgs?.length) d.verilatorArgs = [...(d.verilatorArgs ?? []), ...checkVerilatorArgs(o.verilatorArgs)];
  d.includeDirs.push(...(o.includeDirs ?? []).map((f) => resolve(cwd, f)));
  for (const def of o.defines ?? []) {
    const eq = def.indexOf('=');
    if (eq < 0) d.defines[def] = null;
    else d.defines[def.slice(0, eq)] = def.slice(eq + 1);
  }
  for (const p of o.params ?? []) {
    const eq = p.indexOf('=');
    if (eq <= 0) throw new DesignError('filelist', `parameter override '${p}' must be NAME=VALUE (e.g. -G WIDTH=16)`);
    d.params[p.slice(0, eq)] = p.slice(eq + 1);
  }
  if (o.top) d.top = o.top;
  d.files = [...new Set(d.files)];
  return { design: d, warnings };
}

const isDir = (p: string): boolean => existsSync(p) && statSync(p).isDirectory();

/** Everything before the simulator's front end: folders expanded, manifests asked, repository
 * searched. Files keep the given order here; packages go first in introspect (orderFiles). */
export async function prepareDesign(o: DesignOptions, signal?: AbortSignal): Promise<PreparedDesign> {
  const cwd = o.cwd ?? process.cwd();
  const notes: string[] = [];
  const plain: string[] = [];
  const folderFiles: string[] = [];
  const folderLibraries: string[] = [];
  const folderIncludes: string[] = [];
  let manifestRef = o.manifest ? { ...o.manifest, path: resolve(cwd, o.manifest.path) } : undefined;
  const setManifest = (path: string): void => {
    if (manifestRef && findManifest(manifestRef.path) !== path) {
      throw new DesignError(
        'manifest',
        `two manifests were named (${manifestRef.path} and ${path}); name one (its dependencies come with it)`,
      );
    }
    manifestRef = { ...(manifestRef ?? {}), path };
  };
  for (const f of o.files) {
    const abs = resolve(cwd, f);
    if (manifestKind(abs) && existsSync(abs)) setManifest(abs);
    else if (isDir(abs)) {
      const m = findManifest(abs);
      if (m) {
        notes.push(`${relative(cwd, abs) || '.'}: read through its manifest ${relative(cwd, m)}`);
        const others = otherManifests(abs);
        if (others.length)
          notes.push(
            `${relative(cwd, abs) || '.'} also holds ${others.map((f) => relative(cwd, f)).join(', ')}: Bender.yml comes first when a folder holds both; name ${others.length === 1 ? 'the .core file' : 'a .core file'} to read it instead`,
          );
        setManifest(m);
        continue;
      }
      const folder = collectFolder(abs);
      notes.push(...describeFolder(relative(cwd, abs) || '.', folder));
      folderFiles.push(...folder.files);
      folderIncludes.push(...folder.includeDirs);
      folderLibraries.push(...folder.libraryDirs);
    } else plain.push(f);
  }
  const { design: d, warnings } = designFromOptions({ ...o, files: plain, cwd });
  d.files = [...new Set([...folderFiles, ...d.files])];
  d.includeDirs = [...new Set([...d.includeDirs, ...folderIncludes])];
  let manifest: ManifestDesign | undefined;
  if (manifestRef) {
    manifest = await readManifest({ ...manifestRef, top: manifestRef.top ?? o.top }, { signal });
    notes.push(...manifest.notes);
    const absent = manifest.files.filter((f) => !existsSync(f));
    if (absent.length) {
      const tool = manifest.kind === 'fusesoc' ? 'FuseSoC' : 'Bender';
      throw new DesignError(
        'missing-file',
        `${tool} lists ${absent.map((f) => relative(cwd, f)).join(', ')} for ${relative(cwd, manifest.manifest)}, but ${absent.length === 1 ? 'that file does' : 'those files do'} not exist: fix the manifest's file list (or check out the missing files).`,
      );
    }
    // What the user typed wins over the manifest (a -D or -G on the command line is deliberate).
    d.files = [...new Set([...manifest.files, ...d.files])];
    d.includeDirs = [...new Set([...manifest.includeDirs, ...d.includeDirs])];
    d.defines = { ...manifest.defines, ...d.defines };
    d.params = { ...manifest.params, ...d.params };
    if (!d.top && manifest.top) d.top = manifest.top;
  }
  d.files = checkSources(d.files, warnings, cwd);
  const out: PreparedDesign = { design: d, warnings, notes, discovered: { includeDirs: [], files: [] }, manifest };
  // A manifest's tool answered for the whole design: searching beside it would hide its mistakes.
  if (o.discover === true && !manifest && d.files.length && d.files.every((f) => existsSync(f) && !isDir(f))) {
    // Library files (-v, -y) declare modules too: what they provide is not searched for.
    const found = discover([...d.files, ...d.libraryFiles], d.includeDirs, {
      cwd,
      root: repositoryRoot(commonDir(d.files)),
      libraryDirs: folderLibraries,
    });
    out.discovery = found;
    d.includeDirs.push(...found.includeDirs);
    d.files.push(...found.files);
    d.libraryFiles.push(...found.libraryFiles.filter((f) => !d.libraryFiles.includes(f)));
    out.discovered = { includeDirs: found.includeDirs, files: found.files };
    notes.push(...found.notes);
  }
  return out;
}

/** A front-end error about a name nobody provides, restated with what was searched and the next
 * step; other errors pass through unchanged. */
export function explainMissing(e: DesignError, p: PreparedDesign, cwd: string): DesignError {
  const text = e.message;
  const show = (x: string): string => relative(cwd, x) || '.';
  const disc = p.discovery;
  const where = disc
    ? `${disc.searchedFiles} HDL files under ${disc.root}${disc.truncated ? ' (the search stopped at its bound)' : ''}`
    : '';
  const inc = /Cannot find include file:? ['"]?([^\s'"]+)/.exec(text)?.[1];
  if (inc) {
    const amb = disc?.ambiguous.find((a) => a.kind === 'include' && a.name === inc);
    if (amb) {
      return new DesignError(
        'ambiguous',
        `\`include "${inc}" is in none of the include folders, and the repository holds it in several: ${amb.candidates.map(show).join(', ')}. Choose one with -I <folder> (chorus.json "includeDirs").`,
        e.diagnostics,
        amb.candidates,
      );
    }
    const searched = [...p.design.includeDirs.map(show), "the including file's folder"].join(', ');
    const origin = p.manifest
      ? `the include folders ${p.manifest.kind === 'fusesoc' ? 'FuseSoC' : 'Bender'} gave (${searched})`
      : `the include folders (${searched})${where ? ` and ${where}` : ''}`;
    return new DesignError(
      'missing-include',
      `include file ${inc} was not found: searched ${origin}. Add the folder that holds it with -I <folder> (chorus.json "includeDirs")${p.manifest ? ", or fix the manifest's include_dirs / include_path" : ''}.${disc ? manifestHint(disc.root, show) : ''}`,
      e.diagnostics,
    );
  }
  const pkg =
    /package '([^']+)' is used/.exec(text)?.[1] ??
    /Package\/class '([^']+)' not found|Importing from missing package '([^']+)'/.exec(text)?.slice(1).find(Boolean);
  const mod = /Cannot find file containing module: '([^']+)'/.exec(text)?.[1];
  const name = pkg ?? mod;
  if (name) {
    const kind = pkg ? 'package' : 'module';
    const amb = disc?.ambiguous.find((a) => a.kind === kind && a.name === name);
    if (amb) {
      return new DesignError(
        'ambiguous',
        `${kind} ${name} is declared by none of the design files, and by several in the repository: ${amb.candidates.map(show).join(', ')}. Add the right one to the files (chorus.json "files").`,
        e.diagnostics,
        amb.candidates,
      );
    }
    if (p.manifest) {
      const tool = p.manifest.kind === 'fusesoc' ? 'FuseSoC' : 'Bender';
      const deps = p.manifest.kind === 'fusesoc' ? '`depend`' : '`dependencies`';
      const top = p.design.top ? '' : `, or name the top with --top (chorus.json "top") so that modules it does not use are not elaborated`;
      return new DesignError(
        e.kind,
        `${e.message}\nNo file ${tool} listed for ${show(p.manifest.manifest)} declares ${kind} ${name}: check the manifest's ${deps}${top}.`,
        e.diagnostics,
        e.candidates,
      );
    }
    if (where && disc) {
      const what =
        kind === 'package' ? `declares 'package ${name}'` : `declares 'module ${name}' (searched files named ${name}.sv / ${name}.v)`;
      return new DesignError(
        e.kind === 'missing-package' ? 'missing-package' : e.kind,
        `${e.message}\nSearched ${where}: no file there ${what}. Add the file that declares it (chorus.json "files"), or a -f file list.${manifestHint(disc.root, show)}`,
        e.diagnostics,
        e.candidates,
      );
    }
  }
  return e;
}

/** A name no file in the repository provides may come from a dependency its manifest names. */
function manifestHint(root: string, show: (p: string) => string): string {
  let found: string | null = null;
  try {
    found = findManifest(root);
  } catch (e) {
    if (e instanceof DesignError && e.candidates.length) found = e.candidates[0];
  }
  return found
    ? ` The repository has a manifest (${show(found)}): its dependencies may provide it; name the manifest instead of the files.`
    : '';
}

/** What the first bytes of a source file say it is. */
export type SourceProblem =
  | { kind: 'vhdl'; why: string }
  | { kind: 'binary'; why: string }
  | { kind: 'utf16' }
  | { kind: 'empty' }
  | { kind: 'not-utf8'; offset: number; byte: number; line: number };

const HEAD_BYTES = 64 * 1024;

/** Reads the head of a file and says whether it is something other than Verilog text. */
export function sourceProblem(path: string, head?: Buffer): SourceProblem | null {
  if (/\.vhdl?$/i.test(path)) return { kind: 'vhdl', why: 'its extension' };
  let buf = head;
  if (!buf) {
    try {
      const fd = openSync(path, 'r');
      try {
        buf = Buffer.alloc(HEAD_BYTES);
        buf = buf.subarray(0, readSync(fd, buf, 0, HEAD_BYTES, 0));
      } finally {
        closeSync(fd);
      }
    } catch {
      return null; // checkFilesExist reports a missing or unreadable file
    }
  }
  if ((buf[0] === 0xff && buf[1] === 0xfe) || (buf[0] === 0xfe && buf[1] === 0xff)) return { kind: 'utf16' };
  const nul = buf.indexOf(0);
  if (nul >= 0) {
    // Text in UTF-16 without a byte order mark: every other byte is NUL.
    const even = buf.subarray(0, 200).filter((b, i) => i % 2 === 1 && b === 0).length;
    if (buf.length >= 8 && even >= Math.min(100, buf.length / 2) * 0.8) return { kind: 'utf16' };
    return { kind: 'binary', why: `a NUL byte at offset ${nul}` };
  }
  const text = buf.toString('latin1');
  if (!/\S/.test(text)) return { kind: 'empty' };
  const vhdl = text.replace(/--[^\n]*/g, ' ');
  const verilog = text.replace(/\/\/[^\n]*|\/\*[\s\S]*?(\*\/|$)/g, ' ');
  if (
    (/^\s*library\s+\w+\s*;/im.test(vhdl) || /^\s*entity\s+\w+\s+is\b/im.test(vhdl) || /^\s*use\s+ieee\./im.test(vhdl)) &&
    !/\bend(module|package|interface|program|primitive)\b/.test(verilog)
  )
    return { kind: 'vhdl', why: 'its content' };
  if (!/\S/.test(verilog)) return { kind: 'empty' };
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(buf.length === HEAD_BYTES ? trimPartialUtf8(buf) : buf);
  } catch {
    const bad = firstInvalidUtf8(buf);
    const control = [...buf].filter((b) => b < 9 || (b > 13 && b < 32)).length;
    if (control > buf.length / 20) return { kind: 'binary', why: 'bytes that are not text' };
    return { kind: 'not-utf8', offset: bad, byte: buf[bad], line: text.slice(0, bad).split('\n').length };
  }
  return null;
}

/** The buffer without a multi-byte character cut at its end. */
function trimPartialUtf8(b: Buffer): Buffer {
  let i = b.length - 1;
  while (i > 0 && b.length - i < 4 && (b[i] & 0xc0) === 0x80) i--;
  return b[i] >= 0xc0 ? b.subarray(0, i) : b;
}

function firstInvalidUtf8(b: Buffer): number {
  for (let i = 0; i < b.length; i++) {
    const c = b[i];
    if (c < 0x80) continue;
    const n = c >= 0xf0 && c < 0xf8 ? 3 : c >= 0xe0 ? 2 : c >= 0xc2 && c < 0xe0 ? 1 : -1;
    if (n < 0) return i;
    for (let k = 1; k <= n; k++) if (i + k >= b.length || (b[i + k] & 0xc0) !== 0x80) return i;
    i += n;
  }
  return 0;
}

/**
 * The design files with the ones that are not Verilog refused by name, each with what to do: VHDL,
 * binary files, UTF-16 text. Empty files are left out with a warning (an error when every file is
 * empty); text that is not UTF-8 is read as it is (Verilator reads bytes), with a warning.
 */
export function checkSources(files: string[], warnings: string[], cwd = process.cwd()): string[] {
  const show = (f: string): string => relative(cwd, f) || f;
  const keep: string[] = [];
  const empty: string[] = [];
  for (const f of files) {
    if (!existsSync(f) || statSync(f).isDirectory()) {
      keep.push(f);
      continue;
    }
    const p = sourceProblem(f);
    if (!p) keep.push(f);
    else if (p.kind === 'vhdl')
      throw new DesignError(
        'not-verilog',
        `${show(f)} is VHDL (by ${p.why}), not Verilog/SystemVerilog: chorus simulates with Verilator, which reads only Verilog and SystemVerilog. Leave the file out, or name a Verilog version of the design (a mixed-language design needs a converter such as GHDL's synth --out=verilog or vhd2vl first).`,
      );
    else if (p.kind === 'binary')
      throw new DesignError(
        'not-verilog',
        `${show(f)} is not a text file (${p.why}): name the design's .sv/.v sources, not a compiled or binary file.`,
      );
    else if (p.kind === 'utf16')
      throw new DesignError(
        'not-verilog',
        `${show(f)} is UTF-16 text, which Verilator cannot read: convert it to UTF-8 (e.g. iconv -f UTF-16 -t UTF-8 ${show(f)} > ${show(f)}.utf8, then rename it), or save it as UTF-8 in the editor.`,
      );
    else if (p.kind === 'empty') empty.push(f);
    else {
      warnings.push(
        `${show(f)}:${p.line}: not UTF-8 (byte 0x${p.byte.toString(16)} at offset ${p.offset}; Latin-1 or Windows-1252?): read as it is, but names and strings may be garbled; convert it with iconv -f latin1 -t utf-8`,
      );
      keep.push(f);
    }
  }
  if (empty.length && keep.length === 0)
    throw new DesignError(
      'no-module',
      `${empty.map(show).join(', ')} ${empty.length === 1 ? 'is' : 'are'} empty (no Verilog code): name the files that hold the design's modules`,
    );
  if (empty.length) warnings.push(`${empty.map(show).join(', ')}: empty (no Verilog code), left out`);
  return keep;
}
