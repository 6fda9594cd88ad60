// From what a user types (files, folders, manifests, -f lists, -I, -D, -G, --top) to a checked
// DesignSpec, ready for introspection (core/run/design.ts loadDesign runs it: the front end is the
// simulator layer's).
// A folder gives its sources (folder.ts); a FuseSoC/Bender manifest is read by its own tool
// (manifest/); includes, packages and modules the files need but nobody named are searched for in
// the design's repository (discover.ts). Every addition is reported in `notes`, and `discovered`
// holds what a project file should record so that the search happens once.
import { existsSync, statSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { emptyDesign, type DesignSpec } from './types.js';
import { readFileList } from './filelist.js';
import { DesignError } from './errors.js';
import { collectFolder, describeFolder } from './folder.js';
import { discover, type Discovery } from './discover.js';
import { findManifest, manifestKind, readManifest, type ManifestDesign } from './manifest/index.js';
import type { FusesocRef } from './manifest/fusesoc.js';

export interface DesignOptions {
  files: string[];
  fileLists?: string[];
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
  d.files.push(...o.files.map((f) => resolve(cwd, f)));
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
        setManifest(m);
        continue;
      }
      const folder = collectFolder(abs);
      notes.push(...describeFolder(relative(cwd, abs) || '.', folder));
      folderFiles.push(...folder.files);
      folderIncludes.push(...folder.includeDirs);
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
  const out: PreparedDesign = { design: d, warnings, notes, discovered: { includeDirs: [], files: [] }, manifest };
  // A manifest's tool answered for the whole design: searching beside it would hide its mistakes.
  if (o.discover === true && !manifest && d.files.length && d.files.every((f) => existsSync(f) && !isDir(f))) {
    const found = discover(d.files, d.includeDirs, { cwd });
    out.discovery = found;
    d.includeDirs.push(...found.includeDirs);
    d.files.push(...found.files);
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
