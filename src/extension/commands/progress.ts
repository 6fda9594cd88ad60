// A run's progress events from the worker (generation and refinement alike) into the output
// channel, the progress notification, the status bar and the run history.
import { safeLine, safeText } from '../../core/run/frontEnd.js';
import type { RunRecord } from '../views/history.js';
import { pct } from '../../../webview/protocol.js';
import type { ProgressEvent } from '../worker/protocol.js';
import type { Session } from './session.js';

/** Progress text (status lines, the model's streamed reply) is a model's or a simulation's words:
 * it reaches the output channel, the notification and the status bar as text only. */
export function onProgress(s: Session, ev: ProgressEvent, run: RunRecord, report: (message: string, fraction?: number) => void): void {
  switch (ev.kind) {
    case 'status': {
      const message = safeText(ev.message);
      report(message);
      s.output.appendLine(`[CHORUS] ${message}`);
      break;
    }
    case 'model': {
      const label = safeLine(ev.label);
      s.status.modelInUse = label;
      s.history.update(run, { model: label });
      s.output.appendLine(`[CHORUS] model: ${label}`);
      s.setStatus('busy', `${/llama\.cpp/.test(label) ? 'llama.cpp' : /ONNX/.test(label) ? 'ONNX' : 'model'} loaded`);
      break;
    }
    case 'round-start':
      report(`round ${ev.round + 1}/${ev.attempts}${ev.sample ? ` (sample ${ev.sample + 1})` : ''}`, ev.round / ev.attempts);
      s.setStatus('busy', `round ${ev.round + 1}/${ev.attempts}`);
      s.output.appendLine(`\n[CHORUS] ---- round ${ev.round + 1}/${ev.attempts}${ev.sample ? `, sample ${ev.sample + 1}` : ''} ----`);
      break;
    case 'text':
      s.output.append(safeText(ev.piece));
      break;
    case 'round-end': {
      const c = ev.record.coverage?.overall ?? null;
      s.history.addRound(run, ev.record);
      const msg = `round ${ev.record.round + 1}/${ev.attempts}: ${ev.record.status}, coverage ${pct(c)} (best ${pct(ev.bestCoverage)})`;
      s.output.appendLine(`\n[CHORUS] ${msg}`);
      report(msg, (ev.record.round + 1) / ev.attempts);
      s.setStatus('busy', `round ${ev.record.round + 1}/${ev.attempts} · ${pct(ev.bestCoverage)}`);
      break;
    }
  }
}
