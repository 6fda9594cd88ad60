import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  droppedParams,
  findDutInstances,
  findTbTop,
  imcCommand,
  imcMergeScript,
  imcReportScript,
  simRunTcl,
  xrunCommand,
} from '../../src/core/sim/xcelium/commands.js';
import { errorExcerpt, parseXrunDiagnostics, parseXrunVersion, XceliumSimulator } from '../../src/core/sim/xcelium/backend.js';
import { emptyDesign } from '../../src/core/design/types.js';
import type { SimRequest } from '../../src/core/sim/simulator.js';

const TB = `// tb for counter; "counter fake (" in a comment must not count
module tb_counter;
  logic clk = 0;
  counter #(.W(8), .D(4)) dut (.clk(clk));
  initial begin #100 $finish; end
endmodule
`;

function request(over: Partial<SimRequest> = {}): SimRequest {
  return {
    design: {
      ...emptyDesign(),
      files: ['/rtl/pkg.sv', '/rtl/counter.sv'],
      libraryFiles: ['/rtl/lib/cells.v'],
      includeDirs: ['/rtl/inc'],
      defines: { SIM: null, WIDTH: '8' },
      params: { W: '16' },
    },
    testbench: { name: 'tb_counter.sv', content: TB },
    top: 'counter',
    ...over,
  };
}

describe('testbench scanning', () => {
  it('finds the top and the DUT instances', () => {
    expect(findTbTop(TB)).toBe('tb_counter');
    expect(findDutInstances(TB, 'counter')).toEqual(['dut']);
    expect(findDutInstances('module t; counter u0(); counter_tb x(); counter #(4) u1 [1:0] (.a(b)); endmodule', 'counter')).toEqual([
      'u0',
      'u1',
    ]);
    expect(findTbTop('/* module fake; */ module automatic tb2; endmodule')).toBe('tb2');
    expect(findTbTop('no modules here')).toBeNull();
  });
});

describe('xrunCommand', () => {
  it('builds compile+elaborate+simulate with DUT-only coverage', () => {
    const spec = xrunCommand(request({ seed: 7 }), '/tmp/run1', {
      tbFile: 'tb_counter.sv',
      tbTop: 'tb_counter',
      dutInstances: ['dut'],
      inputTcl: 'run.tcl',
    });
    expect(spec.file).toBe('xrun');
    expect(spec.cwd).toBe('/tmp/run1');
    expect(spec.args).toEqual([
      '-sv',
      '-timescale',
      '1ns/1ps',
      '-coverage',
      'all',
      '-covdut',
      'counter',
      '-covworkdir',
      '/tmp/run1/cov_work',
      '-covscope',
      'scope',
      '-covtest',
      'test',
      '-covoverwrite',
      '-l',
      'xrun.log',
      '-top',
      'tb_counter',
      '-svseed',
      '7',
      '-input',
      'run.tcl',
      '+incdir+/rtl/inc',
      '+define+SIM',
      '+define+WIDTH=8',
      '-defparam',
      'tb_counter.dut.W=16',
      '-v',
      '/rtl/lib/cells.v',
      '/rtl/pkg.sv',
      '/rtl/counter.sv',
      'tb_counter.sv',
    ]);
  });

  it('honours overrides and drops parameters it cannot place', () => {
    const o = { tbFile: 'tb.sv', tbTop: null, dutInstances: [], coverage: 'b:t', timescale: '1ps/1ps', xrun: '/opt/x/xrun' };
    const spec = xrunCommand(request(), '/tmp/r', o);
    expect(spec.file).toBe('/opt/x/xrun');
    expect(spec.args.slice(0, 6)).toEqual(['-sv', '-timescale', '1ps/1ps', '-coverage', 'b:t', '-covdut']);
    expect(spec.args).not.toContain('-defparam');
    expect(spec.args).not.toContain('-top');
    expect(droppedParams(request(), o)).toEqual(['W']);
    expect(droppedParams(request(), { tbTop: 'tb', dutInstances: ['dut'] })).toEqual([]);
  });
});

describe('IMC and simulator scripts', () => {
  it('bounds simulated time', () => {
    expect(simRunTcl(1e9)).toBe('run 1000000000 ns\nexit\n');
    expect(simRunTcl(null)).toBeNull();
    expect(simRunTcl(0)).toBeNull();
  });

  it('merges, then reports the metrics LLM4Cov used', () => {
    expect(imcMergeScript('/tmp/r')).toBe('merge {/tmp/r/cov_work/scope/test} -out {/tmp/r/cov_work/scope/merged} -overwrite\nexit\n');
    expect(imcReportScript('/tmp/r')).toBe(
      'load -run {/tmp/r/cov_work/scope/merged}\nreport -metrics overall:code:toggle:block -all -text -out {/tmp/r/imc_summary.txt}\nexit\n',
    );
    expect(imcReportScript('/tmp/r', { metrics: ['overall', 'block'], outFile: '/o/s.txt' })).toContain(
      'report -metrics overall:block -all -text -out {/o/s.txt}',
    );
    expect(imcCommand('imc_merge.tcl', '/tmp/r')).toEqual({ file: 'imc', args: ['-exec', '/tmp/r/imc_merge.tcl'], cwd: '/tmp/r' });
  });
});

