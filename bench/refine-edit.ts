// Refine without a model, as an edit (core/generate/splice.ts), on a CVDP-style suite: for each
// task the built-in generator's first round (one simulation, seed 1) stands for a testbench the
// user wrote; refine then edits it. Per task: the testbench's coverage (the baseline, in the same
// run), the edit's, whether it was an edit or a new testbench (and why), and whether every line
// of the input was kept.
//   npm run bench:refine-edit [-- --suite dir --only a,b]
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadDesign } from '../src/core/run/design.js';
import { VerilatorSimulator } from '../src/core/run/simulators.js';
import { generateTestbench } from '../src/core/run/generation.js';
import { runRefinement } from '../src/core/run/refinement.js';
import { overallCoverage } from '../src/core/run/coverage.js';

const { values: o } = parseArgs({
  options: {
    suite: { type: 'string', default: resolve('bench', 'data', 'cvdp-cid012-dev') },
    only: { type: 'string' },
  },
});

/** Every line of `input`, in order and unchanged, in `text`. */
function keepsLines(text: string, input: string): boolean {
  const out = text.split('\n');
  let k = 0;
  for (const line of input.trimEnd().split('\n')) {
    k = out.indexOf(line, k);
    if (k < 0) return false;
    k++;
  }
  return true;
}

const pct = (x: number | null | undefined): string => (x === null || x === undefined ? 'n/a' : `${(100 * x).toFixed(2)}%`);
const only = o.only ? new Set(o.only.split(',')) : null;
const tasks = readdirSync(o.suite)
  .filter((t) => existsSync(join(o.suite, t, 'task.json')) && (!only || only.has(t)))
  .sort();
const sim = new VerilatorSimulator();
const rows: string[][] = [];
let edited = 0;
let kept = 0;
let gained = 0;
let worse = 0;
for (const t of tasks) {
  const task = JSON.parse(readFileSync(join(o.suite, t, 'task.json'), 'utf8')) as { dut_module: string; files: string[] };
  const { design, info } = await loadDesign({ files: task.files.map((f) => join(o.suite, t, f)), top: task.dut_module });
  const g = await generateTestbench(sim, design, info, { attempts: 1, seed: 1 });
  const user = g.best.testbench;
  const notes: string[] = [];
  const r = await runRefinement(
    { design, info, testbench: { name: 'user_tb.sv', content: user }, model: null, simulator: sim, limits: { timeoutS: 120 } },
    (e) => void (e.type === 'note' && notes.push(e.message)),
  );
  const before = overallCoverage(r.before);
  const after = overallCoverage(r.result);
  const isEdit = notes.some((n) => n.startsWith('the revision is user_tb.sv as written'));
  const keeps = r.testbench !== null && keepsLines(r.testbench, user);
  if (isEdit) edited++;
  if (isEdit && keeps) kept++;
  if (after !== null && before !== null && after > before + 1e-9) gained++;
  if (after !== null && before !== null && after < before - 1e-9) worse++;
  const why =
    notes.find((n) => n.startsWith('the testbench could not be edited'))?.replace(/^the testbench could not be edited \(/, '') ?? '';
  rows.push([t, pct(before), pct(after), isEdit ? 'edit' : 'new', keeps ? 'yes' : 'no', r.result?.status ?? 'none', why.slice(0, 70)]);
  console.error(`${t}: ${pct(before)} -> ${pct(after)} (${isEdit ? 'edit' : 'new'})`);
}
const head = ['task', 'input (baseline)', 'revision', 'kind', 'lines kept', 'status', 'why not an edit'];
const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
const line = (r: string[]): string =>
  r
    .map((c, i) => c.padEnd(widths[i]!))
    .join('  ')
    .trimEnd();
console.log(line(head));
for (const r of rows) console.log(line(r));
console.log(
  `\n${tasks.length} tasks: ${edited} edited (${kept} keeping every input line), ${gained} gained coverage, ${worse} lost coverage`,
);
