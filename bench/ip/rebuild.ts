// bench/ip's independent check of a written testbench: rebuild it with the design using PLAIN
// Verilator (`verilator --binary`, no CHORUS code in the model), run it, and count the design's
// own assertion failures from Verilator's messages. A small wrapper top instantiates the testbench
// and, when the design's reset is known, samples `tb.<dut>.<reset>` on each edge of its clock
// through a hierarchical reference, printing how many edges the design spent out of reset.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runBounded, type ProcResult } from './proc.js';
import type { ResetGuess } from './reset.js';

export interface RebuildResult {
  /** built and ran to $finish | build failed | run failed (exit status, timeout) */
  status: 'ran' | 'build-failed' | 'run-failed';
  /** Assertion failure messages (%Error/%Fatal ... Assertion failed in ...). */
  failures: number;
  /** The run reached Verilator's error limit (ERROR_LIMIT): failures is a lower bound. */
  limitReached: boolean;
  /** Distinct file:line assertion sites among them. */
  sites: string[];
  /** Of the failures, those of the checks --assert adds to unique/priority case statements (Verilator
   * words them "synthesis full_case / parallel_case, but ..."), not assertion statements. */
  caseChecks: number;
  /** Clock edges sampled, and those with the reset inactive (null: no reset known or no output). */
  edges: number | null;
  outOfReset: number | null;
  finished: boolean;
  /** First error of a failed build or run. */
  error?: string;
  buildSeconds: number;
  runSeconds: number;
}

export interface RebuildRequest {
  verilator: string;
  /** The design's repository checkout: design paths and include dirs are relative to it. */
  repoDir: string;
  designFiles: string[];
  /** -I/-D/-G flags (and -UVERILATOR for the second variant). */
  flags: string[];
  tbFile: string;
  tbTop: string;
  dutInstance: string;
  reset: ResetGuess | null;
  /** Build folder (emptied first). */
  workDir: string;
  buildTimeoutS: number;
  runTimeoutS: number;
}

const WRAPPER_TOP = 'chorus_ip_bench_top';
const MONITOR_TAG = 'CHORUS-IP-BENCH reset';

export async function rebuildAndRun(q: RebuildRequest): Promise<RebuildResult> {
  rmSync(q.workDir, { recursive: true, force: true });
  mkdirSync(q.workDir, { recursive: true });
  const obj = join(q.workDir, 'obj');
  const build = await buildModel(q, obj);
  const empty = {
    failures: 0,
    limitReached: false,
    sites: [],
    caseChecks: 0,
    edges: null,
    outOfReset: null,
    finished: false,
    buildSeconds: build.seconds,
    runSeconds: 0,
  };
  if (build.code !== 0)
    return {
      ...empty,
      status: 'build-failed',
      error: build.timedOut ? `timed out after ${q.buildTimeoutS} s` : firstError(build.stderr),
    };
  return { ...empty, ...(await runModel(q, obj)) };
}

/** `verilator --binary` of the design, the testbench and the wrapper top, into `obj`. */
async function buildModel(q: RebuildRequest, obj: string): Promise<ProcResult> {
  const wrapper = join(q.workDir, `${WRAPPER_TOP}.sv`);
  writeFileSync(wrapper, wrapperSource(q));
  const args = ['--binary', '--timing', '--assert', '-Wno-fatal', '-Wno-lint', '-Wno-style', '--top-module', WRAPPER_TOP];
  const build = await runBounded(q.verilator, [...args, '-Mdir', obj, '-o', 'Vtb', ...q.flags, ...q.designFiles, q.tbFile, wrapper], {
    cwd: q.repoDir,
    timeoutS: q.buildTimeoutS,
  });
  writeFileSync(join(q.workDir, 'build.log'), build.stdout + build.stderr);
  return build;
}

/** Runs the model to the end (assertion failures reported, not stopping it) and reads what it printed. */
async function runModel(q: RebuildRequest, obj: string): Promise<Omit<RebuildResult, 'buildSeconds'>> {
  const reader = runReader();
  const run = await runBounded(join(obj, 'Vtb'), [`+verilator+error+limit+${ERROR_LIMIT}`], {
    cwd: q.workDir,
    timeoutS: q.runTimeoutS,
    onLine: reader.line,
  });
  writeFileSync(join(q.workDir, 'run.log'), run.stdout + run.stderr);
  const { lastError, ...seen } = reader.result();
  const ok = run.code === 0 || (seen.finished && !run.timedOut);
  const error = run.timedOut ? `timed out after ${q.runTimeoutS} s` : lastError || `exit status ${run.code}`;
  return { ...seen, runSeconds: run.seconds, status: ok ? 'ran' : 'run-failed', ...(ok ? {} : { error }) };
}

/** The wrapper top: the testbench, and the reset monitor when a reset and clock are known. */
function wrapperSource(q: RebuildRequest): string {
  const lines = [
    '`timescale 1ns/1ps',
    '// bench/ip: wrapper top around the written testbench (not part of the design).',
    `module ${WRAPPER_TOP};`,
    `  ${q.tbTop} tb();`,
  ];
  if (q.reset) {
    const dut = `tb.${q.dutInstance}`;
    const inactive = q.reset.activeLow ? "1'b1" : "1'b0";
    lines.push(
      '  longint unsigned edges = 0, out_of_reset = 0;',
      `  always @(posedge ${dut}.${q.reset.clock}) begin`,
      '    edges++;',
      `    if (${dut}.${q.reset.port} === ${inactive}) out_of_reset++;`,
      '  end',
      `  final $display("${MONITOR_TAG}: %0d of %0d clock edges", out_of_reset, edges);`,
    );
  }
  lines.push('endmodule', '');
  return lines.join('\n');
}

/** Verilator stops the run after this many errors; a run that reaches it has at least as many failures. */
const ERROR_LIMIT = 1_000_000;
const FAILURE = /%(?:Error|Fatal): ([^\s:]+):(\d+): Assertion failed in /;
const CASE_CHECK = /synthesis (?:full|parallel)_case, but/;
const MONITOR = new RegExp(`${MONITOR_TAG}: (\\d+) of (\\d+) clock edges`);

/** Reads a run's output line by line: Verilator's assertion failure messages (`[time] %Error:
 * file:line: Assertion failed in scope: ...`), the reset monitor's line, $finish, the last error. */
export function runReader() {
  const sites = new Set<string>();
  let failures = 0;
  let caseChecks = 0;
  let finished = false;
  let lastError = '';
  let monitor: { edges: number | null; outOfReset: number | null } = { edges: null, outOfReset: null };
  const line = (l: string): void => {
    if (/%Error|%Fatal/.test(l)) lastError = l.trim().slice(0, 300);
    if (l.includes('Verilog $finish')) finished = true;
    const m = FAILURE.exec(l);
    if (m) {
      failures++;
      if (CASE_CHECK.test(l)) caseChecks++;
      sites.add(`${m[1]}:${m[2]}`);
    }
    const r = MONITOR.exec(l);
    if (r) monitor = { outOfReset: Number(r[1]), edges: Number(r[2]) };
  };
  const result = () => ({
    failures,
    limitReached: failures >= ERROR_LIMIT,
    sites: [...sites].sort(),
    caseChecks,
    finished,
    lastError,
    ...monitor,
  });
  return { line, result };
}

/** A build's first error (the cause); else the text's last line. */
function firstError(text: string): string {
  const line = text.split('\n').find((l) => /%Error|error:/.test(l));
  return (line ?? text.trim().split('\n').pop() ?? '').trim().slice(0, 300);
}
