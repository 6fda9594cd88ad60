// Progress on stderr for long commands: one redrawn line on a terminal, nothing extra in logs
// (the commands print their own per-round / per-task lines). evalProgress.ts builds on it.
import { canRedraw } from './terminal.js';
import { formatDuration, safeLine } from '../core/run/frontEnd.js';

export function bar(done: number, total: number, width = 24): string {
  const f = total ? Math.round(Math.min(1, done / total) * width) : width;
  return '[' + '#'.repeat(f) + '-'.repeat(width - f) + ']';
}

export class StatusLine {
  private shown = false;
  private readonly tty: boolean;

  constructor(private readonly stream: NodeJS.WriteStream = process.stderr) {
    this.tty = canRedraw(stream);
  }

  /** Redraw the status line (terminal only). The text may carry a model's or a simulation's
   * words: one line, no control characters, so nothing but this line is ever redrawn. */
  set(line: string): void {
    if (!this.tty) return;
    const text = safeLine(line);
    const cols = this.stream.columns || 100;
    this.stream.write(`\r\x1b[2K${text.length >= cols ? text.slice(0, cols - 1) : text}`);
    this.shown = true;
  }

  /** Clear the status line before a permanent line is printed. */
  clear(): void {
    if (this.tty && this.shown) this.stream.write('\r\x1b[2K');
    this.shown = false;
  }
}

/**
 * Progress within a round (build, run, coverage) for big designs: on a terminal the status line
 * shows the stage and its elapsed time, redrawn every second; elsewhere a stage that runs long gets
 * a plain line on stderr (after 15 s, then every minute), so a log shows where a slow run is.
 */
export class StageProgress {
  private label = '';
  private stage = '';
  private since = 0;
  private lastPlain = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly tty: boolean;

  constructor(
    private readonly status: StatusLine,
    private readonly stream: NodeJS.WriteStream = process.stderr,
    private readonly plainAfterS = 15,
  ) {
    this.tty = canRedraw(stream);
  }

  /** What the coming stages belong to (`round 2/4`). */
  setLabel(label: string): void {
    this.label = label;
  }

  /** A stage started (SimRequest.onStage). */
  onStage = (stage: string): void => {
    const words: Record<string, string> = { check: 'checking', build: 'building', run: 'running', coverage: 'reading coverage' };
    this.stage = words[stage] ?? stage;
    this.since = performance.now();
    this.lastPlain = 0;
    this.draw();
    if (!this.timer) {
      this.timer = setInterval(() => this.draw(), 1000);
      this.timer.unref();
    }
  };

  private draw(): void {
    if (!this.stage) return;
    const s = (performance.now() - this.since) / 1000;
    const text = `${this.label ? `${this.label}: ` : ''}${this.stage} (${formatDuration(s)})`;
    if (this.tty) this.status.set(text);
    else if (s >= this.plainAfterS && (this.lastPlain === 0 || s - this.lastPlain >= 60)) {
      this.lastPlain = s;
      this.stream.write(`${safeLine(`${this.label ? `${this.label}: ` : ''}still ${this.stage} after ${formatDuration(s)}`)}\n`);
    }
  }

  /** The round is over: no more redraws until the next stage. */
  idle(): void {
    this.stage = '';
  }

  stop(): void {
    this.stage = '';
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
