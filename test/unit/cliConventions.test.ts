// The command line as verification engineers expect it (issue 27): every option in each command's
// help, one-line usage errors with a "did you mean", ranges checked, Verilator's spellings of the
// design options, the --verilator-arg allowlist, inputs that are not Verilog refused by name,
// folder scans that skip vendored and retired code, the status words people read, exit codes.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import * as generate from '../../src/cli/generate.js';
import * as refine from '../../src/cli/refine.js';
import * as sim from '../../src/cli/sim.js';
import * as evalCmd from '../../src/cli/eval.js';
import * as evalCompare from '../../src/cli/evalCompare.js';
import * as serve from '../../src/cli/serve.js';
import { DESIGN_OPTIONS } from '../../src/cli/designOptions.js';
import { exitCodeFor, numberOption, usageMessage, verilatorStyle } from '../../src/cli/command.js';
import { closest } from '../../src/core/util/closest.js';
import { checkVerilatorArgs } from '../../src/core/design/verilatorArgs.js';
import { checkSources, sourceProblem } from '../../src/core/design/prepare.js';
import { collectFolder, describeFolder } from '../../src/core/design/folder.js';
import { findManifest, otherManifests } from '../../src/core/design/manifest/index.js';
import { validateProject } from '../../src/core/design/project.js';
import { DesignError } from '../../src/core/design/errors.js';
import { humanStatus } from '../../src/core/sim/status.js';
import { SIM_STATUSES } from '../../src/core/sim/result.js';
import { scratchDir } from '../helpers.js';

type Table = Record<string, { type: string; short?: string }>;
const COMMANDS: Array<[string, { OPTIONS: object; HELP: string }, boolean]> = [
  ['generate', generate, true],
  ['refine', refine, true],
  ['sim', sim, true],
  ['eval', evalCmd, false],
  ['eval compare', evalCompare, false],
  ['serve', serve, false],
];

describe('help texts', () => {
  it.each(COMMANDS)('chorus %s --help lists every option of its table', (_name, cmd, takesDesign) => {
    const table: Table = { ...(takesDesign ? DESIGN_OPTIONS : {}), ...(cmd.OPTIONS as Table) };
    const missing = Object.keys(table).filter((k) => !new RegExp(`--${k}(?![\\w-])`).test(cmd.HELP));
    expect(missing).toEqual([]);
    for (const [k, o] of Object.entries(table))
      if (o.short) expect(cmd.HELP, `-${o.short} (--${k})`).toMatch(new RegExp(`(^|\\s)-${o.short}\\s`));
  });
});

