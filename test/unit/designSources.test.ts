// The parts of "designs as they live in repositories" that need no simulator and no package tool:
// folder collection, include scanning, manifest checks before any tool runs, the tool lookup,
// the project file with a manifest, and the CLI's design arguments (chorus.json, --save-project).
import { describe, expect, it } from 'vitest';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { collectFolder } from '../../src/core/design/folder.js';
import { discover, includesOf, repositoryRoot } from '../../src/core/design/discover.js';
import { checkCapi, coreName, parseVerilatorCommandFile } from '../../src/core/design/manifest/fusesoc.js';
import { findTool } from '../../src/core/design/manifest/tool.js';
import { gitDependencies } from '../../src/core/design/manifest/bender.js';
import { findManifest } from '../../src/core/design/manifest/index.js';
import { DesignError } from '../../src/core/design/errors.js';
import { projectToDesign, validateProject } from '../../src/core/design/project.js';
import { designFromArgs, saveProject } from '../../src/cli/designOptions.js';
import { inferProject } from '../../src/extension/project.js';
import { scratchDir } from '../helpers.js';

function tree(files: Record<string, string>): string {
  const d = scratchDir('chorus-tree-');
  for (const [p, text] of Object.entries(files)) {
    mkdirSync(join(d, p, '..'), { recursive: true });
    writeFileSync(join(d, p), text);
  }
  return d;
}

const MOD = (n: string): string => `module ${n} (input logic a);\nendmodule\n`;

function thrown(f: () => unknown): DesignError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(DesignError);
    return e as DesignError;
  }
  throw new Error('expected a DesignError');
}

describe('collectFolder', () => {
  it('keeps sources, leaves out testbenches by name and content and verification folders, lists both', () => {
    const d = tree({
      'rtl/a.sv': MOD('a'),
      'rtl/sub/b.v': MOD('b'),
      'rtl/tb_a.sv': MOD('tb_a'),
      'rtl/a_tb.sv': MOD('a_tb'),
      'rtl/top_sim.sv': 'module top_sim;\nendmodule\n',
      'rtl/inc/defs.svh': '`define X 1\n',
      'sim/model.sv': MOD('model'),
      'verif/env.sv': MOD('env'),
      'dv/seq.sv': MOD('seq'),
      'test/t.sv': MOD('t'),
      '.hidden/h.sv': MOD('h'),
      'doc/readme.md': 'x',
    });
    const f = collectFolder(d);
    expect(f.files).toEqual([join(d, 'rtl/a.sv'), join(d, 'rtl/sub/b.v')]);
    expect(f.includeDirs).toEqual([join(d, 'rtl/inc')]);
    expect(f.excluded).toEqual([
      { path: 'dv/', reason: 'verification folder' },
      { path: 'rtl/a_tb.sv', reason: 'testbench by its name' },
      { path: 'rtl/tb_a.sv', reason: 'testbench by its name' },
      { path: 'rtl/top_sim.sv', reason: 'a module without ports (a testbench)' },
      { path: 'sim/', reason: 'verification folder' },
      { path: 'test/', reason: 'verification folder' },
      { path: 'verif/', reason: 'verification folder' },
    ]);
  });

  it('a folder too big to be a design says so and what to name instead', () => {
    const d = tree(Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`x${i}.sv`, MOD(`x${i}`)])));
    expect(thrown(() => collectFolder(d, { maxEntries: 10 })).message).toMatch(/more than 10 entries: name the design's own folder/);
  });
});

