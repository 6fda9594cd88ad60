// bench/ip: the built-in generator on real public IP blocks that carry assertions.
//
// VerilogEval-style designs have no assertions, so they cannot tell whether a generated testbench
// drives a design legally. The IP corpus (bench/ip/corpus.json: OpenTitan prims, Ibex, PULP
// common_cells, ZipCPU's wb2axip, pinned by commit; bench/ip/fetch-corpus.sh fetches them) can.
// For each block this bench:
//   1. runs the model-free generator through the CLI (`chorus generate ... --json`) and takes the
//      best round's coverage and its reachable ceiling;
//   2. rebuilds the written testbench with PLAIN Verilator (`verilator --binary`, no CHORUS code),
//      runs it, and counts the design's assertion failures, once as is and once with -UVERILATOR
//      (OpenTitan's `ASSERT macros, for one, compile to nothing under `ifdef VERILATOR);
//   3. reports how much of the run the design spent out of reset (reset found from the netlist).
// It prints one table row per block, the means and the count of blocks with no assertion failure,
// and writes every row to <out>/ip.json.
//
// Usage: npm run bench:ip -- [--blocks id,id] [--rounds N] [--jobs N] [--out DIR] [--timeout S]
//                            [--build-timeout S] [--run-timeout S] [--corpus FILE] [--cache DIR]
//                            [--cli dist/cli.js] [--lint] [--refine]
// --refine: the generator's round 1 stands for a user's testbench; `chorus refine` (no model)
// edits it, and the revision is what is rebuilt and reported (its input's coverage in ip.json).
// --timeout bounds each block's generate (default 300 s); --build-timeout and --run-timeout each
// plain Verilator rebuild (900 s: a -Os build of a CPU stage takes minutes) and its run (120 s).
// --lint only checks that Verilator elaborates each block (and each dropped one) as the corpus says.
// Exit status: 0 when the bench ran (whatever the figures), 1 when the corpus is not fetched, 2 on bad arguments.
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { designFlags, loadCorpus, missingFiles, repoDir, type CorpusBlock } from './ip/corpus.js';
import { generate, refine, type GenerateOutcome, type RefineOutcome } from './ip/generate.js';
import { rebuildAndRun, type RebuildResult } from './ip/rebuild.js';
import { findReset, type ResetGuess } from './ip/reset.js';
import { runBounded } from './ip/proc.js';

const DUT_INSTANCE = 'uut';

const o = options();

function options() {
  try {
    const { values } = parseArgs({
      options: {
        blocks: { type: 'string' },
        rounds: { type: 'string', default: '4' },
        jobs: { type: 'string', default: '2' },
        out: { type: 'string', default: '/tmp/chorus-bench-ip' },
        timeout: { type: 'string', default: '300' },
        'build-timeout': { type: 'string', default: '900' },
        'run-timeout': { type: 'string', default: '120' },
        corpus: { type: 'string', default: resolve('bench', 'ip', 'corpus.json') },
        cache: { type: 'string', default: resolve('.chorus-cache', 'ip-corpus') },
        cli: { type: 'string', default: resolve('dist', 'cli.js') },
        lint: { type: 'boolean', default: false },
        refine: { type: 'boolean', default: false },
      },
    });
    for (const k of ['rounds', 'jobs', 'timeout', 'build-timeout', 'run-timeout'] as const) {
      if (!/^\d+$/.test(values[k]!) || (k !== 'rounds' && Number(values[k]) === 0))
        throw new Error(`--${k} takes a whole number, got ${values[k]}`);
    }
    return values;
  } catch (e) {
    console.error(`bench:ip: ${(e as Error).message}`);
    process.exit(2);
  }
}

const verilator = process.env.CHORUS_VERILATOR || 'verilator';
const cli = resolve(o.cli!);