describe('usage errors', () => {
  const table = { ...DESIGN_OPTIONS, 'warm-start': { type: 'boolean' }, rounds: { type: 'string' } } as const;
  const err = (message: string, code: string) => Object.assign(new Error(message), { code });

  it('an unknown option is one line with the nearest known option', () => {
    const m = usageMessage(
      err(
        "Unknown option '--warm'. To specify a positional argument starting with a '-', place it at the end",
        'ERR_PARSE_ARGS_UNKNOWN_OPTION',
      ),
      ['--warm'],
      table,
      'generate',
    );
    expect(m).toBe("unknown option '--warm'; did you mean --warm-start? (chorus generate --help lists the options)");
    expect(m).not.toContain('\n');
    expect(
      closest(
        '--rouns',
        Object.keys(table).map((k) => `--${k}`),
      ),
    ).toBe('--rounds');
    expect(closest('--zzzzzzzz', ['--top', '--rounds'])).toBeUndefined();
  });

  it('a Verilator option given directly points at --verilator-arg', () => {
    const m = usageMessage(err("Unknown option '-W'.", 'ERR_PARSE_ARGS_UNKNOWN_OPTION'), ['x.sv', '-Wno-WIDTH'], table, 'sim');
    expect(m).toMatch(/^unknown option '-Wno-WIDTH': a Verilator option\? pass it with --verilator-arg -Wno-WIDTH/);
  });

  it('a missing value names the option', () => {
    expect(
      usageMessage(err("Option '--top <value>' argument missing", 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE'), ['--top'], table, 'sim'),
    ).toBe('option --top needs a value (chorus sim --help lists the options)');
  });

  it('numeric options are range-checked with the range in the message', () => {
    expect(() => numberOption('target', '150', 90, 0, { max: 100 })).toThrow("--target must be a number from 0 to 100, got '150'");
    expect(numberOption('target', '100', 90, 0, { max: 100 })).toBe(100);
    expect(() => numberOption('rounds', '-1', 3, 0, { integer: true })).toThrow("--rounds must be a whole number >= 0, got '-1'");
    expect(() => numberOption('rounds', '2.5', 3, 0, { integer: true })).toThrow(/whole number/);
    expect(() => numberOption('samples', '0', 1, 1, { integer: true })).toThrow("--samples must be a whole number >= 1, got '0'");
    expect(() => numberOption('timeout', '0', 60, 0, { above: true })).toThrow("--timeout must be a number > 0, got '0'");
    expect(() => numberOption('timeout', '', 60, 0, { above: true })).toThrow(/> 0/);
    expect(numberOption('timeout', '0.5', 60, 0, { above: true })).toBe(0.5);
  });
});

describe("Verilator's spellings of the design options", () => {
  it('+incdir+, +define+, +libext+ and --verilator-arg become chorus options', () => {
    expect(verilatorStyle(['+incdir+a+b', '+define+X=1+Y', '+libext+.v+.sv', '--verilator-arg', '-Wno-WIDTH', 'f.sv'])).toEqual([
      '-Ia',
      '-Ib',
      '-DX=1',
      '-DY',
      '--libext=.v',
      '--libext=.sv',
      '--verilator-arg=-Wno-WIDTH',
      'f.sv',
    ]);
    expect(verilatorStyle(['--', '+incdir+a'])).toEqual(['--', '+incdir+a']);
  });
});

describe('--verilator-arg allowlist', () => {
  it('lets through options that only change how the design is read, warned about and optimized', () => {
    expect(
      checkVerilatorArgs([
        '-Wno-WIDTH',
        '-Wall',
        '--no-timing',
        '--timing',
        '-O3',
        '--x-assign',
        'fast',
        '--x-initial=unique',
        '--bbox-unsup',
        '+1800-2017ext+',
      ]),
    ).toEqual([
      '-Wno-WIDTH',
      '-Wall',
      '--no-timing',
      '--timing',
      '-O3',
      '--x-assign',
      'fast',
      '--x-initial',
      'unique',
      '--bbox-unsup',
      '+1800-2017ext+',
    ]);
  });

  it.each([
    ['-o', /writes files/],
    ['--Mdir', /writes files/],
    ['--exe', /runs programs/],
    ['-LDFLAGS', /runs programs/],
    ['-CFLAGS', /runs programs/],
    ['--compiler', /runs programs/],
    ['-MAKEFLAGS', /runs programs/],
    ['--make', /runs programs/],
    ['--build-jobs', /runs programs/],
    ['--build', /runs programs/],
    ['-f', /search paths/],
    ['-Ifoo', /search paths/],
    ['-y', /search paths/],
    ['+incdir+/etc', /search paths/],
    ['-DX=1', /chorus's own -D/],
    ['--trace', /chorus sets it/],
    ['--whatever', /not on the list/],
  ])('refuses %s, saying why', (arg, why) => {
    expect(() => checkVerilatorArgs([arg])).toThrow(why);
    expect(() => checkVerilatorArgs([arg])).toThrow(DesignError);
  });

  it('checks the values of valued options', () => {
    expect(() => checkVerilatorArgs(['--x-assign', 'rm -rf'])).toThrow(/value is not one Verilator accepts/);
    expect(() => checkVerilatorArgs(['--x-assign'])).toThrow(/needs a value/);
  });

  it('chorus.json "verilatorArgs" is checked against the same list', () => {
    expect(validateProject({ files: ['a.sv'], verilatorArgs: ['-Wno-WIDTH'] }).verilatorArgs).toEqual(['-Wno-WIDTH']);
    expect(() => validateProject({ files: ['a.sv'], verilatorArgs: ['--exe'] })).toThrow(
      /chorus\.json: "verilatorArgs" '--exe' is refused: it runs programs/,
    );
  });
});

describe('inputs that are not Verilog', () => {
  const dir = scratchDir('chorus-notverilog-');
  /** The files every test of this block reads: written before any of them runs (alone or shuffled). */
  const FILES: Record<string, string | Buffer> = {
    'a.sv': 'module m; endmodule\n',
    'b.v': 'library ieee;\nuse ieee.std_logic_1164.all;\nentity x is\nend;\n',
    'c.vhd': 'x',
    'd.sv': '',
    'e.sv': '// nothing\n/* here */\n',
    'f.sv': Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 1, 2, 3]),
    'g.sv': Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('module g; endmodule', 'utf16le')]),
    'h.sv': Buffer.from('// caf\xe9\nmodule h; endmodule\n', 'latin1'),
    'i.sv': 'module i; always @(posedge c) n--; endmodule\n',
  };
  beforeAll(() => {
    for (const [name, content] of Object.entries(FILES)) writeFileSync(join(dir, name), content);
  });
  const at = (name: keyof typeof FILES): string => join(dir, name);

  it('says what each file is', () => {
    expect(sourceProblem(at('a.sv'))).toBeNull();
    expect(sourceProblem(at('b.v'))).toEqual({ kind: 'vhdl', why: 'its content' });
    expect(sourceProblem(at('c.vhd'))).toEqual({ kind: 'vhdl', why: 'its extension' });
    expect(sourceProblem(at('d.sv'))).toEqual({ kind: 'empty' });
    expect(sourceProblem(at('e.sv'))).toEqual({ kind: 'empty' });
    expect(sourceProblem(at('f.sv'))?.kind).toBe('binary');
    expect(sourceProblem(at('g.sv'))).toEqual({ kind: 'utf16' });
    expect(sourceProblem(at('h.sv'))).toMatchObject({ kind: 'not-utf8', line: 1, byte: 0xe9 });
    expect(sourceProblem(at('i.sv'))).toBeNull();
  });

  it('refuses VHDL, binary and UTF-16 files by name, with what to do', () => {
    const bad = (f: string): DesignError => {
      try {
        checkSources([join(dir, f)], [], dir);
      } catch (e) {
        return e as DesignError;
      }
      throw new Error('no error');
    };
    expect(bad('b.v')).toMatchObject({ kind: 'not-verilog' });
    expect(bad('b.v').message).toMatch(/^b\.v is VHDL \(by its content\).*Verilator, which reads only Verilog/);
    expect(bad('f.sv').message).toMatch(/^f\.sv is not a text file \(a NUL byte at offset 4\)/);
    expect(bad('g.sv').message).toMatch(/^g\.sv is UTF-16 text.*iconv -f UTF-16 -t UTF-8/);
    expect(bad('d.sv').message).toBe("d.sv is empty (no Verilog code): name the files that hold the design's modules");
  });

  it('leaves an empty file out with a warning, and reads Latin-1 text with one', () => {
    const warnings: string[] = [];
    expect(checkSources([join(dir, 'a.sv'), join(dir, 'd.sv'), join(dir, 'h.sv')], warnings, dir)).toEqual([
      join(dir, 'a.sv'),
      join(dir, 'h.sv'),
    ]);
    expect(warnings).toEqual([
      expect.stringMatching(/^h\.sv:1: not UTF-8 \(byte 0xe9 at offset 6; Latin-1 or Windows-1252\?\).*iconv -f latin1 -t utf-8$/),
      'd.sv: empty (no Verilog code), left out',
    ]);
  });
});

