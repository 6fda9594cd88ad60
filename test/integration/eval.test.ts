// `chorus eval` end to end on real Verilator: the built-in generator and reference rows on three
// VerilogEval tasks, report schema and consistency, --resume, workers, per-task errors, and a
// model row against the scripted OpenAI-compatible server.
import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { loadSuite, selectTasks } from '../../src/core/eval/suites/index.js';
import { runEvaluation, type EvalReport } from '../../src/core/run/evaluation.js';
import { computeMetrics } from '../../src/core/eval/metrics.js';
import { SETTINGS, type SettingDef } from '../../src/core/vocabulary/settings.js';
import { runEval } from '../../src/cli/eval.js';
import type { Simulator } from '../../src/core/sim/simulator.js';
import { fixtures, scratchDir, benchData, sim } from '../helpers.js';
import { fencedReply, startScriptedServer } from '../support/scriptedServer.js';

const ve = join(benchData, 'verilog-eval-v2');
const TASKS = ['Prob001_zero', 'Prob010_mt2015_q4a', 'Prob030_popcount255'];

function counting(inner: Simulator): Simulator & { calls: number } {
  const s = {
    name: inner.name,
    calls: 0,
    info: () => inner.info(),
    simulate: (req: Parameters<Simulator['simulate']>[0]) => (s.calls++, inner.simulate(req)),
  };
  return s;
}

/** What must not depend on workers, timing or the cache. */
const essence = (r: EvalReport) => ({
  aggregate: { ...r.aggregate, wall_s: 0, sim_s: 0, model_s: 0, candidates: 0, candidates_per_min: 0, cached_samples: 0 },
  per_round: r.per_round,
  tasks: r.tasks.map((t) => ({
    ...t,
    samples: t.samples.map((s) => ({ ...s, wall_s: 0, rounds: s.rounds.map((x) => ({ ...x, sim_s: 0 })) })),
  })),
});

function checkSchema(r: EvalReport): void {
  expect(r.schema_version).toBe(2);
  expect(Object.keys(r.aggregate)).toEqual(
    expect.arrayContaining(['pass_at_1', 'pass_at_5', 'cov_at_1', 'cov_at_5', 'sim_pass', 'tasks', 'errors', 'tokens', 'wall_s']),
  );
  for (const k of ['pass_at_1', 'pass_at_5', 'cov_at_1', 'cov_at_5', 'sim_pass'] as const) {
    expect(r.aggregate[k]).toBeGreaterThanOrEqual(0);
    expect(r.aggregate[k]).toBeLessThanOrEqual(1);
  }
  expect(r.per_round.length).toBe(r.config.settings.rounds! + 1);
  // The config names every run setting eval takes, as the settings table defines them.
  expect(Object.keys(r.config.settings).sort()).toEqual(
    (SETTINGS as readonly SettingDef[])
      .filter((d) => d.eval)
      .map((d) => d.name)
      .sort(),
  );
  // The aggregate is the §5 metrics of the per-task samples, and the last per-round point equals it.
  const scored = r.tasks.filter((t) => !t.error);
  const m = computeMetrics(scored.map((t) => t.samples.map((s) => ({ ok: s.sim_ok, coverage: s.coverage, passed: s.passed }))));
  expect(r.aggregate.pass_at_1).toBeCloseTo(m.pass_at_1, 12);
  expect(r.aggregate.cov_at_5).toBeCloseTo(m.cov_at_5, 12);
  expect(r.per_round.at(-1)!.pass_at_1).toBeCloseTo(r.aggregate.pass_at_1, 12);
  expect(r.per_round.at(-1)!.cov_at_1).toBeCloseTo(r.aggregate.cov_at_1, 12);
  expect(r.aggregate.tasks + r.aggregate.errors).toBe(r.tasks.length);
  for (const t of scored) {
    expect(t.samples.length).toBe(r.config.settings.samples);
    for (const s of t.samples) {
      expect(s.coverage).toBeGreaterThanOrEqual(0);
      expect(s.coverage).toBeLessThanOrEqual(1);
      expect(s.passed).toBe(s.sim_ok && s.coverage >= t.coverage_target / 100 - 1e-9);
      expect(s.rounds.length).toBeGreaterThanOrEqual(1);
      expect(s.rounds.length).toBeLessThanOrEqual(r.config.settings.rounds! + 1);
      expect(s.coverage).toBe(Math.max(0, ...s.rounds.map((x) => x.coverage ?? 0)));
    }
  }
  for (const p of r.per_round.slice(1).map((p, i) => [r.per_round[i], p]))
    expect(p[1].cov_at_1).toBeGreaterThanOrEqual(p[0].cov_at_1 - 1e-12);
}

