// One path through the code: `chorus generate`, the editor's worker process and `chorus eval` all
// drive a generation through core/run/generation.ts runGeneration. The same design and seed give
// the same attempts (rounds + 1 of them: `rounds` counts refinement rounds everywhere), the same
// testbenches and the same coverage on all three. And --simulator reaches generate, refine and
// eval: an unknown name is a usage error (exit 2), a registered one runs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { examples, fixtures, read, repoRoot, scratchDir, sim } from '../helpers.js';
import { fencedReply, startScriptedServer } from '../support/scriptedServer.js';
import type { WorkerClient } from '../../src/extension/worker/client.js';
import { startWorker, stopWorker, type BundledWorker } from '../support/workerBundle.js';
import type { GenerateSettings, ProgressEvent } from '../../src/extension/worker/protocol.js';
import { runEvaluation, sampleSeed } from '../../src/core/run/evaluation.js';
import type { EvalSuite } from '../../src/core/eval/task.js';
import { loadDesign } from '../../src/core/run/design.js';
import { runGeneration, type GenerationEvent } from '../../src/core/run/generation.js';

const cli = join(repoRoot, 'dist', 'cli.js');
const hardDesign = join(fixtures, 'designs', 'hard_point', 'hard_point.sv');
/** The design never reaches 100% (a reachable point random stimulus does not meet: not one the
 * generator may skip as proven unreachable), so every attempt runs. */
const ROUNDS = 2;
const TASK = 'hard_point';
/** Eval derives each sample's seed from the base seed (1), the task and the sample: use it everywhere. */
const SEED = sampleSeed(1, TASK, 0);

// The worker as the editor runs it (test/support/workerBundle.ts).
let worker: BundledWorker | undefined;
let client: WorkerClient;

beforeAll(async () => {
  worker = await startWorker('test-worker');
  client = worker.client;
});

afterAll(() => stopWorker(worker));

const settings = (over: Partial<GenerateSettings> = {}): GenerateSettings => ({
  rounds: ROUNDS,
  samples: 1,
  coverageTarget: 100,
  instance: 'uut',
  history: 'markov',
  seed: SEED,
  temperature: 0.7,
  topP: 0.8,
  maxNewTokens: 16384,
  simulator: 'verilator',
  limits: { timeoutS: 60 },
  ...over,
});

describe('one generation path', () => {
  it('chorus generate, the editor worker and chorus eval make the same rounds + 1 attempts for one seed', async () => {
    // 1. The CLI, as a user runs it.
    const dir = scratchDir('chorus-path-');
    const r = await execa(
      process.execPath,
      // The same settings on every path: the formal engine off, as eval runs (its proofs would
      // also end the rounds early, with nothing reachable left to aim at).
      [
        cli,
        'generate',
        '--json',
        '--rounds',
        String(ROUNDS),
        '--seed',
        String(SEED),
        '--formal-budget',
        '0',
        '--out',
        join(dir, 'tb.sv'),
        hardDesign,
      ],
      { reject: false },
    );
    expect(r.exitCode, r.stderr).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.generator).toBe('builtin');
    expect(j.rounds.length).toBe(ROUNDS + 1);
    const cliCoverage: number[] = j.rounds.map(
      (x: { result: { coverage: { waived: { overall: number } } } }) => x.result.coverage.waived.overall,
    );
    const cliTestbenches: string[] = j.rounds.map((x: { testbench: string }) => x.testbench);
    expect(new Set(cliTestbenches).size).toBe(ROUNDS + 1); // each round is a new testbench

    // 2. The editor's worker process, over its typed protocol.
    const events: ProgressEvent[] = [];
    const w = await client.request(
      'generate',
      { design: { files: [hardDesign] }, model: null, settings: settings() },
      { onProgress: (e) => events.push(e) },
    );
    expect(w.rounds.length).toBe(ROUNDS + 1);
    expect(w.rounds.map((x) => x.coverage?.overall)).toEqual(cliCoverage);
    expect(w.rounds.map((x) => x.testbench)).toEqual(cliTestbenches);
    expect(w.best).toBe(j.best.round);
    expect(w.model).toBe('model-free generator');
    // Progress announces every attempt, out of rounds + 1, before it runs.
    const starts = events.filter((e) => e.kind === 'round-start');
    expect(starts.map((e) => [e.round, e.attempts])).toEqual([
      [0, 3],
      [1, 3],
      [2, 3],
    ]);
    expect(events.filter((e) => e.kind === 'round-end').length).toBe(ROUNDS + 1);

    // 3. The evaluation runner on a one-task suite of the same design.
    const suite: EvalSuite = {
      name: 'path',
      path: hardDesign,
      format: 'llm4cov',
      skipped: [],
      tasks: [{ id: TASK, designFiles: [hardDesign], specFiles: [], top: 'hard_point', instance: 'uut', coverageTarget: 100 }],
    };
    const out = scratchDir('chorus-path-eval-');
    const report = await runEvaluation({
      suite,
      row: { kind: 'builtin' },
      samples: 1,
      rounds: ROUNDS,
      workers: 1,
      outDir: out,
      simulator: sim,
    });
    const s = report.tasks[0].samples[0];
    expect(report.config.settings.rounds).toBe(ROUNDS);
    expect(s.seed).toBe(SEED);
    expect(s.rounds.map((x) => x.coverage)).toEqual(cliCoverage);
    expect(s.best_round).toBe(j.best.round);
    expect(read(join(out, 'testbenches', s.testbench!)).trimEnd()).toBe(read(join(dir, 'tb.sv')).trimEnd());
  });

  it('runGeneration itself: typed events, and a model run with --rounds 0 makes exactly one attempt', async () => {
    const { design, info } = await loadDesign({ files: [join(examples, 'counter', 'counter.sv')] });
    const weak = read(join(examples, 'counter', 'tb_counter_weak.sv'));
    const server = await startScriptedServer([fencedReply(weak, 'tb_counter.sv'), 'never asked']);
    try {
      const events: GenerationEvent[] = [];
      const run = await runGeneration(
        { design, info, model: { kind: 'openai', baseUrl: server.url, model: 'scripted' }, rounds: 0, seed: 3 },
        (e) => events.push(e),
      );
      expect(server.requests.length).toBe(1);
      expect(run.engine).toBe('model');
      expect(run.attempts.map((a) => [a.round, a.source])).toEqual([[0, 'model']]);
      expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['model', 'round-start', 'text', 'sim-start', 'round-end']));
      expect(events.find((e) => e.type === 'round-start')).toMatchObject({ round: 0, attempts: 1 });
      // The seed reaches the model's sampling (round 0 of sample 0: the seed itself).
      expect(server.requests[0].seed).toBe(3);
    } finally {
      await server.close();
    }
  });
});

