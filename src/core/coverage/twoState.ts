// Coverage points that a 2-state simulator (Verilator) can never reach, found by reading the
// DUT's source: reported beside the scored figure, never taken out of it (docs/protocol.md §5).
// The rules, each about the code, never about a design's name:
// - full-case default: the `default` arm of a case whose items list every value the selector can
//   hold: every value of its width, or every member of its enum type (a 2-state variable has no
//   X or Z, and an enum variable only holds members, starting at 0 when 0 is one);
// - dead else: the else of `if (x >= 0)` on an unsigned x, or of `if (x == 0) ... else if (x > 0)`;
// - loop index: a variable assigned only constants and as the index of for-loops with constant
//   bounds, outside any condition: each pass of its block leaves it at the same value, and
//   toggle coverage samples values between passes, never inside one;
// - constant: a variable whose every assignment is the same constant expression;
// - enum bits: a bit that no member of a variable's enum type sets;
// - constant bits of a combinational block: bits that every pass leaves at one value, worked out
//   bit by bit (combBits.ts);
// - array slots no write reaches: every write to an array indexes constants, or genvars of
//   generate-for loops unrolled under constant bounds, and some slots are outside all of them.
// A point the run did cover is reachable by definition and is never listed. This module applies
// the rules to each module of the design and matches their findings to the points. The rules:
// twoStateRules.ts (all of the above but the last), unwrittenSlots.ts (the last), tiedOff.ts
// (signals that no simulation moves: never assigned, written only at time 0, counters' high bits,
// inputs an instantiation ties off) and deadParams.ts (code dead under the parameters). What they
// read of a module is moduleFacts.ts and declarations.ts; the token and statement reading, and
// constant expressions, are svStatements.ts.
import { blankComments } from '../design/lexer.js';
import { hierarchicalTargets } from './declarations.js';
import { deadParamCode } from './deadParams.js';
import type { Finding } from './finding.js';
import { figures, isCovered, type CoverageFigures, type CoveragePoint, type Exclusion, type PointType } from './model.js';
import { moduleFacts, type ModuleFacts, type ModuleSource } from './moduleFacts.js';
import { paramDecls } from './params.js';
import { modulesIn, walk, type Tok } from './svStatements.js';
import { tiedInputs, tiedOffSignals } from './tiedOff.js';
import { combBitFindings, constantSignals, deadElses, enumBits, fullCaseDefaults } from './twoStateRules.js';
import { unwrittenSlots } from './unwrittenSlots.js';

export { evalConst } from './svStatements.js';

export interface Unreachable2State {
  file: string;
  line: number;
  type: PointType;
  /** The arm's label (`case`) or, for toggles, the signal; `points` says how many bits. */
  label: string;
  points: number;
  reason: string;
}

export interface TwoStateReport {
  /** How many uncovered points cannot be reached under 2-state simulation. */
  count: number;
  /** The points, grouped by source position and signal. */
  points: Unreachable2State[];
  /** The figures over every other point: what the run reached of what it could reach. */
  figures: CoverageFigures;
  /** Every uncovered point proven unreachable, by any rule: 2-state (the points above), dead
   * under the parameters, constant. */
  proven: Map<CoveragePoint, Proof>;
}

export interface TwoStateOptions {
  /** The DUT's top module, and the `-G` overrides of its parameters for this run (`{}`: none): a
   * parameter is known only at the value the run elaborated. Without `params` the top's
   * parameters are unknown to the dead-code rule. */
  top?: string;
  params?: Record<string, string>;
}

/** Why a point cannot be covered, as proven: the kind, the reason, and how to enable it; or, from
 * the formal engine (coverage/formal.ts), that it can (`witness`: reachable, not yet covered) or
 * that a bounded search did not reach it (`bounded`: no claim). */
export interface Proof {
  kind: Exclusion | 'witness' | 'bounded';
  detail: string;
  enable?: string;
}