describe('parseXrunDiagnostics', () => {
  const log = [
    'xrun(64): 23.09-s001: (c) Copyright 1995-2023 Cadence Design Systems, Inc.',
    '    cnt = cnt + 1',
    '                 |',
    "xmvlog: *E,EXPSMC (./tb_counter.sv,12|17): expecting a semicolon (';') [SystemVerilog].",
    'xmvlog: *W,LIBNOU (/rtl/counter.sv,40): Library "worklib" does not contain unit.',
    "xmelab: *E,CUVMUR: instance 'tb_counter.dut' of design unit 'countr' is unresolved.",
    'xrun: *E,VLGERR: An error occurred during parsing.  Review the log file for errors with the code *E and fix those identified problems to proceed.  Exiting with code (status 1).',
    'xmsim: *E,ASRTST (./tb_counter.sv,30): (time 105 NS) Assertion tb_counter.a1 has failed',
    'xmsim: *F,FATSEV (/other/model.sv,7): (time 1 US).',
    'model gave up',
    'xmsim: *W,RNQUIE: Simulation is complete.',
  ].join('\r\n');
  const diags = parseXrunDiagnostics(log, 'gen/tb_counter.sv', ['/rtl/counter.sv']);

  it('maps positions (0-based column -> 1-based), origin, severity, stage and time', () => {
    expect(diags).toEqual([
      {
        file: 'gen/tb_counter.sv',
        origin: 'testbench',
        line: 12,
        column: 18,
        severity: 'error',
        code: 'EXPSMC',
        message: "expecting a semicolon (';') [SystemVerilog].",
        stage: 'build',
      },
      {
        file: '/rtl/counter.sv',
        origin: 'dut',
        line: 40,
        column: 1,
        severity: 'warning',
        code: 'LIBNOU',
        message: 'Library "worklib" does not contain unit.',
        stage: 'build',
      },
      {
        file: '',
        origin: 'other',
        line: 1,
        column: 1,
        severity: 'error',
        code: 'CUVMUR',
        message: "instance 'tb_counter.dut' of design unit 'countr' is unresolved.",
        stage: 'build',
      },
      {
        file: 'gen/tb_counter.sv',
        origin: 'testbench',
        line: 30,
        column: 1,
        severity: 'error',
        code: 'ASRTST',
        message: 'Assertion tb_counter.a1 has failed',
        time: '105 NS',
        stage: 'run',
      },
      {
        file: '/other/model.sv',
        origin: 'other',
        line: 7,
        column: 1,
        severity: 'error',
        code: 'FATSEV',
        message: 'model gave up',
        time: '1 US',
        stage: 'run',
      },
    ]);
  });

  it('keeps a roll-up error when it is the only one', () => {
    const d = parseXrunDiagnostics('xrun: *E,ELBERR: Error during elaboration (status 1), exiting.', 'tb.sv');
    expect(d.map((x) => x.code)).toEqual(['ELBERR']);
    expect(parseXrunDiagnostics('all good', 'tb.sv')).toEqual([]);
  });

  it('quotes the errors with their source echo', () => {
    expect(errorExcerpt(log).split(/\r?\n/).slice(0, 3)).toEqual([
      '    cnt = cnt + 1',
      '                 |',
      "xmvlog: *E,EXPSMC (./tb_counter.sv,12|17): expecting a semicolon (';') [SystemVerilog].",
    ]);
    expect(errorExcerpt('no errors, just this')).toBe('no errors, just this');
  });

  it('reads the xrun version', () => {
    expect(parseXrunVersion('TOOL:\txrun(64)\t24.03-s007: Started on Jan 01, 2026')).toBe('24.03-s007');
    expect(parseXrunVersion('TOOL:   xrun(64)        24.03-s007\n')).toBe('24.03-s007');
    expect(parseXrunVersion(log)).toBe('23.09-s001');
    expect(parseXrunVersion('nothing')).toBeNull();
  });
});

// --- the backend end to end, with stand-in xrun/imc scripts (no Cadence tools here) ------------
const isWin = process.platform === 'win32';
const tools = mkdtempSync(path.join(os.tmpdir(), 'chorus-fake-cadence-'));
afterAll(() => rmSync(tools, { recursive: true, force: true }));

