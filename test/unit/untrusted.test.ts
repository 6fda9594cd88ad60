// Text from a testbench, a model or a remote service is data: no control character, escape sequence
// or disguising invisible character reaches a terminal, the editor or a prompt (src/core/util/untrusted.ts).
import { describe, expect, it } from 'vitest';
import { isUnsafeText, safeDeep, safeLine, safeText, visibleEscape } from '../../src/core/util/untrusted.js';
import { safeResult } from '../../src/core/sim/result.js';
import type { SimResult } from '../../src/core/sim/result.js';
import { StatusLine } from '../../src/cli/progress.js';
import { createProgress } from '../../src/cli/evalProgress.js';
import type { TaskRecord } from '../../src/core/eval/task.js';
import { RemoteSimulator } from '../../src/core/sim/remote.js';
import { getSimulator, registerSimulator } from '../../src/core/sim/registry.js';
import type { SimRequest } from '../../src/core/sim/simulator.js';
import { examples } from '../helpers.js';
import { join } from 'node:path';

/** Any raw C0 control but newline/tab, DEL, C1, or a bidi/format character. */
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/;
/** True when no string in `x` holds a raw character (JSON writes C0 controls as `\u001b`, `\r`...). */
const clean = (x: unknown): boolean => {
  const j = JSON.stringify(x);
  return !RAW.test(j) && !/(?<!\\)\\(u00[01][0-9a-f]|r|b|f)/.test(j);
};

describe('safeText', () => {
  it.each([
    ['CSI clear screen', 'a\x1b[2Jb', 'a\\x1b[2Jb'],
    ['cursor up, erase line', '\x1b[1A\x1b[2Kfake status', '\\x1b[1A\\x1b[2Kfake status'],
    ['OSC 52 clipboard write, BEL-terminated', '\x1b]52;c;aGk=\x07', '\\x1b]52;c;aGk=\\x07'],
    ['OSC 52 clipboard write, ST-terminated', '\x1b]52;c;aGk=\x1b\\', '\\x1b]52;c;aGk=\\x1b\\'],
    ['OSC 8 hyperlink', '\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\', '\\x1b]8;;http://evil\\x1b\\click\\x1b]8;;\\x1b\\'],
    ['DCS', '\x1bPq#0\x1b\\', '\\x1bPq#0\\x1b\\'],
    ['single-character ESC (RIS reset)', '\x1bc', '\\x1bc'],
    ['C1 CSI', '\u009b2J', '\\x9b2J'],
    ['C1 OSC and ST', '\u009d52;c;aGk=\u009c', '\\x9d52;c;aGk=\\x9c'],
    ['carriage return overwriting a line', 'PASS\rFAIL', 'PASS\\x0dFAIL'],
    ['NUL', 'a\0b', 'a\\x00b'],
    ['BEL, backspace, DEL', '\x07\x08\x7f', '\\x07\\x08\\x7f'],
    ['bidi override', 'user\u202eexe.sv', 'user\\u202eexe.sv'],
    ['bidi isolates', '\u2066a\u2069\u2067b\u2069', '\\u2066a\\u2069\\u2067b\\u2069'],
    ['zero-width space and BOM', 'a\u200bb\ufeff', 'a\\u200bb\\ufeff'],
    ['line separator', 'a\u2028b', 'a\\u2028b'],
    ['invisible tag characters', 'x\u{e0041}\u{e0042}', 'x\\u{e0041}\\u{e0042}'],
    ['lone surrogate', 'a\ud800b', 'a\\ud800b'],
  ])('%s', (_name, input, expected) => {
    expect(safeText(input)).toBe(expected);
    expect(safeText(input)).not.toMatch(RAW);
    expect(isUnsafeText(input)).toBe(true);
  });

  it('keeps newlines, tabs and printable Unicode, and returns clean text itself', () => {
    const s = 'line 1\tcol\nline 2 é ü 中文 😀 ❤️ \\x1b already escaped\n';
    expect(safeText(s)).toBe(s);
    expect(isUnsafeText(s)).toBe(false);
  });

  it('turns CR LF into a line end, a lone CR into an escape', () => {
    expect(safeText('a\r\nb\rc\r')).toBe('a\nb\\x0dc\\x0d');
  });

  it('is a fixed point', () => {
    const s = '\x1b[2J\u009b\r\n\r\u202e\0\x07';
    expect(safeText(safeText(s))).toBe(safeText(s));
  });

  it('is one linear scan on a multi-megabyte log', () => {
    const clean = 'tb.sv:12: %Error: value mismatch 0x1f != 0x20\n'.repeat(100_000);
    const t0 = performance.now();
    expect(safeText(clean)).toBe(clean);
    const dirty = '\x1b[2J\x1b]52;c;aGk=\x07 line\r\n'.repeat(100_000);
    const out = safeText(dirty);
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(out).not.toMatch(RAW);
    expect(out.split('\n')).toHaveLength(100_001);
  });
});

