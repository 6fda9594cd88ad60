// `chorus generate --warm-start`: the built-in generator's best testbench is round 0 and the model
// refines it in the protocol's refinement turn. The built CLI in a child process, a scripted
// OpenAI-compatible server whose replies are worse than the generator's testbench, real Verilator.
import { afterEach, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { examples, repoRoot, scratchDir } from '../helpers.js';
import { fencedReply, startScriptedServer, type ScriptedServer } from '../support/scriptedServer.js';

const cli = join(repoRoot, 'dist', 'cli.js');
/** Resets the detector and stops: far below what the built-in generator reaches. */
const weak = `\`timescale 1ns/1ps
module tb_weak;
  logic clk = 0, reset = 1, bit_in = 0, valid = 0;
  logic detected; logic [3:0] hits;
  seq_detector uut (.*);
  always #5 clk = ~clk;
  initial begin
    repeat (2) @(posedge clk);
    reset = 0;
    repeat (2) @(posedge clk);
    $finish;
  end
endmodule`;

let server: ScriptedServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

describe('chorus generate --warm-start', () => {
  it('starts from the generator testbench, refines it in the refinement turn, and never ends below it', async () => {
    server = await startScriptedServer([fencedReply(weak, 'tb_weak.sv'), 'no testbench in this reply', fencedReply(weak, 'tb_weak2.sv')]);
    const dir = scratchDir('chorus-warm-');
    copyFileSync(join(examples, 'fsm', 'seq_detector.sv'), join(dir, 'seq_detector.sv'));
    const r = await execa(
      process.execPath,
      [
        cli,
        'generate',
        '--json',
        '--warm-start',
        '--rounds',
        '3',
        '--endpoint',
        server.url,
        '--model-name',
        'scripted',
        '--out',
        join(dir, 'tb.sv'),
        join(dir, 'seq_detector.sv'),
      ],
      { reject: false },
    );
    expect(r.exitCode).toBe(0);
    const j = JSON.parse(r.stdout);
    // round 0 is the generator's, marked; the model wrote rounds 1-3
    expect(j.rounds.map((x: { round: number }) => x.round)).toEqual([0, 1, 2, 3]);
    expect(j.rounds[0]).toMatchObject({ warm_start: true, parse_status: 'success' });
    expect(j.rounds.slice(1).every((x: { warm_start?: boolean }) => x.warm_start === undefined)).toBe(true);
    const genCov = j.warm_start.coverage as number;
    expect(genCov).toBeGreaterThan(0.5);
    expect(j.rounds[0].result.coverage.waived.overall).toBeCloseTo(genCov, 10);
    // the model's replies were worse: the generator's testbench stays the best and is written
    const weakCov = j.rounds[1].result.coverage.waived.overall as number;
    expect(weakCov).toBeLessThan(genCov);
    expect(j.best.round).toBe(0);
    expect(j.best.coverage).toBeGreaterThanOrEqual(genCov);
    expect(readFileSync(join(dir, 'tb.sv'), 'utf8').trimEnd()).toBe(j.rounds[0].testbench.trimEnd());
    // the first model call is the protocol's refinement turn on the generator's testbench
    expect(server.requests.length).toBe(3);
    const m = server.requests[0].messages;
    expect(m.map((x) => x.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(m[2].content).toContain(j.rounds[0].testbench.split('\n')[0]);
    expect(m[3].content).toContain('- coverage: ');
    // markov history: later rounds still refine the best (the generator's) candidate
    expect(server.requests[2].messages[2].content).toBe(m[2].content);
  });

  it('is refused without a model', async () => {
    const r = await execa(process.execPath, [cli, 'generate', '--warm-start', join(examples, 'fsm', 'seq_detector.sv')], { reject: false });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/--warm-start need a model/);
  });
});