interface Row {
  id: string;
  repo: string;
  top: string;
  points: number | null;
  /** Percent. */
  coverage: number | null;
  ceiling: number | null;
  asserts: { verilator: RebuildResult | null; noVerilator: RebuildResult | null };
  reset: ResetGuess | null;
  outOfResetPct: number | null;
  testbenchWritten: boolean;
  seconds: number;
  generate: GenerateOutcome | null;
  /** --refine: the generator's round 1 refined without a model (the revision is what is rebuilt). */
  refine?: RefineOutcome;
  /** Why a figure is missing (no testbench, no coverage). */
  reason?: string;
}

async function benchBlock(block: CorpusBlock, outDir: string): Promise<Row> {
  const t0 = performance.now();
  const dir = join(outDir, block.id);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const row = emptyRow(block);
  const missing = missingFiles(o.cache!, block);
  if (missing.length) return { ...row, reason: `sources missing (${missing[0]}): run bench/ip/fetch-corpus.sh` };
  const g = await generateStep(block, dir);
  Object.assign(row, {
    generate: g,
    testbenchWritten: g.written,
    points: g.points ?? null,
    coverage: g.coverage === undefined ? null : 100 * g.coverage,
    ceiling: g.ceiling === undefined ? null : 100 * g.ceiling,
    ...(g.error || !g.written ? { reason: g.error ?? 'no testbench written' } : {}),
  });
  if (g.written && o.refine) {
    // The generator's first round stands for a user's testbench; refine (no model) edits it, and
    // the revision is what the rebuild judges.
    const r = await refineStep(block, dir);
    row.refine = r;
    row.coverage = r.coverage === undefined ? null : 100 * r.coverage;
    if (!r.written) Object.assign(row, { testbenchWritten: false, reason: r.error ?? 'no revision written' });
  }
  if (row.testbenchWritten) await rebuildStep(block, dir, g.tbTop ?? `tb_${block.top}`, row);
  row.seconds = secondsSince(t0);
  return row;
}

/** What generate and refine are told alike: the block's design, where the testbench goes, the limit. */
function cliRun(block: CorpusBlock, dir: string) {
  return {
    cli,
    repoDir: repoDir(o.cache!, block.repo),
    files: block.files,
    top: block.top,
    flags: designFlags(block),
    tbFile: join(dir, 'tb.sv'),
    timeoutS: Number(o.timeout),
  };
}

/** Step 1: the CLI writes the best testbench to <dir>/tb.sv. */
function generateStep(block: CorpusBlock, dir: string): Promise<GenerateOutcome> {
  return generate({
    ...cliRun(block, dir),
    rounds: Number(o.rounds),
    dutInstance: DUT_INSTANCE,
    runsDir: join(dir, 'runs'),
    logFile: join(dir, 'generate.log'),
  });
}

/** --refine: `chorus refine --tb <round 1>` writes its revision over <dir>/tb.sv. */
function refineStep(block: CorpusBlock, dir: string): Promise<RefineOutcome> {
  return refine({
    ...cliRun(block, dir),
    input: join(dir, 'runs', block.top, 'latest', 'round-1.sv'),
    runsDir: join(dir, 'refine-runs'),
    logFile: join(dir, 'refine.log'),
  });
}

/** Steps 2 and 3: find the reset, rebuild and run the testbench as is and with -UVERILATOR. */
async function rebuildStep(block: CorpusBlock, dir: string, tbTop: string, row: Row): Promise<void> {
  const cwd = repoDir(o.cache!, block.repo);
  row.reset = await findReset(block, cwd);
  const rebuild = (name: string, flags: string[]): Promise<RebuildResult> =>
    rebuildAndRun({
      verilator,
      repoDir: cwd,
      designFiles: block.files,
      flags,
      tbFile: join(dir, 'tb.sv'),
      tbTop,
      dutInstance: DUT_INSTANCE,
      reset: row.reset,
      workDir: join(dir, name),
      buildTimeoutS: Number(o['build-timeout']),
      runTimeoutS: Number(o['run-timeout']),
    }).finally(() => rmSync(join(dir, name, 'obj'), { recursive: true, force: true }));
  row.asserts.verilator = await rebuild('rebuild-verilator', designFlags(block));
  row.asserts.noVerilator = await rebuild('rebuild-no-verilator', ['-UVERILATOR', ...designFlags(block, block.noVerilatorDefines ?? [])]);
  const sampled = [row.asserts.verilator, row.asserts.noVerilator].find((r) => r?.edges);
  if (sampled?.edges) row.outOfResetPct = (100 * sampled.outOfReset!) / sampled.edges;
}

