// Progress on stderr for long commands: one redrawn line on a terminal, nothing extra in logs
// (the commands print their own per-round / per-task lines).
export function formatEta(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '--:--';
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return h ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

export function progressBar(done: number, total: number, width = 24): string {
  const f = total > 0 ? Math.min(1, done / total) : 0;
  const full = Math.round(f * width);
  return `[${'#'.repeat(full)}${'.'.repeat(width - full)}] ${done}/${total}`;
}

export class StatusLine {
  private shown = false;
  private readonly tty: boolean;

  constructor(private readonly stream: NodeJS.WriteStream = process.stderr) {
    this.tty = stream.isTTY === true;
  }

  /** Redraw the status line (terminal only). */
  set(text: string): void {
    if (!this.tty) return;
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
