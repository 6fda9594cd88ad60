// The design front end on slang: runs slang_facts.py (pyslang, installed by scripts/install-slang.sh)
// on a design and returns its facts (design/facts.ts): the assertions as written, clocks and resets
// from use, enum ports, included files. The design is read twice in one process, as Verilator
// compiles it (VERILATOR defined) and as any other simulator does (not defined), and the
// assertions are the union. The design may come from a request (the reward service), so slang runs
// in the jail like every other tool that reads untrusted text: it sees the design view (the
// design's directories minus dot-entries) and its own interpreter, nothing else; includes outside
// that view do not exist for it. Results are cached by the content of the files read (included
// files too) and the options, in memory and on disk, so a design is read once per machine.
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { DesignSpec } from '../../design/types.js';
import { combineReadings, type DesignFacts, type DesignReading } from '../../design/facts.js';
import { DesignError } from '../../design/errors.js';
import { assetPath } from '../../util/assets.js';
import { cacheRoot, contentHash, readCacheEntry, writeCacheEntry } from '../../util/cache.js';
import { runBounded } from '../../util/proc.js';
import { designView, detectJail, toolchainCommand, toolDirsOf } from '../jail.js';
import { ToolchainError } from '../verilator/toolchain.js';

/** The pyslang release the facts were developed and tested against (scripts/install-slang.sh). */
export const PYSLANG_VERSION = '12.1.0';

/** Bumped when the cache entry's shape changes (slang_facts.py's own text is in the key too). */
const FACTS_FORMAT = 1;

/** Where a Python with pyslang is: CHORUS_SLANG_PYTHON, else the venv install-slang.sh made. */
export function slangPython(): string {
  const env = process.env.CHORUS_SLANG_PYTHON;
  if (env) {
    if (!existsSync(env))
      throw new ToolchainError(`CHORUS_SLANG_PYTHON=${env} does not exist; point it at a Python with pyslang, or unset it`);
    return env;
  }
  const xdg = process.env.XDG_CACHE_HOME;
  const homes = [
    process.env.CHORUS_SLANG_DIR,
    join(cacheRoot(), 'slang', PYSLANG_VERSION),
    join(xdg && xdg.length ? xdg : join(homedir(), '.cache'), 'chorus', 'slang', PYSLANG_VERSION),
  ].filter((d): d is string => Boolean(d));
  for (const d of homes) {
    const py = join(d, 'venv', 'bin', 'python');
    if (existsSync(py)) return py;
  }
  throw new ToolchainError(
    `the design front end (slang) is not installed: run scripts/install-slang.sh (or ./scripts/setup.sh), or set CHORUS_SLANG_PYTHON to a Python with pyslang==${PYSLANG_VERSION}; looked in ${homes.map((d) => join(d, 'venv')).join(', ')}`,
  );
}

interface Request {
  files: string[];
  includeDirs: string[];
  defines: string[];
  undefines: string[];
  params: string[];
  top: string | null;
}

/** How a slang tool is told the design: absolute files and include folders, `NAME=VALUE`
 * parameters, and the defines other than VERILATOR (each reading says whether it is defined). */
export function designRequest(spec: DesignSpec): { files: string[]; includeDirs: string[]; params: string[]; defines: string[] } {
  return {
    files: [...spec.files, ...spec.libraryFiles].map((f) => resolve(f)),
    includeDirs: spec.includeDirs.map((d) => resolve(d)),
    params: Object.entries(spec.params).map(([k, v]) => `${k}=${v}`),
    defines: Object.entries(spec.defines)
      .filter(([k]) => k !== 'VERILATOR')
      .map(([k, v]) => (v === null ? k : `${k}=${v}`)),
  };
}

function requests(spec: DesignSpec, top: string | undefined): [Request, Request] {
  const { defines, ...rest } = designRequest(spec);
  const base = { ...rest, top: top ?? spec.top ?? null };
  // Verilator defines VERILATOR (and VERILATOR_TIMING... on some versions, which no design's
  // assertions depend on); any other simulator does not.
  return [
    { ...base, defines: [...defines, 'VERILATOR=1'], undefines: [] },
    { ...base, defines, undefines: ['VERILATOR'] },
  ];
}

const fileHash = contentHash;

interface CacheEntry {
  format: number;
  /** Content hashes of the included files when they were read: a changed header is a miss. */
  includes: Record<string, string | null>;
  readings: [DesignReading, DesignReading];
}

const memory = new Map<string, CacheEntry>();

let scriptHash: string | undefined;

