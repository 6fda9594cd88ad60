// Legal stimulus: when the design's own assertions fire (immediate or concurrent assertions,
// `unique`/`priority` case violations, `$error`/`$fatal` reached in a design file), find the
// property that fired among the front end's facts (design/facts.ts: slang elaborated each check,
// with the conditions it sits under) and stop producing its violation: an obligation that did not
// stop the failures gives way to keeping the violation's input condition from holding; what still
// fires spaces out, then holds at zero, the inputs the property names (for a property over internal
// state alone, the inputs its signals depend on). Nothing here reads the design's text or knows a
// design by name.
import { basename } from 'node:path';
import type { DesignInfo, PortInfo } from '../design/types.js';
import type { SimResult } from '../sim/result.js';
import type { Roles } from './roles.js';
import type { FactAssertion } from '../design/facts.js';
import { ident, propertyRule } from './propertyRules.js';

/** One DUT assertion site that failed in a run. */
export interface DutFailure {
  file: string;
  line: number;
  kind: string;
  message: string;
  count: number;
}

/**
 * The DUT assertion failures of a run: `dutAssertions` when the simulator reports them, else the
 * run-stage error diagnostics attributed to a design file (one entry per site).
 */
export function dutFailures(r: SimResult | null | undefined): DutFailure[] {
  if (!r) return [];
  if (r.dutAssertions?.length)
    return r.dutAssertions.map((a) => ({ file: a.file, line: a.line, kind: a.kind, message: a.message, count: a.count }));
  const sites = new Map<string, DutFailure>();
  for (const d of r.diagnostics ?? []) {
    if (d.origin !== 'dut' || d.stage !== 'run' || d.severity !== 'error' || d.code?.startsWith('CHORUS-')) continue;
    const key = `${d.file}:${d.line}`;
    const s = sites.get(key);
    if (s) s.count++;
    else sites.set(key, { file: d.file, line: d.line, kind: d.code === 'ASSERT' ? 'assertion' : 'error', message: d.message, count: 1 });
  }
  return [...sites.values()];
}

/** How many DUT assertion failures a run had (0: legal stimulus). */
export function illegalCount(r: SimResult | null | undefined): number {
  return dutFailures(r).reduce((a, f) => a + Math.max(1, f.count), 0);
}

/** What the testbench does against one failing site, applied in every step before the edge. */
export interface LegalityRule {
  /** `file:line` of the assertion. */
  site: string;
  /** `oblige`: the inputs meet the property's consequent (propertyRules.ts); `gate`: the input
   * condition of its violation is never driven; `space`: the inputs the property names are nonzero
   * at most once every `spacing` edges (a property over state the testbench cannot see, such as an
   * outstanding request, is kept by giving the design time to drain it); `freeze`: none of these
   * worked or could be written, the inputs the property names are held at 0. */
  level: 'oblige' | 'gate' | 'space' | 'freeze';
  /** For `space`: the fewest quiet edges between two edges where an input named is nonzero. */
  spacing?: number;
  /** SystemVerilog statements for step(). */
  statements: string[];
  /** Module-level declarations the statements need (registers that remember an antecedent or a
   * past value at the property's clock). */
  declarations?: string[];
  /** In words, for the header comment. */
  why: string;
  /** The property names no input: its rule spaces or holds the inputs its signals depend on. */
  cone?: boolean;
}

function freezeRule(site: string, inputs: PortInfo[], why: string): LegalityRule {
  return {
    site,
    level: 'freeze',
    statements: inputs.map((p) => `${p.name} = '0;`),
    why: `${why}: ${inputs.length ? `${inputs.map((p) => p.name).join(', ')} held at 0` : 'no input named there to hold'}`,
  };
}

/** A check no stimulus can keep: nothing is held for it, and `why` says so. */
function beyondStimulus(site: string, why: string): LegalityRule {
  return { site, level: 'freeze', statements: [], why };
}

/** The quiet edges a `space` rule asks for first, and the most before the inputs are held. */
const SPACINGS = [4, 16];

/**
 * `inputs` nonzero at most once every `spacing` edges of `clock`: a counter of quiet edges (reset
 * by an edge where one of them is nonzero) holds them at 0 until it reaches `spacing`. Applying
 * the statement twice in a step changes nothing.
 */
