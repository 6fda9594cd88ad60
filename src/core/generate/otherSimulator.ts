// The design's assertions as a simulator other than Verilator compiles them. Macro libraries
// (OpenTitan's prim_assert.sv, `ifdef INC_ASSERT` blocks) expand their assertions to nothing when
// VERILATOR is defined, so the generator's own runs never see them fire. When the front end found
// such assertions (design/facts.ts hiddenFromVerilator), each round's testbench is also run in a
// build without the VERILATOR define, and the failures only that build reports join the round's:
// the round is illegal, and the learner (legality.ts) acts on them as on any other failure. The
// build runs in the same jail as every other; its coverage is not used.
import type { DesignSpec } from '../design/types.js';
import type { Simulator, SimRequest } from '../sim/simulator.js';
import type { DutAssertion, SimResult } from '../sim/result.js';

export interface OtherSimulatorCheck {
  /** Failures the build without VERILATOR reported at sites the round's own run did not. */
  failures: DutAssertion[];
  /** The build could not be made (the design does not compile without VERILATOR in this
   * Verilator): the hidden assertions stay unchecked, and later rounds need not try again. */
  unavailable?: string;
}

/** The design read as another simulator would: the VERILATOR define removed. */
export function withoutVerilatorDefine(design: DesignSpec): DesignSpec {
  return { ...design, verilatorArgs: [...(design.verilatorArgs ?? []), '-UVERILATOR'] };
}

const site = (a: { file: string; line: number }): string => `${a.file}:${a.line}`;

/** Runs `req`'s testbench in a build without VERILATOR; the failures `own` did not have. */
export async function checkWithoutVerilator(sim: Simulator, req: SimRequest, own: SimResult): Promise<OtherSimulatorCheck> {
  const other = await sim.simulate({ ...req, design: withoutVerilatorDefine(req.design), formal: undefined, wantPoints: false });
  const seen = new Set((own.dutAssertions ?? []).map(site));
  if (other.status !== 'success' && !other.dutAssertions?.length) {
    const flooded = floodedFailures(other);
    if (flooded.length) return { failures: flooded.filter((a) => !seen.has(site(a))) };
    const first = other.diagnostics?.find((d) => d.severity === 'error');
    return {
      failures: [],
      unavailable: `${other.status}${first ? `: ${first.file ? `${first.file}:${first.line}: ` : ''}${first.message.slice(0, 160)}` : ''}`,
    };
  }
  return { failures: (other.dutAssertions ?? []).filter((a) => !seen.has(site(a))) };
}

/**
 * The design's assertion failures of a run that printed so many of them that it was stopped at
 * the output limit before the harness could report: the log's lines, which the backend no longer
 * attributes to the design (a testbench could print such a line). The testbench here is the
 * generator's own and prints none, so they are the design's; their count is a lower bound.
 */
function floodedFailures(r: SimResult): DutAssertion[] {
  const sites = new Map<string, DutAssertion>();
  for (const d of r.diagnostics ?? []) {
    if (d.stage !== 'run' || d.severity !== 'error') continue;
    const m = /^printed by the testbench, not reported by the simulator: "(.+?):(\d+): (Assertion failed[^"]*)/.exec(d.message);
    if (!m) continue;
    const key = `${m[1]}:${m[2]}`;
    const had = sites.get(key);
    if (had) had.count += d.count ?? 1;
    else
      sites.set(key, {
        file: m[1],
        line: Number(m[2]),
        kind: 'assertion',
        message: m[3].slice(0, 200),
        count: d.count ?? 1,
        firstTime: 'an unknown time',
        lastTime: 'an unknown time',
      });
  }
  return [...sites.values()];
}

/** `r` with `extra` failures among its DUT assertion failures (a new record; `r` is not changed). */
export function withFailures(r: SimResult, extra: DutAssertion[]): SimResult {
  return extra.length ? { ...r, dutAssertions: [...(r.dutAssertions ?? []), ...extra] } : r;
}
