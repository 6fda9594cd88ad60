// The harness report (fd 3) as the host reads it: exactly one frame with this run's nonce, or the
// run's integrity fails; and run-time errors in the log count as the design's only when the
// harness recorded them.
import { describe, expect, it } from 'vitest';
import { readHarnessReport } from '../../src/core/sim/verilator/harnessReport.js';
import { classifyRun, confirmRunDiagnostics, fatalLine } from '../../src/core/sim/verilator/backend.js';
import type { Diagnostic } from '../../src/core/sim/result.js';
import type { RunResult } from '../../src/core/util/proc.js';
import { DEFAULT_LIMITS } from '../../src/core/vocabulary/defaults.js';
import { runResult } from '../helpers.js';

const NONCE = '0123456789abcdef0123456789abcdef';
const hex = (s: string): string => (s ? Buffer.from(s).toString('hex') : '-');
const COV = "# SystemC::Coverage-3\nC '\x01f\x02/rtl/c.sv\x01l\x023\x01page\x02v_line/c\x01o\x02block\x01h\x02tb.uut\x01' 4\n";

function frame(
  opts: { nonce?: string; end?: string; cov?: string | null; extra?: string; fatal?: [string, number, string]; site?: string } = {},
): Buffer {
  const n = opts.nonce ?? NONCE;
  const cov = opts.cov === undefined ? COV : opts.cov;
  let head = `CHORUS-REPORT 2 ${n}\nend ${opts.end ?? 'finish'}\nfinished 1\ntime 120000\nprecision -12\n`;
  if (opts.fatal) head += `fatal ${hex(opts.fatal[0])} ${opts.fatal[1]} ${hex(opts.fatal[2])}\n`;
  head += opts.site ?? `site ${hex('/rtl/c.sv')} 40 3048 25000 118000 0\n`;
  head += cov === null ? `coverage-error ${hex('the run directory is full')}\n` : `coverage ${Buffer.byteLength(cov)}\n${cov}`;
  return Buffer.from(head + `\nCHORUS-END ${n}\n` + (opts.extra ?? ''));
}

describe('readHarnessReport', () => {
  it('reads a well-formed frame: end, sites, fatal errors and the coverage bytes', () => {
    const r = readHarnessReport(frame({ fatal: ['/rtl/c.sv', 7, 'DIDNOTCONVERGE: Active region did not converge'] }), NONCE);
    expect(r.kind).toBe('ok');
    if (r.kind !== 'ok') return;
    expect(r.report).toMatchObject({ end: 'finish', finished: true, time: 120000, precision: -12, coverage: COV });
    expect(r.report.sites).toEqual([{ file: '/rtl/c.sv', line: 40, count: 3048, first: 25000, last: 118000, stops: false }]);
    expect(fatalLine(r.report.fatals[0])).toBe('%Error-DIDNOTCONVERGE: /rtl/c.sv:7: Active region did not converge');
  });

  it("carries the harness's reason when there is no coverage", () => {
    const r = readHarnessReport(frame({ cov: null }), NONCE);
    expect(r).toMatchObject({ kind: 'ok', report: { coverage: null, coverageProblem: 'the run directory is full' } });
  });

  it('nothing on the channel: the harness never reported (killed), not a forgery', () => {
    expect(readHarnessReport(Buffer.alloc(0), NONCE)).toEqual({ kind: 'none' });
    expect(readHarnessReport(undefined, NONCE)).toEqual({ kind: 'none' });
  });

  it.each([
    ['another nonce (a frame the testbench wrote)', frame({ nonce: 'f'.repeat(32) })],
    ['bytes before the frame', Buffer.concat([Buffer.from('C ... 99\n'), frame()])],
    ['a second frame after the first', frame({ extra: frame().toString() })],
    ['bytes after the frame', frame({ extra: 'x' })],
    ['a frame cut short', frame().subarray(0, 60)],
    ['a coverage length past the end', Buffer.from(`CHORUS-REPORT 2 ${NONCE}\nend finish\ncoverage 999999\nabc\nCHORUS-END ${NONCE}\n`)],
    ['an unknown field', Buffer.from(`CHORUS-REPORT 2 ${NONCE}\nscore 2.0\ncoverage 0\n\nCHORUS-END ${NONCE}\n`)],
    ['a frame of the previous format (version 1)', Buffer.from(frame().toString().replace('CHORUS-REPORT 2', 'CHORUS-REPORT 1'))],
    ['a site without its last time (the version 1 line)', frame({ site: `site ${hex('/rtl/c.sv')} 40 3048 25000 0\n` })],
    ['a site with a field too many', frame({ site: `site ${hex('/rtl/c.sv')} 40 3048 25000 26000 0 1\n` })],
    ['a site whose last time is before its first', frame({ site: `site ${hex('/rtl/c.sv')} 40 3 25000 24000 0\n` })],
    ['a site counted zero times', frame({ site: `site ${hex('/rtl/c.sv')} 40 0 25000 25000 0\n` })],
    ['a site with a bad stops flag', frame({ site: `site ${hex('/rtl/c.sv')} 40 3 25000 25000 yes\n` })],
    ['a site with a non-numeric last time', frame({ site: `site ${hex('/rtl/c.sv')} 40 3 25000 1e9 0\n` })],
    ['an unknown end', Buffer.from(`CHORUS-REPORT 2 ${NONCE}\nend great\ncoverage 0\n\nCHORUS-END ${NONCE}\n`)],
  ])('refuses %s', (_, bytes) => {
    expect(readHarnessReport(bytes, NONCE).kind).toBe('forged');
  });

  it('refuses a channel that overflowed its limit', () => {
    expect(readHarnessReport(frame(), NONCE, true).kind).toBe('forged');
  });
});

