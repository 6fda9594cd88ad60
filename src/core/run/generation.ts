// The one entry point that drives a generation run: `chorus generate`, the editor's worker and
// `chorus eval` all call runGeneration, so the engine choice (built-in generator or model agent),
// the warm start, the model configuration and the meaning of "rounds" cannot drift apart again.
//
// Rounds: `rounds` is the number of refinement rounds after the first generation, so a run makes
// at most rounds + 1 attempts, with the built-in generator and with a model alike (docs/protocol.md
// §3). Both stop early at the target.
import type { DesignInfo, DesignSpec } from '../design/types.js';
import { withFormal, withScore, type Simulator } from '../sim/simulator.js';
import { type SimLimits } from '../vocabulary/types.js';
import type { SimResult } from '../sim/result.js';
import type { ScoreMode } from '../vocabulary/types.js';
import { getSimulator } from '../sim/registry.js';
import { meetsTarget, overallCoverage } from '../sim/ranking.js';
import type { BackendInfo, ModelBackend } from '../llm/backend.js';
import type { SamplingParams } from '../vocabulary/types.js';
import { createBackend, type ModelConfig } from '../llm/factory.js';
import type { NamedText } from '../agent/protocol.js';
import { runAgent } from '../agent/loop.js';
import type { AgentRound, SampleRun, TokenUsage } from '../agent/types.js';
import type { HistoryMode } from '../vocabulary/types.js';
import { GenerationCancelled, generateTestbench, type ScaledParam } from '../generate/generator.js';
import { DEFAULT_INSTANCE, DEFAULT_ROUNDS, DEFAULT_SEED, DEFAULT_COVERAGE_TARGET } from '../vocabulary/defaults.js';
import type { FormalBudget } from '../vocabulary/types.js';

/** The model-free generator alone, for the benchmark that measures it against human testbenches. */
export { generateTestbench } from '../generate/generator.js';

export interface GenerationRequest {
  /** The design, already loaded and introspected (run/design.ts loadDesign). */
  design: DesignSpec;
  info: DesignInfo;
  /** The model, or null for the built-in model-free generator. */
  model: ModelConfig | null;
  /** An open backend for `model` that the caller keeps and disposes (the editor's loaded model,
   * eval's one backend for every task); without it runGeneration opens one and disposes it. */
  backend?: ModelBackend;
  /** A simulator or a registered name (default `verilator`). */
  simulator?: Simulator | string;
  /** Refinement rounds after the first generation (default 3): at most rounds + 1 attempts. */
  rounds?: number;
  /** The built-in generator runs every round asked for, even after a round that covered nothing
   * new when the next would aim at nothing new (default: it stops there and says so). */
  allRounds?: boolean;
  /** Independent model samples, the best wins (default 1; the built-in generator runs one). */
  samples?: number;
  /** The coverage target to stop at, percent (default 100). */
  coverageTarget?: number;
  /** Stimulus seed of the generator and sampling seed of the model (default 1). */
  seed?: number;
  /** DUT instance name in the testbench (default `uut`). */
  instance?: string;
  /** Built-in generator: never scale parameters down. */
  keepParams?: boolean;
  /** Model: `markov` (default) or `full` history. */
  history?: HistoryMode;
  /** Model sampling; its seed defaults to `seed`. */
  sampling?: Partial<SamplingParams>;
  /** Model: specification files shown after the RTL. */
  specs?: NamedText[];
  /** Model: the task instruction (default: the reference wording). */
  instruction?: string;
  /** Built-in generator: the result of a testbench the first round refines (core/run/refinement.ts). */
  from?: SimResult;
  /** Built-in generator: the testbench module's name (default `tb_<top>`; a refinement keeps the input's). */
  tbModule?: string;
  /** Model: the built-in generator's best testbench is round 0 and the model refines it. */
  warmStart?: boolean;
  limits?: Partial<SimLimits>;
  /** How every candidate is scored (default `paper`): the built-in generator's and the model's
   * candidates alike, so the ranking and the reward of the whole run follow it. */
  score?: ScoreMode;
  /** The formal engine's limits for every candidate's design (absent: not run). */
  formal?: FormalBudget;
  /** Simulations at once across samples (default 1). */
  simConcurrency?: number;
}

/** One attempt: who wrote it, the candidate and the simulator's verdict. */
export interface GenerationRound {
  sample: number;
  /** 0 = the first generation, 1.. = refinement rounds. */
  round: number;
  source: 'builtin' | 'model' | 'warm-start';
  testbench: string | null;
  filename: string | null;
  /** Null when a model reply held no testbench (nothing to simulate). */
  result: SimResult | null;
  /** The generator's notes, or why a model reply held no testbench. */
  notes: string[];
  /** A model call that failed after its retries (nothing was simulated). */
  error?: { kind: string; message: string };
  tokens: TokenUsage;
  modelMs: number;
  simMs: number;
  /** Model and warm-start rounds: the agent's full record (messages, reply, parse, cache use). */
  agent?: AgentRound;
}

