// The built-in generator's protocol mechanisms on real Verilator, one small design each: an APB
// slave (bus-functional transfers, decoded and unmapped addresses, an unlock code), a UART
// receiver (framed traffic with parity, stop-bit and break errors), a start/done GCD (bounded
// waits, operands at both ends of the latency range), a watchdog whose timeout parameter puts
// the terminal count ten million cycles away (scaled down, said so; -G and keepParams win), and
// AXI4-Lite and AHB-Lite register slaves.
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { loadDesign } from '../../src/core/run/design.js';
import { generateTestbench, type GenerateOptions } from '../../src/core/generate/generator.js';
import { fixtures, sim } from '../helpers.js';

const designs = join(fixtures, 'designs');
const gen = async (file: string, opts: GenerateOptions & { params?: string[] } = {}) => {
  const { design, info } = await loadDesign({ files: [join(designs, file)], params: opts.params });
  return generateTestbench(sim, design, info, { attempts: 1, ...opts });
};
const stimulusOnly = (tb: string): void => {
  expect(tb).toMatch(/\$finish;/);
  expect(tb).not.toMatch(/\bassert\b|\$error|\$fatal|\$display/);
};

describe('built-in generator: protocols', () => {
  it('APB slave: legal transfers reach every register, the unlock code and PSLVERR in the first round', async () => {
    const g = await gen('apb_slave/apb_regs.sv');
    const r = g.best.result;
    expect(r.status).toBe('success');
    expect(r.coverage!.waived.overall).toBe(1);
    const tb = g.best.testbench;
    stimulusOnly(tb);
    expect(tb).toMatch(/\/\/ Recognised: apb slave on PADDR: 4 decoded address\(es\) \('h0, 'h4, 'h8, 'hc\)/);
    expect(tb).toMatch(/task automatic bus0_write\(input logic \[11:0\] a, input logic \[31:0\] d\);/);
    expect(tb).toMatch(/bus0_write\(pa\[x\], pd\[x\]\); bus0_write\(pa\[y\], pd\[y\]\);/);
    // PRESETn is a reset (not a second clock).
    expect(tb).toMatch(/PRESETn \(active-low, asynchronous: /);
  });

  it('AXI4-Lite and AHB-Lite slaves: every branch, error responses included, through legal transfers', async () => {
    for (const [file, kind] of [
      ['bus_slaves/axil_regs.sv', 'axi4-lite'],
      ['bus_slaves/ahb_regs.sv', 'ahb-lite'],
    ] as const) {
      const g = await gen(file);
      expect(g.best.result.status).toBe('success');
      // Only constant bits stay untoggled (bresp[0], the address bits no legal register has).
      expect(g.best.result.coverage!.waived.block).toBe(1);
      expect(g.best.testbench).toContain(`// Recognised: ${kind} slave on `);
      stimulusOnly(g.best.testbench);
    }
  });

  it('UART receiver: framed traffic covers data, parity, framing errors and breaks', async () => {
    const g = await gen('uart_rx/uart_rx.sv');
    const r = g.best.result;
    expect(r.status).toBe('success');
    // Only the unreachable default arm of the 5-state enum is left.
    expect(r.uncovered.map((u) => `${u.type}:${u.line}:${u.label}`)).toEqual(['line:58:case']);
    expect(r.coverage!.waived.toggle).toBe(1);
    const tb = g.best.testbench;
    stimulusOnly(tb);
    expect(tb).toMatch(/Recognised: serial receiver on rx: 8-bit frames at 8 cycles per bit/);
    expect(tb).toMatch(/ser0_frame\(8, 8'h0, 1\);/);
  });

  it('start/done GCD: bounded waits for done and corner operands reach the longest operation', async () => {
    const g = await gen('start_done/gcd.sv');
    expect(g.best.result.status).toBe('success');
    expect(g.best.result.coverage!.waived.overall).toBe(1);
    const tb = g.best.testbench;
    stimulusOnly(tb);
    expect(tb).toMatch(/while \(!\(done == 1'b1\) && n < 272\)/);
    expect(tb).toContain("hs0_run(8'hff, 8'h1, 0);");
  });

  it('a ten-million-cycle timeout is scaled down in the instantiation, and the record says so', async () => {
    const g = await gen('long_timer/watchdog.sv');
    expect(g.scaledParams).toEqual([expect.objectContaining({ name: 'TIMEOUT_CYCLES', was: '10000000', value: '16' })]);
    expect(g.best.testbench).toMatch(/watchdog #\(\.TIMEOUT_CYCLES\(16\)\) uut \(/);
    expect(g.best.testbench).toMatch(
      /\/\/ Parameter TIMEOUT_CYCLES scaled from 10000000 to 16: the design compares a count against 9999999/,
    );
    expect(g.best.result.coverage!.waived.overall).toBe(1);
  });

  it('keepParams and the user -G win over scaling', async () => {
    const kept = await gen('long_timer/watchdog.sv', { keepParams: true });
    expect(kept.scaledParams).toEqual([]);
    expect(kept.best.testbench).not.toMatch(/#\(\.TIMEOUT_CYCLES/);
    expect(kept.best.result.uncovered.some((u) => u.type !== 'toggle' && /TIMEOUT_CYCLES - 1/.test(u.source ?? ''))).toBe(true);
    const user = await gen('long_timer/watchdog.sv', { params: ['TIMEOUT_CYCLES=20'] });
    expect(user.scaledParams).toEqual([]);
    expect(user.best.testbench).toMatch(/watchdog #\(\.TIMEOUT_CYCLES\(20\)\) uut \(/);
  });

  it('seeds reproduce; a round whose random segment raised coverage is replayed in the next', async () => {
    const a = await gen('long_timer/watchdog.sv', { keepParams: true, attempts: 3, seed: 5 });
    const b = await gen('long_timer/watchdog.sv', { keepParams: true, attempts: 3, seed: 5 });
    expect(b.rounds.map((r) => r.testbench)).toEqual(a.rounds.map((r) => r.testbench));
    const c = await gen('long_timer/watchdog.sv', { keepParams: true, attempts: 1, seed: 6 });
    expect(c.rounds[0].testbench).not.toEqual(a.rounds[0].testbench);
    const cov = a.rounds.map((r) => r.result.coverage!.waived.overall!);
    expect(cov[1]).toBeGreaterThan(cov[0]);
    expect(a.rounds[2].testbench).toMatch(/Phase 4e: replay of round 2's random segment/); // rounds count from 1 in the header comments
  });
});
