// bench/cvdp: what the formal engine changes on the CVDP dev split (bench/data/cvdp-cid012-dev).
// For each design, through the CLI as a user runs it:
//   A. `chorus generate --formal-budget 0`: the model-free generator without the engine; its best
//      round's scored figure;
//   B. `chorus sim` of A's testbench with the formal engine: the ceiling with its proofs too, how
//      many uncovered points it proved unreachable, reached (witness) or did not decide, and the
//      seconds it took (the engine's model and PDR time);
//   C. `chorus generate` with the formal engine: its witnesses replayed as stimulus; the scored
//      figure, and how many of B's witnessed points the replay covered.
// Soundness: every point B proves unreachable must be uncovered in A's and C's best rounds and in
// D, A's testbench with its random phase stretched to 10^5 cycles (directed phases as they are).
// An older build beside this one (`--baseline-cli`, e.g. a checkout before the source rules were
// deleted): its `chorus sim --formal-budget 0` of A's testbench gives its own reachable ceiling,
// printed beside the formal engine's (B), and the designs where the engine's is lower are counted.
// Prints one row per design, the designs at target on each figure, the median time in proofs, and
// writes every row to <out>/cvdp.json.
//
// Usage: npm run bench:cvdp -- [--designs id,id] [--rounds N] [--formal-budget S] [--out DIR] [--cli dist/cli.js]
//                              [--baseline-cli <an older build's dist/cli.js>]
// Exit status: 0 when the bench ran (whatever the figures), 1 when a point proven unreachable was
// covered (an unsound claim), 2 on bad arguments.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { runBounded } from './ip/proc.js';
import { bestResult, parseRecord } from './ip/generate.js';

const DATA = resolve('bench/data/cvdp-cid012-dev');

interface Task {
  id: string;
  dut_module: string;
  target_coverage: number;
  files: string[];
}

interface Uncovered {
  type: string;
  file: string;
  line: number;
  label: string;
  reason?: { kind: string };
}

interface Tally {
  covered: number;
  total: number;
}

interface Record {
  status: string;
  coverage?: {
    waived: { overall: number | null; tallies: { block: Tally; toggle: Tally } };
    ceiling?: { figures: { overall: number | null }; excluded: number };
  };
  uncovered?: Uncovered[];
  formal?: {
    ok: boolean;
    message: string;
    proven: number;
    witnessed: number;
    notProven: number;
    seconds: { model: number; pdr: number };
  };
  timings?: { formal?: number };
}

interface Row {
  id: string;
  target: number;
  scored: number | null;
  /** The baseline build's reachable ceiling for A's testbench (null without --baseline-cli). */
  ceilingBaseline: number | null;
  /** The ceiling with the formal engine's proofs left out (B). */
  ceilingFormal: number | null;
  proven: number;
  witnessed: number;
  notProven: number;
  formalSeconds: number;
  formalOk: boolean;
  formalMessage: string;
  scoredWithReplay: number | null;
  replayed: number;
  unsound: string[];
  /** Whether the claims were also checked against a run of LONG_CYCLES random cycles. */
  longRun: boolean;
  error?: string;
}

const { values } = parseArgs({
  options: {
    designs: { type: 'string' },
    rounds: { type: 'string', default: '3' },
    'formal-budget': { type: 'string', default: '20' },
    out: { type: 'string', default: '/tmp/chorus-bench-cvdp' },
    cli: { type: 'string', default: 'dist/cli.js' },
    'baseline-cli': { type: 'string' },
  },
});
const cli = resolve(values.cli!);
const baselineCli = values['baseline-cli'] ? resolve(values['baseline-cli']) : null;
const outDir = resolve(values.out!);
const budget = values['formal-budget']!;
if (!/^\d+(\.\d+)?$/.test(budget) || !/^\d+$/.test(values.rounds!)) {
  process.stderr.write('--formal-budget takes seconds, --rounds a count\n');
  process.exit(2);
}
mkdirSync(outDir, { recursive: true });

const key = (u: Pick<Uncovered, 'file' | 'line' | 'label'>): string => `${u.file.replace(/^.*\//, '')}:${u.line}:${u.label}`;
const blocks = (r: Record | null): Uncovered[] =>
  (r?.uncovered ?? []).filter((u) => u.type !== 'toggle' && u.type !== 'expr' && u.type !== 'cond');
const toggles = (r: Record | null): Uncovered[] => (r?.uncovered ?? []).filter((u) => u.type === 'toggle');

/** The parameters a `chorus generate --json` run instantiated the design with (scaled down from
 * the defaults), as `-G` flags: the sim of its testbench must elaborate the same design. */
function paramsOf(stdout: string): string[] {
  return (parseRecord(stdout)?.scaled_params ?? []).flatMap((p) => ['-G', `${p.name}=${p.value}`]);
}

