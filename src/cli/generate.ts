// `chorus generate`: write a stimulus testbench for a design and print its coverage per round.
// With a model (--model dir or --endpoint url) it runs the agent: direct generation + refinement
// rounds from the simulator's feedback. With none it uses the built-in model-free generator (and
// says so).
import { DEFAULT_SCORE } from '../core/vocabulary/defaults.js';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { openRunFolder, outOfMemoryHint, recordingSimulator, writeRunFolder } from '../core/run/runFolder.js';
import { generationFolder, generationRun, type GenerationRun } from '../core/run/runRecord.js';
import { RUN_OUTPUT_HELP, RUN_OUTPUT_OPTIONS, planRunOutput } from './runOutput.js';
import { terminable } from './termination.js';
import { StageProgress } from './progress.js';
import { loadDesign } from '../core/run/design.js';
import type { DesignInfo, DesignSpec } from '../core/run/types.js';
import { withVerdict } from '../core/run/coverage.js';
import { pct, safeJson, safeLine, safeText } from '../core/run/frontEnd.js';
import type { ModelConfig } from '../core/run/types.js';
import { describeModel } from '../core/run/models.js';
import { runGeneration, type GenerationRequest, type GenerationRound } from '../core/run/generation.js';
import type { HistoryMode } from '../core/vocabulary/types.js';
import type { NamedText } from '../core/run/types.js';
import { DESIGN_HELP, designFromArgs, saveProject, type CliDesign } from './designOptions.js';
import { MODEL_RUN_ERRORS, RESULT_OPTIONS, flags, strings, exitCodeFor, runCommand, type CommandRun } from './command.js';
import { useColor } from './terminal.js';
import { formatSimResult, verdictText } from './format.js';
import { MODEL_HELP, MODEL_OPTIONS, MODEL_SETTINGS, modelConfig, samplingFrom } from './modelOptions.js';
import type { StatusLine } from './progress.js';
import { simulatorOption } from './simulatorOption.js';
import { readSetting, settingOptions, settingsHelp } from './settingOptions.js';
import type { ScoreMode } from '../core/run/simulators.js';
import { formalBudget } from '../core/vocabulary/defaults.js';
import type { FormalBudget } from '../core/vocabulary/types.js';

export const HELP = `Usage: chorus generate <design files | folder | .core | Bender.yml> [options]

Writes a stimulus testbench that maximizes the design's coverage: one generation, then refinement
rounds fed with the simulator's log and coverage report, and prints the coverage of each round.

${DESIGN_HELP}${MODEL_HELP}${settingsHelp('generate', MODEL_SETTINGS)}Generation:
${settingsHelp('generate', ['rounds', 'samples', 'history'])}  --spec <file>         specification file shown to the model after the RTL; repeatable
  --instruction <text>  the task instruction (default: the reference wording naming top and instance)
${settingsHelp('generate', ['coverageTarget', 'instance', 'seed', 'timeout'])}  --stream              echo the model's text to stderr as it is generated
${settingsHelp('generate', ['warmStart'])}  --keep-params         built-in generator: never scale down parameters that put terminal counts
                        out of reach (it says which it scaled; -G values are never scaled)
${settingsHelp('generate', ['simulator', 'score', 'formalBudget', 'formalPointBudget'])}Output:
  --out <file>          also write the best testbench to this file (it is always in the run folder
                        as tb_<top>.sv)
  --force               overwrite --out if it exists
${RUN_OUTPUT_HELP}  --json                print the run record as JSON on stdout

Exit status: 0 when the best testbench ran and coverage was measured, 1 when no testbench ran,
2 for usage, design or model errors (a combinational loop in the DUT is a design error), 130
when interrupted.
`;

interface Ctx {
  design: DesignSpec;
  info: DesignInfo;
  rounds: number;
  /** Percent. */
  coverageTarget: number;
  signal: AbortSignal;
  log: (s: string) => void;
  status: StatusLine;
  progress: StageProgress;
}

export const OPTIONS = {
  ...MODEL_OPTIONS,
  ...settingOptions('generate'),
  spec: { type: 'string', multiple: true },
  ...strings('instruction'),
  ...flags('stream', 'keep-params'),
  ...RUN_OUTPUT_OPTIONS,
  ...RESULT_OPTIONS,
} as const;

export function runGenerate(argv: string[]): Promise<number> {
  return runCommand(
    argv,
    {
      name: 'generate',
      options: OPTIONS,
      help: HELP,
      errors: MODEL_RUN_ERRORS,
    },
    (run) => terminable(run.signal, (signal) => generateCommand({ ...run, signal })),
  );
}

interface GenerateSettings {
  rounds: number;
  samples: number;
  /** The coverage target, percent. */
  coverageTarget: number;
  seed: number;
  timeoutS: number;
  model: ModelConfig | null;
  simulator: string;
  score: ScoreMode;
  formal: FormalBudget | undefined;
  history: HistoryMode;
}