describe('chorus eval', () => {
  it('built-in generator: workers 1 and 2 agree; --resume redoes only missing samples', async () => {
    const suite = loadSuite(ve, { workDir: scratchDir() });
    const tasks = selectTasks(suite.tasks, TASKS);
    const run = async (outDir: string, workers: number, resume = false) => {
      const s = counting(sim);
      const r = await runEvaluation({
        suite,
        tasks,
        row: { kind: 'builtin' },
        samples: 2,
        rounds: 1,
        workers,
        outDir,
        resume,
        simulator: s,
      });
      return { r, calls: s.calls };
    };
    const outA = scratchDir();
    const a = await run(outA, 1);
    checkSchema(a.r);
    expect(a.r.tasks.map((t) => t.id)).toEqual(TASKS);
    expect(a.calls).toBe(a.r.aggregate.candidates);
    expect(a.r.aggregate.candidates).toBe(a.r.tasks.reduce((n, t) => n + t.samples.reduce((k, s) => k + s.rounds.length, 0), 0));
    // Different seeds per sample; testbenches written.
    expect(new Set(a.r.tasks[1].samples.map((s) => s.seed)).size).toBe(2);
    expect(readdirSync(join(outA, 'testbenches')).length).toBe(6);

    const b = await run(scratchDir(), 2);
    expect(essence(b.r)).toEqual(essence(a.r));
    expect(b.r.config.workers).toBe(2);

    // Resume over a finished run: no simulation at all, same results.
    const c = await run(outA, 2, true);
    expect(c.calls).toBe(0);
    expect(c.r.aggregate.cached_samples).toBe(6);
    expect(essence(c.r)).toEqual(essence(a.r));
    // An interrupted run (one sample's cache entry missing): only that sample is redone.
    const dir = join(outA, 'cache', 'Prob030_popcount255');
    const s1 = readdirSync(dir).find((f) => f.startsWith('s1-'))!;
    rmSync(join(dir, s1));
    const d = await run(outA, 1, true);
    expect(d.calls).toBe(a.r.tasks[2].samples[1].rounds.length);
    expect(d.r.aggregate.cached_samples).toBe(5);
    expect(essence(d.r)).toEqual(essence(a.r));
  });

  it('--reference through the CLI: one sample per task, reports written and self-contained', async () => {
    const out = scratchDir();
    const code = await runEval(['--suite', ve, '--reference', '--tasks', TASKS.join(','), '--out', out, '--workers', '2']);
    expect(code).toBe(0);
    const r = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as EvalReport;
    checkSchema(r);
    expect(r.row.kind).toBe('reference');
    expect(r.config.settings).toMatchObject({ samples: 1, rounds: 0 });
    // VerilogEval's human testbenches reach 100% on these two (measured); Prob001 has no points.
    expect(r.tasks.map((t) => t.samples[0].passed)).toEqual([false, true, true]);
    expect(r.tasks[1].samples[0]).toMatchObject({ sim_ok: true, coverage: 1, status: 'success' });
    const md = readFileSync(join(out, 'report.md'), 'utf8');
    expect(md).toMatch(/\| Pass@1 \| Pass@5 \| Cov@1 \| Cov@5 \| sim pass \|/);
    expect(md).toMatch(/\| Prob010_mt2015_q4a \| 100% \| 1\/1 \| 100\.0% \|/);
    const html = readFileSync(join(out, 'report.html'), 'utf8');
    expect(html).toMatch(/<svg[^>]*aria-label="Pass rate per round"/);
    expect(html).toMatch(/<svg[^>]*aria-label="Coverage histogram"/);
    expect(html).not.toMatch(/<script|<link|\bsrc=|url\(|@import|https?:\/\//i);
  });

  it('per-task errors (malformed lines, a design that does not elaborate) never abort the run', async () => {
    const out = scratchDir();
    const code = await runEval([
      '--suite',
      join(fixtures, 'eval', 'llm4cov_small.jsonl'),
      '--generator',
      'builtin',
      '--samples',
      '1',
      '--rounds',
      '0',
      '--out',
      out,
      '--workers',
      '1',
    ]);
    expect(code).toBe(0);
    const r = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as EvalReport;
    checkSchema(r);
    expect(r.aggregate).toMatchObject({ tasks: 1, errors: 5 });
    const by = Object.fromEntries(r.tasks.map((t) => [t.id, t]));
    expect(by.and2_ok.error).toBeUndefined();
    expect(by.and2_ok.samples[0]).toMatchObject({ passed: true, coverage: 1 });
    expect(by.broken_design.error).toMatch(/design error: .*does not compile/);
    expect(by['line-3'].error).toMatch(/not valid JSON/);
    expect(readFileSync(join(out, 'report.md'), 'utf8')).toMatch(/\| broken_design \| 100% \| \| \| \| \| error: design error/);
  });

  it('a model row through the agent loop (scripted server): per-round curve and tokens', async () => {
    const tb = `module tb;
  logic a, b;
  wire y;
  and2 dut (.a(a), .b(b), .y(y));
  initial begin
    a = 0; b = 0; #1; a = 1; #1; b = 1; #1; a = 0; b = 0; #1; a = 1; b = 1; #1; a = 0; b = 0; #1;
    $finish;
  end
endmodule`;
    // First turns get an unparsable reply, refinements a passing testbench: the curve goes 0 -> 1.
    const reply = (req: { messages: Array<{ role: string }> }) =>
      req.messages.length <= 2 ? 'I would need more detail.' : fencedReply(tb, 'tb_and2.sv');
    const server = await startScriptedServer([reply, reply, reply, reply]);
    try {
      const out = scratchDir();
      const code = await runEval([
        '--suite',
        join(fixtures, 'eval', 'llm4cov_small.jsonl'),
        '--tasks',
        'and2_ok',
        '--endpoint',
        server.url,
        '--model-name',
        'scripted',
        '--samples',
        '2',
        '--rounds',
        '2',
        '--out',
        out,
        '--workers',
        '1',
        '--max-tokens',
        '2048',
        '--temperature',
        '0.6',
      ]);
      expect(code).toBe(0);
      const r = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as EvalReport;
      checkSchema(r);
      expect(r.row).toMatchObject({ kind: 'model' });
      expect(r.config.settings.history).toBe('markov');
      expect(server.requests.length).toBe(4); // 2 samples x (unparsable + passing), early stop at the target
      expect(r.per_round.map((p) => p.pass_at_1)).toEqual([0, 1, 1]);
      expect(r.aggregate).toMatchObject({ pass_at_1: 1, pass_at_5: 1, sim_pass: 1 });
      expect(r.tasks[0].samples[0].rounds.map((x) => x.status)).toEqual(['unparsable', 'success']);
      expect(r.aggregate.tokens.completion).toBeGreaterThan(0);
      expect(r.aggregate.tokens.total).toBe(r.aggregate.tokens.prompt + r.aggregate.tokens.completion);
      // The instruction and instance come from the record.
      expect(server.requests[0].messages[1].content).toMatch(/instance it as 'dut'/);
      // Sampling flags reach the server; unset ones keep the protocol's defaults.
      expect(server.requests.map((q) => [q.max_tokens, q.temperature, q.top_p])).toEqual(Array(4).fill([2048, 0.6, 0.8]));
      expect(r.config.settings).toMatchObject({ maxNewTokens: 2048, temperature: 0.6, topP: 0.8 });
    } finally {
      await server.close();
    }
  });
});
