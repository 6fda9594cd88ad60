// Simulator backends by name. Callers ask for a name (`verilator` by default); a new backend
// registers a factory here and nothing else changes.
import type { Simulator } from './simulator.js';
import { VerilatorSimulator } from './verilator/backend.js';
import { XceliumSimulator } from './xcelium/backend.js';
import { safeResult } from './result.js';

const factories = new Map<string, () => Simulator>([
  ['verilator', () => new VerilatorSimulator()],
  ['xcelium', () => new XceliumSimulator()],
]);
const instances = new Map<string, Simulator>();

export function registerSimulator(name: string, factory: () => Simulator): void {
  factories.set(name, () => textSafe(factory()));
  instances.delete(name);
}

/** A backend registered from outside: its results pass the rule the built-in backends apply
 * themselves (util/untrusted.ts), so no caller shows a control sequence a simulation printed. */
function textSafe(sim: Simulator): Simulator {
  const simulate = sim.simulate.bind(sim);
  sim.simulate = async (req) => safeResult(await simulate(req));
  return sim;
}

export function simulatorNames(): string[] {
  return [...factories.keys()];
}

export function getSimulator(name = 'verilator'): Simulator {
  const existing = instances.get(name);
  if (existing) return existing;
  const f = factories.get(name);
  if (!f) throw new Error(`unknown simulator '${name}'; available: ${simulatorNames().join(', ')}`);
  const sim = f();
  instances.set(name, sim);
  return sim;
}