function emptyRow(b: CorpusBlock): Row {
  return {
    id: b.id,
    repo: b.repo,
    top: b.top,
    points: null,
    coverage: null,
    ceiling: null,
    asserts: { verilator: null, noVerilator: null },
    reset: null,
    outOfResetPct: null,
    testbenchWritten: false,
    seconds: 0,
    generate: null,
  };
}

const secondsSince = (t0: number): number => (performance.now() - t0) / 1000;

/** Runs fn over items, at most `jobs` at a time, results in item order. */
async function pool<T, R>(items: T[], jobs: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(jobs, items.length)) }, worker));
  return results;
}

// --- Output

const pct = (x: number | null): string => (x === null ? '-' : x.toFixed(1));

function assertCell(r: RebuildResult | null): string {
  if (!r) return '-';
  if (r.status === 'build-failed') return 'build failed';
  const cases = r.caseChecks ? `, ${r.caseChecks === r.failures ? 'all' : r.caseChecks} unique/priority case` : '';
  const sites = r.failures ? ` (${r.sites.length} site${r.sites.length === 1 ? '' : 's'}${cases})` : '';
  const count = `${r.limitReached ? '>=' : ''}${r.failures}${sites}`;
  return r.status === 'run-failed' ? `${count}, run failed` : count;
}

function resetCell(row: Row): string {
  if (!row.testbenchWritten) return '-';
  if (!row.reset) return 'no reset found';
  return row.outOfResetPct === null ? `? (${row.reset.port})` : `${pct(row.outOfResetPct)} (${row.reset.port})`;
}

function table(rows: Row[]): string {
  const head = [
    'id',
    'points',
    'coverage %',
    'ceiling %',
    'assert fails (VERILATOR)',
    'assert fails (-UVERILATOR)',
    'out of reset %',
    'testbench written',
    'time s',
  ];
  const body = rows.map((r) => [
    r.id,
    r.points === null ? '-' : String(r.points),
    pct(r.coverage),
    pct(r.ceiling),
    assertCell(r.asserts.verilator),
    assertCell(r.asserts.noVerilator),
    resetCell(r),
    r.testbenchWritten ? (r.reason ? `yes; ${r.reason}` : 'yes') : `no: ${r.reason ?? ''}`,
    r.seconds.toFixed(0),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]): string => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(line)].join('\n');
}

const mean = (xs: number[]): number | null => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);
const present = (xs: (number | null)[]): number[] => xs.filter((x): x is number => x !== null);

function summary(rows: Row[], wallSeconds: number): Record<string, unknown> {
  const ran = (k: 'verilator' | 'noVerilator'): RebuildResult[] =>
    rows.flatMap((r) => (r.asserts[k]?.status === 'build-failed' || !r.asserts[k] ? [] : [r.asserts[k]!]));
  const clean = (k: 'verilator' | 'noVerilator'): number => ran(k).filter((x) => x.failures === 0).length;
  const cleanBoth = rows.filter(
    (r) =>
      r.testbenchWritten &&
      [r.asserts.verilator, r.asserts.noVerilator].every((x) => !x || x.status === 'build-failed' || x.failures === 0),
  ).length;
  return {
    blocks: rows.length,
    testbenchesWritten: rows.filter((r) => r.testbenchWritten).length,
    meanCoveragePct: mean(present(rows.map((r) => r.coverage))),
    meanCeilingPct: mean(present(rows.map((r) => r.ceiling))),
    meanOutOfResetPct: mean(present(rows.map((r) => r.outOfResetPct))),
    zeroFailuresVerilator: `${clean('verilator')} of ${ran('verilator').length} rebuilt`,
    zeroFailuresNoVerilator: `${clean('noVerilator')} of ${ran('noVerilator').length} rebuilt`,
    zeroFailuresEveryBuild: cleanBoth,
    wallSeconds,
  };
}