function fakeTools(reportFixture: string): { xrun: string; imc: string } {
  const xrun = path.join(tools, 'xrun');
  const imc = path.join(tools, 'imc');
  writeFileSync(
    xrun,
    `#!/bin/bash
if [ "$1" = "-version" ]; then printf 'TOOL:\\txrun(64)\\t23.09-s001\\n'; exit 0; fi
echo "$@" > xrun.args
echo "xrun(64): 23.09-s001: (c) Copyright 1995-2023 Cadence Design Systems, Inc."
if grep -q BROKEN ./*.sv; then
  echo "xmvlog: *E,EXPSMC (tb_counter.sv,3|9): expecting a semicolon (';') [SystemVerilog]."
  echo "xrun: *E,VLGERR: An error occurred during parsing."
  exit 1
fi
cov=""; prev=""
for a in "$@"; do [ "$prev" = "-covworkdir" ] && cov="$a"; prev="$a"; done
mkdir -p "$cov/scope/test"
echo "Loading snapshot worklib.tb_counter:sv .................... Done"
`,
  );
  writeFileSync(
    imc,
    `#!/bin/bash
out=$(sed -n 's/^report .*-out {\\(.*\\)}$/\\1/p' "$2")
if [ -n "$out" ]; then cp '${reportFixture}' "$out"; fi
exit 0
`,
  );
  chmodSync(xrun, 0o755);
  chmodSync(imc, 0o755);
  return { xrun, imc };
}

const fixturePath = (n: string): string => new URL(`../fixtures/imc/${n}`, import.meta.url).pathname;

describe.skipIf(isWin)('XceliumSimulator', () => {
  it('rejects info() with the PATH / env var to set when xrun is missing', async () => {
    const sim = new XceliumSimulator({ xrun: '/nonexistent/xrun', imc: '/nonexistent/imc' });
    await expect(sim.info()).rejects.toThrow(/CHORUS_XRUN.*PATH|PATH.*CHORUS_XRUN/);
  });

  it('returns an exception result, never throws, when xrun cannot start', async () => {
    const r = await new XceliumSimulator({ xrun: '/nonexistent/xrun' }).simulate(request({ top: 'binary_to_bcd' }));
    expect(r.status).toBe('exception');
    expect(r.reward).toBe(0);
    expect(r.err_msg).toContain('PATH');
    expect(r.protection.jail).toBe('none');
    expect(existsSync(r.protection.scratchDir!)).toBe(false);
  });

  it('runs xrun, merges, reports and scores the DUT row (reward = 1 + Overall Average)', async () => {
    const sim = new XceliumSimulator(fakeTools(fixturePath('llm4cov_example.txt')));
    expect(await sim.info()).toEqual({ name: 'xcelium', version: '23.09-s001' });
    const r = await sim.simulate(request({ top: 'binary_to_bcd', keepRunDir: true }));
    try {
      expect(r.status).toBe('success');
      expect(r.stage).toBe('success');
      expect(r.reward).toBe(1.9083);
      expect(r.cov_info?.summary[0]?.Block).toBe(0.9167);
      expect(r.cov_info?.detail).toContain('binary_to_bcd');
      expect(r.coverage).toBeNull();
      expect(r.tbTop).toBe('tb_counter');
      // The parameter could not be placed: the testbench instantiates `counter`, not the DUT.
      expect(r.diagnostics.map((d) => d.code)).toEqual(['CHORUS-PARAM']);
      const args = readFileSync(path.join(r.protection.scratchDir!, 'xrun.args'), 'utf8');
      expect(args).toContain('-covdut binary_to_bcd');
      expect(readFileSync(path.join(r.protection.scratchDir!, 'imc_report.tcl'), 'utf8')).toContain(
        'report -metrics overall:code:toggle:block',
      );
    } finally {
      rmSync(r.protection.scratchDir!, { recursive: true, force: true });
    }
  });

  it('maps a compile error to xrun_failed at build with testbench diagnostics', async () => {
    const sim = new XceliumSimulator(fakeTools(fixturePath('llm4cov_example.txt')));
    const r = await sim.simulate(request({ testbench: { name: 'tb_counter.sv', content: `${TB}// BROKEN\n` } }));
    expect(r.status).toBe('xrun_failed');
    expect(r.stage).toBe('build');
    expect(r.returncode).toBe(1);
    expect(r.reward).toBe(0);
    expect(r.err_msg).toContain('*E,EXPSMC');
    expect(r.diagnostics.find((d) => d.code === 'EXPSMC')).toMatchObject({ origin: 'testbench', line: 3, column: 10 });
    expect(existsSync(r.protection.scratchDir!)).toBe(false);
  });

  it('reports imc_report_summary_failed when the DUT has no row', async () => {
    const sim = new XceliumSimulator(fakeTools(fixturePath('na_columns.txt')));
    const r = await sim.simulate(request({ top: 'binary_to_bcd' }));
    expect(r.status).toBe('imc_report_summary_failed');
    expect(r.stage).toBe('coverage');
    expect(r.reward).toBe(0);
    expect(r.err_msg).toContain("no row for DUT 'binary_to_bcd'");
  });
});
