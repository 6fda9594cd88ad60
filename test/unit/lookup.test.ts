// Prompt-lookup drafting (src/core/llm/lookup.ts): what the ONNX decode loop proposes.
import { describe, expect, it } from 'vitest';
import { Drafter, lookupDraft } from '../../src/core/llm/lookup.js';

describe('lookupDraft', () => {
  it('proposes what followed the latest earlier occurrence of the last n-gram', () => {
    //            0  1  2  3  4  5  6  7  8  9  10 11
    const seq = [1, 2, 3, 4, 5, 9, 2, 3, 7, 8, 2, 3];
    // last 2-gram [2, 3] occurs at 6 (latest) and 1: the latest wins
    expect(lookupDraft(seq, { maxDraft: 3 })).toEqual([7, 8, 2]);
  });

  it('prefers the longest n-gram that matches', () => {
    const seq = [5, 2, 3, 6, 1, 2, 3, 4, 0, 1, 2, 3];
    // [1, 2, 3] occurs at 4 -> 4; the 2-gram [2, 3] alone would pick index 5..6 too, but the
    // 3-gram match is tried first
    expect(lookupDraft(seq, { maxNgram: 3, maxDraft: 2 })).toEqual([4, 0]);
    expect(lookupDraft([9, 2, 3, 6, 8, 2, 3], { maxNgram: 3, maxDraft: 2 })).toEqual([6, 8]);
  });

  it('proposes nothing without a match of at least minNgram tokens, and caps the draft', () => {
    expect(lookupDraft([1, 2, 3, 4, 5])).toEqual([]);
    expect(lookupDraft([1, 2, 9, 1, 2], { minNgram: 3 })).toEqual([]);
    expect(lookupDraft([1, 2, 9, 1, 2], { minNgram: 2 })).toEqual([9, 1, 2]);
    expect(lookupDraft([7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7], { maxDraft: 4 })).toHaveLength(4);
    expect(lookupDraft([])).toEqual([]);
  });
});

describe('Drafter', () => {
  it('pauses drafting after drafts keep failing, and drafts again later', () => {
    const d = new Drafter();
    const seq = [1, 2, 3, 1, 2];
    expect(d.draft(seq)).toEqual([3, 1, 2]);
    d.record(8, 0);
    expect(d.draft(seq).length).toBeGreaterThan(0);
    d.record(8, 1); // 1 of 16 kept: pause
    for (let i = 0; i < 32; i++) expect(d.draft(seq)).toEqual([]);
    expect(d.draft(seq)).toEqual([3, 1, 2]);
  });

  it('keeps drafting while drafts are kept', () => {
    const d = new Drafter();
    for (let i = 0; i < 50; i++) {
      expect(d.draft([4, 5, 6, 4, 5])).toEqual([6, 4, 5]);
      d.record(3, 3);
    }
  });
});