describe('discovery', () => {
  it('reads `include names, not ones in comments', () => {
    expect(includesOf('`include "a/b.svh"\n// `include "c.svh"\n/* `include "d.svh" */ `include <e.vh>\n')).toEqual(['a/b.svh', 'e.vh']);
  });

  it('stops at the .git root; without one, searches one folder above the files', () => {
    const d = tree({ 'repo/.git/HEAD': '', 'repo/ip/rtl/x.sv': MOD('x') });
    expect(repositoryRoot(join(d, 'repo/ip/rtl'))).toBe(join(d, 'repo'));
    const e = tree({ 'ip/rtl/x.sv': MOD('x') });
    expect(repositoryRoot(join(e, 'ip/rtl'))).toBe(join(e, 'ip'));
  });

  it('follows includes through found headers, and finds a package declared under another file name', () => {
    const d = tree({
      '.git/HEAD': '',
      'rtl/top.sv': '`include "p/one.svh"\nmodule top (input logic a);\n  import regs::*;\nendmodule\n',
      'hdr/p/one.svh': '`include "two.svh"\n',
      'more/two.svh': '`define TWO 2\n',
      'pkgs/all_types.sv': 'package regs;\n  localparam int N = 1;\nendpackage\n',
    });
    const r = discover([join(d, 'rtl/top.sv')], [], { cwd: d });
    expect(r.includeDirs).toEqual([join(d, 'hdr'), join(d, 'more')]);
    expect(r.files).toEqual([join(d, 'pkgs/all_types.sv')]);
    expect(r.notes).toEqual([
      'p/one.svh: found at hdr/p/one.svh; added -I hdr',
      'two.svh: found at more/two.svh; added -I more',
      'package regs: found in pkgs/all_types.sv; added pkgs/all_types.sv',
    ]);
    expect(r.ambiguous).toEqual([]);
  });

  it('a module named only in a macro body is found when the macro is used (through another macro too), not when it is only defined', () => {
    const macros = [
      '`define SPARSE_FLOP(q) \\',
      '  sparse_flop u_sparse ( \\',
      '    .q(q) \\',
      '  );',
      '`define FLOP_ALIAS(q) `SPARSE_FLOP(q)',
      "`define PLAIN(q) assign q = 1'b0;",
      '',
    ].join('\n');
    const d = tree({
      '.git/HEAD': '',
      'inc/flop_macros.sv': macros, // a macro library named .sv, included (as OpenTitan's prim_flop_macros.sv)
      'rtl/sparse_flop.sv': MOD('sparse_flop'),
      'rtl/plain.sv': '`include "flop_macros.sv"\nmodule plain (output logic q);\n  `PLAIN(q)\nendmodule\n',
      'rtl/uses.sv': '`include "flop_macros.sv"\nmodule uses (output logic q);\n  `FLOP_ALIAS(q)\nendmodule\n',
    });
    const plain = discover([join(d, 'rtl/plain.sv')], [join(d, 'inc')], { cwd: d });
    expect(plain.files).toEqual([]);
    expect(plain.notFound).toEqual([]);
    const uses = discover([join(d, 'rtl/uses.sv')], [join(d, 'inc')], { cwd: d });
    expect(uses.files).toEqual([join(d, 'rtl/sparse_flop.sv')]);
  });
});

describe('manifests before the tool runs', () => {
  it('reads the core name; rejects CAPI=1 and INI cores with the way forward', () => {
    expect(coreName('CAPI=2:\n# c\nname: "lowrisc:ibex:ibex_top:0.1"\n')).toBe('lowrisc:ibex:ibex_top:0.1');
    expect(() => checkCapi('CAPI=2:\nname: a:b:c\n', 'x.core')).not.toThrow();
    const e = thrown(() => checkCapi('CAPI=1\n[main]\n', 'old.core'));
    expect(e.kind).toBe('manifest');
    expect(e.message).toMatch(/old\.core: unsupported FuseSoC core format \(CAPI version 1\).*Convert the core to CAPI=2/);
    expect(thrown(() => checkCapi('[main]\ndepend = x\n', 'ini.core')).message).toContain('CAPI version 1 (INI sections)');
  });

  it("parses Edalize's Verilator command file: files, +incdir+, -D, -G, the top; tool options noted", () => {
    const vc =
      '--Mdir .\n--cc\n+incdir+../src/inc\n-CFLAGS -I../src/inc\n../src/p.sv\n../src/t.sv\ntb.cpp\n--top-module t\n--exe\n-Wno-fatal\n\n-GW=6\n-DSTEP=2\n-DFLAG\n';
    const d = parseVerilatorCommandFile(vc, '/w/work');
    expect(d.files).toEqual(['/w/src/p.sv', '/w/src/t.sv']);
    expect(d.includeDirs).toEqual(['/w/src/inc']);
    expect(d.defines).toEqual({ STEP: '2', FLAG: null });
    expect(d.params).toEqual({ W: '6' });
    expect(d.top).toBe('t');
    expect(d.notes).toEqual([
      "FuseSoC's Verilator options not used by CHORUS: -Wno-fatal",
      'C/C++ files of the core ignored (CHORUS builds its own harness): tb.cpp',
    ]);
  });

  it('a missing tool is named with how to install it; a bad CHORUS_<TOOL> is named too', () => {
    const save = { ...process.env };
    try {
      process.env.PATH = scratchDir('chorus-nopath-');
      delete process.env.CHORUS_BENDER;
      const e = thrown(() => findTool('bender', '/ip/Bender.yml'));
      expect(e.kind).toBe('tool-missing');
      expect(e.message).toContain(
        '/ip/Bender.yml is a Bender manifest; reading it needs bender, which was not found (looked at $CHORUS_BENDER, then bender on PATH)',
      );
      expect(e.message).toContain('`cargo install bender`');
      process.env.CHORUS_FUSESOC = '/nonexistent/fusesoc';
      expect(thrown(() => findTool('fusesoc', '/ip/x.core')).message).toMatch(
        /CHORUS_FUSESOC=\/nonexistent\/fusesoc is not an executable file/,
      );
      const bin = join(scratchDir('chorus-bin-'), 'fusesoc');
      writeFileSync(bin, '#!/bin/sh\n');
      chmodSync(bin, 0o755);
      process.env.CHORUS_FUSESOC = bin;
      expect(findTool('fusesoc', '/ip/x.core')).toBe(bin);
    } finally {
      process.env = save;
    }
  });

  it('reads which packages a Bender.lock takes from git', () => {
    const lock =
      'packages:\n  a:\n    revision: x\n    source:\n      Git: https://h/a.git\n    dependencies: []\n  b:\n    source:\n      Path: ../b\n  c:\n    source:\n      Git: git@h:c.git\n';
    expect(gitDependencies(lock)).toEqual(['a', 'c']);
  });

  it('a folder with a Bender.yml and a .core reads Bender.yml (the documented order); several .core files ask which one', () => {
    const d = tree({ 'Bender.yml': 'package: {name: x}\n', 'x.core': 'CAPI=2:\nname: a:b:x\n' });
    expect(findManifest(d)).toBe(join(d, 'Bender.yml'));
    expect(findManifest(join(d, 'x.core'))).toBe(join(d, 'x.core'));
    const c = tree({ 'x.core': 'CAPI=2:\nname: a:b:x\n', 'y.core': 'CAPI=2:\nname: a:b:y\n' });
    const e = thrown(() => findManifest(c));
    expect(e.message).toContain(`name the one to read: ${join(c, 'x.core')} or ${join(c, 'y.core')}`);
  });
});