describe('--simulator reaches generate, refine and eval', () => {
  const counter = join(examples, 'counter', 'counter.sv');
  const weakTb = join(examples, 'counter', 'tb_counter_weak.sv');
  const suite = join(fixtures, 'eval', 'llm4cov_small.jsonl');

  it.each([
    ['generate', [counter]],
    ['refine', ['--tb', weakTb, '--endpoint', 'http://127.0.0.1:9/v1', '--model-name', 'm', counter]],
    ['eval', ['--suite', suite, '--generator', 'builtin']],
  ])('%s --simulator bogus is a usage error naming the simulators there are', async (cmd, args) => {
    const dir = scratchDir('chorus-simopt-');
    const r = await execa(process.execPath, [cli, cmd, '--simulator', 'bogus', ...args, ...(cmd === 'eval' ? ['--out', dir] : [])], {
      reject: false,
      cwd: dir,
    });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`chorus ${cmd}: unknown simulator 'bogus' \\(--simulator\\); available: verilator, xcelium`));
  });

  it('eval: --simulator with --scorer is refused (the services simulate)', async () => {
    const r = await execa(process.execPath, [cli, 'eval', '--suite', suite, '--simulator', 'verilator', '--scorer', 'http://127.0.0.1:9'], {
      reject: false,
    });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/with --scorer the reward services simulate/);
  });

  it('generate and eval run with --simulator verilator', async () => {
    const dir = scratchDir('chorus-simopt-');
    copyFileSync(counter, join(dir, 'counter.sv'));
    const g = await execa(process.execPath, [cli, 'generate', '--simulator', 'verilator', '--json', join(dir, 'counter.sv')], {
      reject: false,
    });
    expect(g.exitCode, g.stderr).toBe(0);
    expect(JSON.parse(g.stdout).rounds[0].result.simulator.name).toBe('verilator');
    const out = join(dir, 'eval');
    const ev = await execa(
      process.execPath,
      [
        cli,
        'eval',
        '--suite',
        suite,
        '--tasks',
        'and2_ok',
        '--generator',
        'builtin',
        '--samples',
        '1',
        '--rounds',
        '0',
        '--simulator',
        'verilator',
        '--out',
        out,
        '--workers',
        '1',
        '--json',
      ],
      { reject: false },
    );
    expect(ev.exitCode, ev.stderr).toBe(0);
    const rep = JSON.parse(ev.stdout);
    expect(rep.config.simulator.name).toBe('verilator');
    expect(rep.tasks[0].samples[0].passed).toBe(true);
  });

  it('refine runs with --simulator verilator', async () => {
    const dir = scratchDir('chorus-simopt-');
    copyFileSync(counter, join(dir, 'counter.sv'));
    writeFileSync(join(dir, 'tb.sv'), read(weakTb));
    const good = read(join(examples, 'counter', 'tb_counter.sv'));
    const server = await startScriptedServer([fencedReply(good, 'tb_counter.sv')]);
    try {
      const r = await execa(
        process.execPath,
        [
          cli,
          'refine',
          '--simulator',
          'verilator',
          '--tb',
          join(dir, 'tb.sv'),
          '--endpoint',
          server.url,
          '--model-name',
          'scripted',
          '--json',
          join(dir, 'counter.sv'),
        ],
        { reject: false },
      );
      expect(r.exitCode, r.stderr).toBe(0);
      const j = JSON.parse(r.stdout);
      expect(j.before.simulator.name).toBe('verilator');
      expect(j.result.simulator.name).toBe('verilator');
      // The model's revision, its module named as the testbench it refines.
      expect(readFileSync(j.out, 'utf8')).toBe(good.trim().replace('module tb_counter;', 'module tb_counter_weak;') + '\n');
    } finally {
      await server.close();
    }
  });
});
