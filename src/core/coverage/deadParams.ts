// The dead-parameter rule of twoState.ts: code dead under the elaborated parameters, per
// instance. Each instance's parameter values are worked out from the run's `-G` overrides (the
// DUT's) or from its instantiation in the parent instance; the arm of an `if` or a `case` whose
// condition those values decide against is code no stimulus runs, and the `-G` that would enable
// it is given where one of a few trial values does.
import type { Finding } from './finding.js';
import type { CoveragePoint } from './model.js';
import type { ModuleSource } from './moduleFacts.js';
import { condValue, elaborate, instanceOverrides, overrideValue, type ParamEnv } from './params.js';
import { evalConst, walk, type CaseItem, type Instance, type Stmt, type Tok } from './svStatements.js';

/** What the run elaborated the DUT with (TwoStateOptions): its top module, and the `-G` overrides
 * of the top's parameters (`{}`: none; undefined: unknown, so the top's parameters are too). */
export interface TopParams {
  top?: string;
  params?: Record<string, string>;
}

/** An instance's parameter values: the DUT's (`root`: its defaults and the run's `-G`), or those
 * its instantiation `via`, in the parent's file `viaFile`, fixes. */
interface InstanceEnv {
  env: ParamEnv;
  root: boolean;
  via?: Instance;
  viaFile?: string;
}

/** What a dead arm's finding says of its instance: where the values come from, and the `-G` that
 * makes a condition live (enableWith). */
interface ArmScope {
  module: string;
  hier: string;
  env: ParamEnv;
  /** ` (fixed by the instantiation 'u' at line 12)`, or '' for the DUT. */
  where: string;
  enable: Enabler;
}

/** A -G that makes `live(values)` true, trying a few values of each top parameter used. */
type Enabler = (used: string[], live: (values: Map<string, bigint | null>) => boolean, extra: bigint[]) => string | undefined;

/** The module's name without Verilator's suffix for a parameterized copy (`m__D8_P4`). */
const base = (mod: string): string => mod.replace(/__.*$/, '');
/** The names an expression uses, once each. */
const namesIn = (ts: Tok[]): string[] => [...new Set(ts.filter((x) => /^[A-Za-z_]/.test(x.t)).map((x) => x.t))];
/** The values of the expression's literal tokens: trial values for a `-G`. */
const literals = (ts: Tok[]): bigint[] => ts.map((x) => evalConst([x])).filter((v): v is bigint => v !== null);

/** A `-G NAME=value` for the top's parameters, or the instance's fixed values, in words. */
function paramText(names: string[], env: ParamEnv): string {
  // Only the names that have a value: a signal in the condition (short-circuited by a parameter,
  // as in `FallThrough && cnt == 0`) has none, and "cnt = undefined" says nothing.
  return names.filter((n) => env.values.get(n) !== undefined).map((n) => `${n} = ${env.values.get(n)}${env.origin.get(n) === 'override' ? ' (set for this run)' : ''}`).join(', ');
}

/**
 * Dead code under the elaborated parameters, per instance: the arm of an `if` or a `case` whose
 * condition is made of parameters (and localparams, literals) only, and is false under this
 * instance's values. Verilator keeps such code and its coverage points, but no stimulus runs it.
 * Instances whose values cannot be worked out (an instantiation this reader does not find, a
 * value it cannot evaluate) get no claim.
 */
export function deadParamCode(points: CoveragePoint[], modules: Map<string, ModuleSource | null>, run: TopParams): Finding[] {
  const out: Finding[] = [];
  const moduleAt = new Map<string, string>();
  for (const p of points) if (!moduleAt.has(p.hier)) moduleAt.set(p.hier, p.module);
  const topOverrides = new Map(Object.entries(run.params ?? {}).map(([k, v]) => [k, overrideValue(v)] as const));
  const envOf = instanceEnvs(moduleAt, modules, run, topOverrides);
  for (const hier of moduleAt.keys()) {
    const e = envOf(hier);
    const mod = moduleAt.get(hier)!;
    const src = modules.get(base(mod));
    if (!e || !src) continue;
    const scope: ArmScope = {
      module: base(mod),
      hier,
      env: e.env,
      where: e.root ? '' : ` (fixed by the instantiation '${e.via!.name}' at line ${e.via!.line})`,
      enable: enableWith(src, e.root, topOverrides),
    };
    for (const proc of src.facts.processes)
      for (const { s } of walk(proc)) {
        if (s.kind === 'if') out.push(...deadIfArm(s, src, scope));
        else if (s.kind === 'case' && s.op === 'case') out.push(...deadCaseArms(s, scope));
      }
  }
  return out;
}

