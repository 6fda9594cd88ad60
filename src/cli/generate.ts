// `chorus generate`: write a stimulus testbench for a design and print its coverage per round.
// With a model (--model dir or --endpoint url) it runs the agent: direct generation + refinement
// rounds from the simulator's feedback. With none it uses the built-in model-free generator (and
// says so).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { loadDesign } from '../core/design/load.js';
import { DesignError } from '../core/design/errors.js';
import type { DesignInfo, DesignSpec } from '../core/design/types.js';
import { getSimulator } from '../core/sim/registry.js';
import { generateTestbench, type GeneratedRound } from '../core/generate/generator.js';
import { ToolchainError } from '../core/sim/verilator/toolchain.js';
import { overallCoverage } from '../core/sim/ranking.js';
import type { SimLimits } from '../core/sim/simulator.js';
import { createBackend, describeModel, type ModelConfig } from '../core/llm/factory.js';
import { ModelError } from '../core/llm/backend.js';
import { ContextBudgetError, runAgent } from '../core/agent/loop.js';
import type { HistoryMode } from '../core/agent/types.js';
import type { NamedText } from '../core/agent/protocol.js';
import { DESIGN_HELP, designFromArgs, saveProject, type CliDesign } from './designOptions.js';
import { numberOption, parseCommand } from './command.js';
import { useColor } from './terminal.js';
import { formatSimResult } from './format.js';
import { MODEL_HELP, MODEL_OPTIONS, modelConfig, samplingFrom } from './modelOptions.js';
import { StatusLine } from './progress.js';

const HELP = `Usage: chorus generate <design files | folder | .core | Bender.yml> [options]

Writes a stimulus testbench that maximizes the design's coverage: one generation, then refinement
rounds fed with the simulator's log and coverage report, and prints the coverage of each round.

${DESIGN_HELP}${MODEL_HELP}Generation:
  --rounds <n>          refinement rounds after the first generation (default 3); stops early at
                        the target
  --samples <n>         independent runs with a model; the best testbench wins (default 1)
  --history <mode>      markov (default: the model sees the best candidate and its feedback) | full
  --spec <file>         specification file shown to the model after the RTL; repeatable
  --instruction <text>  the task instruction (default: the reference wording naming top and instance)
  --target <pct>        coverage target in percent (default 100)
  --instance <name>     DUT instance name in the testbench (default uut)
  --seed <n>            stimulus / sampling seed (default 1)
  --timeout <s>         wall-clock limit per simulation (default 60)
  --stream              echo the model's text to stderr as it is generated
  --keep-params         built-in generator: never scale down parameters that put terminal counts
                        out of reach (it says which it scaled; -G values are never scaled)
Output:
  --out <file>          where to write the testbench (default: the model's file name, or
                        tb_<top>.sv, beside the first design file; an existing file is never
                        overwritten: a free name is chosen)
  --force               overwrite --out if it exists
  --json                print the run record as JSON on stdout

Exit status: 0 when the best testbench ran and coverage was measured, 1 when no testbench ran,
2 for usage, design or model errors, 130 when interrupted.
`;

const pct = (x: number | null | undefined): string => (x === null || x === undefined ? 'n/a' : `${(100 * x).toFixed(2)}%`);

export function freeName(path: string): string {
  if (!existsSync(path)) return path;
  const m = /^(.*?)(\.[^./]+)?$/.exec(path)!;
  for (let i = 1; ; i++) {
    const candidate = `${m[1]}_${i}${m[2] ?? ''}`;
    if (!existsSync(candidate)) return candidate;
  }
}

interface Ctx {
  design: DesignSpec;
  info: DesignInfo;
  rounds: number;
  target: number;
  seed: number;
  keepParams: boolean;
  instance: string;
  limits: Partial<SimLimits>;
  signal: AbortSignal;
  log: (s: string) => void;
  status: StatusLine;
}

