// A run's progress events from the worker (generation, refinement and coverage runs alike) into the
// output channel, the progress notification, the status bar and the run history. The notification
// always says where the run is (round, stage: lint, build, simulate, coverage) and how long it has
// run: the elapsed time ticks every second, between events too.
import { safeLine, safeText } from '../../core/run/frontEnd.js';
import type { RunRecord } from '../views/history.js';
import { pct, roundVerdictWord } from '../../../webview/protocol.js';
import type { ProgressEvent } from '../worker/protocol.js';
import type { Session } from './session.js';

/** The simulator's stages as an engineer names them. */
const STAGE_WORD = { check: 'lint', build: 'build', run: 'simulate', coverage: 'coverage' } as const;

export function elapsedText(ms: number): string {
  const s = Math.floor(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
}

/**
 * One run's progress. `report` is the notification's (message, fraction done); the message it gets
 * is "<where> · <stage> · <elapsed>". Progress text (status lines, the model's streamed reply) is a
 * model's or a simulation's words: it reaches every view as text only.
 */
export class RunProgress {
  private where = '';
  private stage = '';
  private readonly t0 = Date.now();
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(
    private readonly s: Session,
    private readonly run: RunRecord,
    private readonly report: (message: string, fraction?: number) => void,
  ) {
    this.timer = setInterval(() => this.show(), 1000);
  }

  private show(fraction?: number): void {
    const parts = [this.where, this.stage, elapsedText(Date.now() - this.t0)].filter(Boolean);
    this.report(parts.join(' · '), fraction);
  }

  on(ev: ProgressEvent): void {
    const s = this.s;
    switch (ev.kind) {
      case 'status': {
        const message = safeText(ev.message);
        this.stage = safeLine(message);
        this.show();
        s.output.appendLine(`[CHORUS] ${message}`);
        break;
      }
      case 'stage':
        this.stage = STAGE_WORD[ev.stage];
        this.show();
        break;
      case 'model': {
        const label = safeLine(ev.label);
        s.status.modelInUse = label;
        s.history.update(this.run, { model: label });
        s.output.appendLine(`[CHORUS] model: ${label}`);
        s.setStatus('busy', `${/llama\.cpp/.test(label) ? 'llama.cpp' : /ONNX/.test(label) ? 'ONNX' : 'model'} loaded`);
        break;
      }
      case 'round-start':
        this.where = `round ${ev.round + 1}/${ev.attempts}${ev.sample ? ` (sample ${ev.sample + 1})` : ''}`;
        this.stage = ev.round === 0 ? 'generating' : 'refining';
        this.show(ev.round / ev.attempts);
        s.setStatus('busy', `round ${ev.round + 1}/${ev.attempts}`);
        s.output.appendLine(`\n[CHORUS] ---- round ${ev.round + 1}/${ev.attempts}${ev.sample ? `, sample ${ev.sample + 1}` : ''} ----`);
        break;
      case 'text':
        s.output.append(safeText(ev.piece));
        break;
      case 'round-end': {
        const c = ev.record.coverage?.overall ?? null;
        s.history.addRound(this.run, ev.record);
        const verdict = roundVerdictWord(ev.record);
        const msg = `round ${ev.record.round + 1}/${ev.attempts}: ${verdict}, coverage ${pct(c)} (best ${pct(ev.bestCoverage)})`;
        s.output.appendLine(`\n[CHORUS] ${msg}`);
        this.stage = `${verdict}, ${pct(c)}`;
        this.show((ev.record.round + 1) / ev.attempts);
        s.setStatus('busy', `round ${ev.record.round + 1}/${ev.attempts} · ${pct(ev.bestCoverage)}`);
        break;
      }
    }
  }

  dispose(): void {
    clearInterval(this.timer);
  }
}
