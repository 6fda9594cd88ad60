// Designs as they live in repositories, on real Verilator: a folder as input, and includes,
// packages and modules found in the design's repository when nobody named them.
import { describe, expect, it } from 'vitest';
import { cpSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { loadDesign } from '../../src/core/run/design.js';
import { DesignError } from '../../src/core/design/errors.js';
import { fixtures, scratchDir, sim } from '../helpers.js';

/** A copy of the common_cells-like fixture marked as a repository root. */
function repo(): string {
  const d = join(scratchDir('chorus-repo-'), 'common');
  cpSync(join(fixtures, 'designs', 'repo_like'), d, { recursive: true });
  mkdirSync(join(d, '.git'));
  return d;
}

/** Every path under a folder with its size and time: to show that nothing was written there. */
function snapshot(dir: string): string[] {
  const out: string[] = [];
  const walk = (p: string): void => {
    for (const e of readdirSync(p).sort()) {
      const q = join(p, e);
      const s = statSync(q);
      out.push(`${relative(dir, q)} ${s.size} ${s.mtimeMs}`);
      if (s.isDirectory()) walk(q);
    }
  };
  walk(dir);
  return out;
}

async function designError(p: Promise<unknown>): Promise<DesignError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(DesignError);
    return e as DesignError;
  }
  throw new Error('expected a DesignError');
}

describe('a folder as input', () => {
  it('collects its sources, leaves testbenches and verification folders out (and says so), packages first', async () => {
    const r = repo();
    const before = snapshot(r);
    const { design, info, notes } = await loadDesign({ files: [join(r, 'src')], cwd: r, discover: true });
    expect(info.top).toBe('cc_fifo');
    expect(design.files.map((f) => relative(r, f))).toEqual(['src/cc_pkg.sv', 'src/cc_fifo.sv', 'src/cc_mem.sv']);
    expect(notes.join('\n')).toContain('cc_fifo_tb.sv (testbench by its name)');
    // The include one folder up was found in the repository and added once.
    expect(design.includeDirs).toContain(join(r, 'include'));
    expect(notes).toContain('cc/assertions.svh: found at include/cc/assertions.svh; added -I include');
    expect(snapshot(r)).toEqual(before);
  });

  it('a module only a left-out folder defines is taken from there as a library file, and the note names it', async () => {
    const dir = scratchDir('chorus-folder-lib-');
    cpSync(join(fixtures, 'folder-lib'), dir, { recursive: true });
    const { design, info, notes } = await loadDesign({ files: [join(dir, 'rtl')], cwd: dir, discover: true });
    // No --top needed: the library's other module (other_cell) is not a top candidate.
    expect(info.top).toBe('edge_det');
    expect(design.files.map((f) => relative(dir, f))).toEqual(['rtl/edge.sv']);
    expect(design.libraryFiles.map((f) => relative(dir, f))).toEqual(['rtl/deprecated/old_cells.sv']);
    expect(notes.join('\n')).toMatch(
      /module clk_gate: found in .*deprecated\/old_cells\.sv \(in rtl\/deprecated\/, a folder left out of the design\); added as a library file \(-v\)/,
    );
    // The broken retired file is never compiled; the design simulates.
    const tb =
      '`timescale 1ns/1ps\nmodule tb_edge_det;\n  logic clk = 0, d = 0, rise;\n  edge_det uut (.*);\n  always #5 clk = ~clk;\n  initial begin repeat (4) @(negedge clk) d = ~d; $finish; end\nendmodule\n';
    const r = await sim.simulate({ design, top: info.top, testbench: { name: 'tb_edge_det.sv', content: tb } });
    expect(r.status, r.err_msg).toBe('success');
  });

  it('the whole repository: test/ and dv/ are listed as left out', async () => {
    const r = repo();
    const { design, notes } = await loadDesign({ files: [r], cwd: r, discover: true });
    expect(design.files.map((f) => relative(r, f)).sort()).toEqual(['src/cc_fifo.sv', 'src/cc_mem.sv', 'src/cc_pkg.sv']);
    const left = notes.find((n) => n.startsWith('left out of'));
    expect(left).toContain('dv/ (verification folder)');
    expect(left).toContain('test/ (verification folder)');
  });

  it('several tops: the error lists them', async () => {
    const r = repo();
    writeFileSync(join(r, 'src', 'other.sv'), 'module other (input logic a, output logic b);\n  assign b = a;\nendmodule\n');
    const e = await designError(loadDesign({ files: [join(r, 'src')], cwd: r, discover: true }));
    expect(e.kind).toBe('multiple-tops');
    expect(e.candidates.sort()).toEqual(['cc_fifo', 'other']);
  });

  it('a folder without sources names what it left out', async () => {
    const r = repo();
    const e = await designError(loadDesign({ files: [join(r, 'test')], cwd: r, discover: true }));
    expect(e.kind).toBe('missing-file');
    expect(e.message).toMatch(/no design sources .*tb_cc_fifo\.sv/);
  });
});