const LONG_CYCLES = 100_000;

/** The generator's testbench with its uniform random phase ("Phase 4: N cycles of uniform random
 * stimulus") run for LONG_CYCLES cycles; null when it has no such phase. */
function stretched(tb: string): string | null {
  const m = /(\/\/ Phase 4: )\d+( cycles of uniform random stimulus[^\n]*\n(?:[^\n]*\n){0,2}?\s*repeat \()\d+\)/.exec(tb);
  return m ? tb.replace(m[0], `${m[1]}${LONG_CYCLES}${m[2]}${LONG_CYCLES})`) : null;
}

/** The best round's record of a `chorus generate --json` run (from its run folder). */
function bestOf(stdout: string): Record | null {
  const record = parseRecord(stdout);
  return record ? (bestResult<Record>(record)?.result ?? null) : null;
}

async function runDesign(t: Task, dir: string): Promise<Row> {
  const files = t.files.map((f) => join(dir, f));
  const work = join(outDir, 'cvdp', t.id);
  mkdirSync(work, { recursive: true });
  const common = [...files, '--top', t.dut_module, '--rounds', values.rounds!, '--force', '--out-dir', join(work, 'runs'), '--json'];
  const row: Row = {
    id: t.id,
    target: t.target_coverage,
    scored: null,
    ceilingBaseline: null,
    ceilingFormal: null,
    proven: 0,
    witnessed: 0,
    notProven: 0,
    formalSeconds: 0,
    formalOk: false,
    formalMessage: '',
    scoredWithReplay: null,
    replayed: 0,
    unsound: [],
    longRun: false,
  };
  const tbA = join(work, 'tb_today.sv');
  const a = await runBounded(process.execPath, [cli, 'generate', ...common, '--out', tbA, '--formal-budget', '0'], {
    cwd: work,
    timeoutS: 900,
  });
  const recA = bestOf(a.stdout);
  if (!recA?.coverage) return { ...row, error: `generate: ${a.stderr.trim().split('\n').pop() ?? a.code}` };
  row.scored = recA.coverage.waived.overall;
  const sim = async (tb: string, formalBudget: string, which = cli): Promise<{ rec: Record | null; error: string }> => {
    const r = await runBounded(
      process.execPath,
      [
        which,
        'sim',
        ...files,
        '--top',
        t.dut_module,
        ...paramsOf(a.stdout),
        '--tb',
        tb,
        '--formal-budget',
        formalBudget,
        '--out-dir',
        join(work, 'runs'),
        '--json',
      ],
      { cwd: work, timeoutS: 900 },
    );
    try {
      return { rec: JSON.parse(r.stdout) as Record, error: '' };
    } catch {
      return { rec: null, error: `sim: ${r.stderr.trim().split('\n').pop() ?? r.code}` };
    }
  };
  const b = await sim(tbA, budget);
  const recB = b.rec;
  if (!recB) return { ...row, error: b.error };
  row.ceilingFormal = recB.coverage?.ceiling?.figures.overall ?? recB.coverage?.waived.overall ?? null;
  row.proven = recB.formal?.proven ?? 0;
  if (baselineCli) {
    const base = (await sim(tbA, '0', baselineCli)).rec;
    row.ceilingBaseline = base?.coverage?.ceiling?.figures.overall ?? base?.coverage?.waived.overall ?? null;
  }
  row.witnessed = recB.formal?.witnessed ?? 0;
  row.notProven = recB.formal?.notProven ?? 0;
  row.formalSeconds = recB.formal ? recB.formal.seconds.model + recB.formal.seconds.pdr : 0;
  row.formalOk = recB.formal?.ok ?? false;
  row.formalMessage = recB.formal?.message ?? 'no uncovered point the engine judges';
  const claimed = new Set([...blocks(recB), ...toggles(recB)].filter((u) => PROOFS.has(u.reason?.kind ?? '')).map(key));
  const witnessed = new Set([...blocks(recB), ...toggles(recB)].filter((u) => u.reason?.kind === 'witness').map(key));
  const tbC = join(work, 'tb_formal.sv');
  const c = await runBounded(process.execPath, [cli, 'generate', ...common, '--out', tbC, '--formal-budget', budget], {
    cwd: work,
    timeoutS: 900,
  });
  const recC = bestOf(c.stdout);
  row.scoredWithReplay = recC?.coverage?.waived.overall ?? null;
  const leftC = new Set([...blocks(recC), ...toggles(recC)].map(key));
  const leftA = new Set([...blocks(recA), ...toggles(recA)].map(key));
  row.replayed = recC ? [...witnessed].filter((k) => !leftC.has(k)).length : 0;
  row.unsound = [...claimed].filter((k) => !leftA.has(k) || (recC && !leftC.has(k)));
  // D: A's testbench with its uniform random phase stretched to LONG_CYCLES cycles (its directed
  // phases as they are): a claimed point it covers is an unsound claim.
  if (claimed.size) {
    const long = stretched(readFileSync(tbA, 'utf8'));
    if (long) {
      const tbD = join(work, 'tb_long.sv');
      writeFileSync(tbD, long);
      const recD = (await sim(tbD, '0')).rec;
      if (recD?.coverage) {
        const leftD = new Set([...blocks(recD), ...toggles(recD)].map(key));
        row.longRun = true;
        row.unsound.push(...[...claimed].filter((k) => !leftD.has(k) && !row.unsound.includes(k)));
      }
    }
  }
  return row;
}

