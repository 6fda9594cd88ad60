// Issue 12: the reward service and the agent loop cap the simulator output they echo (the first
// errors plus a bounded tail), so a run cannot pour a large file into a response or a prompt; and
// compile diagnostics never quote a file that is not the testbench's or the design's.
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { examples, read, scratchDir, simulateFiles } from '../helpers.js';
import { ECHO_CAPS, echoBounded, feedbackTurn, resultForEcho } from '../../src/core/agent/protocol.js';
import { withholdForeignSource } from '../../src/core/sim/verilator/diagnostics.js';
import { startScoreServer } from '../../src/core/service/http.js';

const counter = join(examples, 'counter', 'counter.sv');

/** A testbench that prints `n` long lines, then `errors` $error calls, then more lines. */
const noisy = (n: number, errors: number): string => `\`timescale 1ns/1ps
module tb;
  logic clk = 0, rst_n = 0, en = 0, load = 0, up = 1;
  logic [7:0] din = 0;
  logic [7:0] count;
  logic wrap;
  counter uut (.*);
  initial begin
    for (int i = 0; i < ${n}; i++) $display("line %0d %s", i, {40{"pour"}});
    for (int i = 0; i < ${errors}; i++) $error("bad %0d %s", i, {600{"x"}});
    for (int i = 0; i < 10; i++) $display("tail %0d", i);
    $finish;
  end
endmodule
`;

describe('echoBounded', () => {
  it('keeps short output whole', () => {
    expect(echoBounded('a\nb\n%Error: x')).toBe('a\nb\n%Error: x');
  });

  it('keeps the first error lines and a bounded tail of long output, every line clipped', () => {
    const lines = [
      ...Array.from({ length: 5000 }, (_, i) => `noise ${i}`),
      '%Error: tb.sv:3: first',
      ...Array.from({ length: 5000 }, (_, i) => `more ${i}`),
      '%Error: tb.sv:9: last',
      'end',
    ];
    const out = echoBounded(lines.join('\n'));
    expect(out.length).toBeLessThan(ECHO_CAPS.tailChars + ECHO_CAPS.errorLines * (ECHO_CAPS.lineChars + 40) + 100);
    expect(out.split('\n')[0]).toBe('%Error: tb.sv:3: first');
    expect(out).toMatch(/\.\.\. \[\d+ characters of output cut\] \.\.\./);
    expect(out.endsWith('%Error: tb.sv:9: last\nend')).toBe(true);
    expect(out).not.toContain('noise 0');
    const long = echoBounded('y'.repeat(100_000));
    expect(long.length).toBeLessThan(ECHO_CAPS.lineChars + 60);
    expect(long).toMatch(/\.\.\. \[99600 characters cut\]$/);
  });

  it('keeps at most 20 of many error lines', () => {
    const out = echoBounded(Array.from({ length: 1000 }, (_, i) => `%Error: e${i} ${'z'.repeat(100)}`).join('\n'));
    expect(out.split('\n').filter((l) => l.startsWith('%Error')).length).toBeLessThanOrEqual(
      ECHO_CAPS.errorLines + Math.ceil(ECHO_CAPS.tailChars / 100),
    );
    expect(out).toContain('%Error: e0 ');
    expect(out).toContain('%Error: e999 ');
  });
});

describe('a run that pours output', () => {
  it('the record the loop keeps and the prompt it builds are bounded; errors come first', async () => {
    const r = await simulateFiles([counter], 'tb.sv', noisy(20_000, 500));
    // The engine's own record keeps what it kept before (64 KiB of log).
    expect(r.log.length).toBeGreaterThan(50_000);
    expect(r.diagnostics.filter((d) => d.severity === 'error').length).toBe(500);
    const echoed = resultForEcho(r);
    expect(echoed.log.length).toBeLessThan(20_000);
    expect(echoed.err_msg.length).toBeLessThan(20_000);
    expect(echoed.diagnostics).toHaveLength(ECHO_CAPS.diagnostics);
    expect(echoed.diagnostics.every((d) => d.message.length < ECHO_CAPS.lineChars + 40)).toBe(true);
    expect(echoed.diagnostics[0].message).toMatch(/bad 0 x+ \.\.\. \[\d+ characters cut\]$/);
    expect(echoed.log).toContain('tail 9');
    const prompt = feedbackTurn({ status: 'success', testbench: '', filename: 'tb.sv', source: 'fence' }, echoed);
    expect(prompt.length).toBeLessThan(6_000);
    expect(prompt).not.toContain('pourpour');
  });

  it('the reward service answers it within bounds', async () => {
    const server = await startScoreServer({ workers: 1 });
    try {
      const res = await fetch(`${server.url}/v1/score`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({
          design_files: [{ name: 'counter.sv', content: read(counter) }],
          top: 'counter',
          testbench: { name: 'tb.sv', content: noisy(20_000, 500) },
        }),
      });
      const text = await res.text();
      expect(res.status).toBe(200);
      const rec = JSON.parse(text) as { log: string; err_msg: string; diagnostics: unknown[] };
      expect(rec.diagnostics).toHaveLength(ECHO_CAPS.diagnostics);
      expect(rec.log.length).toBeLessThan(20_000);
      // Coverage tables and the rest are fixed-size: the whole answer stays small.
      expect(text.length).toBeLessThan(80_000);
    } finally {
      await server.close(0);
    }
  });
});

describe("compile diagnostics quote only the user's files", () => {
  it('withholds the text Verilator quotes from a file outside the testbench and design', () => {
    // Unjailed and unchecked on purpose: this is the last layer, tried on Verilator's real output.
    const dir = scratchDir('chorus-quote-');
    const secret = join(scratchDir('chorus-quote-secret-'), 'secret.txt');
    writeFileSync(secret, 'topsecret_value_1234 is here;\n');
    writeFileSync(join(dir, 'tb.sv'), `\`include "${secret}"\nmodule tb; initial $finish; endmodule\n`);
    let log = '';
    try {
      execFileSync('verilator', ['--lint-only', 'tb.sv'], { cwd: dir, encoding: 'utf8', stdio: 'pipe' });
    } catch (e) {
      log = String((e as { stderr: string }).stderr);
    }
    expect(log).toContain('topsecret_value_1234'); // Verilator quotes it
    const shown = withholdForeignSource(log, (f) => f === 'tb.sv');
    expect(shown).not.toContain('topsecret_value_1234');
    expect(shown).toContain(`%Error: ${secret}:1:`);
    expect(shown).toContain('[text withheld: the file is not part of the testbench or the design]');
    // The testbench's own messages are untouched.
    const own = '%Error: tb.sv:3:5: syntax error\n    3 |   foo bar\n      |     ^~~';
    expect(withholdForeignSource(own, (f) => f === 'tb.sv')).toBe(own);
  });
});
