// `chorus sim`: one testbench, one design, one result. Exit 0 when the testbench ran and coverage
// was measured, 1 when the testbench failed (compile, run, timeout, rejected), 2 for usage or DUT
// errors.
import { DEFAULT_LIMITS, DEFAULT_SCORE } from '../core/vocabulary/defaults.js';
import { readFileSync, writeFileSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { loadDesign } from '../core/run/design.js';
import { DesignError } from '../core/run/sources.js';
import { getSimulator } from '../core/run/simulators.js';
import type { Waiver } from '../core/run/types.js';
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
import { DESIGN_HELP, testbenchAndDesign, saveProject, type CliDesign } from './designOptions.js';
import { simulatorOption } from './simulatorOption.js';
import { readSetting, settingOptions, settingsHelp } from './settingOptions.js';
import { openRunFolder, outOfMemoryHint, recordingSimulator, writeRunFolder } from '../core/run/runFolder.js';
import { simFolder } from '../core/run/runRecord.js';
import { RUN_OUTPUT_HELP, RUN_OUTPUT_OPTIONS, planRunOutput } from './runOutput.js';
import { terminable } from './termination.js';
import { StageProgress } from './progress.js';
import type { ScoreMode } from '../core/run/simulators.js';

export const HELP = `Usage: chorus sim --top <DUT module> --tb <testbench.sv> <design files | folder | .core | Bender.yml> [options]

${DESIGN_HELP}Run:
  --tb <file>           the testbench (its top module is found in the file)
${settingsHelp('sim', ['timeout'])}  --sim-time <ns>       simulated-time limit in ns (default ${DEFAULT_LIMITS.simTimeLimitNs}; 0 for none)
  --waivers <file>      coverage waivers: <file>:<line>[:<type>[:<label>]] <reason>
  --lcov <file>         also write the DUT coverage as an lcov tracefile
${settingsHelp('sim', ['seed', 'simulator', 'score'])}  --keep                keep the scratch directory and print its path
Output:
${RUN_OUTPUT_HELP}  --json                print the result record as JSON on stdout
`;

export const OPTIONS = {
  ...settingOptions('sim'),
  ...strings('tb', 'sim-time', 'waivers', 'lcov'),
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

async function sim({ values: o, positionals, fail, signal, status }: CommandRun<typeof OPTIONS>): Promise<number> {
  let tbPath: string, cliDesign: CliDesign;
  try {
    ({ tbPath, design: cliDesign } = testbenchAndDesign(o, positionals));
  } catch (e) {
    return fail((e as Error).message);
  }
  let timeoutS: number, simTimeNs: number | null, seed: number, simulatorName: string, score: ScoreMode;
  try {
    simulatorName = simulatorOption(o.simulator);
    timeoutS = readSetting(o, 'timeout', 'sim');
    simTimeNs = numberOption('sim-time', o['sim-time'], DEFAULT_LIMITS.simTimeLimitNs ?? 0);
    if (simTimeNs === 0) simTimeNs = null;
    seed = readSetting(o, 'seed', 'sim');
    score = readSetting(o, 'score', 'sim', cliDesign.project?.score);
  } catch (e) {
    return fail((e as Error).message);
  }
  // Every place this run writes, checked before any work starts.
  let plan;
  try {
    plan = planRunOutput(o, positionals, o.lcov ? [o.lcov] : []);
  } catch (e) {
    return fail((e as Error).message);
  }
  let waivers: Waiver[] = [];
  try {
    if (o.waivers) waivers = loadWaivers(resolve(o.waivers));
  } catch (e) {
    return fail(e instanceof WaiverError ? e.message : String(e));
  }

  const { design, info, warnings, notes, discovered } = await loadDesign(cliDesign.options, signal);
  for (const n of notes) process.stderr.write(`note: ${safeText(n)}\n`);
  if (o['save-project']) process.stderr.write(`note: ${saveProject(cliDesign, { top: info.top, discovered })}\n`);
  const runDir = openRunFolder(plan.root, info.top);
  const progress = new StageProgress(status);
  const recorder = recordingSimulator(getSimulator(simulatorName), progress.onStage);
  const testbench = readFileSync(tbPath, 'utf8');
  const result = await recorder.simulator.simulate({
    design,
    top: info.top,
    testbench: { name: basename(tbPath), content: testbench },
    limits: { timeoutS, simTimeLimitNs: simTimeNs, buildMemoryLimitMb: plan.memoryLimitMb },
    waivers,
    seed,
    keepRunDir: Boolean(o.keep),
    // lcov is written from the points the figure was computed from, never from a second
    // reading of the database with another idea of which files are the DUT.
    wantPoints: Boolean(o.lcov),
    ...(score !== DEFAULT_SCORE ? { score } : {}),
    signal,
  });
  progress.stop();
  status.clear();
  // The run folder: the testbench as round 1, its log, coverage and the record (runFolder.ts).
  writeRunFolder(
    runDir,
    simFolder(info.top, testbench, result, {
      designFiles: [...design.files, ...design.libraryFiles],
      recorded: recorder.recorded(result),
      runDir,
    }),
  );
  const lcovWritten = Boolean(o.lcov && result.points);
  if (o.lcov && result.points) writeFileSync(resolve(o.lcov), toLcov(result.points));
  if (o.json) {
    process.stdout.write(safeJson(withVerdict(result)) + '\n');
    process.stderr.write(`note: run folder: ${runDir}\n`);
  } else {
    for (const w of warnings) process.stderr.write(`warning: ${safeText(w)}\n`);
    process.stdout.write(formatSimResult(result, { color: useColor(process.stdout) }));
    process.stdout.write(`run folder: ${runDir}\n`);
    const oom = outOfMemoryHint(result, plan.memoryLimitMb);
    if (oom) process.stdout.write(`${oom}\n`);
    if (o.keep && result.protection.scratchDir) process.stdout.write(`run directory kept: ${result.protection.scratchDir}\n`);
    if (lcovWritten) process.stdout.write(`lcov written: ${resolve(o.lcov as string)}\n`);
    else if (o.lcov)
      process.stderr.write(
        `warning: no lcov written: the run produced no per-point coverage (${result.simulator.name}, ${result.status})\n`,
      );
  }
  return exitCodeFor(result);
}
