// The one entry point that drives a refinement of a testbench the user already has: `chorus refine`
// and the editor's worker both call runRefinement, so what happens without a model cannot drift
// apart again (core/run/generation.ts is the same for generation runs).
//
// With a model: one refinement step (agent/loop.ts refineOnce) from the simulator's feedback (the
// caller's result, the user's log, or a simulation of the testbench here), then the revision is
// simulated. Without a model: the built-in generator, as `--help` promises for every command, seeded
// with the user's testbench: its first round is biased toward what that testbench left uncovered
// (as a generator refinement round would be); it says so in a note. Its revision is an edit of the
// user's testbench (generate/splice.ts), every line kept; a new testbench only where it cannot be. The generator cannot read a
// log, so the testbench is simulated here for its uncovered points even when a log was given.
import type { DesignInfo, DesignSpec, PortInfo } from '../design/types.js';
import { withScore, type Simulator } from '../sim/simulator.js';
import { type SimLimits } from '../vocabulary/types.js';
import type { SimResult } from '../sim/result.js';
import type { ScoreMode } from '../vocabulary/types.js';
import { getSimulator } from '../sim/registry.js';
import type { BackendInfo, ModelBackend } from '../llm/backend.js';
import type { SamplingParams } from '../vocabulary/types.js';
import type { ModelConfig } from '../llm/factory.js';
import type { LogKind, NamedText } from '../agent/protocol.js';
import { refineOnce, type RefineOutcome } from '../agent/loop.js';
import { runGeneration, type GenerationResult, type GenerationRound } from './generation.js';
import { openModel } from './modelCheck.js';
import { DEFAULT_ROUNDS } from '../vocabulary/defaults.js';
import { assertionSummary, firedAssertions } from '../sim/assertions.js';
import { cancelledRun } from '../sim/ranking.js';
import { renameIdentifiers, scanUnits, testbenchTopOf, testbenchTops } from '../design/lexer.js';
import { readSite, spliceStimulus, type SpliceSite } from '../generate/splice.js';
import type { FormalBudget } from '../vocabulary/types.js';

export interface RefinementRequest {
  /** The design, already loaded and introspected (run/design.ts loadDesign). */
  design: DesignSpec;
  info: DesignInfo;
  /** The testbench to refine. */
  testbench: NamedText;
  /** The model, or null: the built-in generator seeded with the testbench. */
  model: ModelConfig | null;
  /** An open backend for `model` that the caller keeps and disposes (the editor's held model);
   * without it runRefinement opens one and disposes it. */
  backend?: ModelBackend;
  /** A simulator or a registered name (default `verilator`). */
  simulator?: Simulator | string;
  /** What the simulator said about the testbench: a result, or a log of the user's own run.
   * Absent: the testbench is simulated here first. */
  feedback?: { result: SimResult } | { log: string; kind?: LogKind };
  /** Model: specification files shown after the RTL. */
  specs?: NamedText[];
  /** DUT instance name in the testbench (default `uut`). */
  instance?: string;
  /** Model sampling. */
  sampling?: Partial<SamplingParams>;
  /** Stimulus seed of the built-in generator (default 1). */
  seed?: number;
  /** Built-in generator: refinement rounds after its first round (default 3). */
  rounds?: number;
  /** Built-in generator: the coverage target to stop at, percent (default 100). */
  coverageTarget?: number;
  limits?: Partial<SimLimits>;
  /** How the testbench and the revision are scored (default `paper`). */
  score?: ScoreMode;
  /** The formal engine's limits for the checks' design (absent: not run). */
  formal?: FormalBudget;
  /** Simulate the model's revision (default true; the built-in generator always simulates). */
  check?: boolean;
}

