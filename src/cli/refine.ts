// `chorus refine`: one refinement step on a testbench the user already has. The feedback is a log
// from the user's own simulator run (Verilator, Xcelium/IMC or plain text) or, without --log, the
// engine's own simulation of the testbench. Writes the revision to a new file.
import { DEFAULT_SCORE } from '../core/vocabulary/defaults.js';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { loadDesign } from '../core/run/design.js';
import { getSimulator } from '../core/run/simulators.js';
import { describeModel } from '../core/run/models.js';
import { runRefinement } from '../core/run/refinement.js';
import type { LogKind, NamedText } from '../core/run/types.js';
import { overallCoverage } from '../core/run/coverage.js';
import { pct, safeJson, safeLine, safeText } from '../core/run/frontEnd.js';
import { DESIGN_HELP, testbenchAndDesign, saveProject, type CliDesign } from './designOptions.js';
import { MODEL_RUN_ERRORS, RESULT_OPTIONS, flags, strings, exitCodeFor, runCommand, type CommandRun } from './command.js';
import { useColor } from './terminal.js';
import { MODEL_HELP, MODEL_OPTIONS, MODEL_SETTINGS, modelConfig, samplingFrom } from './modelOptions.js';
import { formatSimResult, verdictText } from './format.js';
import { openRunFolder, outOfMemoryHint, recordingSimulator, writeRunFolder } from '../core/run/runFolder.js';
import { refinementFolder } from '../core/run/runRecord.js';
import { RUN_OUTPUT_HELP, RUN_OUTPUT_OPTIONS, planRunOutput } from './runOutput.js';
import { terminable } from './termination.js';
import { StageProgress } from './progress.js';
import { simulatorOption } from './simulatorOption.js';
import { readSetting, settingOptions, settingsHelp } from './settingOptions.js';
import type { ScoreMode } from '../core/run/simulators.js';
import { formalBudget } from '../core/vocabulary/defaults.js';
import type { FormalBudget } from '../core/vocabulary/types.js';

export const HELP = `Usage: chorus refine --tb <testbench.sv> [--log <sim.log>] <design files | folder | manifest> [--model <dir> | --endpoint <url> --model-name <n>]

One refinement step: the model revises the testbench from the simulator's feedback. With --log the
feedback is your own simulator's log (Verilator, Xcelium/IMC, or plain text: errors are put first;
a coverage report asks for more coverage); without it the testbench is simulated here first.
Without a model the built-in generator writes the revision (saying so): the testbench is simulated
here and the generator's rounds start from what it left uncovered (a log is not read). The revision
is your testbench as written plus the generator's stimulus (task chorus_refine, called before your
$finish); where it cannot be edited safely, a note says why and the revision is a new testbench.

${DESIGN_HELP}${MODEL_HELP}${settingsHelp('refine', MODEL_SETTINGS)}Refinement:
  --tb <file>           the testbench to refine
  --log <file>          the log of your simulation run (compile/run errors or a coverage report)
  --log-kind <k>        auto (default) | xrun (a compile/run failure) | coverage | imc (a coverage
                        tool failure)
  --spec <file>         specification file shown to the model; repeatable
${settingsHelp('refine', ['instance', 'seed', 'timeout', 'simulator', 'score', 'formalBudget', 'formalPointBudget'])}  --no-check            do not simulate the revision
Output:
  --out <file>          also write the revision to this file (it is always in the run folder as
                        <tb>_refined.sv; never overwrites without --force)
  --force               overwrite --out if it exists
${RUN_OUTPUT_HELP}  --json                print {messages, reply, parse_status, testbench, result} as JSON on stdout
`;

export const OPTIONS = {
  ...MODEL_OPTIONS,
  ...settingOptions('refine'),
  ...strings('tb', 'log', 'log-kind'),
  spec: { type: 'string', multiple: true },
  ...flags('no-check'),
  ...RUN_OUTPUT_OPTIONS,
  ...RESULT_OPTIONS,
} as const;

export function runRefine(argv: string[]): Promise<number> {
  return runCommand(argv, { name: 'refine', options: OPTIONS, help: HELP, errors: MODEL_RUN_ERRORS }, (run) =>
    terminable(run.signal, (signal) => refineCommand({ ...run, signal })),
  );
}

