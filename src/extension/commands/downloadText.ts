// The words of "CHORUS: Download a Model..." (no `vscode` here: unit-tested as they are). The
// extension host stays light (the hub client and the downloader live in the worker); what it shares
// with the CLI (the model reference's parser, byte and duration formats) comes from the light
// core/run/frontEnd.ts.
import type { CandidateSummary, PlanSummary, ProgressEvent } from '../worker/protocol.js';
import { formatBytes, formatDuration, parseModelRef } from '../../core/run/frontEnd.js';

/** Null when the input box holds a model reference, else why not (the core's parser decides). */
export function validateModelRef(text: string): string | null {
  if (!text.trim()) return 'a Hugging Face repository: owner/name, or owner/name:Q4_K_M for one quantization';
  try {
    parseModelRef(text);
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

/** The part after `owner/name:` (none: the hub's default choice). */
export const selectorOf = (ref: string): string | undefined => parseModelRef(ref).selector;

export const timeLeft = (s: number): string => (Number.isFinite(s) && s >= 0 ? `${formatDuration(s)} left` : '');

type Download = Extract<ProgressEvent, { kind: 'download' }>;

/** The notification's line: "file 1/2: 3.1 MB of 24.0 MB, 5.2 MB/s, 4 s left" (the rate and the
 * time left once measured); "checking <file>" while the hashes are computed. */
export function progressMessage(p: Download): string {
  const name = p.file.slice(p.file.lastIndexOf('/') + 1);
  const file = p.files > 1 ? `file ${p.index}/${p.files} ` : '';
  if (p.phase === 'verify') return `${file}checking ${name} against the hub's SHA-256`;
  const parts = [`${formatBytes(p.bytes)} of ${formatBytes(p.total)}`];
  if (p.rate > 0) parts.push(`${formatBytes(p.rate)}/s`);
  const left = p.rate > 0 ? timeLeft(p.secondsLeft) : '';
  if (left) parts.push(left);
  return `${file}${file ? '(' + name + '): ' : ''}${parts.join(', ')}`;
}

/** Whole percent of the model on disk (for the notification's increments). */
export const percent = (p: Download): number => (p.total > 0 ? Math.min(100, (p.bytes / p.total) * 100) : 0);

export function hostOf(endpoint: string): string {
  try {
    return new URL(endpoint).host;
  } catch {
    return endpoint;
  }
}

/** The modal's question: nothing is fetched before the user says yes. */
export function confirmText(plan: PlanSummary, selector: string): string {
  const c = plan.candidates.find((x) => x.selector === selector);
  const size = c ? formatBytes(c.size) : 'unknown size';
  return `Download ${plan.repo} (${selector}, ${size}) from ${hostOf(plan.endpoint)}?${plan.resumes ? ' A cancelled download of it is resumed.' : ''}`;
}

/** The candidates for the picker: runnable ones first, the default (chosen) first of all. */
export function orderCandidates(plan: PlanSummary): CandidateSummary[] {
  const rank = (c: CandidateSummary): number => (c.selector === plan.chosen && plan.decided ? 0 : c.engine === 'none' ? 2 : 1);
  return [...plan.candidates].sort((a, b) => rank(a) - rank(b));
}

/** The settings for a model of the cache: its folder, its engine, and for an ONNX export its dtype. */
export function modelSettings(m: { dir: string; engine: string; kind: string; selector: string }): Record<string, string> {
  const s: Record<string, string> = { 'model.localPath': m.dir, 'model.engine': m.engine === 'onnx' ? 'onnx' : 'llama' };
  if (m.kind === 'onnx' && ['fp32', 'q4', 'q4f16'].includes(m.selector)) s['model.dtype'] = m.selector;
  return s;
}

/** The shell commands a hub message tells the user to run (a checkpoint's fetch and conversion),
 * for a "Copy Command" button: `chorus model pull ...` with its options, `chorus-train export ...`. */
export function commandsIn(message: string): string[] {
  const out: string[] = [];
  for (const m of message.matchAll(
    /\b(chorus model pull [^\s'()]+(?: --[\w-]+(?: (?!--)[^\s'()]+)?)*|chorus-train export [^'()]*[^'()\s])/g,
  ))
    out.push(m[1]);
  return out;
}
