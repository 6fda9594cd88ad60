// `chorus eval --scorer URL,URL`: the evaluation's simulations go to two real reward services
// (`chorus serve`, in process, real Verilator) instead of this process, spread over both, and the
// report is the one a local run gives.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runEval } from '../../src/cli/eval.js';
import { startScoreServer, type ScoreServer } from '../../src/core/service/http.js';
import { parseExposition } from '../../src/core/service/metrics.js';
import { RemoteSimulator, scorerUrls } from '../../src/core/sim/remote.js';
import type { EvalReport } from '../../src/core/run/evaluation.js';
import { benchData, scratchDir } from '../helpers.js';

const ve = join(benchData, 'verilog-eval-v2');
const TASKS = ['Prob001_zero', 'Prob010_mt2015_q4a', 'Prob030_popcount255', 'Prob002_m2014_q4i'];

async function runs(url: string): Promise<number> {
  const m = parseExposition(await (await fetch(`${url}/metrics`)).text());
  return m.filter((x) => x.name === 'chorus_runs_total').reduce((n, x) => n + x.value, 0);
}

const essence = (r: EvalReport) =>
  r.tasks.map((t) => ({
    id: t.id,
    error: t.error,
    samples: t.samples.map((s) => ({ coverage: s.coverage, passed: s.passed, sim_ok: s.sim_ok })),
  }));

describe('chorus eval --scorer', () => {
  let a: ScoreServer;
  let b: ScoreServer;
  beforeAll(async () => {
    [a, b] = await Promise.all([startScoreServer({ port: 0, workers: 1 }), startScoreServer({ port: 0, workers: 1 })]);
  });
  afterAll(async () => {
    await Promise.all([a?.close(0), b?.close(0)]);
  });

  it('fans the simulations out over two services and reports what a local run reports', async () => {
    const remoteOut = scratchDir('chorus-eval-scorer-');
    const localOut = scratchDir('chorus-eval-local-');
    const code = await runEval([
      '--suite',
      ve,
      '--reference',
      '--tasks',
      TASKS.join(','),
      '--scorer',
      `${a.url},${b.url}`,
      '--out',
      remoteOut,
    ]);
    expect(code).toBe(0);
    const [na, nb] = [await runs(a.url), await runs(b.url)];
    // both services simulated (least-loaded: with one worker each, the first two candidates split)
    expect(na).toBeGreaterThan(0);
    expect(nb).toBeGreaterThan(0);
    expect(na + nb).toBe(TASKS.length);
    const remote = JSON.parse(readFileSync(join(remoteOut, 'report.json'), 'utf8')) as EvalReport;
    expect(remote.config.workers).toBe(2); // the services' workers together
    expect(await runEval(['--suite', ve, '--reference', '--tasks', TASKS.join(','), '--out', localOut, '--workers', '2'])).toBe(0);
    const local = JSON.parse(readFileSync(join(localOut, 'report.json'), 'utf8')) as EvalReport;
    expect(essence(remote)).toEqual(essence(local));
    expect(remote.aggregate.cov_at_1).toBeGreaterThan(0);
  });

  it('refuses a service that does not answer, and a malformed list, before running anything', async () => {
    expect(() => scorerUrls('ftp://x')).toThrow(/http\(s\)/);
    expect(() => scorerUrls(' , ')).toThrow(/at least one URL/);
    const dead = new RemoteSimulator({ urls: [a.url, 'http://127.0.0.1:9'] });
    await expect(dead.info()).rejects.toThrow(/127\.0\.0\.1:9 did not answer/);
    const code = await runEval([
      '--suite',
      ve,
      '--reference',
      '--tasks',
      TASKS[0],
      '--scorer',
      'http://127.0.0.1:9',
      '--out',
      scratchDir('chorus-eval-dead-'),
    ]);
    expect(code).toBe(2);
  });
});
