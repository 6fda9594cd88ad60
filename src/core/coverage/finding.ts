// What a coverage rule of twoState.ts claims: the points a proof covers (by lines, by a match
// on block points, or by a signal's toggle labels), why, and how to make them reachable; and the
// range text (`0-7, 10`) the rules' reasons use for bits and slots.
import type { CoveragePoint, Exclusion } from './model.js';

export interface Finding {
  module: string;
  /** What the proof says (default: unreachable under 2-state simulation). */
  kind?: Exclusion;
  /** How to make the code reachable (`-G NAME=value`), where there is a way. */
  enable?: string;
  /** Only points of these instances (hierarchy paths). */
  hiers?: Set<string>;
  /** With `hiers`, for block points: which points the finding covers (in place of `lines`). */
  match?: (p: CoveragePoint) => boolean;
  /** Non-toggle points on these lines, or toggle points of this signal. */
  lines?: [number, number];
  signal?: string;
  /** Only these toggle labels of the signal (`shift_reg[3]`); all of them when absent. */
  labels?: Set<string>;
  /** With `lines`: only block points with this label (the implicit `else` of an `if`). */
  label?: string;
  line: number;
  reason: string;
}

/** `0-7, 10` */
export function ranges(ks: number[]): string {
  const s = [...new Set(ks)].sort((a, b) => a - b);
  const out: string[] = [];
  for (let i = 0; i < s.length; i++) {
    let j = i;
    while (j + 1 < s.length && s[j + 1] === s[j] + 1) j++;
    out.push(j > i ? `${s[i]}-${s[j]}` : `${s[i]}`);
    i = j;
  }
  return out.join(', ');
}
