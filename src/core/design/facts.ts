// What the design MEANS, as slang elaborates it (sim/slang/frontEnd.ts runs slang_facts.py): the
// assertions as written (macro call sites expanded, property structure kept), the clocks and
// resets by how the design uses them (sensitivity lists and the conditions of edge-triggered
// blocks, never their names), enum-typed ports, and what included files contribute. The design is
// read twice, with and without the VERILATOR define, and the assertions are the union: macro
// libraries that hide their checks from Verilator (OpenTitan's prim_assert.sv, common_cells'
// assertions.svh) still constrain the stimulus. Pure types and readers: running slang is the
// simulator layer's job.

/** One expression node of a property, with its signals resolved to the top's ports where the
 * chain of port connections is direct (`top`); anything slang_facts.py does not model is
 * `opaque` with its source text. */
export type FactExpr =
  | { op: 'id'; name: string; top: string | null; width?: number }
  | { op: 'const'; value: string; width?: number }
  | {
      op:
        | 'not'
        | 'and'
        | 'or'
        | 'eq'
        | 'ne'
        | 'lt'
        | 'le'
        | 'gt'
        | 'ge'
        | 'bitand'
        | 'bitor'
        | 'bitnot'
        | 'xor'
        | 'add'
        | 'sub'
        | 'mul'
        | 'shl'
        | 'shr';
      args: FactExpr[];
    }
  /** `{a, b}`; `c ? a : b` (args [c, a, b]). */
  | { op: 'concat' | 'cond'; args: FactExpr[] }
  /** A design-internal signal replaced by its driver (`assign dec = take & ~give`), at its width. */
  | { op: 'cast'; width: number; args: FactExpr[] }
  | { op: 'call'; name: string; args: FactExpr[] }
  /** Constant bits of a top port, in the flat numbering the testbench declares the port with. */
  | { op: 'select'; base: FactExpr; text: string; width?: number }
  | { op: 'opaque'; text: string };

export interface FactPort {
  name: string;
  direction: 'input' | 'output' | 'inout' | 'ref';
  width: number;
  type: string;
  enumMembers: Array<{ name: string; value: number }> | null;
  packedStruct: boolean;
}

export interface FactModule {
  name: string;
  file: string;
  line: number;
  ports: FactPort[];
  params: Array<{ name: string; value: string | null; local: boolean; type: boolean }>;
  instances: Array<{ name: string; module: string }>;
}

export interface FactClock {
  /** A top input port. */
  signal: string;
  edge: 'pos' | 'neg';
  /** Procedural blocks and assertion clocks that use it. */
  uses: number;
}

export interface FactReset {
  /** A top input port. */
  signal: string;
  activeLow: boolean;
  async: boolean;
  uses: number;
  /** Where the polarity and timing were read, in words. */
  evidence: string;
}

export interface FactAssertion {
  /** `case`: a `unique`/`priority` case without a default (its selector is one of the items);
   * `error`: a `$error`/`$fatal` statement (its conditions are the violation). */
  kind: 'concurrent' | 'immediate' | 'deferred' | 'case' | 'error';
  action: 'assert' | 'assume' | 'cover';
  file: string;
  line: number;
  column: number;
  module: string;
  instance: string;
  clock: { signal: string; edge: 'pos' | 'neg' } | null;
  disableIff: string | null;
  antecedent: string | null;
  consequent: string;
  implication: '|->' | '|=>' | null;
  /** Cycles from the antecedent's match to the consequent's start (0 for |->, 1 for |=>, plus a
   * leading ##N of the consequent). */
  delay: number;
  usesPast: boolean;
  functions: string[];
  signals: Array<{ name: string; top: string | null }>;
  /** The top inputs its signals can depend on through the design's logic (more than the exact
   * cone; module variables written by tasks and hierarchical references are not followed), in
   * port order: what a property over internal state can be kept by. */
  cone?: string[];
  /** In an `initial` block outside any loop: checked once, at the start (a formal-style check of
   * the starting state, `initial assert (i_reset)`), not in every cycle. */
  initial?: boolean;
  text: string;
  fromMacro: boolean;
  /** Structured forms, where slang_facts.py could build them. */
  antecedentExpr?: FactExpr | null;
  consequentExpr?: FactExpr | null;
  /** Which readings of the design hold it: with the VERILATOR define (as Verilator compiles
   * it), without (as any other simulator does), or both. Filled by the front end's union. */
  seenWith?: Array<'verilator' | 'other'>;
}

/** A register loaded from top inputs under a top input equal to a constant (`ADDR: r <= wdata;`
 * in a case on the address, `if (addr == ADDR) r <= wdata;`): what a bus writes where. */
export interface FactLoad {
  register: string;
  module: string;
  /** The top inputs the loaded value reads. */
  reads: string[];
  /** The top input values it is loaded under (a case item with several values gives several). */
  at: Array<{ port: string; value: number }>;
  file: string | null;
  line: number | null;
}