/**
 * Each instance's parameter values, by hierarchy path (memoized; null when unknown): the DUT's
 * from its defaults and the run's overrides, an instance's from its instantiation in the nearest
 * ancestor that has points, evaluated under that ancestor's values.
 */
function instanceEnvs(
  moduleAt: Map<string, string>,
  modules: Map<string, ModuleSource | null>,
  run: TopParams,
  topOverrides: Map<string, bigint | null>,
): (hier: string) => InstanceEnv | null {
  const envs = new Map<string, InstanceEnv | null>();
  const envOf = (hier: string): InstanceEnv | null => {
    if (envs.has(hier)) return envs.get(hier)!;
    envs.set(hier, null); // cycles: unknown
    const mod = moduleAt.get(hier);
    const src = mod ? modules.get(base(mod)) : undefined;
    let r: InstanceEnv | null = null;
    if (src) {
      const enums = new Map([...src.facts.fixed].filter(([n]) => !src.decls.some((d) => d.name === n)));
      const segs = hier.split('.');
      let anc = segs.length - 1;
      while (anc > 0 && !moduleAt.has(segs.slice(0, anc).join('.'))) anc--;
      if (anc === 0) {
        // The DUT instance: its defaults and the run's -G overrides (the top's only).
        // Without the caller's word on the overrides (params undefined) the parameters are unknown.
        if (run.top !== undefined && base(mod!) === run.top) {
          const unknownParams = new Map(src.decls.filter((d) => !d.local).map((d) => [d.name, null] as const));
          r = { env: elaborate(src.decls, run.params === undefined ? unknownParams : topOverrides, enums), root: true };
        }
      } else {
        const parentHier = segs.slice(0, anc).join('.');
        const parent = envOf(parentHier);
        const parentSrc = modules.get(base(moduleAt.get(parentHier)!));
        const name = segs.at(-1)!.replace(/\[\d+\]$/, '');
        const cands = parentSrc?.facts.instances.filter((i) => i.name === name && i.module === base(mod!)) ?? [];
        if (parent && cands.length === 1) {
          const ov = instanceOverrides(cands[0].params, src.decls, parent.env.values);
          if (![...ov.keys()].some((k) => k.startsWith('\0'))) {
            const env = elaborate(src.decls, ov, enums);
            for (const k of ov.keys()) if (env.origin.get(k) === 'override') env.origin.set(k, 'instance');
            r = { env, root: false, via: cands[0], viaFile: parentSrc!.file };
          }
        }
      }
    }
    envs.set(hier, r);
    return r;
  };
  return envOf;
}

/** The Enabler of one instance: only the DUT's parameters (`root`) can be set by a `-G`. */
function enableWith(src: ModuleSource, root: boolean, topOverrides: Map<string, bigint | null>): Enabler {
  return (used, live, extra) => {
    if (!root) return undefined;
    for (const n of used) {
      const d = src.decls.find((x) => x.name === n && !x.local);
      if (!d) continue;
      const tries = new Set<bigint>([0n, 1n, ...extra, ...extra.map((v) => v + 1n), ...extra.map((v) => v - 1n)].filter((v) => v >= 0n));
      for (const v of tries) {
        const trial = elaborate(src.decls, new Map([...topOverrides, [n, v]]), new Map([...src.facts.fixed].filter(([k]) => !src.decls.some((x) => x.name === k))));
        if (live(trial.values)) return `-G ${n}=${v}`;
      }
    }
    // A localparam derived from parameters: try the parameters it may depend on.
    for (const d of src.decls.filter((x) => !x.local && !used.includes(x.name)))
      for (const v of [0n, 1n, ...extra]) {
        if (v < 0n) continue;
        const trial = elaborate(src.decls, new Map([...topOverrides, [d.name, v]]), new Map());
        if (live(trial.values)) return `-G ${d.name}=${v}`;
      }
    return undefined;
  };
}

/** The arm of an `if` its parameters decide against: the then arm when the condition is false,
 * else the else arm (the implicit one too). A point on the `if` line itself is claimed only when
 * no other `if` starts on that line. */
