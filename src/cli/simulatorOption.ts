// `--simulator <name>`, the same for every command that simulates (sim, serve, generate, refine,
// eval): a registered backend name, default verilator; an unknown name is a usage error that lists
// the names there are.
import { simulatorNames } from '../core/run/simulators.js';

export const SIMULATOR_OPTION = { simulator: { type: 'string' } } as const;

export const SIMULATOR_HELP = `  --simulator <name>    ${simulatorNames().join(' | ')} (default verilator)\n`;

/** The simulator name to use; throws a usage message naming the choices for an unknown one. */
export function simulatorOption(name: string | undefined): string {
  const n = name ?? 'verilator';
  if (!simulatorNames().includes(n)) throw new Error(`unknown simulator '${n}' (--simulator); available: ${simulatorNames().join(', ')}`);
  return n;
}
