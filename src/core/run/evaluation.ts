// The evaluation runner: every (task, sample) of a suite through one row (a model through the
// agent loop, the built-in generator, or the suite's reference testbench), on a pool of workers,
// with a per-sample result cache for --resume. Results do not depend on the worker count: seeds
// are derived from (base seed, task id, sample), and records are kept in task and sample order.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { loadDesign } from './design.js';
import type { DesignInfo, DesignSpec } from '../design/types.js';
import type { Simulator, SimRequest } from '../sim/simulator.js';
import type { SimLimits } from '../vocabulary/types.js';
import type { SimResult } from '../sim/result.js';
import type { ScoreMode } from '../vocabulary/types.js';
import { overallCoverage } from '../sim/ranking.js';
import { runGeneration } from './generation.js';
import type { ModelBackend } from '../llm/backend.js';
import type { SamplingParams } from '../vocabulary/types.js';
import type { ModelConfig } from '../llm/factory.js';
import type { HistoryMode } from '../vocabulary/types.js';
import type { NamedText } from '../agent/protocol.js';
import { passes, type EvalSuite, type EvalTask, type RoundRecord, type SampleRecord, type TaskRecord } from '../eval/task.js';
import { computeMetrics, histogram, ranksAbove, roundCurve, type Outcome } from '../eval/metrics.js';
import { ResultCache, sampleKey } from '../eval/cache.js';
import { safeName } from '../eval/suites/materialize.js';
import { REPORT_SCHEMA_VERSION, type EvalReport, type EvalSettings, type ProgressEvent } from '../eval/report/model.js';
import { SETTINGS, settingDefault, type EvalSettingName, type SettingDef, type SettingValue } from '../vocabulary/settings.js';

export type EvalRow =
  | { kind: 'builtin' }
  | { kind: 'reference' }
  | {
      kind: 'model';
      backend: ModelBackend;
      /** What the report calls the model (directory or served name). */
      label: string;
      /** The model's configuration (the backend is open on it; the runner never disposes it). */
      model: ModelConfig;
      history?: HistoryMode;
      sampling?: Partial<SamplingParams>;
      /** Identifies the model for the cache (e.g. directory + dtype, or endpoint + name). */
      identity?: Record<string, unknown>;
    };

export interface EvalOptions {
  suite: EvalSuite;
  /** The tasks to run (a selection of suite.tasks); default all. */
  tasks?: EvalTask[];
  row: EvalRow;
  /** Samples per task (default 5; the reference row always runs 1). */
  samples?: number;
  /** Refinement rounds after the first generation (default 3). */
  rounds?: number;
  /** Simulations at once (default: the number of cores). */
  workers?: number;
  outDir: string;
  /** Reuse cached sample results from an earlier run into the same folder. */
  resume?: boolean;
  simulator: Simulator;
  limits?: Partial<SimLimits>;
  /** How every candidate is scored (default `paper`, the paper's protocol). A `legal` run's
   * samples are cached apart from a `paper` run's. */
  score?: ScoreMode;
  /** Base seed (default 1): sample seeds derive from it, the task id and the sample index. */
  seed?: number;
  signal?: AbortSignal;
  onProgress?: (e: ProgressEvent) => void;
}

export type { AggregateRecord, EvalReport, ProgressEvent } from '../eval/report/model.js';
// What `chorus eval` and the eval benchmark use beside the runner: suites, the cache key of a model,
// the report writers.
export { EVAL_FORMATS, SuiteError, loadSuite, selectTasks } from '../eval/suites/index.js';
export { modelIdentity } from '../eval/cache.js';
export { readReport, writeReports } from '../eval/report/json.js';
export { safeName } from '../eval/suites/materialize.js';
export { REPORT_SCHEMA_VERSION } from '../eval/report/model.js';
export { CompareError, compareReports } from '../eval/compare.js';
export type { CompareInput, CompareOptions, Comparison } from '../eval/compare.js';
export { writeComparison } from '../eval/report/compare.js';

/** Deterministic per-sample seed in [1, 2^31-1]. */
export function sampleSeed(base: number, taskId: string, sample: number): number {
  const h = createHash('sha256').update(`${base}:${taskId}:${sample}`).digest();
  return h.readUInt32BE(0) & 0x7fffffff || 1;
}

