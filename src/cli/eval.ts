// `chorus eval`: run a benchmark suite through one row (a model, the built-in generator or the
// suite's reference testbenches) and write report.json / report.md / report.html.
import { DEFAULT_SCORE } from '../core/vocabulary/defaults.js';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { getSimulator, RemoteSimulator, scorerUrls } from '../core/run/simulators.js';
import type { Simulator } from '../core/run/types.js';
import {
  EVAL_FORMATS,
  SuiteError,
  loadSuite,
  modelIdentity,
  runEvaluation,
  safeName,
  selectTasks,
  writeReports,
  type EvalReport,
  type EvalRow,
} from '../core/run/evaluation.js';
import { createProgress } from './evalProgress.js';
import { runEvalCompare } from './evalCompare.js';
import type { EvalFormat } from '../core/run/types.js';
import type { ModelConfig } from '../core/run/types.js';
import { createBackend, describeModel, ModelError } from '../core/run/models.js';
import type { ModelBackend } from '../core/run/types.js';
import type { SamplingParams } from '../core/vocabulary/types.js';
import { MODEL_HELP, MODEL_OPTIONS, MODEL_SETTINGS, modelConfig as modelConfigFrom, samplingFrom } from './modelOptions.js';
import { readSetting, settingOptions, settingsHelp } from './settingOptions.js';
import type { HistoryMode } from '../core/vocabulary/types.js';
import { flags, strings, numberOption, runCommand, toolchainError, type CommandRun } from './command.js';
import { canRedraw } from './terminal.js';
import { simulatorOption } from './simulatorOption.js';
import type { ScoreMode } from '../core/run/simulators.js';
import { pct as formatPct, safeJson } from '../core/run/frontEnd.js';

/** Percentages as the eval reports print them (one decimal). */
const pct = (x: number | null | undefined): string => formatPct(x, 1);

export const HELP = `Usage: chorus eval --suite <path> [row] [options]
       chorus eval compare <report dir|report.json> <report dir|report.json> [...] [options]

Runs every task of a benchmark suite and reports Pass@1, Pass@5, Cov@1, Cov@5 and the sim-pass
rate (docs/protocol.md §5), per-round curves, token and time usage.

Suite:
  --suite <path>          a VerilogEval v2 folder (*_ref.sv, *_prompt.txt, *_test.sv), a CVDP
                          JSONL file (cid012 records) or an LLM4Cov dataset JSONL file
  --suite-format <kind>   verilog-eval | cvdp | llm4cov (default: detected)
  --tasks <id,id,...>     only these tasks (an id, or its prefix before '_', e.g. Prob001)
  --limit <k>             only the first k tasks (after --tasks)
Row (one of; none: the built-in generator, and it says so):
  --generator builtin     the built-in model-free generator (samples use different seeds)
  --reference             simulate the suite's reference testbench (1 sample)
  a model, with the options below (--model or --endpoint; sampling defaults: PROTOCOL §4)
${MODEL_HELP}${settingsHelp('eval', MODEL_SETTINGS, 26)}Run:
${settingsHelp('eval', ['samples', 'rounds', 'history'], 26)}  --workers <n>           simulations at once (default: the number of cores, ${availableParallelism()} here;
                          with --scorer, the services' workers together)
  --scorer <url,...>      simulate on these reward services (\`chorus serve\` on other machines) instead
                          of here: each candidate goes to the least-loaded service
${settingsHelp('eval', ['seed', 'timeout', 'simulator', 'score'], 26)}                          (with --scorer, the services simulate with their own --simulator)
Output:
  --out <dir>             report folder (default out/eval/<suite>-<row>)
  --resume                reuse the finished samples of an earlier run into the same --out
  --json                  print report.json on stdout

Exit code: 0 the run finished (task errors are in the report), 2 usage or suite errors,
130 interrupted (the report covers the finished samples; --resume continues).

\`chorus eval compare\` compares finished runs' reports (each row's figures, the oracle union, the
tasks one row solves and another does not); \`chorus eval compare --help\` lists its options.
`;

export const OPTIONS = {
  ...MODEL_OPTIONS,
  ...settingOptions('eval'),
  ...strings('suite', 'suite-format', 'generator', 'workers', 'scorer', 'limit', 'tasks', 'out'),
  ...flags('reference', 'resume', 'json'),
};

