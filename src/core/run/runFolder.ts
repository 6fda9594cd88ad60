// The run folder: every `chorus generate`, `refine` and `sim` writes what it made and measured into
// `<out-dir>/<design>/<timestamp>/` (by default `chorus-out/` beside the design), with a `latest`
// link to the newest run:
//
//   round-1.sv ...     the testbench of every round (rounds counted from 1)
//   round-1.log ...    each round's simulation log (the record's bounded, text-safe log)
//   tb_<top>.sv        the best testbench
//   coverage.dat       the best round's coverage database, the host's own copy (harness report)
//   coverage.info      lcov, from the scored point set of the best round
//   coverage.html      the design's sources annotated with hits, toggles and uncovered reasons
//   summary.json       the run record
//   junit.xml          one testcase per round; a failed round is a failure with its reason
//
// Nothing here is read from a simulation's run directory (the testbench could write there): the
// database comes from the harness report through SimRequest.onCoverageData, the points from the
// result, the sources from the design files the host resolved itself.
import {
  accessSync,
  constants,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { freemem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { Simulator, SimRequest, SimStageName } from '../sim/simulator.js';
import type { SimResult } from '../sim/result.js';
import { getSimulator } from '../sim/registry.js';
import type { CoveragePoint } from '../coverage/model.js';
import { toLcov } from '../coverage/lcov.js';
import { coverageHtml } from '../coverage/html.js';
import { runFailure } from '../sim/assertions.js';
import { safeJson } from '../util/untrusted.js';
import { junitXml, type JunitCase } from './junit.js';

export { removeTrackedScratch } from '../util/scratch.js';
export { junitXml, type JunitCase } from './junit.js';
export { coverageHtml, escapeHtml } from '../coverage/html.js';

/** The folder name under a design's folder that holds its runs, by default. */
export const RUN_ROOT = 'chorus-out';

/**
 * Why `path` cannot be written as a `kind` (a file, or a folder made when missing), or undefined
 * when it can: checked before any work starts. `force`: an existing file may be replaced.
 */
export function outputProblem(path: string, kind: 'file' | 'dir', force = false): string | undefined {
  const p = resolve(path);
  try {
    // Never written through: a link in the output's place could point anywhere (~/.bashrc).
    if (lstatSync(p).isSymbolicLink())
      return `${p} is a symbolic link; outputs are never written through one: remove it or choose another --out`;
  } catch {
    /* absent */
  }
  let probe = p;
  while (!existsSync(probe)) {
    const up = dirname(probe);
    if (up === probe) break;
    probe = up;
  }
  let st;
  try {
    st = statSync(probe);
  } catch (e) {
    return `cannot write ${p}: ${(e as Error).message}`;
  }
  if (probe === p) {
    if (kind === 'file') {
      if (st.isDirectory()) return `${p} is a folder, not a file`;
      if (!force) return `${p} exists; choose another --out or pass --force to overwrite it`;
      return writable(dirname(p)) ? undefined : `cannot write ${p}: ${dirname(p)} is not writable`;
    }
    if (!st.isDirectory()) return `${p} is a file, not a folder`;
    return writable(p) ? undefined : `cannot write in ${p}: the folder is not writable`;
  }
  if (!st.isDirectory()) return `cannot write ${p}: ${probe} is a file, not a folder`;
  return writable(probe) ? undefined : `cannot write ${p}: ${probe} is not writable`;
}

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** A plain name for a folder: the design's top module, never a path. */
function plainName(s: string): string {
  return s.replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^\.+/, '_') || 'design';
}

function stamp(d: Date): string {
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

/** A run folder that cannot be made as asked (a symbolic link in its place): the user's to fix. */
export class RunFolderError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RunFolderError';
  }
}

function refuseSymlink(path: string, what: string): void {
  let link = false;
  try {
    link = lstatSync(path).isSymbolicLink();
  } catch {
    return; // absent: made as a plain folder
  }
  if (link)
    throw new RunFolderError(
      `${what} ${path} is a symbolic link; run folders are never written through one: remove the link, or choose another folder with --out`,
    );
}

/** Makes `<root>/<design>/<timestamp>[-n]/` and points `<root>/<design>/latest` at it. */
export function openRunFolder(root: string, design: string, now = new Date()): string {
  const base = join(resolve(root), plainName(design));
  // A run folder is written into, so a symlink at its root or design level (a checkout may carry
  // `chorus-out -> ~/.ssh`) would redirect the writes: refused, never followed.
  refuseSymlink(resolve(root), 'the run folder');
  mkdirSync(base, { recursive: true });
  refuseSymlink(resolve(root), 'the run folder');
  refuseSymlink(base, "the run folder's design folder");
  let name = stamp(now);
  for (let i = 2; ; i++) {
    try {
      mkdirSync(join(base, name));
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      name = `${stamp(now)}-${i}`;
    }
  }
  const dir = join(base, name);
  const latest = join(base, 'latest');
  let isLink = false;
  try {
    isLink = lstatSync(latest).isSymbolicLink();
  } catch {
    isLink = true; // absent
  }
  if (isLink) {
    const tmp = join(base, `.latest-${process.pid}`);
    try {
      rmSync(tmp, { force: true });
      symlinkSync(name, tmp);
      renameSync(tmp, latest);
    } catch {
      rmSync(tmp, { force: true });
    }
  }
  return dir;
}

