// The Verilator backend's stages (src/core/sim/verilator/stages/), each alone, without a toolchain:
// the static check, the run directory's layout, whose file a name is, reading coverage (a point
// naming a file outside the design is an integrity failure and is never opened), how a run is
// judged from its harness report and limits, and the record an early end becomes.
import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { emptyDesign, type DesignSpec } from '../../src/core/design/types.js';
import type { SimRequest } from '../../src/core/sim/simulator.js';
import type { HarnessReport } from '../../src/core/sim/verilator/harnessReport.js';
import type { Toolchain } from '../../src/core/sim/verilator/toolchain.js';
import { candidate, Ending, simResult, type Candidate, type SettleRetry } from '../../src/core/sim/verilator/stages/candidate.js';
import { createRunDir, prepare } from '../../src/core/sim/verilator/stages/prepare.js';
import { staticCheck } from '../../src/core/sim/verilator/stages/check.js';
import { fileRoles, type FileRoles } from '../../src/core/sim/verilator/stages/files.js';
import { keepCoverage, readCoverage } from '../../src/core/sim/verilator/stages/coverage.js';
import { harnessArgs, harnessReading } from '../../src/core/sim/verilator/stages/run.js';
import { classifyCovered, endWithoutCoverage, judgeRun, notSettled } from '../../src/core/sim/verilator/stages/classify.js';
import { runResult, scratchDir } from '../helpers.js';

const NO_JAIL = { kind: 'none', userns: false } as const;

function request(design: DesignSpec, tb: string, extra: Partial<SimRequest> = {}): SimRequest {
  return { design, top: 'c', testbench: { name: 'tb.sv', content: tb }, ...extra };
}

function candidateOf(req: SimRequest, retry?: SettleRetry, designNames: string[] = []): Candidate {
  return candidate(req, retry, { t0: performance.now(), jail: NO_JAIL, designNames: () => designNames });
}

/** A design of one file, c.sv, in its own directory (with a dot-file and an include directory). */
function design(): { dir: string; file: string; spec: DesignSpec } {
  const dir = scratchDir('chorus-stages-');
  const file = join(dir, 'c.sv');
  writeFileSync(file, 'module c(input logic a);\n  logic b;\n  assign b = a;\nendmodule\n');
  mkdirSync(join(dir, 'inc'));
  writeFileSync(join(dir, 'inc', 'defs.svh'), '`define W 4\n');
  writeFileSync(join(dir, 'inc', '.secret'), 'key\n');
  return { dir, file, spec: { ...emptyDesign(), files: [file], includeDirs: [join(dir, 'inc')] } };
}

/** A toolchain that is never run: prepare only reads its paths and version caps. */
const TOOLCHAIN: Toolchain = {
  verilator: '/opt/verilator/bin/verilator',
  root: '/opt/verilator/share/verilator',
  version: 'Verilator 5.006',
  versionNumber: 5006,
  caps: { jsonOnly: false, xmlOnly: true, coverageExpr: false, convergeLimit: false },
  cxxDefines: [],
  cxx: 'g++',
  cxxVersion: 'g++ 12',
};

/** One coverage point in Verilator's coverage.dat format. */
function point(file: string, line: number, count: number, module = 'c', hier = 'tb.uut'): string {
  return `C '\x01f\x02${file}\x01l\x02${line}\x01page\x02v_line/${module}\x01o\x02block\x01h\x02${hier}\x01' ${count}\n`;
}
const covText = (...points: string[]): string => `# SystemC::Coverage-3\n${points.join('')}`;

function report(fields: Partial<HarnessReport> = {}): HarnessReport {
  return { end: 'finish', finished: true, time: 100, precision: -12, fatals: [], sites: [], sitesDropped: 0, coverage: null, ...fields };
}