/** The reasons that are proofs: a claim that no stimulus covers the point. */
const PROOFS = new Set(['unreachable-formal', 'dead-param']);

const pct = (x: number | null): string => (x === null ? '   -  ' : `${(100 * x).toFixed(1).padStart(5)}%`);
const atTarget = (x: number | null, t: number): boolean => x !== null && 100 * x >= t - 1e-9;

async function main(): Promise<void> {
  const only = values.designs ? new Set(values.designs.split(',')) : null;
  const tasks = readdirSync(DATA)
    .filter((d) => existsSync(join(DATA, d, 'task.json')) && (!only || only.has(d)))
    .sort()
    .map((d) => ({ dir: join(DATA, d), task: JSON.parse(readFileSync(join(DATA, d, 'task.json'), 'utf8')) as Task }));
  process.stdout.write(
    `design                                  target  scored  ceil(baseline) ceil(formal)  proven witness undecided  formal s  scored(+replay) replayed\n`,
  );
  const rows: Row[] = [];
  for (const { dir, task } of tasks) {
    const r = await runDesign(task, dir);
    rows.push(r);
    process.stdout.write(
      `${r.id.slice(0, 39).padEnd(40)}${String(r.target).padStart(5)}% ${pct(r.scored)}  ${pct(r.ceilingBaseline)}         ${pct(r.ceilingFormal)}  ${String(r.proven).padStart(6)} ${String(r.witnessed).padStart(7)} ${String(r.notProven).padStart(9)}  ${r.formalSeconds.toFixed(1).padStart(7)}  ${pct(r.scoredWithReplay)}        ${String(r.replayed).padStart(5)}${r.error ? `  ERROR ${r.error}` : ''}${r.unsound.length ? `  UNSOUND ${r.unsound.join(' ')}` : ''}${!r.formalOk && r.formalMessage ? `  (${r.formalMessage.slice(0, 80)})` : ''}\n`,
    );
  }
  const n = rows.length;
  const count = (f: (r: Row) => boolean): number => rows.filter(f).length;
  const secs = rows.map((r) => r.formalSeconds).sort((a, b) => a - b);
  const median = n ? (n % 2 ? secs[(n - 1) / 2] : (secs[n / 2 - 1] + secs[n / 2]) / 2) : 0;
  const unsound = rows.reduce((s, r) => s + r.unsound.length, 0);
  process.stdout.write(
    `\nat target of ${n}: scored ${count((r) => atTarget(r.scored, r.target))}, ` +
      (baselineCli ? `ceiling (baseline) ${count((r) => atTarget(r.ceilingBaseline, r.target))}, ` : '') +
      `ceiling (formal) ${count((r) => atTarget(r.ceilingFormal, r.target))}, scored with witness replay ${count((r) => atTarget(r.scoredWithReplay, r.target))}\n` +
      `points proven unreachable by the formal engine: ${rows.reduce((s, r) => s + r.proven, 0)}; witnessed: ${rows.reduce((s, r) => s + r.witnessed, 0)} ` +
      `(covered by the replay: ${rows.reduce((s, r) => s + r.replayed, 0)}); not decided: ${rows.reduce((s, r) => s + r.notProven, 0)}; ` +
      `median seconds in the engine per design: ${median.toFixed(1)}; unsound claims: ${unsound} ` +
      `(claims also checked against a ${LONG_CYCLES}-cycle run on ${count((r) => r.longRun)} of ${count((r) => r.proven > 0)} designs with claims)` +
      (baselineCli
        ? `; designs where the formal engine reaches a lower ceiling than the baseline: ${count((r) => (r.ceilingFormal ?? 0) < (r.ceilingBaseline ?? 0) - 1e-9)}`
        : '') +
      '\n',
  );
  writeFileSync(join(outDir, 'cvdp.json'), JSON.stringify({ budgetS: Number(budget), rounds: Number(values.rounds), rows }, null, 1));
  process.exit(unsound ? 1 : 0);
}

void main();