/** A simulator that runs at most n simulations at once (others wait their turn, in order). */
export function limitSimulator(sim: Simulator, n: number): Simulator {
  let active = 0;
  const queue: Array<() => void> = [];
  const acquire = (): Promise<void> =>
    new Promise((ok) => {
      if (active < n) {
        active++;
        ok();
      } else queue.push(ok);
    });
  const release = (): void => {
    const next = queue.shift();
    if (next) next();
    else active--;
  };
  return {
    name: sim.name,
    info: () => sim.info(),
    async simulate(req: SimRequest): Promise<SimResult> {
      await acquire();
      try {
        return await sim.simulate(req);
      } finally {
        release();
      }
    },
  };
}

const toOutcome = (r: { coverage: number | null; passed: boolean }): Outcome => ({
  ok: r.coverage !== null,
  coverage: r.coverage ?? 0,
  passed: r.passed,
});

function roundFromResult(
  task: EvalTask,
  top: string,
  round: number,
  result: SimResult | null,
  extra: Partial<RoundRecord> = {},
): RoundRecord {
  return {
    round,
    status: result?.status ?? 'unparsable',
    coverage: overallCoverage(result),
    passed: passes(task, result, top),
    reward: result?.reward ?? 0,
    tokens: { prompt: 0, completion: 0 },
    sim_s: result?.timings.total ?? 0,
    model_s: 0,
    ...extra,
  };
}

/** A sample's record from its rounds: the best by the §5 ranking. */
function sampleFromRounds(sample: number, seed: number, rounds: RoundRecord[], wallS: number): SampleRecord {
  let best: number | null = null;
  rounds.forEach((r, i) => {
    if (best === null || ranksAbove(toOutcome(r), toOutcome(rounds[best]))) best = i;
  });
  const b = best === null ? null : rounds[best];
  return {
    sample,
    seed,
    coverage: b?.coverage ?? 0,
    passed: b?.passed ?? false,
    sim_ok: b?.coverage !== null && b !== null,
    status: b?.status ?? 'none',
    reward: b?.reward ?? 0,
    best_round: b ? b.round : null,
    rounds,
    tokens: rounds.reduce((a, r) => ({ prompt: a.prompt + r.tokens.prompt, completion: a.completion + r.tokens.completion }), {
      prompt: 0,
      completion: 0,
    }),
    wall_s: wallS,
  };
}

function rowLabel(row: EvalRow): string {
  return row.kind === 'model' ? row.label : row.kind === 'builtin' ? 'built-in generator' : 'reference testbench';
}

/** What identifies the row in the cache key (its settings are keyed apart, by name). */
function rowIdentity(row: EvalRow): unknown {
  if (row.kind === 'model') return { kind: 'model', label: row.label, identity: row.identity ?? null };
  return { kind: row.kind };
}

/**
 * Each run setting eval takes (src/core/vocabulary/settings.ts, `eval`), by its name, as this run
 * has it: report.json's config.settings, and, those marked `key`, the cache key. A setting the row
 * has no use for is null (history and sampling without a model).
 */
function evalSettings(
  o: EvalOptions,
  row: EvalRow,
  run: { samples: number; rounds: number; baseSeed: number; simulator: string },
): EvalSettings {
  const model = row.kind === 'model';
  const have: { [N in EvalSettingName]?: SettingValue<N> | null } = {
    rounds: run.rounds,
    samples: run.samples,
    seed: run.baseSeed,
    timeout: o.limits?.timeoutS,
    score: o.score,
    history: model ? row.history : null,
    temperature: model ? row.sampling?.temperature : null,
    topP: model ? row.sampling?.topP : null,
    maxNewTokens: model ? row.sampling?.maxNewTokens : null,
    simulator: run.simulator as SettingValue<'simulator'>,
  };
  const out: Record<string, unknown> = {};
  for (const d of SETTINGS as readonly SettingDef[]) {
    if (!d.eval) continue;
    const v = have[d.name as EvalSettingName];
    out[d.name] = v === undefined ? settingDefault(d.name as EvalSettingName, 'eval') : v;
  }
  return out as EvalSettings;
}