export interface RefinementResult {
  /** Who wrote the revision: the model, or the built-in generator (no model configured). */
  engine: 'model' | 'builtin';
  /** The testbench's own result when it was simulated here (no feedback given, or no model). */
  before: SimResult | null;
  /** The revision, or null when the model's reply held none. */
  testbench: string | null;
  filename: string | null;
  /** The revision's result (null: not simulated, or no revision). */
  result: SimResult | null;
  /** The model that ran (null: the built-in generator). */
  model: BackendInfo | null;
  /** Model: the refinement step's record (messages, reply, parse, tokens). */
  outcome: RefineOutcome | null;
  /** Built-in generator: the generation run. */
  generation: GenerationResult | null;
  /** Set when the revision must not replace the input: the input broke none of the design's
   * assertions and the revision breaks some (illegalRevision). The revision and its result stay
   * in the record for the run folder; callers write no file and say this reason. */
  refused?: string;
}

/**
 * The revision with its top module named `name` (the input's), when the model named it otherwise:
 * every use of the old name as an identifier (the declaration, `$dumpvars` scopes, hierarchical
 * references from the top) is renamed; comments and strings are left as written. Unchanged when
 * the revision already declares `name`, declares several tops, or `name` is unknown.
 */
export function keepModuleName(revision: string, name: string | undefined): { text: string; renamed?: string } {
  const tops = testbenchTops(revision);
  if (!name || tops.length !== 1 || tops[0] === name || testbenchDeclares(revision, name)) return { text: revision };
  const old = tops[0]!;
  const out = renameIdentifiers(revision, new Map([[old, name]]));
  return { text: out, renamed: `the revision's module ${old} is named ${name}, as the testbench it refines` };
}

function testbenchDeclares(text: string, name: string): boolean {
  return scanUnits(text).modules.includes(name);
}

/**
 * Why a revision may not replace the testbench it refines, or undefined when it may: a testbench
 * that ran and broke none of the design's assertions is never replaced by one that breaks any,
 * whatever coverage that one gains (a fired assertion is a failed run: sim/assertions.ts).
 */
export function illegalRevision(input: SimResult | null | undefined, revision: SimResult | null | undefined): string | undefined {
  if (!input || input.status !== 'success' || firedAssertions(input) || !firedAssertions(revision)) return undefined;
  return `the revision was not kept: ${assertionSummary(revision!.dutAssertions)}, and the testbench it refines broke none; drive the design only as its assertions allow`;
}

export type RefinementEvent =
  /** Transient progress: a status line. */
  | { type: 'progress'; message: string }
  /** A one-line notice worth keeping (the engine choice without a model). */
  | { type: 'note'; message: string }
  /** The testbench's own result, simulated here. */
  | { type: 'before'; result: SimResult }
  | { type: 'model'; info: BackendInfo }
  | { type: 'text'; piece: string };

export type RefinementEvents = (e: RefinementEvent) => void;

/** The notice given when no model is configured: what runs instead. */
export const NO_MODEL_NOTE =
  'no model configured: the built-in model-free generator refines the testbench (its first round aims at what the testbench left uncovered)';

/** Runs one refinement: the model's step when `model` is set, else the built-in generator. */
export async function runRefinement(
  req: RefinementRequest,
  events: RefinementEvents = () => undefined,
  signal?: AbortSignal,
): Promise<RefinementResult> {
  const simulator = withScore(typeof req.simulator === 'object' ? req.simulator : getSimulator(req.simulator ?? 'verilator'), req.score);
  if (req.model === null) return builtinRefinement(req, simulator, events, signal);
  return modelRefinement(req, req.model, simulator, events, signal);
}

/** The testbench as given, simulated here (no feedback, or the generator needs its uncovered points). */
async function simulateTestbench(
  req: RefinementRequest,
  simulator: Simulator,
  events: RefinementEvents,
  signal: AbortSignal | undefined,
): Promise<SimResult> {
  events({ type: 'progress', message: 'simulating the current testbench' });
  const result = await simulator.simulate({
    design: req.design,
    top: req.info.top,
    testbench: req.testbench,
    limits: req.limits,
    signal,
  });
  events({ type: 'before', result });
  return result;
}

/** No model: the built-in generator, seeded with the testbench's result, its rounds run as edits of
 * the testbench while they can be. */
