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
  coverageTarget: 100,
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

/** `text` holds every line of `input`, in order and unchanged. */
function expectKeeps(text: string, input: string): void {
  const out = text.split('\n');
  let k = 0;
  for (const line of input.trimEnd().split('\n')) {
    k = out.indexOf(line, k);
    expect(k, `the line ${JSON.stringify(line)} was kept`).toBeGreaterThanOrEqual(0);
    k++;
  }
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
    expect(overallCoverage(out.result)).toBeGreaterThan(overallCoverage(out.before)!);
    // An edit, not a replacement: every line of the input, in order, then what was added.
    expectKeeps(written, weak);
    expect(written).toMatch(/repeat \(4\) @\(posedge clk\);\n {4}chorus_refine\(\);[^\n]*\n {4}\$finish;/);
    expect(r.stdout).toContain('note: the revision is tb.sv as written, with the generator');
    // Every round was simulated as the edit, and the run folder's rounds are the edits.
    for (const a of out.generation!.attempts) expectKeeps(a.testbench!, weak);

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

  it('edits a testbench whose signals are named otherwise; a testbench that fails gets a new one, and the note says why', async () => {
    // The sequence detector, its ports connected to signals of other names, positionally.
    const dir = scratchDir('chorus-refinement-edit-');
    copyFileSync(join(examples, 'fsm', 'seq_detector.sv'), join(dir, 'seq_detector.sv'));
    const { design, info } = await loadDesign({ files: [join(dir, 'seq_detector.sv')] });
    const order = info.modules.find((m) => m.name === info.top)!.ports.map((p) => `my_${p.name}`);
    const mine = `\`timescale 1ns/1ps
module tb_mine;
  logic my_clk = 0, my_reset = 1, my_bit_in = 0, my_valid = 0;
  logic my_detected; logic [3:0] my_hits;
  seq_detector u0 (${order.join(', ')});
  always #5 my_clk = ~my_clk;
  initial begin
    repeat (2) @(posedge my_clk);
    my_reset = 0;
    repeat (3) @(posedge my_clk);
    $finish;
  end
endmodule
`;
    const notes: string[] = [];
    const edit = await runRefinement(
      { design, info, testbench: { name: 'tb_mine.sv', content: mine }, model: null, limits: { timeoutS: 60 } },
      (e) => void (e.type === 'note' && notes.push(e.message)),
    );
    expect(edit.result?.status).toBe('success');
    expectKeeps(edit.testbench!, mine);
    expect(edit.testbench).toMatch(/@\(negedge my_clk\)/);
    expect(edit.testbench).not.toMatch(/\bmodule tb_seq_detector\b/);
    expect(overallCoverage(edit.result)!).toBeGreaterThan(overallCoverage(edit.before)! + 0.2);
    expect(notes.some((n) => n.startsWith('the revision is tb_mine.sv as written'))).toBe(true);

    // The FIFO example's own testbench overfills it on purpose: an edit would keep that failure.
    // A new testbench is written, under the same module name.
    const fifoDir = scratchDir('chorus-refinement-fifo-');
    copyFileSync(join(examples, 'fifo', 'sync_fifo.sv'), join(fifoDir, 'sync_fifo.sv'));
    const fifo = await loadDesign({ files: [join(fifoDir, 'sync_fifo.sv')] });
    const failing = read(join(examples, 'fifo', 'tb_sync_fifo.sv'));
    const fresh: string[] = [];
    const out = await runRefinement(
      {
        design: fifo.design,
        info: fifo.info,
        testbench: { name: 'tb_sync_fifo.sv', content: failing },
        model: null,
        limits: { timeoutS: 60 },
      },
      (e) => void (e.type === 'note' && fresh.push(e.message)),
    );
    expect(fresh.find((n) => n.startsWith('the testbench could not be edited'))).toMatch(
      // (Verilator 5.006 stops at the first failure; later releases go on: 1 or more times.)
      /^the testbench could not be edited \(its own stimulus broke the design's assertions \d+ times?, first at sync_fifo\.sv:44 .*; a revision that keeps that stimulus fails too\): the revision is a new testbench, module tb_sync_fifo$/,
    );
    expect(out.testbench).toMatch(/\bmodule tb_sync_fifo;/);
    // Its failures teach the generator the rule; they do not make the generator's own rules stricter.
    expect(out.result?.dutAssertions ?? []).toEqual([]);
    expect(overallCoverage(out.result)!).toBeGreaterThanOrEqual(overallCoverage(out.before)!);
  });

  it('an edit the simulator refuses is dropped for a new testbench, and the note names the error', async () => {
    // `din_w` is never declared: an implicit net, which the added stimulus cannot assign procedurally.
    const implicit = `\`timescale 1ns/1ps
module tb_impl;
  logic clk = 0, rst_n = 0, en = 0, load = 0, up = 1;
  logic [7:0] count;
  logic wrap;
  counter uut (.clk(clk), .rst_n(rst_n), .en(en), .load(load), .up(up), .din(din_w), .count(count), .wrap(wrap));
  always #5 clk = ~clk;
  initial begin
    #12 rst_n = 1;
    en = 1;
    repeat (20) @(posedge clk);
    $finish;
  end
endmodule
`;
    const dir = counterDir();
    const { design, info } = await loadDesign({ files: [join(dir, 'counter.sv')] });
    const notes: string[] = [];
    const out = await runRefinement(
      { design, info, testbench: { name: 'tb_impl.sv', content: implicit }, model: null, limits: { timeoutS: 60 } },
      (e) => void (e.type === 'note' && notes.push(e.message)),
    );
    expect(notes.find((n) => n.startsWith('the testbench could not be edited'))).toMatch(
      /^the testbench could not be edited \(the edited testbench did not run: xrun_failed, .*din_w.*\): the revision is a new testbench, module tb_impl$/,
    );
    expect(out.result?.status).toBe('success');
    expect(out.testbench).toMatch(/\bmodule tb_impl;/);
    expect(out.testbench).not.toContain('chorus_refine');
    // Every round in the record is what was simulated and scored: no round claims the edit.
    for (const a of out.generation!.attempts) expect(a.testbench).not.toContain('chorus_refine');
    expect(overallCoverage(out.result)!).toBeGreaterThan(overallCoverage(out.before)!);
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