/** The run settings of `chorus generate`, checked; throws the usage message of the first bad one. */
function generateSettings(o: CommandRun<typeof OPTIONS>['values'], cliDesign: CliDesign): GenerateSettings {
  // In the order the options are checked, so the first bad one is the one named.
  const s = {
    rounds: readSetting(o, 'rounds', 'generate'),
    simulator: simulatorOption(o.simulator),
    score: readSetting(o, 'score', 'generate', cliDesign.project?.score),
    formal: formalBudget(readSetting(o, 'formalBudget', 'generate'), readSetting(o, 'formalPointBudget', 'generate')),
    samples: readSetting(o, 'samples', 'generate'),
    coverageTarget: readSetting(o, 'coverageTarget', 'generate'),
    seed: readSetting(o, 'seed', 'generate'),
    timeoutS: readSetting(o, 'timeout', 'generate'),
    history: readSetting(o, 'history', 'generate'),
    model: modelConfig(o),
  };
  if (!s.model && (o.spec?.length || o.instruction || o.samples || o.stream || o['warm-start']))
    throw new Error('--spec, --instruction, --samples, --stream and --warm-start need a model (--model <dir> or --endpoint <url>)');
  return s;
}

async function generateCommand({ values: o, positionals, fail, signal, status }: CommandRun<typeof OPTIONS>): Promise<number> {
  let cliDesign: CliDesign;
  try {
    cliDesign = designFromArgs(o, positionals);
  } catch (e) {
    return fail((e as Error).message);
  }
  let settings: GenerateSettings;
  try {
    settings = generateSettings(o, cliDesign);
  } catch (e) {
    return fail((e as Error).message);
  }
  const { rounds, samples, coverageTarget, seed, timeoutS, model, simulator, score, formal, history } = settings;
  // Every place this run writes, checked before any work starts.
  let plan;
  try {
    plan = planRunOutput(o, positionals);
  } catch (e) {
    return fail((e as Error).message);
  }
  let specs: NamedText[] = [];
  for (const f of o.spec ?? []) {
    if (!existsSync(f)) return fail(`spec file ${resolve(f)} does not exist`);
    specs = [...specs, { name: basename(f), content: readFileSync(f, 'utf8') }];
  }

  const log = (s: string): void => {
    status.clear();
    if (!o.json) process.stdout.write(s);
    else process.stderr.write(s);
  };
  const { design, info, warnings, notes, discovered } = await loadDesign(cliDesign.options, signal);
  for (const n of notes) process.stderr.write(`note: ${n}\n`);
  for (const w of warnings) process.stderr.write(`warning: ${w}\n`);
  if (o['save-project']) process.stderr.write(`note: ${saveProject(cliDesign, { top: info.top, discovered })}\n`);
  const runDir = openRunFolder(plan.root, info.top);
  const progress = new StageProgress(status);
  const recorder = recordingSimulator(simulator, progress.onStage);
  const ctx: Ctx = { design, info, rounds, coverageTarget, signal, log, status, progress };
  const request: GenerationRequest = {
    design,
    info,
    model,
    simulator: recorder.simulator,
    rounds,
    allRounds: o.rounds !== undefined,
    coverageTarget,
    seed,
    instance: readSetting(o, 'instance', 'generate'),
    keepParams: o['keep-params'] === true,
    limits: { timeoutS, buildMemoryLimitMb: plan.memoryLimitMb },
    ...(score !== DEFAULT_SCORE ? { score } : {}),
    ...(formal ? { formal } : {}),
    ...(model
      ? {
          samples,
          history,
          specs,
          instruction: o.instruction,
          sampling: samplingFrom(o, seed),
          warmStart: readSetting(o, 'warmStart', 'generate'),
        }
      : {}),
  };
  let outcome: GenerationRun;
  try {
    outcome = await generate(ctx, request, { stream: o.stream ?? false });
  } finally {
    progress.stop();
  }
  status.clear();
  const oom = outcome.rounds.map((r) => outOfMemoryHint(r.result, plan.memoryLimitMb)).find(Boolean);
  if (oom) log(`${oom}\n`);
  // The run folder: every round, the best testbench, its coverage, the record (runFolder.ts).
  const tbFile = `tb_${info.top}.sv`;
  const best = outcome.best;
  const bestPath = best ? join(runDir, tbFile) : null;
  const outPath = best && o.out ? resolve(o.out) : null;
  const verdict = best ? withVerdict(best.result).verdict : { passed: false, failure: 'no testbench' };
  const record = { ...outcome.record, out: outPath ?? bestPath, run_dir: runDir, verdict };
  writeRunFolder(
    runDir,
    generationFolder(info.top, outcome, {
      designFiles: [...design.files, ...design.libraryFiles],
      recorded: recorder.recorded,
      summary: record,
    }),
  );
  if (!best) {
    log(
      signal.aborted
        ? 'cancelled: no round finished, so no testbench was written\n'
        : 'no testbench: no reply held a parsable testbench; see the rounds above\n',
    );
    log(`run folder: ${safeLine(runDir)}\n`);
    if (o.json) process.stdout.write(safeJson(record) + '\n');
    return signal.aborted ? 130 : 1;
  }
  if (outPath) {
    mkdirSync(dirname(outPath), { recursive: true });
    writeFileSync(outPath, best.testbench.endsWith('\n') ? best.testbench : best.testbench + '\n');
  }
  if (o.json) {
    process.stdout.write(safeJson(record) + '\n');
  } else {
    log(`best: ${best.label}, written to ${safeLine(outPath ?? bestPath!)}\n`);
    log(`run folder: ${safeLine(runDir)} (every round, coverage.html, coverage.info, junit.xml, summary.json)\n\n`);
    log(formatSimResult(best.result, { color: useColor(process.stdout) }));
  }
  if (signal.aborted) return 130;
  return exitCodeFor(best.result);
}

