import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
// The rule behind chorus.editorIsTestbench (editorContext.ts) is the design loader's own.
import { looksLikeTestbench } from '../../../src/core/design/folder.js';
import { examples } from '../../helpers.js';

describe('looksLikeTestbench (hides Refine / Run Coverage where they cannot apply)', () => {
  it('recognises the usual names', () => {
    for (const n of ['tb_counter.sv', 'counter_tb.sv', 'test_alu.v', 'fifo_test.sv']) expect(looksLikeTestbench(n, ''), n).toBe(true);
  });
  it('recognises a port-less top that drives time, whatever its name', () => {
    expect(looksLikeTestbench('stim.sv', 'module stim;\n  initial begin #5 $finish; end\nendmodule')).toBe(true);
    expect(looksLikeTestbench('stim.sv', 'module stim #(parameter N = 2);\n initial $finish;\nendmodule')).toBe(true);
  });
  it('a design with ports is not a testbench, nor is a port-less module named in a comment', () => {
    expect(looksLikeTestbench('counter.sv', readFileSync(join(examples, 'counter', 'counter.sv'), 'utf8'))).toBe(false);
    expect(looksLikeTestbench('seq_detector.sv', readFileSync(join(examples, 'fsm', 'seq_detector.sv'), 'utf8'))).toBe(false);
    expect(looksLikeTestbench('x.sv', '// module tb; initial $finish;\nmodule x(input a); endmodule')).toBe(false);
  });
  it('the example testbenches are testbenches by content too', () => {
    expect(looksLikeTestbench('a.sv', readFileSync(join(examples, 'fifo', 'tb_sync_fifo.sv'), 'utf8'))).toBe(true);
  });
});
