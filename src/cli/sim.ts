// `chorus sim`: one testbench, one design, one result. Exit 0 when the testbench ran and coverage
// was measured, 1 when the testbench failed (compile, run, timeout, rejected), 2 for usage or DUT
// errors.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadDesign } from '../core/design/load.js';
import { DesignError } from '../core/design/errors.js';
import { getSimulator, simulatorNames } from '../core/sim/registry.js';
import { loadWaivers, WaiverError, type Waiver } from '../core/coverage/waivers.js';
import { parseVerilatorCoverage } from '../core/coverage/verilatorDat.js';
import { analyzeCoverage } from '../core/coverage/analyze.js';
import { toLcov } from '../core/coverage/lcov.js';
import { ToolchainError } from '../core/sim/verilator/toolchain.js';
import { formatSimResult } from './format.js';

const HELP = `Usage: chorus sim --top <DUT module> --tb <testbench.sv> <design files...> [options]

Design:
  --top <module>        DUT top module (needed when the files hold several top candidates)
  -f <files.f>          EDA file list (+incdir+, +define+, -v, nested -f); repeatable
  -I <dir>              include directory; repeatable
  -D <NAME[=VALUE]>     define; repeatable
  -G <NAME=VALUE>       DUT top parameter override (applied when the DUT is read); repeatable
Run:
  --tb <file>           the testbench (its top module is found in the file)
  --timeout <s>         wall-clock limit for the simulation (default 60)
  --sim-time <ns>       simulated-time limit in ns (default 1e9; 0 for none)
  --waivers <file>      coverage waivers: <file>:<line>[:<type>[:<label>]] <reason>
  --lcov <file>         also write the DUT coverage as an lcov tracefile
  --seed <n>            simulator random seed (default 1)
  --simulator <name>    ${simulatorNames().join(' | ')} (default verilator)
  --keep                keep the scratch directory and print its path
Output:
  --json                print the result record as JSON on stdout
`;

export async function runSim(argv: string[]): Promise<number> {
  let args;
  try {
    args = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        top: { type: 'string' },
        tb: { type: 'string' },
        filelist: { type: 'string', short: 'f', multiple: true },
        include: { type: 'string', short: 'I', multiple: true },
        define: { type: 'string', short: 'D', multiple: true },
        param: { type: 'string', short: 'G', multiple: true },
        json: { type: 'boolean' },
        timeout: { type: 'string' },
        'sim-time': { type: 'string' },
        waivers: { type: 'string' },
        lcov: { type: 'string' },
        seed: { type: 'string' },
        simulator: { type: 'string' },
        keep: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (e) {
    process.stderr.write(`chorus sim: ${(e as Error).message}\n\n${HELP}`);
    return 2;
  }
  const o = args.values;
  if (o.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const fail = (msg: string): number => {
    process.stderr.write(`chorus sim: ${msg}\n`);
    return 2;
  };
  if (!o.tb) return fail('--tb <testbench.sv> is required');
  const tbPath = resolve(o.tb);
  if (!existsSync(tbPath)) return fail(`testbench not found: ${tbPath}`);
  if (args.positionals.length === 0 && !o.filelist?.length) return fail('name the design files (or -f files.f)');
  const num = (name: string, v: string | undefined, dflt: number): number | null => {
    if (v === undefined) return dflt;
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a non-negative number, got '${v}'`);
    return n;
  };
  let timeoutS: number, simTimeNs: number | null, seed: number;
  try {
    timeoutS = num('timeout', o.timeout, 60) as number;
    simTimeNs = num('sim-time', o['sim-time'], 1e9);
    if (simTimeNs === 0) simTimeNs = null;
    seed = num('seed', o.seed, 1) as number;
  } catch (e) {
    return fail((e as Error).message);
  }
  let waivers: Waiver[] = [];
  try {
    if (o.waivers) waivers = loadWaivers(resolve(o.waivers));
  } catch (e) {
    return fail(e instanceof WaiverError ? e.message : String(e));
  }

  const controller = new AbortController();
  const onSigint = (): void => controller.abort();
  process.once('SIGINT', onSigint);
  try {
    const { design, info, warnings } = await loadDesign({
      files: args.positionals.filter((p) => resolve(p) !== tbPath),
      fileLists: o.filelist,
      includeDirs: o.include,
      defines: o.define,
      params: o.param,
      top: o.top,
    }, controller.signal);
    const simulator = getSimulator(o.simulator ?? 'verilator');
    const keep = Boolean(o.keep || o.lcov);
    const result = await simulator.simulate({
      design,
      top: info.top,
      testbench: { name: basename(tbPath), content: readFileSync(tbPath, 'utf8') },
      limits: { timeoutS, simTimeLimitNs: simTimeNs },
      waivers,
      seed,
      keepRunDir: keep,
      signal: controller.signal,
    });
    if (o.lcov && result.coverageFile) {
      const cov = analyzeCoverage(parseVerilatorCoverage(readFileSync(result.coverageFile, 'utf8')), {
        isDutFile: (f) => basename(f) !== basename(tbPath) || f.startsWith('/'),
        top: info.top,
        waivers,
      });
      writeFileSync(resolve(o.lcov), toLcov(cov.points));
    }
    if (keep && !o.keep && result.protection.scratchDir) rmSync(result.protection.scratchDir, { recursive: true, force: true });
    if (o.json) process.stdout.write(JSON.stringify(result, null, 2) + '\n');
    else {
      for (const w of warnings) process.stderr.write(`warning: ${w}\n`);
      process.stdout.write(formatSimResult(result, { color: process.stdout.isTTY === true }));
      if (o.keep && result.protection.scratchDir) process.stdout.write(`run directory kept: ${result.protection.scratchDir}\n`);
      if (o.lcov) process.stdout.write(`lcov written: ${resolve(o.lcov)}\n`);
    }
    if (result.status === 'exception') return 2;
    return result.status === 'success' ? 0 : 1;
  } catch (e) {
    if (e instanceof DesignError) {
      if (o.json) process.stdout.write(JSON.stringify({ status: 'design_error', kind: e.kind, err_msg: e.message, candidates: e.candidates, diagnostics: e.diagnostics }, null, 2) + '\n');
      return fail(`design error (${e.kind}): ${e.message}`);
    }
    if (e instanceof ToolchainError) return fail(e.message);
    throw e;
  } finally {
    process.removeListener('SIGINT', onSigint);
    void dirname;
  }
}