describe('folder scans and manifests', () => {
  it('skip vendored, retired and verification folders, and say so', () => {
    const dir = scratchDir('chorus-folder-');
    for (const d of ['rtl', 'vendor/x', 'third_party', 'deprecated', 'tb', 'tests', 'sim', '.git', 'node_modules/p'])
      mkdirSync(join(dir, d), { recursive: true });
    for (const d of ['rtl', 'vendor/x', 'third_party', 'deprecated', 'tb', 'tests', 'sim', '.git', 'node_modules/p'])
      writeFileSync(join(dir, d, 'm.sv'), 'module m(input a); endmodule\n');
    const f = collectFolder(dir);
    expect(f.files).toEqual([join(dir, 'rtl', 'm.sv')]);
    expect(f.excluded.map((x) => `${x.path} (${x.reason})`).sort()).toEqual([
      'deprecated/ (deprecated code)',
      'node_modules/ (vendored copies)',
      'sim/ (verification folder)',
      'tb/ (verification folder)',
      'tests/ (verification folder)',
      'third_party/ (vendored copies)',
      'vendor/ (vendored copies)',
    ]);
    expect(describeFolder('.', f)[1]).toMatch(/^left out of \.: .*vendor\/ \(vendored copies\)/);
  });

  it('a folder with a Bender.yml and a .core reads Bender.yml, and names the other', () => {
    const dir = scratchDir('chorus-manifests-');
    writeFileSync(join(dir, 'Bender.yml'), 'package: {name: p}\n');
    writeFileSync(join(dir, 'p.core'), 'CAPI=2:\nname: a:b:p\n');
    expect(findManifest(dir)).toBe(join(dir, 'Bender.yml'));
    expect(otherManifests(dir)).toEqual([join(dir, 'p.core')]);
    writeFileSync(join(dir, 'q.core'), 'CAPI=2:\nname: a:b:q\n');
    expect(findManifest(dir)).toBe(join(dir, 'Bender.yml'));
  });
});

describe('what people read', () => {
  it('every status has words, and the protocol names stay out of them', () => {
    for (const s of SIM_STATUSES) expect(humanStatus(s)).not.toMatch(/_/);
    expect(humanStatus('xrun_failed')).toBe('simulation failed');
    expect(humanStatus('imc_report_summary_failed')).toBe('coverage report failed');
  });

  it('exit codes: 0 ran, 1 the testbench failed, 2 the design (a combinational loop) or the harness', () => {
    expect(exitCodeFor({ status: 'success' })).toBe(0);
    expect(exitCodeFor({ status: 'xrun_failed', diagnostics: [{ severity: 'error', origin: 'tb', code: 'X' }] })).toBe(1);
    expect(exitCodeFor({ status: 'xrun_failed', diagnostics: [{ severity: 'error', origin: 'dut', code: 'CHORUS-COMBLOOP' }] })).toBe(2);
    expect(exitCodeFor({ status: 'exception' })).toBe(2);
    expect(exitCodeFor({ status: 'timeout' })).toBe(1);
  });
});
