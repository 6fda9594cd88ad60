// Parameters that stretch simulated time beyond any stimulus budget: a stopwatch whose CLK_FREQ
// makes one second 50M cycles, a prescaler, a timeout. Such a design compares a counter against
// a constant derived from the parameter; the testbench instantiates it with a smaller value
// (`#(.CLK_FREQ(16))`) so the terminal counts come within reach. Every change is checked by
// elaborating the design again with the new value, and reported (header comment, run record).
// The user's -G overrides and `keepParams` win: those parameters are never touched.
import type { DesignInfo, DesignSpec, ModuleInfo } from '../design/types.js';
import { svLiteralValue } from '../design/svLiteral.js';

export interface ScaledParam {
  name: string;
  value: string;
  was: string;
  why: string;
}

/** Compared constants above this cannot be reached by held runs within the round budget. */
export const SCALE_ABOVE = 4096n;
/** What the largest compared constant should become: small, yet a real count. */
const AIM = 16n;
/** Names of parameters that set sizes and codes, not durations: never scaled. */
const SHAPE =
  /width|^w$|_w$|depth|size|addr|bits|data|code|key|poly|seed|init|mask|^id$|_id$|num|^n$|lanes|ports|ways|entries|stages|taps|order|coef|sel|mode|type|version/i;
/** Names of parameters that set durations and rates. */
const TIMING =
  /freq|hz|clk|clock|baud|rate|div|prescal|timeout|time|period|count|cnt|cycle|delay|max|limit|wait|tick|debounce|interval|duration|terminal|ms$|us$|ns$|sec|second|minute|hour|refresh|overflow/i;

function largestCompared(info: DesignInfo): bigint {
  let big = 0n;
  for (const m of info.modules) {
    for (const vals of Object.values(m.comparisons)) {
      for (const v of vals) {
        const n = svLiteralValue(v);
        if (n !== null && n > big) big = n;
      }
    }
  }
  return big;
}

/** The largest constant each `module.signal` is compared against. */
function perSignal(info: DesignInfo): Map<string, bigint> {
  const out = new Map<string, bigint>();
  for (const m of info.modules) {
    for (const [sig, vals] of Object.entries(m.comparisons)) {
      for (const v of vals) {
        const n = svLiteralValue(v);
        const k = `${m.name}.${sig}`;
        if (n !== null && n > (out.get(k) ?? -1n)) out.set(k, n);
      }
    }
  }
  return out;
}

/** Which top parameters may be scaled, largest first. */
export function scaleCandidates(m: ModuleInfo, userParams: Record<string, string>): Array<{ name: string; value: bigint; text: string }> {
  const out: Array<{ name: string; value: bigint; text: string }> = [];
  for (const p of m.params) {
    if (p.local || p.isType || p.value === null || p.name in userParams) continue;
    const v = svLiteralValue(p.value);
    if (v === null || v < 64n) continue;
    if (SHAPE.test(p.name) && !TIMING.test(p.name)) continue;
    if (!TIMING.test(p.name) && v < 1024n) continue;
    out.push({ name: p.name, value: v, text: v.toString() });
  }
  return out.sort((a, b) => (b.value > a.value ? 1 : b.value < a.value ? -1 : 0));
}

export type Elaborate = (params: Record<string, string>) => Promise<DesignInfo | null>;

/**
 * The parameters to scale and the design as elaborated with them. `elaborate` reads the design
 * with extra overrides (null when it does not elaborate). Each candidate is tried alone, aiming
 * its compared constants at about 16: kept when the largest compared constant then falls within
 * reach and stays a real count (not 0, not wrapped to all ones by a division that became 0).
 */
export async function scaleParams(
  design: DesignSpec,
  info: DesignInfo,
  elaborate: Elaborate,
  opts: { keepParams?: boolean } = {},
): Promise<{ scaled: ScaledParam[]; info: DesignInfo }> {
  const none = { scaled: [], info };
  if (opts.keepParams) return none;
  const m = info.modules.find((x) => x.name === info.top);
  if (!m) return none;
  let big = largestCompared(info);
  if (big <= SCALE_ABOVE) return none;
  const scaled: ScaledParam[] = [];
  const extra: Record<string, string> = {};
  let current = info;
  for (const c of scaleCandidates(m, design.params).slice(0, 3)) {
    // Compared constants usually scale linearly with the parameter (CLK_FREQ - 1, CLK_FREQ / BAUD):
    // aim at AIM, and if that collapses the count, at a few hundred instead.
    for (const aim of [AIM, 256n]) {
      let v = (c.value * aim) / big;
      if (v < 2n) v = 2n;
      if (v >= c.value) break;
      const trial = { ...design.params, ...extra, [c.name]: v.toString() };
      const e = await elaborate(trial);
      if (!e) continue;
      const nb = largestCompared(e);
      if (nb >= big) continue;
      // The counts that were too long must still be counts (>= 2), not collapsed to 0 or 1.
      const before = perSignal(current);
      const after = perSignal(e);
      const collapsed = [...before].some(([k, v]) => v > SCALE_ABOVE && (after.get(k) ?? 0n) < 2n);
      if (collapsed) continue;
      extra[c.name] = v.toString();
      scaled.push({
        name: c.name,
        value: v.toString(),
        was: c.text,
        why: `the design compares a count against ${big} (from ${c.name}=${c.text}), beyond the stimulus budget; with ${c.name}=${v} the largest compared constant is ${nb}`,
      });
      current = e;
      big = nb;
      break;
    }
    if (big <= SCALE_ABOVE) break;
  }
  if (!scaled.length) return none;
  return { scaled, info: current };
}