describe('discovery in the repository', () => {
  it('one file: its include, package and submodule are found and reported', async () => {
    const r = repo();
    const before = snapshot(r);
    const { design, info, notes, discovered } = await loadDesign({ files: [join(r, 'src', 'cc_fifo.sv')], cwd: r, discover: true });
    expect(info.top).toBe('cc_fifo');
    expect(notes).toEqual([
      'cc/assertions.svh: found at include/cc/assertions.svh; added -I include',
      'package cc_pkg: found in src/cc_pkg.sv; added src/cc_pkg.sv',
      'module cc_mem: found in src/cc_mem.sv; added src/cc_mem.sv',
    ]);
    expect(discovered).toEqual({ includeDirs: [join(r, 'include')], files: [join(r, 'src/cc_pkg.sv'), join(r, 'src/cc_mem.sv')] });
    expect(design.files[0]).toBe(join(r, 'src/cc_pkg.sv'));
    expect(snapshot(r)).toEqual(before);
  });

  it('an include found twice is not guessed: the error lists both folders', async () => {
    const r = repo();
    mkdirSync(join(r, 'vendor', 'x', 'include', 'cc'), { recursive: true });
    cpSync(join(r, 'include', 'cc', 'assertions.svh'), join(r, 'vendor', 'x', 'include', 'cc', 'assertions.svh'));
    const e = await designError(loadDesign({ files: [join(r, 'src', 'cc_fifo.sv')], cwd: r, discover: true }));
    expect(e.kind).toBe('ambiguous');
    expect(e.message).toContain('`include "cc/assertions.svh"');
    expect(e.candidates).toEqual([join(r, 'include'), join(r, 'vendor/x/include')]);
    expect(e.message).toMatch(/include, vendor\/x\/include\. Choose one with -I/);
  });

  it('an include nowhere in the repository: says what was searched and what to do', async () => {
    const r = repo();
    writeFileSync(join(r, 'src', 'cc_fifo.sv'), '`include "nowhere/defs.svh"\nmodule cc_fifo (input logic a);\nendmodule\n');
    const e = await designError(loadDesign({ files: [join(r, 'src', 'cc_fifo.sv')], cwd: r, discover: true }));
    expect(e.kind).toBe('missing-include');
    expect(e.message).toMatch(/include file nowhere\/defs\.svh was not found: searched .*HDL files under .*common/);
    expect(e.message).toContain('-I <folder>');
  });

  it('with discovery off, the front end reports the missing include as before', async () => {
    const r = repo();
    const e = await designError(
      loadDesign({
        files: [join(r, 'src', 'cc_fifo.sv'), join(r, 'src', 'cc_pkg.sv'), join(r, 'src', 'cc_mem.sv')],
        cwd: r,
        discover: false,
      }),
    );
    expect(e.kind).toBe('missing-include');
    expect(e.message).toContain('cc/assertions.svh');
  });
});
