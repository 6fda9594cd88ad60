// Designs Verilator cannot settle (a combinational block that reads what it writes), with the
// real Verilator: the backend retries what can work, says which workaround made the run, or
// plainly that nothing did, and never touches the user's files.
import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fixtures, read, simulateFiles } from '../helpers.js';

const dir = join(fixtures, 'designs', 'selfread_div');
const div = join(dir, 'selfread_div.sv');
const osc = join(dir, 'osc.sv');

describe('a DUT whose logic does not settle', () => {
  it('runs with the looping always @(*) as an event-driven process, says so, and maps coverage to the original file', async () => {
    const before = readFileSync(div, 'utf8');
    const listing = readdirSync(dir).sort();
    const r = await simulateFiles([div], 'tb_selfread_div.sv', read(join(dir, 'tb_selfread_div.sv')));
    expect(r.status, r.err_msg).toBe('success');
    expect(r.settle?.loop).toEqual(['nxt_cnt']);
    expect(r.settle?.tried.join(' ')).toMatch(/split_var on the looping variables/);
    expect(r.settle?.workaround).toMatch(/always block at selfread_div\.sv:18 run as event-driven process on a copy of the design/);
    const w = r.diagnostics.find((d) => d.code === 'CHORUS-COMBLOOP');
    expect(w).toMatchObject({ severity: 'warning', origin: 'dut', file: div, line: 16 });
    expect(w!.message).toMatch(/does not settle in Verilator as written; it ran with the always block at selfread_div\.sv:18/);
    // The division ran to the end: quotient 13 / 3 = 4, remainder 1 (the copy behaves as event-driven simulators run the original).
    expect(r.log).toMatch(/done=1 q=4 r=1/);
    // Coverage points name the user's file at the user's lines.
    expect(r.coverage?.waived.overall).toBeGreaterThan(0.5);
    expect(r.uncovered.length).toBeGreaterThan(0);
    expect(new Set(r.uncovered.map((u) => u.file))).toEqual(new Set([div]));
    expect(r.diagnostics.filter((d) => d.origin === 'other')).toEqual([]);
    // Nothing written beside the user's file, nothing changed in it.
    expect(readFileSync(div, 'utf8')).toBe(before);
    expect(readdirSync(dir).sort()).toEqual(listing);
  });

  it('the same candidate again gives the same figure (seeds reproduce with the workaround)', async () => {
    const tb = read(join(dir, 'tb_selfread_div.sv'));
    const [a, b] = [await simulateFiles([div], 'tb_selfread_div.sv', tb), await simulateFiles([div], 'tb_selfread_div.sv', tb)];
    expect(b.status).toBe('success');
    expect(b.coverage?.waived.overall).toBe(a.coverage?.waived.overall);
    expect(b.settle?.workaround).toBe(a.settle?.workaround);
  });

  it('a real oscillator: says plainly that nothing made it run, at the DUT, never the testbench', async () => {
    const r = await simulateFiles([osc], 'tb_osc.sv', read(join(dir, 'tb_osc.sv')));
    expect(r.status).toBe('xrun_failed');
    expect(r.settle).toMatchObject({ loop: ['a'], workaround: null });
    expect(r.settle!.tried.join(' ')).toMatch(/split_var on the looping variables/);
    const e = r.diagnostics.find((d) => d.code === 'CHORUS-COMBLOOP');
    expect(e).toMatchObject({ severity: 'error', origin: 'dut', file: osc });
    expect(e!.message).toMatch(/combinational loop through a\b.*nothing made it run, so there is no coverage result/);
    expect(r.diagnostics.filter((d) => d.origin === 'testbench' && d.severity === 'error')).toEqual([]);
  });
});