/** The settings that change what a sample does (`eval: 'key'`): part of its cache key. */
function keyedSettings(settings: EvalSettings): Record<string, unknown> {
  const keyed = (SETTINGS as readonly SettingDef[]).filter((d) => d.eval === 'key').map((d) => d.name);
  return Object.fromEntries(Object.entries(settings).filter(([k]) => keyed.includes(k)));
}

interface Loaded {
  design: DesignSpec;
  info: DesignInfo;
  specs: NamedText[];
}

/** One evaluation's settings, its tasks' records and the counts its units add to. */
interface EvalRun {
  o: EvalOptions;
  row: EvalRow;
  tasks: EvalTask[];
  samples: number;
  rounds: number;
  /** The run settings as this run has them (report.json config.settings). */
  settings: EvalSettings;
  workers: number;
  baseSeed: number;
  limits: Partial<SimLimits>;
  simInfo: Awaited<ReturnType<Simulator['info']>>;
  /** The simulator, at most `workers` simulations at once. */
  sim: Simulator;
  cache: ResultCache;
  tbDir: string;
  rowId: unknown;
  records: TaskRecord[];
  /** A task's design and specs, loaded once for all its samples. */
  load: (i: number) => Promise<Loaded>;
  candidates: number;
  cached: number;
}

/** A (task, sample) to run. */
interface Unit {
  i: number;
  j: number;
}

/** What a unit gave the report: its record, the design's top, its cache key and whether the record
 * came from the cache or may go into it. */
interface UnitResult {
  record: SampleRecord;
  top: string;
  key: string;
  cached: boolean;
  cacheable: boolean;
}

/** A sample's candidates scored: its record, the best testbench to keep, and whether the record is a
 * result (cacheable) rather than a model failure that --resume retries. */
interface SampleOutcome {
  record: SampleRecord;
  bestTb: { name: string; text: string } | null;
  cacheable: boolean;
}

/** How far the pool is: samples per task so far, units left per task, tasks and units done. */
interface PoolProgress {
  perTask: Array<Array<SampleRecord | undefined>>;
  remaining: number[];
  tasksDone: number;
  unitsDone: number;
}

export async function runEvaluation(o: EvalOptions): Promise<EvalReport> {
  const started = new Date();
  const t0 = performance.now();
  const run = await prepareRun(o);
  const { tasks } = run;
  const units = planUnits(run);
  const remaining = tasks.map((_, i) => units.filter((u) => u.i === i).length);
  const progress: PoolProgress = {
    perTask: tasks.map(() => []),
    remaining,
    tasksDone: tasks.filter((_, i) => remaining[i] === 0).length,
    unitsDone: 0,
  };
  announceStart(run, units, remaining);
  await runPool(run, units, progress);
  for (let i = 0; i < tasks.length; i++) run.records[i].samples = taskSamples(run.records[i], progress.perTask[i]);
  return evalReport(run, started, t0);
}

/** The run's settings from the options (defaults applied; the reference row runs 1 sample, 0 rounds)
 * and an empty record per task. */
async function prepareRun(o: EvalOptions): Promise<EvalRun> {
  const row = o.row;
  const rounds = row.kind === 'reference' ? 0 : Math.max(0, Math.floor(o.rounds ?? settingDefault('rounds', 'eval')));
  const samples = row.kind === 'reference' ? 1 : Math.max(1, Math.floor(o.samples ?? settingDefault('samples', 'eval')));
  const baseSeed = o.seed ?? settingDefault('seed', 'eval');
  const workers = Math.max(1, Math.floor(o.workers ?? 1));
  const tasks = o.tasks ?? o.suite.tasks;
  const simInfo = await o.simulator.info();
  return {
    o,
    row,
    tasks,
    samples,
    rounds,
    settings: evalSettings(o, row, { samples, rounds, baseSeed, simulator: simInfo.name }),
    workers,
    baseSeed,
    limits: o.limits ?? {},
    simInfo,
    sim: limitSimulator(o.simulator, workers),
    cache: new ResultCache(join(o.outDir, 'cache')),
    tbDir: join(o.outDir, 'testbenches'),
    rowId: rowIdentity(row),
    records: tasks.map((t) => ({
      id: t.id,
      top: t.top,
      instance: t.instance,
      coverage_target: t.coverageTarget,
      samples: [],
      ...(t.error ? { error: t.error } : {}),
    })),
    load: designLoader(tasks, o.signal),
    candidates: 0,
    cached: 0,
  };
}

