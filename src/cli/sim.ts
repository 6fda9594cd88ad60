// `chorus sim`: one testbench (or a group: --tb repeated), one design, one result per testbench.
// Exit 0 when every testbench ran and coverage was measured, 1 when one failed (compile, run,
// timeout, rejected), 2 for usage or DUT errors.
import { DEFAULT_LIMITS, DEFAULT_SCORE } from '../core/vocabulary/defaults.js';
import { readFileSync, writeFileSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { loadDesign } from '../core/run/design.js';
import { DesignError } from '../core/run/sources.js';
import { getSimulator, simulateAll } from '../core/run/simulators.js';
import type { SimResult, Waiver } from '../core/run/types.js';
import { loadWaivers, WaiverError, toLcov, withVerdict } from '../core/run/coverage.js';
import { formatSimResult } from './format.js';
import { safeJson, safeText } from '../core/run/frontEnd.js';
import {
  flags,
  strings,
  designError,
  exitCodeFor,
  numberOption,
  runCommand,
  runFolderError,
  toolchainError,
  type CommandRun,
} from './command.js';
import { useColor } from './terminal.js';
import { DESIGN_HELP, testbenchesAndDesign, saveProject, type CliDesign } from './designOptions.js';
import { simulatorOption } from './simulatorOption.js';
import { readSetting, settingOptions, settingsHelp } from './settingOptions.js';
import { openRunFolder, outOfMemoryHint, recordingSimulator, writeRunFolder } from '../core/run/runFolder.js';
import { simFolder } from '../core/run/runRecord.js';
import { RUN_OUTPUT_HELP, RUN_OUTPUT_OPTIONS, planRunOutput } from './runOutput.js';
import { terminable } from './termination.js';
import { StageProgress } from './progress.js';
import type { ScoreMode } from '../core/run/simulators.js';
import { formalBudget } from '../core/vocabulary/defaults.js';
import type { FormalBudget } from '../core/vocabulary/types.js';

export const HELP = `Usage: chorus sim --top <DUT module> --tb <testbench.sv> <design files | folder | .core | Bender.yml> [options]

${DESIGN_HELP}Run:
  --tb <file>           the testbench (its top module is found in the file); repeat it to score several
                        testbenches of the design as one group (one result each, in order; shared work)
${settingsHelp('sim', ['timeout'])}  --sim-time <ns>       simulated-time limit in ns (default ${DEFAULT_LIMITS.simTimeLimitNs}; 0 for none)
  --waivers <file>      coverage waivers: <file>:<line>[:<type>[:<label>]] <reason>
  --lcov <file>         also write the DUT coverage as an lcov tracefile
${settingsHelp('sim', ['seed', 'simulator', 'score', 'formalBudget', 'formalPointBudget'])}  --keep                keep the scratch directory and print its path
Output:
${RUN_OUTPUT_HELP}  --json                print the result record as JSON on stdout
`;

export const OPTIONS = {
  ...settingOptions('sim'),
  tb: { type: 'string', multiple: true },
  ...strings('sim-time', 'waivers', 'lcov'),
  ...flags('json', 'keep'),
  ...RUN_OUTPUT_OPTIONS,
} as const;

export function runSim(argv: string[]): Promise<number> {
  return runCommand(
    argv,
    {
      name: 'sim',
      options: OPTIONS,
      help: HELP,
      // No model here: a second Ctrl-C ends the process at once, and a design load that Ctrl-C
      // cancelled is reported as the design error it raised.
      interrupt: 'cancel-once',
      errors: [
        (e, { values: o }) => {
          if (e instanceof DesignError && o.json)
            process.stdout.write(
              safeJson({ status: 'design_error', kind: e.kind, err_msg: e.message, candidates: e.candidates, diagnostics: e.diagnostics }) +
                '\n',
            );
          return designError(e);
        },
        toolchainError,
        runFolderError,
      ],
    },
    (run) => terminable(run.signal, (signal) => sim({ ...run, signal })),
  );
}

/** What `chorus sim` read from its options, for one testbench or a group. */
interface SimSettings {
  tbPaths: string[];
  cliDesign: CliDesign;
  timeoutS: number;
  simTimeNs: number | null;
  seed: number;
  simulatorName: string;
  score: ScoreMode;
  waivers: Waiver[];
  formal: FormalBudget | undefined;
  plan: ReturnType<typeof planRunOutput>;
}

function readSimSettings(o: CommandRun<typeof OPTIONS>['values'], positionals: string[]): SimSettings {
  const { tbPaths, design: cliDesign } = testbenchesAndDesign(o, positionals);
  if (tbPaths.length > 1 && (o.lcov || o.keep))
    throw new Error(`--${o.lcov ? 'lcov' : 'keep'} takes one testbench; ${tbPaths.length} were given with --tb`);
  const simulatorName = simulatorOption(o.simulator);
  const timeoutS = readSetting(o, 'timeout', 'sim');
  const simTime = numberOption('sim-time', o['sim-time'], DEFAULT_LIMITS.simTimeLimitNs ?? 0);
  const seed = readSetting(o, 'seed', 'sim');
  const score = readSetting(o, 'score', 'sim', cliDesign.project?.score);
  const formal = formalBudget(readSetting(o, 'formalBudget', 'sim'), readSetting(o, 'formalPointBudget', 'sim'));
  // Every place this run writes, checked before any work starts.
  const plan = planRunOutput(o, positionals, o.lcov ? [o.lcov] : []);
  let waivers: Waiver[] = [];
  try {
    if (o.waivers) waivers = loadWaivers(resolve(o.waivers));
  } catch (e) {
    throw new Error(e instanceof WaiverError ? e.message : String(e));
  }
  return { tbPaths, cliDesign, timeoutS, simTimeNs: simTime === 0 ? null : simTime, seed, simulatorName, score, formal, waivers, plan };
}

async function sim({ values: o, positionals, fail, signal, status }: CommandRun<typeof OPTIONS>): Promise<number> {
  let st: SimSettings;
  try {
    st = readSimSettings(o, positionals);
  } catch (e) {
    return fail((e as Error).message);
  }
  const { tbPaths, cliDesign, plan } = st;
  const { design, info, warnings, notes, discovered } = await loadDesign(cliDesign.options, signal);
  for (const n of notes) process.stderr.write(`note: ${safeText(n)}\n`);
  if (o['save-project']) process.stderr.write(`note: ${saveProject(cliDesign, { top: info.top, discovered })}\n`);
  const progress = new StageProgress(status);
  const recorder = recordingSimulator(getSimulator(st.simulatorName), tbPaths.length === 1 ? progress.onStage : undefined);
  if (tbPaths.length > 1) status.set(`scoring ${tbPaths.length} testbenches of ${info.top} as one group`);
  const testbenches = tbPaths.map((p) => readFileSync(p, 'utf8'));
  const results = await simulateAll(
    recorder.simulator,
    tbPaths.map((tbPath, k) => ({
      design,
      top: info.top,
      testbench: { name: basename(tbPath), content: testbenches[k] },
      limits: { timeoutS: st.timeoutS, simTimeLimitNs: st.simTimeNs, buildMemoryLimitMb: plan.memoryLimitMb },
      waivers: st.waivers,
      ...(st.formal ? { formal: st.formal } : {}),
      seed: st.seed,
      keepRunDir: Boolean(o.keep),
      // lcov is written from the points the figure was computed from, never from a second
      // reading of the database with another idea of which files are the DUT.
      wantPoints: Boolean(o.lcov),
      ...(st.score !== DEFAULT_SCORE ? { score: st.score } : {}),
      signal,
    })),
  );
  progress.stop();
  status.clear();
  // A run folder per testbench: the testbench as round 1, its log, coverage and the record.
  const runDirs = results.map((result, k) => {
    const runDir = openRunFolder(plan.root, info.top);
    writeRunFolder(
      runDir,
      simFolder(info.top, testbenches[k], result, {
        designFiles: [...design.files, ...design.libraryFiles],
        recorded: recorder.recorded(result),
        runDir,
      }),
    );
    return runDir;
  });
  if (results.length === 1) report(o, results[0], runDirs[0], warnings, plan.memoryLimitMb);
  else reportGroup(o, results, runDirs, tbPaths, warnings);
  return Math.max(...results.map(exitCodeFor));
}

/** One testbench's result: the record, or the summary, the run folder and the lcov file. */
function report(
  o: CommandRun<typeof OPTIONS>['values'],
  result: SimResult,
  runDir: string,
  warnings: string[],
  memoryLimitMb: number,
): void {
  const lcovWritten = Boolean(o.lcov && result.points);
  if (o.lcov && result.points) writeFileSync(resolve(o.lcov), toLcov(result.points));
  if (o.json) {
    process.stdout.write(safeJson(withVerdict(result)) + '\n');
    process.stderr.write(`note: run folder: ${runDir}\n`);
    return;
  }
  for (const w of warnings) process.stderr.write(`warning: ${safeText(w)}\n`);
  process.stdout.write(formatSimResult(result, { color: useColor(process.stdout) }));
  process.stdout.write(`run folder: ${runDir}\n`);
  const oom = outOfMemoryHint(result, memoryLimitMb);
  if (oom) process.stdout.write(`${oom}\n`);
  if (o.keep && result.protection.scratchDir) process.stdout.write(`run directory kept: ${result.protection.scratchDir}\n`);
  if (lcovWritten) process.stdout.write(`lcov written: ${resolve(o.lcov as string)}\n`);
  else if (o.lcov)
    process.stderr.write(`warning: no lcov written: the run produced no per-point coverage (${result.simulator.name}, ${result.status})\n`);
}

/** A group's results, in the order of --tb: a JSON array, or each summary under its file name. */
function reportGroup(
  o: CommandRun<typeof OPTIONS>['values'],
  results: SimResult[],
  runDirs: string[],
  tbPaths: string[],
  warnings: string[],
): void {
  if (o.json) {
    process.stdout.write(safeJson(results.map((r) => withVerdict(r))) + '\n');
    runDirs.forEach((d, k) => process.stderr.write(`note: run folder of ${basename(tbPaths[k])}: ${d}\n`));
    return;
  }
  for (const w of warnings) process.stderr.write(`warning: ${safeText(w)}\n`);
  results.forEach((result, k) => {
    process.stdout.write(`${k ? '\n' : ''}== ${k + 1}/${results.length} ${safeText(tbPaths[k])} ==\n`);
    process.stdout.write(formatSimResult(result, { color: useColor(process.stdout) }));
    process.stdout.write(`run folder: ${runDirs[k]}\n`);
  });
}
