// bench/sim --group N: what RL pays per candidate when it scores a group of N new testbenches of
// one design at once (VerilatorSimulator.simulateGroup: one slang process, shared C++ units, the
// machine's cores as slots), against scoring the same kind of candidates one by one (the engine
// column of the main table, same run) and against the naive cold build. Each round is N textually
// distinct candidates; the figure is the round's wall time / N, median over the rounds.
import type { DesignSpec, SimResult } from '../src/core/run/types.js';
import type { VerilatorSimulator } from '../src/core/run/simulators.js';
import type { BenchDesign } from './simDesigns.js';

export interface GroupSample {
  design: string;
  note?: string;
  size: number;
  /** Wall time of each round / size, s. */
  perCandidate: number[];
  /** How many members of the last round built in a shared unit. */
  shared: number;
  coverage: number | null;
}

/** `rounds` groups of `size` new candidates; `next` makes the next distinct testbench text. */
export async function measureGroup(
  sim: VerilatorSimulator,
  d: BenchDesign,
  design: DesignSpec,
  tbName: string,
  size: number,
  rounds: number,
  next: () => string,
  check: (id: string, r: SimResult) => void,
): Promise<GroupSample> {
  const perCandidate: number[] = [];
  let last: SimResult[] = [];
  for (let k = 0; k < rounds; k++) {
    const reqs = Array.from({ length: size }, () => ({ design, top: d.top, testbench: { name: tbName, content: next() } }));
    const t0 = performance.now();
    last = await sim.simulateGroup(reqs);
    perCandidate.push((performance.now() - t0) / 1000 / size);
    last.forEach((r, i) => check(`group ${k} member ${i}`, r));
    process.stdout.write(` group/${size} ${perCandidate[k].toFixed(3)}`);
  }
  return {
    design: d.key,
    note: d.note,
    size,
    perCandidate,
    shared: last.filter((r) => (r.build?.sharedUnit ?? 0) >= 2).length,
    coverage: last[0]?.coverage?.waived.overall ?? null,
  };
}

/** The group table's rows: per design, s per candidate each way, the speedups and the goal. */
export function groupRows(
  samples: GroupSample[],
  oneByOne: Map<string, number>,
  naive: Map<string, number>,
  median: (xs: number[]) => number,
  goalS: number,
): string[][] {
  const f = (x: number | undefined): string => (x !== undefined && Number.isFinite(x) ? x.toFixed(3) : 'n/a');
  return [
    ['design', 'naive s/cand', 'one by one s/cand', `group of N s/cand`, 'vs one by one x', 'vs naive x', 'shared', `<= ${goalS} s`],
    ...samples.map((g) => {
      const m = median(g.perCandidate);
      const one = oneByOne.get(g.design);
      const nv = naive.get(g.design);
      return [
        g.note ? `${g.design} (${g.note})` : g.design,
        f(nv),
        f(one),
        `${f(m)} (N=${g.size})`,
        one ? (one / m).toFixed(1) : 'n/a',
        nv ? (nv / m).toFixed(1) : 'n/a',
        `${g.shared}/${g.size}`,
        m <= goalS ? 'PASS' : 'MISS',
      ];
    }),
  ];
}
