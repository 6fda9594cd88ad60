// The model-free stimulus generator: plan from the design's ports and compared constants, emit a
// testbench, simulate it, read what stayed uncovered, and bias the next round toward it (more
// and longer held runs for deep counters and states, the constants of uncovered conditions,
// respect for full/empty flags after the design's own assertions fired, and the input conditions
// those assertions forbid, from the front end's facts: legality.ts). Assertions only another
// simulator compiles are checked in a build without VERILATOR (otherSimulator.ts). Points proven
// unreachable in 2-state are never aimed at. Keeps the best round; a round whose stimulus broke
// the design's assertions is never best while a legal round exists (sim/ranking.ts).
import type { DesignInfo, DesignSpec } from '../design/types.js';
import type { Simulator } from '../sim/simulator.js';
import type { SimLimits } from '../vocabulary/types.js';
import type { SimResult } from '../sim/result.js';
import { parseSvLiteral, svLiteralValue } from '../design/svLiteral.js';
import { significant, tokenize } from '../design/svTokens.js';
import { better, cancelledRun, meetsTarget, overallCoverage } from '../sim/ranking.js';
import { introspect } from '../sim/verilator/introspect.js';
import { assignRoles, clockHalves, type Roles } from './roles.js';
import { propertyRules } from './propertyRules.js';
import { emitTestbench, segmentSeed, type StimulusPlan } from './emit.js';
import { scaleParams, type ScaledParam } from './params.js';
import { describeProtocols, detectProtocols } from './protocols/detect.js';
import { dutFailures, illegalCount, legalityRules } from './legality.js';
import { checkWithoutVerilator, withFailures } from './otherSimulator.js';
import { hiddenFromVerilator } from '../design/facts.js';
import { DEFAULT_INSTANCE, DEFAULT_PATIENCE, DEFAULT_ROUNDS, DEFAULT_SEED, DEFAULT_COVERAGE_TARGET } from '../vocabulary/defaults.js';

export interface GenerateOptions {
  /** The testbench module's name (default `tb_<top>`): a refinement keeps the user's. */
  tbModule?: string;
  /** Attempts in all, the first generation included: rounds + 1 (default DEFAULT_ROUNDS + 1). */
  attempts?: number;
  /** Stop as soon as coverage reaches this coverage target, percent (default 100). */
  coverageTarget?: number;
  /** Stop after this many attempts in a row without improvement (default DEFAULT_PATIENCE). */
  patience?: number;
  /** Run every attempt even when a round covers nothing new and the next aims at nothing new
   * (the user asked for a number of rounds: --rounds). */
  allAttempts?: boolean;
  /** Run each round also in a build without the VERILATOR define when the design has assertions
   * only that build compiles (default true; otherSimulator.ts). */
  checkWithoutVerilator?: boolean;
  /** DUT instance name in the testbench (default `uut`). */
  instance?: string;
  seed?: number;
  limits?: Partial<SimLimits>;
  signal?: AbortSignal;
  onRound?: (r: GeneratedRound) => void;
  /** Called before each round's simulation (a round that never starts is never announced). */
  onRoundStart?: (round: number) => void;
  /** Never scale parameters down (the user's -G overrides are never scaled either way). */
  keepParams?: boolean;
  /** A result of another testbench (refine without a model): the first round is already biased
   * toward what that testbench left uncovered, as a refinement round would be. */
  from?: SimResult;
}

export interface GeneratedRound {
  round: number;
  testbench: string;
  result: SimResult;
  notes: string[];
}

/** The run was cancelled before any round finished: there is no best round, and nothing to write.
 * `rounds`: what was attempted (each cancelled), for the record. */
export class GenerationCancelled extends Error {
  constructor(readonly rounds: GeneratedRound[]) {
    super('cancelled before the first round finished');
    this.name = 'GenerationCancelled';
  }
}