describe('safeLine', () => {
  it('escapes newlines and tabs too', () => {
    expect(safeLine('a\nb\tc\x1b[K')).toBe('a\\x0ab\\x09c\\x1b[K');
    expect(safeLine('plain status')).toBe('plain status');
  });
});

describe('visibleEscape', () => {
  it('writes bytes as \\xNN, BMP characters as \\uNNNN, others as \\u{N}', () => {
    expect(visibleEscape('\x1b')).toBe('\\x1b');
    expect(visibleEscape('\u202e')).toBe('\\u202e');
    expect(visibleEscape('\u{e0041}')).toBe('\\u{e0041}');
  });
});

describe('safeDeep / safeResult', () => {
  it('copies on write: clean parts stay the same objects', () => {
    const clean = { a: 1 };
    const v = { clean, list: ['ok', 'b\x07'], n: null, u: undefined, nested: { s: '\x1b[2J' } };
    const out = safeDeep(v);
    expect(out).toEqual({ clean, list: ['ok', 'b\\x07'], n: null, u: undefined, nested: { s: '\\x1b[2J' } });
    expect(out.clean).toBe(clean);
    expect(v.list[1]).toBe('b\x07'); // the input is not changed
    const same = { x: ['a', { y: 'b' }] };
    expect(safeDeep(same)).toBe(same);
  });

  it('cleans every text field of a result record', () => {
    const bad = '\x1b[2J\x1b]52;c;aGk=\x07\r\u202e\u009b';
    const r = {
      returncode: 1,
      status: 'xrun_failed',
      err_msg: bad,
      cov_info: { summary: [{ Name: bad }], detail: bad, runtime_sec: 1 },
      reward: 0,
      stage: 'run',
      coverage: null,
      uncovered: [{ type: 'line', file: bad, line: 1, label: bad, hier: bad, count: 0, source: bad }],
      diagnostics: [
        {
          file: bad,
          origin: 'testbench',
          line: 1,
          column: 1,
          severity: 'error',
          code: bad,
          message: bad,
          suggestion: bad,
          time: bad,
          stage: 'run',
        },
      ],
      timings: { total: 1 },
      simulator: { name: 'verilator', version: bad },
      protection: {
        scratchDir: null,
        staticCheck: true,
        jail: 'none',
        reads: 'static',
        jailReason: bad,
        wallClockLimitS: 1,
        simTimeLimitNs: null,
        outputLimitBytes: 1,
        memoryLimitMb: null,
      },
      tbTop: bad,
      dutTop: 'counter',
      log: `ok\n${bad}\n`,
      build: { mode: 'flat', fallbackReason: bad },
      points: [{ type: 'user', file: bad, line: 1, column: 1, module: bad, hier: bad, label: bad, count: 1 }],
      settle: { loop: [bad], tried: [bad], workaround: bad },
    } as unknown as SimResult;
    const out = safeResult(r);
    expect(clean(out)).toBe(true);
    expect(clean(r)).toBe(false);
    expect(out.err_msg).toBe('\\x1b[2J\\x1b]52;c;aGk=\\x07\\x0d\\u202e\\x9b');
    expect(out.log.split('\n')[0]).toBe('ok');
    expect(out.returncode).toBe(1);
    expect(out.timings).toBe(r.timings);
  });
});

