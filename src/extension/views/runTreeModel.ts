// The run-history tree of the CHORUS view (runs -> rounds -> uncovered points), as plain data:
// what each node shows and what clicking it does. runTree.ts turns it into VS Code tree items.
import { DEFAULT_SCORE } from '../../core/vocabulary/defaults.js';
import { basename, isAbsolute, join } from 'node:path';
import type { RunRecord } from './history.js';
import { pct, roundVerdictWord, RUN_FILES, scoreName, type RunFile } from '../../../webview/protocol.js';
import { safeLine, safeText } from '../../core/run/frontEnd.js';

export type RunNode =
  | { kind: 'run'; runId: string }
  /** A file of the run's folder (the log, the coverage report, the JUnit file). */
  | { kind: 'file'; runId: string; file: RunFile }
  | { kind: 'round'; runId: string; index: number }
  | { kind: 'point'; runId: string; index: number; point: number };

export interface NodeView {
  label: string;
  description: string;
  tooltip: string;
  /** A codicon id. */
  icon: string;
  collapsible: boolean;
  /** What a click runs: a command id and its arguments. */
  open?: { command: string; args: unknown[] };
  contextValue: string;
}

/** Uncovered points listed under a round; the dashboard has the full list. */
export const MAX_POINTS = 50;

const FILE_VIEW: Record<RunFile, { label: string; icon: string }> = {
  log: { label: 'Log', icon: 'output' },
  report: { label: 'Coverage report', icon: 'graph' },
  junit: { label: 'JUnit', icon: 'checklist' },
};

const STATE_ICON = { running: 'sync~spin', done: 'pass', cancelled: 'circle-slash', failed: 'error' } as const;

const passed = (r: RunRecord['rounds'][number]): boolean => r.verdict?.passed ?? r.status === 'success';
const cancelled = (r: RunRecord['rounds'][number]): boolean => r.status === 'exception' && r.errMsg.trim() === 'cancelled';

function bestCoverage(run: RunRecord): number | null {
  return run.best !== null ? (run.rounds[run.best]?.coverage?.overall ?? null) : null;
}

export function children(runs: RunRecord[], node?: RunNode): RunNode[] {
  if (!node) return runs.map((r) => ({ kind: 'run', runId: r.id }));
  const run = runs.find((r) => r.id === node.runId);
  if (!run) return [];
  if (node.kind === 'run')
    return [
      ...RUN_FILES.filter((file) => run.runFolder?.[file]).map((file): RunNode => ({ kind: 'file', runId: run.id, file })),
      ...run.rounds.map((_, index): RunNode => ({ kind: 'round', runId: run.id, index })),
    ];
  if (node.kind === 'round') {
    const n = Math.min(run.rounds[node.index]?.uncovered.length ?? 0, MAX_POINTS);
    return Array.from({ length: n }, (_, point) => ({ kind: 'point', runId: run.id, index: node.index, point }));
  }
  return [];
}

/** What a node shows: its text is a simulation's and a model's words (labels, messages, source
 * lines), shown as text with no control or disguising invisible characters (util/untrusted.ts). */
export function view(runs: RunRecord[], node: RunNode): NodeView | null {
  const v = nodeView(runs, node);
  return v && { ...v, label: safeLine(v.label), description: safeLine(v.description), tooltip: safeText(v.tooltip) };
}

function nodeView(runs: RunRecord[], node: RunNode): NodeView | null {
  const run = runs.find((r) => r.id === node.runId);
  if (!run) return null;
  if (node.kind === 'run') {
    const when = new Date(run.startedAt);
    const time = Number.isNaN(when.getTime()) ? run.startedAt : when.toLocaleString();
    return {
      label: `${run.kind} ${run.top || '(design)'}`,
      description: `${pct(bestCoverage(run))} · ${run.state}`,
      tooltip: `${run.kind} of ${run.top || 'the design'} with ${run.model} on ${run.simulator}, ${time}\nbest ${scoreName(run.score ?? DEFAULT_SCORE)}: ${pct(bestCoverage(run))}${run.message ? `\n${run.message}` : ''}`,
      icon: STATE_ICON[run.state],
      collapsible: run.rounds.length > 0 || Boolean(run.runFolder),
      open: run.testbenchPath ? { command: 'vscode.open', args: [run.testbenchPath] } : undefined,
      contextValue: 'chorus.run',
    };
  }
  if (node.kind === 'file') {
    const path = run.runFolder?.[node.file];
    if (!path) return null;
    return {
      label: FILE_VIEW[node.file].label,
      description: basename(path),
      tooltip: path,
      icon: FILE_VIEW[node.file].icon,
      collapsible: false,
      open: { command: 'chorus.openRunFile', args: [run.id, node.file] },
      contextValue: 'chorus.runFile',
    };
  }
  const r = run.rounds[node.index];
  if (!r) return null;
  if (node.kind === 'round') {
    const best = run.best === node.index;
    const errors = r.diagnostics.filter((d) => d.severity === 'error').length;
    return {
      label: `round ${r.round + 1}${r.sample ? ` · sample ${r.sample + 1}` : ''}${best ? ' ★' : ''}`,
      description: `${roundVerdictWord(r)} · ${pct(r.coverage?.overall ?? null)}${errors ? ` · ${errors} error${errors > 1 ? 's' : ''}` : ''}`,
      tooltip: [r.errMsg.split('\n')[0], ...r.notes].filter(Boolean).join('\n') || r.status,
      icon: passed(r) ? (best ? 'star-full' : 'beaker') : cancelled(r) ? 'circle-slash' : 'warning',
      collapsible: r.uncovered.length > 0,
      open: r.testbench !== null ? { command: 'chorus.openRound', args: [run.id, node.index] } : undefined,
      contextValue: r.testbench !== null ? 'chorus.round' : 'chorus.roundEmpty',
    };
  }
  const p = r.uncovered[node.point];
  if (!p) return null;
  const file = isAbsolute(p.file) ? p.file : join(run.designDir, p.file);
  return {
    label: `${p.file.split('/').pop()}:${p.line}`,
    description: `${p.type} ${p.label}${p.source ? ` · ${p.source}` : ''}`,
    tooltip: `${p.type} point ${p.label} not covered${p.hier ? ` (${p.hier})` : ''}`,
    icon: 'circle-large-outline',
    collapsible: false,
    open: { command: 'chorus.openLocation', args: [file, p.line] },
    contextValue: 'chorus.point',
  };
}
