// The retry ladder of a design whose combinational logic does not settle in Verilator (the run
// ends with "region did not converge"). That is the design's problem, not the candidate's, and the
// same on every candidate of the design, so the backend retries what may cure it (flat, with more
// converge iterations and split_var, then with the looping blocks rewritten as event-driven
// processes: settle.ts) and remembers what worked for the design's later candidates. A success
// says, as a DUT warning and in the record's `settle`, which workaround made it run.
import { statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import type { SimRequest } from '../simulator.js';
import type { Diagnostic, SimResult } from '../result.js';
import { loopSignals, splitVarConfig } from './diagnostics.js';
import { eventDrivenCopy } from './settle.js';
import type { Toolchain } from './toolchain.js';
import { readSource, type SettleRetry } from './stages/candidate.js';

/** Converge limit of the retry: current releases' default, 100x 5.006's. */
const RETRY_CONVERGE_LIMIT = 10000;

/** What worked for a design: its later candidates start with it (same semantics every round). */
export interface SettledDesign {
  spec: SettleRetry;
  loops: string[];
  where?: Diagnostic;
}

/** True when a result of `retry` may still retry: a first try, or a plain flat retry (which names
 * the loop the DUT library hid); a retry with a workaround answers for itself. */
export function mayRetry(retry: SettleRetry | undefined): boolean {
  return !retry || (retry.flags.length === 0 && !retry.vlt && !retry.copies);
}

/**
 * A design whose logic did not settle gets more tries, flat, each with what may cure it, in turn:
 * 1. a larger --converge-limit (a slow-settling chain converges with more iterations) and
 *    split_var on the looping variables (a false loop through different bits of one vector goes);
 * 2. the looping always @* / always_comb blocks run as event-driven processes, on a copy of the
 *    design (settle.ts: a block that reads what it writes settles as event-driven simulators run it).
 * A success says, as a DUT warning and in the record's `settle`, which one made it run.
 * `simulate`: the backend's own simulate, which runs one retry.
 */
export async function settleRetry(
  simulate: (req: SimRequest, retry: SettleRetry) => Promise<SimResult>,
  req: SimRequest,
  tc: Toolchain,
  warnings: Diagnostic[],
  limit: number | null,
  nested: boolean,
): Promise<{ result: SimResult; worked?: SettleRetry; loops: string[]; where?: Diagnostic } | undefined> {
  let loops = loopSignals(warnings).map((l) => l.name);
  let where = loopSignals(warnings)[0]?.at;
  const tried: string[] = [];
  let last: SimResult | undefined;
  const flags: string[] = [];
  if (tc.caps.convergeLimit && (limit ?? 100) < RETRY_CONVERGE_LIMIT) flags.push('--converge-limit', String(RETRY_CONVERGE_LIMIT));
  const vlt = loops.length ? splitVarConfig(loops) : undefined;
  // With nothing to add, a first retry is still worth it: the flat build names the loop the DUT
  // library hid (and runs this ladder itself); nested, it would only repeat.
  if (flags.length || vlt || !nested) {
    const spec: SettleRetry = { flags, vlt };
    last = await simulate({ ...req, build: 'flat' }, spec);
    if (last.settle || (!flags.length && !vlt)) return { result: last, loops };
    if (last.status === 'success') return { result: settledWith(last, req, spec, loops, where), worked: spec, loops, where };
    if (!unsettled(last)) return { result: last, loops };
    tried.push(describeRetry(spec));
    if (!loops.length) {
      loops = loopSignals(last.diagnostics).map((l) => l.name);
      where = loopSignals(last.diagnostics)[0]?.at;
    }
  }
  const copies = new Map<string, string>();
  const at: string[] = [];
  for (const f of req.design.files) {
    const c = loops.length ? eventDrivenCopy(readSource(f), loops, resolve(f)) : undefined;
    if (!c) continue;
    copies.set(resolve(f), c.text);
    at.push(...c.blocks.map((b) => `${basename(f)}:${b.line}`));
  }
  if (copies.size) {
    const spec: SettleRetry = {
      flags: [],
      copies,
      tried,
      copyNote: `the always block${at.length > 1 ? 's' : ''} at ${at.join(', ')} run as event-driven process${at.length > 1 ? 'es' : ''} on a copy of the design (not woken by its own writes, as event-driven simulators run it)`,
    };
    last = await simulate({ ...req, build: 'flat' }, spec);
    if (last.status === 'success') return { result: settledWith(last, req, spec, loops, where), worked: spec, loops, where };
    if (unsettled(last)) tried.push(spec.copyNote!);
  }
  if (last) last.settle ??= { loop: loops, tried, workaround: null };
  return last && { result: last, loops };
}

/** True when a retry's result is still the unsettled-logic failure. */
function unsettled(r: SimResult): boolean {
  return r.status !== 'success' && r.diagnostics.some((d) => d.code === 'CHORUS-COMBLOOP' && d.severity === 'error');
}

/** A run that succeeded with a workaround: says which, as a DUT warning and in `settle`. */
export function settledWith(r: SimResult, req: SimRequest, spec: SettleRetry, loops: string[], where?: Diagnostic): SimResult {
  if (r.status !== 'success') return r;
  const what = describeRetry({ ...spec, tried: [] });
  const at = where ?? r.diagnostics.find((d) => (d.code === 'UNOPTFLAT' || d.code === 'UNOPT') && d.origin === 'dut');
  r.diagnostics.push({
    file: at?.file ?? resolve(req.design.files[0] ?? ''),
    origin: 'dut',
    line: at?.line ?? 1,
    column: at?.column ?? 1,
    severity: 'warning',
    code: 'CHORUS-COMBLOOP',
    stage: 'run',
    message:
      `the DUT's combinational logic${loops.length ? ` (a loop through ${loops.join(', ')})` : ''} does not settle in Verilator as written; it ran with ${what}` +
      `${spec.tried?.length ? ` (${spec.tried.join('; ')}: not enough)` : ''}. Coverage is measured on that run; fix the loop in the design`,
  });
  r.settle = { loop: loops, tried: spec.tried ?? [], workaround: what };
  return r;
}

/** Stable across candidates of one design: its files (path, size, time), top and defines. */
export function settleKey(req: SimRequest): string {
  const d = req.design;
  const files = [...d.files, ...d.libraryFiles].map((f) => {
    try {
      const s = statSync(f);
      return `${resolve(f)}:${s.size}:${s.mtimeMs}`;
    } catch {
      return resolve(f);
    }
  });
  return JSON.stringify([req.top, files, d.includeDirs, d.defines, d.params, ...(d.verilatorArgs?.length ? [d.verilatorArgs] : [])]);
}

export function describeRetry(r: SettleRetry): string {
  const parts = [...(r.flags.length ? [r.flags.join(' ')] : []), ...(r.vlt ? ['split_var on the looping variables'] : [])];
  const now = r.copyNote ?? (parts.length ? parts.join(' and ') : 'the flat build');
  return [...(r.tried ?? []), now].join(', then with ');
}