/** The order findings are tried in: a point dead under the parameters is reported as such
 * before any other proof, and a constant one before a 2-state one. */
const KIND_ORDER: Record<Exclusion, number> = { 'dead-param': 0, constant: 1, 'unreachable-2state': 2, 'unreachable-formal': 3 };

/** A finding and the file of the module it is about. */
type FileFinding = Finding & { file: string };

/** A module of the design, read from one of the files the points name. */
interface ModuleText {
  file: string;
  name: string;
  toks: Tok[];
}

/**
 * The uncovered points of `points` (the DUT's, after waivers) that no 2-state simulation can
 * cover, by the rules above, and the figures over the rest. `read` gives a DUT file's text.
 * `proven` also holds the points dead under the parameters and the constant ones.
 */
export function twoStateUnreachable(points: CoveragePoint[], read: (file: string) => string | undefined, opts: TwoStateOptions = {}): TwoStateReport {
  const findings: FileFinding[] = [];
  const modules = new Map<string, ModuleSource | null>();
  const sources = moduleTexts(points, read);
  const fromElsewhere = new Set<string>();
  for (const src of sources) for (const n of hierarchicalTargets(src.toks)) fromElsewhere.add(n);
  for (const src of sources) findings.push(...moduleFindings(src, points, opts, modules, fromElsewhere));
  for (const f of [...deadParamCode(points, modules, opts), ...tiedInputs(points, modules)]) {
    const src = modules.get(f.module);
    if (src) findings.push({ ...f, file: src.file });
  }
  findings.sort((a, b) => KIND_ORDER[a.kind ?? 'unreachable-2state'] - KIND_ORDER[b.kind ?? 'unreachable-2state']);
  return reportOf(points, findings);
}

/** Every module of the files the points name, comments blanked. */
function moduleTexts(points: CoveragePoint[], read: (file: string) => string | undefined): ModuleText[] {
  const sources: ModuleText[] = [];
  for (const file of new Set(points.map((p) => p.file))) {
    const text = read(file);
    if (!text) continue;
    for (const mod of modulesIn(blankComments(text, true))) sources.push({ file, ...mod });
  }
  return sources;
}

/**
 * The findings of the rules that read one module alone, and its entry in `modules` (null when
 * two files define it) for the rules that follow instances. Names some other module assigns by
 * a hierarchical path (`fromElsewhere`) are never judged. No finding when the module cannot be read.
 */