const run = (fields: Partial<RunResult>): RunResult => runResult(fields);

describe('classifyRun with the harness report', () => {
  const ok = readHarnessReport(frame({ end: 'oom' }), NONCE);
  it('names out-of-memory as such, not as $fatal', () => {
    if (ok.kind !== 'ok') throw new Error('frame');
    const o = classifyRun(run({ exitCode: 120 }), { ...DEFAULT_LIMITS, memoryLimitMb: 256 }, ok.report);
    expect(o.status).toBe('xrun_failed');
    expect(o.message).toMatch(/ran out of memory \(limit 256 MiB/);
    expect(o.diagnostic?.code).toBe('CHORUS-OOM');
    // Without a report, the exit status says the same.
    expect(classifyRun(run({ exitCode: 120 }), DEFAULT_LIMITS).diagnostic?.code).toBe('CHORUS-OOM');
  });
  it('a runtime fatal error is named from the report', () => {
    const r = readHarnessReport(frame({ end: 'fatal', fatal: ['/rtl/c.sv', 7, 'Active region did not converge.'] }), NONCE);
    if (r.kind !== 'ok') throw new Error('frame');
    expect(classifyRun(run({ exitCode: 134 }), DEFAULT_LIMITS, r.report).message).toMatch(
      /fatal run-time error: %Error: \/rtl\/c\.sv:7: Active region/,
    );
  });
});

describe('confirmRunDiagnostics', () => {
  const classify = (f: string) =>
    f.endsWith('c.sv')
      ? { file: '/rtl/c.sv', origin: 'dut' as const }
      : f === 'tb.sv'
        ? { file: 'tb.sv', origin: 'testbench' as const }
        : { file: f, origin: 'other' as const };
  const d = (file: string, line: number, origin: Diagnostic['origin'], severity: Diagnostic['severity'] = 'error'): Diagnostic => ({
    file,
    line,
    origin,
    column: 1,
    severity,
    message: 'Assertion failed in tb.uut',
    stage: 'run',
  });
  const r = readHarnessReport(frame(), NONCE);
  if (r.kind !== 'ok') throw new Error('frame');

  it("keeps a design error the harness recorded, and the testbench's own", () => {
    expect(confirmRunDiagnostics([d('/rtl/c.sv', 40, 'dut'), d('tb.sv', 9, 'testbench')], r.report, classify, 'tb.sv')).toEqual([
      d('/rtl/c.sv', 40, 'dut'),
      d('tb.sv', 9, 'testbench'),
    ]);
  });

  it('a design error the harness never saw was printed by the testbench', () => {
    const [x] = confirmRunDiagnostics([d('/rtl/c.sv', 2, 'dut')], r.report, classify, 'tb.sv');
    expect(x).toMatchObject({ file: 'tb.sv', origin: 'testbench', line: 1 });
    expect(x.message).toMatch(/^printed by the testbench, not reported by the simulator: "\/rtl\/c\.sv:2: /);
  });

  it('a message naming a file outside the design points at the testbench, the name only quoted', () => {
    const [x] = confirmRunDiagnostics([d('/etc/shadow', 1, 'other', 'warning')], r.report, classify, 'tb.sv');
    expect(x).toMatchObject({ file: 'tb.sv', origin: 'testbench' });
    expect(x.message).toContain('/etc/shadow:1');
  });

  it('without a report nothing is confirmed', () => {
    expect(confirmRunDiagnostics([d('/rtl/c.sv', 40, 'dut')], undefined, classify, 'tb.sv')[0].origin).toBe('testbench');
  });
});
