// Unit tests of the editor's pure modules: project file, per-line coverage, history, chart.
import { describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freeTestbenchPath, inferProject } from '../../../src/extension/project.js';
import {
  findProjectFile,
  looksLikeTestbench,
  projectToDesign,
  readProjectFile,
  validateProject,
  writeProjectFile,
} from '../../../src/core/run/sources.js';
import { coverageByFile } from '../../../src/extension/views/coverageData.js';
import { previousTestbench, RunHistory, runView } from '../../../src/extension/views/history.js';
import { coverageChartSvg, pct } from '../../../webview/protocol.js';
import { parseWebviewMessage } from '../../../src/extension/views/webviewHost.js';
import { roundRecord } from '../../../src/extension/worker/protocol.js';
import type { CoveragePoint } from '../../../src/core/coverage/model.js';
import { scratchDir } from '../../helpers.js';

const tmp = (): string => scratchDir('chorus-ext-');

describe('project file', () => {
  it('infers the design sources of a folder, leaving testbenches out', () => {
    const d = tmp();
    writeFileSync(join(d, 'counter.sv'), 'module counter(input clk); endmodule');
    writeFileSync(join(d, 'tb_counter.sv'), 'module tb_counter; endmodule');
    writeFileSync(join(d, 'harness.sv'), 'module harness;\n counter c(.clk()); endmodule');
    writeFileSync(join(d, 'notes.txt'), '');
    mkdirSync(join(d, 'include'));
    expect(inferProject(d)).toEqual({ files: ['counter.sv'], includeDirs: ['include'] });
  });
  it('prefers files.f when the folder has one', () => {
    const d = tmp();
    writeFileSync(join(d, 'files.f'), 'a.sv\n');
    writeFileSync(join(d, 'a.sv'), 'module a(input x); endmodule');
    expect(inferProject(d)).toEqual({ files: [], fileLists: ['files.f'] });
  });
  it('tells testbenches by name and by a port-less module', () => {
    expect(looksLikeTestbench('/x/tb_fifo.sv')).toBe(true);
    expect(looksLikeTestbench('/x/fifo_tb.v')).toBe(true);
    expect(looksLikeTestbench('/x/fifo.sv', 'module top_sim;\nendmodule')).toBe(true);
    expect(looksLikeTestbench('/x/fifo.sv', 'module fifo #(parameter W=8) (input clk);\nendmodule')).toBe(false);
  });
  it('finds chorus.json upward, writes and reads it back, and resolves paths against its folder', () => {
    const d = tmp();
    mkdirSync(join(d, 'rtl/sub'), { recursive: true });
    writeProjectFile(join(d, 'rtl/chorus.json'), {
      files: ['a.sv', 'sub/b.sv'],
      includeDirs: ['inc'],
      defines: ['X=1'],
      params: ['W=4'],
      top: 'a',
    });
    const found = findProjectFile(join(d, 'rtl/sub'), d)!;
    expect(found).toBe(join(d, 'rtl/chorus.json'));
    const p = readProjectFile(found);
    expect(projectToDesign(p, join(d, 'rtl'))).toEqual({
      files: [join(d, 'rtl/a.sv'), join(d, 'rtl/sub/b.sv')],
      fileLists: undefined,
      includeDirs: [join(d, 'rtl/inc')],
      defines: ['X=1'],
      params: ['W=4'],
      top: 'a',
      cwd: join(d, 'rtl'),
      discover: true,
    });
    expect(findProjectFile(join(d, 'rtl/sub'), join(d, 'rtl/sub'))).toBeNull();
  });
  it('rejects malformed project files with the reason', () => {
    expect(() => validateProject([])).toThrow(/object/);
    expect(() => validateProject({ files: [] })).toThrow(/at least one/);
    expect(() => validateProject({ files: ['a.sv'], params: ['W'] })).toThrow(/NAME=VALUE/);
    expect(() => validateProject({ files: ['a.sv'], top: 3 })).toThrow(/top/);
  });
  it('never picks an existing testbench name', () => {
    const taken = new Set(['/d/tb_x.sv', '/d/tb_x_1.sv']);
    expect(freeTestbenchPath('/d', 'x', (p) => taken.has(p))).toBe('/d/tb_x_2.sv');
    expect(freeTestbenchPath('/d', 'y', (p) => taken.has(p))).toBe('/d/tb_y.sv');
  });
});

