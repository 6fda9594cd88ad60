// What a run leaves in its run folder (runFolder.ts), decided once for every front end: the CLI's
// `generate` and the editor's worker write the same rounds, best testbench and record
// (summary.json, and `--json`, the same object) from a generation's, a refinement's or a
// simulation's result.
import { overallCoverage } from './coverage.js';
import type { GenerationRequest, GenerationResult } from './generation.js';
import { roundRecord, type Recorded, type RunFolderContent, type RunRound } from './runFolder.js';
import type { SimResult } from '../sim/result.js';
import type { RefinementResult } from './refinement.js';
import type { NamedText } from '../agent/protocol.js';
import { basename, join } from 'node:path';

/** The run folder's name of an attempt's files (round-1.sv, round-1.log; sample-2-round-1 with samples). */
export function attemptLabel(samples: number, a: { sample: number; round: number }): string {
  return `${samples > 1 ? `sample-${a.sample + 1}-` : ''}round-${a.round + 1}`;
}

const isBest = (run: GenerationResult, a: { sample: number; round: number }): boolean =>
  run.best?.sample === a.sample && run.best?.round === a.round;

function bestRecord(run: GenerationResult): { sample: number; round: number; reward: number; coverage: number | null } | null {
  const b = run.best;
  return b && b.result ? { sample: b.sample, round: b.round, reward: b.result.reward ?? 0, coverage: overallCoverage(b.result) } : null;
}

function builtinRecord(run: GenerationResult): Record<string, unknown> {
  return {
    generator: 'builtin',
    top: run.top,
    scaled_params: run.scaledParams,
    rounds: run.attempts.map((r) => ({
      sample: 0,
      round: r.round,
      parse_status: 'builtin',
      notes: r.notes,
      testbench: r.testbench,
      result: roundRecord(r.result, attemptLabel(1, r), isBest(run, r)),
    })),
    best: bestRecord(run),
  };
}

function modelRecord(run: GenerationResult, req: GenerationRequest): Record<string, unknown> {
  const info = run.model!;
  return {
    generator: 'model',
    model: {
      kind: info.kind,
      engine: info.engine,
      device: info.device,
      kv_cache: info.kvCache,
      onnx_cache: info.onnxCache,
      model: info.model,
      location: info.location,
    },
    warm_start: run.warmStart ? { coverage: overallCoverage(run.warmStart) } : null,
    top: run.top,
    instance: run.instance,
    coverage_target: run.coverageTarget,
    history: req.history ?? 'markov',
    sampling: req.sampling,
    tokens: run.tokens,
    cancelled: run.cancelled,
    rounds: run.attempts.map((x) => {
      const r = x.agent!;
      return {
        sample: r.sample,
        round: r.round,
        parse_status: r.parsed.status,
        parse_reason: r.parsed.status === 'unparsable' ? r.parsed.reason : undefined,
        error: r.error,
        filename: r.filename,
        testbench: r.testbench,
        reply: r.reply,
        finish_reason: r.finishReason,
        tokens: r.tokens,
        ...(r.warmStart ? { warm_start: true } : {}),
        ...(r.cache ? { prompt_tokens_evaluated: r.cache.evaluatedTokens, prompt_tokens_reused: r.cache.reusedTokens } : {}),
        ...(r.drafts ? { draft_tokens_proposed: r.drafts.proposed, draft_tokens_accepted: r.drafts.accepted } : {}),
        model_ms: Math.round(r.modelMs),
        result: roundRecord(r.result, attemptLabel(req.samples ?? 1, r), isBest(run, r)),
      };
    }),
    samples: run.samples,
    best: bestRecord(run),
  };
}

/** A generation as its run folder holds it. */
export interface GenerationRun {
  /** The run record, before the front end adds where it wrote (`out`, `run_dir`, `verdict`). */
  record: Record<string, unknown>;
  /** Every attempt as the run folder shows it. */
  rounds: RunRound[];
  /** The best attempt that simulated, or null (nothing is written then). */
  best: { testbench: string; name: string; result: SimResult; label: string } | null;
}