describe('staticCheck', () => {
  const { spec } = design();
  it('refuses a testbench that would escape before anything runs, and times the check', () => {
    const c = candidateOf(request(spec, 'module tb; initial $system("id"); endmodule\n'));
    const e = staticCheck(c, performance.now());
    expect(e).toBeInstanceOf(Ending);
    expect(e).toMatchObject({ status: 'rejected', stage: 'check' });
    expect((e as Ending).fields.diagnostics?.[0]).toMatchObject({ file: 'tb.sv', severity: 'error' });
    expect(c.timings.check).toBeGreaterThanOrEqual(0);
  });

  it('refuses a testbench that declares a unit of the design by name', () => {
    const c = candidateOf(request(spec, 'module c; endmodule\nmodule tb; endmodule\n'), undefined, ['c']);
    expect(staticCheck(c, performance.now())).toMatchObject({ status: 'rejected', stage: 'check' });
  });

  it('a testbench without a module is a lint failure; tb_<top> is preferred as the top', () => {
    expect(staticCheck(candidateOf(request(spec, '// nothing\n')), performance.now())).toMatchObject({
      status: 'xrun_failed',
      stage: 'lint',
      fields: { err_msg: 'tb.sv:1:1: the testbench declares no module' },
    });
    expect(staticCheck(candidateOf(request(spec, 'module helper; endmodule\nmodule tb_c; endmodule\n')), performance.now())).toEqual({
      tbTop: 'tb_c',
    });
    expect(staticCheck(candidateOf(request(spec, 'module first; endmodule\nmodule second; endmodule\n')), performance.now())).toEqual({
      tbTop: 'first',
    });
  });
});

describe('prepare', () => {
  it('lays out the run directory: the testbench under a safe name, a retry control file and DUT copies', () => {
    const { file, spec } = design();
    const retry: SettleRetry = { flags: ['--converge-limit', '10000'], vlt: '`verilator_config\n', copies: new Map([[file, '// copy\n']]) };
    const c = candidateOf(
      request(spec, 'module tb; endmodule\n', { testbench: { name: '../../x y.sv', content: 'module tb; endmodule\n' } }),
      retry,
    );
    const runDir = createRunDir(c);
    try {
      expect(c.protection.scratchDir).toBe(runDir);
      const prep = prepare(c, TOOLCHAIN, runDir, 'tb');
      expect(c.tbName).toBe('x_y.sv');
      expect(prep.tbPath).toBe(join(runDir, 'x_y.sv'));
      expect(readFileSync(prep.tbPath, 'utf8')).toBe('module tb; endmodule\n');
      expect(readFileSync(join(runDir, 'chorus_split.vlt'), 'utf8')).toBe('`verilator_config\n');
      const copy = join(runDir, 'chorus_settle', '0_c.sv');
      expect(readFileSync(copy, 'utf8')).toBe('// copy\n');
      // The copy is compiled in the original's place, the design's files before the testbench.
      expect(prep.flatSources).toEqual([copy, prep.tbPath]);
      const args = prep.buildArgs(true);
      expect(args).toEqual(
        expect.arrayContaining(['--converge-limit', '10000', 'chorus_split.vlt', '--top-module', 'tb', '-Mdir', 'obj_check']),
      );
      // The copy's own `include's still resolve beside the original.
      expect(args).toContain(`-I${join(file, '..')}`);
      expect(prep.buildArgs(false, 'obj')).toEqual(expect.arrayContaining(['-Mdir', 'obj']));
    } finally {
      scratchDirCleanup(runDir);
    }
  });

  it('without a retry: only the testbench, and the design files themselves are compiled', () => {
    const { file, spec } = design();
    const c = candidateOf(request(spec, 'module tb; endmodule\n'));
    const runDir = createRunDir(c);
    try {
      const prep = prepare(c, TOOLCHAIN, runDir, 'tb');
      expect(existsSync(join(runDir, 'chorus_split.vlt'))).toBe(false);
      expect(existsSync(join(runDir, 'chorus_settle'))).toBe(false);
      expect(prep.flatSources).toEqual([file, join(runDir, 'tb.sv')]);
    } finally {
      scratchDirCleanup(runDir);
    }
  });
});

