// The pure parts of the DUT-assertion record: times as the summary shows them, the kind read from
// the design's source, folding repeated diagnostics, the summary sentence, a failed round's one
// line, and the feedback turn (unchanged when nothing fired).
import { describe, expect, it } from 'vitest';
import { assertionSummary, failureReason, formatSimTime, legalFailure, runFailure, withVerdict } from '../../src/core/sim/assertions.js';
import { illegalRevision } from '../../src/core/run/refinement.js';
import { exitCodeFor } from '../../src/cli/command.js';
import { assertionKind, dutAssertionsOf } from '../../src/core/sim/verilator/dutAssertions.js';
import { foldRepeats, MAX_FOLDED_DIAGNOSTICS } from '../../src/core/sim/verilator/diagnostics.js';
import type { Diagnostic, DutAssertion, SimResult } from '../../src/core/sim/result.js';
import { feedbackTurn } from '../../src/core/agent/protocol.js';
import { verdictText } from '../../src/cli/format.js';
import type { HarnessReport } from '../../src/core/sim/verilator/harnessReport.js';

const A = (over: Partial<DutAssertion> = {}): DutAssertion => ({
  file: '/rtl/fifo.sv',
  line: 44,
  kind: 'assertion',
  message: 'push while full',
  count: 3048,
  firstTime: '125 ns',
  lastTime: '30595 ns',
  ...over,
});

const diag = (over: Partial<Diagnostic> = {}): Diagnostic => ({
  file: '/rtl/fifo.sv',
  origin: 'dut',
  line: 44,
  column: 1,
  severity: 'error',
  code: 'ASSERT',
  message: 'Assertion failed in tb.uut: push while full',
  stage: 'run',
  ...over,
});

function result(over: Partial<SimResult> = {}): SimResult {
  return {
    returncode: 0,
    status: 'success',
    err_msg: '',
    cov_info: { summary: [], detail: 'coverage table', runtime_sec: 1 },
    reward: 1.5,
    stage: 'success',
    coverage: null,
    uncovered: [],
    diagnostics: [],
    timings: { total: 1 },
    simulator: { name: 'verilator', version: '5.006' },
    protection: {} as SimResult['protection'],
    tbTop: 'tb',
    dutTop: 'fifo',
    log: '',
    ...over,
  };
}

describe('formatSimTime', () => {
  it('model units at the report precision, as nanoseconds, exactly', () => {
    expect(formatSimTime(125000, -12)).toBe('125 ns');
    expect(formatSimTime(20, -12)).toBe('0.02 ns');
    expect(formatSimTime(0, -12)).toBe('0 ns');
    expect(formatSimTime(125, -9)).toBe('125 ns');
    expect(formatSimTime(3, -6)).toBe('3000 ns');
    expect(formatSimTime(1234567, -15)).toBe('1.234567 ns');
  });
});

describe('assertionKind (from the design source at the site)', () => {
  const src = [
    'module m;', //                                 1
    '  always_comb unique case (s) 0: y = 1; endcase', // 2
    '  always_comb priority if (a) y = 1;', //        3
    '  always @(posedge c) assert (x) else $error("x");', // 4
    '  always @(posedge c) assert (z)', //             5
    '    else $error("z");', //                        6
    '  initial if (bad) $fatal(1, "bad");', //         7
    '  initial if (odd) $error("odd"); // unique', //  8
  ].join('\n');
  it.each([
    [2, 'unique'],
    [3, 'priority'],
    [4, 'assertion'],
    [6, 'assertion'],
    [7, 'fatal'],
    [8, 'error'],
  ])('line %i: %s', (line, kind) => {
    expect(assertionKind(src, line as number, false)).toBe(kind);
  });
  it('an unreadable file: a stop is fatal, else an assertion', () => {
    expect(assertionKind(undefined, 3, true)).toBe('fatal');
    expect(assertionKind(undefined, 3, false)).toBe('assertion');
  });
});