export interface GenerationResult {
  engine: 'builtin' | 'model';
  top: string;
  instance: string;
  /** The coverage target, percent. */
  coverageTarget: number;
  /** Refinement rounds asked for; attempts are at most rounds + 1 per sample. */
  rounds: number;
  /** Every attempt, in sample and round order. */
  attempts: GenerationRound[];
  /** The best candidate (by the §5 ranking), or null when no attempt produced a testbench. */
  best: GenerationRound | null;
  /** The testbench file name to use when the best attempt names none. */
  tbName: string;
  /** Built-in generator (and warm start): parameters instantiated below their default, and why. */
  scaledParams: ScaledParam[];
  /** The warm start's testbench result, when there was one. */
  warmStart: SimResult | null;
  /** The model that ran (null: the built-in generator). */
  model: BackendInfo | null;
  /** Per sample: its best round index, whether it met the target, why it stopped. */
  samples: Array<Pick<SampleRun, 'sample' | 'best' | 'passed' | 'stop'>>;
  tokens: TokenUsage;
  cancelled: boolean;
}

export type GenerationEvent =
  /** Transient progress (model loading, warm start): a status line. */
  | { type: 'progress'; message: string }
  /** A one-line notice worth keeping (engine choice, GPU fallback). */
  | { type: 'note'; message: string }
  /** The model is loaded: what runs, where. */
  | { type: 'model'; info: BackendInfo }
  | { type: 'round-start'; sample: number; round: number; attempts: number }
  | { type: 'text'; sample: number; round: number; piece: string }
  | { type: 'sim-start'; sample: number; round: number }
  | { type: 'round-end'; entry: GenerationRound; bestCoverage: number | null; attempts: number }
  | { type: 'warning'; sample: number; round: number; message: string };

export type GenerationEvents = (e: GenerationEvent) => void;

const NO_TOKENS: TokenUsage = { prompt: 0, completion: 0 };

function resolveSimulator(s: GenerationRequest['simulator']): Simulator {
  return typeof s === 'object' ? s : getSimulator(s ?? 'verilator');
}

/** The request's simulator, scoring every candidate in the request's mode. */
function scoredSimulator(req: GenerationRequest): Simulator {
  return withFormal(withScore(resolveSimulator(req.simulator), req.score), req.formal);
}

/** Runs one generation: the built-in generator when `model` is null, else the agent loop. */
export async function runGeneration(
  req: GenerationRequest,
  events: GenerationEvents = () => undefined,
  signal?: AbortSignal,
): Promise<GenerationResult> {
  const rounds = Math.max(0, Math.floor(req.rounds ?? DEFAULT_ROUNDS));
  return req.model === null ? builtin(req, rounds, events, signal) : withModel(req, req.model, rounds, events, signal);
}

async function builtin(req: GenerationRequest, rounds: number, events: GenerationEvents, signal?: AbortSignal): Promise<GenerationResult> {
  const attempts = rounds + 1;
  const coverageTarget = req.coverageTarget ?? DEFAULT_COVERAGE_TARGET;
  const instance = req.instance ?? DEFAULT_INSTANCE;
  let bestCov: number | null = null;
  const tbName = `tb_${req.info.top}.sv`;
  const toRound = (r: { round: number; testbench: string; result: SimResult; notes: string[] }): GenerationRound => ({
    sample: 0,
    round: r.round,
    source: 'builtin',
    testbench: r.testbench,
    filename: tbName,
    result: r.result,
    notes: r.notes,
    tokens: NO_TOKENS,
    modelMs: 0,
    simMs: r.result.timings.total * 1000,
  });
  const g = await generateTestbench(scoredSimulator(req), req.design, req.info, {
    attempts,
    coverageTarget,
    seed: req.seed ?? DEFAULT_SEED,
    keepParams: req.keepParams,
    instance,
    limits: req.limits,
    from: req.from,
    ...(req.tbModule ? { tbModule: req.tbModule } : {}),
    allAttempts: req.allRounds,
    signal,
    onRoundStart: (round) => events({ type: 'round-start', sample: 0, round, attempts }),
    onRound: (r) => {
      const c = overallCoverage(r.result);
      if (c !== null && (bestCov === null || c > bestCov)) bestCov = c;
      events({ type: 'round-end', entry: toRound(r), bestCoverage: bestCov, attempts });
    },
  }).catch((e: unknown) => {
    // Cancelled before any round finished: no best round, nothing to write.
    if (e instanceof GenerationCancelled) return { best: null, rounds: e.rounds, tbName: `tb_${req.info.top}.sv`, scaledParams: [] };
    throw e;
  });
  if ('stopped' in g && g.stopped) events({ type: 'note', message: g.stopped });
  const all = g.rounds.map(toRound);
  // Cancelled before any round finished: no best, nothing to write.
  const best = g.best ? all[g.rounds.indexOf(g.best)] : null;
  return {
    engine: 'builtin',
    top: req.info.top,
    instance,
    coverageTarget,
    rounds,
    attempts: all,
    best,
    tbName: g.tbName,
    scaledParams: g.scaledParams,
    warmStart: null,
    model: null,
    samples: [
      {
        sample: 0,
        best: best ? all.indexOf(best) : null,
        passed: meetsTarget(overallCoverage(best?.result), coverageTarget),
        stop: signal?.aborted ? 'cancelled' : meetsTarget(overallCoverage(best?.result), coverageTarget) ? 'target' : 'rounds',
      },
    ],
    tokens: NO_TOKENS,
    cancelled: signal?.aborted === true,
  };
}