export interface GenerateResult {
  best: GeneratedRound;
  /** Why the run ended before its last attempt, when a round earned nothing (said to the user). */
  stopped?: string;
  rounds: GeneratedRound[];
  tbName: string;
  /** Parameters the testbench instantiates with a smaller value than the design's default, and why. */
  scaledParams: ScaledParam[];
}

export type { ScaledParam } from './params.js';

function designConstants(info: DesignInfo, roles: Roles): Record<string, bigint[]> {
  const m = info.modules.find((x) => x.name === info.top);
  const out: Record<string, bigint[]> = {};
  for (const p of roles.data) {
    const vals = (m?.comparisons[p.name] ?? []).map((v) => svLiteralValue(v)).filter((v): v is bigint => v !== null);
    if (vals.length) out[p.name] = vals;
  }
  return out;
}

/** The longest run a held control combination needs: enough to reach compared constants. */
function holdLength(info: DesignInfo): number {
  const m = info.modules.find((x) => x.name === info.top);
  let need = 32;
  for (const vals of Object.values(m?.comparisons ?? {})) {
    for (const v of vals) {
      const n = svLiteralValue(v);
      if (n !== null && n < 1_000_000n) need = Math.max(need, Number(n) + 4);
    }
  }
  return Math.min(need, 4096);
}

export function initialPlan(info: DesignInfo, design: DesignSpec, opts: GenerateOptions, scaled: ScaledParam[] = []): StimulusPlan {
  const m = info.modules.find((x) => x.name === info.top);
  if (!m) throw new Error(`module '${info.top}' not found in the introspected design`);
  const roles = assignRoles(m, info.modules, info.facts);
  const protocols = detectProtocols(info, roles);
  // Legal from the first round: every assertion whose structure gives an input rule.
  const legality = propertyRules(info.facts?.assertions ?? [], roles);
  return {
    top: info.top,
    ...(opts.tbModule ? { tbModule: opts.tbModule } : {}),
    instance: opts.instance ?? DEFAULT_INSTANCE,
    params: { ...design.params, ...Object.fromEntries(scaled.map((p) => [p.name, p.value])) },
    scaled,
    protocols,
    protocolNotes: describeProtocols(protocols),
    protocolScale: 1,
    walkCycles: 256,
    roles,
    seed: opts.seed ?? DEFAULT_SEED,
    randomCycles: 400,
    holdCycles: holdLength(info),
    holdCombos: 8,
    midRunResets: 1,
    constants: designConstants(info, roles),
    respectFlags: false,
    exhaustiveBits: 16,
    round: 0,
    notes: legality.map((r) => `legal stimulus: ${r.why}`),
    ...(legality.length ? { legality } : {}),
    ...((info.facts?.assertions ?? []).some((a) => a.action !== 'cover') ? { idleAroundReset: true } : {}),
  };
}

/** `file:line:type:label` of an uncovered point, the file by its base name. */
function pointKey(p: { file: string; line: number; type: string; label: string }): string {
  return `${p.file.replace(/^.*\//, '')}:${p.line}:${p.type}:${p.label}`;
}

/** The uncovered points no proof rules out: the ones worth aiming at (the formal engine's
 * witnesses among them, coverage/formal.ts). */
export function reachableUncovered(result: SimResult): SimResult['uncovered'] {
  return result.uncovered.filter((u) => u.reason?.kind !== 'unreachable-formal' && u.reason?.kind !== 'dead-param');
}

/** Whether round `a` should replace `b` as best: the one ranking (sim/ranking.ts), in which a
 * round whose stimulus broke the design's assertions never wins over a legal one. */
export function betterRound(a: SimResult, b: SimResult | undefined, coverageTarget: number): boolean {
  return better(a, b, coverageTarget);
}

/** True when `next` differs from `prev` only in what every round changes (seed, round, notes, run
 * lengths): no new constant, rule, clock ratio or replayed segment to try. */
