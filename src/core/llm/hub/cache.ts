// The per-machine model cache: what `chorus model pull` fetched, each model in its own folder
//   <models dir>/<owner>/<name>/<commit>[-<selector>]/   the files, as the engines load a folder
//                                                        (+ chorus-model.json: where it came from)
//   <models dir>/.partial/<...same...>/                  a download under way or cancelled: resumed
//                                                        by the next pull, never listed as a model
//   <models dir>/editor.json                             the model folder the editor uses
// The folder is CHORUS_MODELS_DIR, else <cache>/models (cacheRoot(): CHORUS_CACHE_DIR or
// $XDG_CACHE_HOME/chorus or ~/.cache/chorus); the editor's chorus.model.downloadFolder overrides it.
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve, sep } from 'node:path';
import { cacheRoot } from '../../util/cache.js';
import type { CandidateKind } from './candidates.js';

export const MANIFEST = 'chorus-model.json';
const PARTIAL = '.partial';
const EDITOR = 'editor.json';

export function modelsDir(env: NodeJS.ProcessEnv = process.env): string {
  const d = env.CHORUS_MODELS_DIR?.trim();
  return d ? resolve(d) : join(cacheRoot(), 'models');
}

/** chorus-model.json: a pulled model's provenance, written last (a folder without it is not a model). */
export interface ModelManifest {
  repo: string;
  /** The revision asked for (branch, tag or commit; `main` when none). */
  revision: string;
  /** The commit it resolved to: the files are those of this commit. */
  commit: string;
  /** The hub it came from. */
  endpoint: string;
  kind: CandidateKind;
  selector: string;
  engine: 'llama' | 'onnx' | 'none';
  files: { path: string; size: number; sha256?: string; gitOid?: string }[];
  pulledAt: string;
  /** A GGUF converted here from a pulled checkpoint (convert.ts): that checkpoint's folder. */
  convertedFrom?: string;
}

export interface CachedModel extends ModelManifest {
  /** The model folder: what --model and chorus.model.localPath take. */
  dir: string;
  size: number;
}

/** The folder name of one pull, below the models dir: owner/name/<commit 12>[-<selector>]. */
export function entryPath(repo: string, commit: string, selector: string): string {
  const safe = selector.replace(/[^\w.-]+/g, '_');
  return join(...repo.split('/'), `${commit.slice(0, 12)}-${safe}`);
}

export const partialDir = (root: string, rel: string): string => join(root, PARTIAL, rel);

function readManifest(dir: string): ModelManifest | null {
  try {
    const m = JSON.parse(readFileSync(join(dir, MANIFEST), 'utf8')) as ModelManifest;
    return typeof m.repo === 'string' && Array.isArray(m.files) ? m : null;
  } catch {
    return null;
  }
}

/** The model folder at `dir` when it is a complete pull (its manifest and every file at its size). */
export function readCachedModel(dir: string): CachedModel | null {
  const m = readManifest(dir);
  if (!m) return null;
  for (const f of m.files) {
    const p = join(dir, f.path);
    if (!existsSync(p) || statSync(p).size !== f.size) return null;
  }
  return { ...m, dir, size: m.files.reduce((a, f) => a + f.size, 0) };
}

/** Every complete model in the cache, by repository then date. */
export function listModels(root = modelsDir()): CachedModel[] {
  const out: CachedModel[] = [];
  const walk = (dir: string, depth: number): void => {
    if (!existsSync(dir)) return;
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (!e.isDirectory() || e.name === PARTIAL) continue;
      const p = join(dir, e.name);
      if (depth === 2) {
        const m = readCachedModel(p);
        if (m) out.push(m);
      } else walk(p, depth + 1);
    }
  };
  walk(root, 0);
  return out.sort((a, b) => a.repo.localeCompare(b.repo) || a.pulledAt.localeCompare(b.pulledAt));
}

export interface PartialDownload {
  dir: string;
  /** owner/name/<commit>-<selector> */
  name: string;
  /** Bytes on disk (blocks: the downloader's files are sparse until complete). */
  bytes: number;
  /** The next pull of this model resumes from it (a chunk or a whole file is kept). */
  resumable: boolean;
}

/** What a pull is fetching, written into its partial folder first (the folder says what it holds). */
export const PULL_PLAN = '.pull.json';

export function writePullPlan(part: string, files: { path: string; size: number }[]): void {
  mkdirSync(part, { recursive: true });
  writeFileSync(join(part, PULL_PLAN), JSON.stringify({ files: files.map((f) => ({ path: f.path, size: f.size })) }) + '\n');
}