export interface FactDiagnostic {
  severity: 'error' | 'warning';
  message: string;
  file: string | null;
  line: number | null;
  column: number | null;
}

/** One reading of the design (slang_facts.py's response, version 1). */
export interface DesignReading {
  version: 1;
  ok: boolean;
  slang: string;
  diagnostics: FactDiagnostic[];
  top: string | null;
  topCandidates: string[];
  modules: FactModule[];
  clocks: FactClock[];
  resets: FactReset[];
  assertions: FactAssertion[];
  loads: FactLoad[];
  includes: Array<{ file: string; from: string; line: number }>;
}

/** The design's facts: the reading as Verilator compiles it, the assertions of both readings, and
 * the clocks and resets that only the other reading uses. */
export interface DesignFacts {
  slang: string;
  top: string;
  modules: FactModule[];
  clocks: FactClock[];
  resets: FactReset[];
  /** The union over both readings (seenWith says which). */
  assertions: FactAssertion[];
  loads: FactLoad[];
  includes: DesignReading['includes'];
  /** Where the readings disagree with each other or with Verilator's netlist, in words. */
  disagreements: string[];
}

// A site in a generate loop or a module instantiated twice is one assertion per set of ports it
// constrains (`valid_i[i] |-> ...` for each i): the trees are part of the key.
const siteKey = (a: FactAssertion): string =>
  `${a.file}:${a.line}:${a.column}:${JSON.stringify([a.antecedentExpr ?? null, a.consequentExpr ?? null])}`;

/**
 * The union of the assertions of the two readings: one entry per source site, `seenWith` naming
 * the readings that hold it. An assertion only the other reading holds is one Verilator never
 * checks in simulation (its macros expand to nothing under VERILATOR): still a constraint on the
 * stimulus.
 */
export function unionAssertions(withVerilator: FactAssertion[], withoutVerilator: FactAssertion[]): FactAssertion[] {
  const out = new Map<string, FactAssertion>();
  for (const a of withVerilator) out.set(siteKey(a), { ...a, seenWith: ['verilator'] });
  for (const a of withoutVerilator) {
    const had = out.get(siteKey(a));
    if (had) had.seenWith = ['verilator', 'other'];
    else out.set(siteKey(a), { ...a, seenWith: ['other'] });
  }
  return [...out.values()];
}

/** The facts of a design from its two readings (with VERILATOR first). */
export function combineReadings(verilator: DesignReading, other: DesignReading | null, top: string): DesignFacts {
  const disagreements: string[] = [];
  const theirs = other?.ok && verilator.ok ? other : null;
  if (theirs) {
    const ours = new Map(verilator.resets.map((r) => [r.signal, r]));
    const differ = theirs.resets.filter((r) => {
      const v = ours.get(r.signal);
      return v && (v.activeLow !== r.activeLow || v.async !== r.async);
    });
    if (differ.length)
      disagreements.push(
        `the resets ${differ.map((r) => r.signal).join(', ')} are used differently with and without the VERILATOR define; the reading Verilator compiles is used`,
      );
  }
  // A port that only code hidden from Verilator uses (an assertion's clock or its `disable iff`,
  // under `ifndef VERILATOR`) is still a clock or a reset: the other simulator's build samples
  // it, so driving it as data would race the checks. Where both readings use a port, Verilator's
  // reading decides.
  const known = new Set([...verilator.clocks.map((c) => c.signal), ...verilator.resets.map((r) => r.signal)]);
  const hiddenClocks = (theirs?.clocks ?? []).filter((c) => !known.has(c.signal));
  const hiddenResets = (theirs?.resets ?? [])
    .filter((r) => !known.has(r.signal))
    .map((r) => ({ ...r, evidence: `${r.evidence} (only without the VERILATOR define)` }));
  return {
    slang: verilator.slang,
    top,
    modules: verilator.modules,
    clocks: [...verilator.clocks, ...hiddenClocks],
    resets: [...verilator.resets, ...hiddenResets],
    assertions: unionAssertions(verilator.assertions, theirs ? theirs.assertions : []),
    loads: verilator.loads ?? [],
    includes: verilator.includes,
    disagreements,
  };
}

/** Assertions that only a simulator other than Verilator checks (hidden under `ifdef VERILATOR`). */
export function hiddenFromVerilator(f: DesignFacts): FactAssertion[] {
  return f.assertions.filter((a) => a.seenWith?.length === 1 && a.seenWith[0] === 'other' && a.action === 'assert');
}

/** The reset a top port is, from use; undefined when the design does not use it as one. */
export function resetFact(f: DesignFacts | undefined, port: string): FactReset | undefined {
  return f?.resets.find((r) => r.signal === port);
}

/** The clock a top port is, from use (the edge the design samples most). */
export function clockFact(f: DesignFacts | undefined, port: string): FactClock | undefined {
  return f?.clocks.filter((c) => c.signal === port).sort((a, b) => b.uses - a.uses)[0];
}
