// Output floods folded while a program runs (util/lineFold.ts, runBounded's foldLinesAfter): a
// message repeated with only its `[time]` changing is kept a bounded number of times, the rest
// counted; other lines pass untouched, split chunks included.
import { describe, expect, it } from 'vitest';
import { LineFolder } from '../../src/core/util/lineFold.js';
import { runBounded } from '../../src/core/util/proc.js';

describe('LineFolder', () => {
  it('keeps a repeated message `keep` times, counts the rest, and says so at the end', () => {
    const f = new LineFolder(2);
    const lines = Array.from({ length: 5 }, (_, i) => `[${i * 10}] %Error: f.sv:3: Assertion failed in top.u: bad\n`).join('');
    const kept = f.push(Buffer.from(lines)).toString() + f.flush().toString();
    expect(kept.split('\n').filter((l) => l.includes('Assertion failed'))).toEqual([
      '[0] %Error: f.sv:3: Assertion failed in top.u: bad',
      '[10] %Error: f.sv:3: Assertion failed in top.u: bad',
    ]);
    expect(kept).toContain('chorus: 3 repeats of 1 message shown above were not kept (each message is kept 2 times)');
    expect(f.folded()).toEqual([{ last: '[40] %Error: f.sv:3: Assertion failed in top.u: bad', count: 3 }]);
  });

  it('look-alikes: distinct lines, and a line split across chunks, pass whole', () => {
    const f = new LineFolder(1);
    const a = f.push(Buffer.from('count=1\ncount=2\npart'));
    const b = f.push(Buffer.from('ial line\n'));
    expect(a.toString() + b.toString() + f.flush().toString()).toBe('count=1\ncount=2\npartial line\n');
    expect(f.folded()).toEqual([]);
  });
});

describe('runBounded with folding', () => {
  it('a flood of 200,000 identical messages stays under a 256 KiB output limit and is counted', async () => {
    const script = 'for (let i = 0; i < 200000; i++) process.stdout.write(`[${i}] %Error: d.sv:9: Assertion failed in t.u\\n`);';
    const r = await runBounded(process.execPath, ['-e', script], { outputLimitBytes: 256 * 1024, foldLinesAfter: 20, timeoutS: 60 });
    expect(r.outputOverflow).toBe(false);
    expect(r.exitCode).toBe(0);
    expect(r.stdout.split('\n').filter((l) => l.includes('Assertion failed'))).toHaveLength(20);
    expect(r.folded).toEqual([{ last: '[199999] %Error: d.sv:9: Assertion failed in t.u', count: 199980 }]);
    const plain = await runBounded(process.execPath, ['-e', script], { outputLimitBytes: 256 * 1024, timeoutS: 60 });
    expect(plain.outputOverflow).toBe(true);
  });

  it('endless identical output still meets the limit (folded bytes weigh 1/64)', async () => {
    const r = await runBounded('yes', ['spam spam spam'], {
      outputLimitBytes: 16 * 1024,
      foldLinesAfter: 20,
      timeoutS: 30,
    });
    expect(r.outputOverflow).toBe(true);
    expect(r.timedOut).toBe(false);
  });
});
