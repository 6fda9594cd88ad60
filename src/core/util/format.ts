// Formatting shared by the engine, the CLI, the editor and the webview (no Node imports: the
// webview bundles it): percentages, byte counts, durations and the `file:line:col: code: message`
// diagnostic line.

/** A fraction as a percentage (`0.5` -> `50.00%`); `n/a` when there is no figure. */
export function pct(x: number | null | undefined, digits = 2): string {
  return x === null || x === undefined ? 'n/a' : `${(100 * x).toFixed(digits)}%`;
}

/** The fields a diagnostic line needs (sim's Diagnostic, a design diagnostic, a lint message). */
export interface DiagnosticPosition {
  file: string;
  line: number;
  column: number;
  code?: string;
  message: string;
}

/** `file:line:col: code: message`, the compiler convention editors and terminals link;
 * `code: false` leaves the code out. Callers add their own suffix (suggestion, time). */
export function formatDiagnostic(d: DiagnosticPosition, opts: { code?: boolean } = {}): string {
  const code = opts.code !== false && d.code ? `${d.code}: ` : '';
  return `${d.file}:${d.line}:${d.column}: ${code}${d.message}`;
}

/** Bytes in decimal units, three significant digits (999 B, 3.10 MB, 24.0 MB, 1.20 GB). */
export function formatBytes(n: number): string {
  const u = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  let v = n;
  while (v >= 1000 && i < u.length - 1) [v, i] = [v / 1000, i + 1];
  return `${i ? v.toFixed(v < 10 ? 2 : 1) : Math.round(v)} ${u[i]}`;
}

/** 42s, 3m05s, 1h02m; `?` when unknown. */
export function formatDuration(s: number): string {
  if (!Number.isFinite(s) || s < 0) return '?';
  const t = Math.round(s);
  if (t < 60) return `${t}s`;
  if (t < 3600) return `${Math.floor(t / 60)}m${String(t % 60).padStart(2, '0')}s`;
  return `${Math.floor(t / 3600)}h${String(Math.floor((t % 3600) / 60)).padStart(2, '0')}m`;
}
