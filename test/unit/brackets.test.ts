// Bracket nesting over the 2-state reader's tokens (core/coverage/brackets.ts): what each scan
// returns on balanced text, and the contracts its callers rely on where brackets do not balance.
import { describe, expect, it } from 'vitest';
import { closeOf, itemEnd, nextTopLevel, splitTop } from '../../src/core/coverage/brackets.js';
import { tokenize } from '../../src/core/coverage/svStatements.js';

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

describe('nextTopLevel', () => {
  it('checks the stop before the bracket, and lets a stray close take the depth below 0', () => {
    const ts = toks('a ) b ; c');
    expect(nextTopLevel(ts, 0, (x) => x.t === ';')).toBe(5);
    expect(nextTopLevel(ts, 0, (x) => x.t === ')')).toBe(1);
    expect(nextTopLevel(toks('x [ i ] = y'), 0, (x) => x.t === '=')).toBe(4);
    expect(nextTopLevel(ts, 9, () => true)).toBe(9);
  });
});

describe('itemEnd', () => {
  it('ends at a top-level separator or at the close of the enclosing list', () => {
    expect(itemEnd(toks('a = f(1, 2), b'), 0, (x) => x.t === ',')).toBe(8);
    expect(itemEnd(toks('a = 1 ) , b'), 0, (x) => x.t === ',')).toBe(3);
    expect(itemEnd(toks('a = 1'), 0, (x) => x.t === ',')).toBe(3);
  });
});

describe('splitTop', () => {
  it('cuts at separators outside brackets', () => {
    expect(splitTop(toks('a, f(b, c), {d, e}')).map(text)).toEqual(['a', 'f ( b , c )', '{ d , e }']);
    expect(splitTop(toks('1 : 0'), ':').map(text)).toEqual(['1', '0']);
    expect(splitTop([]).length).toBe(1);
  });
});
