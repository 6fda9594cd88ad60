// The testbench reader that splice.ts edits with (core/generate/tbText.ts): bracket nesting on
// balanced and unbalanced text, list splitting, and the module instances it finds.
import { describe, expect, it } from 'vitest';
import { closeOf, instancesIn, splitTop, tokenize } from '../../src/core/generate/tbText.js';

const toks = tokenize;
const text = (ts: Array<{ t: string }>): string => ts.map((x) => x.t).join(' ');

describe('closeOf', () => {
  it('finds the close of nested brackets of any kind, and tokens.length when there is none', () => {
    const ts = toks('f(a[1], {b, c}) + d');
    expect(closeOf(ts, 1)).toBe(12);
    expect(closeOf(ts, 3)).toBe(5);
    expect(closeOf(ts, 7)).toBe(11);
    expect(closeOf(toks('( a [ b )'), 0)).toBe(5);
    expect(closeOf(toks('( a ( b )'), 0)).toBe(5);
  });
});

describe('splitTop', () => {
  it('cuts at separators outside brackets', () => {
    expect(splitTop(toks('a, f(b, c), {d, e}')).map(text)).toEqual(['a', 'f ( b , c )', '{ d , e }']);
    expect(splitTop(toks('1 : 0'), ':').map(text)).toEqual(['1', '0']);
    expect(splitTop([]).length).toBe(1);
  });
});

describe('instancesIn', () => {
  it('finds instances with parameters, arrays of them and gates, and no declarations', () => {
    const found = instancesIn(toks('logic a; dut #(.W(4)) u0 (.a(a), .b()), u1 (.*); and (y, a, b); assign y = a;'));
    expect(found.map((i) => [i.module, i.name, text(i.params), text(i.ports)])).toEqual([
      ['dut', 'u0', '. W ( 4 )', '. a ( a ) , . b ( )'],
      ['dut', 'u1', '. W ( 4 )', '. *'],
      ['and', '', '', 'y , a , b'],
    ]);
  });
});