/** A local model's loading progress and notices become events. */
function withHooks(model: ModelConfig, events: GenerationEvents): ModelConfig {
  if (model.kind !== 'local') return model;
  return {
    ...model,
    onProgress: (p) =>
      events({
        type: 'progress',
        message: `loading model: ${p.file} ${p.total ? `${Math.round((100 * (p.loaded ?? 0)) / p.total)}%` : p.status}`,
      }),
    onMessage: (message) => events({ type: 'note', message }),
  };
}

async function withModel(
  req: GenerationRequest,
  model: ModelConfig,
  rounds: number,
  events: GenerationEvents,
  signal?: AbortSignal,
): Promise<GenerationResult> {
  const simulator = scoredSimulator(req);
  const seed = req.seed ?? DEFAULT_SEED;
  let warmStart: { testbench: string; filename: string; result: SimResult } | undefined;
  let scaledParams: ScaledParam[] = [];
  if (req.warmStart) {
    events({ type: 'progress', message: 'warm start: running the built-in generator; the model refines its best testbench' });
    const g = await generateTestbench(simulator, req.design, req.info, {
      attempts: rounds + 1,
      coverageTarget: req.coverageTarget ?? DEFAULT_COVERAGE_TARGET,
      seed,
      keepParams: req.keepParams,
      instance: req.instance ?? DEFAULT_INSTANCE,
      limits: req.limits,
      signal,
    }).catch((e: unknown) => {
      if (e instanceof GenerationCancelled) return null; // the model's rounds see the signal too
      throw e;
    });
    if (g) {
      warmStart = { testbench: g.best.testbench, filename: g.tbName, result: g.best.result };
      scaledParams = g.scaledParams;
    }
  }
  // the signal also stops an in-process model load under way
  const backend = req.backend ?? (await createBackend(withHooks(model.kind === 'local' && signal ? { ...model, signal } : model, events)));
  try {
    const info = await backend.info();
    events({ type: 'model', info });
    const run = await runAgent({
      backend,
      simulator,
      design: req.design,
      info: req.info,
      specs: req.specs,
      instruction: req.instruction,
      instance: req.instance,
      rounds,
      samples: req.samples,
      coverageTarget: req.coverageTarget,
      history: req.history,
      sampling: { ...req.sampling, seed: req.sampling?.seed ?? seed },
      limits: req.limits,
      ...(req.score ? { score: req.score } : {}),
      simConcurrency: req.simConcurrency,
      signal,
      warmStart,
      onEvent: (e) => {
        if (e.type === 'round-start') events({ type: 'round-start', sample: e.sample, round: e.round, attempts: e.rounds });
        else if (e.type === 'text') events(e);
        else if (e.type === 'sim-start') events(e);
        else if (e.type === 'warning') events(e);
        else if (e.type === 'round-end')
          events({ type: 'round-end', entry: fromAgent(e.entry), bestCoverage: e.bestCoverage, attempts: rounds + 1 });
      },
    });
    const attempts = run.samples.flatMap((s) => s.rounds.map(fromAgent));
    const bestAgent = run.best ? run.samples[run.best.sample].rounds[run.best.round] : null;
    const best = attempts.find((r) => bestAgent !== null && r.agent === bestAgent) ?? null;
    return {
      engine: 'model',
      top: run.top,
      instance: run.instance,
      coverageTarget: run.coverageTarget,
      rounds,
      attempts,
      best,
      tbName: `tb_${run.top}.sv`,
      scaledParams,
      warmStart: warmStart?.result ?? null,
      model: info,
      samples: run.samples.map((s) => ({ sample: s.sample, best: s.best, passed: s.passed, stop: s.stop })),
      tokens: run.tokens,
      cancelled: run.cancelled || signal?.aborted === true,
    };
  } finally {
    if (!req.backend) await backend.dispose().catch(() => undefined);
  }
}

function fromAgent(r: AgentRound): GenerationRound {
  return {
    sample: r.sample,
    round: r.round,
    source: r.warmStart ? 'warm-start' : 'model',
    testbench: r.testbench,
    filename: r.filename,
    result: r.result,
    notes: r.parsed.status === 'unparsable' ? [r.parsed.reason] : [],
    ...(r.error ? { error: r.error } : {}),
    tokens: r.tokens,
    modelMs: r.modelMs,
    simMs: r.simMs,
    agent: r,
  };
}