describe('dutAssertionsOf', () => {
  const report: HarnessReport = {
    end: 'finish',
    finished: true,
    time: 1,
    precision: -12,
    fatals: [],
    sites: [
      { file: 'tb.sv', line: 9, count: 2, first: 1000, last: 2000, stops: false },
      { file: 'fifo.sv', line: 45, count: 1, first: 5000, last: 5000, stops: false },
      { file: 'fifo.sv', line: 44, count: 3048, first: 125000, last: 30595000, stops: false },
    ],
    sitesDropped: 0,
    coverage: null,
  };
  const classify = (f: string) =>
    f === 'tb.sv' ? { file: 'tb.sv', origin: 'testbench' as const } : { file: `/rtl/${f}`, origin: 'dut' as const };
  it('design sites only, ordered by first failure, the message from the first log line at the site', () => {
    const got = dutAssertionsOf(report, classify, () => undefined, [
      diag({ file: 'tb.sv', origin: 'testbench', line: 9, message: 'tb check' }),
      diag({ line: 44 }),
      diag({ line: 44, message: 'Assertion failed in tb.uut: later text' }),
    ]);
    expect(got).toEqual([
      { file: '/rtl/fifo.sv', line: 45, kind: 'assertion', message: '', count: 1, firstTime: '5 ns', lastTime: '5 ns' },
      A({ lastTime: '30595 ns' }),
    ]);
  });
  it('no report: none', () => {
    expect(dutAssertionsOf(undefined, classify, () => undefined, [])).toEqual([]);
  });
});

describe('foldRepeats', () => {
  it('folds identical messages with a count and the first and last time; singles stay as they were', () => {
    const once = diag({ line: 45, message: 'pop while empty', time: '5000' });
    const out = foldRepeats([
      diag({ time: '125000' }),
      once,
      diag({ time: '135000' }),
      diag({ time: '30595000' }),
      diag({ file: 'tb.sv', origin: 'testbench', line: 9, message: 'check', time: '1' }),
    ]);
    expect(out).toEqual([
      diag({ time: '125000', count: 3, lastTime: '30595000' }),
      once,
      diag({ file: 'tb.sv', origin: 'testbench', line: 9, message: 'check', time: '1' }),
    ]);
    expect('count' in out[1]).toBe(false);
  });
  it('keeps at most MAX_FOLDED_DIAGNOSTICS distinct messages and says how many were not kept', () => {
    const many = Array.from({ length: MAX_FOLDED_DIAGNOSTICS + 50 }, (_, i) => diag({ message: `m${i}` }));
    const out = foldRepeats([...many, ...many]);
    expect(out).toHaveLength(MAX_FOLDED_DIAGNOSTICS + 1);
    expect(out[0].count).toBe(2);
    expect(out.at(-1)).toMatchObject({ code: 'CHORUS-FOLDED', severity: 'info' });
    expect(out.at(-1)!.message).toMatch(/^100 more run-time messages \(50 distinct\) not kept/);
  });
});

describe('the summary sentence', () => {
  it('one site', () => {
    expect(assertionSummary([A()])).toBe(
      "the stimulus broke the design's assertions 3,048 times, first at fifo.sv:44 at 125 ns: push while full",
    );
    expect(assertionSummary([])).toBe('');
    expect(assertionSummary(undefined)).toBe('');
  });
  it('several sites: each with its count, up to three, then how many more', () => {
    const list = [
      A(),
      A({ line: 45, message: 'pop while empty', count: 1, firstTime: '200 ns' }),
      A({ file: '/rtl/dec.sv', line: 5, kind: 'unique', message: '', count: 2, firstTime: '300 ns' }),
      A({ line: 60, count: 5 }),
      A({ line: 61, count: 5 }),
    ];
    expect(assertionSummary(list)).toBe(
      "the stimulus broke the design's assertions 3,061 times at 5 sites: fifo.sv:44 3,048 times, first at 125 ns: push while full; " +
        'fifo.sv:45 1 time, first at 200 ns: pop while empty; dec.sv:5 2 times, first at 300 ns: (unique violation); and 2 more sites',
    );
  });
  it("legalFailure: only in 'legal' mode and only when something fired", () => {
    expect(legalFailure('paper', [A()])).toBeUndefined();
    expect(legalFailure(undefined, [A()])).toBeUndefined();
    expect(legalFailure('legal', [])).toBeUndefined();
    expect(legalFailure('legal', [A()])).toMatch(/^the stimulus broke .*push while full\. Under legal scoring .*\(reward 0\)/);
  });
});