describe('chorus.json with a manifest', () => {
  it('validates and resolves manifest, core, target and cores roots', () => {
    const p = validateProject({ files: [], manifest: 'ip/top.core', core: 'a:b:top', target: 'sim', coresRoots: ['.'] });
    expect(projectToDesign(p, '/proj')).toMatchObject({
      files: [],
      manifest: { path: '/proj/ip/top.core', core: 'a:b:top', target: 'sim', coresRoots: ['/proj'] },
    });
    expect(() => validateProject({ files: ['a.sv'], core: 'a:b:c' })).toThrow(/belong to a "manifest"/);
    expect(() => validateProject({ files: [], manifest: 3 })).toThrow(/"manifest" must be the path/);
  });

  it('the CLI reads ./chorus.json when no design is named, and --save-project records what was found', () => {
    const d = tree({ 'rtl/a.sv': MOD('a'), 'chorus.json': JSON.stringify({ files: ['rtl/a.sv'] }) });
    const c = designFromArgs({}, [], d);
    expect(c.projectPath).toBe(join(d, 'chorus.json'));
    expect(c.options.files).toEqual([join(d, 'rtl/a.sv')]);
    expect(saveProject(c, { top: 'a', discovered: { includeDirs: [join(d, 'include')], files: [] } }, d)).toBe(
      `design settings written to ${join(d, 'chorus.json')}`,
    );
    expect(JSON.parse(readFileSync(join(d, 'chorus.json'), 'utf8'))).toEqual({ files: ['rtl/a.sv'], includeDirs: ['include'], top: 'a' });

    const e = tree({ 'x.sv': MOD('x') });
    expect(() => designFromArgs({}, [], e)).toThrow(/name the design: files, a folder, a manifest .* \(no chorus\.json in/);
    expect(() => designFromArgs({ core: 'a:b:c' }, [join(e, 'x.sv')], e)).toThrow(
      /--core, --manifest-target and --cores-root need a manifest/,
    );
    const m = designFromArgs({ core: 'a:b:c', 'manifest-target': 'sim' }, ['ip/top.core'], e);
    expect(m.options.manifest).toEqual({ path: join(e, 'ip/top.core'), core: 'a:b:c', target: 'sim', coresRoots: undefined });
    expect(m.options.files).toEqual([]);
  });

  it('the editor infers a project from the manifest in a folder (it stands for the files)', () => {
    const d = tree({ 'Bender.yml': 'package: {name: x}\n', 'x.sv': MOD('x') });
    expect(inferProject(d)).toEqual({ files: [], manifest: 'Bender.yml' });
  });

  it('--save-project never overwrites a chorus.json it did not read', () => {
    const d = tree({ 'a.sv': MOD('a'), 'chorus.json': '{"files":["other.sv"]}' });
    const c = designFromArgs({}, [join(d, 'a.sv')], d);
    expect(saveProject(c, { top: 'a', discovered: { includeDirs: [], files: [] } }, d)).toMatch(
      /^design settings not saved: .*chorus\.json exists and was not the project read/,
    );
    expect(readFileSync(join(d, 'chorus.json'), 'utf8')).toBe('{"files":["other.sv"]}');
  });
});