function spaceRule(
  site: string,
  inputs: PortInfo[],
  clock: { port: string; edge: 'pos' | 'neg' },
  spacing: number,
  why: string,
): LegalityRule {
  const q = `chorus_quiet_${ident(site)}_${spacing}`;
  const any = inputs.length === 1 ? `(${inputs[0].name} != '0)` : `(${inputs.map((p) => `(${p.name} != '0)`).join(' || ')})`;
  return {
    site,
    level: 'space',
    spacing,
    declarations: [
      `int unsigned ${q} = ${spacing};`,
      `always @(${clock.edge}edge ${clock.port}) ${q} <= ${any} ? 0 : (${q} < ${spacing} ? ${q} + 1 : ${spacing});`,
    ],
    statements: [`if (${q} < ${spacing}) begin ${inputs.map((p) => `${p.name} = '0;`).join(' ')} end`],
    why: `${why}: ${inputs.map((p) => p.name).join(', ')} nonzero at most once every ${spacing + 1} cycles of ${clock.port}`,
  };
}

/**
 * The rule for one failing site. `prev`: an earlier rule for it that did not stop the failures: the
 * next level is taken (oblige, then gate, then spacing the inputs the property names further and
 * further apart, at last holding them at 0). A site the front end has no fact for (the design did
 * not elaborate in slang) gets a rule that holds nothing and says so: nothing is guessed from the
 * source text.
 */
export function ruleFor(f: DutFailure, info: DesignInfo, roles: Roles, prev?: Pick<LegalityRule, 'level' | 'spacing'>): LegalityRule {
  const prevLevel = prev?.level;
  const site = `${basename(f.file)}:${f.line}`;
  const fact = factAt(f, info);
  if (!fact)
    return freezeRule(
      site,
      [],
      info.facts
        ? `the front end has no check at ${site} (${f.kind}), so no input condition is known`
        : `the design's checks were not read (the front end did not elaborate it), so no input condition is known for ${site}`,
    );
  if (fact.a.initial)
    // Later stimulus cannot change a check made once at the start: holding inputs would only cost coverage.
    return beyondStimulus(
      site,
      `the check at ${site} is made once, at the start, where every input is 0 and the resets are asserted: no later stimulus can keep it`,
    );
  const avoid = prevLevel === undefined || prevLevel === 'oblige' ? propertyRule(fact.a, roles, fact.i, true) : null;
  if (avoid?.level === 'gate') return avoid;
  // Never the property's clock or what its disable iff reads: holding those would silence the
  // check (no sampling edge, or the check disabled), not meet it.
  const silencing = (name: string): boolean =>
    fact.a.clock?.signal === name || (fact.a.disableIff !== null && new RegExp(`(^|[^\\w$.])${name}($|[^\\w$])`).test(fact.a.disableIff));
  const usable = (p: PortInfo): boolean => p.unpackedDims.length === 0 && !silencing(p.name);
  const direct = roles.data.filter((p) => usable(p) && fact.a.signals.some((x) => x.top === p.name));
  // A property over internal state only (a mode register, a handshake flag) names no input: the
  // inputs its signals depend on are what can keep it.
  const cone = direct.length ? [] : roles.data.filter((p) => usable(p) && (fact.a.cone ?? []).includes(p.name));
  const named = direct.length ? direct : cone;
  const why =
    (prevLevel ? `the rule for ${site} did not stop it` : `the property at ${site} gives no input condition`) +
    (cone.length ? ' (it names no input; these reach its signals)' : '');
  // Space the inputs before holding them: the state the property reads may drain between events.
  // At the property's clock and edge, else at the edge the design samples the first clock on.
  const own = roles.clocks.find((c) => c.port.name === fact.a.clock?.signal);
  const clock = own
    ? { port: own.port.name, edge: fact.a.clock!.edge }
    : roles.clocks[0]
      ? { port: roles.clocks[0].port.name, edge: roles.clocks[0].activeEdge }
      : null;
  const spacing = prevLevel === 'space' ? SPACINGS.find((k) => k > (prev?.spacing ?? 0)) : prevLevel === 'freeze' ? undefined : SPACINGS[0];
  const viaCone = (r: LegalityRule): LegalityRule => (cone.length ? { ...r, cone: true } : r);
  if (named.length && clock && spacing !== undefined) return viaCone(spaceRule(site, named, clock, spacing, why));
  if (!named.length && fact.a.cone && !fact.a.cone.some((p) => roles.data.some((d) => d.name === p)))
    // Only a net nothing drives, a parameter or the clock and reset: it fails whatever the stimulus.
    return beyondStimulus(
      site,
      `${why}: no data input reaches its signals, so no stimulus can keep it (a check of the design's configuration or environment)`,
    );
  return viaCone(freezeRule(site, named, why));
}

/** How many lines an assertion macro's arguments may span: a failure inside a macro reports the
 * line its expansion ends on (`__LINE__`), the front end the line the macro call starts on. */
const MACRO_SPAN = 12;

/** The design's assertion (the front end's facts) a failure site is, with its index: the one that
 * starts on the failing line, else the assertion macro call the line is inside of. */
function factAt(f: DutFailure, info: DesignInfo): { a: FactAssertion; i: number } | null {
  const all = info.facts?.assertions ?? [];
  const sameFile = (a: FactAssertion): boolean => a.file === f.file || basename(a.file) === basename(f.file);
  const i = all.findIndex((a) => a.line === f.line && sameFile(a));
  if (i >= 0) return { a: all[i], i };
  let best = -1;
  all.forEach((a, k) => {
    if (!sameFile(a) || a.line > f.line) return;
    if (best < 0 || a.line > all[best].line) best = k;
  });
  const a = best < 0 ? null : all[best];
  return a && a.fromMacro && f.line - a.line <= MACRO_SPAN ? { a, i: best } : null;
}

/** Rules for a run's failures, given the rules already in force (ineffective ones escalate). */
export function legalityRules(
  result: SimResult,
  info: DesignInfo,
  roles: Roles,
  prev: LegalityRule[] = [],
  escalate = true,
): LegalityRule[] {
  const out = [...prev];
  // What each failing site's rule becomes this round; a site whose property names no input waits
  // while a site that names its inputs still changes: those inputs are often what its signals
  // depend on (a response no request waits for), and holding the whole cone at once would stop
  // the design (an under-run counter's whole input cone is every input).
  const next: Array<{ k: number; rule: LegalityRule }> = [];
  for (const f of dutFailures(result)) {
    const site = `${basename(f.file)}:${f.line}`;
    const k = out.findIndex((r) => r.site === site);
    if (k < 0) next.push({ k, rule: ruleFor(f, info, roles) });
    else if (escalate && out[k].level !== 'freeze') {
      const esc = ruleFor(f, info, roles, out[k]);
      next.push({
        k,
        rule: {
          ...esc,
          statements: [...out[k].statements, ...esc.statements],
          declarations: [...(out[k].declarations ?? []), ...(esc.declarations ?? [])],
        },
      });
    }
  }
  const direct = next.some(({ rule }) => !rule.cone && rule.statements.length);
  for (const { k, rule } of next) {
    if (direct && rule.cone) continue;
    if (k >= 0) out[k] = rule;
    else out.push(rule);
  }
  return out;
}
