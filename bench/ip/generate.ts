// bench/ip's generation step: the model-free generator through the CLI, as a user runs it
// (`chorus generate <files> --top T -I.. -D.. -G.. --out tb.sv --json`), and the coverage of the
// best round with its reachable ceiling, read from the run folder's summary.json.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runBounded } from './proc.js';

export interface GenerateOutcome {
  /** The best testbench was written to tbFile. */
  written: boolean;
  tbTop?: string;
  /** Overall coverage after waivers, and the reachable ceiling, as fractions. */
  coverage?: number;
  ceiling?: number;
  /** Coverage points behind the overall figure (block + toggle, after waivers). */
  points?: number;
  rounds?: number;
  scaledParams?: unknown[];
  /** The CLI's verdict failure line, when it gave one. */
  verdict?: string;
  exitCode: number | null;
  error?: string;
  seconds: number;
}

export interface GenerateRequest {
  cli: string;
  repoDir: string;
  files: string[];
  top: string;
  flags: string[];
  rounds: number;
  dutInstance: string;
  tbFile: string;
  runsDir: string;
  logFile: string;
  timeoutS: number;
}

/** `node <cli> <command> <files> --top T <flags> <extra> --out <tbFile> --force --out-dir <runsDir> --json`,
 * in the block's repository, its command line and stderr kept in logFile. */
async function runCli(
  q: Pick<GenerateRequest, 'cli' | 'repoDir' | 'files' | 'top' | 'flags' | 'tbFile' | 'runsDir' | 'logFile' | 'timeoutS'>,
  command: string,
  extra: string[],
): ReturnType<typeof runBounded> {
  const args = [
    q.cli,
    command,
    ...q.files,
    '--top',
    q.top,
    ...q.flags,
    ...extra,
    '--out',
    q.tbFile,
    '--force',
    '--out-dir',
    q.runsDir,
    '--json',
  ];
  const r = await runBounded(process.execPath, args, { cwd: q.repoDir, timeoutS: q.timeoutS });
  writeFileSync(q.logFile, `$ node ${args.join(' ')}\n${r.stderr}`);
  return r;
}

export async function generate(q: GenerateRequest): Promise<GenerateOutcome> {
  const r = await runCli(q, 'generate', ['--rounds', String(q.rounds), '--instance', q.dutInstance]);
  const base = { exitCode: r.code, seconds: r.seconds, written: existsSync(q.tbFile) };
  if (r.timedOut) return { ...base, error: `generate timed out after ${q.timeoutS} s` };
  const record = parseRecord(r.stdout);
  if (!record) return { ...base, error: lastLine(r.stderr) || `exit status ${r.code}` };
  return { ...base, ...bestRound(record), verdict: record.verdict?.failure, scaledParams: record.scaled_params };
}

/** What `chorus generate --json` prints (the fields the benches read). */
export interface RunRecord {
  run_dir?: string;
  best?: { sample: number; round: number };
  rounds?: { sample: number; round: number }[];
  scaled_params?: Array<{ name: string; value: string }>;
  verdict?: { passed?: boolean; failure?: string };
}

interface Figures {
  overall: number;
  tallies: Record<string, { covered: number; total: number }>;
}

/** The best round's result record and the number of rounds, from the run folder's summary.json;
 * null when the run has no best round or no summary. */
export function bestResult<T>(record: RunRecord): { result: T; rounds: number } | null {
  const summaryPath = record.run_dir ? join(record.run_dir, 'summary.json') : '';
  if (!record.best || !existsSync(summaryPath)) return null;
  try {
    const summary = JSON.parse(readFileSync(summaryPath, 'utf8')) as { rounds: { sample: number; round: number; result: T }[] };
    const best = summary.rounds.find((x) => x.sample === record.best!.sample && x.round === record.best!.round);
    return best ? { result: best.result, rounds: summary.rounds.length } : null;
  } catch {
    return null;
  }
}

/** Coverage, ceiling and points of the best round, from the run folder's summary.json. */
function bestRound(record: RunRecord): Partial<GenerateOutcome> {
  const best = bestResult<{
    tbTop?: string;
    status?: string;
    err_msg?: string;
    coverage?: { waived: Figures; ceiling?: { figures: Figures } };
  }>(record);
  if (!best) return { error: 'no best round in the run record' };
  const cov = best.result.coverage;
  if (!cov)
    return { error: `no round measured coverage (best round: ${best.result.status}: ${best.result.err_msg?.split('\n')[0] ?? ''})` };
  const t = cov.waived.tallies;
  return {
    tbTop: best.result.tbTop,
    coverage: cov.waived.overall,
    ceiling: cov.ceiling?.figures.overall,
    points: (t.block?.total ?? 0) + (t.toggle?.total ?? 0),
    rounds: best.rounds,
  };
}

export function parseRecord(stdout: string): RunRecord | null {
  try {
    return JSON.parse(stdout) as RunRecord;
  } catch {
    return null;
  }
}

function lastLine(text: string): string {
  return (
    text
      .trim()
      .split('\n')
      .filter((l) => l.trim())
      .pop() ?? ''
  ).slice(0, 300);
}

export interface RefineOutcome {
  /** The revision was written to tbFile. */
  written: boolean;
  /** The revision is an edit of the input (it calls chorus_refine()), not a new testbench. */
  edited: boolean;
  /** Overall coverage after waivers of the input and of the revision, as fractions. */
  inputCoverage?: number;
  coverage?: number;
  /** Why the input could not be edited, as the CLI's note says. */
  note?: string;
  exitCode: number | null;
  error?: string;
  seconds: number;
}

export interface RefineRequest {
  cli: string;
  repoDir: string;
  files: string[];
  top: string;
  flags: string[];
  /** The testbench to refine. */
  input: string;
  tbFile: string;
  runsDir: string;
  logFile: string;
  timeoutS: number;
}

/** `chorus refine --tb <input> ... --out <tbFile> --json`, no model: the built-in generator edits it. */
export async function refine(q: RefineRequest): Promise<RefineOutcome> {
  const r = await runCli(q, 'refine', ['--tb', q.input]);
  const written = existsSync(q.tbFile);
  const base = {
    exitCode: r.code,
    seconds: r.seconds,
    written,
    edited: written && readFileSync(q.tbFile, 'utf8').includes('chorus_refine();'),
  };
  if (r.timedOut) return { ...base, error: `refine timed out after ${q.timeoutS} s` };
  const note = /the testbench could not be edited \((.*)\): the revision/.exec(r.stderr)?.[1];
  try {
    const rec = JSON.parse(r.stdout) as { before?: { coverage?: { waived: Figures } }; result?: { coverage?: { waived: Figures } } };
    return {
      ...base,
      inputCoverage: rec.before?.coverage?.waived.overall,
      coverage: rec.result?.coverage?.waived.overall,
      ...(note ? { note } : {}),
    };
  } catch {
    return { ...base, error: lastLine(r.stderr) || `exit status ${r.code}` };
  }
}
