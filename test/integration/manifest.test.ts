// FuseSoC cores and Bender packages read by the real tools, on our own small manifest (a top that
// pulls in two cores and one package: test/fixtures/designs/manifest), then simulated by real
// Verilator. The tools come from scripts/install-manifest-tools.sh (or PATH / CHORUS_FUSESOC /
// CHORUS_BENDER). In CI a missing tool is a failure, not a skip; locally these tests skip.
import { cacheRoot } from '../../src/core/util/cache.js';
import { describe, expect, it } from 'vitest';
import { accessSync, constants, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { delimiter, join, relative } from 'node:path';
import { loadDesign } from '../../src/core/run/design.js';
import { DesignError } from '../../src/core/design/errors.js';
import { fixtures, scratchDir, sim } from '../helpers.js';

const CI = process.env.CI === 'true' || process.env.CI === '1';

/** The tool for the engine: $CHORUS_X, PATH, or the project's cache (exported to the engine). */
function locate(exe: 'fusesoc' | 'bender', env: string): string | null {
  const ok = (p: string): boolean => {
    try {
      accessSync(p, constants.X_OK);
      return statSync(p).isFile();
    } catch {
      return false;
    }
  };
  if (process.env[env] && ok(process.env[env] as string)) return process.env[env] as string;
  for (const d of (process.env.PATH ?? '').split(delimiter)) if (d && ok(join(d, exe))) return join(d, exe);
  const cached = join(cacheRoot(), 'manifest-tools', 'bin', exe);
  if (ok(cached)) {
    process.env[env] = cached;
    return cached;
  }
  return null;
}

const fusesoc = locate('fusesoc', 'CHORUS_FUSESOC');
const bender = locate('bender', 'CHORUS_BENDER');

/** A copy of the fixture marked as a repository root, so the default cores root is the copy. */
function manifestRepo(): string {
  const d = join(scratchDir('chorus-manifest-'), 'ip');
  cpSync(join(fixtures, 'designs', 'manifest'), d, { recursive: true });
  mkdirSync(join(d, '.git'));
  return d;
}

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

// Counts by FX_STEP while mode is FX_COUNT; total = count + offset (WIDTH bits each). The testbench
// sets WIDTH itself (a flat build applies no -G); introspection shows the manifest's parameter.
const tb = (w: number): string => `module tb;
  localparam int W = ${w};
  logic clk = 0, rst_n = 0;
  fx_pkg::fx_mode_t mode = fx_pkg::FX_IDLE;
  logic [W-1:0] offset = 1;
  logic [W:0] total;
  fx_top #(.WIDTH(W)) uut (.clk, .rst_n, .mode, .offset, .total);
  always #5 clk = ~clk;
  initial begin
    repeat (2) @(negedge clk);
    rst_n = 1;
    mode = fx_pkg::FX_COUNT;
    repeat (3) @(negedge clk);
    mode = fx_pkg::FX_HOLD;
    $display("W=%0d total=%0d", W, total);
    $finish;
  end
endmodule
`;

describe('FuseSoC', () => {
  it.runIf(!fusesoc && CI)('is installed in CI', () => {
    throw new Error(
      'fusesoc not found (CHORUS_FUSESOC, PATH, <chorus cache>/manifest-tools): run scripts/install-manifest-tools.sh before the tests',
    );
  });

  it.runIf(fusesoc)('asks FuseSoC for the core: files of both cores and the package, include folder, define, parameter, top', async () => {
    const r = manifestRepo();
    const before = snapshot(r);
    const { design, info, notes } = await loadDesign({
      files: [join(r, 'fx_top', 'fx_top.core')],
      manifest: { path: join(r, 'fx_top', 'fx_top.core'), target: 'sim' },
      cwd: r,
    });
    expect(design.files.map((f) => relative(r, f))).toEqual([
      'fx_pkg/fx_pkg.sv',
      'fx_adder/fx_adder.sv',
      'fx_counter/rtl/fx_counter.sv',
      'fx_top/rtl/fx_top.sv',
    ]);
    expect(design.includeDirs).toEqual([join(r, 'fx_counter', 'include')]);
    expect(design.defines).toEqual({ FX_STEP: '2' });
    expect(design.params).toEqual({ WIDTH: '6' });
    expect(info.top).toBe('fx_top');
    expect(info.modules.find((m) => m.name === 'fx_top')?.ports.find((p) => p.name === 'offset')?.width).toBe(6);
    expect(notes[0]).toMatch(
      /^FuseSoC core chorus:fx:top:1\.0, target sim: 4 files, 1 include folders, 1 defines, 1 parameters, top fx_top/,
    );
    const res = await sim.simulate({ design, top: info.top, testbench: { name: 'tb.sv', content: tb(6) } });
    expect(res.status, JSON.stringify(res.diagnostics)).toBe('success');
    // Three counting edges at FX_STEP=2 from the manifest (the header's default is 1), plus offset 1.
    expect(res.log).toContain('W=6 total=7');
    expect(snapshot(r)).toEqual(before);
  });

  it.runIf(fusesoc)('a folder holding the core is read through it; the command line overrides its parameter', async () => {
    const r = manifestRepo();
    rmSync(join(r, 'fx_top', 'Bender.yml'));
    const { design, info, notes } = await loadDesign({
      files: [join(r, 'fx_top')],
      params: ['WIDTH=3'],
      manifest: { path: join(r, 'fx_top'), target: 'sim', coresRoots: [r] },
      cwd: r,
    });
    expect(notes[0]).toBe('fx_top: read through its manifest fx_top/fx_top.core');
    expect(design.params).toEqual({ WIDTH: '3' });
    expect(info.modules.find((m) => m.name === 'fx_top')?.ports.find((p) => p.name === 'offset')?.width).toBe(3);
  });

  it.runIf(fusesoc)('a library core (a target without toplevel) is read through a scratch wrapper, the top from --top', async () => {
    const r = manifestRepo();
    const before = snapshot(r);
    const { design, info, notes } = await loadDesign({ files: [join(r, 'fx_counter', 'fx_counter.core')], top: 'fx_counter', cwd: r });
    expect(design.files.map((f) => relative(r, f))).toEqual(['fx_pkg/fx_pkg.sv', 'fx_counter/rtl/fx_counter.sv']);
    expect(design.includeDirs).toEqual([join(r, 'fx_counter', 'include')]);
    expect(info.top).toBe('fx_counter');
    expect(notes[1]).toMatch(/^core chorus:fx:counter:1\.0, target default names no toplevel: read as a library .*top fx_counter/);
    expect(snapshot(r)).toEqual(before);
  });

  it.runIf(fusesoc)('a module no listed file declares: names the manifest and its dependencies', async () => {
    const r = manifestRepo();
    writeFileSync(
      join(r, 'fx_adder', 'fx_adder.sv'),
      'module fx_adder #(parameter int WIDTH = 8) (input logic [WIDTH-1:0] a, b, output logic [WIDTH:0] sum);\n  fx_carry u (.a, .b, .sum);\nendmodule\n',
    );
    const e = await designError(loadDesign({ files: [], manifest: { path: join(r, 'fx_top', 'fx_top.core'), target: 'sim' }, cwd: r }));
    expect(e.message).toContain("No file FuseSoC listed for fx_top/fx_top.core declares module fx_carry: check the manifest's `depend`");
  });

  it.runIf(fusesoc)('an unknown target names what was tried and how to list the targets', async () => {
    const r = manifestRepo();
    const e = await designError(loadDesign({ files: [], manifest: { path: join(r, 'fx_top', 'fx_top.core'), target: 'nope' }, cwd: r }));
    expect(e.kind).toBe('manifest');
    expect(e.message).toContain('FuseSoC could not set up core chorus:fx:top:1.0, target nope');
    expect(e.message).toContain('tried: fusesoc --cores-root');
    expect(e.message).toMatch(/Next: /);
  });

  it.runIf(fusesoc)('an unknown core names the core and where cores were searched', async () => {
    const r = manifestRepo();
    const e = await designError(
      loadDesign({ files: [], manifest: { path: join(r, 'fx_top', 'fx_top.core'), core: 'chorus:fx:missing' }, cwd: r }),
    );
    expect(e.kind).toBe('manifest');
    expect(e.message).toContain('chorus:fx:missing');
    expect(e.message).toMatch(/Next: /);
  });
});

describe('Bender', () => {
  it.runIf(!bender && CI)('is installed in CI', () => {
    throw new Error(
      'bender not found (CHORUS_BENDER, PATH, <chorus cache>/manifest-tools): run scripts/install-manifest-tools.sh before the tests',
    );
  });

  it.runIf(bender)('asks Bender for the package: files of both dependencies and the package, exported include folder, define', async () => {
    const r = manifestRepo();
    const before = snapshot(r);
    const { design, info, notes } = await loadDesign({ files: [join(r, 'fx_top', 'Bender.yml')], cwd: r });
    expect(design.files.map((f) => relative(r, f))).toEqual([
      'fx_pkg/fx_pkg.sv',
      'fx_adder/fx_adder.sv',
      'fx_counter/rtl/fx_counter.sv',
      'fx_top/rtl/fx_top.sv',
    ]);
    expect(design.includeDirs).toEqual([join(r, 'fx_counter', 'include')]);
    expect(design.defines.FX_STEP).toBe('2');
    expect(info.top).toBe('fx_top');
    expect(notes[0]).toMatch(/^Bender package .*fx_top: 4 files, 1 include folders/);
    const res = await sim.simulate({ design, top: info.top, testbench: { name: 'tb.sv', content: tb(4) } });
    expect(res.status, JSON.stringify(res.diagnostics)).toBe('success');
    expect(res.log).toContain('W=4 total=7');
    expect(snapshot(r)).toEqual(before);
  });

  it.runIf(bender)('git dependencies not checked out: names `bender checkout`, fetches and writes nothing', async () => {
    const r = manifestRepo();
    const lock = join(r, 'fx_top', 'Bender.lock');
    writeFileSync(lock, readFileSync(lock, 'utf8').replace('Path: ../fx_adder', 'Git: https://example.invalid/fx_adder.git'));
    const before = snapshot(r);
    const e = await designError(loadDesign({ files: [join(r, 'fx_top', 'Bender.yml')], cwd: r }));
    expect(e.kind).toBe('manifest');
    expect(e.message).toContain('the dependencies fx_adder come from git and are not checked out');
    expect(e.message).toContain('Run `bender checkout` in');
    expect(snapshot(r)).toEqual(before);
  });

  it.runIf(bender)('without Bender.lock: names `bender update` and writes nothing', async () => {
    const r = manifestRepo();
    rmSync(join(r, 'fx_top', 'Bender.lock'));
    const before = snapshot(r);
    const e = await designError(loadDesign({ files: [join(r, 'fx_top', 'Bender.yml')], cwd: r }));
    expect(e.kind).toBe('manifest');
    expect(e.message).toContain('Run `bender update` in');
    expect(snapshot(r)).toEqual(before);
    expect(existsSync(join(r, 'fx_top', 'Bender.lock'))).toBe(false);
  });
});