function cacheKey(reqs: [Request, Request]): string {
  // The script's own text is in the key: a changed reading is never answered from an old one.
  scriptHash ??= fileHash(assetPath('slang_facts.py', 'sim/slang')) ?? 'missing';
  const h = createHash('sha256');
  h.update(JSON.stringify({ FACTS_FORMAT, PYSLANG_VERSION, scriptHash, reqs }));
  for (const f of reqs[0].files) h.update(`\0${f}\0${fileHash(f) ?? 'missing'}`);
  return h.digest('hex').slice(0, 40);
}

function stillValid(e: CacheEntry): boolean {
  return e.format === FACTS_FORMAT && Object.entries(e.includes).every(([f, h]) => fileHash(f) === h);
}

function cacheFile(key: string): string {
  return join(cacheRoot(), 'slang-facts', `${key}.json`);
}

function lookup(key: string): CacheEntry | null {
  const m = memory.get(key);
  if (m && stillValid(m)) return m;
  const e = readCacheEntry<CacheEntry>(cacheFile(key));
  if (e && stillValid(e)) {
    memory.set(key, e);
    return e;
  }
  return null;
}

function store(key: string, e: CacheEntry): void {
  memory.set(key, e);
  writeCacheEntry(cacheFile(key), e);
}

export interface ReadOptions {
  /** The top Verilator's netlist chose (introspection); the spec's own top otherwise. */
  top?: string;
  signal?: AbortSignal;
  timeoutS?: number;
}

/** Both readings of a design, from the cache or from slang in the jail. */
export async function readDesign(spec: DesignSpec, opts: ReadOptions = {}): Promise<[DesignReading, DesignReading]> {
  const reqs = requests(spec, opts.top);
  const key = cacheKey(reqs);
  const hit = lookup(key);
  if (hit) return hit.readings;
  const python = slangPython();
  const script = assetPath('slang_facts.py', 'sim/slang');
  const jail = await detectJail();
  const view = designView(reqs[0].files, reqs[0].includeDirs);
  const venv = dirname(dirname(python));
  const cmd = toolchainCommand(jail, python, ['-I', script, '--serve'], {
    writable: [],
    readOnly: [...view.paths, script],
    hidden: view.hidden,
    cwd: dirname(script),
    toolDirs: [...toolDirsOf(python), venv],
  });
  const r = await runBounded(cmd.file, cmd.args, {
    env: cmd.env,
    input: reqs.map((q) => JSON.stringify(q)).join('\n') + '\n',
    timeoutS: opts.timeoutS ?? 120,
    signal: opts.signal,
    outputLimitBytes: 64 * 1024 * 1024,
  });
  if (r.cancelled) throw new DesignError('tool', 'cancelled');
  if (r.timedOut) throw new DesignError('tool', `slang did not finish reading the design within ${opts.timeoutS ?? 120} s`);
  const lines = r.stdout.split('\n').filter((l) => l.trim());
  if (r.exitCode !== 0 || lines.length !== 2) {
    const why = (r.spawnError ?? r.stderr.trim().split('\n').slice(-3).join(' ')) || `exit ${r.exitCode}`;
    throw new ToolchainError(`the design front end (slang, ${python}) failed: ${why}; reinstall it with scripts/install-slang.sh`);
  }
  const readings = lines.map((l) => JSON.parse(l) as DesignReading) as [DesignReading, DesignReading];
  const includes: Record<string, string | null> = {};
  for (const rd of readings) for (const inc of rd.includes) includes[inc.file] = fileHash(inc.file);
  store(key, { format: FACTS_FORMAT, includes, readings });
  return readings;
}

/**
 * The design's facts for `top` (design/facts.ts). A design slang cannot elaborate as Verilator
 * compiles it is a DesignError naming slang's first error; the other reading failing only costs
 * its assertions (said in `disagreements`).
 */
export async function designFacts(spec: DesignSpec, opts: ReadOptions = {}): Promise<DesignFacts> {
  const [withV, withoutV] = await readDesign(spec, opts);
  if (!withV.ok || !withV.top) {
    const first = withV.diagnostics.find((d) => d.severity === 'error');
    const at = first?.file ? `${first.file}:${first.line}: ` : '';
    throw new DesignError('tool', `slang could not elaborate the design: ${at}${first?.message ?? 'no top module'}`);
  }
  const facts = combineReadings(withV, withoutV.ok ? withoutV : null, withV.top);
  if (!withoutV.ok)
    facts.disagreements.push('the design does not elaborate without the VERILATOR define: only the assertions Verilator sees are known');
  return facts;
}