describe('fileRoles', () => {
  it('knows the testbench, the design and visible include files; nothing else is known or read', () => {
    const { dir, file, spec } = design();
    const runDir = scratchDir('chorus-stages-run-');
    const roles = fileRoles(spec, runDir, 'tb.sv', [dir], '/opt/verilator/share/verilator');
    expect(roles.classify('tb.sv')).toEqual({ file: 'tb.sv', origin: 'testbench' });
    expect(roles.classify(join(runDir, 'tb.sv'))).toEqual({ file: 'tb.sv', origin: 'testbench' });
    // Run-time messages name design files by their base name.
    expect(roles.classify('c.sv')).toEqual({ file, origin: 'dut' });
    expect(roles.knownFile(file)).toBe(true);
    expect(roles.knownFile(join(dir, 'inc', 'defs.svh'))).toBe(true);
    expect(roles.knownFile('/opt/verilator/share/verilator/include/verilated.v')).toBe(true);
    expect(roles.knownFile('/etc/passwd')).toBe(false);
    // A dot-entry below an include directory is hidden by the jail: never the design's to read.
    expect(roles.knownDesignFile(join(dir, 'inc', '.secret'))).toBe(false);
    expect(roles.readDesignFile(join(dir, 'inc', '.secret'))).toBeUndefined();
    expect(roles.readDesignFile('/etc/passwd')).toBeUndefined();
    expect(roles.readDesignFile(file)).toContain('module c');
    // What a tool's message may quote.
    expect(roles.ownOrToolchain('/etc/passwd')).toBe(false);
    expect(roles.ownOrToolchain(file)).toBe(true);
  });
});

describe('readCoverage', () => {
  function setup() {
    const { dir, file, spec } = design();
    const runDir = scratchDir('chorus-stages-run-');
    const roles = fileRoles(spec, runDir, 'tb.sv', [dir], '/opt/verilator/share/verilator');
    const reads: string[] = [];
    const files: FileRoles = {
      ...roles,
      readDesignFile: (f) => {
        reads.push(f);
        return roles.readDesignFile(f);
      },
    };
    return { file, spec, files, reads, c: candidateOf(request(spec, 'module tb; endmodule\n')) };
  }
  const warning = {
    file: 'tb.sv',
    origin: 'testbench',
    line: 2,
    column: 1,
    severity: 'warning',
    code: 'WIDTH',
    message: 'w',
    stage: 'lint',
  } as const;

  it('refuses a point that names a file outside the design: integrity failure, the file never opened', () => {
    const { file, files, reads, c } = setup();
    const text = covText(point(file, 3, 1), point('/etc/passwd', 1, 5));
    const e = readCoverage(c, { covText: text, files, warnings: [warning], log: 'the log' });
    expect(e).toBeInstanceOf(Ending);
    const end = e as Ending;
    expect(end).toMatchObject({ status: 'integrity_failed', stage: 'run' });
    expect(end.fields.err_msg).toContain(
      "names 1 file that is neither the testbench's nor the design's ('/etc/passwd'); it was not opened",
    );
    expect(end.fields.diagnostics?.map((d) => d.code)).toEqual(['WIDTH', 'CHORUS-INTEGRITY']);
    expect(end.fields.log).toBe('the log');
    expect(reads).toEqual([]);
    // The record scores it 0.
    expect(simResult('verilator', c, { version: 'v', tbTop: 'tb', build: undefined }, end).reward).toBe(0);
  });

  it("analyzes the design's points, reading design files only", () => {
    const { file, files, reads, c } = setup();
    const cov = readCoverage(c, {
      covText: covText(point(file, 2, 0), point(file, 3, 4), point('tb.sv', 1, 1, 'tb', 'tb')),
      files,
      warnings: [],
      log: '',
    });
    expect(cov).not.toBeInstanceOf(Ending);
    if (cov instanceof Ending) return;
    expect(cov.dutInstances).toEqual(['tb.uut']);
    expect(cov.points.every((p) => p.file === file)).toBe(true);
    expect(cov.uncovered.map((u) => u.line)).toEqual([2]);
    expect(reads.length).toBeGreaterThan(0);
    expect(reads.every((f) => f === file)).toBe(true);
  });

  it('keepCoverage writes the database the host received only for a kept run', () => {
    const { spec } = design();
    const runDir = scratchDir('chorus-stages-run-');
    keepCoverage(candidateOf(request(spec, '')), runDir, 'db');
    expect(existsSync(join(runDir, 'chorus-coverage.dat'))).toBe(false);
    writeFileSync(join(runDir, 'chorus-coverage.dat'), "the testbench's own");
    keepCoverage(candidateOf(request(spec, '', { keepRunDir: true })), runDir, 'db');
    expect(readFileSync(join(runDir, 'chorus-coverage.dat'), 'utf8')).toBe('db');
  });
});