export function aimsAtNothingNew(prev: StimulusPlan, next: StimulusPlan): boolean {
  const aims = (p: StimulusPlan): string =>
    JSON.stringify(
      {
        constants: p.constants,
        legality: p.legality,
        respect: p.respectFlags,
        clocks: p.roles.clocks,
        elite: p.elite,
        witnesses: p.witnesses,
      },
      (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v),
    );
  return aims(prev) === aims(next);
}

/**
 * Next round's plan from what the last one left uncovered. `foreign`: `result` is another
 * testbench's (a refinement's input): its failures add rules for the sites they name, but say
 * nothing about whether this plan's own rules work, so none is made stricter for them.
 */
export function refinePlan(prev: StimulusPlan, result: SimResult, info: DesignInfo, foreign = false): StimulusPlan {
  const notes: string[] = [];
  const next: StimulusPlan = {
    ...prev,
    round: prev.round + 1,
    seed: (prev.seed * 7919 + 17) % 2147483647,
    notes,
    constants: { ...prev.constants },
  };
  // Several clocks: the next round steps them at another ratio (a crossing is exercised at several
  // relations; the first round ran them related).
  if (prev.roles.clocks.length > 1) {
    const halves = clockHalves(prev.roles.clocks.length, next.round);
    next.roles = { ...prev.roles, clocks: prev.roles.clocks.map((c, i) => ({ ...c, halfPeriodNs: halves[i] })) };
    notes.push(`clocks at half periods ${halves.join('/')} ns`);
  }
  const uncovered = reachableUncovered(result);
  const blocks = uncovered.filter((u) => u.type !== 'toggle');
  // Witnesses of points still uncovered: replayed from the next round on (a point counts only
  // when the simulation covers it). The ones already replayed stay: they are what covers their
  // points now.
  const open = new Set(uncovered.map((u) => `${u.file}:${u.line}:${u.label}`));
  const kept = prev.witnesses ?? [];
  const key = (w: { file: string; line: number; label: string }): string => `${w.file}:${w.line}:${w.label}`;
  const fresh = (result.formal?.witnesses ?? []).filter((w) => open.has(key(w)) && !kept.some((k) => key(k) === key(w)));
  const merged = [...kept, ...fresh].slice(0, 16);
  if (merged.length > kept.length) {
    next.witnesses = merged;
    const n = merged.length - kept.length;
    notes.push(`${n} input sequence${n === 1 ? '' : 's'} from the formal engine replayed for points no round covered`);
  }
  const toggles = uncovered.filter((u) => u.type === 'toggle');
  const failures = dutFailures(result);
  if (failures.length) {
    next.respectFlags = true;
    notes.push(
      foreign
        ? "the design's assertions fired in the given testbench: push/pop respect full/empty"
        : "the design's assertions fired on the last round: push/pop now respect full/empty",
    );
    const rules = legalityRules(result, info, prev.roles, prev.legality ?? [], !foreign);
    const added = rules.filter((r) => !(prev.legality ?? []).includes(r));
    if (rules.length) next.legality = rules;
    for (const r of added) notes.push(`legal stimulus: ${r.why}`);
  }
  if (result.status === 'timeout') {
    next.randomCycles = Math.max(50, Math.floor(prev.randomCycles / 4));
    next.holdCycles = Math.max(16, Math.floor(prev.holdCycles / 4));
    notes.push('the last round ran out of time: shorter phases');
    return next;
  }
  if (blocks.length || toggles.length) {
    // Deep state (BCD clocks, timers, wide counters) needs runs orders of magnitude longer, not
    // twice as long: grow held runs 8x a round, within a budget of about a million cycles.
    next.randomCycles = Math.min(prev.randomCycles * 2, 20_000);
    next.holdCycles = Math.min(Math.max(prev.holdCycles * 8, 64), 65_536);
    next.holdCombos = Math.max(1, Math.min(prev.holdCombos * 2, 64, Math.floor(1_000_000 / next.holdCycles)));
    next.midRunResets = Math.min(prev.midRunResets + 1, 4);
    next.protocolScale = Math.min((prev.protocolScale ?? 1) * 2, 8);
    next.walkCycles = Math.min((prev.walkCycles ?? 256) * 4, 16_384);
    notes.push(
      `${blocks.length} code points and ${toggles.length} toggle bits stayed uncovered: longer random and held runs, more held combinations`,
    );
  }
  // Constants in the source of uncovered conditions, for every input of a matching width.
  // Sized literals with no x/z bits (`8'hFF`), each shown as written, base in lower case.
  const found = new Map<string, bigint>();
  for (const u of blocks) {
    for (const tok of significant(tokenize(u.source ?? ''))) {
      const lit = tok.kind === 'number' ? parseSvLiteral(tok.value) : null;
      if (lit?.form !== 'based' || lit.width === undefined || lit.value === undefined) continue;
      found.set(
        tok.value.replace(/\s+/g, '').replace(/'[sS]?[bBoOdDhH]/, (b) => b.toLowerCase()),
        lit.value,
      );
    }
  }
  // Named constants too (`case (state) S_WAIT:`, `if (addr == REG_CTRL)`): the design's own
  // parameters and localparams, by name, give their values.
  const named = new Map<string, string>();
  for (const m of info.modules)
    for (const p of m.params) if (p.value !== null && svLiteralValue(p.value) !== null) named.set(p.name, p.value);
  for (const u of blocks) {
    for (const id of (u.source ?? '').matchAll(/\b([A-Za-z_]\w*)\b/g)) {
      const v = named.get(id[1]);
      const n = v === undefined ? null : svLiteralValue(v);
      if (v && n !== null && found.size < 64) found.set(v.replace(/^(\d+)'s/, "$1'"), n);
    }
  }
  if (found.size) {
    for (const p of prev.roles.data) {
      const add = [...found.values()].filter((v) => v < 1n << BigInt(p.width));
      if (add.length) next.constants[p.name] = [...new Set([...(next.constants[p.name] ?? []), ...add])];
    }
    notes.push(`constants from uncovered conditions tried on the inputs: ${[...found.keys()].slice(0, 8).join(', ')}`);
  }
  return next;
}

export async function generateTestbench(
  simulator: Simulator,
  design: DesignSpec,
  info: DesignInfo,
  opts: GenerateOptions = {},
): Promise<GenerateResult> {
  const attempts = Math.max(1, opts.attempts ?? DEFAULT_ROUNDS + 1);
  const coverageTarget = opts.coverageTarget ?? DEFAULT_COVERAGE_TARGET;
  const tbName = `${opts.tbModule ?? `tb_${info.top}`}.sv`;
  // Parameters that put terminal counts out of reach are scaled down in the instantiation (and
  // passed as overrides, so the DUT library is built with the same values).
  const elaborate = async (params: Record<string, string>): Promise<DesignInfo | null> => {
    try {
      return await introspect({ ...design, params }, { signal: opts.signal });
    } catch {
      return null;
    }
  };
  const { scaled, info: planInfo } = await scaleParams(design, info, elaborate, { keepParams: opts.keepParams });
  info = planInfo;
  const simDesign: DesignSpec = scaled.length
    ? { ...design, params: { ...design.params, ...Object.fromEntries(scaled.map((p) => [p.name, p.value])) } }
    : design;
  let plan = initialPlan(info, design, opts, scaled);
  if (opts.from) {
    const seeded = refinePlan(plan, opts.from, info, true);
    plan = { ...seeded, round: 0, notes: ['started from what the given testbench left uncovered', ...seeded.notes] };
  }
  const hidden = info.facts ? hiddenFromVerilator(info.facts) : [];
  let otherCheck: 'on' | 'off' = opts.checkWithoutVerilator === false ? 'off' : 'on';
  const history: GeneratedRound[] = [];
  let best: GeneratedRound | undefined;
  let stale = 0;
  // The points no round has covered yet (by key): a round that shrinks this set added something.
  let neverCovered: Set<string> | null = null;
  let stopped: string | undefined;
  for (let i = 0; i < attempts; i++) {
    if (opts.signal?.aborted) break;
    const testbench = emitTestbench(plan);
    opts.onRoundStart?.(i);
    const req = {
      design: simDesign,
      top: info.top,
      testbench: { name: tbName, content: testbench },
      limits: opts.limits,
      seed: plan.seed,
      signal: opts.signal,
    };
    let result = await simulator.simulate(req);
    // Assertions only another simulator compiles: the same testbench in a build without
    // VERILATOR, its failures the round's own (otherSimulator.ts).
    if (hidden.length && otherCheck === 'on' && result.status === 'success' && !opts.signal?.aborted) {
      const other = await checkWithoutVerilator(simulator, req, result);
      if (other.unavailable) {
        otherCheck = 'off';
        plan.notes.push(
          `the ${hidden.length} assertion${hidden.length === 1 ? '' : 's'} compiled only without VERILATOR stay unchecked: the design does not build without it here (${other.unavailable})`,
        );
      } else if (other.failures.length) {
        result = withFailures(result, other.failures);
        const n = other.failures.reduce((a, f) => a + Math.max(1, f.count), 0);
        plan.notes.push(
          `a build without VERILATOR (as another simulator compiles the design) fired ${n} assertion failure${n === 1 ? '' : 's'} this run does not check`,
        );
      }
    }
    const round: GeneratedRound = { round: i, testbench, result, notes: plan.notes };
    history.push(round);
    opts.onRound?.(round);
    let improved = false;
    const illegal = illegalCount(result) > 0;
    if (betterRound(result, best?.result, coverageTarget)) {
      best = round;
      stale = 0;
      improved = true;
    } else if (cancelledRun(result)) break;
    else if (++stale >= (opts.patience ?? DEFAULT_PATIENCE) && !(best && illegalCount(best.result) > 0 && illegal)) break;
    // An illegal round that meets the target is not the end: the next one keeps its stimulus legal.
    if (meetsTarget(overallCoverage(result), coverageTarget) && !illegal) break;
    if (result.status === 'rejected' || result.status === 'exception') break;
    // Nothing left to aim at: every point still uncovered is proven unreachable in 2-state.
    if (result.status === 'success' && !illegal && result.uncovered.length > 0 && reachableUncovered(result).length === 0) break;
    const prev = plan;
    plan = refinePlan(plan, result, info);
    // A round earns its cost only if it can find something: after a round that covered no new
    // point, a next round whose plan aims at nothing new (the same uncovered points, the same
    // constants and rules, only a new seed and longer runs) is not run, and the round says why.
    const left = new Set<string>(result.status === 'success' ? result.uncovered.map(pointKey) : []);
    const before = neverCovered as Set<string> | null;
    const now: Set<string> = before === null ? left : new Set([...before].filter((k) => left.has(k)));
    neverCovered = now;
    const addedNothing = before !== null && now.size === before.size && result.status === 'success';
    if (addedNothing && !opts.allAttempts && i + 1 < attempts && aimsAtNothingNew(prev, plan)) {
      stopped = `stopped after round ${i + 1}: it covered no new point, and the next round would aim at the same ${now.size} uncovered points with nothing new to try (--rounds N runs them anyway)`;
      round.notes.push(stopped);
      break;
    }
    // Search: a segment that raised coverage is kept (replayed) in the next rounds; at most two.
    if (improved && prev.round > 0 && result.status === 'success') {
      plan.elite = [...(prev.elite ?? []), { round: prev.round, seed: segmentSeed(prev), cycles: prev.randomCycles }].slice(-2);
      plan.notes.push(`round ${prev.round + 1}'s random segment raised coverage: replayed before the new one`);
    }
  }
  if (!best) throw new GenerationCancelled(history);
  return { best, rounds: history, tbName, scaledParams: scaled, ...(stopped ? { stopped } : {}) };
}