/** Loads a task's design and specs on first use; its samples share the one promise. */
function designLoader(tasks: EvalTask[], signal: AbortSignal | undefined): (i: number) => Promise<Loaded> {
  const loads = new Map<number, Promise<Loaded>>();
  return (i) => {
    let p = loads.get(i);
    if (!p) {
      const t = tasks[i];
      p = (async () => {
        const { design, info } = await loadDesign({ files: t.designFiles, top: t.top || undefined }, signal);
        const specs = t.specFiles.map((f) => ({ name: basename(f), content: readFileSync(f, 'utf8') }));
        return { design, info, specs };
      })();
      loads.set(i, p);
    }
    return p;
  };
}

/** Every (task, sample) to run, in order; a task in error, or without the reference the row needs,
 * has none. */
function planUnits(run: EvalRun): Unit[] {
  const units: Unit[] = [];
  run.tasks.forEach((t, i) => {
    if (t.error) return;
    if (run.row.kind === 'reference' && !t.reference) {
      run.records[i].error = 'the suite has no reference testbench for this task';
      return;
    }
    for (let j = 0; j < run.samples; j++) units.push({ i, j });
  });
  return units;
}

function announceStart(run: EvalRun, units: Unit[], remaining: number[]): void {
  const { o, tasks, records } = run;
  o.onProgress?.({ type: 'start', units: units.length, tasks: tasks.length, workers: run.workers });
  // Tasks with nothing to run (errors) are reported first, in order.
  tasks.forEach((_, i) => {
    if (remaining[i] === 0)
      o.onProgress?.({
        type: 'task',
        task: records[i],
        done: tasks.filter((__, k) => remaining[k] === 0 && k <= i).length,
        tasks: tasks.length,
      });
  });
}

/** A task's samples in sample order; none for a task in error. */
function taskSamples(record: TaskRecord, perTask: Array<SampleRecord | undefined>): SampleRecord[] {
  return record.error ? [] : perTask.filter((x): x is SampleRecord => x !== undefined);
}

/** Runs the units on a pool of workers, recording and reporting each as it finishes. */
async function runPool(run: EvalRun, units: Unit[], progress: PoolProgress): Promise<void> {
  const { o, row, records } = run;
  // Model calls batch on servers: more agent runs than simulation slots may be in flight.
  const concurrency = row.kind === 'model' ? Math.max(run.workers, row.backend.parallelism) : run.workers;
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, units.length) }, async () => {
      while (next < units.length && !o.signal?.aborted) {
        const { i, j } = units[next++];
        // A design that failed to load for an earlier sample fails them all.
        const r = records[i].error ? null : await runUnit(run, i, j);
        unitDone(run, units.length, progress, i, j, r);
      }
    }),
  );
}

/** Records a finished unit (cached when it may be), and reports it and, when it was its task's
 * last, the task. */
function unitDone(run: EvalRun, units: number, progress: PoolProgress, i: number, j: number, r: UnitResult | null): void {
  const { o, tasks, records } = run;
  if (r) {
    progress.perTask[i][j] = r.record;
    records[i].top = r.top;
    if (r.cacheable) run.cache.put(tasks[i].id, j, r.key, r.record, r.top);
  }
  progress.unitsDone++;
  if (r)
    o.onProgress?.({
      type: 'sample',
      task: tasks[i].id,
      sample: j,
      cached: r.cached,
      done: progress.unitsDone,
      units,
      coverage: r.record.coverage,
      passed: r.record.passed,
    });
  if (--progress.remaining[i] === 0) {
    records[i].samples = taskSamples(records[i], progress.perTask[i]);
    progress.tasksDone++;
    o.onProgress?.({ type: 'task', task: records[i], done: progress.tasksDone, tasks: tasks.length });
  }
}