describe("a failed round's one line (failureReason, verdictText)", () => {
  it('a limit hit is named from its diagnostic, never guessed from the log', () => {
    const r = result({
      status: 'xrun_failed',
      stage: 'run',
      err_msg: 'x',
      log: 'push while full\n'.repeat(100),
      diagnostics: [
        diag({ count: 3000 }),
        diag({
          file: 'tb.sv',
          origin: 'testbench',
          code: 'CHORUS-OUTPUT',
          message: 'the simulation printed more than 1024 bytes (the output limit) and was stopped',
        }),
      ],
    });
    expect(failureReason(r)).toBe('xrun_failed at run: the simulation printed more than 1024 bytes (the output limit) and was stopped');
  });
  it('else the first error diagnostic, with its count and how many more', () => {
    const r = result({
      status: 'xrun_failed',
      stage: 'run',
      err_msg: 'e',
      diagnostics: [diag({ count: 3, code: 'FATAL', message: 'boom' }), diag({ line: 2 })],
    });
    expect(failureReason(r)).toBe('xrun_failed at run: fifo.sv:44: boom (3 times) (+1 more error)');
  });
  it('legal scoring: the assertions', () => {
    const r = result({
      status: 'xrun_failed',
      stage: 'run',
      err_msg: legalFailure('legal', [A()])!,
      dutAssertions: [A()],
      diagnostics: [diag({ count: 3048 })],
    });
    // The human line says the status in words (issue 27); failureReason keeps the protocol's name.
    expect(verdictText(r)).toBe(
      "simulation failed at run: the stimulus broke the design's assertions 3,048 times, first at fifo.sv:44 at 125 ns: push while full (legal scoring)",
    );
  });
  it('no diagnostics: the first line of err_msg; success: the status, with the assertions when some fired', () => {
    expect(failureReason(result({ status: 'timeout', stage: 'run', err_msg: '\nno finish\nmore' }))).toBe('timeout at run: no finish');
    expect(verdictText(result())).toBe('success');
    expect(verdictText(result({ dutAssertions: [A()] }))).toBe("success (illegal stimulus: broke the design's assertions 3,048 times)");
  });
});

describe('feedbackTurn', () => {
  const parsed = { status: 'success', testbench: 'module tb; endmodule', filename: 'tb.sv', source: 'fence' } as const;
  it('without DUT assertions: exactly as before (no new field)', () => {
    const t = feedbackTurn(parsed as never, result());
    expect(t).not.toContain('dut_assertions');
    expect(t).toContain('- coverage: coverage table\n\nInstruction for next round:');
  });
  it('with them: one more field of the EDA block', () => {
    const t = feedbackTurn(parsed as never, result({ dutAssertions: [A()] }));
    expect(t).toContain(
      "- coverage: coverage table\n- dut_assertions: the stimulus broke the design's assertions 3,048 times, first at fifo.sv:44 at 125 ns: push while full. Drive the design only as its assertions allow.\n\n",
    );
  });
});

describe('a fired assertion is a failed run, in every score mode', () => {
  it('runFailure/withVerdict: paper keeps its reward but the verdict is failed; a clean run passes', () => {
    const fired = result({ dutAssertions: [A()] });
    expect(runFailure(fired)).toBe(
      "assertions failed: the stimulus broke the design's assertions 3,048 times, first at fifo.sv:44 at 125 ns: push while full",
    );
    expect(withVerdict(fired).verdict).toEqual({ passed: false, failure: runFailure(fired) });
    expect(withVerdict(fired).reward).toBe(1.5);
    expect(withVerdict(result()).verdict).toEqual({ passed: true });
    expect(runFailure(result({ status: 'xrun_failed', stage: 'build', err_msg: 'tb.sv:3: syntax error' }))).toBe(
      'xrun_failed at build: tb.sv:3: syntax error',
    );
  });

  it('exit status 1 for a run that broke the design; 0 for a clean one', () => {
    expect(exitCodeFor(result({ dutAssertions: [A()] }))).toBe(1);
    expect(exitCodeFor(result())).toBe(0);
  });

  it('refine keeps a legal testbench over an illegal revision, whatever its coverage; anything else may be replaced', () => {
    const legal = result();
    const illegal = result({ dutAssertions: [A({ count: 2 })] });
    expect(illegalRevision(legal, illegal)).toMatch(
      /^the revision was not kept: the stimulus broke the design's assertions 2 times, first at fifo\.sv:44 at 125 ns: push while full, and the testbench it refines broke none/,
    );
    expect(illegalRevision(illegal, illegal)).toBeUndefined();
    expect(illegalRevision(legal, legal)).toBeUndefined();
    expect(illegalRevision(result({ status: 'xrun_failed' }), illegal)).toBeUndefined();
  });
});
