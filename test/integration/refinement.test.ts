// Refine without a model, driven both ways: `chorus refine` (the built CLI in a child process) and
// the editor's worker process (its `refine` request), plus the core flow both call
// (core/run/refinement.ts), with the same inputs. All take the same decision (the built-in
// generator, seeded with the user's testbench, saying so) and write the same revision. The worker's
// `checkModel` probes an endpoint typed in any of its usual forms at /v1/models. Real Verilator.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { examples, read, repoRoot, scratchDir } from '../helpers.js';
import type { WorkerClient } from '../../src/extension/worker/client.js';
import { startWorker, stopWorker, type BundledWorker } from '../support/workerBundle.js';
import type { GenerateSettings, ProgressEvent } from '../../src/extension/worker/protocol.js';
import { startScriptedServer } from '../support/scriptedServer.js';
import { loadDesign } from '../../src/core/run/design.js';
import { overallCoverage } from '../../src/core/sim/ranking.js';
import { NO_MODEL_NOTE, runRefinement, type RefinementEvent } from '../../src/core/run/refinement.js';

const cli = join(repoRoot, 'dist', 'cli.js');
const weak = read(join(examples, 'counter', 'tb_counter_weak.sv'));

// The worker as the editor runs it (test/support/workerBundle.ts).
let worker: BundledWorker | undefined;
let client: WorkerClient;

beforeAll(async () => {
  worker = await startWorker('test-worker-refine');
  client = worker.client;
});

afterAll(() => stopWorker(worker));

/** The CLI's defaults: 3 rounds after the first, seed 1, full coverage, 60 s per simulation. */
const settings: GenerateSettings = {
  rounds: 3,
  samples: 1,
  target: 1,
  instance: 'uut',
  history: 'markov',
  seed: 1,
  temperature: 0.7,
  topP: 0.8,
  maxNewTokens: 16384,
  simulator: 'verilator',
  limits: { timeoutS: 60 },
};

function counterDir(): string {
  const dir = scratchDir('chorus-refinement-');
  copyFileSync(join(examples, 'counter', 'counter.sv'), join(dir, 'counter.sv'));
  writeFileSync(join(dir, 'tb.sv'), weak);
  return dir;
}

describe('refine without a model: one decision for the CLI and the editor', () => {
  it('the CLI and the core flow both fall back to the built-in generator seeded with the testbench', async () => {
    const dir = counterDir();
    const r = await execa(process.execPath, [cli, 'refine', '--tb', join(dir, 'tb.sv'), join(dir, 'counter.sv')], { reject: false });
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain(`note: ${NO_MODEL_NOTE}`);
    expect(r.stdout).toMatch(/current testbench: success, coverage \d+\.\d+%/);
    expect(r.stdout).toMatch(/revision written to .*tb_refined\.sv/);
    expect(r.stdout).toMatch(/coverage: \d+\.\d+% -> \d+\.\d+%/);
    const written = readFileSync(/revision written to (.*)\n/.exec(r.stdout)![1], 'utf8');
    expect(readFileSync(join(dir, 'tb.sv'), 'utf8')).toBe(weak); // the original is untouched

    // The editor's worker: the same core flow, the same inputs (no model, no feedback given).
    const { design, info } = await loadDesign({ files: [join(dir, 'counter.sv')] });
    const events: RefinementEvent[] = [];
    const out = await runRefinement(
      { design, info, testbench: { name: 'tb.sv', content: weak }, model: null, limits: { timeoutS: 60 } },
      (e) => events.push(e),
    );
    expect(out.engine).toBe('builtin');
    expect(events).toContainEqual({ type: 'note', message: NO_MODEL_NOTE });
    expect(out.before).not.toBeNull();
    expect(out.generation!.attempts[0].notes[0]).toBe('started from what the given testbench left uncovered');
    expect(out.testbench! + (out.testbench!.endsWith('\n') ? '' : '\n')).toBe(written);
    expect(overallCoverage(out.result)).toBeGreaterThanOrEqual(overallCoverage(out.before)!);

    // The editor's worker process, over its typed protocol: the same decision, the same revision.
    const progress: ProgressEvent[] = [];
    const w = await client.request(
      'refine',
      { design: { files: [join(dir, 'counter.sv')] }, testbench: { name: 'tb.sv', content: weak }, last: null, model: null, settings },
      { onProgress: (e) => progress.push(e) },
    );
    expect(progress).toContainEqual({ kind: 'status', message: NO_MODEL_NOTE });
    expect(w.model).toBe('model-free generator');
    expect(w.testbench + (w.testbench.endsWith('\n') ? '' : '\n')).toBe(written);
    expect(w.result?.coverage).toEqual(out.result?.coverage);
  });

  it('a log is not read without a model: the testbench is simulated here, and the note says so', async () => {
    const dir = counterDir();
    writeFileSync(join(dir, 'sim.log'), "%Error: tb.sv:12:5: Can't find definition of variable: 'cnt'\n");
    const r = await execa(
      process.execPath,
      [cli, 'refine', '--tb', join(dir, 'tb.sv'), '--log', join(dir, 'sim.log'), '--json', join(dir, 'counter.sv')],
      { reject: false },
    );
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toContain('the built-in generator does not read logs');
    const rec = JSON.parse(r.stdout) as { engine: string; before: unknown; result: { status: string } };
    expect(rec.engine).toBe('builtin');
    expect(rec.before).not.toBeNull();
    expect(rec.result.status).toBe('success');
  });

  it("the worker's checkModel probes every form of an endpoint URL at /v1/models", async () => {
    for (const form of ['', '/v1', '/v1/', '/v1/chat/completions']) {
      const server = await startScriptedServer([], { models: ['chorus-4b'] });
      try {
        const baseUrl = `${new URL(server.url).origin}${form}`;
        const r = await client.request('checkModel', { model: { kind: 'openai', baseUrl, model: 'chorus-4b' } });
        expect(server.paths, form).toEqual(['GET /v1/models']);
        expect(r).toMatchObject({ ok: true, models: ['chorus-4b'] });
      } finally {
        await server.close();
      }
    }
  });

  it("the worker's checkModel of a folder without a model says what the folder lacks", async () => {
    const r = await client.request('checkModel', {
      model: { kind: 'local', modelDir: join(examples, 'counter'), dtype: 'q4', allowDownload: false, engine: 'onnx' },
    });
    expect(r.ok).toBe(false);
    expect(r.message).toMatch(/^Model directory .*examples\/counter lacks config\.json/);
  });
});