export function generationRun(run: GenerationResult, req: GenerationRequest): GenerationRun {
  const samples = req.samples ?? 1;
  const record = run.engine === 'builtin' ? builtinRecord(run) : modelRecord(run, req);
  const rounds: RunRound[] = run.attempts.map((r) => ({
    label: attemptLabel(samples, r),
    testbench: r.testbench,
    result: r.result,
    failure: r.error ? `model error (${r.error.kind}): ${r.error.message}` : (r.notes[0] ?? 'no testbench in the reply'),
  }));
  const b = run.best;
  if (!b?.testbench || !b.result) return { best: null, record, rounds };
  const label = `${samples > 1 ? `sample ${b.sample + 1}, ` : ''}round ${b.round + 1}`;
  return { best: { testbench: b.testbench, name: b.filename ?? run.tbName, result: b.result, label }, record, rounds };
}

/** The run folder's content of a generation: the best testbench written as `tb_<top>.sv`. */
export function generationFolder(
  top: string,
  g: GenerationRun,
  a: { designFiles: string[]; recorded: (r: SimResult) => Recorded | undefined; summary: Record<string, unknown> },
): RunFolderContent {
  return {
    top,
    rounds: g.rounds,
    best: g.best
      ? { testbench: g.best.testbench, result: g.best.result, recorded: a.recorded(g.best.result), fileName: `tb_${top}.sv` }
      : null,
    summary: a.summary,
    designFiles: a.designFiles,
  };
}

/** The file name of a refinement's revision: `<input>_refined.sv`. */
export function revisedName(inputName: string): string {
  return basename(inputName)
    .replace(/(\.s?v)?$/, '_refined$1')
    .replace(/[^A-Za-z0-9_.-]/g, '_');
}

/** The run folder's content of a refinement: the input's result (when simulated here), every
 * round, the revision (as `<input>_refined.sv`) and its coverage, and the record. */
export function refinementFolder(
  top: string,
  r: RefinementResult,
  input: NamedText,
  a: { designFiles: string[]; recorded: (r: SimResult | null) => Recorded | undefined; runDir: string; out: string | null },
): RunFolderContent & { summary: Record<string, unknown> } {
  const outcome = r.outcome;
  const name = revisedName(input.name);
  const rounds: RunRound[] = [
    ...(r.before ? [{ label: 'input', testbench: input.content, result: r.before }] : []),
    ...(r.generation
      ? r.generation.attempts.map((x) => ({ label: `round-${x.round + 1}`, testbench: x.testbench, result: x.result }))
      : [
          {
            label: 'round-1',
            testbench: r.testbench,
            result: r.result,
            failure: outcome?.parsed.status === 'unparsable' ? outcome.parsed.reason : r.result ? undefined : 'not simulated (--no-check)',
          },
        ]),
  ];
  // The record: summary.json in the run folder and --json on stdout are the same object.
  const summary = {
    out: a.out ?? (r.testbench !== null ? join(a.runDir, name) : null),
    run_dir: a.runDir,
    engine: r.engine,
    messages: outcome?.messages,
    reply: outcome?.reply,
    parse_status: outcome?.parsed.status,
    filename: r.filename,
    testbench: r.testbench,
    tokens: outcome?.tokens,
    before: r.before,
    result: r.result,
  };
  return {
    top,
    rounds,
    best: r.testbench !== null ? { testbench: r.testbench, result: r.result, recorded: a.recorded(r.result), fileName: name } : null,
    summary,
    designFiles: a.designFiles,
  };
}

/** The run folder's content of one simulation of a testbench (`chorus sim`, the editor's Run Coverage). */
export function simFolder(
  top: string,
  testbench: string,
  result: SimResult,
  a: { designFiles: string[]; recorded: Recorded | undefined; runDir: string },
): RunFolderContent {
  return {
    top,
    rounds: [{ label: 'round-1', testbench, result }],
    best: { testbench, result, recorded: a.recorded, fileName: null },
    summary: { ...result, points: undefined, run_dir: a.runDir },
    designFiles: a.designFiles,
  };
}