// --- Lint mode: does Verilator elaborate each block as the corpus says?

async function lintAll(blocks: Partial<CorpusBlock>[]): Promise<void> {
  await pool(blocks, Number(o.jobs), async (b) => {
    if (!b.files || !b.top) return console.log(`${b.id ?? b.top}: no files recorded`);
    const cwd = repoDir(o.cache!, b.repo!);
    const lint = async (flags: string[]): Promise<string> => {
      const r = await runBounded(verilator, ['--lint-only', '-Wno-fatal', '--timing', '--top-module', b.top!, ...flags, ...b.files!], {
        cwd,
        timeoutS: 300,
      });
      return r.code === 0 ? 'ok' : (r.stderr.split('\n').find((l) => l.startsWith('%Error')) ?? `exit ${r.code}`);
    };
    const verilatorDefined = await lint(designFlags(b));
    const verilatorUndefined = await lint(['-UVERILATOR', ...designFlags(b, b.noVerilatorDefines ?? [])]);
    console.log(`${b.id}: VERILATOR ${verilatorDefined}; -UVERILATOR ${verilatorUndefined}`);
  });
}

// --- Main

async function main(): Promise<number> {
  const corpus = loadCorpus(o.corpus!);
  const wanted = o.blocks?.split(',').map((s) => s.trim());
  const unknown = wanted?.filter((id) => !corpus.blocks.some((b) => b.id === id) && !corpus.dropped.some((b) => b.id === id));
  if (unknown?.length) {
    console.error(`bench:ip: unknown block(s): ${unknown.join(', ')}`);
    return 2;
  }
  if (!corpus.repos.some((r) => existsSync(repoDir(o.cache!, r.repo)))) {
    console.error(`bench:ip: no corpus under ${o.cache}: run bash bench/ip/fetch-corpus.sh first`);
    return 1;
  }
  if (o.lint) {
    await lintAll([...corpus.blocks, ...corpus.dropped].filter((b) => !wanted || wanted.includes(b.id!)));
    return 0;
  }
  const blocks = corpus.blocks.filter((b) => !wanted || wanted.includes(b.id));
  const outDir = resolve(o.out!);
  mkdirSync(outDir, { recursive: true });
  console.log(`bench:ip: ${blocks.length} blocks, rounds ${o.rounds}, jobs ${o.jobs}, out ${outDir}`);
  const t0 = performance.now();
  const rows = await pool(blocks, Number(o.jobs), async (b) => {
    const row = await benchBlock(b, outDir).catch((e: Error) => failedRow(b, e));
    console.log(
      `  ${b.id}: ${row.testbenchWritten ? `coverage ${pct(row.coverage)}%` : `no testbench (${row.reason})`} in ${row.seconds.toFixed(0)} s`,
    );
    return row;
  });
  const stats = summary(rows, secondsSince(t0));
  console.log(`\n${table(rows)}\n`);
  if (o.refine)
    for (const r of rows)
      console.log(
        `refine ${r.id}: ${r.refine ? `${pct(r.refine.inputCoverage === undefined ? null : 100 * r.refine.inputCoverage)} -> ${pct(r.coverage)} (${r.refine.edited ? 'edit' : `new testbench${r.refine.note ? `: ${r.refine.note.slice(0, 100)}` : ''}`})` : '-'}`,
      );
  for (const [k, v] of Object.entries(stats)) console.log(`${k}: ${typeof v === 'number' && !Number.isInteger(v) ? v.toFixed(1) : v}`);
  writeFileSync(join(outDir, 'ip.json'), JSON.stringify({ summary: stats, rows }, null, 2));
  console.log(`\nwrote ${join(outDir, 'ip.json')}`);
  return 0;
}

function failedRow(b: CorpusBlock, e: Error): Row {
  return { ...emptyRow(b), reason: `bench error: ${e.message}` };
}

main().then(
  (code) => process.exit(code),
  (e: Error) => {
    console.error(e);
    process.exit(1);
  },
);