async function refineCommand({ values: o, positionals, fail, signal, status }: CommandRun<typeof OPTIONS>): Promise<number> {
  let tbPath: string, cliDesign: CliDesign;
  try {
    ({ tbPath, design: cliDesign } = testbenchAndDesign(o, positionals));
  } catch (e) {
    return fail((e as Error).message);
  }
  if (o.log && !existsSync(resolve(o.log))) return fail(`log ${resolve(o.log)} does not exist`);
  const kind = (o['log-kind'] ?? 'auto') as LogKind | 'auto';
  if (!['auto', 'xrun', 'coverage', 'imc'].includes(kind)) return fail(`--log-kind must be auto, xrun, coverage or imc, got '${kind}'`);
  let model, seed: number | undefined, timeoutS: number, simulatorName: string, score: ScoreMode, formal: FormalBudget | undefined;
  try {
    simulatorName = simulatorOption(o.simulator);
    score = readSetting(o, 'score', 'refine', cliDesign.project?.score);
    formal = formalBudget(readSetting(o, 'formalBudget', 'refine'), readSetting(o, 'formalPointBudget', 'refine'));
    model = modelConfig(o);
    // Unset, the refinement picks its own (the run's recorded seed): no default is forced here.
    seed = o.seed === undefined ? undefined : readSetting(o, 'seed', 'refine');
    timeoutS = readSetting(o, 'timeout', 'refine');
  } catch (e) {
    return fail((e as Error).message);
  }
  // Every place this run writes, checked before any work starts.
  let plan;
  try {
    plan = planRunOutput(o, positionals);
  } catch (e) {
    return fail((e as Error).message);
  }

  const say = (s: string): void => {
    status.clear();
    (o.json ? process.stderr : process.stdout).write(s);
  };
  const { design, info, warnings, notes, discovered } = await loadDesign(cliDesign.options, signal);
  for (const n of notes) process.stderr.write(`note: ${n}\n`);
  if (o['save-project']) process.stderr.write(`note: ${saveProject(cliDesign, { top: info.top, discovered })}\n`);
  for (const w of warnings) process.stderr.write(`warning: ${w}\n`);
  const testbench: NamedText = { name: basename(tbPath), content: readFileSync(tbPath, 'utf8') };
  const runDir = openRunFolder(plan.root, info.top);
  const progress = new StageProgress(status);
  const recorder = recordingSimulator(getSimulator(simulatorName), progress.onStage);
  const simulator = recorder.simulator;
  const specs = (o.spec ?? []).map((f) => ({ name: basename(f), content: readFileSync(f, 'utf8') }));
  let chunks = 0;
  const r = await runRefinement(
    {
      design,
      info,
      testbench,
      model,
      simulator,
      feedback: o.log ? { log: readFileSync(resolve(o.log), 'utf8'), kind: kind === 'auto' ? undefined : kind } : undefined,
      specs,
      // Unset, the DUT's instance is read from the testbench itself.
      instance: o.instance,
      sampling: samplingFrom(o, seed),
      seed,
      limits: { timeoutS, buildMemoryLimitMb: plan.memoryLimitMb },
      ...(score !== DEFAULT_SCORE ? { score } : {}),
      ...(formal ? { formal } : {}),
      check: !o['no-check'],
    },
    (e) => {
      if (e.type === 'note') say(`note: ${e.message}\n`);
      else if (e.type === 'before') {
        const cov = overallCoverage(e.result);
        say(`current testbench: ${verdictText(e.result)}${cov !== null ? `, coverage ${pct(cov)}` : ''}\n`);
      } else if (e.type === 'progress') {
        progress.setLabel(e.message);
        status.set(e.message);
      } else if (e.type === 'model') say(`model: ${describeModel(model!)}\n`);
      else if (e.type === 'text') status.set(`refining: ${++chunks} chunks`);
    },
    signal,
  ).finally(() => progress.stop());
  status.clear();
  const before = r.before;
  const outcome = r.outcome;
  // The run folder: the input's result, every round, the revision, its coverage, the record.
  const outPath = r.testbench !== null && o.out ? resolve(o.out) : null;
  const folder = refinementFolder(info.top, r, testbench, {
    designFiles: [...design.files, ...design.libraryFiles],
    recorded: recorder.recorded,
    runDir,
    out: outPath,
  });
  const { summary, rounds } = folder;
  const revisedPath = folder.best ? join(runDir, folder.best.fileName!) : null;
  writeRunFolder(runDir, folder);
  say(`run folder: ${safeLine(runDir)}\n`);
  const oom = rounds.map((x) => outOfMemoryHint(x.result, plan.memoryLimitMb)).find(Boolean);
  if (oom) say(`${oom}\n`);
  if (r.testbench === null) {
    say(
      `the model's reply held no testbench (${safeText(outcome?.parsed.status === 'unparsable' ? outcome.parsed.reason : 'no reply')}); nothing written\n`,
    );
    if (o.json && outcome)
      process.stdout.write(safeJson({ messages: outcome.messages, reply: outcome.reply, parse_status: outcome.parsed.status }) + '\n');
    return 1;
  }
  if (r.refused) {
    // The input held the design's assertions and the revision breaks them: nothing replaces it.
    say(`${safeText(r.refused)}; nothing written (the revision is in the run folder)\n`);
    if (o.json) process.stdout.write(safeJson({ ...summary, refused: r.refused }) + '\n');
    return signal.aborted ? 130 : 1;
  }
  if (outPath) {
    mkdirSync(dirname(outPath), { recursive: true });
    writeFileSync(outPath, r.testbench.endsWith('\n') ? r.testbench : r.testbench + '\n');
  }
  say(`revision written to ${safeLine(outPath ?? revisedPath!)}\n`);
  const after = r.result;
  if (after && !o.json) {
    const b = overallCoverage(before);
    const a = overallCoverage(after);
    if (before) say(`coverage: ${pct(b)} -> ${pct(a)}\n\n`);
    say(formatSimResult(after, { color: useColor(process.stdout) }));
  }
  if (o.json) process.stdout.write(safeJson(summary) + '\n');
  if (signal.aborted) return 130;
  return after ? exitCodeFor(after) : 0;
}