/** The CLI's view of a run: the lines it prints per round, then the --json record. */
async function generate(c: Ctx, req: GenerationRequest, a: { stream: boolean }): Promise<GenerationRun> {
  const total = c.rounds + 1;
  const model = req.model;
  const samples = req.samples ?? 1;
  const files = `${c.info.top} (${c.design.files.length} file${c.design.files.length === 1 ? '' : 's'})`;
  if (!model) {
    c.log(`No model configured: using the built-in stimulus generator (model-free, coverage-directed constrained-random).\n`);
    c.log(`design: ${files}, up to ${total} round${total === 1 ? '' : 's'}, target ${pct(c.coverageTarget / 100)}\n`);
  } else {
    c.log(`model: ${describeModel(model)}\n`);
    if (req.warmStart) c.log(`warm start: the built-in generator's best testbench is round 1; the model refines it\n`);
    c.log(
      `design: ${files}, 1 generation + up to ${c.rounds} refinement round${c.rounds === 1 ? '' : 's'}` +
        `${samples > 1 ? `, ${samples} samples` : ''}, ${req.history ?? 'markov'} history, target ${pct(c.coverageTarget / 100)}\n`,
    );
  }
  const chunks = new Map<string, number>();
  const run = await runGeneration(
    req,
    (e) => {
      const tag = samples > 1 && 'sample' in e ? `sample ${e.sample + 1} ` : '';
      if (e.type === 'round-start') c.progress.setLabel(`${tag}round ${e.round + 1}/${total}`);
      if (e.type === 'progress') c.status.set(e.message);
      else if (e.type === 'note') c.log(`note: ${safeText(e.message)}\n`);
      else if (e.type === 'text') {
        const k = `${e.sample}/${e.round}`;
        chunks.set(k, (chunks.get(k) ?? 0) + 1);
        // The model's words, as it writes them: text, never control sequences for the terminal.
        if (a.stream) process.stderr.write(safeText(e.piece));
        else c.status.set(`${tag}round ${e.round + 1}/${total}: generating (${chunks.get(k)} chunks)`);
      } else if (e.type === 'sim-start') {
        if (a.stream) process.stderr.write('\n');
        c.status.set(`${tag}round ${e.round + 1}/${total}: simulating`);
        c.progress.setLabel(`${tag}round ${e.round + 1}/${total}`);
      } else if (e.type === 'warning') c.log(`warning: ${tag}round ${e.round + 1}: ${safeText(e.message)}\n`);
      else if (e.type === 'round-end') {
        c.progress.idle();
        c.log(roundLine(e.entry, total, samples > 1 ? `sample ${e.entry.sample + 1} ` : ''));
      }
    },
    c.signal,
  );
  for (const p of run.scaledParams)
    c.log(`parameter ${p.name} instantiated as ${p.value} instead of ${p.was}: ${p.why} (--keep-params keeps it)\n`);
  return generationRun(run, req);
}

function roundLine(r: GenerationRound, total: number, tag: string): string {
  const cov = r.result?.coverage?.waived;
  const covText = cov ? `  coverage ${pct(cov.overall)} (block ${pct(cov.block)}, toggle ${pct(cov.toggle)})` : '';
  if (r.source === 'builtin')
    return `round ${r.round + 1}/${total}: ${verdictText(r.result!)}${covText}  ${r.result!.timings.total.toFixed(2)}s\n`;
  const a = r.agent!;
  const what = r.error
    ? `model error (${safeLine(r.error.kind)}): ${safeText(r.error.message)}`
    : a.parsed.status !== 'success'
      ? `unparsable reply (${safeText(a.parsed.reason)})`
      : `${verdictText(r.result!)}${covText}`;
  const cost =
    r.source === 'warm-start'
      ? 'built-in generator (warm start)'
      : `${r.tokens.completion} tokens, model ${(r.modelMs / 1000).toFixed(1)}s` +
        (a.cache ? `, prompt ${a.cache.evaluatedTokens} evaluated + ${a.cache.reusedTokens} reused` : '') +
        (a.drafts?.proposed ? `, drafts ${a.drafts.accepted}/${a.drafts.proposed} kept` : '') +
        `, sim ${(r.simMs / 1000).toFixed(2)}s`;
  return `${tag}round ${r.round + 1}/${total}: ${what}  [${cost}]\n`;
}