describe('per-line coverage', () => {
  const pt = (o: Partial<CoveragePoint>): CoveragePoint => ({
    type: 'line',
    file: '/d/a.sv',
    line: 1,
    column: 1,
    module: 'a',
    hier: 'tb.uut',
    label: 'block',
    count: 1,
    ...o,
  });
  it('merges instances per line, marks partly covered lines, keeps branch arms and toggles', () => {
    const files = coverageByFile([
      pt({ line: 3, count: 2 }),
      pt({ line: 3, count: 1, hier: 'tb.uut2' }),
      pt({ type: 'branch', line: 5, label: 'if', count: 4 }),
      pt({ type: 'branch', line: 5, column: 2, label: 'else', count: 0 }),
      pt({ line: 9, count: 0 }),
      pt({ type: 'toggle', line: 2, label: 'x[0]', count: 2 }),
      pt({ type: 'toggle', line: 2, label: 'x[1]', count: 1 }),
      pt({ file: '/d/b.sv', line: 1, count: 0 }),
    ]);
    expect(files.map((f) => f.file)).toEqual(['/d/a.sv', '/d/b.sv']);
    const a = files[0];
    expect(a.lines).toEqual([
      { line: 3, count: 3, covered: true, pointsCovered: 2, pointsTotal: 2 },
      { line: 5, count: 4, covered: false, pointsCovered: 1, pointsTotal: 2 },
      { line: 9, count: 0, covered: false, pointsCovered: 0, pointsTotal: 1 },
    ]);
    expect(a.branches.map((b) => [b.line, b.label, b.count])).toEqual([
      [5, 'if', 4],
      [5, 'else', 0],
    ]);
    expect(a.toggles).toEqual({ covered: 1, total: 2 });
    const mark = (line: number) => a.marks.find((m) => m.line === line);
    expect(mark(5)).toMatchObject({ state: 'partial' });
    expect(mark(5)!.hover).toMatch(/partly covered — 1\/2 points hit, 4 hits/);
    expect(mark(5)!.hover).toMatch(/the `else` arm \(line 5\) was never taken/);
    expect(mark(9)).toMatchObject({ state: 'uncovered' });
    // Toggle bits are marked at their declaration, the missing bit named.
    expect(mark(2)).toMatchObject({ state: 'partial' });
    expect(mark(2)!.hover).toMatch(/`x\[1\]` toggled one way only/);
    expect(mark(2)!.hover).not.toMatch(/x\[0\]/);
  });

  it('marks the untaken else where its code is, the body of a block that never ran, and says why', () => {
    const files = coverageByFile(
      [
        pt({ type: 'branch', line: 10, label: 'if', count: 3, span: [11, 12] }),
        pt({ type: 'branch', line: 10, column: 2, label: 'else', count: 0, span: [13, 16] }),
        pt({ line: 10, label: 'else', count: 0, span: [13, 16] }),
        pt({ type: 'toggle', line: 4, label: 'mode[2]', count: 0 }),
      ],
      [
        { type: 'branch', file: '/d/a.sv', line: 10, label: 'else', hier: 'tb.uut', count: 0, reason: { kind: 'not-hit', detail: 'x' } },
        {
          type: 'toggle',
          file: '/d/a.sv',
          line: 4,
          label: 'mode[2]',
          hier: 'tb.uut',
          count: 0,
          reason: { kind: 'dead-param', detail: 'WIDTH is 2', enable: '-G WIDTH=4' },
        },
      ],
    );
    const marks = files[0].marks;
    const at = (n: number) => marks.find((m) => m.line === n);
    expect(at(13)).toMatchObject({ state: 'uncovered' });
    expect(at(13)!.hover).toMatch(/the `else` arm \(line 10\) was never taken — not reached by the stimulus/);
    for (const n of [14, 15, 16]) expect(at(n), `line ${n}`).toMatchObject({ state: 'uncovered' });
    expect(at(14)!.hover).toMatch(/inside the `else at line 13` block, which never ran/);
    expect(at(11)).toMatchObject({ state: 'covered' });
    expect(at(4)!.hover).toMatch(/`mode\[2\]` never toggled — parameter-dead \(enable with `-G WIDTH=4`\): WIDTH is 2/);
  });

  it('marks a line whose misses the formal engine explains apart: proven, witness found, not reached in N cycles', () => {
    const u = (line: number, kind: 'unreachable-formal' | 'witness' | 'bounded' | 'not-hit', label = 'case') => ({
      type: 'line' as const,
      file: '/d/a.sv',
      line,
      label,
      hier: 'tb.uut',
      count: 0,
      reason: { kind, detail: `${kind} detail` },
    });
    const files = coverageByFile(
      [20, 21, 22, 23, 24].flatMap((line) => [pt({ line, label: 'case', count: 0 })]).concat([pt({ line: 24, label: 'if', count: 0 })]),
      [u(20, 'unreachable-formal'), u(21, 'witness'), u(22, 'bounded'), u(23, 'not-hit'), u(24, 'witness'), u(24, 'not-hit', 'if')],
    );
    const at = (n: number) => files[0].marks.find((m) => m.line === n)!;
    expect(at(20).formal).toBe('unreachable');
    expect(at(21).formal).toBe('witness');
    expect(at(22).formal).toBe('bounded');
    // A plain miss on the line keeps it a plain miss.
    expect(at(23).formal).toBeUndefined();
    expect(at(24).formal).toBeUndefined();
    expect(at(22).hover).toMatch(/not reached in a bounded search \(not proven\): bounded detail/);
    for (const n of [20, 21, 22, 23]) expect(at(n).state).toBe('uncovered');
  });
});