/**
 * Whether a partial download holds something a pull resumes from: a whole file, or a downloader's
 * .ipull file with its progress record (written after the file's bytes, so the .ipull file is
 * longer than the file; the downloader keeps whole 5 MB chunks only, and before the first there is
 * no record).
 */
export function resumable(part: string, files: { path: string; size: number }[]): boolean {
  return files.some((f) => {
    const p = join(part, f.path);
    if (existsSync(p) && statSync(p).size === f.size) return true;
    return existsSync(p + '.ipull') && statSync(p + '.ipull').size > f.size;
  });
}

function dirBytes(d: string): number {
  let n = 0;
  for (const e of readdirSync(d, { withFileTypes: true }))
    n += e.isDirectory() ? dirBytes(join(d, e.name)) : statSync(join(d, e.name)).blocks * 512;
  return n;
}

/** Downloads under way or cancelled (the next pull of the same model resumes the resumable ones). */
export function listPartials(root = modelsDir()): PartialDownload[] {
  const base = join(root, PARTIAL);
  const out: PartialDownload[] = [];
  if (!existsSync(base)) return out;
  for (const o of readdirSync(base))
    for (const n of existsSync(join(base, o)) ? readdirSync(join(base, o)) : [])
      for (const c of readdirSync(join(base, o, n))) {
        const dir = join(base, o, n, c);
        let files: { path: string; size: number }[] = [];
        try {
          files = (JSON.parse(readFileSync(join(dir, PULL_PLAN), 'utf8')) as { files: typeof files }).files;
        } catch {
          /* a folder without its plan: listed, never resumed */
        }
        out.push({ dir, name: `${o}/${n}/${c}`, bytes: dirBytes(dir), resumable: resumable(dir, files) });
      }
  return out;
}

/** Models a name picks: a folder path, `owner/name`, `owner/name:selector` or a commit prefix. */
export function findModels(query: string, root = modelsDir()): CachedModel[] {
  const all = listModels(root);
  const abs = resolve(query);
  const byDir = all.filter((m) => m.dir === abs);
  if (byDir.length) return byDir;
  const [repo, sel] = query.replace(/^hf:/, '').split(':');
  return all.filter(
    (m) =>
      m.repo.toLowerCase() === repo.toLowerCase() &&
      (!sel ||
        m.selector.toLowerCase() === sel.toLowerCase() ||
        m.commit.startsWith(sel) ||
        m.selector.toLowerCase().includes(sel.toLowerCase())),
  );
}

/** Removes `dir` and then each folder above it that this leaves empty, up to (not including) `top`. */
function removeUpTo(dir: string, top: string): void {
  rmSync(dir, { recursive: true, force: true });
  for (let d = resolve(dir, '..'); d.startsWith(top + sep) && existsSync(d) && !readdirSync(d).length; d = resolve(d, '..'))
    rmSync(d, { recursive: true, force: true });
}

/** Removes a model folder of the cache (and the empty owner/name folders above it). */
export function removeModel(m: CachedModel, root = modelsDir()): void {
  const dir = resolve(m.dir);
  if (!dir.startsWith(resolve(root) + sep)) throw new Error(`${dir} is not inside the model cache ${root}`);
  removeUpTo(dir, resolve(root));
}

/** Removes one partial download and the folders above it that it leaves empty (.partial too). */
export function dropPartial(dir: string, root = modelsDir()): void {
  removeUpTo(dir, resolve(root));
}

export function removePartials(root = modelsDir()): number {
  const ps = listPartials(root);
  for (const p of ps) rmSync(p.dir, { recursive: true, force: true });
  rmSync(join(root, PARTIAL), { recursive: true, force: true });
  return ps.length;
}

/** The model folder the editor last selected (written by the editor; read by `chorus model list`). */
export function editorModel(root = modelsDir()): string | null {
  try {
    const v = (JSON.parse(readFileSync(join(root, EDITOR), 'utf8')) as { dir?: unknown }).dir;
    return typeof v === 'string' ? v : null;
  } catch {
    return null;
  }
}

/** Records the model folder the editor uses (null: none, the built-in generator). None chosen is
 * written only where a models folder exists: choosing the built-in generator creates no cache. */
export function recordEditorModel(dir: string | null, root = modelsDir()): void {
  if (dir === null && !existsSync(root)) return;
  mkdirSync(root, { recursive: true });
  writeFileSync(join(root, EDITOR), JSON.stringify({ dir: dir ? resolve(dir) : null }) + '\n');
}

export function writeManifest(dir: string, m: ModelManifest): void {
  writeFileSync(join(dir, MANIFEST), JSON.stringify(m, null, 2) + '\n');
}