/** The Verilator build's memory cap by default: three quarters of the memory available now, at
 * least 2 GiB (MiB). */
export function defaultBuildMemoryLimitMb(): number {
  let availMb = freemem() / (1024 * 1024);
  try {
    const m = /^MemAvailable:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'));
    if (m) availMb = Number(m[1]) / 1024;
  } catch {
    // not Linux: freemem
  }
  return Math.max(2048, Math.floor((availMb * 3) / 4));
}

/** The words for a build that ran out of memory under `limitMb`, or undefined when `r` did not. */
export function outOfMemoryHint(r: SimResult | null | undefined, limitMb: number | null): string | undefined {
  if (!r || !r.diagnostics.some((d) => d.code === 'CHORUS-OOM')) return undefined;
  if (limitMb === null) return 'Verilator ran out of memory building this design';
  const gb = limitMb / 1024;
  const size = gb < 1 ? `${limitMb} MB` : `${gb >= 10 ? gb.toFixed(0) : gb.toFixed(1)} GB`;
  return `Verilator needed more than ${size} to build this design; raise it with --memory-limit`;
}

/** What the host kept of one simulation for the run folder. */
export interface Recorded {
  coverageData?: string;
  points?: CoveragePoint[];
}

/**
 * A simulator that asks for the point set and the host's copy of the database on every request,
 * reports each stage as it starts, and keeps both per result (`recorded`) out of the result
 * itself (so the run record stays as it was).
 */
export function recordingSimulator(
  inner: Simulator | string,
  onStage?: (stage: SimStageName) => void,
): { simulator: Simulator; recorded: (r: SimResult | null | undefined) => Recorded | undefined } {
  const sim = typeof inner === 'string' ? getSimulator(inner) : inner;
  const kept = new WeakMap<SimResult, Recorded>();
  // A caller may hand on a copy of the result (the agent bounds its log for the next prompt): the
  // run's scratch folder name, unique per simulation, finds it too.
  const byRun = new Map<string, Recorded>();
  /** The request as recorded (points and the coverage data kept) and what keeps its result. */
  const recording = (req: SimRequest): { req: SimRequest; keep: (r: SimResult) => SimResult } => {
    let coverageData: string | undefined;
    return {
      req: {
        ...req,
        wantPoints: true,
        onCoverageData: (t) => {
          coverageData = t;
          req.onCoverageData?.(t);
        },
        onStage: (s) => {
          onStage?.(s);
          req.onStage?.(s);
        },
      },
      keep: (r) => {
        const { points, ...rest } = r;
        const out = (req.wantPoints ? r : rest) as SimResult;
        const rec: Recorded = { coverageData, points };
        kept.set(out, rec);
        if (out.protection.scratchDir) byRun.set(out.protection.scratchDir, rec);
        return out;
      },
    };
  };
  const simulator: Simulator = {
    name: sim.name,
    info: () => sim.info(),
    simulate: async (req: SimRequest) => {
      const r = recording(req);
      return r.keep(await sim.simulate(r.req));
    },
    ...(sim.simulateGroup
      ? {
          simulateGroup: async (reqs: SimRequest[], opts?: { parallel?: number }) => {
            const rs = reqs.map(recording);
            const results = await sim.simulateGroup!(
              rs.map((r) => r.req),
              opts,
            );
            return results.map((result, k) => rs[k].keep(result));
          },
        }
      : {}),
  };
  return {
    simulator,
    recorded: (r) => (r ? (kept.get(r) ?? (r.protection.scratchDir ? byRun.get(r.protection.scratchDir) : undefined)) : undefined),
  };
}

/** One round as the run folder shows it. */
export interface RunRound {
  /** `round-1`, `sample-2-round-1` ...: the files' base name. */
  label: string;
  testbench: string | null;
  result: SimResult | null;
  /** Why the round has no result (an unparsable reply, a model error). */
  failure?: string;
}

export interface RunFolderContent {
  top: string;
  rounds: RunRound[];
  /** The best round (generate, refine) or the one run (sim): its testbench is written as
   * `fileName` (none: not written again) and its coverage as coverage.dat/.info/.html. */
  best: { testbench: string; result: SimResult | null; recorded?: Recorded; fileName: string | null } | null;
  /** The run record (summary.json). */
  summary: unknown;
  /** The design's files the host resolved (the only sources the page shows). */
  designFiles: string[];
}

/**
 * A round's result as the run record (summary.json, and `--json`, the same object) holds it: its
 * log is a file of the run folder (`log_file`), not copied, and the uncovered points are listed for
 * the best round only (the others count them: `uncovered_count`). That keeps the record small
 * (under 1 MB on the IP corpus; it was 12 MB with every round's log and list) while the best
 * round keeps everything a reader of the record needs.
 */