describe('judgeRun and the classification of its end', () => {
  const { file, spec } = design();
  const c = candidateOf(request(spec, 'module tb; endmodule\n', { limits: { outputLimitBytes: 1000 } }));
  const runDir = scratchDir('chorus-stages-run-');
  const files = fileRoles(spec, runDir, 'tb.sv', [], '/opt/verilator/share/verilator');
  const warnings = [
    {
      file,
      origin: 'dut',
      line: 3,
      column: 1,
      severity: 'warning',
      code: 'UNOPTFLAT',
      message: "Signal unoptimizable: Circular logic: 'tb.uut.b'",
      stage: 'lint',
    },
  ] as const;

  it("a design error the harness did not record is the testbench's output; limits name the testbench", () => {
    const run = runResult({ all: `%Error: c.sv:3: Assertion failed\n`, outputOverflow: true, exitCode: 1 });
    const judged = judgeRun(c, { run, report: report({ coverage: covText(point(file, 3, 1)) }) }, [...warnings], files.classify);
    expect(judged.outcome.status).toBe('xrun_failed');
    expect(judged.outcome.message).toContain('printed more than 1000 bytes');
    expect(judged.runDiags[0]).toMatchObject({ file: 'tb.sv', origin: 'testbench' });
    expect(judged.runDiags[0].message).toContain('printed by the testbench, not reported by the simulator');
    expect(judged.diagnostics.map((d) => d.code)).toEqual(['UNOPTFLAT', 'ASSERT', 'CHORUS-OUTPUT']);
    expect(judged.diagnostics[2].file).toBe('tb.sv');
    expect(judged.unsettled).toBeUndefined();
  });

  it('the same error recorded by the harness stays the design', () => {
    const run = runResult({ all: `%Error: c.sv:3: Assertion failed\n`, exitCode: 1 });
    const judged = judgeRun(
      c,
      { run, report: report({ sites: [{ file, line: 3, count: 1, first: 0, last: 0, stops: false }] }) },
      [],
      files.classify,
    );
    expect(judged.runDiags[0]).toMatchObject({ file, origin: 'dut', line: 3 });
    expect(judged.outcome.status).toBe('success');
  });

  it('no coverage database: imc_merge_failed with the harness reason; a spawn failure is an exception', () => {
    const ran = { run: runResult(), report: report({ coverage: null, coverageProblem: 'the run directory is full' }) };
    const judged = judgeRun(c, ran, [], files.classify);
    expect(endWithoutCoverage(judged, ran)).toMatchObject({
      status: 'imc_merge_failed',
      stage: 'coverage',
      fields: { err_msg: 'the harness could not take the coverage database: the run directory is full' },
    });
    // Killed from outside (the OOM killer, an operator) before any limit of the run fired: not the
    // testbench's result, so an exception the caller scores again, never a testbench failure.
    const killed = { run: runResult({ exitCode: 137, signal: 'SIGKILL' }) };
    expect(endWithoutCoverage(judgeRun(c, killed, [], files.classify), killed)).toMatchObject({ status: 'exception', stage: 'run' });
    // Killed at the time limit: the run's own limit, the testbench's timeout.
    const late = { run: runResult({ exitCode: 137, signal: 'SIGKILL', durationS: 1e6 }) };
    expect(endWithoutCoverage(judgeRun(c, late, [], files.classify), late)).toMatchObject({ status: 'xrun_failed', stage: 'run' });
    const spawn = { run: runResult({ spawnError: 'ENOENT', exitCode: null }), report: report({ coverage: covText(point(file, 3, 1)) }) };
    expect(endWithoutCoverage(judgeRun(c, spawn, [], files.classify), spawn)).toMatchObject({
      status: 'exception',
      stage: 'run',
      fields: { err_msg: 'cannot start the simulation: ENOENT' },
    });
    const withCov = { run: runResult(), report: report({ coverage: covText(point(file, 3, 1)) }) };
    expect(endWithoutCoverage(judgeRun(c, withCov, [], files.classify), withCov)).toBeUndefined();
  });

  it("Verilator's own did-not-converge, from the report only, becomes a DUT error at the loop", () => {
    const fatal = { file, line: 3, message: "DIDNOTCONVERGE: Active region did not converge after '--converge-limit' of 100 tries" };
    const ran = {
      run: runResult({ exitCode: 134, all: '%Error: c.sv:3: Active region did not converge.\n' }),
      report: report({ end: 'fatal', fatals: [fatal] }),
    };
    const judged = judgeRun(c, ran, [...warnings], files.classify);
    expect(judged.unsettled).toEqual({ region: 'Active', limit: 100 });
    // Printed by the testbench, the same text is never taken for it.
    const printed = { run: ran.run, report: report() };
    expect(judgeRun(c, printed, [], files.classify).unsettled).toBeUndefined();
    const settled = notSettled({ ...judged, unsettled: judged.unsettled! }, [...warnings], undefined, false);
    expect(settled.outcome.status).toBe('xrun_failed');
    expect(settled.outcome.message).toContain('a combinational loop through b');
    expect(settled.outcome.message).toContain('this Verilator offers no --converge-limit to retry with');
    expect(settled.diagnostics.at(-1)).toMatchObject({ code: 'CHORUS-COMBLOOP', origin: 'dut', file, line: 3 });
    expect(settled.runDiags.some((d) => /did not converge/.test(d.message))).toBe(false);
  });

  it('with coverage: success, a failure that keeps its coverage, or no DUT instance', () => {
    const text = covText(point(file, 3, 4));
    const ran = { run: runResult(), report: report({ coverage: text }) };
    const roles = fileRoles(spec, runDir, 'tb.sv', [join(file, '..')], '/opt/verilator/share/verilator');
    const cov = readCoverage(c, { covText: text, files: roles, warnings: [], log: '' });
    if (cov instanceof Ending) throw new Error(String(cov.fields.err_msg));
    const ok = classifyCovered(c, judgeRun(c, ran, [], roles.classify), ran, cov, '/kept/chorus-coverage.dat');
    expect(ok).toMatchObject({ status: 'success', stage: 'success', fields: { coverageFile: '/kept/chorus-coverage.dat' } });
    expect(simResult('verilator', c, { version: 'v', tbTop: 'tb', build: { mode: 'flat' } }, ok)).toMatchObject({
      status: 'success',
      returncode: 0,
      reward: 2,
      tbTop: 'tb',
      dutTop: 'c',
      build: { mode: 'flat' },
      simulator: { name: 'verilator', version: 'v' },
    });
    const timedOut = { run: runResult({ timedOut: true }), report: ran.report };
    const failed = classifyCovered(c, judgeRun(c, timedOut, [], roles.classify), timedOut, cov);
    expect(failed).toMatchObject({ status: 'timeout', stage: 'run', fields: { coverage: cov.breakdown } });
    expect(simResult('verilator', c, { version: 'v', tbTop: 'tb', build: undefined }, failed).reward).toBe(0);
    // A testbench that never instantiates the DUT: no point of its top.
    const other = { ...c, req: { ...c.req, top: 'd' } };
    const elsewhere = readCoverage(other, { covText: text, files: roles, warnings: [], log: '' });
    if (elsewhere instanceof Ending) throw new Error(String(elsewhere.fields.err_msg));
    expect(classifyCovered(other, judgeRun(other, ran, [], roles.classify), ran, elsewhere)).toMatchObject({
      status: 'imc_report_summary_failed',
      stage: 'coverage',
    });
  });
});

