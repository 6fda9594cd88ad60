// Design introspection on real Verilator: the design shapes users bring, and the DUT errors.
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { loadDesign } from '../../src/core/run/design.js';
import { DesignError } from '../../src/core/design/errors.js';
import { examples, fixtures, sim } from '../helpers.js';

const d = join(fixtures, 'designs');

async function designError(p: Promise<unknown>): Promise<DesignError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(DesignError);
    return e as DesignError;
  }
  throw new Error('expected a DesignError');
}

describe('introspection', () => {
  it('reads ports and parameters of the counter', async () => {
    const { info } = await loadDesign({ files: [join(examples, 'counter', 'counter.sv')] });
    expect(info.top).toBe('counter');
    expect(info.topCandidates).toEqual(['counter']);
    const m = info.modules.find((x) => x.name === 'counter')!;
    expect(m.ports.map((p) => `${p.direction} ${p.name}:${p.width}`)).toEqual([
      'input clk:1',
      'input rst_n:1',
      'input en:1',
      'input load:1',
      'input up:1',
      'input din:8',
      'output count:8',
      'output wrap:1',
    ]);
    expect(m.params).toEqual([{ name: 'WIDTH', value: "32'sh8", isType: false, local: false }]);
  });

  it('orders packages first and reads struct, enum, unpacked, packed-2D and type-parameter ports', async () => {
    // Given in the wrong order on purpose: the user of the package first.
    const { info, design } = await loadDesign({ files: [join(d, 'pkg', 'arb.sv'), join(d, 'pkg', 'bus_pkg.sv')] });
    expect(design.files.map((f) => f.split('/').pop())).toEqual(['bus_pkg.sv', 'arb.sv']);
    expect(info.top).toBe('arb');
    const ports = Object.fromEntries(info.modules.find((m) => m.name === 'arb')!.ports.map((p) => [p.name, p]));
    expect(ports.req).toMatchObject({ direction: 'input', kind: 'struct', width: 26, unpackedDims: [[0, 1]] });
    expect(ports.req.members).toEqual([
      { name: 'op', width: 2 },
      { name: 'addr', width: 8 },
      { name: 'data', width: 16 },
    ]);
    expect(ports.last_op).toMatchObject({ direction: 'output', width: 2 });
    expect(ports.tag).toMatchObject({ width: 4 });
    expect(ports.gnt).toMatchObject({
      width: 8,
      packedDims: [
        [1, 0],
        [3, 0],
      ],
    });
    expect(ports.clk_a.width).toBe(1);
    expect(ports.clk_b.width).toBe(1);
    const params = info.modules.find((m) => m.name === 'arb')!.params;
    expect(params.find((p) => p.name === 'N')).toMatchObject({ value: "32'sh2", isType: false });
  });

  it('parameter overrides reach the elaborated DUT', async () => {
    const { info } = await loadDesign({ files: [join(examples, 'counter', 'counter.sv')], params: ['WIDTH=12'] });
    const m = info.modules.find((x) => x.name === 'counter')!;
    expect(m.ports.find((p) => p.name === 'din')!.width).toBe(12);
  });

  it('EDA file lists: +incdir+, +define+, -v library files', async () => {
    const { info, design } = await loadDesign({ files: [], fileLists: [join(d, 'filelist', 'files.f')], cwd: join(d, 'filelist') });
    expect(info.top).toBe('fl_top');
    expect(design.defines).toEqual({ USE_INV: null });
    expect(design.libraryFiles.map((f) => f.split('/').pop())).toEqual(['inv.v']);
    const top = info.modules.find((m) => m.name === 'fl_top')!;
    expect(top.ports.find((p) => p.name === 'd')!.width).toBe(4); // `DATA_W from the include dir
    expect(top.instantiates).toEqual(['inv']); // USE_INV took effect
  });

  it('simulates a design given by file list with packages and includes', async () => {
    const { info, design } = await loadDesign({ files: [], fileLists: [join(d, 'filelist', 'files.f')], cwd: join(d, 'filelist') });
    const tb =
      "module tb; logic [3:0] d; wire [3:0] q; wire n;\n  fl_top uut(.d(d), .q(q), .n(n));\n  initial begin d = 0; #1 d = 4'hf; #1 d = 0; #1 $finish; end\nendmodule\n";
    const r = await sim.simulate({ design, top: info.top, testbench: { name: 'tb.sv', content: tb } });
    expect(r.status).toBe('success');
    expect(r.coverage!.waived.toggle).toBeGreaterThan(0.5);
  });
});