/** Keeps a sample's best testbench under the run folder and names it in the record. */
function writeBest(run: EvalRun, id: string, j: number, tb: { name: string; text: string }, record: SampleRecord): void {
  const name = `${safeName(id)}.s${j}.${safeName(tb.name)}`;
  mkdirSync(run.tbDir, { recursive: true });
  writeFileSync(join(run.tbDir, name), tb.text);
  record.testbench = name;
}

/** One (task, sample): from the cache with --resume, else run; null when there is nothing to record
 * (cancelled, or the design failed to load: the task's error says why). */
async function runUnit(run: EvalRun, i: number, j: number): Promise<UnitResult | null> {
  const { o, row, records } = run;
  const t = run.tasks[i];
  const seed = sampleSeed(run.baseSeed, t.id, j);
  let refText: string | null = null;
  if (row.kind === 'reference') refText = readFileSync(t.reference!, 'utf8') + (t.referenceSuffix ?? '');
  const key = sampleKey({
    task: t,
    row: run.rowId,
    sample: j,
    seed,
    settings: keyedSettings(run.settings),
    simulator: run.simInfo,
    limits: run.limits,
    testbench: refText,
  });
  if (o.resume) {
    const hit = run.cache.get(t.id, j, key);
    if (hit) {
      run.cached++;
      return { record: hit.record, top: hit.top, key, cached: true, cacheable: false };
    }
  }
  let loaded: Loaded;
  try {
    loaded = await run.load(i);
  } catch (e) {
    if (!records[i].error) records[i].error = `design error: ${(e as Error).message}`;
    return null;
  }
  const top = loaded.info.top;
  const started = performance.now();
  const wall = (): number => (performance.now() - started) / 1000;
  let out: SampleOutcome | null;
  try {
    out =
      refText !== null
        ? await referenceSample(run, t, j, seed, loaded, refText, wall)
        : await generatedSample(run, t, j, seed, loaded, wall);
  } catch (e) {
    if (o.signal?.aborted) return null;
    const record = { ...sampleFromRounds(j, seed, [], wall()), status: 'error', error: (e as Error).message.split('\n')[0] };
    return { record, top, key, cached: false, cacheable: false };
  }
  if (!out) return null;
  // A model failure is kept as it is; a result only if the run was not cancelled meanwhile.
  if (out.cacheable && o.signal?.aborted) return null;
  if (out.bestTb) writeBest(run, t.id, j, out.bestTb, out.record);
  return { record: out.record, top, key, cached: false, cacheable: out.cacheable };
}

/** The reference row: the suite's own testbench, simulated once. */
async function referenceSample(
  run: EvalRun,
  t: EvalTask,
  j: number,
  seed: number,
  loaded: Loaded,
  refText: string,
  wall: () => number,
): Promise<SampleOutcome> {
  const top = loaded.info.top;
  const result = await run.sim.simulate({
    design: loaded.design,
    top,
    testbench: { name: basename(t.reference!), content: refText },
    limits: run.limits,
    ...(run.o.score ? { score: run.o.score } : {}),
    signal: run.o.signal,
  });
  run.candidates++;
  return { record: sampleFromRounds(j, seed, [roundFromResult(t, top, 0, result)], wall()), bestTb: null, cacheable: true };
}

