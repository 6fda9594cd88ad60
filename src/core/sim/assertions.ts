// The design's own assertions as legality rules: how a run that broke them is said (the terminal's
// summary, the model's feedback, a failed round's one line) and how the `legal` score mode judges
// it. Every count, site and time here comes from the record's `dutAssertions`, which the backend
// filled from the harness report (a channel the testbench cannot write); the log is never read.
import type { Diagnostic } from '../design/diagnostic.js';
import type { DutAssertion, SimResult } from './result.js';
import type { ScoreMode } from '../vocabulary/types.js';

/** A path's last component (no node:path: front ends bundle this module). */
function basename(f: string): string {
  return f.slice(f.lastIndexOf('/') + 1);
}

/** `1234567` -> `1,234,567` (fixed locale: the text is part of tests and of the model's feedback). */
export function thousands(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/**
 * A simulation time in model units (`precision`: a power of ten in seconds, -12 = 1 ps) as
 * nanoseconds, the way the summary shows it: `125 ns`, `0.5 ns`. Exact (string arithmetic).
 */
export function formatSimTime(units: number, precision: number): string {
  const digits = -9 - precision; // decimal places of one model unit in ns
  const s = String(Math.max(0, Math.trunc(units)));
  if (digits <= 0) return `${s === '0' ? '0' : s + '0'.repeat(-digits)} ns`;
  const padded = s.padStart(digits + 1, '0');
  const int = padded.slice(0, -digits);
  const frac = padded.slice(-digits).replace(/0+$/, '');
  return `${int}${frac ? `.${frac}` : ''} ns`;
}

/** Total failures over every site. */
export function assertionCount(list: readonly DutAssertion[]): number {
  return list.reduce((n, a) => n + a.count, 0);
}

const KIND_WORD: Record<DutAssertion['kind'], string> = {
  assertion: '',
  unique: ' (unique violation)',
  priority: ' (priority violation)',
  error: ' ($error)',
  fatal: ' ($fatal)',
};

function site(a: DutAssertion): string {
  return `${basename(a.file)}:${a.line}`;
}

function what(a: DutAssertion): string {
  return a.message ? `: ${a.message}` : KIND_WORD[a.kind] ? `:${KIND_WORD[a.kind]}` : '';
}

/**
 * One sentence: `the stimulus broke the design's assertions 3,048 times, first at sync_fifo.sv:44
 * at 125 ns: push while full`; with more sites, each site's count and first time, up to `maxSites`,
 * then `and N more sites`. Empty when nothing fired.
 */
export function assertionSummary(list: readonly DutAssertion[] | undefined, maxSites = 3): string {
  if (!list?.length) return '';
  const total = assertionCount(list);
  const times = (n: number): string => `${thousands(n)} time${n === 1 ? '' : 's'}`;
  const sorted = [...list];
  if (sorted.length === 1) {
    const a = sorted[0];
    return `the stimulus broke the design's assertions ${times(total)}, first at ${site(a)} at ${a.firstTime}${what(a)}`;
  }
  const shown = sorted
    .slice(0, maxSites)
    .map((a) => `${site(a)} ${times(a.count)}, first at ${a.firstTime}${what(a)}`)
    .join('; ');
  const more = sorted.length - maxSites;
  return (
    `the stimulus broke the design's assertions ${times(total)} at ${sorted.length} sites: ${shown}` +
    (more > 0 ? `; and ${more} more site${more === 1 ? '' : 's'}` : '')
  );
}

/**
 * `legal` scoring: a run that ran but broke the DUT's assertions is a failed run. The status is
 * `xrun_failed` (the LLM4Cov status of a simulation that failed; what the ranking, the reward and
 * the model's feedback already know), the stage `run`; the coverage reached stays in the record.
 * Undefined when the mode is `paper` or nothing fired.
 */
export function legalFailure(mode: ScoreMode | undefined, list: readonly DutAssertion[] | undefined): string | undefined {
  if (mode !== 'legal' || !list?.length) return undefined;
  return `${assertionSummary(list)}. Under legal scoring a run whose stimulus breaks the design's own assertions is a failed run (reward 0), whatever coverage it reached: drive the design only as its assertions allow`;
}

/**
 * The one verdict on a run, in every score mode: a run passed when it simulated without error AND
 * broke none of the design's assertions. The reward stays the score mode's (`paper` fixes it at
 * 1 + c for a run that ran, docs/protocol.md §5), but the exit status, the JUnit case, the text and
 * the editor all say "failed" when the stimulus broke the design's own checks: coverage reached by
 * illegal stimulus is not a result an engineer can sign off. Undefined when the run passed, else
 * its one-line reason.
 */
export function runFailure(r: Pick<SimResult, 'status' | 'stage' | 'diagnostics' | 'err_msg' | 'dutAssertions'>): string | undefined {
  if (r.status !== 'success') return failureReason(r as SimResult) || r.status;
  const broke = assertionSummary(r.dutAssertions);
  return broke ? `assertions failed: ${broke}` : undefined;
}

/** A record as the front ends print it in JSON: the record plus its verdict (runFailure). */
export function withVerdict<R extends Parameters<typeof runFailure>[0]>(r: R): R & { verdict: { passed: boolean; failure?: string } } {
  const failure = runFailure(r);
  return { ...r, verdict: failure === undefined ? { passed: true } : { passed: false, failure } };
}

/** Whether a run broke any of the design's assertions. */
export function firedAssertions(r: Pick<SimResult, 'dutAssertions'> | null | undefined): boolean {
  return Boolean(r?.dutAssertions?.length);
}

/** The limit codes the engine's own diagnostics carry when a run hit a bound. */
const LIMIT_CODES = new Set(['CHORUS-OUTPUT', 'CHORUS-TIMEOUT', 'CHORUS-SIMTIME', 'CHORUS-OOM']);

function diagText(d: Diagnostic): string {
  const at = d.file ? `${basename(d.file)}:${d.line}: ` : '';
  const n = d.count && d.count > 1 ? ` (${thousands(d.count)} times)` : '';
  return `${at}${d.message}${n}`;
}

/**
 * Why a run failed, in one line, from the record's own fields: its status and stage, then the
 * limit it hit, the DUT assertions (legal scoring), the first error diagnostic, or the first line
 * of err_msg. Never a guess from the log. Empty for a successful run.
 */
export function failureReason(r: SimResult): string {
  if (r.status === 'success') return '';
  const head = `${r.status} at ${r.stage}`;
  const errors = r.diagnostics.filter((d) => d.severity === 'error');
  const limit = errors.find((d) => d.code && LIMIT_CODES.has(d.code));
  const firstLine = (s: string): string => s.split('\n').find((l) => l.trim()) ?? '';
  let why: string;
  if (limit) why = limit.message;
  else if (r.stage === 'run' && r.dutAssertions?.length && /^the stimulus broke/.test(r.err_msg))
    why = firstLine(r.err_msg).replace(/\. Under legal scoring.*$/, ' (legal scoring)');
  else if (errors.length)
    why = diagText(errors[0]) + (errors.length > 1 ? ` (+${errors.length - 1} more error${errors.length === 2 ? '' : 's'})` : '');
  else why = firstLine(r.err_msg);
  const oneLine = why.replace(/\s+/g, ' ').trim();
  return oneLine ? `${head}: ${oneLine.length > 300 ? oneLine.slice(0, 297) + '...' : oneLine}` : head;
}