describe('the run stage alone', () => {
  it('harnessArgs: the seed, the sim-time limit and every $fatal/$stop site, no coverage file', () => {
    const { spec } = design();
    const c = candidateOf(
      request(spec, 'module tb;\n  initial $fatal(1, "x");\n  // $stop in a comment\nendmodule\n', {
        seed: 7,
        limits: { simTimeLimitNs: 500 },
      }),
    );
    const args = harnessArgs(c);
    expect(args).toEqual(['+verilator+seed+7', '+verilator+rand+reset+0', '+chorus+maxtime_ns+500', '+chorus+stops+tb.sv:2']);
    expect(args.some((a) => a.startsWith('+chorus+cov+'))).toBe(false);
    expect(harnessArgs(candidateOf(request(spec, 'module tb; endmodule\n', { limits: { simTimeLimitNs: null } })))).toEqual([
      '+verilator+seed+1',
      '+verilator+rand+reset+0',
    ]);
  });

  it("harnessReading: another nonce's frame is a forgery; a run the guard killed has no report", () => {
    const nonce = '0123456789abcdef0123456789abcdef';
    const frame = Buffer.from(`CHORUS-REPORT 2 ${'f'.repeat(32)}\nend finish\ncoverage 0\n\nCHORUS-END ${'f'.repeat(32)}\n`);
    expect(harnessReading(runResult({ report: frame }), nonce).kind).toBe('forged');
    expect(harnessReading(runResult({ report: frame, guardStop: 'the run directory grew past its cap' }), nonce)).toEqual({ kind: 'none' });
  });

  it('harnessReading: a frame of this run cut short by a kill is no report; cut without a kill, or anything else, is a forgery', () => {
    const nonce = '0123456789abcdef0123456789abcdef';
    const cut = Buffer.from(`CHORUS-REPORT 2 ${nonce}
end signal
finished 0
time 12`);
    expect(harnessReading(runResult({ report: cut, timedOut: true, signal: 'SIGKILL', exitCode: null }), nonce)).toEqual({ kind: 'none' });
    expect(harnessReading(runResult({ report: cut, signal: 'SIGKILL', exitCode: null }), nonce)).toEqual({ kind: 'none' });
    expect(harnessReading(runResult({ report: cut }), nonce)).toMatchObject({ kind: 'forged', cut: true });
    // Another nonce, or bytes beside a whole frame, stay forgeries whatever ended the run.
    const other = Buffer.from(`CHORUS-REPORT 2 ${'f'.repeat(32)}
end signal`);
    expect(harnessReading(runResult({ report: other, timedOut: true }), nonce).kind).toBe('forged');
    const beside = Buffer.from(`CHORUS-REPORT 2 ${nonce}
end finish
coverage 0

CHORUS-END ${nonce}
extra`);
    expect(harnessReading(runResult({ report: beside, timedOut: true }), nonce).kind).toBe('forged');
  });
});

describe('simResult', () => {
  it('every end carries the protection said, the timings and a sanitized log', () => {
    const { spec } = design();
    const c = candidateOf(request(spec, 'module tb; endmodule\n'));
    const r = simResult(
      'verilator',
      c,
      { version: 'unknown', tbTop: null, build: undefined },
      new Ending('exception', 'build', { err_msg: 'x', log: 'a\x1b[31mb' }),
    );
    expect(r).toMatchObject({
      status: 'exception',
      stage: 'build',
      returncode: 1,
      reward: 0,
      protection: { jail: 'none', reads: 'static', scratchDir: null },
    });
    expect(r.log).not.toContain('\x1b');
    expect(r.timings.total).toBeGreaterThanOrEqual(0);
    expect(Object.keys(r).slice(0, 9)).toEqual([
      'cov_info',
      'coverage',
      'uncovered',
      'simulator',
      'protection',
      'tbTop',
      'dutTop',
      'log',
      'build',
    ]);
  });
});

/** createRunDir's directory is the pipeline's to remove (its finally): here, the test's. */
function scratchDirCleanup(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