describe('the CLI status line and eval progress', () => {
  const HOSTILE = 'round 1: \x1b[1A\x1b[2Kstatus: success\x1b]52;c;aGk=\x07\u009b2J\rdone\n\u202e';
  /** Without our own redraw codes: the CR that starts a redrawn line, erase line, erase to end of line. */
  const ours = (s: string): string => s.replace(/\r(?=\x1b\[|\[[#-])|\x1b\[2?K/g, '');

  it('redraws one line of text: our erase-line codes only', () => {
    const written: string[] = [];
    const prev = process.env.TERM;
    process.env.TERM = 'xterm';
    try {
      const stream = { isTTY: true, columns: 400, write: (s: string) => written.push(s) } as unknown as NodeJS.WriteStream;
      const line = new StatusLine(stream);
      line.set(HOSTILE);
      line.clear();
    } finally {
      if (prev === undefined) delete process.env.TERM;
      else process.env.TERM = prev;
    }
    const out = written.join('');
    expect(out).toContain('\\x1b[1A\\x1b[2Kstatus: success\\x1b]52;c;aGk=\\x07\\x9b2J\\x0ddone\\x0a\\u202e');
    expect(ours(out)).not.toMatch(RAW);
    expect(ours(out)).not.toContain('\n');
  });

  it('writes task ids and errors as text, on a terminal and in a log', () => {
    for (const tty of [true, false]) {
      const written: string[] = [];
      const p = createProgress({ write: (s: string) => written.push(s) }, tty, () => 0);
      p.onProgress({ type: 'start', units: 1, tasks: 1, workers: 1 });
      p.onProgress({ type: 'sample', task: `t\x1b[2J`, sample: 0, cached: false, done: 1, units: 1, coverage: 0.5, passed: false });
      const task = { id: `t\x1b[2J`, error: HOSTILE, samples: [], coverage_target: 100 } as unknown as TaskRecord;
      p.onProgress({ type: 'task', task, done: 1, tasks: 1 });
      p.finish();
      const out = ours(written.join(''));
      expect(out).toContain('t\\x1b[2J');
      expect(out.replace(/\n/g, '')).not.toMatch(RAW);
    }
  });
});

describe('results from elsewhere', () => {
  const BAD = 'tb.sv:3: \x1b[2J\x1b]52;c;aGk=\x07\u009b\r\u202e boom';
  const req: SimRequest = {
    design: { files: [join(examples, 'counter', 'counter.sv')], libraryFiles: [], includeDirs: [], defines: {}, params: {} },
    top: 'counter',
    testbench: { name: 'tb.sv', content: 'module tb; endmodule' },
  };
  const record = {
    returncode: 1,
    status: 'xrun_failed',
    err_msg: BAD,
    log: BAD,
    diagnostics: [{ file: 'tb.sv', origin: 'testbench', line: 3, column: 1, severity: 'error', message: BAD, stage: 'run' }],
    uncovered: [],
    coverage: 0,
    coverage_breakdown: null,
  };

  it("a remote reward service's answer and error text", async () => {
    const answers = [
      new Response(JSON.stringify(record), { status: 200 }),
      new Response(JSON.stringify({ message: BAD }), { status: 400 }),
    ];
    const remote = new RemoteSimulator({ urls: ['http://scorer.invalid'], fetchImpl: (async () => answers.shift()!) as typeof fetch });
    const r = await remote.simulate(req);
    expect(clean(r)).toBe(true);
    expect(r.err_msg).toBe('tb.sv:3: \\x1b[2J\\x1b]52;c;aGk=\\x07\\x9b\\x0d\\u202e boom');
    const e = (await remote.simulate(req).catch((x: Error) => x)) as Error;
    expect(e.message).toContain('\\x1b[2J');
    expect(e.message).not.toMatch(RAW);
  });

  it('a backend registered from outside', async () => {
    registerSimulator('raw-test', () => ({
      name: 'raw-test',
      info: async () => ({ name: 'raw-test', version: '1' }),
      simulate: async () => ({ ...record, coverage: null }) as unknown as SimResult,
    }));
    const r = await getSimulator('raw-test').simulate(req);
    expect(clean(r)).toBe(true);
    expect(r.diagnostics[0].message).toContain('\\x1b]52;c;aGk=\\x07');
  });
});
