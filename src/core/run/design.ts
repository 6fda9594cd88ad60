// Loading a design: from what a user types (files, folders, manifests, -f lists, -I, -D, -G, --top)
// to a checked DesignSpec and its introspection. One entry point for the CLI, the editor's worker,
// chorus eval and the benchmarks. Preparing the sources is the design layer's (design/prepare.ts);
// elaborating them is the simulator's front end (sim/verilator/introspect.ts); a name nobody
// provides comes back restated with what was searched (explainMissing).
import type { DesignInfo, DesignSpec } from '../design/types.js';
import { DesignError } from '../design/errors.js';
import { explainMissing, prepareDesign, type DesignOptions, type PreparedDesign } from '../design/prepare.js';
import { introspect } from '../sim/verilator/introspect.js';

export type { DesignOptions, PreparedDesign } from '../design/prepare.js';
export type { DesignInfo, DesignSpec } from '../design/types.js';

export interface LoadedDesign {
  design: DesignSpec;
  info: DesignInfo;
  warnings: string[];
  notes: string[];
  discovered: PreparedDesign['discovered'];
}

export async function loadDesign(o: DesignOptions, signal?: AbortSignal): Promise<LoadedDesign> {
  const p = await prepareDesign(o, signal);
  let info;
  try {
    info = await introspect(p.design, { signal });
  } catch (e) {
    throw e instanceof DesignError ? explainMissing(e, p, o.cwd ?? process.cwd()) : e;
  }
  return { design: info.design, info, warnings: [...p.warnings, ...info.warnings], notes: p.notes, discovered: p.discovered };
}
