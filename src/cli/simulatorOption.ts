// `--simulator <name>` (the run setting `simulator`, src/core/vocabulary/settings.ts), checked
// against the simulators registered here: an unknown name is a usage error that lists the names
// there are, for every command that simulates (sim, serve, generate, refine, eval).
import { simulatorNames } from '../core/run/simulators.js';

/** The simulator name to use; throws a usage message naming the choices for an unknown one. */
export function simulatorOption(name: string | undefined): string {
  const n = name ?? 'verilator';
  if (!simulatorNames().includes(n)) throw new Error(`unknown simulator '${n}' (--simulator); available: ${simulatorNames().join(', ')}`);
  return n;
}
