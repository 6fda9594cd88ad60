// The simulator interface. Callers (CLI, agent, evaluator, reward service, editor) depend on this
// and on the result record only; a backend plugs in through the registry without touching them.
import { DEFAULT_SCORE } from '../vocabulary/defaults.js';
import type { SimLimits } from '../vocabulary/types.js';
import type { DesignSpec, TestbenchSource } from '../design/types.js';
import type { SimResult } from './result.js';
import type { ScoreMode } from '../vocabulary/types.js';
import type { Waiver } from '../coverage/waivers.js';
import type { FormalBudget } from '../vocabulary/types.js';

export interface SimRequest {
  design: DesignSpec;
  testbench: TestbenchSource;
  /** DUT top module (required: resolve it with introspection first). */
  top: string;
  limits?: Partial<SimLimits>;
  /** Waivers applied to the coverage figure. */
  waivers?: Waiver[];
  /** The formal engine's time limits for this design's uncovered points (formal/reach.ts;
   * absent: not run). Its proofs and witnesses are reported beside the figure, never in it. */
  formal?: FormalBudget;
  seed?: number;
  /** `auto` (default) reuses the compiled DUT across candidates when it is expensive to compile
   * and the testbench allows it; `flat` always verilates DUT and testbench together;
   * `dut-library` uses the library whenever the testbench allows it (tests, benchmarks). */
  build?: 'auto' | 'flat' | 'dut-library';
  /** Native code in the DESIGN ($c, `systemc_*, DPI, $system): 'allow' (default: the user's own
   * design, said in a warning) or 'refuse' (a design from a request: the reward service refuses it
   * unless started with --allow-native-design). A testbench's native code is refused always. */
  designNativeCode?: 'allow' | 'refuse';
  /** Keep the scratch directory and report its path (for debugging). */
  keepRunDir?: boolean;
  /** Return the DUT's coverage points in `points`, exactly the set the figure was scored on, so
   * lcov export and the editor's decorations can never disagree with the figure. */
  wantPoints?: boolean;
  /** How the run is scored (result.ts ScoreMode). `paper` (the default): CHORUS eq. 1, exactly as
   * docs/protocol.md describes; `legal`: a run whose stimulus broke the DUT's own assertions is a
   * failed run (`xrun_failed` at stage `run`, reward 0). Either way the record lists the broken
   * assertions in `dutAssertions`. */
  score?: ScoreMode;
  signal?: AbortSignal;
  /** Called with the coverage database the host received from the harness report (the host's
   * own copy: never a file the testbench could write), after the run. Backends without one never
   * call it. */
  onCoverageData?: (text: string) => void;
  /** Called as each stage of the candidate starts (progress within a round). */
  onStage?: (stage: SimStageName) => void;
}

/** The stages a backend may announce through SimRequest.onStage. */
export type SimStageName = 'check' | 'build' | 'run' | 'coverage';

/** `sim` with `defaults` under every request (what a request says itself wins), groups alike. */
function withDefaults(sim: Simulator, defaults: Partial<SimRequest>): Simulator {
  return {
    name: sim.name,
    info: () => sim.info(),
    simulate: (req) => sim.simulate({ ...defaults, ...req }),
    ...(sim.simulateGroup
      ? {
          simulateGroup: (reqs, opts) =>
            sim.simulateGroup!(
              reqs.map((req) => ({ ...defaults, ...req })),
              opts,
            ),
        }
      : {}),
  };
}

/**
 * `sim` with every request scored in `score` mode (a request that names its own mode keeps it):
 * how the flows hand the mode to code that simulates on its own (the built-in generator).
 * `paper` or none: `sim` itself, unchanged.
 */
export function withScore(sim: Simulator, score: ScoreMode | undefined): Simulator {
  return score === undefined || score === DEFAULT_SCORE ? sim : withDefaults(sim, { score });
}

/** `sim` with the formal engine's limits on every request that names none (absent: `sim`). */
export function withFormal(sim: Simulator, formal: FormalBudget | undefined): Simulator {
  return formal ? withDefaults(sim, { formal }) : sim;
}

/**
 * The results of several testbenches of one design, in order, each exactly what `simulate` gives
 * it alone: through the backend's group scoring where it has one (shared work), else one by one.
 */
export async function simulateAll(sim: Simulator, reqs: SimRequest[]): Promise<SimResult[]> {
  if (sim.simulateGroup && reqs.length > 1) return sim.simulateGroup(reqs);
  const out: SimResult[] = [];
  for (const req of reqs) out.push(await sim.simulate(req));
  return out;
}

export interface SimulatorInfo {
  name: string;
  version: string;
}

export interface Simulator {
  readonly name: string;
  /** Resolves when the tools are present; rejects with an actionable message otherwise. */
  info(): Promise<SimulatorInfo>;
  /** Compile, run and measure one candidate. Never throws for testbench faults: they are results. */
  simulate(req: SimRequest): Promise<SimResult>;
  /** Several candidates of ONE design (same files, top, parameters), results in order, each
   * identical to `simulate` of it alone; shares work between them (simulateAll picks it). */
  simulateGroup?(reqs: SimRequest[], opts?: { parallel?: number }): Promise<SimResult[]>;
}
