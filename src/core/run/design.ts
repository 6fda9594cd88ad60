// Loading a design: from what a user types (files, folders, manifests, -f lists, -I, -D, -G, --top)
// to a checked DesignSpec and its introspection. One entry point for the CLI, the editor's worker,
// chorus eval and the benchmarks. Preparing the sources is the design layer's (design/prepare.ts);
// elaborating them is the simulator's front end (sim/verilator/introspect.ts); a name nobody
// provides comes back restated with what was searched (explainMissing).
import type { DesignInfo, DesignSpec } from '../design/types.js';
import { DesignError } from '../design/errors.js';
import { explainMissing, prepareDesign, type DesignOptions, type PreparedDesign } from '../design/prepare.js';
import { introspect } from '../sim/verilator/introspect.js';
import { designFacts } from '../sim/slang/frontEnd.js';
import { hiddenFromVerilator, type DesignFacts } from '../design/facts.js';

export type { DesignOptions, PreparedDesign } from '../design/prepare.js';
export type { DesignInfo, DesignSpec } from '../design/types.js';
export { designFacts } from '../sim/slang/frontEnd.js';
export type { DesignFacts } from '../design/facts.js';

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
  const warnings = [...p.warnings, ...info.warnings];
  const notes = [...p.notes, ...(info.notes ?? [])];
  const facts = await readFacts(info.design, info.top, signal);
  if ('warning' in facts) warnings.push(facts.warning);
  else {
    info.facts = facts.facts;
    warnings.push(...facts.facts.disagreements);
    const hidden = hiddenFromVerilator(facts.facts);
    if (hidden.length)
      notes.push(
        `${hidden.length} of the design's assertions are compiled only without the VERILATOR define (${hidden
          .slice(0, 3)
          .map((a) => `${a.file.slice(a.file.lastIndexOf('/') + 1)}:${a.line}`)
          .join(
            ', ',
          )}${hidden.length > 3 ? ', ...' : ''}): a run here does not check them; the built-in generator runs each round again in a build without VERILATOR, as another simulator compiles the design, and counts what fires there`,
      );
  }
  return { design: info.design, info, warnings, notes, discovered: p.discovered };
}

/**
 * The design's meaning from the slang front end (sim/slang/frontEnd.ts). A missing install is an
 * error that says how to install it; a design slang cannot elaborate although Verilator did is a
 * disagreement, said as a warning, and the run goes on with Verilator's netlist alone.
 */
async function readFacts(spec: DesignSpec, top: string, signal?: AbortSignal): Promise<{ facts: DesignFacts } | { warning: string }> {
  try {
    return { facts: await designFacts(spec, { top, signal }) };
  } catch (e) {
    if (e instanceof DesignError && e.message !== 'cancelled')
      return { warning: `${e.message} (Verilator read it: clocks, resets and assertions come from its netlist and the names)` };
    throw e;
  }
}
