// The built-in refinement as an edit (core/generate/splice.ts): where the generator's stimulus goes
// in a user's testbench, what is renamed, what is kept byte for byte, and why a testbench cannot be
// edited. The generated text here follows emit.ts's layout; test/integration/refinement.test.ts
// edits real generated testbenches and simulates them.
import { describe, expect, it } from 'vitest';
import { portInfo as port } from '../helpers.js';
import { readSite, spliceStimulus, type SpliceSite } from '../../src/core/generate/splice.js';

const ports = [port('clk', 'input'), port('rst_n', 'input'), port('en', 'input'), port('din', 'input', 8), port('count', 'output', 8)];

/** A generated testbench in emit.ts's layout. */
const generated = `// Stimulus testbench for 'counter', written by the CHORUS built-in generator
// (model-free, coverage-directed constrained-random). Round 2, seed 7936.
// It drives every input and has no checks on outputs: it exists to exercise the design.
// - started from what the given testbench left uncovered
\`timescale 1ns/1ps
module tb_user;
  logic clk = 1'b0;
  logic rst_n = 1'b0;
  logic en = '0;
  logic [7:0] din = '0;
  logic [7:0] count;
  int unsigned cycle = 0;

  counter uut (
    .clk(clk),
    .rst_n(rst_n),
    .en(en),
    .din(din),
    .count(count)
  );

  // Clock clk: 10 ns period.
  initial clk = 1'b0;
  always #5 clk = ~clk;

  // One stimulus step.
  task automatic step();
    @(negedge clk);
    cycle++;
  endtask

  logic [7:0] walk_din [3] = '{8'h0, 8'h1, 8'hff};

  task automatic drive_random();
    en = 1'($urandom);
    din = 8'($urandom);
  endtask

  initial begin
    void'($urandom(7936)); // seed the stimulus
    en = '0;
    din = '0;
    rst_n = 1'b0;
    step();
    rst_n = 1'b1;
    repeat (10) begin drive_random(); if (count == 8'hff) din = walk_din[cycle % 3]; step(); end
    $finish;
  end
endmodule
`;

const user = `// My testbench: a few cycles.
\`timescale 1ns/1ps
module tb_user;
  logic clock = 0, reset_n = 0, enable = 0;
  logic [7:0] data = 0;
  logic [7:0] value;
  int step = 0; // the user's own name, also one of the generator's
  counter #(.W(8)) dut (.clk(clock), .rst_n(reset_n), .en(enable), .din(data), .count(value));
  always #5 clock = ~clock;
  initial begin
    #12 reset_n = 1;
    enable = 1;
    repeat (4) @(posedge clock);
    #10 $finish;
  end
  initial begin
    #1000000;
    $display("timeout");
    $finish;
  end
endmodule
`;

function site(text: string): SpliceSite {
  const s = readSite(text, 'tb_user', 'counter', ports);
  if ('why' in s) throw new Error(s.why);
  return s;
}