export function roundRecord(result: SimResult | null, label: string, best: boolean): Record<string, unknown> | null {
  if (!result) return null;
  const { log: _log, points: _points, uncovered, ...rest } = result;
  return {
    ...rest,
    log_file: `${label}.log`,
    ...(best ? { uncovered } : { uncovered_count: uncovered?.length ?? 0 }),
  };
}

/** Writes the run folder's files into `dir` (made by openRunFolder); returns the names written. */
export function writeRunFolder(dir: string, c: RunFolderContent): string[] {
  const written: string[] = [];
  // 'wx': a fresh folder, so nothing is there; never follow whatever might be.
  const put = (name: string, text: string): void => {
    writeFileSync(join(dir, name), text, { flag: 'wx' });
    written.push(name);
  };
  const nl = (s: string): string => (s.endsWith('\n') ? s : s + '\n');
  for (const r of c.rounds) {
    if (r.testbench !== null) put(`${r.label}.sv`, nl(r.testbench));
    const log = r.result
      ? `status: ${r.result.status} at ${r.result.stage}\n${r.result.err_msg ? `${r.result.err_msg}\n` : ''}\n${r.result.log}`
      : `no simulation: ${r.failure ?? 'no testbench'}\n`;
    put(`${r.label}.log`, nl(log));
  }
  if (c.best) {
    if (c.best.fileName) put(c.best.fileName, nl(c.best.testbench));
    const rec = c.best.recorded;
    if (rec?.coverageData) put('coverage.dat', rec.coverageData);
    if (rec?.points) {
      put('coverage.info', toLcov(rec.points));
      const result = c.best.result;
      const files = new Set(c.designFiles.map((f) => resolve(f)));
      const shown = [...new Set(rec.points.filter((p) => files.has(resolve(p.file))).map((p) => p.file))];
      const sources = shown.map((f) => ({ file: f, text: readText(f) }));
      const w = result?.coverage?.waived;
      const pct = (x: number | null | undefined): string => (x === undefined || x === null ? '-' : `${(x * 100).toFixed(2)}%`);
      put(
        'coverage.html',
        coverageHtml({
          title: `coverage of ${c.top}`,
          // The verdict, not the bare status: a run that broke the design's assertions failed.
          verdict: result
            ? (() => {
                const failure = runFailure(result);
                return failure === undefined
                  ? { passed: true, text: "passed: the testbench ran and broke none of the design's assertions" }
                  : { passed: false, text: `failed: ${failure}` };
              })()
            : undefined,
          figures: { scored: w?.overall ?? null, ceiling: result?.coverage?.ceiling?.figures.overall ?? null },
          summary: [
            `status: ${result ? (runFailure(result) === undefined ? result.status : `failed (${result.status})`) : '-'}`,
            `overall ${pct(w?.overall)} = mean(block ${pct(w?.block)}, toggle ${pct(w?.toggle)})`,
            `line ${pct(w?.line)}, branch ${pct(w?.branch)}`,
          ],
          sources,
          points: rec.points,
          uncovered: result?.uncovered ?? [],
          assertions: result?.dutAssertions ?? [],
          rounds: c.rounds.map((r) => ({
            label: r.label,
            status: r.result ? (runFailure(r.result) === undefined ? r.result.status : 'failed') : 'not simulated',
            coverage: r.result?.status === 'success' ? (r.result.coverage?.waived.overall ?? null) : null,
            note: r.result
              ? (runFailure(r.result) ?? (r.result === c.best?.result ? 'the best round' : 'ran; not the best'))
              : (r.failure ?? ''),
          })),
          testbench: { name: c.best.fileName ?? 'testbench', text: c.best.testbench },
        }),
      );
    }
  }
  put('summary.json', safeJson(c.summary, 2) + '\n');
  put('junit.xml', junitXml(`chorus.${c.top}`, c.rounds.map(junitCase)));
  return written;
}

/** Where a front end points its reader in a run folder: the best round's log (else the last
 * round's), the coverage report and the JUnit file, as absolute paths (null: not written). */
export interface RunFolderFiles {
  dir: string;
  log: string | null;
  report: string | null;
  junit: string | null;
}

export function runFolderFiles(dir: string, c: RunFolderContent, written: string[]): RunFolderFiles {
  const has = (name: string): string | null => (written.includes(name) ? join(dir, name) : null);
  const round = c.rounds.find((r) => c.best?.result && r.result === c.best.result) ?? c.rounds.at(-1);
  return { dir, log: round ? has(`${round.label}.log`) : null, report: has('coverage.html'), junit: has('junit.xml') };
}

function readText(f: string): string {
  try {
    return readFileSync(f, 'utf8');
  } catch {
    return '';
  }
}

function junitCase(r: RunRound): JunitCase {
  const res = r.result;
  return {
    name: r.label,
    timeS: res?.timings.total ?? 0,
    failure: res ? runFailure(res) : (r.failure ?? 'no testbench'),
    output: res?.log,
  };
}