describe('history and dashboard data', () => {
  it('keeps runs newest first, with views and the previous testbench of a round', () => {
    const store = new Map<string, unknown>();
    const memento = {
      get: <T>(k: string) => store.get(k) as T,
      update: async (k: string, v: unknown) => void store.set(k, v),
      keys: () => [...store.keys()],
    };
    const h = new RunHistory(memento as never);
    let changes = 0;
    h.onChange(() => changes++);
    const run = h.start({
      kind: 'generate',
      top: 'counter',
      model: 'model-free generator',
      simulator: 'verilator',
      testbenchPath: null,
      designDir: '/d',
    });
    h.addRound(run, roundRecord(0, 0, 'module a; endmodule', null));
    h.addRound(run, roundRecord(0, 1, 'module b;\nendmodule', null));
    h.update(run, { best: 1, state: 'done' });
    expect(changes).toBe(4);
    expect(previousTestbench(run, 1)).toBe('module a; endmodule');
    expect(previousTestbench(run, 0)).toBeNull();
    const v = runView(h.all()[0]);
    expect(v.rounds.map((r) => [r.status, r.lines, r.hasTestbench])).toEqual([
      ['unparsable', 1, true],
      ['unparsable', 2, true],
    ]);
    // Survives a reload.
    expect(new RunHistory(memento as never).all()[0].id).toBe(run.id);
  });
  it('draws a chart with one point per round and marks failed rounds', () => {
    const svg = coverageChartSvg([0.5, null, 0.9]);
    expect(svg.match(/<circle/g)).toHaveLength(2);
    expect(svg).toContain('class="fail"');
    expect(svg).toContain('round 3: 90.0%');
    expect(pct(null)).toBe('n/a');
  });
  it('accepts only known webview messages', () => {
    expect(parseWebviewMessage({ type: 'openLocation', data: { file: '/a', line: 3 } }).ok).toBe(true);
    expect(parseWebviewMessage({ type: 'rm -rf' }).ok).toBe(false);
    expect(parseWebviewMessage(null).ok).toBe(false);
  });
});