/** The built-in generator or a model: the protocol's rounds, the best kept; null when cancelled. */
async function generatedSample(
  run: EvalRun,
  t: EvalTask,
  j: number,
  seed: number,
  loaded: Loaded,
  wall: () => number,
): Promise<SampleOutcome | null> {
  const { row, o } = run;
  const top = loaded.info.top;
  // The built-in generator and a model both run through the one generation entry point.
  const gen = await runGeneration(
    {
      design: loaded.design,
      info: loaded.info,
      model: row.kind === 'model' ? row.model : null,
      ...(row.kind === 'model'
        ? {
            backend: row.backend,
            specs: loaded.specs,
            instruction: t.instruction,
            samples: 1,
            history: row.history ?? 'markov',
            sampling: { ...row.sampling, seed },
            simConcurrency: 1,
          }
        : {}),
      simulator: run.sim,
      rounds: run.rounds,
      // The protocol's rounds, every one (its per-round curves count them).
      allRounds: true,
      coverageTarget: t.coverageTarget,
      instance: t.instance,
      seed,
      limits: run.limits,
      score: o.score,
    },
    undefined,
    o.signal,
  );
  const rs = gen.attempts.map((r) =>
    roundFromResult(t, top, r.round, r.result, {
      status: r.result?.status ?? (r.testbench === null ? 'unparsable' : 'none'),
      tokens: { ...r.tokens },
      model_s: r.modelMs / 1000,
      sim_s: r.simMs / 1000,
    }),
  );
  run.candidates += gen.attempts.filter((r) => r.result !== null).length;
  const record = sampleFromRounds(j, seed, rs, wall());
  const b = record.best_round === null ? undefined : gen.attempts.find((r) => r.round === record.best_round);
  const bestTb = b?.testbench ? { name: b.filename ?? gen.tbName, text: b.testbench } : null;
  if (gen.cancelled) return null;
  // A model failure (server down after retries, timeout) is not a result: not cached, so
  // --resume retries the sample.
  const failed = gen.attempts.find((r) => r.error);
  if (failed?.error) {
    record.error = `model call failed (${failed.error.kind}): ${failed.error.message.split('\n')[0]}`;
    return { record, bestTb, cacheable: false };
  }
  return { record, bestTb, cacheable: true };
}

/** The report: the suite, the row, the settings, the aggregate metrics over the tasks without
 * error, the per-round curve and every task's record. */
function evalReport(run: EvalRun, started: Date, t0: number): EvalReport {
  const { o, row, tasks, records, samples, rounds } = run;
  const scored = records.filter((r) => !r.error);
  const m = computeMetrics(scored.map((r) => r.samples.map((s) => ({ ok: s.sim_ok, coverage: s.coverage, passed: s.passed }))));
  const curve = roundCurve(
    scored.map((r) => r.samples.map((s) => s.rounds.map(toOutcome))),
    rounds,
  );
  const all = scored.flatMap((r) => r.samples);
  const tokens = all.reduce((a, s) => ({ prompt: a.prompt + s.tokens.prompt, completion: a.completion + s.tokens.completion }), {
    prompt: 0,
    completion: 0,
  });
  const wallS = (performance.now() - t0) / 1000;
  const sum = (f: (r: RoundRecord) => number): number => all.reduce((a, s) => a + s.rounds.reduce((b, r) => b + f(r), 0), 0);
  return {
    schema_version: REPORT_SCHEMA_VERSION,
    suite: {
      name: o.suite.name,
      path: o.suite.path,
      format: o.suite.format,
      tasks_in_suite: o.suite.tasks.length,
      tasks_selected: tasks.length,
      skipped: o.suite.skipped,
    },
    row: { kind: row.kind, label: rowLabel(row), ...(row.kind === 'model' && row.identity ? { model: row.identity } : {}) },
    config: {
      settings: run.settings,
      workers: run.workers,
      simulator: run.simInfo,
      limits: run.limits,
      resume: o.resume ?? false,
    },
    aggregate: {
      pass_at_1: m.pass_at_1,
      pass_at_5: m.pass_at_5,
      cov_at_1: m.cov_at_1,
      cov_at_5: m.cov_at_5,
      sim_pass: m.sim_pass,
      tasks: scored.length,
      errors: records.length - scored.length,
      samples: m.samples,
      tokens: { ...tokens, total: tokens.prompt + tokens.completion },
      wall_s: wallS,
      sim_s: sum((r) => r.sim_s),
      model_s: sum((r) => r.model_s),
      candidates: run.candidates,
      candidates_per_min: wallS > 0 ? (run.candidates / wallS) * 60 : 0,
      cached_samples: run.cached,
      coverage_histogram: histogram(all.map((s) => s.coverage)),
    },
    per_round: curve,
    tasks: records,
    complete: !o.signal?.aborted && records.every((r) => r.error !== undefined || r.samples.length === samples),
    started_at: started.toISOString(),
    finished_at: new Date().toISOString(),
  };
}
