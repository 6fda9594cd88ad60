// `chorus eval compare`: rows' report.json files side by side (paper §5.2): each row's figures, the
// oracle union, which tasks each row solves that another does not; writes compare.json/.md/.html.
import { existsSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { CompareError, compareReports, readReport, writeComparison, type CompareInput, type Comparison } from '../core/run/evaluation.js';
import { flags, RESULT_OPTIONS, runCommand, type CommandRun } from './command.js';
import { pct as formatPct, safeJson } from '../core/run/frontEnd.js';

const pct = (x: number | null | undefined): string => formatPct(x, 1);

export const HELP = `Usage: chorus eval compare <report dir|report.json> <report dir|report.json> [...] [options]

Compares the rows of several \`chorus eval\` runs on one suite (paper §5.2): each row's Pass@1,
Pass@5, Cov@1 and Cov@5; the oracle union (every task taken from the row that did best on it: an
upper bound on combining the rows); for each pair of rows the tasks solved by one only, by both,
by neither; the tasks exactly one row solves; a per-task table. Writes compare.json, compare.md
and compare.html.

Options:
  --out <dir>             output folder (default out/eval/compare)
  --intersect             compare the tasks every report holds (the others are listed) instead
                          of refusing reports that cover different tasks
  --force                 compare reports run under different settings (suite, samples, rounds,
                          history, simulator, score); the differences are listed as warnings
  --json                  print compare.json on stdout

Exit code: 0 compared, 2 usage errors, missing or unreadable reports, different tasks or settings.
`;

export const OPTIONS = { ...RESULT_OPTIONS, ...flags('intersect') };

export function runEvalCompare(argv: string[]): Promise<number> {
  return runCommand(
    argv,
    {
      name: 'eval compare',
      options: OPTIONS,
      help: HELP,
      takesDesign: false,
      errors: [(e) => (e instanceof CompareError ? e.message : undefined)],
    },
    compareCommand,
  );
}

function reportPath(p: string): string | null {
  const abs = resolve(p);
  if (!existsSync(abs)) return null;
  if (statSync(abs).isDirectory()) {
    const f = join(abs, 'report.json');
    return existsSync(f) ? f : null;
  }
  return abs;
}

async function compareCommand({ values: o, positionals, fail }: CommandRun<typeof OPTIONS>): Promise<number> {
  if (positionals.length < 2) return fail('name at least two reports (report folders or report.json files)');
  const inputs: CompareInput[] = [];
  for (const p of positionals) {
    const f = reportPath(p);
    if (!f) return fail(`no report at ${p} (a folder with report.json, or a report.json file)`);
    try {
      const report = readReport(f);
      inputs.push({ label: report.row.label || basename(dirname(f)), report });
    } catch (e) {
      return fail(`cannot read ${p}: ${(e as Error).message.split('\n')[0]}`);
    }
  }
  const c = compareReports(inputs, { intersect: o.intersect === true, force: o.force === true });
  const outDir = resolve(o.out ?? join('out', 'eval', 'compare'));
  const paths = writeComparison(c, outDir);
  if (o.json) process.stdout.write(safeJson(c) + '\n');
  else process.stdout.write(summary(c) + `report: ${paths.md}\n        ${paths.html}\n        ${paths.json}\n`);
  return 0;
}

function summary(c: Comparison): string {
  const w = Math.max(12, ...c.rows.map((r) => r.label.length));
  const line = (l: string, f: Comparison['rows'][number] | Comparison['union']): string =>
    `${l.padEnd(w)}  Pass@1 ${pct(f.pass_at_1).padStart(6)}  Pass@5 ${pct(f.pass_at_5).padStart(6)}  Cov@1 ${pct(f.cov_at_1).padStart(6)}  Cov@5 ${pct(f.cov_at_5).padStart(6)}  (${f.tasks} tasks)\n`;
  let s = `${c.suite.name} (${c.suite.format}): ${c.tasks.length} tasks compared\n`;
  for (const x of c.warnings) s += `warning (--force): ${x}\n`;
  for (const d of c.dropped) s += `left out (--intersect): ${d.tasks.length} task(s) of ${d.label}\n`;
  for (const r of c.rows) s += line(r.label, r);
  s += line('oracle union', c.union);
  for (const p of c.pairs)
    s += `${p.a} vs ${p.b}: ${p.a_only} only ${p.a}, ${p.b_only} only ${p.b}, ${p.both} both, ${p.neither} neither\n`;
  s += `solved by exactly one row: ${c.solved_by_one.length}\n`;
  return s;
}
