// Where `generate`, `refine` and `sim` write, decided and checked before any work starts: the run
// folder (`--out-dir`, default `chorus-out/` beside the design, or CHORUS_OUT_DIR), an explicit
// `--out` file, and the Verilator build's memory cap (`--memory-limit`).
import { statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { RUN_ROOT, defaultBuildMemoryLimitMb, outputProblem } from '../core/run/runFolder.js';
import { strings, numberOption } from './command.js';

export const RUN_OUTPUT_OPTIONS = strings('out-dir', 'memory-limit');

export const RUN_OUTPUT_HELP = `  --out-dir <dir>       the run folder's root: each run writes <dir>/<top>/<timestamp>/ (every round's
                        testbench and log, the best testbench, coverage.dat/.info/.html, summary.json,
                        junit.xml) and points <dir>/<top>/latest at it (default: ${RUN_ROOT}/ beside
                        the design, or $CHORUS_OUT_DIR)
  --memory-limit <MB>   memory cap of the Verilator build (default: 3/4 of the memory available now)
`;

/** The folder the design was named by: a named folder itself, else the named file's folder. */
function besideDesign(positionals: string[]): string {
  const first = positionals[0];
  if (!first) return process.cwd();
  const p = resolve(first);
  try {
    if (statSync(p).isDirectory()) return p;
  } catch {
    // a missing path is the design loader's error to report
  }
  return dirname(p);
}

export interface RunOutputPlan {
  /** The root the run folder goes under (`<root>/<top>/<timestamp>`). */
  root: string;
  /** The Verilator build's memory cap, MiB. */
  memoryLimitMb: number;
}

/**
 * The run's output locations, checked now (a read-only folder, a path under a file, an existing
 * --out without --force): throws an Error with the message to print (exit 2).
 */
export function planRunOutput(
  o: { 'out-dir'?: string; 'memory-limit'?: string; out?: string; force?: boolean },
  positionals: string[],
  extraFiles: string[] = [],
): RunOutputPlan {
  const memoryLimitMb = Math.floor(numberOption('memory-limit', o['memory-limit'], defaultBuildMemoryLimitMb(), 64));
  const root = o['out-dir']
    ? resolve(o['out-dir'])
    : process.env.CHORUS_OUT_DIR
      ? resolve(process.env.CHORUS_OUT_DIR)
      : join(besideDesign(positionals), RUN_ROOT);
  const dirProblem = outputProblem(root, 'dir');
  if (dirProblem) throw new Error(`${dirProblem}${o['out-dir'] ? '' : ' (choose the run folder with --out-dir)'}`);
  // --out never replaces a file without --force; the other files (sim's --lcov) always may.
  for (const [f, force] of [...(o.out ? [[o.out, Boolean(o.force)] as const] : []), ...extraFiles.map((x) => [x, true] as const)]) {
    const p = outputProblem(f, 'file', force);
    if (p) throw new Error(p);
  }
  return { root, memoryLimitMb };
}