async function builtinRefinement(
  req: RefinementRequest,
  simulator: Simulator,
  events: RefinementEvents,
  signal: AbortSignal | undefined,
): Promise<RefinementResult> {
  events({ type: 'note', message: NO_MODEL_NOTE });
  if (req.feedback && 'log' in req.feedback)
    events({
      type: 'note',
      message: 'the built-in generator does not read logs: the testbench is simulated here for its uncovered points',
    });
  const before = req.feedback && 'result' in req.feedback ? null : await simulateTestbench(req, simulator, events, signal);
  const from = before ?? (req.feedback as { result: SimResult }).result;
  const tbModule = testbenchTopOf(testbenchTops(req.testbench.content), req.info.top);
  // The revision is the user's testbench with the generator's stimulus added (generate/splice.ts);
  // every round is simulated as that edit, so its coverage is the edit's. When the testbench
  // cannot be edited, the generator writes a new one under the same module name, and says why.
  const ports = req.info.modules.find((m) => m.name === req.info.top)?.ports ?? [];
  const failing = failingReason(from);
  const site = failing
    ? { why: failing }
    : tbModule
      ? readSite(req.testbench.content, tbModule, req.info.top, ports)
      : { why: 'it declares no module' };
  const edits = editingSimulator(simulator, site, req.info.top, ports);
  const generation = await runGeneration(
    {
      design: req.design,
      info: req.info,
      model: null,
      simulator: edits.simulator,
      rounds: req.rounds ?? DEFAULT_ROUNDS,
      allRounds: req.rounds !== undefined,
      coverageTarget: req.coverageTarget,
      seed: req.seed,
      instance: req.instance,
      limits: req.limits,
      score: req.score,
      ...(req.formal ? { formal: req.formal } : {}),
      from,
      // The revision keeps the testbench's module name (the tools and scripts that run it name it).
      ...(tbModule ? { tbModule } : {}),
    },
    (e) => {
      if (e.type === 'round-start') events({ type: 'progress', message: `generator round ${e.round + 1}/${e.attempts}` });
    },
    signal,
  );
  return builtinResult(req, events, { before, from, generation, edits, tbModule });
}

/** Why stimulus added to the testbench cannot help, or undefined. A testbench that fails keeps
 * failing with anything added after its own stimulus (and Verilator 5.006 ends the run at the first
 * failed assertion, so the addition would not even run): then a new testbench is the better revision. */
function failingReason(from: SimResult): string | undefined {
  return from.status !== 'success'
    ? `it does not run to its end (${from.status}${from.err_msg ? `: ${from.err_msg.split('\n')[0]!.slice(0, 120)}` : ''})`
    : firedAssertions(from)
      ? `${assertionSummary(from.dutAssertions, 1).replace(/^the stimulus/, 'its own stimulus')}; a revision that keeps that stimulus fails too`
      : undefined;
}

/** The generator's simulator, running candidates as edits of the user's testbench. */
interface EditingSimulator {
  simulator: Simulator;
  /** A candidate as the generator wrote it → the edit that ran in its place. */
  editedTexts: Map<string, string>;
  /** Why editing is off (undefined while edits run). */
  failure(): string | undefined;
}

/** Each candidate is simulated as the edit while edits run; the first edit that does not (the
 * testbench drives an input in a way the added stimulus conflicts with, a construct the simulator
 * refuses) turns editing off, and that candidate and the rest run as written. */
function editingSimulator(simulator: Simulator, site: SpliceSite | { why: string }, top: string, ports: PortInfo[]): EditingSimulator {
  let editFailure: string | undefined = 'why' in site ? site.why : undefined;
  const editedTexts = new Map<string, string>();
  const splice = (generated: string): string | null => {
    if ('why' in site) return null;
    const r = spliceStimulus(site, generated, top, ports);
    if (!r.ok) editFailure ??= r.why;
    return r.ok ? r.text : null;
  };
  const editing: Simulator = {
    name: simulator.name,
    info: () => simulator.info(),
    simulate: async (r) => {
      const text = editFailure === undefined ? splice(r.testbench.content) : null;
      if (text === null) return simulator.simulate(r);
      const result = await simulator.simulate({ ...r, testbench: { ...r.testbench, content: text } });
      if (result.status === 'success' || cancelledRun(result)) {
        editedTexts.set(r.testbench.content, text);
        return result;
      }
      editFailure = `the edited testbench did not run: ${result.status}${result.err_msg ? `, ${result.err_msg.split('\n')[0]!.slice(0, 120)}` : ''}`;
      return simulator.simulate(r);
    },
  };
  return { simulator: editing, editedTexts, failure: () => editFailure };
}

