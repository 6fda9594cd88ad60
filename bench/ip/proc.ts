// bench/ip's children (the CLI's generate, plain Verilator builds and runs) through the engine's one
// bounded runner (src/core/util/proc.ts via core/run: the whole process tree stopped at the limit),
// in the small shape the bench reads. `onLine` sees every line the child printed, in order.
import { runBounded as runTool } from '../../src/core/run/toolchain.js';

export interface ProcResult {
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  seconds: number;
}

export interface ProcOptions {
  cwd: string;
  timeoutS: number;
  onLine?: (line: string) => void;
}

/** The bench keeps whole logs (a plain run may print a million assertion messages). */
const KEEP_BYTES = 256 * 1024 * 1024;

export async function runBounded(cmd: string, args: string[], opts: ProcOptions): Promise<ProcResult> {
  const r = await runTool(cmd, args, { cwd: opts.cwd, timeoutS: opts.timeoutS, outputLimitBytes: KEEP_BYTES });
  if (opts.onLine) for (const line of r.all.split('\n')) opts.onLine(line);
  return {
    code: r.exitCode,
    stdout: r.stdout,
    stderr: r.stderr + (r.spawnError ? `\n${r.spawnError}` : ''),
    timedOut: r.timedOut,
    seconds: r.durationS,
  };
}