export function runEval(argv: string[]): Promise<number> {
  if (argv[0] === 'compare') return runEvalCompare(argv.slice(1));
  return runCommand(
    argv,
    {
      name: 'eval',
      options: OPTIONS,
      help: HELP,
      takesDesign: false,
      errors: [
        (e) => (e instanceof SuiteError ? e.message : undefined),
        (e) => (e instanceof ModelError ? `model: ${e.message}` : undefined),
        toolchainError,
      ],
    },
    evalCommand,
  );
}

async function evalCommand({ values: o, positionals, fail, signal }: CommandRun<typeof OPTIONS>): Promise<number> {
  if (!o.suite)
    return fail(positionals.length ? `name the suite with --suite (got '${positionals[0]}')` : 'name the suite with --suite <path>');
  if (positionals.length) return fail(`unexpected argument '${positionals[0]}'`);
  const format = o['suite-format'] as EvalFormat | undefined;
  if (format && !EVAL_FORMATS.includes(format)) return fail(`--suite-format must be one of ${EVAL_FORMATS.join(', ')}`);
  const rows = [o.model !== undefined, o.endpoint !== undefined, o.generator !== undefined, o.reference === true].filter(Boolean).length;
  if (rows > 1) return fail('choose one row: --model, --endpoint, --generator builtin or --reference');
  if (o.generator !== undefined && o.generator !== 'builtin') return fail(`--generator must be 'builtin' (got '${o.generator}')`);
  // the rest of the model flags are checked by modelConfigFrom (shared with generate and refine)
  if (o.dtype !== undefined && o.model === undefined) return fail('--dtype goes with --model <dir>');
  let settings: EvalSettings, modelConfig: ModelConfig | null, sampling: Partial<SamplingParams> | undefined;
  try {
    settings = evalSettings(o);
    ({ modelConfig, sampling } = evalModel(o));
  } catch (e) {
    return fail((e as Error).message);
  }
  const { samples, rounds, seed, timeoutS, limit, simulatorName, score, history } = settings;
  let { workers } = settings;
  if (!modelConfig && (sampling || o['allow-download'] || o['context-length'] !== undefined))
    return fail('--temperature, --top-p, --max-tokens, --allow-download and --context-length go with --model or --endpoint');
  const rowSlug = modelConfig
    ? safeName(modelConfig.kind === 'local' ? `model-${resolve(o.model!).split('/').pop()}` : `endpoint-${o['model-name']}`)
    : o.reference
      ? 'reference'
      : 'builtin';
  if (!modelConfig && !o.reference && o.generator === undefined) {
    process.stderr.write(
      'No model configured: evaluating the built-in stimulus generator (--model, --endpoint or --reference choose another row).\n',
    );
  }

  let backend: ModelBackend | null = null;
  try {
    const suitePath = resolve(o.suite);
    const suiteName = suitePath
      .split('/')
      .filter(Boolean)
      .pop()!
      .replace(/\.jsonl$/i, '');
    const outDir = resolve(o.out ?? join('out', 'eval', `${safeName(suiteName)}-${rowSlug}`));
    const suite = loadSuite(suitePath, { format, workDir: join(outDir, 'suite') });
    const tasks = selectTasks(suite.tasks, o.tasks?.split(','), limit);
    if (!tasks.length)
      return fail(
        o.tasks
          ? `no task matches --tasks ${o.tasks}`
          : `the suite holds no tasks${suite.skipped.length ? ` (${suite.skipped.length} records of other categories skipped)` : ''}`,
      );

    let row: EvalRow;
    if (modelConfig) {
      // the signal also stops a model load under way (Ctrl-C exits 130 without waiting for it)
      backend = await createBackend(modelConfig.kind === 'local' ? { ...modelConfig, signal } : modelConfig);
      const bi = await backend.info(); // fails fast when the server is down or the model is missing
      row = {
        kind: 'model',
        backend,
        label: describeModel(modelConfig),
        model: modelConfig,
        history,
        ...(sampling ? { sampling } : {}),
        identity: modelIdentity(modelConfig, bi),
      };
    } else row = o.reference ? { kind: 'reference' } : { kind: 'builtin' };

    let simulator: Simulator = getSimulator(simulatorName);
    if (o.scorer !== undefined) {
      let remote: RemoteSimulator;
      try {
        remote = new RemoteSimulator({ urls: scorerUrls(o.scorer) });
        await remote.info(); // every service up, one simulator version
      } catch (e) {
        return fail((e as Error).message);
      }
      simulator = remote;
      if (o.workers === undefined) workers = remote.capacity;
    }
    const progress = createProgress(process.stderr, canRedraw(process.stderr));
    let report: EvalReport;
    try {
      report = await runEvaluation({
        suite,
        tasks,
        row,
        samples,
        rounds,
        workers,
        outDir,
        resume: o.resume === true,
        simulator,
        limits: { timeoutS },
        ...(score !== DEFAULT_SCORE ? { score } : {}),
        seed,
        signal,
        onProgress: progress.onProgress,
      });
    } finally {
      progress.finish();
    }
    const paths = writeReports(report, outDir);
    if (o.json) process.stdout.write(safeJson(report) + '\n');
    else printSummary(report, paths);
    if (signal.aborted) {
      process.stderr.write(`interrupted: the report covers the finished samples; rerun with --resume --out ${outDir} to continue\n`);
      return 130;
    }
    return 0;
  } finally {
    await backend?.dispose();
  }
}