function moduleFindings(
  mod: ModuleText,
  points: CoveragePoint[],
  opts: TwoStateOptions,
  modules: Map<string, ModuleSource | null>,
  fromElsewhere: Set<string>,
): FileFinding[] {
  const { file } = mod;
  const ofModule = (p: CoveragePoint): boolean => p.module === mod.name || p.module.startsWith(mod.name + '__');
  const widthOf = (signal: string): number | undefined => {
    const bits = new Set(points.filter((p) => p.type === 'toggle' && ofModule(p) && (p.label === signal || p.label.startsWith(signal + '['))).map((p) => p.label));
    if (bits.size === 0 || [...bits].some((l) => /\]\[/.test(l))) return undefined;
    return bits.size;
  };
  const variants = new Set(points.filter(ofModule).map((p) => p.module));
  const facts = readModule(mod, variants, opts, modules);
  if (!facts) return [];
  const toggles = new Map<string, Set<string>>();
  for (const p of points)
    if (p.type === 'toggle' && ofModule(p)) {
      const b = p.label.replace(/\[.*$/, '');
      toggles.set(b, (toggles.get(b) ?? new Set()).add(p.label));
    }
  /** The toggle labels of a name (what comes before its first index), once each. */
  const bitsOf = (n: string): string[] => [...(toggles.get(n) ?? [])];
  /** The toggle labels of a signal: the bits of a vector, the signal itself for a scalar. */
  const labelsNamed = (name: string): string[] =>
    points.filter((p) => p.type === 'toggle' && ofModule(p) && (p.label === name || p.label.startsWith(name + '['))).map((p) => p.label);
  const found: Finding[] = [
    ...tiedOffSignals(facts, mod.toks, fromElsewhere, bitsOf),
    ...unwrittenSlots(facts, mod.toks, fromElsewhere, bitsOf),
    ...fullCaseDefaults(facts, widthOf, mod.toks),
    ...deadElses(facts, mod.toks),
    ...constantSignals(facts).filter((f) => !fromElsewhere.has(f.signal ?? '')),
    ...enumBits(facts, mod.toks, labelsNamed),
    // Bit widths from toggle points are one instance's only when all instances share a variant.
    ...(variants.size === 1 ? combBitFindings(facts, mod.toks, widthOf, labelsNamed) : []),
  ];
  return found.map((f) => ({ ...f, file }));
}

/** The module's facts, entered in `modules`; undefined when the reader cannot read it. */
function readModule(mod: ModuleText, variants: Set<string>, opts: TwoStateOptions, modules: Map<string, ModuleSource | null>): ModuleFacts | undefined {
  const overridden = opts.top !== undefined && Object.keys(opts.params ?? {}).length > 0;
  try {
    // With -G the top keeps its plain name but not its defaults.
    const facts = moduleFacts(mod.name, mod.toks, variants.size === 1 && variants.has(mod.name) && !(overridden && mod.name === opts.top));
    const ifLines = new Map<number, number>();
    for (const proc of facts.processes) for (const { s } of walk(proc)) if (s.kind === 'if') ifLines.set(s.line, (ifLines.get(s.line) ?? 0) + 1);
    modules.set(
      mod.name,
      modules.has(mod.name)
        ? null
        : { file: mod.file, toks: mod.toks, facts, decls: paramDecls(mod.toks), sharedIfLines: new Set([...ifLines].filter(([, n]) => n > 1).map(([l]) => l)) },
    );
    return facts;
  } catch {
    return undefined;
  }
}

/** True when the finding covers the point: a toggle of its signal (and labels), or a block
 * point its match or its lines take. Expression and condition points are never claimed. */
function findingCovers(f: FileFinding, p: CoveragePoint): boolean {
  if (f.file !== p.file || !(p.module === f.module || p.module.startsWith(f.module + '__'))) return false;
  if (f.hiers && !f.hiers.has(p.hier)) return false;
  return p.type === 'toggle'
    ? f.signal !== undefined && (f.labels ? f.labels.has(p.label) : p.label === f.signal || p.label.startsWith(f.signal + '['))
    : p.type !== 'expr' &&
        p.type !== 'cond' &&
        (f.match ? f.match(p) : f.lines !== undefined && p.line >= f.lines[0] && p.line <= f.lines[1] && (f.label === undefined || p.label === f.label));
}

/** Each uncovered point's proof, from the first finding (in kind order) that covers it; the
 * 2-state ones grouped by source position and signal, and the figures without them. */
function reportOf(points: CoveragePoint[], findings: FileFinding[]): TwoStateReport {
  const out = new Map<string, Unreachable2State>();
  const marked = new Set<CoveragePoint>();
  const proven = new Map<CoveragePoint, Proof>();
  for (const p of points) {
    if (isCovered(p)) continue;
    const f = findings.find((x) => findingCovers(x, p));
    if (!f) continue;
    const kind = f.kind ?? 'unreachable-2state';
    proven.set(p, { kind, detail: f.reason, ...(f.enable ? { enable: f.enable } : {}) });
    if (kind !== 'unreachable-2state') continue;
    marked.add(p);
    const label = p.type === 'toggle' ? f.signal! : p.label;
    const key = `${f.file}\0${f.line}\0${p.type}\0${label}`;
    const e = out.get(key);
    if (e) e.points++;
    else out.set(key, { file: f.file, line: f.line, type: p.type, label, points: 1, reason: f.reason });
  }
  return { count: marked.size, points: [...out.values()], figures: figures(points.filter((p) => !marked.has(p))), proven };
}
