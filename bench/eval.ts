// Throughput of `chorus eval`: the built-in generator on the first 20 VerilogEval v2 designs, once
// with 1 worker and once with the default (one per core), in one run; prints wall time,
// candidates per minute and the speedup, and checks that both runs give identical results.
//   npm run bench:eval [-- --limit N --samples N --rounds N --workers N --out dir]
import { availableParallelism } from 'node:os';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadSuite } from '../src/core/run/evaluation.js';
import { runEvaluation, type EvalReport } from '../src/core/run/evaluation.js';
import { VerilatorSimulator } from '../src/core/run/simulators.js';

const { values: o } = parseArgs({
  options: {
    suite: { type: 'string', default: resolve('bench', 'data', 'verilog-eval-v2') },
    limit: { type: 'string', default: '20' },
    samples: { type: 'string', default: '1' },
    rounds: { type: 'string', default: '3' },
    workers: { type: 'string', default: String(availableParallelism()) },
    out: { type: 'string', default: 'out/bench-eval' },
  },
});

const essence = (r: EvalReport): string =>
  JSON.stringify(
    r.tasks.map((t) => [
      t.id,
      t.error ?? null,
      t.samples.map((s) => [s.seed, s.coverage, s.passed, s.rounds.map((x) => [x.status, x.coverage])]),
    ]),
  );

async function main(): Promise<void> {
  const out = resolve(o.out!);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const suite = loadSuite(o.suite!, { workDir: join(out, 'suite') });
  const tasks = suite.tasks.slice(0, Number(o.limit));
  const sim = new VerilatorSimulator();
  await sim.info();
  const configs = [...new Set([1, Number(o.workers)])];
  const runs: Array<{ workers: number; r: EvalReport }> = [];
  // An untimed pass first: the per-machine runtime and per-design caches (Verilator runtime, DUT
  // libraries) are then warm for every timed run, not only for the ones after the first.
  process.stderr.write(`warm-up pass (untimed)...\n`);
  await runEvaluation({
    suite,
    tasks,
    row: { kind: 'builtin' },
    samples: 1,
    rounds: 0,
    workers: Number(o.workers),
    outDir: join(out, 'warmup'),
    simulator: sim,
  });
  for (const workers of configs) {
    process.stderr.write(
      `running ${tasks.length} designs x ${o.samples} sample(s), ${o.rounds} refinement rounds, ${workers} worker(s)...\n`,
    );
    const r = await runEvaluation({
      suite,
      tasks,
      row: { kind: 'builtin' },
      samples: Number(o.samples),
      rounds: Number(o.rounds),
      workers,
      outDir: join(out, `w${workers}`),
      simulator: sim,
    });
    runs.push({ workers, r });
  }
  const base = runs[0].r.aggregate.wall_s;
  const lines = [
    `| workers | wall (s) | candidates | candidates/min | speedup | Pass@1 | Cov@1 |`,
    `|---:|---:|---:|---:|---:|---:|---:|`,
    ...runs.map(({ workers, r }) => {
      const a = r.aggregate;
      return `| ${workers} | ${a.wall_s.toFixed(1)} | ${a.candidates} | ${a.candidates_per_min.toFixed(1)} | ${(base / a.wall_s).toFixed(2)}x | ${(100 * a.pass_at_1).toFixed(1)}% | ${(100 * a.cov_at_1).toFixed(1)}% |`;
    }),
  ];
  const same = runs.every((x) => essence(x.r) === essence(runs[0].r));
  const note = `${tasks.length} VerilogEval v2 designs, built-in generator, ${o.samples} sample(s), ${o.rounds} refinement rounds, ${availableParallelism()} cores; results identical across worker counts: ${same ? 'yes' : 'NO'}`;
  console.log(lines.join('\n'));
  console.log(`\n${note}`);
  writeFileSync(join(out, 'table.md'), `${note}\n\n${lines.join('\n')}\n`);
  console.log(`(written to ${out}/table.md)`);
  if (!same) process.exitCode = 1;
}

void main();