/** The generator's run with its candidates as they ran (the edits), a note saying what the revision
 * is, and the refusal of a revision that breaks assertions the testbench did not. */
function builtinResult(
  req: RefinementRequest,
  events: RefinementEvents,
  run: { before: SimResult | null; from: SimResult; generation: GenerationResult; edits: EditingSimulator; tbModule: string | undefined },
): RefinementResult {
  const { generation, edits, tbModule } = run;
  const { editedTexts } = edits;
  const edited = (a: GenerationRound): GenerationRound =>
    a.testbench !== null && editedTexts.has(a.testbench) ? { ...a, testbench: editedTexts.get(a.testbench)! } : a;
  const attempts = generation.attempts.map(edited);
  const best = generation.best ? (attempts[generation.attempts.indexOf(generation.best)] ?? edited(generation.best)) : null;
  if (best?.testbench)
    events({
      type: 'note',
      message:
        generation.best?.testbench && editedTexts.has(generation.best.testbench)
          ? `the revision is ${req.testbench.name} as written, with the generator's stimulus added (task chorus_refine, called before its $finish)`
          : `the testbench could not be edited (${edits.failure() ?? 'no edit ran'}): the revision is a new testbench, module ${tbModule ?? `tb_${req.info.top}`}`,
    });
  const refused = illegalRevision(run.from, best?.result);
  return {
    ...(refused ? { refused } : {}),
    engine: 'builtin',
    before: run.before,
    testbench: best?.testbench ?? null,
    filename: best?.filename ?? generation.tbName,
    result: best?.result ?? null,
    model: null,
    outcome: null,
    generation: { ...generation, attempts, best },
  };
}

/** With a model: one refinement step from the feedback, the revision under the testbench's module
 * name, simulated unless `check` is false. A backend opened here is disposed here. */
async function modelRefinement(
  req: RefinementRequest,
  model: ModelConfig,
  simulator: Simulator,
  events: RefinementEvents,
  signal: AbortSignal | undefined,
): Promise<RefinementResult> {
  const before = req.feedback ? null : await simulateTestbench(req, simulator, events, signal);
  const feedback = req.feedback ?? { result: before! };
  const backend = req.backend ?? (await openModel(model, signal));
  try {
    const info = await backend.info();
    events({ type: 'model', info });
    events({ type: 'progress', message: 'asking the model for a revision' });
    const outcome = await refineOnce({
      backend,
      design: req.design,
      top: req.info.top,
      testbench: req.testbench,
      feedback,
      specs: req.specs,
      instance: req.instance,
      sampling: req.sampling,
      signal,
      onText: (piece) => events({ type: 'text', piece }),
    });
    // The revision keeps the testbench's module name, whatever the model called it: scripts, file
    // lists and the user's other files name that module.
    const kept =
      outcome.testbench !== null
        ? keepModuleName(outcome.testbench, testbenchTopOf(testbenchTops(req.testbench.content), req.info.top))
        : null;
    if (kept?.renamed) events({ type: 'note', message: kept.renamed });
    const revision = kept?.text ?? null;
    let result: SimResult | null = null;
    if (revision !== null && req.check !== false) {
      events({ type: 'progress', message: 'simulating the revision' });
      result = await simulator.simulate({
        design: req.design,
        top: req.info.top,
        testbench: { name: outcome.filename ?? req.testbench.name, content: revision },
        limits: req.limits,
        signal,
      });
    }
    const refused = illegalRevision('result' in feedback ? feedback.result : null, result);
    return {
      ...(refused ? { refused } : {}),
      engine: 'model',
      before,
      testbench: revision,
      filename: outcome.filename,
      result,
      model: info,
      outcome,
      generation: null,
    };
  } finally {
    if (!req.backend) await backend.dispose().catch(() => undefined);
  }
}
