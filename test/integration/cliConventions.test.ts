// The command line as verification engineers expect it (issue 27), run as a user runs it: help
// agreeing both ways, one-line usage errors, Verilator's spellings of the design options, the
// --verilator-arg allowlist, a wrong --top or -G answered with what exists, VHDL refused by name.
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { examples, repoRoot, scratchDir } from '../helpers.js';

const cli = join(repoRoot, 'dist', 'cli.js');
const counter = join(examples, 'counter', 'counter.sv');
const tb = join(examples, 'counter', 'tb_counter_weak.sv');
const run = (args: string[], cwd = repoRoot) => execa(process.execPath, [cli, ...args], { cwd, reject: false });

describe('chorus help and usage errors', () => {
  it('chorus help <command> is chorus <command> --help', async () => {
    for (const cmd of ['generate', 'refine', 'sim', 'eval', 'serve']) {
      const [a, b] = await Promise.all([run(['help', cmd]), run([cmd, '--help'])]);
      expect(a.exitCode).toBe(0);
      expect(a.stdout).toBe(b.stdout);
    }
    expect((await run(['help', 'generate'])).stdout).toContain('--warm-start');
  });

  it('an unknown option or command is one line with a suggestion, exit 2', async () => {
    const g = await run(['generate', '--warm', counter]);
    expect(g.exitCode).toBe(2);
    expect(g.stderr).toBe(
      "chorus generate: unknown option '--warm'; did you mean --warm-start? (chorus generate --help lists the options)",
    );
    const c = await run(['genrate']);
    expect(c.exitCode).toBe(2);
    expect(c.stderr.trim().split('\n')).toHaveLength(1);
    expect(c.stderr).toMatch(/did you mean generate\?/);
  });

  it('ranges are checked before anything runs', async () => {
    for (const [args, msg] of [
      [['--target', '150'], "--target must be a number from 0 to 100, got '150'"],
      [['--rounds', '-1'], "--rounds must be a whole number >= 0, got '-1'"],
      [['--samples', '0'], "--samples must be a whole number >= 1, got '0'"],
      [['--timeout', '0'], "--timeout must be a number > 0, got '0'"],
    ] as const) {
      const r = await run(['generate', counter, ...args]);
      expect(r.exitCode).toBe(2);
      expect(r.stderr).toBe(`chorus generate: ${msg}`);
    }
  });
});

describe("Verilator's conventions on the command line", () => {
  it('+incdir+, -y with +libext+, -F and --verilator-arg reach the build', async () => {
    const dir = scratchDir('chorus-vconv-');
    mkdirSync(join(dir, 'inc'));
    mkdirSync(join(dir, 'lib'));
    mkdirSync(join(dir, 'lists'));
    writeFileSync(join(dir, 'inc', 'defs.svh'), '`define INV(x) (~(x))\n');
    writeFileSync(
      join(dir, 'lib', 'inv.sv'),
      '`include "defs.svh"\nmodule inv(input logic a, output logic y); assign y = `INV(a); endmodule\n',
    );
    writeFileSync(join(dir, 'lib', 'broken.txt'), 'not verilog');
    writeFileSync(join(dir, 'top.sv'), 'module top(input logic a, output logic y); inv u(.a(a), .y(y)); endmodule\n');
    writeFileSync(join(dir, 'tb.sv'), 'module tb; logic a = 0, y; top uut(.*); initial begin #1 a = 1; #1 $finish; end endmodule\n');
    const ok = await run(
      [
        'sim',
        '--tb',
        'tb.sv',
        'top.sv',
        '+incdir+inc',
        '-y',
        'lib',
        '+libext+.sv',
        '--verilator-arg',
        '-Wno-WIDTH',
        '--verilator-arg',
        '--x-assign',
        '--verilator-arg',
        'fast',
        '--no-search',
      ],
      dir,
    );
    expect(ok.stderr).toBe('');
    expect(ok.exitCode).toBe(0);
    // -F: the list's paths are relative to the list's own folder.
    writeFileSync(join(dir, 'lists', 'design.f'), '+incdir+../inc\n-y ../lib\n-Wno-UNUSED\n../top.sv\n');
    const listed = await run(['sim', '--tb', join(dir, 'tb.sv'), '-F', join(dir, 'lists', 'design.f'), '--no-search'], repoRoot);
    expect(listed.exitCode).toBe(0);
  });

  it('refuses a Verilator option that writes files or runs programs, saying why', async () => {
    for (const [arg, why] of [
      ['--Mdir', 'it writes files'],
      ['-LDFLAGS', 'it runs programs'],
      ['--exe', 'it runs programs'],
    ]) {
      const r = await run(['sim', '--tb', tb, counter, `--verilator-arg=${arg}`]);
      expect(r.exitCode).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`^chorus sim: --verilator-arg '${arg}' is refused: ${why}`));
    }
  });
});

describe('a design that is not what was typed', () => {
  it('--top that does not exist lists the modules there, with a suggestion', async () => {
    const r = await run(['sim', '--tb', tb, counter, '--top', 'countr']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/top module 'countr' is not declared in the design files; did you mean counter\? \(modules there: counter\)/);
  });

  it('-G for a parameter the top does not have lists its parameters (not a syntax error)', async () => {
    const r = await run(['sim', '--tb', tb, counter, '-G', 'WIDHT=4']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(
      /design error \(unknown-param\): -G WIDHT: not a parameter of the top module counter \(did you mean WIDTH\?\); its parameters: WIDTH/,
    );
    expect(r.stderr).not.toMatch(/syntax/);
  });

  it('a VHDL file is refused by name with what to do', async () => {
    const dir = scratchDir('chorus-vhdl-');
    copyFileSync(counter, join(dir, 'counter.sv'));
    writeFileSync(join(dir, 'glue.vhd'), 'library ieee;\nuse ieee.std_logic_1164.all;\nentity glue is\nend glue;\n');
    const r = await run(['sim', '--tb', tb, 'counter.sv', 'glue.vhd'], dir);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/^chorus sim: design error \(not-verilog\): glue\.vhd is VHDL \(by its extension\)/);
  });
});
