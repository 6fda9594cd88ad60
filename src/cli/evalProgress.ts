// Progress of an evaluation on a stream (stderr): on a terminal one line redrawn in place with a
// bar and the ETA; otherwise (CI logs, files) one line per finished task.
import type { ProgressEvent } from '../core/run/evaluation.js';
import { bar } from './progress.js';
import { formatDuration } from '../core/run/frontEnd.js';
import { pct, safeLine } from '../core/run/frontEnd.js';

export interface ProgressSink {
  write(s: string): unknown;
}

/** A progress listener for runEvaluation; `finish()` ends the redrawn line. */
export function createProgress(
  out: ProgressSink,
  tty: boolean,
  now: () => number = () => performance.now(),
): { onProgress: (e: ProgressEvent) => void; finish: () => void } {
  const t0 = now();
  let units = 0;
  let done = 0;
  let computed = 0;
  let tasks = 0;
  let tasksDone = 0;
  let drawn = false;
  const eta = (): string => {
    const el = (now() - t0) / 1000;
    if (done >= units) return '0s';
    if (!computed) return '?';
    return formatDuration((el / computed) * (units - done));
  };
  const status = (): string =>
    `${done}/${units} samples, ${tasksDone}/${tasks} tasks, ${formatDuration((now() - t0) / 1000)} elapsed, ETA ${eta()}`;
  return {
    onProgress(e) {
      if (e.type === 'start') {
        units = e.units;
        tasks = e.tasks;
        if (!tty) out.write(`eval: ${e.tasks} tasks, ${e.units} samples, ${e.workers} worker${e.workers === 1 ? '' : 's'}\n`);
        return;
      }
      if (e.type === 'sample') {
        done = e.done;
        if (!e.cached) computed++;
        if (tty) {
          out.write(
            `\r${bar(done, units)} ${status()}  ${safeLine(e.task)} #${e.sample} ${pct(e.coverage, 1)}${e.cached ? ' (cached)' : ''}\x1b[K`,
          );
          drawn = true;
        }
        return;
      }
      tasksDone = e.done;
      const t = e.task;
      const summary = t.error
        ? `error: ${safeLine(t.error.split('\n')[0].slice(0, 200))}`
        : `${t.samples.filter((s) => s.passed).length}/${t.samples.length} passed, best ${pct(Math.max(0, ...t.samples.map((s) => s.coverage)), 1)} (target ${pct(t.coverage_target / 100, 0)})`;
      const id = safeLine(t.id);
      if (tty) {
        if (t.error) {
          out.write(`\r\x1b[K${id}: ${summary}\n`);
          drawn = false;
        }
      } else out.write(`[${e.done}/${e.tasks}] ${id}: ${summary} | ${status()}\n`);
    },
    finish() {
      if (tty && drawn) out.write('\n');
      drawn = false;
    },
  };
}