describe('DUT errors', () => {
  it('several top candidates: names them and asks for --top', async () => {
    const e = await designError(loadDesign({ files: [join(d, 'multitop', 'two_tops.v')] }));
    expect(e.kind).toBe('multiple-tops');
    expect(e.candidates.sort()).toEqual(['alpha', 'beta']);
    expect(e.message).toMatch(/--top/);
    const ok = await loadDesign({ files: [join(d, 'multitop', 'two_tops.v')], top: 'beta' });
    expect(ok.info.top).toBe('beta');
  });

  it('an unknown --top is a DUT error naming the module', async () => {
    const e = await designError(loadDesign({ files: [join(examples, 'counter', 'counter.sv')], top: 'countr' }));
    expect(e.kind).toBe('unknown-top');
    expect(e.message).toMatch(/countr/);
  });

  it('a missing file is named', async () => {
    const e = await designError(loadDesign({ files: [join(d, 'does_not_exist.sv')] }));
    expect(e.kind).toBe('missing-file');
    expect(e.message).toMatch(/does_not_exist\.sv/);
  });

  it('a syntax error in the DUT is a DUT error with its position', async () => {
    const e = await designError(loadDesign({ files: [join(d, 'syntax_err.sv')] }));
    expect(e.kind).toBe('syntax');
    expect(e.message).toMatch(/DUT error/);
    expect(e.diagnostics[0]).toMatchObject({ origin: 'dut', line: 2, file: join(d, 'syntax_err.sv') });
  });

  it('a design with delays is read with --timing, said in one note, and simulates; --no-timing still wins', async () => {
    const files = [join(fixtures, 'timing', 'delays.sv')];
    const { design, info, notes } = await loadDesign({ files, top: 'delays' });
    expect(info.top).toBe('delays');
    // Verilator 5.006 refuses delays without --timing/--no-timing; later releases (5.48) read them
    // as they are. Either way the design is read, and --timing is added (with one note) only when
    // the installed Verilator asked for it.
    const timingNotes = notes.filter((n) => /delays or event controls: read with --timing/.test(n));
    if (timingNotes.length > 0) {
      expect(timingNotes).toHaveLength(1);
      expect(design.verilatorArgs).toEqual(['--timing']);
    } else {
      expect(design.verilatorArgs ?? []).not.toContain('--timing');
    }
    const tb =
      '`timescale 1ns/1ps\nmodule tb_delays;\n  logic clk = 0, a = 0, y;\n  delays uut (.*);\n  always #5 clk = ~clk;\n  initial begin repeat (4) begin @(negedge clk) a = ~a; end #20 $finish; end\nendmodule\n';
    const r = await sim.simulate({ design, top: info.top, testbench: { name: 'tb_delays.sv', content: tb } });
    expect(r.status, r.err_msg).toBe('success');
    // The user's own choice is never overridden.
    const err = await loadDesign({ files, top: 'delays', verilatorArgs: ['--no-timing'] }).then(
      (d) => d,
      (e: unknown) => e,
    );
    if (!(err instanceof DesignError)) {
      expect((err as { design: { verilatorArgs: string[] } }).design.verilatorArgs).toEqual(['--no-timing']);
      expect((err as { notes: string[] }).notes.join('\n')).not.toMatch(/read with --timing/);
    }
  });

  it('a package nobody declares is named', async () => {
    const e = await designError(loadDesign({ files: [join(d, 'pkg', 'arb.sv')] }));
    expect(e.kind).toBe('missing-package');
    expect(e.message).toMatch(/bus_pkg/);
  });
});