export async function runGenerate(argv: string[]): Promise<number> {
  const args = parseCommand(
    'generate',
    argv,
    {
      ...MODEL_OPTIONS,
      rounds: { type: 'string' },
      samples: { type: 'string' },
      history: { type: 'string' },
      spec: { type: 'string', multiple: true },
      instruction: { type: 'string' },
      target: { type: 'string' },
      instance: { type: 'string' },
      seed: { type: 'string' },
      timeout: { type: 'string' },
      stream: { type: 'boolean' },
      'warm-start': { type: 'boolean' },
      'keep-params': { type: 'boolean' },
      out: { type: 'string' },
      force: { type: 'boolean' },
      json: { type: 'boolean' },
    } as const,
    HELP,
  );
  if (typeof args === 'number') return args;
  const { values: o, fail } = args;
  let cliDesign: CliDesign;
  try {
    cliDesign = designFromArgs(o, args.positionals);
  } catch (e) {
    return fail((e as Error).message);
  }
  let rounds: number, samples: number, target: number, seed: number, timeoutS: number, model: ModelConfig | null;
  const history = (o.history ?? 'markov') as HistoryMode;
  try {
    rounds = Math.floor(numberOption('rounds', o.rounds, 3, 0));
    samples = Math.floor(numberOption('samples', o.samples, 1, 1));
    target = numberOption('target', o.target, 100) / 100;
    seed = Math.floor(numberOption('seed', o.seed, 1));
    timeoutS = numberOption('timeout', o.timeout, 60, 1);
    model = modelConfig(o);
    if (history !== 'markov' && history !== 'full') throw new Error(`--history must be markov or full, got '${o.history}'`);
    if (!model && (o.spec?.length || o.instruction || o.samples || o.stream || o['warm-start']))
      throw new Error('--spec, --instruction, --samples, --stream and --warm-start need a model (--model <dir> or --endpoint <url>)');
  } catch (e) {
    return fail((e as Error).message);
  }
  if (o.out && existsSync(resolve(o.out)) && !o.force) {
    return fail(`${resolve(o.out)} exists; choose another --out or pass --force to overwrite it`);
  }
  let specs: NamedText[] = [];
  for (const f of o.spec ?? []) {
    if (!existsSync(f)) return fail(`spec file ${resolve(f)} does not exist`);
    specs = [...specs, { name: basename(f), content: readFileSync(f, 'utf8') }];
  }

  const controller = new AbortController();
  const onSigint = (): void => controller.abort();
  // `on`, not `once`: node-llama-cpp loads signal-exit, which re-sends SIGINT (killing the process
  // before the cancel is handled) when it finds itself the only listener left.
  process.on('SIGINT', onSigint);
  const status = new StatusLine();
  const log = (s: string): void => {
    status.clear();
    if (!o.json) process.stdout.write(s);
    else process.stderr.write(s);
  };
  try {
    const { design, info, warnings, notes, discovered } = await loadDesign(cliDesign.options, controller.signal);
    for (const n of notes) process.stderr.write(`note: ${n}\n`);
    for (const w of warnings) process.stderr.write(`warning: ${w}\n`);
    if (o['save-project']) process.stderr.write(`note: ${saveProject(cliDesign, { top: info.top, discovered })}\n`);
    const ctx: Ctx = {
      design,
      info,
      rounds,
      target,
      seed,
      keepParams: o['keep-params'] === true,
      instance: o.instance ?? 'uut',
      limits: { timeoutS },
      signal: controller.signal,
      log,
      status,
    };
    const outcome = model
      ? await withModel(ctx, model, {
          samples,
          history,
          specs,
          instruction: o.instruction,
          sampling: samplingFrom(o, seed),
          stream: o.stream ?? false,
          warmStart: o['warm-start'] ?? false,
        })
      : await builtin(ctx);
    status.clear();
    if (!outcome.best) {
      log('no testbench: no reply held a parsable testbench; see the rounds above\n');
      if (o.json) process.stdout.write(JSON.stringify(outcome.record, null, 2) + '\n');
      return controller.signal.aborted ? 130 : 1;
    }
    // Beside the top module's file (the first file may be a package from a dependency).
    const topFile = info.modules.find((m) => m.name === info.top)?.file;
    const outPath = o.out
      ? resolve(o.out)
      : freeName(join(dirname(topFile && existsSync(topFile) ? topFile : design.files[design.files.length - 1]), outcome.best.name));
    mkdirSync(dirname(outPath), { recursive: true });
    writeFileSync(outPath, outcome.best.testbench.endsWith('\n') ? outcome.best.testbench : outcome.best.testbench + '\n');
    if (o.json) {
      process.stdout.write(JSON.stringify({ ...outcome.record, out: outPath }, null, 2) + '\n');
    } else {
      log(`best: ${outcome.best.label}, written to ${outPath}\n\n`);
      log(formatSimResult(outcome.best.result, { color: useColor(process.stdout) }));
    }
    if (controller.signal.aborted) return 130;
    return outcome.best.result.status === 'success' ? 0 : 1;
  } catch (e) {
    status.clear();
    if (e instanceof DesignError) return fail(`design error (${e.kind}): ${e.message}`);
    if (e instanceof ToolchainError) return fail(e.message);
    if (e instanceof ModelError) return fail(`model error (${e.kind}): ${e.message}`);
    if (e instanceof ContextBudgetError) return fail(e.message);
    throw e;
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
}

interface Outcome {
  best: { testbench: string; name: string; result: NonNullable<GeneratedRound['result']>; label: string } | null;
  record: Record<string, unknown>;
}

async function builtin(c: Ctx): Promise<Outcome> {
  const total = c.rounds + 1;
  c.log(`No model configured: using the built-in stimulus generator (model-free, coverage-directed constrained-random).\n`);
  c.log(
    `design: ${c.info.top} (${c.design.files.length} file${c.design.files.length === 1 ? '' : 's'}), up to ${total} round${total === 1 ? '' : 's'}, target ${pct(c.target)}\n`,
  );
  const onRound = (r: GeneratedRound): void => {
    const cov = r.result.coverage?.waived;
    c.log(
      `round ${r.round + 1}/${total}: ${r.result.status}` +
        (cov ? `  coverage ${pct(cov.overall)} (block ${pct(cov.block)}, toggle ${pct(cov.toggle)})` : '') +
        `  ${r.result.timings.total.toFixed(2)}s\n`,
    );
  };
  const gen = await generateTestbench(getSimulator('verilator'), c.design, c.info, {
    rounds: total,
    target: c.target,
    seed: c.seed,
    keepParams: c.keepParams,
    instance: c.instance,
    limits: c.limits,
    signal: c.signal,
    onRound,
  });
  for (const p of gen.scaledParams)
    c.log(`parameter ${p.name} instantiated as ${p.value} instead of ${p.was}: ${p.why} (--keep-params keeps it)\n`);
  return {
    best: { testbench: gen.best.testbench, name: gen.tbName, result: gen.best.result, label: `round ${gen.best.round + 1}` },
    record: {
      generator: 'builtin',
      top: c.info.top,
      scaled_params: gen.scaledParams,
      rounds: gen.rounds.map((r) => ({
        sample: 0,
        round: r.round,
        parse_status: 'builtin',
        notes: r.notes,
        testbench: r.testbench,
        result: r.result,
      })),
      best: { sample: 0, round: gen.best.round, reward: gen.best.result.reward, coverage: overallCoverage(gen.best.result) },
    },
  };
}

async function withModel(
  c: Ctx,
  model: ModelConfig,
  a: {
    samples: number;
    history: HistoryMode;
    specs: NamedText[];
    instruction?: string;
    sampling: ReturnType<typeof samplingFrom>;
    stream: boolean;
    warmStart: boolean;
  },
): Promise<Outcome> {
  const total = c.rounds + 1;
  c.log(`model: ${describeModel(model)}\n`);
  if (model.kind === 'local') {
    model.onProgress = (p) =>
      c.status.set(`loading model: ${p.file} ${p.total ? `${Math.round((100 * (p.loaded ?? 0)) / p.total)}%` : p.status}`);
    model.onMessage = (m) => c.log(`note: ${m}\n`);
  }
  let warmStart: { testbench: string; filename: string; result: NonNullable<GeneratedRound['result']> } | undefined;
  if (a.warmStart) {
    c.log(`warm start: the built-in generator's best testbench is round 1; the model refines it\n`);
    const gen = await generateTestbench(getSimulator('verilator'), c.design, c.info, {
      rounds: total,
      target: c.target,
      seed: c.seed,
      keepParams: c.keepParams,
      instance: c.instance,
      limits: c.limits,
      signal: c.signal,
    });
    warmStart = { testbench: gen.best.testbench, filename: gen.tbName, result: gen.best.result };
  }
  const backend = await createBackend(model);
  try {
    c.log(
      `design: ${c.info.top} (${c.design.files.length} file${c.design.files.length === 1 ? '' : 's'}), 1 generation + up to ${c.rounds} refinement round${c.rounds === 1 ? '' : 's'}` +
        `${a.samples > 1 ? `, ${a.samples} samples` : ''}, ${a.history} history, target ${pct(c.target)}\n`,
    );
    const tokens = new Map<string, number>();
    const run = await runAgent({
      backend,
      simulator: getSimulator('verilator'),
      design: c.design,
      info: c.info,
      specs: a.specs,
      instruction: a.instruction,
      instance: c.instance,
      rounds: c.rounds,
      samples: a.samples,
      target: c.target,
      history: a.history,
      sampling: a.sampling,
      limits: c.limits,
      signal: c.signal,
      warmStart,
      onEvent: (e) => {
        const tag = a.samples > 1 ? `sample ${e.sample + 1} ` : '';
        if (e.type === 'text') {
          const k = `${e.sample}/${e.round}`;
          tokens.set(k, (tokens.get(k) ?? 0) + 1);
          if (a.stream) process.stderr.write(e.piece);
          else c.status.set(`${tag}round ${e.round + 1}/${total}: generating (${tokens.get(k)} chunks)`);
        } else if (e.type === 'sim-start') {
          if (a.stream) process.stderr.write('\n');
          c.status.set(`${tag}round ${e.round + 1}/${total}: simulating`);
        } else if (e.type === 'warning') {
          c.log(`warning: ${tag}round ${e.round + 1}: ${e.message}\n`);
        } else if (e.type === 'round-end') {
          const r = e.entry;
          const cov = r.result?.coverage?.waived;
          const what = r.error
            ? `model error (${r.error.kind}): ${r.error.message}`
            : r.parsed.status !== 'success'
              ? `unparsable reply (${r.parsed.reason})`
              : `${r.result!.status}${cov ? `  coverage ${pct(cov.overall)} (block ${pct(cov.block)}, toggle ${pct(cov.toggle)})` : ''}`;
          const cost = r.warmStart
            ? 'built-in generator (warm start)'
            : `${r.tokens.completion} tokens, model ${(r.modelMs / 1000).toFixed(1)}s` +
              (r.cache ? `, prompt ${r.cache.evaluatedTokens} evaluated + ${r.cache.reusedTokens} reused` : '') +
              (r.drafts?.proposed ? `, drafts ${r.drafts.accepted}/${r.drafts.proposed} kept` : '') +
              `, sim ${(r.simMs / 1000).toFixed(2)}s`;
          c.log(`${tag}round ${e.round + 1}/${total}: ${what}  [${cost}]\n`);
        }
      },
    });
    const rounds = run.samples.flatMap((s) => s.rounds);
    const info = await backend.info();
    const record = {
      generator: 'model',
      model: { kind: info.kind, engine: info.engine, device: info.device, model: info.model, location: info.location },
      warm_start: warmStart ? { coverage: overallCoverage(warmStart.result) } : null,
      top: run.top,
      instance: run.instance,
      target: run.target,
      history: a.history,
      sampling: a.sampling,
      tokens: run.tokens,
      cancelled: run.cancelled,
      rounds: rounds.map((r) => ({
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
        result: r.result,
      })),
      samples: run.samples.map((s) => ({ sample: s.sample, best: s.best, passed: s.passed, stop: s.stop })),
      best: null as null | { sample: number; round: number; reward: number; coverage: number | null },
    };
    if (!run.best) return { best: null, record };
    const b = run.samples[run.best.sample].rounds[run.best.round];
    record.best = { sample: run.best.sample, round: run.best.round, reward: b.result?.reward ?? 0, coverage: overallCoverage(b.result) };
    const label = `${a.samples > 1 ? `sample ${run.best.sample + 1}, ` : ''}round ${run.best.round + 1}`;
    return { best: { testbench: b.testbench!, name: b.filename!, result: b.result!, label }, record };
  } finally {
    await backend.dispose();
  }
}