interface EvalSettings {
  samples: number;
  rounds: number;
  workers: number;
  seed: number;
  timeoutS: number;
  limit: number | undefined;
  simulatorName: string;
  score: ScoreMode;
  history: HistoryMode;
}

/** The run settings of `chorus eval`, checked; throws the usage message of the first bad one. */
function evalSettings(o: CommandRun<typeof OPTIONS>['values']): EvalSettings {
  const simulatorName = simulatorOption(o.simulator);
  const score = readSetting(o, 'score', 'eval');
  const history = readSetting(o, 'history', 'eval');
  if (o.simulator !== undefined && o.scorer !== undefined)
    throw new Error(
      '--simulator picks the simulator here; with --scorer the reward services simulate (start them with `chorus serve --simulator`)',
    );
  return {
    simulatorName,
    score,
    history,
    samples: readSetting(o, 'samples', 'eval'),
    rounds: readSetting(o, 'rounds', 'eval'),
    workers: numberOption('workers', o.workers, availableParallelism(), 1, { integer: true }),
    seed: readSetting(o, 'seed', 'eval'),
    timeoutS: readSetting(o, 'timeout', 'eval'),
    limit: o.limit === undefined ? undefined : numberOption('limit', o.limit, 0, 1, { integer: true }),
  };
}

/** The row's model, if any, and the sampling settings the user gave: only those, so the report
 * and the cache key say "defaults" for the rest. */
function evalModel(o: CommandRun<typeof OPTIONS>['values']): {
  modelConfig: ModelConfig | null;
  sampling: Partial<SamplingParams> | undefined;
} {
  let modelConfig = modelConfigFrom(o);
  if (modelConfig?.kind === 'local') modelConfig = { ...modelConfig, modelDir: resolve(modelConfig.modelDir) };
  if (o.temperature === undefined && o['top-p'] === undefined && o['max-tokens'] === undefined) return { modelConfig, sampling: undefined };
  const all = samplingFrom(o);
  const sampling = {
    ...(o.temperature !== undefined ? { temperature: all.temperature } : {}),
    ...(o['top-p'] !== undefined ? { topP: all.topP } : {}),
    ...(o['max-tokens'] !== undefined ? { maxNewTokens: all.maxNewTokens } : {}),
  };
  return { modelConfig, sampling };
}

/** The run's headline figures and where its reports are. */
function printSummary(report: EvalReport, paths: { md: string; html: string; json: string }): void {
  const a = report.aggregate;
  process.stdout.write(
    `${report.suite.name} — ${report.row.label}: ${a.tasks} tasks scored, ${a.errors} errors, ${report.config.settings.samples} samples × ${report.config.settings.rounds} rounds\n` +
      `Pass@1 ${pct(a.pass_at_1)}  Pass@5 ${pct(a.pass_at_5)}  Cov@1 ${pct(a.cov_at_1)}  Cov@5 ${pct(a.cov_at_5)}  sim pass ${pct(a.sim_pass)}\n` +
      `per round (Pass@1): ${report.per_round.map((p) => `${p.round}:${pct(p.pass_at_1)}`).join('  ')}\n` +
      `tokens ${a.tokens.total}, wall ${a.wall_s.toFixed(1)} s, ${a.candidates} candidates (${a.candidates_per_min.toFixed(1)}/min)${a.cached_samples ? `, ${a.cached_samples} samples from the cache` : ''}\n` +
      `report: ${paths.md}\n        ${paths.html}\n        ${paths.json}\n`,
  );
}
