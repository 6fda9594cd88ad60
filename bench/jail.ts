// bench/jail: what the jail costs per candidate. Judges the same distinct testbenches of the
// counter example with the jail (bubblewrap around the preprocessor, the front end, the C++
// compile and link, and the run) and without it (CHORUS_NO_JAIL=1), in pairs whose order
// alternates, so load drift hits both sides alike. Prints per-candidate medians, the median of the
// paired differences, and stage medians. The flat build is forced (the DUT-library choice depends
// on measured compile time and would differ between the sides).
//
// Usage: node scripts/build.mjs && node dist/bench/jail.js [--pairs N]   (default 15, plus one warm-up pair)
import { join, resolve } from 'node:path';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { loadDesign } from '../src/core/run/design.js';
import { VerilatorSimulator } from '../src/core/run/simulators.js';
import type { SimResult } from '../src/core/run/types.js';

const args = process.argv.slice(2);
const at = args.indexOf('--pairs');
const pairs = at >= 0 ? Number(args[at + 1]) : 15;
if (!Number.isInteger(pairs) || pairs < 1) {
  console.error('usage: bench/jail [--pairs N]');
  process.exit(2);
}

const median = (a: number[]): number => {
  const s = [...a].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const ms = (s: number): string => `${(s * 1000).toFixed(0)} ms`;

async function main(): Promise<void> {
  const root = resolve(process.cwd());
  const dut = join(root, 'examples', 'counter', 'counter.sv');
  const tb = readFileSync(join(root, 'examples', 'counter', 'tb_counter.sv'), 'utf8');
  const { design, info } = await loadDesign({ files: [dut] });
  const sim = new VerilatorSimulator();
  const sides = ['jail', 'no jail'] as const;
  const totals: Record<(typeof sides)[number], number[]> = { jail: [], 'no jail': [] };
  const stages: Record<(typeof sides)[number], Record<'lint' | 'build' | 'run', number[]>> = {
    jail: { lint: [], build: [], run: [] },
    'no jail': { lint: [], build: [], run: [] },
  };
  const load0 = loadavg()[0];
  for (let i = 0; i <= pairs; i++) {
    for (const side of i % 2 ? [...sides] : [...sides].reverse()) {
      if (side === 'no jail') process.env.CHORUS_NO_JAIL = '1';
      else delete process.env.CHORUS_NO_JAIL;
      const content = tb.replace(
        /module tb_counter;/,
        `// candidate ${i} ${side}\nmodule tb_counter;\n  localparam int CHORUS_BENCH_N = ${i};`,
      );
      const r: SimResult = await sim.simulate({ design, top: info.top, testbench: { name: 'tb_counter.sv', content }, build: 'flat' });
      if (r.status !== 'success') throw new Error(`${side} candidate ${i}: ${r.status}: ${r.err_msg}`);
      if (r.protection.jail !== (side === 'jail' ? 'bubblewrap' : 'none'))
        throw new Error(`${side}: the record says jail ${r.protection.jail} (${r.protection.jailReason ?? ''})`);
      if (i === 0) continue; // warm-up pair
      totals[side].push(r.timings.total);
      for (const k of ['lint', 'build', 'run'] as const) stages[side][k].push(r.timings[k] ?? 0);
    }
  }
  const diffs = totals.jail.map((v, i) => v - totals['no jail'][i]);
  console.log(`bench/jail: counter, ${pairs} pairs (flat build), load ${load0.toFixed(2)} -> ${loadavg()[0].toFixed(2)}`);
  console.log('| side    | median per candidate | lint   | build  | run    |');
  console.log('|---------|---------------------:|-------:|-------:|-------:|');
  for (const s of sides)
    console.log(
      `| ${s.padEnd(7)} | ${ms(median(totals[s])).padStart(20)} | ${ms(median(stages[s].lint)).padStart(6)} | ${ms(median(stages[s].build)).padStart(6)} | ${ms(median(stages[s].run)).padStart(6)} |`,
    );
  const d = median(diffs);
  console.log(
    `jail overhead: median of paired differences ${ms(d)} (${((d / median(totals['no jail'])) * 100).toFixed(1)}% of a candidate)`,
  );
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
