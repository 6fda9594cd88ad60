// The formal engine's runner: which coverage points are unreachable (with a proof) and which are
// reachable (with a witness: the inputs per cycle from the initial state). formal_reach.py does
// the work with existing engines (slang to place a check in each point's statement arm, Yosys's
// slang front end to build the model, ABC's PDR to prove or refute each check); this module runs
// it in the jail, because the design may come from a request, and caches its answers by the
// content of the design and the points asked about. The verdicts become coverage reasons in
// coverage/formal.ts. It needs the front end's venv with yowasp-yosys (scripts/install-slang.sh)
// and ABC (Debian: berkeley-abc; scripts/setup.sh).
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import type { DesignSpec } from '../../design/types.js';
import type { CoveragePoint } from '../../coverage/model.js';
import { ENGINE, judged, pointKey, type FormalReport } from '../../coverage/formal.js';
import { assetPath } from '../../util/assets.js';
import { cacheRoot, contentHash, readCacheEntry, writeCacheEntry } from '../../util/cache.js';
import { runBounded } from '../../util/proc.js';
import { DEFAULT_FORMAL_BUDGET } from '../../vocabulary/defaults.js';
import type { FormalBudget } from '../../vocabulary/types.js';
import { designView, detectJail, toolchainCommand, toolDirsOf } from '../jail.js';
import { designRequest, readDesign, slangPython } from '../slang/frontEnd.js';
import { ToolchainError } from '../verilator/toolchain.js';

/** Bumped when the cache entry's shape changes (formal_reach.py's own text is in the key too). */
const FORMAL_FORMAT = 1;

/** ABC: CHORUS_ABC, else berkeley-abc (Debian's name) or yosys-abc on PATH. */
export function abcPath(): string {
  const env = process.env.CHORUS_ABC;
  if (env) {
    if (!existsSync(env))
      throw new ToolchainError(`CHORUS_ABC=${env} does not exist; point it at ABC (berkeley-abc or yosys-abc), or unset it`);
    return env;
  }
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(delimiter))
    for (const name of ['berkeley-abc', 'yosys-abc']) {
      const f = join(dir, name);
      if (dir && existsSync(f)) return f;
    }
  throw new ToolchainError('the formal engine needs ABC: apt-get install berkeley-abc (or ./scripts/setup.sh), or set CHORUS_ABC');
}

/** The compiled Yosys (WebAssembly) cache install-slang.sh fills beside the front end's venv. */
export function yowaspCache(python: string): string {
  return join(dirname(dirname(dirname(python))), 'yowasp');
}

const memory = new Map<string, FormalReport>();
let scriptHash: string | undefined;

const fileHash = (f: string): string => contentHash(f) ?? 'missing';

interface Request {
  files: string[];
  includeDirs: string[];
  defines: string[];
  params: string[];
  top: string;
  /** label: the arm (`if`/`elsif`/`else`/`case`) or `toggle`, then with the bit as `signal`. */
  points: Array<{ id: string; file: string; line: number; label: string; signal?: string }>;
  designBudgetS: number;
  pointBudgetS: number;
  abc: string;
}

function request(spec: DesignSpec, top: string, points: CoveragePoint[], budget: FormalBudget, abc: string): Request {
  const keys = new Map<string, CoveragePoint>();
  for (const p of points) if (judged(p)) keys.set(pointKey(p), p);
  const { defines, ...design } = designRequest(spec);
  return {
    ...design,
    // As Verilator compiles the design: VERILATOR defined (what runs is what Verilator built).
    defines: [...defines, 'VERILATOR=1'],
    top,
    points: [...keys].map(([id, p]) =>
      p.type === 'toggle'
        ? { id, file: resolve(p.file), line: p.line, label: 'toggle', signal: p.label }
        : { id, file: resolve(p.file), line: p.line, label: p.label },
    ),
    designBudgetS: budget.designS,
    pointBudgetS: budget.pointS,
    abc,
  };
}

/** The answer's key: the request, the script, and the content of every file the design reads
 * (its files and, as the front end's cached reading names them, the files they include: a
 * changed header can change what is reachable). */
function cacheKey(req: Request, includes: string[]): string {
  scriptHash ??= fileHash(assetPath('formal_reach.py', 'sim/formal'));
  const h = createHash('sha256');
  // ABC's path is the host's business, not the answer's.
  h.update(JSON.stringify({ FORMAL_FORMAT, scriptHash, req: { ...req, abc: undefined } }));
  for (const f of [...req.files, ...includes]) h.update(`\0${f}\0${fileHash(f)}`);
  return h.digest('hex').slice(0, 40);
}

