// Run history: every generate/refine/coverage run with its rounds, kept in workspace state (the
// testbench texts included, bounded) so the dashboard survives a reload.
import { DEFAULT_SCORE } from '../../core/vocabulary/defaults.js';
import type { Memento } from 'vscode';
import type { RoundRecord, RunFolderFiles } from '../worker/protocol.js';
import type { RoundView, RunView } from '../../../webview/protocol.js';
import { safeDeep } from '../../core/run/frontEnd.js';

export interface RunRecord {
  id: string;
  kind: 'generate' | 'refine' | 'coverage';
  startedAt: string;
  top: string;
  model: string;
  simulator: string;
  state: 'running' | 'done' | 'cancelled' | 'failed';
  message: string;
  rounds: RoundRecord[];
  best: number | null;
  testbenchPath: string | null;
  designDir: string;
  /** The run folder the worker wrote (log, report, JUnit), as the CLI's `chorus-out/`. */
  runFolder?: RunFolderFiles | null;
  /** How the run was scored (`paper`: mean of block and toggle; `legal`: ...): the figure's name. */
  score?: string;
}

const KEY = 'chorus.history';
const MAX_RUNS = 30;

export class RunHistory {
  private runs: RunRecord[];
  private listeners: Array<() => void> = [];

  constructor(private readonly store?: Memento) {
    this.runs = store?.get<RunRecord[]>(KEY) ?? [];
  }

  onChange(f: () => void): { dispose(): void } {
    this.listeners.push(f);
    return { dispose: () => (this.listeners = this.listeners.filter((x) => x !== f)) };
  }

  private changed(): void {
    void this.store?.update(KEY, this.runs.slice(0, MAX_RUNS));
    for (const f of this.listeners) f();
  }

  start(r: Omit<RunRecord, 'id' | 'startedAt' | 'state' | 'rounds' | 'best' | 'message'>): RunRecord {
    const run: RunRecord = {
      ...r,
      id: `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`,
      startedAt: new Date().toISOString(),
      state: 'running',
      message: '',
      rounds: [],
      best: null,
    };
    this.runs.unshift(run);
    this.runs = this.runs.slice(0, MAX_RUNS);
    this.changed();
    return run;
  }

  update(run: RunRecord, patch: Partial<RunRecord>): void {
    Object.assign(run, patch);
    this.changed();
  }

  addRound(run: RunRecord, rec: RoundRecord): void {
    run.rounds.push(rec);
    this.changed();
  }

  get(id: string): RunRecord | undefined {
    return this.runs.find((r) => r.id === id);
  }

  all(): RunRecord[] {
    return this.runs;
  }
}

export function roundView(r: RoundRecord): RoundView {
  return {
    sample: r.sample,
    round: r.round,
    status: r.status,
    verdict: r.verdict ?? { passed: r.status === 'success' },
    coverage: r.coverage,
    uncovered: distinctPoints(r.uncovered).slice(0, 100),
    errors: r.diagnostics.filter((d) => d.severity === 'error').length,
    notes: r.notes,
    hasTestbench: r.testbench !== null,
    lines: r.testbench ? r.testbench.split('\n').length : 0,
  };
}

/** What the dashboard shows of a run: every text in it (messages, diagnostics, uncovered points'
 * labels and source lines, notes) safe to show, whatever was stored (util/untrusted.ts). */
export function runView(r: RunRecord): RunView {
  return safeDeep({
    id: r.id,
    kind: r.kind,
    startedAt: r.startedAt,
    top: r.top,
    model: r.model,
    simulator: r.simulator,
    state: r.state,
    message: r.message,
    rounds: r.rounds.map(roundView),
    best: r.best,
    testbenchPath: r.testbenchPath,
    runFolder: r.runFolder ?? null,
    score: r.score ?? DEFAULT_SCORE,
  });
}

/** Uncovered points as a reader lists them: one entry per point (a toggle bit and its direction
 * are the point's label), never the same file, line, type and label twice. */
export function distinctPoints<P extends { type: string; file: string; line: number; label: string }>(points: P[]): P[] {
  const seen = new Set<string>();
  return points.filter((p) => {
    const k = `${p.type}\u0000${p.file}\u0000${p.line}\u0000${p.label}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/** The testbench of the round before `index` in the same sample (for "diff to previous"). */
export function previousTestbench(run: RunRecord, index: number): string | null {
  const cur = run.rounds[index];
  if (!cur) return null;
  for (let i = index - 1; i >= 0; i--) {
    const r = run.rounds[i];
    if (r.sample === cur.sample && r.testbench !== null) return r.testbench;
  }
  return null;
}