describe('the built-in refinement edits the testbench', () => {
  it('keeps every line the user wrote, calls the added stimulus before the $finish that ends it, and drives the user signals', () => {
    const r = spliceStimulus(site(user), generated, 'counter', ports);
    if (!r.ok) throw new Error(r.why);
    // Every line of the input, in order, unchanged.
    const out = r.text.split('\n');
    let k = 0;
    for (const line of user.split('\n')) {
      k = out.indexOf(line, k);
      expect(k, line).toBeGreaterThanOrEqual(0);
      k++;
    }
    // The call sits before the statement `#10 $finish;` of the main block, not in the watchdog.
    expect(r.text).toContain('    repeat (4) @(posedge clock);\n    chorus_refine(); // added by CHORUS refine');
    expect(r.text).toMatch(/chorus_refine\(\);[^\n]*\n {4}#10 \$finish;/);
    expect(r.text.match(/^ *chorus_refine\(\);/gm)).toHaveLength(1);
    // Ports become the user's signals; the generator's names are prefixed (the user's `step` stays his).
    const added = r.text.slice(r.text.indexOf('// ---- Added by CHORUS refine'));
    expect(added).toContain('(the built-in generator, round 2, seed 7936)');
    expect(added).toContain('@(negedge clock);');
    expect(added).toContain('chorus_cycle++;');
    expect(added).toContain('task automatic chorus_step();');
    expect(added).toContain("logic [7:0] chorus_walk_din [3] = '{8'h0, 8'h1, 8'hff};");
    expect(added).toContain("if (value == 8'hff) data = chorus_walk_din[chorus_cycle % 3]; chorus_step();");
    expect(added).toContain("reset_n = 1'b0;");
    expect(added).toContain("enable = 1'($urandom);");
    expect(added).not.toMatch(/\$finish\s*;/);
    // What the generator declared for itself and the clock it made are not added: the user's stay.
    expect(added).not.toMatch(/always #5|logic \[7:0\] din;|counter uut/);
    expect(r.text.trimEnd().endsWith('// ---- End of what CHORUS refine added.\nendmodule')).toBe(true);
  });

  it('reads named (implicit and .*) and positional connections', () => {
    const wildcard = user.replace(/counter #\(\.W\(8\)\) dut \([^;]*\);/, 'counter dut (.clk(clock), .rst_n(reset_n), .en, .*);');
    const w = readSite(wildcard.replace('logic [7:0] data = 0;', 'logic [7:0] din = 0;'), 'tb_user', 'counter', ports);
    expect('why' in w ? w.why : [...w.connections]).toEqual([
      ['clk', 'clock'],
      ['rst_n', 'reset_n'],
      ['en', 'en'],
      ['din', 'din'],
      ['count', 'count'],
    ]);
    const positional = user.replace(/\(\.clk\(clock\)[^;]*\);/, '(clock, reset_n, enable, data, value);');
    const p = readSite(positional, 'tb_user', 'counter', ports);
    expect('why' in p ? p.why : p.connections.get('din')).toBe('data');
  });

  it('says why a testbench cannot be edited', () => {
    const why = (text: string): string => {
      const s = readSite(text, 'tb_user', 'counter', ports);
      if ('why' in s) return s.why;
      const r = spliceStimulus(s, generated, 'counter', ports);
      return r.ok ? 'edited' : r.why;
    };
    expect(why(user.replace('.din(data)', ".din(data ^ 8'h1)"))).toBe("it connects din to data ^ 8'h1, not to a signal of its own");
    expect(why(user.replace('.din(data)', '.din()'))).toBe('it leaves din unconnected');
    expect(why(user.replace('#10 $finish;', 'if (value == 0) $finish;'))).toBe(
      'it has no $finish that ends its stimulus in an initial block',
    );
    expect(why(user.replace('counter #(.W(8)) dut', 'other dut'))).toBe('no instance of counter was found in it');
    expect(why(user.replace('  always #5 clock = ~clock;\n', ''))).toBe('it does not toggle clock, the clock the added stimulus steps on');
    expect(why(user.replace('logic [7:0] data = 0;', 'wire [7:0] data;'))).toBe(
      'it declares data (connected to din) as a net: the added stimulus assigns it procedurally',
    );
    expect(why(user.replace('  always #5 clock', '  assign enable = value[0];\n  always #5 clock'))).toBe(
      'it drives enable (connected to en) with a continuous assign: the added stimulus assigns it procedurally',
    );
    expect(why(user.replace('module tb_user;', 'module tb_other;'))).toBe('its module tb_user was not found');
    // A comment or a string that looks like a $finish or an instance is not one.
    expect(why(user.replace('#10 $finish;', '// $finish;\n    $display("$finish");'))).toBe(
      'it has no $finish that ends its stimulus in an initial block',
    );
  });
});