/** The files the design includes, from the front end's reading (cached: the run's check stage
 * made it); null when it cannot be had (the answer is then not cached). */
async function includedFiles(spec: DesignSpec, top: string, signal?: AbortSignal): Promise<string[] | null> {
  try {
    const readings = await readDesign(spec, { top, signal });
    return [...new Set(readings.flatMap((r) => r.includes.map((i) => i.file)))].sort();
  } catch {
    return null;
  }
}

function cacheFile(key: string): string {
  return join(cacheRoot(), 'formal', `${key}.json`);
}

function lookup(key: string): FormalReport | undefined {
  const m = memory.get(key);
  if (m) return m;
  const r = readCacheEntry<FormalReport>(cacheFile(key));
  if (r) memory.set(key, r);
  return r;
}

function store(key: string, r: FormalReport): void {
  memory.set(key, r);
  writeCacheEntry(cacheFile(key), r);
}

export interface FormalOptions {
  budget?: FormalBudget;
  signal?: AbortSignal;
}

/**
 * The engine's verdict on each judged point of `points` (block points: `if`/`else`/`case` arms)
 * for the design as elaborated with `top` and the spec's parameters. Throws ToolchainError when
 * the engine is not installed; a design it cannot read is a report with ok:false.
 */
export async function formalReach(spec: DesignSpec, top: string, points: CoveragePoint[], opts: FormalOptions = {}): Promise<FormalReport> {
  const budget = opts.budget ?? DEFAULT_FORMAL_BUDGET;
  const python = slangPython();
  const cache = yowaspCache(python);
  if (!existsSync(cache))
    throw new ToolchainError(
      `the formal engine (Yosys, WebAssembly) is not installed: run scripts/install-slang.sh (looked for its compiled cache in ${cache})`,
    );
  const abc = abcPath();
  const req = request(spec, top, points, budget, abc);
  const includes = await includedFiles(spec, top, opts.signal);
  const key = includes ? cacheKey(req, includes) : null;
  const hit = key ? lookup(key) : undefined;
  if (hit) return hit;
  const script = assetPath('formal_reach.py', 'sim/formal');
  const jail = await detectJail();
  const view = designView(req.files, req.includeDirs);
  const venv = dirname(dirname(python));
  const cmd = toolchainCommand(
    jail,
    python,
    ['-I', script, '-'],
    {
      writable: [],
      readOnly: [...view.paths, script, cache],
      hidden: view.hidden,
      cwd: dirname(script),
      toolDirs: [...toolDirsOf(python), venv, ...toolDirsOf(abc)],
    },
    // HOME: the runtime asks for one (platformdirs) even with its cache named; the jail's /tmp.
    { env: { YOWASP_CACHE_DIR: cache, HOME: '/tmp' } },
  );
  const limit = budget.designS + 60;
  const r = await runBounded(cmd.file, cmd.args, {
    env: cmd.env,
    input: JSON.stringify(req),
    timeoutS: limit,
    signal: opts.signal,
    outputLimitBytes: 16 * 1024 * 1024,
  });
  if (r.cancelled) throw new ToolchainError('cancelled');
  const line = r.stdout.trim().split('\n').pop() ?? '';
  let parsed: Omit<FormalReport, 'budget'>;
  try {
    parsed = JSON.parse(line) as Omit<FormalReport, 'budget'>;
  } catch {
    const why = r.timedOut
      ? `it did not finish within ${limit} s`
      : (r.spawnError ?? r.stderr.trim().split('\n').slice(-3).join(' ')) || `exit ${r.exitCode}`;
    // Not proven, never a claim: the report says why.
    const report: FormalReport = {
      ok: false,
      message: `the formal engine failed: ${why}`,
      engine: ENGINE,
      assumptions: [],
      clocks: [],
      multiClock: false,
      points: Object.fromEntries(
        req.points.map((p) => [p.id, { verdict: 'not-proven' as const, why: `the formal engine failed: ${why}` }]),
      ),
      witnesses: {},
      seconds: { model: 0, pdr: 0 },
      budget,
    };
    return report;
  }
  const report: FormalReport = { ...parsed, budget };
  if (key) store(key, report);
  return report;
}