function deadIfArm(s: Stmt & { kind: 'if' }, src: ModuleSource, a: ArmScope): Finding[] {
  const v = condValue(s.cond, a.env.values);
  if (v === null) return [];
  const used = namesIn(s.cond);
  const cond = s.cond.map((x) => x.t).join(' ');
  const own = !src.sharedIfLines.has(s.line);
  const T: [number, number] = [s.then.line, s.then.end];
  const E: [number, number] | undefined = s.else ? [s.else.line, s.else.end] : undefined;
  if (v === 0n) {
    // The then arm never runs.
    const match = (p: CoveragePoint): boolean =>
      p.line === s.line
        ? own && (p.label === 'if' || p.label === 'elsif') && (!p.span || (p.span[0] >= s.line && p.span[1] <= T[1] && (!E || p.span[1] < E[0])))
        : p.line > s.line && p.line <= T[1] && (!E || p.line < E[0]) && (!p.span || (p.span[0] > s.line && p.span[1] <= T[1] && (!E || p.span[1] < E[0])));
    return [
      {
        module: a.module,
        kind: 'dead-param',
        hiers: new Set([a.hier]),
        match,
        line: s.line,
        reason: `code under 'if (${cond})', false with ${paramText(used, a.env)}${a.where}`,
        enable: a.enable(used, (vals) => (condValue(s.cond, vals) ?? 0n) !== 0n, literals(s.cond)),
      },
    ];
  }
  const match = (p: CoveragePoint): boolean =>
    p.line === s.line
      ? own && p.label === 'else' && (!p.span || (E !== undefined && p.span[0] > T[1] && p.span[1] <= E[1]))
      : E !== undefined && p.line >= E[0] && p.line <= E[1] && p.line > T[1] && (!p.span || (p.span[0] > T[1] && p.span[1] <= E[1]));
  return [
    {
      module: a.module,
      kind: 'dead-param',
      hiers: new Set([a.hier]),
      match,
      line: E ? E[0] : s.line,
      reason: `the else of 'if (${cond})', true with ${paramText(used, a.env)}${a.where}`,
      enable: a.enable(used, (vals) => condValue(s.cond, vals) === 0n, literals(s.cond)),
    },
  ];
}

/** The arms of a `case` on a parameter expression that are never selected, each on lines of its
 * own (an arm sharing a line with another cannot be told apart). */
function deadCaseArms(s: Stmt & { kind: 'case' }, a: ArmScope): Finding[] {
  const sel = condValue(s.sel, a.env.values);
  if (sel === null) return [];
  const used = namesIn(s.sel);
  const selText = s.sel.map((x) => x.t).join(' ');
  const out: Finding[] = [];
  const items = s.items;
  for (const it of caseItemsNotSelected(s, sel, a.env)) {
    const k = items.indexOf(it);
    const lo = it.line;
    const hi = it.body.end;
    const prevEnd = k > 0 ? items[k - 1].body.end : s.line;
    const nextLine = items[k + 1]?.line ?? Number.MAX_SAFE_INTEGER;
    if (lo <= prevEnd || hi >= nextLine) continue; // shares a line with another arm
    const label = it.labels === 'default' ? 'default' : it.labels.map((l) => l.map((x) => x.t).join('')).join(', ');
    const values = it.labels === 'default' ? [] : it.labels.map((l) => condValue(l, new Map([...a.env.values]))).filter((v): v is bigint => v !== null);
    out.push({
      module: a.module,
      kind: 'dead-param',
      hiers: new Set([a.hier]),
      match: (p) => p.line >= lo && p.line <= hi && (!p.span || (p.span[0] >= lo && p.span[1] <= hi)),
      line: lo,
      reason: `case arm '${label}' of 'case (${selText})', never selected with ${paramText(used, a.env)}${a.where}`,
      enable: it.labels === 'default' ? undefined : a.enable(used, (vals) => values.includes(condValue(s.sel, vals) ?? -1n), values),
    });
  }
  return out;
}

/** The items of a case whose selector has the value `sel`: those before the first match whose
 * labels all have other known values, every one after it, and the default when some item
 * matched. The scan stops (claiming nothing further) at an item whose value is unknown. */
function caseItemsNotSelected(s: Stmt & { kind: 'case' }, sel: bigint, env: ParamEnv): CaseItem[] {
  let matched = false;
  let decided = true;
  const dead: CaseItem[] = [];
  for (const it of s.items) {
    if (it.labels === 'default') continue;
    if (matched) {
      dead.push(it);
      continue;
    }
    const vals = it.labels.map((l) => condValue(l, env.values));
    if (vals.some((v) => v === sel)) matched = true;
    else if (vals.every((v) => v !== null)) dead.push(it);
    else {
      decided = false;
      break;
    }
  }
  const dflt = s.items.find((it) => it.labels === 'default');
  if (dflt && matched && decided) dead.push(dflt);
  return dead;
}
